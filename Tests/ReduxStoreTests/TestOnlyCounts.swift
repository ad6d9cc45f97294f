@testable import ReduxStore

extension Store {
    /// The number of listeners of the change feed now: how the tests see that a sequence's
    /// listener came and went.
    var changeListenerCount: Int {
        withCoreLocked { core, _ in core.pointee.recorder?.listeners.count ?? 0 }
    }
}

extension Autosaver {
    /// The number of autosaves running in this process (those saved at exit).
    static var liveCount: Int { live.withLock { $0.count } }
}
