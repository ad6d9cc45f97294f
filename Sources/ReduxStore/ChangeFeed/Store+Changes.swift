/// One consumer of a store's change feed: called with the record of each applied action, under
/// the store's lock, on the thread applying it, in version order (as a reducer is: it may read
/// the store and dispatch, which queues the action after the current one, but not wait for
/// another thread that dispatches to the store).
package final class ChangeListener: @unchecked Sendable {
    // @unchecked: `receive` and `end` are called under the store's lock only; `isRemoved` is
    // changed under it too.

    /// Whether the records it receives carry the action's patch.
    let includingPatches: Bool
    let receive: (ChangeRecord) -> Void
    /// Called once when the listener is removed or the store is freed.
    private let end: () -> Void
    /// Set under the store's lock once removed: not called again, also not for the record in
    /// progress.
    private(set) var isRemoved = false

    package init(
        includingPatches: Bool, receive: @escaping (ChangeRecord) -> Void,
        end: @escaping () -> Void = {}
    ) {
        self.includingPatches = includingPatches
        self.receive = receive
        self.end = end
    }

    /// Marks it removed; the caller holds the store's lock. Then ``ended()`` runs its end, once
    /// the lock is released (ending an async sequence runs its termination handler, which
    /// removes the listener, which takes the lock).
    fileprivate func markRemoved() { isRemoved = true }

    fileprivate func ended() { end() }
}

extension Store {
    /// The change feed: the record of each action applied from now on, as an async sequence, in
    /// version order.
    ///
    /// ```swift
    /// let store = Store(reducers: [todosReducer], state: Todos())
    /// let feed = store.changes(includingPatches: true)
    /// store.dispatchAction(AddTodo(title: "milk"))        // Feature.swift:42
    /// for await change in feed {
    ///     print(change.version, change.identifier, change.source!)   // 1 addTodo Feature.swift:42
    ///     break
    /// }
    /// ```
    ///
    /// Each change is recorded under the store's lock as its action is applied, once for every
    /// consumer (the journal reads the same record), and buffered for this sequence: at most
    /// `limit` wait for the consumer; past that the oldest are dropped first (a gap in
    /// ``StoreChange/version`` shows where). The sequence ends when the store is freed, and stops
    /// listening when the consuming task is cancelled or the sequence is dropped.
    ///
    /// A store nobody listens to pays nothing for this: the dispatch path tests one field. A
    /// listener costs each action its record (an allocation for the payload as JSON), and with
    /// `includingPatches` the state's encoding and a diff against the last one.
    ///
    /// - Parameters:
    ///   - includingPatches: whether each change carries its RFC 6902 ``StoreChange/patch``.
    ///   - limit: how many changes wait for the consumer at most (at least 1).
    public func changes(includingPatches: Bool = false, bufferingNewest limit: Int = 4096)
        -> AsyncStream<StoreChange>
    {
        let (stream, continuation) = AsyncStream<StoreChange>.makeStream(
            bufferingPolicy: .bufferingNewest(max(limit, 1)))
        let listener = ChangeListener(
            includingPatches: includingPatches,
            receive: { record in continuation.yield(StoreChange(record, includingPatch: includingPatches)) },
            end: { continuation.finish() })
        addChangeListener(listener)
        // Through the type-erased face: the handler must not capture the state's type.
        weak let store: (any AnyStore)? = self
        continuation.onTermination = { _ in store?.removeChangeListener(listener) }
        return stream
    }

    /// Adds `listener` to the change feed: it hears every action applied after this returns
    /// (from inside a reducer, after the current one).
    package func addChangeListener(_ listener: ChangeListener) {
        withCoreLocked { core, insideReducer in addChangeListenerLocked(listener, core: core, insideReducer: insideReducer) }
    }

    /// ``addChangeListener(_:)``, the lock held (or this thread inside a reducer or listener).
    private func addChangeListenerLocked(
        _ listener: ChangeListener, core: UnsafeMutablePointer<StoreCore>, insideReducer: Bool
    ) {
        let recorder = core.pointee.recorder ?? Recorder()
        if listener.includingPatches && !recorder.keepsLastValue && (!insideReducer || readableInsideReducer) {
            recorder.rememberState(stateAsJSONLocked(), at: core.pointee.version)
        }
        recorder.listeners.append(listener)
        core.pointee.recorder = recorder
    }

    /// Removes `listener`: once this returns it is never called again (a call running on
    /// another thread holds the store's lock, which this waits for). `false` when it was not
    /// listening.
    @discardableResult
    package func removeChangeListener(_ listener: ChangeListener) -> Bool {
        let removed = withCoreLocked { core, _ in
            guard let recorder = core.pointee.recorder,
                  let index = recorder.listeners.firstIndex(where: { $0 === listener })
            else { return false }
            recorder.listeners.remove(at: index)
            listener.markRemoved()
            if !recorder.listenersWantPatches && recorder.journal?.options.recordPatches != true
                && !core.pointee.observers.wantsPatches
            {
                recorder.forgetState()
            }
            if recorder.isEmpty { core.pointee.recorder = nil }
            return true
        }
        if removed { listener.ended() }
        return removed
    }

    /// Ends every listener (their sequences finish): the store is being freed.
    func endChangeListenersAtDeinit() {
        guard let recorder = core.unsafe.valuePointer.pointee.recorder else { return }
        let listeners = recorder.listeners
        recorder.listeners = []
        for listener in listeners {
            listener.markRemoved()
            listener.ended()
        }
    }
}
