import DequeModule
#if canImport(Glibc)
import Glibc
#endif

/// The change feed: what a store records of each applied action besides applying it, and who
/// consumes the record — the journal (``Store/startJournal(at:options:)``), the history
/// (``Store/keepHistory(_:)``), the C face's listeners, the observers that asked for patches, and
/// the action log's patches (``ActionLog``, read by ``Store/changes(includingPatches:bufferingNewest:)``
/// and the live inspectors, is written beside it by the apply transaction). Touched only under the store's
/// lock; the store's `recorder` field is `nil` while nobody consumes, so a dispatch then tests
/// one field.
final class Recorder {
    var journal: Journal? { didSet { updateJournalAlone() } }
    var history: History? { didSet { updateJournalAlone() } }
    /// The listeners, in the order they were added.
    var listeners: [ChangeListener] = [] { didSet { updateJournalAlone() } }
    /// Whether a listener asked for patches.
    private(set) var listenersWantPatches = false
    /// The state as JSON after the last recorded action, for patches (``JournalOptions/recordPatches``).
    var lastValue: JSONValue? {
        didSet { if keepsLastValue != (journalAlone == nil) { updateJournalAlone() } }
    }
    /// Why ``lastValue`` is missing when the state could not be made JSON: the next patch
    /// cannot be made, and its journal line says so.
    var lastValueError: String?
    /// The journal when a record without a patch is all there is to make of an action and the
    /// journal its one consumer: a journal without patches, no history, no listener, no state
    /// kept for patches. The dispatch path appends to it straight
    /// away (when no observer asks for patches either: that list is the store's).
    private(set) var journalAlone: Journal?
    /// The tape the state is encoded into to make ``lastValue``, reused from one action to the
    /// next (a new tape per action cost a third of a small state's patch). Never handed out.
    let scratch = SnapshotTape()
    /// The operations of the actions applied since the last round was made, for observers that
    /// asked for patches.
    var pendingPatch: [JSONPatch.Operation] = []
    /// A journal whose queue is over capacity, and the version the dispatching thread waits
    /// for it to take once it released the lock.
    private var journalToWaitFor: (journal: Journal, version: UInt64)?

    /// Whether the action log asks for each record's patch (a ``Store/changes(includingPatches:bufferingNewest:)``
    /// sequence with patches reads it).
    var logWantsPatches = false { didSet { updateJournalAlone() } }

    var isEmpty: Bool { journal == nil && history == nil && listeners.isEmpty && !keepsLastValue && !logWantsPatches }


    private func updateJournalAlone() {
        listenersWantPatches = listeners.contains { $0.includingPatches }
        if let journal, !journal.options.recordPatches, history == nil, listeners.isEmpty, !keepsLastValue,
            !logWantsPatches
        {
            journalAlone = journal
        } else {
            journalAlone = nil
        }
    }

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

    /// Forgets the state kept for patches when nobody wants them any more: neither the journal,
    /// a listener, a reader of the action log, nor (`observersWantPatches`) an observer.
    func forgetStateUnlessWanted(observersWantPatches: Bool) {
        guard journal?.options.recordPatches != true, !listenersWantPatches, !logWantsPatches,
              !observersWantPatches
        else { return }
        forgetState()
    }

    /// Forgets the state kept for patches.
    func forgetState() {
        lastValue = nil
        lastValueError = nil
    }

    func takePendingPatch() -> [JSONPatch.Operation] {
        defer { pendingPatch = [] }
        return pendingPatch
    }

    func mustWait(for journal: Journal, through version: UInt64) {
        journalToWaitFor = (journal, version)
    }

    /// The wait a dispatch owes a full journal (``JournalOptions/Overflow/block``), taken: the
    /// caller runs it once it released the store's lock.
    func takeJournalWait() -> JournalWait? {
        guard let (journal, version) = journalToWaitFor else { return nil }
        journalToWaitFor = nil
        return JournalWait(journal: journal, version: version)
    }
}

/// A dispatcher's wait for a full journal, run after it released the store's lock.
struct JournalWait {
    let journal: Journal
    let version: UInt64
    func run() { journal.waitForRoom(through: version) }
}

/// The snapshots of the last versions (``Store/keepHistory(_:)``): encoded tapes, oldest first.
final class History {
    let limit: Int
    /// A ring (`Deque`): a full history drops its oldest in constant time.
    private(set) var versions: Deque<(version: UInt64, tape: SnapshotTape)> = []

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
    /// Makes the one record of an applied action and hands it to each consumer of the change
    /// feed. The caller, the apply transaction, holds the lock; `version` is the action's,
    /// `batch` the versions of the batch it is applied in (if any), `source` where it was
    /// dispatched from.
    @inline(__always)
    func recordLocked(
        _ action: any Action, at version: UInt64, batch: ClosedRange<UInt64>?, source: DispatchSite,
        in recorder: Recorder
    ) {
        // The journal alone, without patches: the record is all there is to make.
        if let journal = recorder.journalAlone, !core.unsafe.valuePointer.pointee.observers.wantsPatches {
            if journal.append(makeRecordLocked(action, at: version, batch: batch, source: source)) {
                recorder.mustWait(for: journal, through: version)
            }
        } else {
            recordForEveryConsumerLocked(action, at: version, batch: batch, source: source, in: recorder)
        }
    }

    /// The record of `action`, owning what it holds: a C action's payload is copied
    /// (``keeper``), a C caller's file name kept (``DispatchSite/kept()``).
    @inline(__always)
    private func makeRecordLocked(
        _ action: any Action, at version: UInt64, batch: ClosedRange<UInt64>?, source: DispatchSite,
        patch: [JSONPatch.Operation]? = nil, patchError: String? = nil
    ) -> ChangeRecord {
        var time = timespec()
        // The kernel's coarse clock: the time of its last tick (every few milliseconds), read
        // from memory, where the precise clock costs several times as much (Benchmarks/README.md,
        // "What inspection costs").
        clock_gettime(CLOCK_REALTIME_COARSE, &time)
        // Two initializers rather than one with `keeper.map { … } ?? action`, which copies the
        // action's existential once more for every record.
        if let keeper {
            return ChangeRecord(
                version: version, action: keeper.kept(action), time: time, batch: batch, patch: patch,
                patchError: patchError, source: source)
        }
        return ChangeRecord(
            version: version, action: action, time: time, batch: batch, patch: patch, patchError: patchError,
            source: source)
    }

    /// ``recordLocked(_:at:batch:source:in:)`` when a history is kept, patches are made or
    /// listeners listen.
    @inline(never)
    private func recordForEveryConsumerLocked(
        _ action: any Action, at version: UInt64, batch: ClosedRange<UInt64>?, source: DispatchSite,
        in recorder: Recorder
    ) {
        var tape: SnapshotTape?
        if let history = recorder.history {
            let encoded = SnapshotTape()
            if (try? core.unsafe.valuePointer.pointee.encoder.encode(state.pointee, into: encoded)) != nil {
                history.append(version, encoded)
                tape = encoded
            }
        }
        let forObservers = core.unsafe.valuePointer.pointee.observers.wantsPatches
        let forJournal = recorder.journal?.options.recordPatches ?? false
        var operations: [JSONPatch.Operation]?
        var patchError: String?
        if forObservers || forJournal || recorder.listenersWantPatches || recorder.logWantsPatches {
            let now = stateAsJSONLocked(tape: tape)
            if let before = recorder.lastValue, case .success(let now) = now {
                operations = JSONPatch.diff(from: before, to: now)
            } else if case .failure(let error) = now {
                patchError = "the state after this action is not JSON: \(error.message)"
            } else {
                patchError = recorder.lastValueError ?? "the state before this action was not recorded"
            }
            recorder.rememberState(now, at: version)
        } else if recorder.keepsLastValue || recorder.lastValueError != nil {
            recorder.forgetState()  // nobody wants patches: start afresh when someone does
        }
        if forObservers, let operations { recorder.pendingPatch += operations }
        if recorder.logWantsPatches {
            core.unsafe.valuePointer.pointee.actionLog.attachPatch(operations, error: patchError)
        }
        guard recorder.journal != nil || !recorder.listeners.isEmpty else { return }
        let record = makeRecordLocked(
            action, at: version, batch: batch, source: source, patch: operations, patchError: patchError)
        // One record for all: a journal without patches leaves out the patch made for others.
        if let journal = recorder.journal, journal.append(record) {
            recorder.mustWait(for: journal, through: version)
        }
        // A listener removed by an earlier one during this call is not called, nor one added
        // during this action (by a reducer: it hears the next one).
        for listener in recorder.listeners where !listener.isRemoved && version >= listener.firstVersion {
            listener.receive(record)
        }
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
