// The plain baseline store: what a competent programmer writes in an afternoon. One
// `Synchronization.Mutex` holds the state, the version and the observers; a dispatch applies the
// reducers in place under it, copies the observer list out (a retain of one array) and calls the
// observers after unlocking. No nested dispatch, no queues, no snapshots, no C. It is compiled in
// this module, specialised for the benchmark's state, as a user's own store would be.
import ReduxStore
import Synchronization

final class PlainStore<State>: Sendable {
    private struct Inner: @unchecked Sendable {
        // @unchecked: only touched under the mutex.
        var state: State
        var version: UInt64 = 0
        var observers: [@Sendable (UInt64) -> Void] = []
    }

    private let inner: Mutex<Inner>
    private let reducers: [Reducer<State>]

    init(reducers: [Reducer<State>], state: State) {
        self.reducers = reducers
        inner = Mutex(Inner(state: state))
    }

    func addObserver(_ observer: @escaping @Sendable (UInt64) -> Void) {
        inner.withLock { $0.observers.append(observer) }
    }

    func dispatchAction(_ action: some Action) {
        let (observers, version) = inner.withLock { inner in
            for reducer in reducers { reducer(&inner.state, action) }
            inner.version &+= 1
            return (inner.observers, inner.version)
        }
        for observer in observers { observer(version) }
    }

    var count: UInt64 { inner.withLock { $0.version } }
}
