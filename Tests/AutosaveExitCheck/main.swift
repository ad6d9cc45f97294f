// A process for the autosave test: starts an autosave that would not save on its own for a long
// time, applies N actions, and exits normally. The test then reads the file: the exit must have
// saved the last action.
//
//   reduxstore-autosave-exit-check PATH N [keep|drop]
//
// keep (the default): the store lives until the process exits. drop: the store is freed, its
// changes unsaved, before the process exits.
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

final class Counter: Codable { var count = 0 }

/// A store with an autosave and `count` actions applied.
func makeStore(path: String, count: Int) -> Store<Counter> {
    let store = Store(reducers: [{ state, _ in state.count += 1 }], state: Counter())
    store.startAutosave(to: path, policy: AutosavePolicy(everyActions: 1_000_000, afterQuiet: .seconds(3600)))
    for _ in 0..<count {
        store.dispatchAction(JSONAction(identifier: "increment"))
    }
    return store
}

let arguments = CommandLine.arguments
guard arguments.count == 3 || arguments.count == 4, let count = Int(arguments[2]),
      arguments.count == 3 || ["keep", "drop"].contains(arguments[3])
else {
    print("usage: reduxstore-autosave-exit-check PATH N [keep|drop]")
    exit(2)
}
if arguments.count == 4 && arguments[3] == "drop" {
    _ = makeStore(path: arguments[1], count: count)
    exit(0)
}
let store = makeStore(path: arguments[1], count: count)
exit(0)
