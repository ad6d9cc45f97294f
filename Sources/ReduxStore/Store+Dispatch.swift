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
        dispatch(erased: action)
    }

    /// ``dispatchAction(_:)`` for an action already in an existential box: not generic, and the
    /// box is handed to the reducers as it is.
    package func dispatch(erased action: any Action) {
        let me = currentThreadID()
        if applyingThread.load(ordering: .relaxed) == me {
            core.pointee.nested.append(action)
            return
        }
        pthread_mutex_lock(mutex)
        applyingThread.store(me, ordering: .relaxed)
        let version = apply(action)
        let core = self.core
        if core.pointee.nested.count > core.pointee.nestedHead {
            dispatchNestedLocked(first: action, version: version, thread: me)
            return
        }
        releaseRetiredIfFree(core)
        if core.pointee.observerCount == 0 {
            applyingThread.store(0, ordering: .relaxed)
            pthread_mutex_unlock(mutex)
            return
        }
        let observers = core.pointee.observers
        if claimFastDeliveryLocked(me) {
            // The common case: the list is walked as read under the lock, not retained (it is
            // retired, not released, if it is replaced meanwhile).
            applyingThread.store(0, ordering: .relaxed)
            pthread_mutex_unlock(mutex)
            let notification = StoreNotification(
                name: .stateDidChange, version: version, actionIdentifier: action.identifier)
            observers._withUnsafeGuaranteedRef { callFast($0, with: notification) }
            finishFastDelivery()
            return
        }
        let retained = observers.takeUnretainedValue()
        applyingThread.store(0, ordering: .relaxed)
        pthread_mutex_unlock(mutex)
        deliverElsewhere([
            NotificationRound(
                notification: StoreNotification(
                    name: .stateDidChange, version: version, actionIdentifier: action.identifier),
                observers: retained)
        ])
    }

    /// Applies the actions the reducers dispatched (FIFO) before the lock is released, then
    /// releases it and notifies every one of them in version order. The caller holds the lock
    /// and has applied `first`.
    private func dispatchNestedLocked(first: any Action, version: UInt64, thread me: UInt) {
        let core = self.core
        var rounds = [
            NotificationRound(
                notification: StoreNotification(
                    name: .stateDidChange, version: version, actionIdentifier: first.identifier),
                observers: core.pointee.observers.takeUnretainedValue())
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
                    observers: core.pointee.observers.takeUnretainedValue()))
        }
        core.pointee.nested.removeAll(keepingCapacity: true)
        core.pointee.nestedHead = 0
        let fast = claimFastDeliveryLocked(me)
        applyingThread.store(0, ordering: .relaxed)
        pthread_mutex_unlock(mutex)
        if fast {
            delivery.pointee.pending.append(contentsOf: rounds)
            finishFastDelivery()
        } else {
            deliverElsewhere(rounds)
        }
    }

    /// Runs the reducers for one action and counts it. The caller holds the lock.
    @inline(__always)
    private func apply(_ action: any Action) -> UInt64 {
        let core = self.core
        let state = stateAddress
        for reducer in reducers {
            reducer(state, action)
        }
        core.pointee.version &+= 1
        let version = core.pointee.version
        publishedVersion.store(version, ordering: .releasing)
        return version
    }
}
