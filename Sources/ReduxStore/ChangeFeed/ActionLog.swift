#if canImport(Glibc)
import Glibc
#endif

/// The records of the last applied actions, oldest first, with their patches while a reader
/// asks for them: a ring of ``capacity`` records in the store's core, touched under the store's
/// lock only, kept while a reader holds a claim on it — the live inspectors
/// (``Store/openActionLog(_:ticked:)``, read with ``Store/readActionLog(after:limit:wake:)``) and
/// each ``Store/changes(includingPatches:bufferingNewest:)`` sequence (a ``ChangeReader``, read
/// from its claim's cursor). A reader may leave a wake-up that the next record calls, so it can
/// wait for changes without polling and without a call per action.
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
/// ``times`` has a mark at or before the oldest record's version; ``deallocate()`` runs once, at
/// the store's deinit.
struct ActionLog {
    /// The records the ring holds room for now; it grows up to ``limit``.
    private(set) var capacity = 0
    /// The records the largest claim asks to keep.
    private var limit = 0
    private var actions: UnsafeMutablePointer<any Action>?
    private var sources: UnsafeMutablePointer<DispatchSite>?
    private var count = 0
    /// The slot of the oldest record once the ring is full.
    private var start = 0
    /// The newest record's version; the one `n` slots older has `newest - n`.
    private var newest: UInt64 = 0
    /// The time of each reading of the clock, from the version that first took it: a record's
    /// time is that of the last mark at or before its version.
    private var times: [(version: UInt64, time: Int64)] = []
    /// The batches (``Store/dispatchActions(_:file:line:)``) of the records, oldest first.
    private var batches: [ClosedRange<UInt64>] = []
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
    /// The kept copy of the C caller's file name the last record was dispatched from: a program
    /// dispatches from few files, most often again from the last one, found here by comparing
    /// its bytes rather than in ``KeptNames/files`` (a lock and a hash).
    private var lastSource: DispatchSite?
    /// The readers' claims (``Store/openActionLog(_:ticked:)``, ``Store/changes(includingPatches:bufferingNewest:)``):
    /// the log keeps as many records as the largest asks for, ticked when every one is, with
    /// patches while one asks for them.
    private var claims: [UInt64: Claim] = [:]
    private var lastClaim: UInt64 = 0
    /// Each record's patch and why it could not be made (``attachPatch(_:error:)``), a slot for
    /// each of the ring's while a claim asks for patches; empty otherwise.
    private var patches: [(operations: [JSONPatch.Operation]?, error: String?)] = []

    /// One reader's claim on the log.
    struct Claim {
        var capacity: Int
        var ticked: Bool
        var patches = false
        /// The newest version a ``ChangeReader`` read through the claim (``read(_:limit:)``).
        var cursor: UInt64 = 0
        /// The sequence reading through the claim, handed its unread records when the store is
        /// freed; `nil` for a reader that reads with ``records(after:limit:)`` (the inspectors).
        /// Weak: the sequence holds the reader, and a reader freed closes its claim.
        weak var reader: ChangeReader?
    }

    /// The number of open claims.
    var claimCount: Int { claims.count }

    /// Whether records are kept.
    var isOn: Bool { @inline(__always) get { capacity > 0 } }

    /// `source` owning its file name, for a record kept after its dispatch returned: the kept
    /// copy of the last file name when the bytes are the same, ``DispatchSite/kept()``
    /// otherwise. ``append(_:version:source:keeper:)`` takes every source through it.
    @inline(__always)
    private mutating func keep(_ source: DispatchSite) -> DispatchSite {
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
        claim.capacity = max(claim.capacity, 0)
        claims[lastClaim] = claim
        fitClaims()
        return lastClaim
    }

    /// Names the sequence reading through the claim of `token`.
    mutating func attach(_ reader: ChangeReader, to token: UInt64) {
        claims[token]?.reader = reader
    }

    /// Whether a claim asks for patches: the recorder makes each record's patch and attaches it
    /// (``attachPatch(_:error:)``).
    var wantsPatches: Bool { !patches.isEmpty }

    /// Removes a reader's claim; false for an unknown token.
    mutating func close(_ token: UInt64) -> Bool {
        guard claims.removeValue(forKey: token) != nil else { return false }
        fitClaims()
        return true
    }

    private mutating func fitClaims() {
        resize(
            to: claims.values.map(\.capacity).max() ?? 0,
            ticked: !claims.isEmpty && claims.values.allSatisfy(\.ticked),
            patches: claims.values.contains { $0.patches })
    }

    /// Keeps the newest `limit` records (0: none), the newest of those it has, in a ring of at
    /// most ``firstSlots`` that grows as records come; with `ticked`, a record reads the clock
    /// only after a ``tick()``; with `wanted`, each record's patch.
    private mutating func resize(to limit: Int, ticked: Bool, patches wanted: Bool) {
        self.ticked = ticked
        clockDue = true
        self.limit = max(limit, 0)
        // A ring of up to `firstSlots` records at once; a larger one grows as records come
        // (a reader may ask for millions, or `Int.max`).
        let capacity = min(self.limit, max(Self.firstSlots, count))
        if capacity != self.capacity {
            reallocate(to: capacity, patches: wanted)
        } else if wanted != wantsPatches {
            patches = wanted ? Array(repeating: (nil, nil), count: capacity) : []
        }
        if self.capacity == 0, armed { ring() }
    }

    /// How many records a ring is made for at first, at most.
    static let firstSlots = 4096

    /// Doubles the ring, up to ``limit``: it is full and a reader asks for more. Called by the
    /// append of the record of `newest + 1`, whose time and batch are marked already: those
    /// marks are kept.
    @inline(never)
    private mutating func grow() {
        let nextTimes = times.filter { $0.version > newest }
        let nextBatches = batches.filter { $0.lowerBound > newest }
        reallocate(to: min(limit, capacity &* 2), patches: wantsPatches)
        times += nextTimes
        batches += nextBatches
    }

    /// Makes the ring `capacity` records long, keeping the newest of those it has, with their
    /// patches when `wanted`.
    private mutating func reallocate(to capacity: Int, patches wanted: Bool) {
        let kept = records(after: 0, limit: .max).records.suffix(capacity)
        deallocateRecords()
        self.capacity = capacity
        patches = wanted ? Array(repeating: (nil, nil), count: capacity) : []
        guard capacity > 0 else { return }
        actions = .allocate(capacity: capacity)
        sources = .allocate(capacity: capacity)
        #if REDUXSTORE_INTERNAL_CHECKS
        // Unused slots read as zeros, which ``_checkInvariants(newest:)`` checks.
        UnsafeMutableRawPointer(actions!).initializeMemory(
            as: UInt8.self, repeating: 0, count: capacity * MemoryLayout<any Action>.stride)
        #endif
        for record in kept {
            if record.batch?.lowerBound == record.version { batches.append(record.batch!) }
            if times.last?.time != record.nanoseconds { times.append((record.version, record.nanoseconds)) }
            append(record.action, version: record.version, source: record.source)
            if wanted { attachPatch(record.patch, error: record.patchError) }
        }
    }

    /// Appends a record, the action made to own what it holds by `keeper` if the store has one
    /// and the source kept (``keep(_:)``); `version` is the one after the newest's (the first,
    /// any).
    @inline(__always)
    mutating func append(_ action: any Action, version: UInt64, source: DispatchSite, keeper: ActionKeeper? = nil) {
        let slot: Int
        if count < capacity {
            slot = (start &+ count) % capacity
            count &+= 1
        } else if capacity < limit {
            grow()
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
        // parameter opens an existential argument). Copied as bytes (of the trivial type, which
        // owns what it holds: nothing to keep, nothing more to learn), written by the keeper,
        // or not yet.
        let written = withUnsafeBytes(of: action as any Action) { bytes -> Written in
            let container = bytes.baseAddress!
            if ActionContainer.typeIdentity(at: container) == trivialType {
                UnsafeMutableRawPointer(actions + slot).copyMemory(from: container, byteCount: bytes.count)
                return .asTrivialBytes
            }
            if let keeper, keeper.keep(container, into: UnsafeMutableRawPointer(actions + slot)) { return .byKeeper }
            return .no
        }
        if written != .asTrivialBytes {
            if written == .no {
                // Copied straight into its slot: an assignment (`actions[slot] = action`) copied
                // it through a temporary first, a third call of the action's value witnesses.
                (actions + slot).initialize(to: action)
            }
            let type = ActionContainer.typeIdentity(at: actions + slot)
            if type != trivialType, type != examinedType { learn(slot) }
        }
        (sources + slot).initialize(to: keep(source))
        newest = version
        if armed { ring() }
    }

    /// Attaches its patch, or why it could not be made, to the newest record; the log wants
    /// patches (``wantsPatches``).
    mutating func attachPatch(_ operations: [JSONPatch.Operation]?, error: String?) {
        guard count > 0, !patches.isEmpty else { return }
        patches[(start &+ count &- 1) % capacity] = (operations, error)
    }

    /// How ``append(_:version:source:keeper:)`` wrote an action into its slot.
    private enum Written { case no, byKeeper, asTrivialBytes }

    /// The type of the actions last appended, when it is trivial (no reference, nothing to do
    /// to copy or destroy it) and fits an existential's inline buffer: the identity of its
    /// metadata, which an `any Action`'s container holds after its three words of buffer. Such
    /// an action is copied into the ring as its container's bytes, and its slot overwritten
    /// without destroying it: no call of the type's value witnesses (two a record otherwise).
    /// 0: none yet.
    private var trivialType: UInt = 0
    /// The type last examined for that (so a store of other actions examines each one once a run).
    private var examinedType: UInt = 0

    /// Examines the type of the action in `slot`.
    @inline(never)
    private mutating func learn(_ slot: Int) {
        func isTrivialInline<T>(_: T.Type) -> Bool {
            _isPOD(T.self) && MemoryLayout<T>.size <= 3 * MemoryLayout<Int>.size
                && MemoryLayout<T>.alignment <= MemoryLayout<Int>.alignment
        }
        let type = type(of: actions![slot])
        examinedType = ActionContainer.identity(of: type)
        if isTrivialInline(type) { trivialType = examinedType }
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
    /// times before the last at or before the oldest record, the batches that end before it.
    private mutating func trimMarks() {
        guard times.count + batches.count > 2 * count + 16 else { return }
        guard count > 0 else {
            times.removeAll(keepingCapacity: true)
            batches.removeAll(keepingCapacity: true)
            return
        }
        let oldest = newest &- UInt64(count) &+ 1
        if let last = times.lastIndex(where: { $0.version <= oldest }), last > 0 { times.removeFirst(last) }
        batches.removeAll { $0.upperBound < oldest }
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

    /// Lets the next record read the clock again.
    mutating func tick() { clockDue = true }

    /// The records of versions after `version`, oldest first, at most `limit`, with their
    /// patches when kept and asked for; `dropped` counts the versions after `version` older than
    /// the oldest it returns, which it no longer holds.
    func records(after version: UInt64, limit: Int, patches withPatches: Bool = true) -> (records: [ChangeRecord], dropped: UInt64) {
        guard let actions, let sources, count > 0 else { return ([], 0) }
        let oldest = newest &- UInt64(count) &+ 1
        let first = max(version &+ 1, oldest)
        guard version < newest else { return ([], 0) }
        let taken = Int(min(newest &- first &+ 1, UInt64(max(limit, 0))))
        guard taken > 0 else { return ([], 0) }
        var result: [ChangeRecord] = []
        result.reserveCapacity(taken)
        var timeIndex = (times.lastIndex { $0.version <= first }) ?? 0
        var batchIndex = batches.firstIndex { $0.upperBound >= first } ?? batches.count
        for offset in 0..<taken {
            let recordVersion = first &+ UInt64(offset)
            let slot = (start + Int(recordVersion &- oldest)) % capacity
            while timeIndex + 1 < times.count, times[timeIndex + 1].version <= recordVersion { timeIndex += 1 }
            while batchIndex < batches.count, batches[batchIndex].upperBound < recordVersion { batchIndex += 1 }
            let batch = batchIndex < batches.count && batches[batchIndex].contains(recordVersion) ? batches[batchIndex] : nil
            let patch = patches.isEmpty || !withPatches ? (operations: nil, error: nil) : patches[slot]
            result.append(ChangeRecord(
                version: recordVersion, action: actions[slot], nanoseconds: times.isEmpty ? 0 : times[timeIndex].time,
                batchFirst: batch?.lowerBound ?? 0, batchLast: batch?.upperBound ?? 0, patch: patch.operations,
                patchError: patch.error, source: sources[slot]))
        }
        return (result, first > version &+ 1 ? first &- version &- 1 : 0)
    }

    /// The records a claim's ``ChangeReader`` has not read, oldest first, at most `limit`: those
    /// after its cursor, of the newest `capacity` it asked to keep (older ones are dropped, a gap
    /// in the versions). Moves the cursor past them; empty for an unknown token.
    mutating func read(_ token: UInt64, limit: Int) -> [ChangeRecord] {
        guard let claim = claims[token] else { return [] }
        let after = max(claim.cursor, newest > UInt64(claim.capacity) ? newest &- UInt64(claim.capacity) : 0)
        let records = self.records(after: after, limit: limit).records
        if let last = records.last { claims[token]!.cursor = last.version }
        return records
    }

    /// Hands each sequence reading through a claim its unread records and ends it: the store is
    /// being freed.
    mutating func endReaders() {
        for (token, claim) in claims {
            guard let reader = claim.reader else { continue }
            reader.end(handing: read(token, limit: .max))
        }
    }

    private mutating func deallocateRecords() {
        guard let actions, let sources else { return }
        for offset in 0..<count {
            let slot = actions + (start + offset) % capacity
            if ActionContainer.typeIdentity(at: slot) != trivialType {
                slot.deinitialize(count: 1)
            }
        }
        actions.deallocate()
        sources.deallocate()
        self.actions = nil
        self.sources = nil
        count = 0
        start = 0
        times.removeAll()
        batches.removeAll()
        patches.removeAll()
    }

    /// Checks the ring (under REDUXSTORE_INTERNAL_CHECKS, from ``Store/_checkInvariantsLocked()``):
    /// its columns exist exactly while it is on, at most ``capacity`` slots are filled, the oldest
    /// slot is within them, exactly those slots hold an action, the newest version is at most
    /// the store's, and the marks are in order with a time for the oldest record.
    func _checkInvariants(newest version: UInt64) {
        #if REDUXSTORE_INTERNAL_CHECKS
        precondition((actions != nil) == (capacity > 0) && (sources != nil) == (capacity > 0),
                     "ReduxStore: the action log's columns do not match its capacity")
        precondition(armed == !wakes.isEmpty, "ReduxStore: the action log is armed without a wake-up, or the reverse")
        precondition(count >= 0 && count <= capacity && capacity <= limit
                     && (start == 0 || (count == capacity && start < capacity)),
                     "ReduxStore: the action log's ring is out of bounds")
        checkSlots()
        precondition(patches.isEmpty || (patches.count == capacity && claims.values.contains { $0.patches }),
                     "ReduxStore: the action log's patches do not match its ring or its claims")
        guard count > 0 else { return }
        precondition(newest <= version && UInt64(count) <= newest,
                     "ReduxStore: the action log holds a version the store has not reached")
        precondition(zip(times, times.dropFirst()).allSatisfy { $0.version < $1.version }
                     && (times.first.map { $0.version <= newest &- UInt64(count) &+ 1 } ?? false),
                     "ReduxStore: the action log's times are out of order or miss its oldest record")
        precondition(zip(batches, batches.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound },
                     "ReduxStore: the action log's batches are out of order")
        #endif
    }

    #if REDUXSTORE_INTERNAL_CHECKS
    /// Which slots hold an action: the `count` from `start` on name a type; the rest were never
    /// written (zeros since allocation: a slot is destroyed only to be written again at once, or
    /// all of them when the log stops). Every slot of a small ring; of a large one, those at the
    /// ring's two ends and the first free one (a check per dispatch stays cheap).
    private func checkSlots() {
        guard let actions else { return }
        func check(_ slot: Int) {
            let live = (slot - start + capacity) % capacity < count
            precondition((ActionContainer.typeIdentity(at: actions + slot) != 0) == live,
                         "ReduxStore: the action log's slot \(slot) is \(live ? "not initialized" : "initialized") though \(live ? "in" : "outside") the ring")
        }
        if capacity <= 256 {
            for slot in 0..<capacity { check(slot) }
        } else {
            for offset in [0, count - 1, count] where offset >= 0 && offset < capacity { check((start + offset) % capacity) }
        }
    }
    #endif

    /// Frees the records: the store is being freed.
    mutating func deallocate() {
        deallocateRecords()
        capacity = 0
        wakes = []
        armed = false
    }
}

extension Store {
    /// Appends `action`'s record to the action log (``Store/openActionLog(_:ticked:)``), owning what it
    /// holds as ``makeRecordLocked(_:at:batch:source:patch:patchError:)``'s does. The caller holds
    /// the lock and has checked that the log is on.
    @inline(__always)
    func logLocked(_ action: any Action, at version: UInt64, batch: ClosedRange<UInt64>?, source: DispatchSite) {
        let core = core.unsafe.valuePointer
        core.pointee.actionLog.stamp(version)
        if let batch, batch.lowerBound == version { core.pointee.actionLog.noteBatch(batch) }
        core.pointee.actionLog.append(action, version: version, source: source, keeper: keeper)
    }
}

