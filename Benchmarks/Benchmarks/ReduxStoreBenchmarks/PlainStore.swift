import ReduxStore
import Synchronization

/// The plain baseline store: what a competent person writes in an afternoon, compiled in this
/// module (so it is specialised for its state here, as a user's own store would be).
///
/// One `Synchronization.Mutex` holds the state, the version and the observer list. A dispatch
/// applies the reducers to the state in place under the lock, reads (retains) the observer list
/// there, and calls the observers after unlocking, with the same notification the store sends.
/// No nested dispatch, no removal that waits, no snapshots: the shape of the work only.
final class PlainStore<State: Sendable>: Sendable {
    private struct Guarded {
        var state: State
        var version: UInt64 = 0
        var observers: [@Sendable (StoreNotification) -> Void] = []
    }

    private let reducers: [Reducer<State>]
    private let guarded: Mutex<Guarded>

    init(reducers: [Reducer<State>], state: State) {
        self.reducers = reducers
        guarded = Mutex(Guarded(state: state))
    }

    func addObserver(_ observer: @escaping @Sendable (StoreNotification) -> Void) {
        guarded.withLock { $0.observers.append(observer) }
    }

    func dispatchAction(_ action: some Action) {
        let (version, observers) = guarded.withLock { guarded in
            for reducer in reducers { reducer(&guarded.state, action) }
            guarded.version &+= 1
            return (guarded.version, guarded.observers)
        }
        if observers.isEmpty { return }
        let notification = StoreNotification(
            stateDidChangeAt: version, actionIdentifier: action.identifier)
        for observer in observers { observer(notification) }
    }

    var version: UInt64 { guarded.withLock { $0.version } }
}
