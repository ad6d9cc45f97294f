#if canImport(Glibc)
import Glibc
#endif

/// What a store records of each applied action besides applying it: the journal and the history
/// (``Store/startJournal(at:options:)``, ``Store/keepHistory(_:)``). Touched only under the
/// store's lock; the store's `recorder` field is `nil` while neither is on.
final class Recorder {
    var journal: Journal?
    var history: History?
    /// The state as JSON after the last recorded action, for patches (``JournalOptions/recordPatches``).
    var lastValue: JSONValue?
    /// A journal whose queue is over capacity: the dispatching thread waits for it once it
    /// released the lock.
    private var journalToWaitFor: Journal?

    var isEmpty: Bool { journal == nil && history == nil }

    func mustWait(for journal: Journal) { journalToWaitFor = journal }

    func takeJournalToWaitFor() -> Journal? {
        defer { journalToWaitFor = nil }
        return journalToWaitFor
    }
}

/// The snapshots of the last versions (``Store/keepHistory(_:)``): encoded tapes, oldest first.
final class History {
    let limit: Int
    private(set) var versions: [(version: UInt64, tape: SnapshotTape)] = []

    init(limit: Int) { self.limit = limit }

    func append(_ version: UInt64, _ tape: SnapshotTape) {
        if versions.count == limit { versions.removeFirst() }
        versions.append((version, tape))
    }

    func tape(at version: UInt64) -> SnapshotTape? {
        versions.last { $0.version == version }?.tape
    }

    func trim(to limit: Int) -> History {
        let trimmed = History(limit: limit)
        for entry in versions.suffix(limit) { trimmed.append(entry.version, entry.tape) }
        return trimmed
    }
}

extension Store {
    /// Records an applied action in the journal and the history. The caller holds the lock;
    /// `version` is the action's.
    func recordLocked(_ action: any Action, at version: UInt64, batch: UInt64?, in recorder: Recorder) {
        var tape: SnapshotTape?
        if let history = recorder.history {
            let encoded = SnapshotTape()
            if (try? core.valuePointer.pointee.encoder.encode(state.pointee, into: encoded)) != nil {
                history.append(version, encoded)
                tape = encoded
            }
        }
        guard let journal = recorder.journal else { return }
        var patch: String?
        if journal.options.recordPatches {
            patch = patchLocked(recorder: recorder, tape: tape)
        }
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let owned = (action as? any JournalRecordable)?.ownedForJournal() ?? action
        if journal.append(JournalEntry(version: version, action: owned, time: time, batch: batch, patch: patch)) {
            recorder.mustWait(for: journal)
        }
    }

    /// The RFC 6902 patch from the state after the last recorded action to the state now, as
    /// JSON text; `nil` if the state cannot be encoded.
    private func patchLocked(recorder: Recorder, tape: SnapshotTape?) -> String? {
        guard let now = stateAsJSONLocked(tape: tape) else { return nil }
        defer { recorder.lastValue = now }
        guard let before = recorder.lastValue else { return nil }
        let operations = JSONPatch.diff(from: before, to: now)
        return try? JSONCEncoder().encodeToJSONString(operations)
    }

    /// The state as a ``JSONValue`` (from `tape` if given). The caller holds the lock.
    func stateAsJSONLocked(tape: SnapshotTape? = nil) -> JSONValue? {
        let source: SnapshotTape
        if let tape {
            source = tape
        } else {
            source = SnapshotTape()
            guard (try? core.valuePointer.pointee.encoder.encode(state.pointee, into: source)) != nil
            else { return nil }
        }
        return try? SnapshotDecoder.decode(JSONValue.self, from: source)
    }
}
