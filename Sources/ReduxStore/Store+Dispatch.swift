#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Store {
    /// Applies `action`: runs every reducer in order on the stored state, in place, then tells the
    /// observers. When it returns, the action was applied and the synchronous observers ran.
    ///
    /// Safe from any thread at once; actions are applied one at a time in one total order.
    /// From inside a reducer it does not apply the action in the middle of the current one: the
    /// action is queued and applied right after it, on the same thread (FIFO). From inside an
    /// observer it applies the action at once; that action's notification is delivered after the
    /// current round, before the outermost `dispatchAction` returns.
    ///
    /// Cost: one lock, the reducers, and one call per synchronous observer. No copy of the state;
    /// no heap allocation for a value-type action of up to three words when no observer has a
    /// queue.
    public func dispatchAction(_ action: some Action) {
        let me = currentThreadID()
        if applyingThread.load(ordering: .relaxed) == me {
            core.pointee.nested.append(action)
            return
        }
        pthread_mutex_lock(mutex)
        applyingThread.store(me, ordering: .relaxed)
        let version = apply(action)
        let observers = core.pointee.observers
        if core.pointee.nested.count > core.pointee.nestedHead {
            // Actions dispatched by the reducers: applied before the lock is released, notified
            // in version order right after this one.
            var rounds = [
                NotificationRound(
                    notification: StoreNotification(
                        name: .stateDidChange, version: version,
                        actionIdentifier: action.identifier),
                    observers: observers)
            ]
            while core.pointee.nestedHead < core.pointee.nested.count {
                let next = core.pointee.nested[core.pointee.nestedHead]
                core.pointee.nestedHead += 1
                let nextVersion = apply(next)
                rounds.append(
                    NotificationRound(
                        notification: StoreNotification(
                            name: .stateDidChange, version: nextVersion,
                            actionIdentifier: next.identifier),
                        observers: core.pointee.observers))
            }
            core.pointee.nested.removeAll(keepingCapacity: true)
            core.pointee.nestedHead = 0
            applyingThread.store(0, ordering: .relaxed)
            pthread_mutex_unlock(mutex)
            deliver(rounds)
            return
        }
        applyingThread.store(0, ordering: .relaxed)
        pthread_mutex_unlock(mutex)
        if observers.isEmpty { return }
        deliver(
            StoreNotification(
                name: .stateDidChange, version: version, actionIdentifier: action.identifier),
            to: observers)
    }

    /// Runs the reducers for one action and counts it. The caller holds the lock.
    @inline(__always)
    private func apply(_ action: some Action) -> UInt64 {
        let erased: any Action = action
        let core = self.core
        for reducer in reducers {
            reducer(&core.pointee.state, erased)
        }
        core.pointee.version &+= 1
        let version = core.pointee.version
        publishedVersion.store(version, ordering: .releasing)
        return version
    }
}
