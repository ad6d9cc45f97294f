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
    /// A store with middleware first hands the action to its middleware (see
    /// ``init(reducers:state:middleware:)-([Reducer<State>],_,_)``); only what the chain passes on is
    /// applied. A dispatch from inside a middleware runs inside the outer one: at most
    /// ``StoreLimits/maximumMiddlewareDepth`` (64) of them on one thread, of any store. One more
    /// is a programming error, a middleware that dispatches without end, and traps with a
    /// message that says so (before the thread's stack would overflow).
    ///
    /// Cost: one lock, the reducers, and one call per synchronous observer. No copy of the state;
    /// no heap allocation for a value-type action of up to three words when no observer has a
    /// queue.
    ///
    /// The change feed (``changes(includingPatches:bufferingNewest:)``, the journal) records
    /// where the action was dispatched from: `file` and `line`, which Swift fills in with the
    /// caller's `#fileID` and `#line`; pass them on from a helper of your own that dispatches
    /// for its callers. Carrying them costs no allocation.
    @inlinable
    public func dispatchAction(_ action: some Action, file: StaticString = #fileID, line: UInt = #line) {
        // Inlined into the caller, so the action is boxed by code that knows its type, and
        // whether it notifies is read there too: for an action that keeps the default, a
        // constant, where the boxed action's answer is a call through its witness table.
        dispatch(erased: action, notifies: action.notifiesObservers, source: DispatchSite(file, line))
    }

    /// ``dispatchAction(_:file:line:)`` for an action already in an existential box: not
    /// generic, and the box is handed to the reducers as it is. `notifies` is the action's
    /// ``Action/notifiesObservers`` if the caller read it, or `nil`: then it is asked only if
    /// there are observers to tell. `source`: where it was dispatched from.
    ///
    /// Every dispatch of one action ends here, and every batch in ``dispatch(batch:source:)``,
    /// which takes the same three ways:
    /// - from inside one of this store's reducers (this thread holds the lock) the action is
    ///   queued behind the current one (`nested`), to be applied before the lock is released
    ///   (``commit(_:_:)``), and the call returns;
    /// - in a store with middleware it passes the chain first (``pass(_:source:through:on:)``);
    /// - otherwise a transaction applies it (``applyLocked(_:source:notifies:)``) and commits.
    ///
    /// Package: replication applies the stream's actions with it, and the inspector its page's.
    @usableFromInline
    package func dispatch(erased action: any Action, notifies: Bool? = nil, source: DispatchSite = .unknown) {
        // The action stays borrowed on the way to the reducers: a `Dispatched` made here, as
        // a batch's is, copies it (Benchmarks/README.md, "One action, borrowed").
        let me = currentThreadID()
        if isInsideReducer(on: me) {
            queueBehindCurrent(.one(action), source: source)
            return
        }
        if let middleware {
            pass(action, source: source, through: middleware, on: me)
            return
        }
        let transaction = beginTransaction(on: me, context: ThreadContext.current(contexts))
        commit(transaction, announcing: applyLocked(action, source: source, notifies: notifies))
    }

    /// Applies `actions` as one: each passes the middleware (if any) first; then those that
    /// reach the reducers are applied in order under one hold of the lock, so no reader,
    /// snapshot, save or observer of this store sees the state between two of them. The version
    /// grows by the number of actions applied; observers are told once, with the last version
    /// and the last action's identifier (not at all when no action of the batch notifies).
    ///
    /// ```swift
    /// store.dispatchActions([AddTodo(title: "milk"), AddTodo(title: "eggs")])
    /// ```
    ///
    /// Actions the reducers dispatch meanwhile are applied right after the batch, each as its
    /// own action. From inside a reducer the batch is queued whole, like a single action, and
    /// applied right after the current action. From inside a middleware it counts as one level
    /// against ``StoreLimits/maximumMiddlewareDepth``, as ``dispatchAction(_:file:line:)`` does.
    /// `file` and `line` are recorded for each action of the batch (see
    /// ``dispatchAction(_:file:line:)``).
    public func dispatchActions(_ actions: [any Action], file: StaticString = #fileID, line: UInt = #line) {
        dispatch(batch: actions, source: DispatchSite(file, line))
    }

    /// ``dispatchActions(_:file:line:)`` with its source as the dispatch path carries it.
    ///
    /// Package, as ``DispatchSite`` is (see it): bindings dispatch a batch with a lent source.
    package func dispatch(batch actions: [any Action], source: DispatchSite) {
        let me = currentThreadID()
        if isInsideReducer(on: me) {
            queueBehindCurrent(.batch(actions), source: source)
            return
        }
        if let middleware {
            pass(batch: actions, source: source, through: middleware, on: me)
            return
        }
        guard !actions.isEmpty else { return }
        let transaction = beginTransaction(on: me, context: ThreadContext.current(contexts))
        commit(transaction, applyBatchLocked(actions, source: source))
    }

    /// Applies a dispatch taken off the store's queue (``enqueueAction(_:file:line:)``).
    func dispatch(_ queued: QueuedAction) {
        switch queued.dispatched {
        case .one(let action): dispatch(erased: action, source: queued.source)
        case .batch(let actions): dispatch(batch: actions, source: queued.source)
        }
    }

    /// Queues a dispatch from inside one of this store's reducers behind the current action.
    /// The caller is that reducer's thread, which holds the lock.
    @inline(never)
    private func queueBehindCurrent(_ dispatched: Dispatched, source: DispatchSite) {
        core.unsafe.valuePointer.pointee.nested.append(QueuedAction(dispatched, source))
    }

    // MARK: The apply transaction

    /// Takes the store's lock to change the state — the one place that takes it for that — and
    /// returns the open transaction, which the caller fills with what it applied
    /// (``applyLocked(_:source:notifies:)``, ``applyBatchLocked(_:source:)``,
    /// ``replaceLocked(_:restoredFrom:context:)``) and hands to ``commit(_:_:)``, the one place
    /// that releases it. `me` is the calling thread, outside this store's reducers; `context` its
    /// ``ThreadContext``.
    ///
    /// A transaction, in order: the lock is taken; the invariants are checked (internal-checks
    /// builds); the thread is marked as the applying one (so that a dispatch, read or observer
    /// change from inside a reducer is recognised) and as inside a callback; the caller applies
    /// its change, each action making a version and recorded once in the change feed (the
    /// action log's record, which every consumer reads, then what ``recordLocked(at:in:)``
    /// makes of it: patches, the history's snapshot, the listeners' calls), the version published, the
    /// notification round made (observers and selections read under the lock); ``commit(_:_:)`` applies what
    /// the reducers dispatched meanwhile — without middleware here, FIFO, each with its round; with
    /// middleware they must pass the chain, which runs user code that may read the store, so they are handed
    /// to this thread's pass of the store (``throughMiddleware(_:context:_:)``), which passes them once
    /// the lock is released, before the dispatch that opened it returns — then releases the
    /// lock, runs the wait owed to a full journal and delivers the rounds.
    ///
    /// The waiting rules this transaction keeps are the contract's: the DocC article
    /// <doc:TheContract>, "Who waits for whom". A change to what runs under the lock, or to what
    /// waits, changes them: see <doc:ChangingTheDispatchPath>.
    @inline(__always)
    private func beginTransaction(on me: UInt, context: UnsafeMutablePointer<ThreadContext>) -> Transaction {
        core.unsafe.lock()
        _checkInvariantsLocked()
        applyingThread.store(me, ordering: .relaxed)
        context.pointee.callbackDepth &+= 1  // (wrapping: a count of frames on a stack)
        return Transaction(context: context)
    }

    /// Ends `transaction` (``beginTransaction(on:context:)``), whose change made round `first`
    /// (and any further one it put in the thread's pending work): applies what the reducers
    /// dispatched, releases the lock, runs the wait owed to a full journal, delivers the rounds,
    /// and passes on what must pass the middleware.
    @inline(__always)
    private func commit(_ transaction: consuming Transaction, _ first: consuming NotificationRound?) {
        let core = self.core.unsafe.valuePointer
        let context = transaction.context
        if !core.pointee.nested.isEmpty {
            transaction.markPending()
            applyNestedLocked(context: context)
        }
        context.pointee.callbackDepth &-= 1
        applyingThread.store(0, ordering: .relaxed)
        if let wait = core.pointee.actionLog.takeOwedWait() {
            transaction.markPending()
            context.pointee.pending.append(.journalWait(wait))
        }
        self.core.unsafe.unlock()
        if let mark = transaction.pendingMark {
            finishPending(first, from: mark, context: context)
        } else if let first = consume first {
            deliver(first, then: nil, context: context)
        }
    }

    /// ``commit(_:_:)`` for a transaction that applied one action, whose round is `round`.
    @inline(__always)
    private func commit(_ transaction: consuming Transaction, announcing round: consuming NotificationRound?) {
        // Two calls: with a `nil` known at the call, the common case (nobody to tell) releases
        // nothing; the other passes the round on without a copy.
        if round == nil {
            commit(transaction, nil)
        } else {
            commit(transaction, consume round)
        }
    }

    /// The end of ``commit(_:_:)`` when the transaction left pending work: waits for a full
    /// journal, delivers `first` and the rounds, then passes on the actions. The caller released
    /// the lock.
    @inline(never)
    private func finishPending(
        _ first: NotificationRound?, from mark: Int, context: UnsafeMutablePointer<ThreadContext>
    ) {
        var (journalWait, rounds, actions) = context.pointee.takePending(from: mark)
        journalWait?.run()
        if let first {
            deliver(first, then: rounds, context: context)
        } else if var rest = rounds {
            let first = rest.removeFirst()
            deliver(first, then: rest.isEmpty ? nil : rest, context: context)
        }
        rounds = nil
        if let actions { passOn(actions, context: context) }
    }

    /// Runs the reducers for one action and counts it; records it in the change feed if anyone
    /// consumes it; returns its version. The caller holds the lock and publishes the version
    /// once the actions it applies as one are all applied.
    @inline(__always)
    private func apply(_ action: any Action, batch: ClosedRange<UInt64>? = nil, source: DispatchSite) -> UInt64 {
        reduce(stateAddress, action)
        return countAppliedLocked(action, batch: batch, source: source)
    }

    /// Counts `action`, whose change to the state was just made (by the reducers or a
    /// replacement), as the next version, and records it for whoever consumes the change feed:
    /// the one path of every applied change. Returns its version; the caller holds the lock.
    @inline(__always)
    private func countAppliedLocked(_ action: any Action, batch: ClosedRange<UInt64>?, source: DispatchSite) -> UInt64 {
        let core = self.core.unsafe.valuePointer
        core.pointee.version &+= 1
        // The record first: the recorder attaches the patch to it and hands it to listeners.
        if core.pointee.actionLog.isOn {
            logLocked(action, at: core.pointee.version, batch: batch, source: source)
        }
        if let recorder = core.pointee.recorder {
            core.pointee.recording = true
            recordLocked(at: core.pointee.version, in: recorder)
            core.pointee.recording = false
        }
        return core.pointee.version
    }

    /// Applies one action and publishes its version; returns the round that tells the observers
    /// (``roundLocked(for:at:notifying:restoring:)``), or `nil` when nobody is to hear of it. The
    /// caller holds the lock.
    @inline(__always)
    private func applyLocked(_ action: any Action, source: DispatchSite, notifies: Bool?) -> NotificationRound? {
        let version = apply(action, source: source)
        publishedVersion.store(version, ordering: .releasing)
        return roundLocked(for: action, at: version, notifying: notifies)
    }

    /// ``applyLocked(_:source:notifies:)`` for a batch: applies its actions (none for an empty
    /// one) and publishes the last version; returns the batch's one round, `nil` when none of its
    /// actions notifies. The caller holds the lock.
    @inline(never)
    private func applyBatchLocked(_ actions: [any Action], source: DispatchSite) -> NotificationRound? {
        guard let last = actions.last else { return nil }
        let first = core.unsafe.valuePointer.pointee.version &+ 1
        let versions = actions.count > 1 ? first...(first &+ UInt64(actions.count - 1)) : nil
        var version: UInt64 = 0
        var notifies = false
        for action in actions {
            version = apply(action, batch: versions, source: source)
            notifies = notifies || action.notifiesObservers
        }
        publishedVersion.store(version, ordering: .releasing)
        return notifies ? roundLocked(for: last, at: version, notifying: true) : nil
    }

    /// Replaces the state through `replace` as one applied action
    /// (``applyReplacingState(with:restoredFrom:)``); returns its `stateDidChange` round and puts its
    /// `stateDidRestore` round in the thread's pending rounds (`context`'s). The caller holds the lock.
    private func replaceLocked(
        _ replace: (UnsafeMutableRawPointer) -> Void, restoredFrom: UInt64,
        context: UnsafeMutablePointer<ThreadContext>
    ) -> NotificationRound? {
        let core = self.core.unsafe.valuePointer
        replace(stateAddress)
        let action = RestoreAction(from: restoredFrom)
        let version = countAppliedLocked(action, batch: nil, source: .unknown)
        publishedVersion.store(version, ordering: .releasing)
        let first = roundLocked(for: action, at: version, restoring: true)
        if core.pointee.observers.count > 0 {
            context.pointee.pending.append(.round(NotificationRound(
                notification: StoreNotification(
                    name: .stateDidRestore, version: version, actionIdentifier: action.identifier,
                    restoredVersion: restoredFrom),
                observers: core.pointee.observers, selectionsChanged: false)))
        }
        return first
    }

    /// The actions the reducers dispatched during a hold of the lock. Without middleware:
    /// applies them (and what their reducers dispatch in turn), FIFO, putting their rounds in
    /// the thread's pending rounds (`context`'s). With middleware: puts them in the thread's
    /// pending actions, to pass the chain once the lock is released. The caller holds the lock.
    @inline(never)
    private func applyNestedLocked(context: UnsafeMutablePointer<ThreadContext>) {
        let core = self.core.unsafe.valuePointer
        guard middleware == nil else {
            context.pointee.pending.append(contentsOf: core.pointee.nested.takeAll().lazy.map { .action($0) })
            return
        }
        while let queued = core.pointee.nested.popFirst() {
            let round = switch queued.dispatched {
            case .one(let action): applyLocked(action, source: queued.source, notifies: nil)
            case .batch(let actions): applyBatchLocked(actions, source: queued.source)
            }
            if let round { context.pointee.pending.append(.round(round)) }
        }
        core.pointee.nested._checkInvariants()
    }

    /// After a hold of the lock in a store with middleware: hands what the reducers dispatched
    /// to this thread's pass of the store, which passes them through the chain in order before
    /// the outer dispatch returns. Every transaction of a store with middleware runs inside such
    /// a pass: a dispatch's (``pass(_:source:through:on:)``, and a `next` called on another
    /// thread takes the dispatching thread's passes, ``reduceAtEndOfChain(_:source:on:context:)``)
    /// and a restore's (``applyReplacingState(with:restoredFrom:)``).
    @inline(never)
    private func passOn(_ deferred: [QueuedAction], context: UnsafeMutablePointer<ThreadContext>) {
        guard let pass = context.pointee.pass(of: ObjectIdentifier(self)) else {
            preconditionFailure("ReduxStore: a store with middleware changed its state outside a pass of its chain")
        }
        pass.pointee.dispatched.append(contentsOf: deferred)
    }

    /// The round that tells the observers of `action`, applied as `version` (a restore's when
    /// `restoring`), or `nil` when the action does not notify or no observer is to hear of it.
    /// Updates the key-path and pointer observers' values first (they read the state, which the
    /// lock guards). The caller holds the lock.
    @inline(__always)
    private func roundLocked(
        for action: any Action, at version: UInt64, notifying: Bool? = nil, restoring: Bool = false
    ) -> NotificationRound? {
        let core = self.core.unsafe.valuePointer
        guard core.pointee.observers.count > 0, notifying ?? action.notifiesObservers else { return nil }
        var selectionsChanged = false
        if core.pointee.observers.hasSelections {
            selectionsChanged = updateSelectionsLocked(at: version)
            // Only selecting observers, and none of their values changed: nobody to call.
            if !selectionsChanged && core.pointee.observers.onlySelecting { return nil }
        }
        // The round holds the list from here (read in place above, it is not retained for a
        // round that calls nobody).
        let observers = core.pointee.observers
        if observers.wantsPatches, let claim = core.pointee.observersClaim {
            let patch = core.pointee.actionLog.takePatches(claim)
            for entry in observers.patchObservers where entry.hearsRound(at: version, restoring: restoring) {
                entry.pendingPatches?.put(patch, at: version)
            }
        }
        return NotificationRound(
            notification: StoreNotification(stateDidChangeAt: version, actionIdentifier: action.identifier),
            observers: observers, selectionsChanged: selectionsChanged)
    }

    /// Reads and compares the values of the selecting observers after the action applied as
    /// `version`; returns whether any changed (``ObserverList/updateSelections(of:state:version:)``).
    /// The caller holds the lock.
    @inline(never)
    private func updateSelectionsLocked(at version: UInt64) -> Bool {
        ObserverList.updateSelections(
            of: Unmanaged.passUnretained(core.unsafe.valuePointer.pointee.observers), state: stateAddress,
            version: version)
    }

    /// Replaces the state with `newState` as one applied action (``restore(version:)``): a new
    /// version, recorded, and notified as `"RDXRestore"` to ``StoreNotification/Name/stateDidChange``
    /// observers and with ``StoreNotification/restoredVersion`` to
    /// ``StoreNotification/Name/stateDidRestore`` observers. The caller is outside the reducers.
    ///
    /// In a store with middleware the restore runs as a pass of the chain (it does not pass it
    /// itself), so that what change listeners dispatch meanwhile passes the chain after it, FIFO.
    /// The caller checked the depth (``checkMiddlewareDepth()``).
    func applyReplacingState(with newState: State, restoredFrom: UInt64) {
        let context = ThreadContext.current(contexts)
        func replace() {
            var transaction = beginTransaction(on: currentThreadID(), context: context)
            transaction.markPending()
            let first = replaceLocked(
                { address in address.assumingMemoryBound(to: State.self).pointee = newState },
                restoredFrom: restoredFrom, context: context)
            commit(transaction, first)
        }
        if let middleware {
            throughMiddleware(middleware, context: context, replace)
        } else {
            replace()
        }
    }

    // MARK: Middleware

    /// A dispatch of `action` in a store with middleware, outside its reducers, on thread `me`:
    /// it passes the chain, then so does each action the reducers dispatched meanwhile. Out of
    /// line, so that a store without middleware does not pay for it: inlined into the dispatch,
    /// it made every dispatch without middleware dearer.
    @inline(never)
    private func pass(_ action: any Action, source: DispatchSite, through middleware: MiddlewareChain, on me: UInt) {
        let context = ThreadContext.current(contexts)
        throughMiddleware(middleware, context: context) {
            passOne(action, source: source, middleware, on: me, context: context)
        }
    }

    /// ``pass(_:source:through:on:)`` for a batch.
    @inline(never)
    private func pass(
        batch actions: [any Action], source: DispatchSite, through middleware: MiddlewareChain, on me: UInt
    ) {
        let context = ThreadContext.current(contexts)
        throughMiddleware(middleware, context: context) {
            passBatch(actions, source: source, middleware, on: me, context: context)
        }
    }

    /// Passes `action` through the chain and applies what reaches its end. Inside a pass of the
    /// store (``throughMiddleware(_:context:_:)``) on thread `me`.
    @inline(__always)
    private func passOne(
        _ action: any Action, source: DispatchSite, _ middleware: MiddlewareChain, on me: UInt,
        context: UnsafeMutablePointer<ThreadContext>
    ) {
        // What reaches the reducers may be another action: asked whether it notifies.
        middleware.run(self, action) { self.reduceAtEndOfChain($0, source: source, on: me, context: context) }
    }

    /// Passes each action of a batch through the chain, then applies what passed as one batch.
    /// Inside a pass of the store on thread `me`.
    private func passBatch(
        _ actions: [any Action], source: DispatchSite, _ middleware: MiddlewareChain, on me: UInt,
        context: UnsafeMutablePointer<ThreadContext>
    ) {
        var passed: [any Action] = []
        passed.reserveCapacity(actions.count)
        for action in actions {
            middleware.run(self, action) { passed.append($0) }
        }
        if !passed.isEmpty {
            let transaction = beginTransaction(on: me, context: context)
            commit(transaction, applyBatchLocked(passed, source: source))
        }
    }

    /// Applies what reached the end of this store's chain, dispatched on thread `me` (whose
    /// context is `context`).
    ///
    /// A Swift middleware may call `next` on another thread, from a synchronous call it waits
    /// for. The action is then applied as that thread's, so that its reducers' dispatches queue as
    /// theirs (taken for `me`'s, they went through the chain while that thread held the lock, and
    /// waited for it forever); and that thread takes `me`'s passes as its own meanwhile, so that
    /// what the reducers dispatched joins `me`'s pass of this store behind what is queued there,
    /// FIFO, as on `me`. `me` waits in the middleware meanwhile and touches neither.
    @inline(__always)
    private func reduceAtEndOfChain(
        _ action: any Action, source: DispatchSite, on me: UInt, context: UnsafeMutablePointer<ThreadContext>
    ) {
        let here = currentThreadID()
        if here == me {
            let transaction = beginTransaction(on: me, context: context)
            commit(transaction, announcing: applyLocked(action, source: source, notifies: nil))
            return
        }
        let hereContext = ThreadContext.current(contexts)
        let ownPasses = hereContext.pointee.innermostPass
        hereContext.pointee.innermostPass = context.pointee.innermostPass
        defer { hereContext.pointee.innermostPass = ownPasses }
        let transaction = beginTransaction(on: here, context: hereContext)
        commit(transaction, announcing: applyLocked(action, source: source, notifies: nil))
    }

    /// Runs `body`, which passes actions through `middleware`, as one more level of dispatches
    /// through middleware on this thread (at most ``StoreLimits/maximumMiddlewareDepth``: past it,
    /// a trap), as a pass of this store that collects the actions its reducers dispatch
    /// meanwhile; then passes those through the chain one after the other, in the order they
    /// were dispatched, until none is left. A loop here, not a dispatch inside the one that
    /// applied the action: a reducer that keeps dispatching grows neither the stack nor the depth.
    /// (The depth and the pass add little to a dispatch through one pass-through middleware; the
    /// benchmark `composition.middleware.pass1` in Benchmarks/ times that path.)
    @inline(__always)
    private func throughMiddleware(
        _ middleware: MiddlewareChain, context: UnsafeMutablePointer<ThreadContext>, _ body: () -> Void
    ) {
        let depth = context.pointee.middlewareDepth
        guard depth < StoreLimits.maximumMiddlewareDepth else {
            preconditionFailure("ReduxStore: \(Self.middlewareDepthMessage)")
        }
        context.pointee.middlewareDepth = depth + 1
        var pass = MiddlewarePass(store: ObjectIdentifier(self), outer: context.pointee.innermostPass)
        withUnsafeMutablePointer(to: &pass) { pass in
            context.pointee.innermostPass = pass
            body()
            if !pass.pointee.dispatched.isEmpty { passDispatched(pass, middleware, context: context) }
            context.pointee.innermostPass = pass.pointee.outer
        }
        context.pointee.middlewareDepth = depth
    }

    /// The end of ``throughMiddleware(_:context:_:)`` when the reducers dispatched actions.
    @inline(never)
    private func passDispatched(
        _ pass: UnsafeMutablePointer<MiddlewarePass>, _ middleware: MiddlewareChain,
        context: UnsafeMutablePointer<ThreadContext>
    ) {
        let me = currentThreadID()
        while let queued = pass.pointee.dispatched.popFirst() {
            switch queued.dispatched {
            case .one(let action): passOne(action, source: queued.source, middleware, on: me, context: context)
            case .batch(let actions): passBatch(actions, source: queued.source, middleware, on: me, context: context)
            }
        }
        pass.pointee.dispatched._checkInvariants()
    }

    /// Refuses a dispatch that would go past ``StoreLimits/maximumMiddlewareDepth`` on this thread,
    /// as ``StoreError/Kind/limit``, for callers that report errors instead of the
    /// trap of ``dispatchAction(_:file:line:)``. Nothing to refuse in a store without middleware,
    /// or from inside its reducers (the action is queued there, not dispatched through the chain).
    /// Inlined into its callers, so that a store without middleware pays one test.
    @inlinable
    @_spi(Bindings) public func checkMiddlewareDepth() throws(StoreError) {
        if hasMiddleware { try checkMiddlewareDepthOfChain() }
    }

    /// ``checkMiddlewareDepth()`` for a store with middleware.
    @usableFromInline
    func checkMiddlewareDepthOfChain() throws(StoreError) {
        guard !isInsideReducer,
              ThreadContext.current(contexts).pointee.middlewareDepth
                >= StoreLimits.maximumMiddlewareDepth
        else { return }
        throw StoreError(.limit, Self.middlewareDepthMessage)
    }

    private static var middlewareDepthMessage: String {
        "dispatch refused: it would run \(StoreLimits.maximumMiddlewareDepth + 1) dispatches inside "
            + "one another's middleware on this thread, past the limit of "
            + "\(StoreLimits.maximumMiddlewareDepth) (a middleware that dispatches again without "
            + "end?); the action was not applied"
    }
}

/// A hold of a store's lock to change its state, from ``Store/beginTransaction(on:context:)``
/// (which took the lock) to ``Store/commit(_:_:)`` (which releases it). Not copyable, so that a
/// transaction is committed once; nothing in it to release, so that it costs nothing.
struct Transaction: ~Copyable {
    /// The thread's context.
    let context: UnsafeMutablePointer<ThreadContext>
    /// Where this transaction's pending work begins in the thread's (``ThreadContext/pending``),
    /// once it has any: another store's transaction run by a reducer inside this one takes only
    /// what lies past its own mark, and is over (its work taken) before this one adds more.
    private(set) var pendingMark: Int?

    init(context: UnsafeMutablePointer<ThreadContext>) {
        self.context = context
    }

    /// Marks where this transaction's pending work begins, before it adds the first (the
    /// first mark stays).
    mutating func markPending() {
        if pendingMark == nil { pendingMark = context.pointee.pending.count }
    }
}

/// What one dispatch hands the store: an action, or a batch of actions applied as one
/// (``Store/dispatchActions(_:file:line:)``).
enum Dispatched: Sendable {
    case one(any Action)
    case batch([any Action])
}

/// A dispatch queued to be applied later (from inside a reducer, passed on to the middleware,
/// or enqueued), with where it was dispatched from.
struct QueuedAction: Sendable {
    let dispatched: Dispatched
    /// Kept (``DispatchSite/kept()``): the action may be applied after its caller's call returned.
    let source: DispatchSite

    init(_ dispatched: Dispatched, _ source: DispatchSite) {
        self.dispatched = dispatched
        self.source = source.kept()
    }
}
