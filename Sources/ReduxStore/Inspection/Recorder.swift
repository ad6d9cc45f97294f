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
    /// The operations of the actions applied since the last round was made, for observers that
    /// asked for patches.
    var pendingPatch: [JSONPatch.Operation] = []
    /// A journal whose queue is over capacity: the dispatching thread waits for it once it
    /// released the lock.
    private var journalToWaitFor: Journal?

    var isEmpty: Bool { journal == nil && history == nil && lastValue == nil }

    func takePendingPatch() -> [JSONPatch.Operation] {
        defer { pendingPatch = [] }
        return pendingPatch
    }

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
        let forObservers = core.valuePointer.pointee.observers.wantsPatches
        let forJournal = recorder.journal?.options.recordPatches ?? false
        var operations: [JSONPatch.Operation]?
        if forObservers || forJournal {
            let now = stateAsJSONLocked(tape: tape)
            if let before = recorder.lastValue, let now {
                operations = JSONPatch.diff(from: before, to: now)
            }
            recorder.lastValue = now
        } else {
            recorder.lastValue = nil  // nobody wants patches: start afresh when someone does
        }
        if forObservers, let operations { recorder.pendingPatch += operations }
        guard let journal = recorder.journal else { return }
        var patch: String?
        if forJournal, let operations {
            patch = try? JSONCEncoder().encodeToJSONString(operations)
        }
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        let full: Bool
        if let journalCopier {
            full = journal.append(version: version, action: journalCopier(action), time: time, batch: batch, patch: patch)
        } else {
            full = journal.append(version: version, action: action, time: time, batch: batch, patch: patch)
        }
        if full { recorder.mustWait(for: journal) }
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
