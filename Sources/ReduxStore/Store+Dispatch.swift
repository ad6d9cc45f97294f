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
    /// ``init(reducers:state:middleware:)``); only what the chain passes on is applied. A
    /// dispatch from inside a middleware runs inside the outer one: at most
    /// ``StoreLimits/maximumMiddlewareDepth`` (64) of them on one thread, of any store. One more
    /// is a programming error, a middleware that dispatches without end, and traps with a
    /// message that says so (before the thread's stack would overflow); C's dispatch returns
    /// `RDX_ELIMIT` instead.
    ///
    /// Cost: one lock, the reducers, and one call per synchronous observer. No copy of the state;
    /// no heap allocation for a value-type action of up to three words when no observer has a
    /// queue.
    @inlinable
    public func dispatchAction(_ action: some Action) {
        // Inlined into the caller, so the action is boxed by code that knows its type, and
        // whether it notifies is read there too: for an action that keeps the default, a
        // constant, where the boxed action's answer is a call through its witness table.
        dispatch(erased: action, notifies: action.notifiesObservers)
    }

    /// ``dispatchAction(_:)`` for an action already in an existential box: not generic, and the
    /// box is handed to the reducers as it is. `notifies` is the action's
    /// ``Action/notifiesObservers`` if the caller read it, or `nil`: then it is asked only if
    /// there are observers to tell.
    @usableFromInline
    package func dispatch(erased action: any Action, notifies: Bool? = nil) {
        let me = currentThreadID()
        if applyingThread.load(ordering: .relaxed) == me {
            // From inside one of this store's reducers (this thread holds the lock).
            core.unsafe.valuePointer.pointee.nested.append(action)
            return
        }
        if let middleware {
            dispatchThroughMiddleware(action, middleware, on: me)
            return
        }
        reduceAndNotify(action, on: me, notifies: notifies, context: ThreadContext.current(contextKey))
    }

    /// ``dispatch(erased:notifies:)`` in a store with middleware, outside its reducers: the action
    /// passes the chain, then so does each action the reducers dispatched meanwhile. Out of line,
    /// so that a store without middleware does not pay for it: inlined into
    /// ``dispatch(erased:notifies:)``, it cost a dispatch without middleware 29 instructions
    /// (callgrind, `ProfileDriver dispatch-o1`: 850, out of line 821; `middleware-pass` 1,126 →
    /// 1,171).
    private func dispatchThroughMiddleware(_ action: any Action, _ middleware: MiddlewareChain, on me: UInt) {
        let context = ThreadContext.current(contextKey)
        throughMiddleware(middleware, context: context) {
            // What reaches the reducers may be another action: asked whether it notifies.
            middleware.run(self, action) { self.reduceAtEndOfChain($0, on: me, context: context) }
        }
    }

    /// Applies what reached the end of this store's chain, dispatched on thread `me` (whose
    /// context is `context`). A Swift middleware may call `next` on another thread, from a
    /// synchronous call it waits for: the action is then applied as that thread's, so that its
    /// reducers' dispatches queue as theirs (taken for `me`'s, they went through the chain while
    /// that thread held the lock, and waited for it forever).
    @inline(__always)
    private func reduceAtEndOfChain(
        _ action: any Action, on me: UInt, context: UnsafeMutablePointer<ThreadContext>
    ) {
        let here = currentThreadID()
        if here == me {
            reduceAndNotify(action, on: me, notifies: nil, context: context)
        } else {
            reduceAndNotify(action, on: here, notifies: nil, context: ThreadContext.current(contextKey))
        }
    }

    /// Runs `body`, which passes actions through `middleware`, as one more level of dispatches
    /// through middleware on this thread (at most ``StoreLimits/maximumMiddlewareDepth``: past it,
    /// a trap), as a pass of this store that collects the actions its reducers dispatch
    /// meanwhile; then passes those through the chain one after the other, in the order they
    /// were dispatched, until none is left. A loop here, not a dispatch inside the one that
    /// applied the action: a reducer that keeps dispatching grows neither the stack nor the depth.
    /// (The depth and the pass add about 5 ns to a dispatch through one pass-through middleware,
    /// 67 ns before, in a timing loop of a release build on swift-packages-b; the benchmark
    /// `composition.middleware.pass1` in Benchmarks/ times the same path.)
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
            if pass.pointee.dispatched != nil { passDispatched(pass, middleware, context: context) }
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
        var next = 0
        // Read in place each time (a copy of the list held across the loop would make every
        // append copy it whole).
        while next < pass.pointee.dispatched!.count {
            let action = pass.pointee.dispatched![next]
            next += 1
            if let batch = action as? ActionBatch {
                applyBatchThroughChain(batch.actions, middleware)
            } else {
                middleware.run(self, action) { self.reduceAtEndOfChain($0, on: me, context: context) }
            }
            if next == pass.pointee.dispatched!.count {
                // All taken: a reducer that keeps dispatching one action reuses one slot.
                pass.pointee.dispatched!.removeAll(keepingCapacity: true)
                next = 0
            }
        }
    }

    /// Refuses a dispatch that would go past ``StoreLimits/maximumMiddlewareDepth`` on this thread,
    /// as ``StoreError/Kind/limit``, for callers that report errors (the C face) instead of the
    /// trap of ``dispatchAction(_:)``. Nothing to refuse in a store without middleware, or from
    /// inside its reducers (the action is queued there, not dispatched through the chain).
    /// Inlined into the C face, so that a store without middleware pays one test.
    @inlinable
    package func checkMiddlewareDepth() throws(StoreError) {
        if hasMiddleware { try checkMiddlewareDepthOfChain() }
    }

    /// ``checkMiddlewareDepth()`` for a store with middleware.
    @usableFromInline
    package func checkMiddlewareDepthOfChain() throws(StoreError) {
        guard applyingThread.load(ordering: .relaxed) != currentThreadID(),
              ThreadContext.current(contextKey).pointee.middlewareDepth
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

    /// Applies one action that passed the middleware (if any) and notifies the observers. The
    /// caller, thread `me`, is outside this store's reducers.
    @inline(__always)
    private func reduceAndNotify(
        _ action: any Action, on me: UInt, notifies: Bool?, context: UnsafeMutablePointer<ThreadContext>
    ) {
        let core = self.core.unsafe.valuePointer
        self.core.unsafe.lock()
        _checkInvariantsLocked()
        applyingThread.store(me, ordering: .relaxed)
        context.pointee.callbackDepth += 1
        let version = apply(action)
        publishedVersion.store(version, ordering: .releasing)
        if !core.pointee.nested.isEmpty {
            finishNestedAndDeliver(
                first: roundLocked(for: action, at: version, notifying: notifies), context: context)
            return
        }
        context.pointee.callbackDepth -= 1
        applyingThread.store(0, ordering: .relaxed)
        if let recorder = core.pointee.recorder, recorder.owesJournalWait || core.pointee.observers.wantsPatches {
            // Observers want the action's patch, or the journal's queue is full and this
            // thread waits once the lock is released. Off the fast path.
            recordedRoundAndDeliver(action, at: version, notifies: notifies, context: context)
            return
        }
        guard core.pointee.observers.count > 0, notifies ?? action.notifiesObservers else {
            self.core.unsafe.unlock()
            return
        }
        var selectionsChanged = false
        if core.pointee.observers.hasSelections {
            selectionsChanged = updateSelectionsLocked(at: version)
            if !selectionsChanged && core.pointee.observers.onlySelecting {
                self.core.unsafe.unlock()
                return
            }
        }
        let observers = core.pointee.observers
        self.core.unsafe.unlock()
        deliver(
            NotificationRound(
                notification: StoreNotification(stateDidChangeAt: version, actionIdentifier: action.identifier),
                observers: observers, selectionsChanged: selectionsChanged),
            context: context)
    }

    /// The end of ``reduceAndNotify(_:on:notifies:context:)`` when observers want patches or the journal is
    /// full. The caller holds the lock, which this releases.
    @inline(never)
    private func recordedRoundAndDeliver(
        _ action: any Action, at version: UInt64, notifies: Bool?, context: UnsafeMutablePointer<ThreadContext>
    ) {
        let round = roundLocked(for: action, at: version, notifying: notifies)
        let journalWait = core.unsafe.valuePointer.pointee.recorder?.takeJournalWait()
        self.core.unsafe.unlock()
        journalWait?.run()
        if let round { deliver(round, context: context) }
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
    /// against ``StoreLimits/maximumMiddlewareDepth``, as ``dispatchAction(_:)`` does.
    public func dispatchActions(_ actions: [any Action]) {
        if applyingThread.load(ordering: .relaxed) == currentThreadID() {
            core.unsafe.valuePointer.pointee.nested.append(ActionBatch(actions: actions))
            return
        }
        applyBatch(actions)
    }

    /// ``dispatchActions(_:)`` outside this store's reducers.
    private func applyBatch(_ actions: [any Action]) {
        guard let middleware else { return applyPassed(actions) }
        throughMiddleware(middleware, context: ThreadContext.current(contextKey)) {
            applyBatchThroughChain(actions, middleware)
        }
    }

    /// Passes each of `actions` through the chain, then applies what passed as one batch.
    private func applyBatchThroughChain(_ actions: [any Action], _ middleware: MiddlewareChain) {
        var passed: [any Action] = []
        passed.reserveCapacity(actions.count)
        for action in actions {
            middleware.run(self, action) { passed.append($0) }
        }
        applyPassed(passed)
    }

    /// Applies `passed`, the actions of a batch that passed the middleware (if any), as one.
    private func applyPassed(_ passed: [any Action]) {
        guard let last = passed.last else { return }
        let context = ThreadContext.current(contextKey)
        self.core.unsafe.lock()
        _checkInvariantsLocked()
        applyingThread.store(currentThreadID(), ordering: .relaxed)
        context.pointee.callbackDepth += 1
        var version: UInt64 = 0
        var notifies = false
        let first = core.unsafe.valuePointer.pointee.version &+ 1
        for action in passed {
            version = apply(action, batch: passed.count > 1 ? first : nil)
            notifies = notifies || action.notifiesObservers
        }
        publishedVersion.store(version, ordering: .releasing)
        let round = notifies ? roundLocked(for: last, at: version, notifying: true) : nil
        finishNestedAndDeliver(first: round, context: context)
    }

    /// After the first action (or batch) of a hold of the lock was applied: applies what the
    /// reducers dispatched meanwhile, releases the lock, and delivers the rounds in version
    /// order. Without middleware the dispatched actions are applied before the lock is released,
    /// FIFO; with middleware they must pass the chain, which runs user code that may read the
    /// store, so they are taken out and handed to this thread's pass of this store (see
    /// ``throughMiddleware(_:context:_:)``), which passes them through the chain once the lock is
    /// released, FIFO, before the dispatch that opened it returns.
    @inline(never)
    private func finishNestedAndDeliver(
        first: NotificationRound?, context: UnsafeMutablePointer<ThreadContext>
    ) {
        let core = self.core.unsafe.valuePointer
        var rounds: [NotificationRound] = []
        if let first { rounds.append(first) }
        var deferred: [any Action] = []
        if middleware == nil {
            var next = 0
            while next < core.pointee.nested.count {
                let action = core.pointee.nested[next]
                next += 1
                if let batch = action as? ActionBatch {
                    var version: UInt64 = 0
                    var notifies = false
                    let first = core.pointee.version &+ 1
                    for action in batch.actions {
                        version = apply(action, batch: batch.actions.count > 1 ? first : nil)
                        notifies = notifies || action.notifiesObservers
                    }
                    publishedVersion.store(version, ordering: .releasing)
                    if notifies, let last = batch.actions.last,
                       let round = roundLocked(for: last, at: version, notifying: true) {
                        rounds.append(round)
                    }
                } else {
                    let version = apply(action)
                    publishedVersion.store(version, ordering: .releasing)
                    if let round = roundLocked(for: action, at: version) { rounds.append(round) }
                }
            }
            core.pointee.nested.removeAll(keepingCapacity: true)
        } else {
            deferred = core.pointee.nested
            core.pointee.nested.removeAll(keepingCapacity: true)
        }
        context.pointee.callbackDepth -= 1
        applyingThread.store(0, ordering: .relaxed)
        let journalWait = core.pointee.recorder?.takeJournalWait()
        self.core.unsafe.unlock()
        journalWait?.run()
        if !rounds.isEmpty { deliver(rounds, context: context) }
        guard !deferred.isEmpty else { return }
        if let pass = context.pointee.pass(of: ObjectIdentifier(self)) {
            if pass.pointee.dispatched == nil {
                pass.pointee.dispatched = deferred
            } else {
                pass.pointee.dispatched!.append(contentsOf: deferred)
            }
            return
        }
        // A `next` called on another thread than its middleware's: no pass there.
        for action in deferred {
            if let batch = action as? ActionBatch {
                applyBatch(batch.actions)
            } else {
                dispatch(erased: action)
            }
        }
    }

    /// The round that tells the observers of `action`, applied as `version`, or `nil` when the
    /// action does not notify or no observer is to hear of it. Updates the key-path and pointer
    /// observers' values first (they read the state, which the lock guards). The caller holds
    /// the lock.
    @inline(__always)
    private func roundLocked(
        for action: any Action, at version: UInt64, notifying: Bool? = nil
    ) -> NotificationRound? {
        guard core.unsafe.valuePointer.pointee.observers.count > 0,
              notifying ?? action.notifiesObservers
        else { return nil }
        let observers = core.unsafe.valuePointer.pointee.observers
        var selectionsChanged = false
        if observers.hasSelections {
            selectionsChanged = updateSelectionsLocked(at: version)
            // Only selecting observers, and none of their values changed: nobody to call.
            if !selectionsChanged && observers.onlySelecting { return nil }
        }
        if observers.wantsPatches, let recorder = core.unsafe.valuePointer.pointee.recorder {
            let patch = recorder.takePendingPatch()
            for entry in observers.patchObservers { entry.pendingPatches?.put(patch, at: version) }
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

    /// Runs the reducers for one action and counts it; returns its version. The caller holds the
    /// lock and publishes the version once the actions it applies as one are all applied.
    @inline(__always)
    private func apply(_ action: any Action, batch: UInt64? = nil) -> UInt64 {
        let core = self.core.unsafe.valuePointer
        reduce(stateAddress, action)
        core.pointee.version &+= 1
        if let recorder = core.pointee.recorder {
            recordLocked(action, at: core.pointee.version, batch: batch, in: recorder)
        }
        return core.pointee.version
    }
}

extension Store {
    /// Replaces the state with `newState` as one applied action (``restore(version:)``): a new
    /// version, recorded, and notified as `"RDXRestore"` to ``StoreNotification/Name/stateDidChange``
    /// observers and with ``StoreNotification/restoredVersion`` to
    /// ``StoreNotification/Name/stateDidRestore`` observers. The caller is outside the reducers.
    func applyReplacingState(with newState: State, restoredFrom: UInt64) {
        let core = self.core.unsafe.valuePointer
        let context = ThreadContext.current(contextKey)
        self.core.unsafe.lock()
        _checkInvariantsLocked()
        applyingThread.store(currentThreadID(), ordering: .relaxed)
        context.pointee.callbackDepth += 1
        state.pointee = newState
        core.pointee.version &+= 1
        let version = core.pointee.version
        let action = RestoreAction(from: restoredFrom)
        if let recorder = core.pointee.recorder {
            recordLocked(action, at: version, batch: nil, in: recorder)
        }
        publishedVersion.store(version, ordering: .releasing)
        let first = roundLocked(for: action, at: version)
        // Then the restore's own notification, to its observers.
        let restoredRound = core.pointee.observers.count > 0
            ? NotificationRound(
                notification: StoreNotification(
                    name: .stateDidRestore, version: version, actionIdentifier: action.identifier,
                    restoredVersion: restoredFrom),
                observers: core.pointee.observers, selectionsChanged: false)
            : nil
        context.pointee.callbackDepth -= 1
        applyingThread.store(0, ordering: .relaxed)
        let journalWait = core.pointee.recorder?.takeJournalWait()
        self.core.unsafe.unlock()
        journalWait?.run()
        let rounds = [first, restoredRound].compactMap { $0 }
        if !rounds.isEmpty { deliver(rounds, context: context) }
    }
}

/// A batch dispatched from inside a reducer: queued whole with the other nested actions, and
/// applied as one after the current action. Never reaches a reducer.
struct ActionBatch: Action {
    let actions: [any Action]
    var identifier: String { actions.last?.identifier ?? "" }
}
