// A process for the journal's crash test: starts a journal on PATH and dispatches actions with
// payloads until it is killed. The test kills it with SIGKILL mid-write and reads the file:
// every line in it must be whole.
//
//   reduxstore-journal-kill-check PATH
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

final class Counter: Codable { var count = 0 }

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
let filler = JSONValue.string(String(repeating: "x", count: 300))
var index: Int64 = 0
while true {
    store.dispatchAction(JSONAction(identifier: "tick", payload: ["index": .int(index), "filler": filler]))
    index += 1
}
