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
    @inlinable
    public func dispatchAction(_ action: some Action) {
        // Inlined into the caller, so the action is boxed by code that knows its type.
        dispatch(erased: action)
    }

    /// ``dispatchAction(_:)`` for an action already in an existential box: not generic, and the
    /// box is handed to the reducers as it is.
    @usableFromInline
    package func dispatch(erased action: any Action) {
        let me = currentThreadID()
        let core = self.core.valuePointer
        if applyingThread.load(ordering: .relaxed) == me {
            // From inside one of this store's reducers (this thread holds the lock).
            core.pointee.nested.append(action)
            return
        }
        let context = ThreadContext.current
        self.core.lock()
        _checkInvariantsLocked()
        applyingThread.store(me, ordering: .relaxed)
        context.pointee.callbackDepth += 1
        let version = apply(action)
        if !core.pointee.nested.isEmpty {
            let rounds = applyNestedLocked(first: action, version: version)
            context.pointee.callbackDepth -= 1
            applyingThread.store(0, ordering: .relaxed)
            self.core.unlock()
            deliver(rounds, context: context)
            return
        }
        context.pointee.callbackDepth -= 1
        applyingThread.store(0, ordering: .relaxed)
        guard core.pointee.observers.count > 0 else {
            self.core.unlock()
            return
        }
        let observers = core.pointee.observers
        self.core.unlock()
        deliver(
            NotificationRound(
                notification: StoreNotification(stateDidChangeAt: version, actionIdentifier: action.identifier),
                observers: observers),
            context: context)
    }

    /// Applies the actions the reducers dispatched (FIFO) before the lock is released, and
    /// returns the rounds to notify, in version order. The caller holds the lock and has applied
    /// `first`.
    private func applyNestedLocked(first: any Action, version: UInt64) -> [NotificationRound] {
        let core = self.core.valuePointer
        var rounds = [
            NotificationRound(
                notification: StoreNotification(stateDidChangeAt: version, actionIdentifier: first.identifier),
                observers: core.pointee.observers)
        ]
        var next = 0
        while next < core.pointee.nested.count {
            let action = core.pointee.nested[next]
            next += 1
            let nextVersion = apply(action)
            rounds.append(
                NotificationRound(
                    notification: StoreNotification(stateDidChangeAt: nextVersion, actionIdentifier: action.identifier),
                    observers: core.pointee.observers))
        }
        core.pointee.nested.removeAll(keepingCapacity: true)
        return rounds
    }

    /// Runs the reducers for one action and counts it. The caller holds the lock.
    @inline(__always)
    private func apply(_ action: any Action) -> UInt64 {
        let core = self.core.valuePointer
        reduce(stateAddress, action)
        core.pointee.version &+= 1
        let version = core.pointee.version
        publishedVersion.store(version, ordering: .releasing)
        return version
    }
}
