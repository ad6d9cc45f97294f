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
            core.pointee.observers.append(entry)
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
            guard let index = core.pointee.observers.firstIndex(where: { $0.token == token })
            else { return (nil, insideReducer) }
            return (core.pointee.observers.remove(at: index), insideReducer)
        }
        guard let removed else { return false }
        removed.markRemoved(wait: !insideReducer)
        return true
    }

    /// The number of observers registered now.
    public var observerCount: Int {
        withCoreLocked { core, _ in core.pointee.observers.count }
    }

    /// Runs `body` with the core, holding the lock unless this thread already holds it (inside
    /// a reducer).
    func withCoreLocked<T>(
        _ body: (UnsafeMutablePointer<StoreCore<State>>, _ insideReducer: Bool) throws -> T
    ) rethrows -> T {
        if isInsideReducer { return try body(core, true) }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(core, false)
    }

    /// Tells `observers` of one applied action. The lock is not held.
    func deliver(_ notification: StoreNotification, to observers: [ObserverEntry]) {
        let context = ThreadContext.current
        let id = ObjectIdentifier(self)
        if let frame = context.pointee.frameIndex(for: id) {
            // Inside a notification of this store on this thread: after the current round.
            context.pointee.frames[frame].pending.append(
                NotificationRound(notification: notification, observers: observers))
            return
        }
        context.pointee.frames.append(DeliveryFrame(store: id))
        let frame = context.pointee.frames.count - 1
        Self.call(observers, with: notification)
        drainPendingRounds(context, frame)
    }

    /// Tells observers of several actions applied under one lock (actions dispatched from inside
    /// reducers), in version order.
    func deliver(_ rounds: [NotificationRound]) {
        let context = ThreadContext.current
        let id = ObjectIdentifier(self)
        if let frame = context.pointee.frameIndex(for: id) {
            context.pointee.frames[frame].pending.append(contentsOf: rounds)
            return
        }
        context.pointee.frames.append(DeliveryFrame(store: id, pending: rounds))
        drainPendingRounds(context, context.pointee.frames.count - 1)
    }

    /// Delivers the rounds queued in this thread's frame `frame` until none is left, then pops it.
    private func drainPendingRounds(_ context: UnsafeMutablePointer<ThreadContext>, _ frame: Int) {
        while context.pointee.frames[frame].next < context.pointee.frames[frame].pending.count {
            let round = context.pointee.frames[frame].pending[context.pointee.frames[frame].next]
            context.pointee.frames[frame].next += 1
            Self.call(round.observers, with: round.notification)
        }
        context.pointee.frames.removeLast()
    }

    private static func call(_ observers: [ObserverEntry], with notification: StoreNotification) {
        for entry in observers where entry.wants(notification) {
            entry.deliver(notification)
        }
    }
}
