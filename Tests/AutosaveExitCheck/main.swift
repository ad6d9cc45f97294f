// A process for the autosave test: starts an autosave that would not save on its own for a long
// time, applies N actions, and exits normally. The test then reads the file: the exit must have
// saved the last action.
//
//   reduxstore-autosave-exit-check PATH N
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

final class Counter: Codable { var count = 0 }

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else {
    print("usage: reduxstore-autosave-exit-check PATH N")
    exit(2)
}
let store = Store(reducers: [{ state, _ in state.count += 1 }], state: Counter())
store.startAutosave(to: arguments[1], policy: AutosavePolicy(everyActions: 1_000_000, afterQuiet: .seconds(3600)))
for _ in 0..<count {
    store.dispatchAction(JSONAction(identifier: "increment"))
}
exit(0)
