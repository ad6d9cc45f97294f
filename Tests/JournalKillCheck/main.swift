// A process for the journal's crash test: starts a journal on PATH and dispatches actions with
// payloads until it is killed. The test kills it with SIGKILL mid-write and reads the file:
// every line in it must be whole.
//
//   reduxstore-journal-kill-check PATH
//
// The loop is a function's, given what it reads: a `while true` loop at the top level of
// `main.swift` that builds a `JSONValue` array or object from a global each turn takes the Swift
// 6.3 optimizer many minutes in a release build (SwiftPM's `-entry-point-function-name`; without
// it, or with a bounded loop, a second). It is the compiler's, not ReduxStore's: five lines
// without any import do the same (the DocC article "Getting started", "Release builds"). CI builds
// this file in release under a time limit (scripts/test).
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

final class Counter: Codable { var count = 0 }

func dispatchUntilKilled(_ store: Store<Counter>, filler: JSONValue) -> Never {
    var index: Int64 = 0
    while true {
        store.dispatchAction(JSONAction(identifier: "tick", payload: ["index": .int(index), "filler": filler]))
        index += 1
    }
}

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    print("usage: reduxstore-journal-kill-check PATH")
    exit(2)
}
let store = Store(reducers: [{ state, _ in state.count += 1 }], state: Counter())
do {
    try store.startJournal(at: arguments[1])
} catch {
    print("startJournal: \(error)")
    exit(1)
}
dispatchUntilKilled(store, filler: .string(String(repeating: "x", count: 300)))
