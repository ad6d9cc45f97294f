@_spi(Bindings) @testable import ReduxStore

extension Store {
    /// The number of listeners of the change feed and claims on the action log now: how the
    /// tests see that a sequence's claim came and went.
    var changeListenerCount: Int {
        withCoreLocked { core, _ in
            (core.pointee.recorder?.listeners.count ?? 0) + core.pointee.actionLog.claimCount
        }
    }
}

extension Store {
    /// Whether the store keeps nothing for the change feed: no recorder, no action log.
    var recordsNothing: Bool {
        withCoreLocked { core, _ in core.pointee.recorder == nil && !core.pointee.actionLog.isOn }
    }
}

extension Autosaver {
    /// The number of autosaves running in this process (those saved at exit).
    static var liveCount: Int { live.withLock { $0.count } }
}
