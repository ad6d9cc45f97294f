import DequeModule

/// One consumer of a store's change feed, a change listener: called
/// with the record of each applied action, under the store's lock, on the thread applying it, in
/// version order (as a reducer is: it may read the store and dispatch, which queues the action
/// after the current one, but not wait for another thread that dispatches to the store).
final class ChangeListener: @unchecked Sendable {
    // @unchecked: `receive` is called under the store's lock only; `isRemoved` is changed under
    // it too.

    /// The adder's name for it (``Store/addChangeListener(key:includingPatches:receive:)``).
    let key: UInt64
    /// Whether the records it receives carry the action's patch.
    let includingPatches: Bool
    let receive: (ChangeRecord) -> Void
    /// Set under the store's lock once removed: not called again, also not for the record in
    /// progress.
    private(set) var isRemoved = false
    /// The first version it hears: the next action's when it was added (set under the lock).
    fileprivate(set) var firstVersion: UInt64 = 0
    /// Its claim on the action log, whose newest record it is handed (set under the lock).
    fileprivate var token: UInt64 = 0

    init(key: UInt64, includingPatches: Bool, receive: @escaping (ChangeRecord) -> Void) {
        self.key = key
        self.includingPatches = includingPatches
        self.receive = receive
    }

    /// Marks it removed; the caller holds the store's lock.
    fileprivate func markRemoved() { isRemoved = true }
}

extension Store {
    /// The change feed: the record of each action applied from now on (from inside a reducer or
    /// a change listener: after the action in progress), as an async sequence, in version order.
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
    /// Each change is recorded once under the store's lock as its action is applied, in the
    /// store's action log, the ring the live inspectors read too (the journal and the change
    /// listeners take the same record). The sequence reads it from there when the consumer asks
    /// for the next change, on the consumer's task: the payload is made JSON there, not on the
    /// dispatching thread. The store keeps the newest `limit` changes the consumer has not read;
    /// past that the oldest are dropped first (a gap in ``StoreChange/version`` shows where). The
    /// sequence takes them from the store up to 64 at a time, so up to that many more may already
    /// be taken by it. It ends when the store is freed, after the changes the store still kept
    /// for it, and stops reading when the consuming task is cancelled or the sequence is dropped;
    /// it does not keep the store alive.
    ///
    /// A store nobody reads from pays nothing for this: the dispatch path tests one field. While
    /// a sequence is open, each action costs the store a copy of the action and its source into
    /// the ring (the store keeps `limit` of them, as many as the largest open sequence asks for),
    /// and with `includingPatches` the state's encoding and a diff against the last one.
    ///
    /// - Parameters:
    ///   - includingPatches: whether each change carries its RFC 6902 ``StoreChange/patch``.
    ///   - limit: how many changes the store keeps for the consumer at most; less than 1 counts
    ///     as 1.
    public func changes(includingPatches: Bool = false, bufferingNewest limit: Int = 4096)
        -> AsyncStream<StoreChange>
    {
        let limit = max(limit, 1)
        let reader = withCoreLocked { core, insideReducer in
            // From inside a reducer or listener: after the action in progress.
            let token = openClaimLocked(
                ActionLog.Claim(
                    capacity: limit, ticked: false, patches: includingPatches,
                    cursor: core.pointee.firstVersion(insideReducer: insideReducer) &- 1),
                core: core, insideReducer: insideReducer)
            let reader = ChangeReader(
                token: token, includingPatches: includingPatches, batch: min(limit, 64), core: self.core,
                close: { [weak self] token in self?.closeActionLog(token) })
            core.pointee.actionLog.attach(reader, to: token)
            return reader
        }
        return AsyncStream(unfolding: { await reader.next() }, onCancel: { reader.cancel() })
    }

    /// Adds a listener to the change feed: `receive` is called with the record of every action
    /// applied after this returns (from inside a reducer, after the current one), as
    /// ``ChangeListener`` says, until ``removeChangeListener(key:)`` with the same `key`.
    ///
    /// - Parameters:
    ///   - key: the caller's name for the listener, unique among this store's listeners; known to
    ///     the caller before the listener can be called, so that the listener may remove itself.
    ///   - includingPatches: whether each record carries the action's patch.
    ///
    /// Package, as ``ChangeRecord`` is (see it): a binding's change listener.
    package func addChangeListener(
        key: UInt64, includingPatches: Bool, receive: @escaping (ChangeRecord) -> Void
    ) {
        let listener = ChangeListener(key: key, includingPatches: includingPatches, receive: receive)
        withCoreLocked { core, insideReducer in addChangeListenerLocked(listener, core: core, insideReducer: insideReducer) }
    }

    /// ``addChangeListener(_:)``, the lock held (or this thread inside a reducer or listener).
    private func addChangeListenerLocked(
        _ listener: ChangeListener, core: UnsafeMutablePointer<StoreCore>, insideReducer: Bool
    ) {
        // A claim of one record: the listener reads the newest as it is made.
        listener.token = openClaimLocked(
            ActionLog.Claim(capacity: 1, ticked: false, patches: listener.includingPatches), core: core,
            insideReducer: insideReducer)
        listener.firstVersion = core.pointee.firstVersion(insideReducer: insideReducer)
        let recorder = core.pointee.recorder ?? Recorder()
        recorder.listeners.append(listener)
        core.pointee.recorder = recorder
    }

    /// Removes the listener added with `key`: once this returns it is never called again (a call
    /// running on another thread holds the store's lock, which this waits for). `false` when no
    /// listener of this store has that key.
    @discardableResult
    @_spi(Bindings) public func removeChangeListener(key: UInt64) -> Bool {
        withCoreLocked { core, _ in
            guard let recorder = core.pointee.recorder,
                  let index = recorder.listeners.firstIndex(where: { $0.key == key })
            else { return false }
            let listener = recorder.listeners.remove(at: index)
            listener.markRemoved()
            _ = closeClaimLocked(listener.token, core: core)
            return true
        }
    }
}

/// The reading end of one ``Store/changes(includingPatches:bufferingNewest:)`` sequence: a claim
/// on the store's action log, read by the sequence's iterator on the consumer's task. The claim
/// holds it weakly; the sequence strongly: a sequence dropped closes its claim.
///
/// It reads through the store's lock (``core``), which it holds, not through the store: a read
/// never holds the store, so the store is freed on the thread that drops it, its deinit's work
/// done when that returns, whatever a consumer is doing. The store's deinit hands the reader
/// what the ring kept for it under that lock (``ActionLog/endReaders()``).
final class ChangeReader: @unchecked Sendable {
    // @unchecked: `core` is read only under its lock, and only its action log; the rest is
    // immutable or behind `state`'s lock.
    private struct State {
        /// Records taken from the log and not yet handed to the consumer, oldest first.
        var taken: Deque<ChangeRecord> = []
        /// Set once the store was freed: ``taken`` holds the last records.
        var ended = false
    }

    let token: UInt64
    let includingPatches: Bool
    /// How many records one read takes from the log at most.
    private let batch: Int
    /// The store's lock and what it guards: the action log is read under it.
    private let core: Locked<StoreCore>
    /// Closes the claim through the store, when it is still there (from inside one of its
    /// reducers too, where its lock is held already).
    private let close: @Sendable (UInt64) -> Void
    private let state = Locked(State())
    /// Rung by the log's next record, by the store's end, and closed at cancellation. The log
    /// holds its ring, never the reader: the last release of a reader, which closes its claim
    /// (taking the store's lock), never happens under that lock.
    private let wakeUp = WakeUpSignal()

    init(
        token: UInt64, includingPatches: Bool, batch: Int, core: Locked<StoreCore>,
        close: @escaping @Sendable (UInt64) -> Void
    ) {
        self.token = token
        self.includingPatches = includingPatches
        self.batch = batch
        self.core = core
        self.close = close
    }

    deinit { close(token) }

    /// The next change, waiting for it; `nil` once the store was freed and every record it kept
    /// for this reader was read, or at cancellation (the claim is then closed).
    func next() async -> StoreChange? {
        while true {
            let (record, ended) = state.withLock { state in (state.taken.popFirst(), state.ended) }
            if let record { return StoreChange(record, includingPatch: includingPatches) }
            if ended { return nil }
            if wakeUp.isClosed || Task.isCancelled {
                close(token)
                return nil
            }
            // None: wait for the next record, or for the store's end (its deinit hands this
            // reader what the ring kept, under the lock, and rings: a read after it finds no
            // claim and waits for that ring).
            let records = core.withLock { core -> [ChangeRecord] in
                let records = core.actionLog.read(token, limit: batch).records
                if records.isEmpty { core.actionLog.arm(wakeUp.ring) }
                return records
            }
            if records.isEmpty {
                await wakeUp.wait()
            } else {
                state.withLock { $0.taken.append(contentsOf: records) }
            }
        }
    }

    /// Ends the sequence after `records`: the store is being freed.
    func end(handing records: [ChangeRecord]) {
        state.withLock { state in
            state.taken.append(contentsOf: records)
            state.ended = true
        }
        wakeUp.ring()
    }

    /// Stops the sequence: its consuming task is cancelled.
    func cancel() { wakeUp.close() }
}
