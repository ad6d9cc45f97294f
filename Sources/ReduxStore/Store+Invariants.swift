// Internal consistency checks of the store's unsafe structures, compiled in only under
// REDUXSTORE_INTERNAL_CHECKS (set for debug builds by Package.swift, so every test run checks
// them at each dispatch); release builds pay nothing. The same checks of the snapshot tape and
// the container cache sit beside their types (SnapshotTape.swift, KeyedContainerCache.swift),
// the journal's in Journal.swift.

extension Store {
    /// Checks what must hold between actions, from a thread that holds the lock: the state
    /// pointer is the one the reducers are handed, no nested action is left over, no action is
    /// being recorded, and the lock-free version agrees with the locked one.
    @inline(__always)
    func _checkInvariantsLocked() {
        #if REDUXSTORE_INTERNAL_CHECKS
        let core = self.core.unsafe.valuePointer  // under the lock, as this function's name says
        precondition(stateAddress == UnsafeMutableRawPointer(state),
                     "ReduxStore: the reducers' state address is not the store's state")
        precondition(core.pointee.nested.isEmpty,
                     "ReduxStore: actions dispatched inside a reducer were left unapplied")
        precondition(publishedVersion.load(ordering: .relaxed) == core.pointee.version,
                     "ReduxStore: the published version is not the store's version")
        precondition(!isInsideReducer,
                     "ReduxStore: this thread still counts as applying an action")
        precondition(!core.pointee.recording, "ReduxStore: the last action's recording did not end")
        core.pointee.actionLog._checkInvariants(newest: core.pointee.version)
        #endif
    }
}

extension ThreadContext {
    /// Checks the chain of delivery frames: every frame linked is live and its queue of rounds
    /// sound, each store appears at most once (a nested delivery of the same store queues
    /// instead), and every frame is counted as a callback.
    func _checkInvariants() {
        #if REDUXSTORE_INTERNAL_CHECKS
        var seen: [ObjectIdentifier] = []
        var frame = innermost
        while let current = frame {
            precondition(!seen.contains(current.pointee.store),
                         "ReduxStore: two delivery frames for one store on one thread")
            current.pointee.pending?.pointee._checkInvariants()
            seen.append(current.pointee.store)
            frame = current.pointee.outer
        }
        precondition(callbackDepth >= seen.count,
                     "ReduxStore: a delivery frame is linked outside a callback")
        #endif
    }
}

/// Whether this build runs the internal checks (the tests assert that they do).
let internalChecksEnabled: Bool = {
    #if REDUXSTORE_INTERNAL_CHECKS
    return true
    #else
    return false
    #endif
}()
