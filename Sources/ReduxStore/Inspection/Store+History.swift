extension Store {
    /// Keeps the snapshots of the last `count` versions, for ``restore(version:)``: the current
    /// version's from now on, and each later version's as it is applied.
    ///
    /// The history is a reader of the store's action log (<doc:ChangeFeed>): the log keeps the
    /// records of the last `count` actions, each with the state's snapshot after it attached,
    /// and the history keeps the snapshot of the version it was turned on at until that version
    /// is no longer among the last `count`.
    ///
    /// Memory: `count` encoded snapshot tapes (about the size of the state's JSON text each, see
    /// `Benchmarks/README.md`, "What inspection costs") and their records, not live copies; each
    /// applied action costs one snapshot encode. `keepHistory(0)` turns it off and frees the
    /// tapes; a smaller count drops the oldest; a larger one keeps the snapshots the log still
    /// holds.
    ///
    /// A version whose state cannot be encoded (nested deeper than
    /// ``StoreLimits/maximumNestingDepth`` levels, or a `Codable` conformance that throws) is
    /// not kept: ``historyVersions`` leaves it out, and the change feed's patch for it is `nil`.
    public func keepHistory(_ count: Int) {
        withCoreLocked { core, insideReducer in
            let recorder = core.pointee.recorder ?? Recorder()
            core.pointee.recorder = recorder
            let old = recorder.history
            if count <= 0 {
                recorder.history = nil
            } else if old?.limit != count {
                // A new count keeps the base a history had; a new history takes the version now
                // (at rest; inside a reducer the state is being changed).
                var base = old?.base
                if old == nil, !insideReducer || readableInsideReducer {
                    let tape = SnapshotTape()
                    if (try? core.pointee.encoder.encode(state.pointee, into: tape)) != nil {
                        base = (core.pointee.version, tape)
                    }
                }
                // Opened before the old claim closes: the records and their snapshots stay in
                // the ring. Ticked: the history reads no time, so it leaves the clock to the
                // claims that do.
                let token = openClaimLocked(
                    ActionLog.Claim(capacity: count, ticked: true, snapshots: true), core: core,
                    insideReducer: insideReducer)
                recorder.history = History(limit: count, token: token, base: base)
            }
            if let old, old !== recorder.history { _ = closeClaimLocked(old.token, core: core) }
            core.pointee.dropRecorderIfIdle()
        }
    }

    /// The state at `version`, if the history keeps it (``keepHistory(_:)``, ``historyVersions``):
    /// a value of the caller's own, as ``currentState()`` returns; `nil` for a version not kept,
    /// or a state whose Codable conformance fails. The store does not change.
    public func historyState(at version: UInt64) -> State? {
        guard let tape = withCoreLocked({ core, _ in
            core.pointee.recorder?.history?.tape(at: version, current: core.pointee.version, in: core.pointee.actionLog)
        })
        else { return nil }
        return try? SnapshotDecoder.decode(State.self, from: tape)
    }

    /// The versions whose snapshots the history keeps, oldest first.
    public var historyVersions: [UInt64] {
        withCoreLocked { core, _ in
            core.pointee.recorder?.history?.versions(at: core.pointee.version, in: core.pointee.actionLog) ?? []
        }
    }

    /// Makes the state equal to that of `version` (kept by ``keepHistory(_:)``), as a new
    /// version: versions only grow. Observers of ``StoreNotification/Name/stateDidChange`` hear
    /// of it as of an action named `"RDXRestore"`, and observers of
    /// ``StoreNotification/Name/stateDidRestore`` get a notification whose
    /// ``StoreNotification/restoredVersion`` is `version`. A journal records it as a
    /// `"RDXRestore"` line (not replayable; its patch, with patches on, says what changed).
    ///
    /// - Throws: ``StoreError/Kind/invalidArgument`` inside a reducer, for a version the
    ///   history does not keep (the message names the versions it keeps), or on a store whose
    ///   versions another decides (a replica of a PostgreSQL stream: the message says so);
    ///   ``StoreError/Kind/limit`` in a store with middleware from inside more than
    ///   ``StoreLimits/maximumMiddlewareDepth`` dispatches through middleware on this thread (the
    ///   restore runs as one more: what change feed consumers dispatch meanwhile passes the chain
    ///   after it).
    public func restore(version: UInt64) throws(StoreError) {
        if isInsideReducer {
            throw StoreError(.invalidArgument, "restore(version:) inside a reducer: restore before or after the action")
        }
        if let refusal = localChangesRefusal {
            throw StoreError(.invalidArgument, "restore(version: \(version)): \(refusal)")
        }
        try checkMiddlewareDepth()
        let tape = try withCoreLocked { (core, _) throws(StoreError) -> SnapshotTape in
            guard let history = core.pointee.recorder?.history else {
                throw StoreError(.invalidArgument, "restore(version: \(version)): no history is kept (keepHistory(_:))")
            }
            guard let tape = history.tape(at: version, current: core.pointee.version, in: core.pointee.actionLog) else {
                let kept = history.versions(at: core.pointee.version, in: core.pointee.actionLog)
                let range = kept.isEmpty ? "none" : "\(kept.first!)–\(kept.last!)"
                throw StoreError(.invalidArgument, "restore(version: \(version)): not in the history (kept: \(range))")
            }
            return tape
        }
        let restored = try SnapshotDecoder.decode(State.self, from: tape)
        applyReplacingState(with: restored, restoredFrom: version)
    }
}

/// What a restore is recorded as in a journal: not `Encodable`, so it is marked as not
/// replayable. Never reaches a reducer.
struct RestoreAction: Action {
    let from: UInt64
    var identifier: String { "RDXRestore" }
}
