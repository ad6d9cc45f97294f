/// What the change feed makes of an applied action besides its record in the action log
/// (``ActionLog``, which the journal, `changes()` sequences, the live inspectors, the change
/// listeners, the observers of patches and the history read): the state's snapshot and the
/// action's patch, attached to the record, and the calls of the change listeners, each handed
/// the log's newest record. Touched only under the store's lock; the store's `recorder` field is
/// `nil` while nobody wants any of it, so a dispatch then tests one field.
final class Recorder {
    var history: History?
    /// The listeners, in the order they were added.
    var listeners: [ChangeListener] = []
    /// The state as JSON after the last recorded action, for the next patch.
    var lastValue: JSONValue?
    /// Why ``lastValue`` is missing when the state could not be made JSON: the next patch
    /// cannot be made, and the records and journal lines say so.
    var lastValueError: String?
    /// The tape the state is encoded into to make ``lastValue``, reused from one action to the
    /// next (a new tape per action cost a third of a small state's patch). Never handed out.
    let scratch = SnapshotTape()
    /// Whether ``lastValue`` holds a value (tested without copying it).
    var keepsLastValue: Bool {
        if case .some = lastValue { true } else { false }
    }

    /// Keeps the state as JSON (``lastValue``), or why it could not be made
    /// (``lastValueError``), for the next action's patch. `version` is the state's.
    func rememberState(_ state: Result<JSONValue, StoreError>, at version: UInt64) {
        switch state {
        case .success(let value):
            lastValue = value
            lastValueError = nil
        case .failure(let error):
            lastValue = nil
            lastValueError = "the state at version \(version) is not JSON: \(error.message)"
        }
    }

    /// Forgets the state kept for patches.
    func forgetState() {
        lastValue = nil
        lastValueError = nil
    }
}

/// The history (``Store/keepHistory(_:)``): a claim on the action log, which keeps the newest
/// `limit` records with the state's snapshot after each (``ActionLog/snapshot(at:)``), and the
/// snapshot of the version it was turned on at, which no record stands for, until that version
/// is no longer among the last `limit`.
final class History {
    let limit: Int
    /// Its claim on the action log.
    let token: UInt64
    /// The state at the version the history was turned on at, if it could be encoded.
    private(set) var base: (version: UInt64, tape: SnapshotTape)?

    init(limit: Int, token: UInt64, base: (version: UInt64, tape: SnapshotTape)?) {
        self.limit = limit
        self.token = token
        self.base = base
    }

    /// The oldest version of the last `limit` at `version` (the store's).
    private func oldestKept(at version: UInt64) -> UInt64 {
        version >= UInt64(limit) ? version &- UInt64(limit) &+ 1 : 0
    }

    /// The versions it keeps, oldest first, when the store is at `version`.
    func versions(at version: UInt64, in log: borrowing ActionLog) -> [UInt64] {
        let oldest = oldestKept(at: version)
        var versions: [UInt64] = []
        if let base, base.version >= oldest { versions.append(base.version) }
        let after = max(oldest, 1) &- 1
        versions += log.snapshotVersions(after: max(after, base?.version ?? 0))
        return versions
    }

    /// The snapshot of `version` if it keeps it, the store being at `current`.
    func tape(at version: UInt64, current: UInt64, in log: borrowing ActionLog) -> SnapshotTape? {
        guard version >= oldestKept(at: current), version <= current else { return nil }
        if let base, base.version == version { return base.tape }
        return log.snapshot(at: version)
    }

    /// Lets the base go once it left the last `limit` versions (the store is at `version`).
    func forgetBase(at version: UInt64) {
        if let base, base.version < oldestKept(at: version) { self.base = nil }
    }
}

extension Store {
    /// Makes what the change feed wants of the action just applied as `version`, whose record
    /// the action log holds already: the state's snapshot for the history and the patch (both
    /// attached to the log's record), and the listeners' calls, each handed the log's record. The
    /// caller, the apply transaction, holds the lock.
    @inline(never)
    func recordLocked(at version: UInt64, in recorder: Recorder) {
        let core = core.unsafe.valuePointer
        var tape: SnapshotTape?
        if let history = recorder.history {
            let encoded = SnapshotTape()
            if (try? core.pointee.encoder.encode(state.pointee, into: encoded)) != nil { tape = encoded }
            core.pointee.actionLog.attachSnapshot(tape)
            history.forgetBase(at: version)
        }
        if core.pointee.actionLog.wantsPatches {
            let now = stateAsJSONLocked(tape: tape)
            if let before = recorder.lastValue, case .success(let now) = now {
                core.pointee.actionLog.attachPatch(JSONPatch.diff(from: before, to: now), error: nil)
            } else if case .failure(let error) = now {
                core.pointee.actionLog.attachPatch(nil, error: "the state after this action is not JSON: \(error.message)")
            } else {
                core.pointee.actionLog.attachPatch(
                    nil, error: recorder.lastValueError ?? "the state before this action was not recorded")
            }
            recorder.rememberState(now, at: version)
        } else if recorder.keepsLastValue || recorder.lastValueError != nil {
            recorder.forgetState()  // nobody wants patches: start afresh when someone does
        }
        // A listener removed by an earlier one during this call is not called, nor one added
        // during this action (by a reducer: it hears the next one). Each has a claim on the log,
        // which holds the record.
        guard !recorder.listeners.isEmpty, let record = core.pointee.actionLog.newestRecord() else { return }
        for listener in recorder.listeners where !listener.isRemoved && version >= listener.firstVersion {
            listener.receive(record)
        }
    }

    /// The change feed's recorder, made if there is none, keeping the state as JSON for the next
    /// patch (the caller asks for patches). The lock is held.
    @discardableResult
    func recorderKeepingStateLocked(core: UnsafeMutablePointer<StoreCore>, insideReducer: Bool) -> Recorder {
        let recorder = core.pointee.recorder ?? Recorder()
        if !recorder.keepsLastValue && (!insideReducer || readableInsideReducer) {
            recorder.rememberState(stateAsJSONLocked(), at: core.pointee.version)
        }
        core.pointee.recorder = recorder
        return recorder
    }

    /// The state as a ``JSONValue`` (from `tape` if given), or why it cannot be made. The
    /// caller holds the lock.
    func stateAsJSONLocked(tape: SnapshotTape? = nil) -> Result<JSONValue, StoreError> {
        do throws(StoreError) {
            let source: SnapshotTape
            if let tape {
                source = tape
            } else {
                source = core.unsafe.valuePointer.pointee.recorder?.scratch ?? SnapshotTape()
                try core.unsafe.valuePointer.pointee.encoder.encode(state.pointee, into: source)
            }
            return .success(try SnapshotDecoder.decode(JSONValue.self, from: source))
        } catch {
            return .failure(error)
        }
    }
}
