import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Store {
    /// Registers an observer, NotificationCenter-style, and returns its token.
    ///
    /// After each applied action and once the store's lock is released, each observer is told
    /// once, with the action's identifier and the new ``version``.
    /// - With no `queue`, `block` runs synchronously on the dispatching thread, once per action,
    ///   before `dispatchAction` returns. On one dispatching thread it sees versions in
    ///   increasing order.
    /// - With a `queue`, notifications are delivered on it, **coalesced**: a burst of actions
    ///   gives at least one call, carrying the newest version; versions only increase.
    ///
    /// The new observer is not called at once: it first hears the next action (from inside a
    /// reducer: the action after the current one). Observers of one action are called in the
    /// order they were added. A block may dispatch, read ``currentState()`` and add or remove
    /// observers, itself included. The store keeps `block` until the observer is removed;
    /// dropping the token does not remove it.
    ///
    /// - Parameters:
    ///   - name: the notification to hear; the store posts ``StoreNotification/Name/stateDidChange``.
    ///   - queue: where to deliver, or `nil` for the dispatching thread.
    ///   - block: the observer.
    /// - Returns: the token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver(
        forName name: StoreNotification.Name = .stateDidChange,
        queue: DispatchQueue? = nil,
        using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken {
        addObserver(named: name, queue: queue, using: block)
    }

    /// Registers an observer of `name`, or of every notification when `name` is `nil`.
    package func addObserver(
        named name: StoreNotification.Name?,
        queue: DispatchQueue?,
        using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken {
        withCoreLocked { core, insideReducer in
            // Inside a reducer the action in progress will be version + 1: start after it.
            let first = publishedVersion.load(ordering: .acquiring) + (insideReducer ? 2 : 1)
            let entry = ObserverEntry(name: name, queue: queue, firstVersion: first, block: block)
            core.pointee.replaceObservers(
                with: core.pointee.observers.takeUnretainedValue().array + [entry])
            releaseRetiredIfFree(core)
            return entry.token
        }
    }

    /// Removes the observer with `token`. Once it returns, the observer is never called again,
    /// not even for a round in progress; a call running on another thread is waited for. From
    /// inside the observer itself it returns at once. From inside a reducer it does not wait for
    /// calls running on other threads (they may be waiting for the reducer), but none begins.
    ///
    /// - Returns: `false`, doing nothing, when the token is unknown to this store or was
    ///   already removed.
    @discardableResult
    public func removeObserver(_ token: ObserverToken) -> Bool {
        let (removed, insideReducer) = withCoreLocked {
            core, insideReducer -> (ObserverEntry?, Bool) in
            let list = core.pointee.observers.takeUnretainedValue()
            guard let index = list.index(of: token) else { return (nil, insideReducer) }
            var entries = list.array
            let entry = entries.remove(at: index)
            core.pointee.replaceObservers(with: entries)
            releaseRetiredIfFree(core)
            return (entry, insideReducer)
        }
        guard let removed, removed.markRemoved() else { return false }
        // Inside a reducer, waiting for another thread's call could deadlock: that call may be
        // dispatching to this store. No new call begins either way.
        if insideReducer { return true }
        let me = currentThreadID()
        let id = UInt(bitPattern: ObjectIdentifier(removed))
        // A call on the fast path: by another thread, wait for it; by this thread (the observer
        // removing itself, or removed from a store it dispatched to), do not.
        let callingHere = deliveryOwner.load(ordering: .sequentiallyConsistent) == me
        if !callingHere {
            removed.waitWhile { self.callingEntry.load(ordering: .sequentiallyConsistent) == id }
        }
        // Calls counted on the slow path and on queues, less those running on this thread.
        removed.waitForCountedCalls()
        return true
    }

    /// The number of observers registered now.
    public var observerCount: Int {
        withCoreLocked { core, _ in core.pointee.observerCount }
    }

    /// Releases retired observer lists if no fast delivery can be walking one. Holds the lock.
    @inline(__always)
    func releaseRetiredIfFree(_ core: UnsafeMutablePointer<StoreCore>) {
        if !core.pointee.retiredObservers.isEmpty,
           deliveryOwner.load(ordering: .acquiring) == 0 {
            core.pointee.releaseRetiredObservers()
        }
    }

    /// Runs `body` with the core, holding the lock unless this thread already holds it (inside
    /// a reducer).
    func withCoreLocked<T, E: Error>(
        _ body: (UnsafeMutablePointer<StoreCore>, _ insideReducer: Bool) throws(E) -> T
    ) throws(E) -> T {
        if isInsideReducer { return try body(core, true) }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(core, false)
    }

    /// Takes the fast delivery path for this thread if it is free and no thread is delivering
    /// this store's notifications on the slow path. The caller holds the lock: only a lock holder
    /// sets the owner, so a plain load and store do.
    @inline(__always)
    func claimFastDeliveryLocked(_ me: UInt) -> Bool {
        guard deliveryOwner.load(ordering: .relaxed) == 0,
              slowDeliveries.load(ordering: .relaxed) == 0
        else { return false }
        deliveryOwner.store(me, ordering: .relaxed)
        return true
    }

    /// Delivers the rounds queued on the fast path until none is left, then gives it up.
    func finishFastDelivery() {
        let delivery = self.delivery
        if !delivery.pointee.pending.isEmpty {
            while delivery.pointee.next < delivery.pointee.pending.count {
                let round = delivery.pointee.pending[delivery.pointee.next]
                delivery.pointee.next += 1
                callFast(round.observers, with: round.notification)
            }
            delivery.pointee.pending.removeAll(keepingCapacity: true)
            delivery.pointee.next = 0
        }
        deliveryOwner.store(0, ordering: .releasing)
    }

    /// Rounds that could not take the fast path: queued behind the current round if this thread
    /// is delivering this store's notifications already, else delivered on the slow path.
    func deliverElsewhere(_ rounds: [NotificationRound]) {
        if deliveryOwner.load(ordering: .relaxed) == currentThreadID() {
            // Dispatched from inside an observer this thread calls on the fast path.
            delivery.pointee.pending.append(contentsOf: rounds)
            return
        }
        let context = ThreadContext.current
        let id = ObjectIdentifier(self)
        if let frame = context.pointee.frameIndex(for: id) {
            // Inside a slow-path notification of this store on this thread: after the round.
            context.pointee.frames[frame].pending.append(contentsOf: rounds)
            return
        }
        slowDeliveries.wrappingAdd(1, ordering: .relaxed)
        context.pointee.frames.append(DeliveryFrame(store: id, pending: rounds))
        let frame = context.pointee.frames.count - 1
        while context.pointee.frames[frame].next < context.pointee.frames[frame].pending.count {
            let round = context.pointee.frames[frame].pending[context.pointee.frames[frame].next]
            context.pointee.frames[frame].next += 1
            for entry in round.observers.entries {
                entry._withUnsafeGuaranteedRef { entry in
                    if entry.wants(round.notification) { entry.deliver(round.notification) }
                }
            }
        }
        context.pointee.frames.removeLast()
        slowDeliveries.wrappingSubtract(1, ordering: .relaxed)
    }

    /// Calls the observers of one round on the fast path. Each synchronous call is announced in
    /// `callingEntry` (a sequentially consistent store) before the observer's removed flag is
    /// read, and the remover sets that flag before it reads `callingEntry`: so either the call
    /// does not begin, or the remover sees it and waits.
    @inline(__always)
    func callFast(_ observers: ObserverList, with notification: StoreNotification) {
        for entry in observers.entries {
            entry._withUnsafeGuaranteedRef { entry in
                guard entry.wants(notification) else { return }
                guard entry.queue == nil else {
                    entry.deliver(notification)
                    return
                }
                callingEntry.store(
                    UInt(bitPattern: ObjectIdentifier(entry)), ordering: .sequentiallyConsistent)
                if !entry.isRemoved { entry.block(notification) }
                callingEntry.store(0, ordering: .releasing)
                if entry.isRemoved { entry.wakeWaiters() }
            }
        }
    }
}
