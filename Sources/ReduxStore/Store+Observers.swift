import Dispatch

// How observers are called, and who waits for whom.
//
// A dispatch reads the observer list under the store's lock, retains it, releases the lock and
// calls the observers of that list in order. The list is immutable: adding or removing an
// observer makes a new one, so calls in progress are not disturbed; and it holds its entries, so
// a delivery's hold on the list counts its calls in and out. Removal takes the entry out of the
// list under the lock and marks it removed (no call begins after that); when the remover is
// outside every callback it then waits on a condition variable until the entry was released —
// every delivery that held it has ended (see ``ObserverEntry``). An action dispatched from inside an observer
// is applied at once and its round is queued in this thread's delivery frame for the store
// (``ThreadContext``), to be delivered after the current round.
//
// Which call waits for which: the waiting rules of the DocC article "The contract" ("Who waits
// for whom").

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
        addObserver(named: name, queue: queue, onRelease: nil, using: block)
    }

    /// Registers a synchronous observer that is also told what each action changed: `block`
    /// gets the notification and the action's patch, RFC 6902 operations on the state's JSON
    /// form (for a batch, its actions' operations in order; for actions that did not notify
    /// before it, theirs too).
    ///
    /// ```swift
    /// store.addObserver(includingPatch: true) { note, patch in
    ///     for operation in patch { print(operation.op, operation.path) }
    /// }
    /// ```
    ///
    /// It follows the rules of ``addObserver(forName:queue:using:)`` for an observer without a
    /// queue. With `includingPatch` false it is such an observer, and `patch` is always empty.
    ///
    /// Cost: while an observer with `includingPatch` is registered, each applied action encodes
    /// the state and diffs it with the state before (the diff looks only into what changed),
    /// and its record, the patch attached, stays in the store's action log until the next round
    /// of the observers reads it (<doc:ChangeFeed>). The first patch starts from the state when
    /// the observer was added.
    @discardableResult
    public func addObserver(
        forName name: StoreNotification.Name = .stateDidChange,
        includingPatch: Bool,
        using block: @escaping @Sendable (StoreNotification, [JSONPatch.Operation]) -> Void
    ) -> ObserverToken {
        guard includingPatch else {
            return addObserver(named: name, queue: nil, onRelease: nil) { block($0, []) }
        }
        let pending = PendingPatches()
        return register(named: name, queue: nil, onRelease: nil, selection: nil, pendingPatches: pending) { note in
            block(note, pending.take(at: note.version))
        }
    }

    /// Registers an observer of `name`, or of every notification when `name` is `nil`.
    ///
    /// - Parameter onRelease: runs once when the observer can never be called again: after its
    ///   removal and the end of its last running call, or when the store goes away. It runs on
    ///   the thread that removed the observer, that ended its last call, or that dropped the
    ///   store.
    ///   - selection: for an observer of a value in the state: it is called only for the
    ///     actions that changed that value (see ``StateSelection``).
    ///
    /// Package rather than part of the bindings seam (<doc:TheBindingsSeam>): the inlinable
    /// ``observe(_:queue:using:)`` calls it from its caller's module, where an `@_spi` declaration
    /// cannot be used.
    @usableFromInline
    package func addObserver(
        named name: StoreNotification.Name?,
        queue: DispatchQueue?,
        onRelease: (@Sendable () -> Void)?,
        selection: StateSelection? = nil,
        using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken {
        register(named: name, queue: queue, onRelease: onRelease, selection: selection, pendingPatches: nil, using: block)
    }

    /// ``addObserver(named:queue:onRelease:selection:using:)``, for an observer handed patches
    /// too (`pendingPatches`).
    private func register(
        named name: StoreNotification.Name?,
        queue: DispatchQueue?,
        onRelease: (@Sendable () -> Void)?,
        selection: StateSelection?,
        pendingPatches: PendingPatches?,
        using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken {
        withCoreLocked { core, insideReducer in
            // Inside a reducer or a listener: after the action in progress.
            let first = core.pointee.firstVersion(insideReducer: insideReducer)
            if pendingPatches != nil, core.pointee.observersClaim == nil {
                // The records' patches from now on, every one kept until the observers' round
                // reads it (one claim for all the observers of patches).
                core.pointee.observersClaim = openClaimLocked(
                    ActionLog.Claim(
                        capacity: 1, ticked: true, patches: true, cursor: first &- 1, holds: true, readsFromCursor: true),
                    core: core, insideReducer: insideReducer)
            }
            // Outside a reducer the state is at rest: the selection starts from its value now.
            // Inside one it is being changed (and a struct state is held `inout`): the selection
            // starts from the value the current action leaves, read with that action's round.
            if !insideReducer { selection?.start(state: stateAddress) }
            let entry = ObserverEntry(
                name: name, queue: queue, firstVersion: first, onRelease: onRelease,
                selection: selection, pendingPatches: pendingPatches, block: block)
            core.pointee.observers = ObserverList(core.pointee.observers.entries + [entry])
            return entry.token
        }
    }

    /// Removes the observer with `token`. Once it returns, the observer is never called again,
    /// not even for a round in progress. A call running on another thread is waited for, unless
    /// this thread is inside a reducer or observer (of any store): there removal returns at
    /// once, as waiting could deadlock.
    ///
    /// - Returns: `false`, doing nothing, when the token is unknown to this store or was
    ///   already removed.
    @discardableResult
    public func removeObserver(_ token: ObserverToken) -> Bool {
        var removed = withCoreLocked { core, _ -> ObserverEntry? in
            let list = core.pointee.observers
            guard let index = list.index(of: token) else { return nil }
            var entries = list.entries
            let entry = entries.remove(at: index)
            core.pointee.observers = ObserverList(entries)
            if !core.pointee.observers.wantsPatches, let claim = core.pointee.observersClaim {
                core.pointee.observersClaim = nil
                _ = closeClaimLocked(claim, core: core)
            }
            return entry
        }
        guard let removal = removed?.markRemoved() else { return false }
        // Drop this reference first: the entry is released once no delivery holds it.
        removed = nil
        if !ThreadContext.isInsideCallback { removal.wait() }
        return true
    }

    /// The number of observers registered now.
    public var observerCount: Int {
        withCoreLocked { core, _ in core.pointee.observers.count }
    }

    /// Runs `body` with the core, holding the lock unless this thread already holds it (inside
    /// a reducer).
    func withCoreLocked<T, E: Error>(
        _ body: (UnsafeMutablePointer<StoreCore>, _ insideReducer: Bool) throws(E) -> T
    ) throws(E) -> T {
        if isInsideReducer { return try body(core.unsafe.valuePointer, true) }
        core.unsafe.lock()
        defer { core.unsafe.unlock() }
        return try body(core.unsafe.valuePointer, false)
    }

    /// Delivers the rounds of one hold of the lock on this thread, in version order: `first`,
    /// then `more`; the caller released the lock. From inside an observer of this store on
    /// this thread, the rounds are queued behind the round in progress instead.
    ///
    /// Transparent, not just `@inline(__always)`: the compiler stopped inlining it into the
    /// dispatch path once that path grew (middleware, recorder, selections), and the call cost
    /// every dispatch with an observer (Benchmarks/README.md, "Dispatch against the plain store").
    @_transparent
    func deliver(
        _ first: NotificationRound, then more: [NotificationRound]?, context: UnsafeMutablePointer<ThreadContext>
    ) {
        let id = ObjectIdentifier(self)
        if let frame = context.pointee.frame(for: id) {
            frame.pointee.queue(CollectionOfOne(first))
            if let more { frame.pointee.queue(more) }
            return
        }
        // The frame lives on this function's stack, linked into the thread's chain for exactly
        // as long as it runs (ablation: an array of frames in the thread context instead made a
        // dispatch with one observer slower; Benchmarks/README.md, "Ablations").
        var frame = DeliveryFrame(store: id, outer: context.pointee.innermost)
        if let more { frame.queue(more) }
        withUnsafeMutablePointer(to: &frame) { frame in
            context.pointee.innermost = frame
            context.pointee.callbackDepth += 1
            context.pointee._checkInvariants()
            call(first)
            while let next = frame.pointee.next() { call(next) }
            context.pointee.callbackDepth -= 1
            context.pointee.innermost = frame.pointee.outer
            frame.pointee.end()
        }
    }

    /// Calls the observers of one round, in the order they were added. The round holds its list,
    /// and the list its entries, so each is called unretained.
    @inline(__always)
    private func call(_ round: NotificationRound) {
        for entry in round.observers.unretained {
            entry._withUnsafeGuaranteedRef { entry in
                if entry.wants(round.notification, selectionsChanged: round.selectionsChanged) {
                    entry.deliver(round.notification)
                }
            }
        }
    }
}
