#if canImport(Glibc)
import Glibc
#endif

/// The change feed: what a store records of each applied action besides applying it, and who
/// consumes the record — the journal (``Store/startJournal(at:options:)``), the history
/// (``Store/keepHistory(_:)``), the listeners (``Store/changes(includingPatches:bufferingNewest:)``
/// and the C face's), and the observers that asked for patches. Touched only under the store's
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

    var isEmpty: Bool { journal == nil && history == nil && listeners.isEmpty && !keepsLastValue }


    private func updateJournalAlone() {
        listenersWantPatches = listeners.contains { $0.includingPatches }
        if let journal, !journal.options.recordPatches, history == nil, listeners.isEmpty, !keepsLastValue {
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

    /// Forgets the state kept for patches (nobody wants them any more).
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

/// The records of the last applied actions, without patches, oldest first
/// (``Store/keepActionLog(_:ticked:)``): a ring of ``capacity`` records in the store's core, touched under
/// the store's lock only. Its reader (``Store/readActionLog(after:limit:includingState:wake:)``)
/// may leave a wake-up that the next record calls, so it can wait for changes without polling
/// and without a call per action.
///
/// A record lives in memory the log allocates itself, in two columns (the action, and its plain
/// fields), not in an array of records in a class: a dispatch writes the fields straight to
/// their slot, without a retain, a release, an exclusivity check or a copy of a whole record. Measured with `ProfileDriver
/// inspector-idle` against `dispatch-o0` (perf on swift-packages-b): an array of records in a
/// class cost a dispatch 2.4× one without; a ring of whole records 1.5× (copies of the record
/// through the stack stalled on store forwarding); the two columns are the figure in
/// `Benchmarks/README.md`, "The live inspector". Invariant: the slots `0..<count` of both columns
/// are initialized, the rest not; ``deallocate()`` runs once, at the store's deinit.
struct ActionLog {
    private(set) var capacity = 0
    /// A record's plain fields, written with plain stores.
    private struct Entry {
        var version: UInt64
        /// Nanoseconds since 1970 (``ChangeRecord/time``).
        var time: Int64
        /// The batch's first and last versions, 0 for none.
        var batchFirst: UInt64
        var batchLast: UInt64
        var source: DispatchSite
    }
    private var entries: UnsafeMutablePointer<Entry>?
    private var actions: UnsafeMutablePointer<any Action>?
    private var count = 0
    /// The slot of the oldest record once the ring is full.
    private var start = 0
    /// Called (and cleared) by the next record, under the store's lock: they must only signal.
    /// One for each reader that waits (each page's sender).
    private var wakes: [@Sendable () -> Void] = []
    private var armed = false
    /// The time the last record took, in nanoseconds since 1970, and whether the next record
    /// reads the clock again.
    private var time: Int64 = 0
    private var clockDue = true
    /// Whether a ticker says when to read the clock again (``tick()``); otherwise every record
    /// reads it.
    private var ticked = false

    /// Whether records are kept.
    var isOn: Bool { @inline(__always) get { capacity > 0 } }

    /// Keeps the newest `capacity` records (0: none), the newest of those it has; with `ticked`,
    /// a record reads the clock only after a ``tick()``.
    mutating func resize(to capacity: Int, ticked: Bool) {
        self.ticked = ticked
        clockDue = true
        guard capacity != self.capacity else { return }
        let kept = records(after: 0, limit: .max).records.suffix(max(capacity, 0))
        deallocateRecords()
        self.capacity = max(capacity, 0)
        if self.capacity > 0 {
            entries = .allocate(capacity: self.capacity)
            actions = .allocate(capacity: self.capacity)
            for record in kept {
                append(record.action, version: record.version, time: record.nanoseconds, batch: record.batch,
                       source: record.source)
            }
        } else if armed {
            ring()
        }
    }

    @inline(__always)
    mutating func append(
        _ action: any Action, version: UInt64, time: Int64, batch: ClosedRange<UInt64>?, source: DispatchSite
    ) {
        guard let entries, let actions else { return }
        let slot: Int
        if count < capacity {
            slot = count
            count += 1
            (actions + slot).initialize(to: action)
        } else {
            slot = start
            start = start + 1 == capacity ? 0 : start + 1
            actions[slot] = action
        }
        (entries + slot).initialize(to: Entry(
            version: version, time: time, batchFirst: batch?.lowerBound ?? 0, batchLast: batch?.upperBound ?? 0,
            source: source))
        if armed { ring() }
    }

    @inline(never)
    private mutating func ring() {
        armed = false
        let wakes = self.wakes
        self.wakes = []
        for wake in wakes { wake() }
    }

    /// Leaves `wake` for the next record, beside those other readers left.
    mutating func arm(_ wake: @escaping @Sendable () -> Void) {
        wakes.append(wake)
        armed = true
    }

    /// The time for a record: the coarse clock's (nanoseconds since 1970), read again only
    /// after a ``tick()`` when the log is ticked.
    @inline(__always)
    mutating func now() -> Int64 {
        if clockDue { readClock() }
        return time
    }

    @inline(never)
    private mutating func readClock() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        time = Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
        clockDue = !ticked
    }

    /// Lets the next record read the clock again.
    mutating func tick() { clockDue = true }

    /// The records of versions after `version`, oldest first, at most `limit`; `dropped` counts
    /// the versions after `version` older than the oldest it returns, which it no longer holds.
    func records(after version: UInt64, limit: Int) -> (records: [ChangeRecord], dropped: UInt64) {
        guard let entries, let actions else { return ([], 0) }
        var newer = 0
        while newer < count, entries[(start + count - 1 - newer) % count].version > version { newer += 1 }
        let taken = min(newer, max(limit, 0))
        var result: [ChangeRecord] = []
        result.reserveCapacity(taken)
        for offset in (count - newer)..<(count - newer + taken) {
            let slot = (start + offset) % count
            let entry = entries[slot]
            result.append(ChangeRecord(
                version: entry.version, action: actions[slot], nanoseconds: entry.time,
                batchFirst: entry.batchFirst, batchLast: entry.batchLast, source: entry.source))
        }
        guard let first = result.first?.version else { return ([], 0) }
        return (result, first > version &+ 1 ? first &- version &- 1 : 0)
    }

    private mutating func deallocateRecords() {
        guard let entries, let actions else { return }
        actions.deinitialize(count: count)
        actions.deallocate()
        entries.deallocate()
        self.entries = nil
        self.actions = nil
        count = 0
        start = 0
    }

    /// Checks the ring (under REDUXSTORE_INTERNAL_CHECKS, from ``Store/_checkInvariantsLocked()``):
    /// its columns exist exactly while it is on, at most ``capacity`` slots are filled, the oldest
    /// slot is within them, and the versions grow from the oldest to the newest, which is at most
    /// the store's.
    func _checkInvariants(newest version: UInt64) {
        #if REDUXSTORE_INTERNAL_CHECKS
        precondition((entries != nil) == (capacity > 0) && (actions != nil) == (capacity > 0),
                     "ReduxStore: the action log's columns do not match its capacity")
        precondition(armed == !wakes.isEmpty, "ReduxStore: the action log is armed without a wake-up, or the reverse")
        precondition(count >= 0 && count <= capacity && (start == 0 || (count == capacity && start < capacity)),
                     "ReduxStore: the action log's ring is out of bounds")
        guard let entries, count > 0 else { return }
        var previous: UInt64 = 0
        for offset in 0..<count {
            let current = entries[(start + offset) % count].version
            precondition(current > previous, "ReduxStore: the action log's versions do not grow")
            previous = current
        }
        precondition(previous <= version, "ReduxStore: the action log holds a version the store has not reached")
        #endif
    }

    /// Frees the records: the store is being freed.
    mutating func deallocate() {
        deallocateRecords()
        capacity = 0
        wakes = []
        armed = false
    }
}

extension Store {
    /// Appends `action`'s record to the action log (``Store/keepActionLog(_:ticked:)``), owning what it
    /// holds as ``makeRecordLocked(_:at:batch:source:patch:patchError:)``'s does. The caller holds
    /// the lock and has checked that the log is on.
    @inline(__always)
    func logLocked(_ action: any Action, at version: UInt64, batch: ClosedRange<UInt64>?, source: DispatchSite) {
        let core = core.unsafe.valuePointer
        let nanoseconds = core.pointee.actionLog.now()
        let source = source.borrowed ? source.kept() : source
        if let journalCopier {
            core.pointee.actionLog.append(
                journalCopier(action), version: version, time: nanoseconds, batch: batch, source: source)
        } else {
            core.pointee.actionLog.append(action, version: version, time: nanoseconds, batch: batch, source: source)
        }
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
    /// (``journalCopier``), a C caller's file name kept (``DispatchSite/kept()``).
    @inline(__always)
    private func makeRecordLocked(
        _ action: any Action, at version: UInt64, batch: ClosedRange<UInt64>?, source: DispatchSite,
        patch: [JSONPatch.Operation]? = nil, patchError: String? = nil
    ) -> ChangeRecord {
        var time = timespec()
        // The kernel's coarse clock: the time of its last tick (every 4 ms on the kernel of
        // swift-packages-b, a 2-core x86_64 VM), read from memory for about 6 ns, where the
        // precise clock costs about 28 ns there, half a dispatch (Benchmarks/README.md, "What
        // inspection costs").
        clock_gettime(CLOCK_REALTIME_COARSE, &time)
        let source = source.borrowed ? source.kept() : source
        // Two initializers rather than one with `journalCopier.map { … } ?? action`, which copies
        // the action's existential once more (about 20 instructions a record).
        if let journalCopier {
            return ChangeRecord(
                version: version, action: journalCopier(action), time: time, batch: batch, patch: patch,
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
        if forObservers || forJournal || recorder.listenersWantPatches {
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
        guard recorder.journal != nil || !recorder.listeners.isEmpty else { return }
        let record = makeRecordLocked(
            action, at: version, batch: batch, source: source, patch: operations, patchError: patchError)
        if let journal = recorder.journal {
            let forJournal = forJournal
                ? record
                : ChangeRecord(
                    version: version, action: record.action, time: record.time, batch: batch, patch: nil,
                    patchError: nil, source: record.source)
            if journal.append(forJournal) { recorder.mustWait(for: journal, through: version) }
        }
        // A listener removed by an earlier one during this call is not called.
        for listener in recorder.listeners where !listener.isRemoved {
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
