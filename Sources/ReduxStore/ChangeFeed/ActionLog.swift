#if canImport(Glibc)
import Glibc
#endif

/// The one record of each applied action: a ring in the store's core, written once by the
/// apply transaction under the store's lock, that every consumer of the change feed reads, each
/// at its own pace through a claim, each told what it missed:
///
/// - the live inspectors (Swift and C) read the newest records when they like
///   (``Store/openActionLog(_:ticked:)``, ``Store/readActionLog(after:limit:wake:)``), told how
///   many versions they asked for are no longer kept;
/// - each ``Store/changes(includingPatches:bufferingNewest:)`` sequence (a ``ChangeReader``) and
///   the journal (``Journal``) read from their claim's cursor; a gap in the versions is what they
///   missed (the journal counts it: ``Store/journalDroppedEntries``). The journal's claim is
///   paced: its writer is woken when it is half its capacity behind, and with
///   ``JournalOptions/Overflow/block`` the claim holds — the ring grows rather than overwrite a
///   record the journal has not read, and a dispatch that puts it past its capacity waits for it
///   once it released the store's lock (``takeOwedWait()``);
/// - the change listeners read the newest record as it is made (``newestRecord()``), its
///   patch attached;
/// - the observers that asked for patches (``Store/addObserver(forName:includingPatch:using:)``)
///   share one holding claim, read at each round they hear: the patches of every record since
///   the last round, joined (``takePatches(_:)``);
/// - the history (``Store/keepHistory(_:)``) keeps the newest records through its claim, and
///   reads the state's snapshot attached to each (``snapshot(at:)``).
///
/// The patch of each record, while a claim asks for patches, and the state's snapshot after it,
/// while a claim asks for snapshots, are made by the ``Recorder`` and attached here
/// (``attachPatch(_:error:)``, ``attachSnapshot(_:)``). A reader may leave a wake-up that the next record
/// calls, so it can wait for changes without polling and without a call per action. Records
/// no claim needs any more (read by every claim that reads from a cursor, older than those the
/// others keep) are released as they are read: memory follows the readers' backlog.
///
/// What a dispatch writes is kept to the least: the action and its source, each in a column of
/// memory the log allocates itself (not an array of records in a class: no retain, release,
/// exclusivity check or copy of a whole record). The rest is implied or rare: the records are
/// of consecutive versions (every applied version is logged while the log is on), so a slot's
/// version follows from the newest; a time is kept once per reading of the clock (``times``),
/// a batch once per batch (``batches``). An array of records in a class, a ring of whole
/// records, and two columns (the action; version, time, batch and source) each cost a dispatch
/// more than the action and its source alone (Benchmarks/README.md, "The live inspector: both
/// goals met").
///
/// Invariant: the slots of the `count` records, from `start` on around the ring, are
/// initialized in both columns, the rest not; ``times`` and ``batches`` are in version order and
/// ``times`` has a mark at or before the oldest record's version; no record a holding claim has
/// not read was overwritten; ``deallocate()`` runs once, at the store's deinit.
struct ActionLog {
    /// The records the ring holds room for now; it grows up to ``limit``, and past it while a
    /// holding claim has not read its oldest record.
    private(set) var capacity = 0
    /// The records the largest claim asks to keep.
    var limit = 0
    var actions: UnsafeMutablePointer<any Action>?
    var sources: UnsafeMutablePointer<DispatchSite>?
    var count = 0
    /// The slot of the oldest record.
    var start = 0
    /// The newest record's version; the one `n` slots older has `newest - n`.
    var newest: UInt64 = 0
    /// The time of each reading of the clock, from the version that first took it: a record's
    /// time is that of the last mark at or before its version.
    var times: [(version: UInt64, time: Int64)] = []
    /// The batches (``Store/dispatchActions(_:file:line:)``) of the records, oldest first.
    var batches: [ClosedRange<UInt64>] = []
    /// Called (and cleared) by the next record, under the store's lock: they must only signal.
    /// One for each reader that waits (each page's sender).
    var wakes: [@Sendable () -> Void] = []
    var armed = false
    /// The time the last record took, in nanoseconds since 1970, and whether the next record
    /// reads the clock again.
    var time: Int64 = 0
    private var clockDue = true
    /// Whether a ticker says when to read the clock again (``tick()``); otherwise every record
    /// reads it.
    private var ticked = false
    /// The kept copy of the lent file name the last record was dispatched from: a program
    /// dispatches from few files, most often again from the last one, found here by comparing
    /// its bytes rather than in ``KeptNames/files`` (a lock and a hash).
    private var lastSource: DispatchSite?
    /// The readers' claims, oldest first: the log keeps as many records as the largest asks
    /// for, ticked when every one is, with patches while one asks for them. An array, not a
    /// dictionary: there are few, and a read walks them all (``releaseFloor()``), in place,
    /// with no hashing and no copy of a claim's weak references.
    var claims: [Claim] = []
    private var lastClaim: UInt64 = 0
    /// Each record's patch and why it could not be made (``attachPatch(_:error:)``), a slot for
    /// each of the ring's while a claim asks for patches; empty otherwise.
    var patches: [Patch] = []

    /// A record's patch, or why it could not be made. A struct, not a tuple: an array of tuples
    /// is copied and destroyed through the runtime's generic tuple witnesses.
    struct Patch {
        var operations: [JSONPatch.Operation]?
        var error: String?
    }
    /// The state's snapshot after each record's action (``attachSnapshot(_:)``), a slot for each
    /// of the ring's while a claim asks for snapshots (the history's); empty otherwise. `nil`
    /// for a record whose state could not be encoded, or made before a claim asked.
    var snapshots: [SnapshotTape?] = []
    /// The lowest cursor of a holding claim (`.max`: none): the ring never overwrites a record
    /// after it.
    var held: UInt64 = .max
    /// The first version whose record a paced claim must hear of (``attend(_:)``): its reader
    /// is to be woken, or the dispatcher to wait for it; `.max` for none.
    var attention: UInt64 = .max
    /// The wait a record put the dispatching thread under (a holding claim is more than its
    /// capacity behind), taken by the apply transaction once it released the lock.
    private var owedWait: JournalWait?

    /// One reader's claim on the log.
    struct Claim {
        /// The claim's token (``open(_:)``).
        var token: UInt64 = 0
        /// The records kept for the reader: the newest this many (a reader from a cursor misses
        /// the older ones it did not read).
        var capacity: Int
        /// Whether the reader asks for the clock only when ticked (``tick()``).
        var ticked: Bool
        var patches = false
        /// Whether the reader reads the state's snapshot after each record (the history).
        var snapshots = false
        /// The newest version a reader from a cursor read through the claim (``read(_:limit:)``).
        var cursor: UInt64 = 0
        /// The sequence reading through the claim, handed its unread records when the store is
        /// freed. Weak: the sequence holds the reader, and a reader freed closes its claim.
        weak var reader: ChangeReader?
        /// The journal reading through the claim: paced (``attend(_:)``), handed its unread
        /// records when the store is freed or the journal stopped. The store holds it.
        weak var journal: Journal?
        /// Whether the ring keeps every record the reader has not read (a journal that blocks,
        /// the observers).
        var holds = false
        /// Whether the reader reads from ``cursor``, the records it has not read, rather than the
        /// newest when it likes (the inspectors, the listeners): a sequence (once attached), the
        /// journal, the observers.
        var readsFromCursor = false
        /// Whether the claim is the journal's, whose writer the log paces (``attend(_:)``).
        var paced: Bool { journal != nil }
    }

    /// The number of open claims.
    var claimCount: Int { claims.count }

    /// Whether records are kept.
    var isOn: Bool { @inline(__always) get { capacity > 0 } }

    /// `source` owning its file name, for a record kept after its dispatch returned: the kept
    /// copy of the last file name when the bytes are the same, ``DispatchSite/kept()``
    /// otherwise. ``append(_:version:source:keeper:)`` takes every source through it.
    @inline(__always)
    mutating func keep(_ source: DispatchSite) -> DispatchSite {
        guard source.borrowed else { return source }
        guard let file = source.file else { return source }
        if let lastSource, let kept = lastSource.file, lastSource.count == source.count,
            memcmp(kept, file, source.count) == 0
        {
            return DispatchSite(kept: lastSource, line: source.line)
        }
        let kept = source.kept()
        if kept.file != nil { lastSource = kept }
        return kept
    }

    /// Adds a reader's claim; its token.
    mutating func open(_ claim: Claim) -> UInt64 {
        lastClaim += 1
        var claim = claim
        claim.token = lastClaim
        claim.capacity = max(claim.capacity, 0)
        if claim.journal != nil { claim.readsFromCursor = true }
        claims.append(claim)
        fitClaims()
        return lastClaim
    }

    /// The index of the claim of `token` in ``claims``.
    func index(of token: UInt64) -> Int? {
        claims.firstIndex { $0.token == token }
    }

    /// Names the sequence reading through the claim of `token`.
    mutating func attach(_ reader: ChangeReader, to token: UInt64) {
        guard let index = index(of: token) else { return }
        claims[index].reader = reader
        claims[index].readsFromCursor = true
        fitClaims()
    }

    /// Whether a claim asks for patches: the recorder makes each record's patch and attaches it
    /// (``attachPatch(_:error:)``).
    var wantsPatches: Bool { !patches.isEmpty }

    /// Whether a claim asks for snapshots: the recorder encodes the state after each record's
    /// action and attaches it (``attachSnapshot(_:)``).
    var wantsSnapshots: Bool { !snapshots.isEmpty }

    /// Removes a reader's claim; false for an unknown token.
    mutating func close(_ token: UInt64) -> Bool {
        guard let index = index(of: token) else { return false }
        claims.remove(at: index)
        fitClaims()
        return true
    }

    private mutating func fitClaims() {
        pace()
        resize(
            to: claims.map(\.capacity).max() ?? 0,
            ticked: !claims.isEmpty && claims.allSatisfy(\.ticked),
            patches: claims.contains { $0.patches }, snapshots: claims.contains { $0.snapshots })
        release()
    }

    /// Keeps the newest `limit` records (0: none), the newest of those it has, in a ring of at
    /// most ``firstSlots`` that grows as records come; with `ticked`, a record reads the clock
    /// only after a ``tick()``; with `wanted`, each record's patch; with `snapshotsWanted`, the
    /// state's snapshot after each. Every record a holding claim has not read is kept. The ring
    /// is made smaller only when it must drop records or would stand more than half empty.
    private mutating func resize(to limit: Int, ticked: Bool, patches wanted: Bool, snapshots snapshotsWanted: Bool) {
        self.ticked = ticked
        clockDue = true
        self.limit = max(limit, 0)
        // A ring of up to `firstSlots` records at once; a larger one grows as records come
        // (a reader may ask for millions, or `Int.max`).
        let unreadHeld = held < newest ? Int(min(newest &- held, UInt64(count))) : 0
        let target = max(min(self.limit, max(Self.firstSlots, count)), unreadHeld)
        if target == 0 || capacity == 0 || target < count || target < capacity / 2 {
            reallocate(to: target)
        }
        if wanted != wantsPatches {
            patches = wanted ? Array(repeating: Patch(), count: capacity) : []
        }
        if snapshotsWanted != wantsSnapshots {
            snapshots = snapshotsWanted ? Array(repeating: nil, count: capacity) : []
        }
        if capacity == 0, armed { ring() }
    }

    /// How many records a ring is made for at first, at most.
    static let firstSlots = 4096

    /// Doubles the ring, up to ``limit`` unless `pastLimit` (a holding claim has not read the
    /// oldest record): it is full and a reader asks for more.
    @inline(never)
    private mutating func grow(pastLimit: Bool) {
        reallocate(to: pastLimit ? max(capacity &* 2, 1) : min(limit, capacity &* 2))
    }

    /// Makes the ring `capacity` records long (0: none). The newest records it has move to the
    /// new columns, oldest first, as they are (none is copied); those that do not fit are
    /// destroyed. Their marks, patches and snapshots stay.
    mutating func reallocate(to capacity: Int) {
        let dropped = max(count &- capacity, 0)
        for _ in 0..<dropped { destroyOldest() }
        var actions: UnsafeMutablePointer<any Action>?
        var sources: UnsafeMutablePointer<DispatchSite>?
        var patches: [Patch] = []
        var snapshots: [SnapshotTape?] = []
        if capacity > 0 {
            actions = .allocate(capacity: capacity)
            sources = .allocate(capacity: capacity)
            #if REDUXSTORE_INTERNAL_CHECKS
            // Unused slots read as zeros, which ``_checkInvariants(newest:)`` checks.
            UnsafeMutableRawPointer(actions!).initializeMemory(
                as: UInt8.self, repeating: 0, count: capacity * MemoryLayout<any Action>.stride)
            #endif
            if !self.patches.isEmpty { patches = Array(repeating: Patch(), count: capacity) }
            if !self.snapshots.isEmpty { snapshots = Array(repeating: nil, count: capacity) }
        }
        if let oldActions = self.actions, let oldSources = self.sources {
            // From the oldest to the end of the old columns, then from their start.
            let first = min(count, self.capacity &- start)
            actions?.moveInitialize(from: oldActions + start, count: first)
            (actions.map { $0 + first })?.moveInitialize(from: oldActions, count: count &- first)
            sources?.moveInitialize(from: oldSources + start, count: first)
            (sources.map { $0 + first })?.moveInitialize(from: oldSources, count: count &- first)
            for offset in 0..<min(count, patches.count) {
                swap(&patches[offset], &self.patches[(start &+ offset) % self.capacity])
            }
            for offset in 0..<min(count, snapshots.count) {
                swap(&snapshots[offset], &self.snapshots[(start &+ offset) % self.capacity])
            }
            oldActions.deallocate()
            oldSources.deallocate()
        }
        self.actions = actions
        self.sources = sources
        self.patches = patches
        self.snapshots = snapshots
        self.capacity = capacity
        start = 0
        if capacity == 0 {
            times.removeAll()
            batches.removeAll()
        }
    }

    /// Destroys the oldest record and frees its slot; the ring holds one.
    mutating func destroyOldest() {
        let slot = actions.unsafelyUnwrapped + start
        if ActionContainer.typeIdentity(at: slot) != trivialType { slot.deinitialize(count: 1) }
        #if REDUXSTORE_INTERNAL_CHECKS
        UnsafeMutableRawPointer(slot).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<any Action>.stride)
        #endif
        if !patches.isEmpty { patches[start] = Patch() }
        if !snapshots.isEmpty { snapshots[start] = nil }
        start = start &+ 1 == capacity ? 0 : start &+ 1
        count &-= 1
        if count == 0 { start = 0 }
    }

    /// Appends a record, the action made to own what it holds by `keeper` if the store has one
    /// and the source kept (``keep(_:)``); `version` is the one after the newest's (the first,
    /// any). Wakes the readers waiting, and paces the journal's (``attend(_:)``).
    @inline(__always)
    mutating func append(_ action: any Action, version: UInt64, source: DispatchSite, keeper: ActionKeeper? = nil) {
        place(action, source: source, keeper: keeper)
        newest = version
        if armed { ring() }
        if version >= attention { attend(version) }
    }

    /// Writes the record after the newest into its slot: a free one, one the ring grew for, or
    /// the oldest's.
    @inline(__always)
    mutating func place(_ action: any Action, source: DispatchSite, keeper: ActionKeeper?) {
        let slot: Int
        if count < capacity {
            slot = (start &+ count) % capacity
            count &+= 1
        } else if capacity < limit || held < newest &- UInt64(count) &+ 1 {
            grow(pastLimit: capacity >= limit)
            slot = (start &+ count) % capacity
            count &+= 1
        } else {
            slot = start
            start = start &+ 1 == capacity ? 0 : start &+ 1
            let oldest = self.actions.unsafelyUnwrapped + slot
            if ActionContainer.typeIdentity(at: oldest) != trivialType { oldest.deinitialize(count: 1) }
        }
        // The columns exist while the log is on, which every caller has checked (``isOn``); read
        // after a growth moved them.
        let actions = self.actions.unsafelyUnwrapped
        let sources = self.sources.unsafelyUnwrapped
        // `as any Action`: the container's bytes, not those of the value inside (a generic
        // parameter opens an existential argument). An action of the trivial type owns what it
        // holds (nothing to keep, nothing more to learn): copied as bytes.
        let asTrivialBytes = withUnsafeBytes(of: action as any Action) { bytes -> Bool in
            let container = bytes.baseAddress!
            guard ActionContainer.typeIdentity(at: container) == trivialType else { return false }
            UnsafeMutableRawPointer(actions + slot).copyMemory(from: container, byteCount: bytes.count)
            return true
        }
        if !asTrivialBytes {
            // Copied straight into its slot: an assignment (`actions[slot] = action`) copied it
            // through a temporary first, a third call of the action's value witnesses.
            if let kept = keeper?(action) {
                (actions + slot).initialize(to: kept)
            } else {
                (actions + slot).initialize(to: action)
            }
            let type = ActionContainer.typeIdentity(at: actions + slot)
            if type != trivialType, type != examinedType { learn(slot) }
        }
        (sources + slot).initialize(to: keep(source))
    }

    /// Attaches its patch, or why it could not be made, to the newest record; the log wants
    /// patches (``wantsPatches``).
    mutating func attachPatch(_ operations: [JSONPatch.Operation]?, error: String?) {
        guard count > 0, !patches.isEmpty else { return }
        patches[(start &+ count &- 1) % capacity] = Patch(operations: operations, error: error)
    }

    /// Attaches the state's snapshot after the newest record's action (`nil`: it could not be
    /// encoded); the log wants snapshots (``wantsSnapshots``). The slot may hold the snapshot of
    /// the record it overwrote: every record while snapshots are wanted gets one, `nil` or not.
    mutating func attachSnapshot(_ tape: SnapshotTape?) {
        guard count > 0, !snapshots.isEmpty else { return }
        snapshots[(start &+ count &- 1) % capacity] = tape
    }

    /// The state's snapshot after the action of `version`, if the ring holds its record and one
    /// was attached.
    func snapshot(at version: UInt64) -> SnapshotTape? {
        guard count > 0, !snapshots.isEmpty, version <= newest, version > newest &- UInt64(count) else { return nil }
        return snapshots[slot(of: version)]
    }

    /// The versions after `version` whose records the ring holds with a snapshot, oldest first.
    func snapshotVersions(after version: UInt64) -> [UInt64] {
        guard count > 0, !snapshots.isEmpty, version < newest else { return [] }
        let first = max(version &+ 1, newest &- UInt64(count) &+ 1)
        return (first...newest).filter { snapshots[slot(of: $0)] != nil }
    }

    /// The slot of the record of `version`, which the ring holds.
    @inline(__always)
    func slot(of version: UInt64) -> Int {
        (start &+ Int(version &- (newest &- UInt64(count) &+ 1))) % capacity
    }

    /// The type of the actions last appended, when it is trivial (no reference, nothing to do
    /// to copy or destroy it) and fits an existential's inline buffer: the identity of its
    /// metadata (``ActionContainer``). Such an action is copied into the ring as its
    /// container's bytes, and its slot overwritten without destroying it: no call of the type's
    /// value witnesses (two a record otherwise). 0: none yet.
    private var trivialType: UInt = 0
    /// The type last examined for that (so a store of other actions examines each one once a run).
    private var examinedType: UInt = 0

    /// Examines the type of the action in `slot`.
    @inline(never)
    private mutating func learn(_ slot: Int) {
        let type = type(of: actions![slot])
        examinedType = ActionContainer.identity(of: type)
        if _isPOD(type), ActionContainer.fitsInline(type) { trivialType = examinedType }
    }

    /// Notes that the records of `batch` (appended from now on) are one batch.
    mutating func noteBatch(_ batch: ClosedRange<UInt64>) {
        trimMarks()
        batches.append(batch)
    }

    /// The time for the record of `version`, appended next: the coarse clock's (nanoseconds
    /// since 1970), read again only after a ``tick()`` when the log is ticked.
    @inline(__always)
    mutating func stamp(_ version: UInt64) {
        if clockDue { readClock(version) }
    }

    @inline(never)
    private mutating func readClock(_ version: UInt64) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &now)
        time = Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
        clockDue = !ticked
        // A mark only when the time moved: the coarse clock reads the same for a few
        // milliseconds, and a record takes the time of the last mark at or before it.
        guard times.last?.time != time else { return }
        trimMarks()
        times.append((version, time))
    }

    /// Drops the marks no record needs any more, when there are more of them than records: the
    /// times before the last at or before the oldest record (the last is kept: the next record
    /// takes it when the clock is not read again), the batches that end before it.
    private mutating func trimMarks() {
        guard times.count + batches.count > 2 * count + 16 else { return }
        let oldest = newest &- UInt64(count) &+ 1
        if let last = times.lastIndex(where: { $0.version <= oldest }), last > 0 { times.removeFirst(last) }
        batches.removeAll { $0.upperBound < oldest }
    }

    @inline(never)
    mutating func ring() {
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

    /// Lets the next record read the clock again.
    mutating func tick() { clockDue = true }

    // MARK: Pacing the journal

    /// The record of `version` (the newest) reached ``attention``: wakes a paced reader now half
    /// its capacity behind (the journal's writer, which otherwise wakes on its own every few
    /// milliseconds), and owes a wait for a holding one more than its capacity behind.
    @inline(never)
    private mutating func attend(_ version: UInt64) {
        for index in claims.indices where claims[index].paced {
            guard let journal = claims[index].journal else { continue }
            let behind = version &- claims[index].cursor
            let capacity = claims[index].capacity
            if behind == UInt64(max(capacity / 2, 1)) { journal.wakeWriter() }
            if claims[index].holds, behind > UInt64(capacity) { owedWait = JournalWait(journal: journal, version: version) }
        }
        attention = nextAttention(after: version)
    }

    /// The first version after `version` whose record a paced claim must hear of.
    private func nextAttention(after version: UInt64) -> UInt64 {
        var next = UInt64.max
        for index in claims.indices where claims[index].paced {
            let (cursor, capacity) = (claims[index].cursor, UInt64(claims[index].capacity))
            let half = cursor &+ max(capacity / 2, 1)
            if half > version { next = min(next, half) }
            if claims[index].holds { next = min(next, max(cursor &+ capacity &+ 1, version &+ 1)) }
        }
        return next
    }

    /// Recomputes what paces the journal (``held``, ``attention``): a claim opened, closed or read.
    mutating func pace() {
        held = heldCursor()
        attention = nextAttention(after: newest)
    }

    /// The lowest cursor of a holding claim; `.max` for none.
    private func heldCursor() -> UInt64 {
        var lowest = UInt64.max
        for index in claims.indices where claims[index].holds { lowest = min(lowest, claims[index].cursor) }
        return lowest
    }

    /// The wait the last records put the dispatching thread under, if any, taken: it runs it
    /// once it released the store's lock.
    @inline(__always)
    mutating func takeOwedWait() -> JournalWait? {
        guard let wait = owedWait else { return nil }
        owedWait = nil
        return wait
    }

}

extension Store {
    /// Appends `action`'s record to the action log, the one record every consumer reads: the
    /// one place where a borrowed action and a lent file name become owned (the store's
    /// ``keeper``, ``DispatchSite/kept()``). The caller holds the lock and has checked that the
    /// log is on.
    @inline(__always)
    func logLocked(_ action: any Action, at version: UInt64, batch: ClosedRange<UInt64>?, source: DispatchSite) {
        let core = core.unsafe.valuePointer
        core.pointee.actionLog.stamp(version)
        if let batch, batch.lowerBound == version { core.pointee.actionLog.noteBatch(batch) }
        core.pointee.actionLog.append(action, version: version, source: source, keeper: keeper)
    }
}
