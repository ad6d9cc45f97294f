#if canImport(Glibc)
import Glibc
#endif

extension ActionLog {
    // MARK: Reading

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
        var marks = MarkCursor(from: first, in: self)
        for offset in 0..<taken {
            let recordVersion = first &+ UInt64(offset)
            let slot = (start &+ Int(recordVersion &- oldest)) % capacity
            let (time, batch) = marks.next(recordVersion, in: self)
            let patch = patches.isEmpty || !withPatches ? Patch() : patches[slot]
            result.append(ChangeRecord(
                version: recordVersion, action: actions[slot], nanoseconds: time, batch: batch, patch: patch.operations,
                patchError: patch.error, source: sources[slot]))
        }
        return (result, first > version &+ 1 ? first &- version &- 1 : 0)
    }

    /// The oldest `n` records (the ring holds them), moved out of the ring: no claim needs them
    /// any more once read, so they are handed over rather than copied and then destroyed.
    private mutating func takeOldest(_ n: Int) -> [ChangeRecord] {
        guard n > 0, let actions, let sources else { return [] }
        var result: [ChangeRecord] = []
        result.reserveCapacity(n)
        var version = newest &- UInt64(count) &+ 1
        var marks = MarkCursor(from: version, in: self)
        for _ in 0..<n {
            let (time, batch) = marks.next(version, in: self)
            var patch = Patch()
            if !patches.isEmpty { swap(&patch, &patches[start]) }
            if !snapshots.isEmpty { snapshots[start] = nil }
            result.append(ChangeRecord(
                version: version, action: (actions + start).move(), nanoseconds: time, batch: batch,
                patch: patch.operations, patchError: patch.error, source: sources[start]))
            #if REDUXSTORE_INTERNAL_CHECKS
            UnsafeMutableRawPointer(actions + start).initializeMemory(
                as: UInt8.self, repeating: 0, count: MemoryLayout<any Action>.stride)
            #endif
            start = start &+ 1 == capacity ? 0 : start &+ 1
            count &-= 1
            version &+= 1
        }
        if count == 0 { start = 0 }
        return result
    }

    /// The newest record, its patch attached (the change listeners read it as it is made).
    /// Mutating only so that it reads the log in place, not a copy of it.
    mutating func newestRecord() -> ChangeRecord? {
        guard let actions, let sources, count > 0 else { return nil }
        let slot = (start &+ count &- 1) % capacity
        let batch = batches.last.flatMap { $0.contains(newest) ? $0 : nil }
        let patch = patches.isEmpty ? Patch() : patches[slot]
        return ChangeRecord(
            version: newest, action: actions[slot], nanoseconds: times.last { $0.version <= newest }?.time ?? 0,
            batch: batch, patch: patch.operations, patchError: patch.error, source: sources[slot])
    }

    /// Walks the time and batch marks along consecutive versions.
    private struct MarkCursor {
        var time: Int
        var batch: Int

        init(from version: UInt64, in log: borrowing ActionLog) {
            time = (log.times.lastIndex { $0.version <= version }) ?? 0
            batch = log.batches.firstIndex { $0.upperBound >= version } ?? log.batches.count
        }

        /// The time and batch of the record of `version`, the one after the last asked for.
        @inline(__always)
        mutating func next(_ version: UInt64, in log: borrowing ActionLog) -> (time: Int64, batch: ClosedRange<UInt64>?) {
            while time &+ 1 < log.times.count, log.times[time &+ 1].version <= version { time &+= 1 }
            while batch < log.batches.count, log.batches[batch].upperBound < version { batch &+= 1 }
            let range = batch < log.batches.count && log.batches[batch].contains(version) ? log.batches[batch] : nil
            return (log.times.isEmpty ? 0 : log.times[time].time, range)
        }
    }

    /// Where `claim`, reading from its cursor, reads next: the versions after `after`; `missed`
    /// of them are no longer kept for it (older than its capacity, unless it holds, or the ring).
    private func readingPoint(of claim: Claim) -> (after: UInt64, missed: UInt64) {
        let oldest = newest &- UInt64(count) &+ 1
        var after = claim.holds ? claim.cursor : max(claim.cursor, newest > UInt64(claim.capacity) ? newest &- UInt64(claim.capacity) : 0)
        if after &+ 1 < oldest { after = oldest &- 1 }
        return (after, after > claim.cursor ? after &- claim.cursor : 0)
    }

    /// The records a claim's reader has not read, oldest first, at most `limit`: those after its
    /// cursor, of the newest `capacity` it asked to keep; `dropped` counts the versions it missed
    /// (a gap). Moves the cursor past them and releases what no claim needs any more; empty for
    /// an unknown token.
    mutating func read(_ token: UInt64, limit: Int) -> (records: [ChangeRecord], dropped: UInt64) {
        guard let index = index(of: token) else { return ([], 0) }
        let (after, missed) = readingPoint(of: claims[index])
        let available = newest > after ? Int(min(newest &- after, UInt64(max(limit, 0)))) : 0
        guard available > 0 || missed > 0 else { return ([], 0) }
        claims[index].cursor = after &+ UInt64(available)
        if claims[index].holds || claims[index].paced { pace() }
        // What no claim needs once this read is done is moved out; the rest copied.
        let oldest = newest &- UInt64(count) &+ 1
        let floor = releaseFloor()
        let released = after &+ 1 == oldest && floor > oldest ? Int(min(floor &- oldest, UInt64(available))) : 0
        var records = takeOldest(released)
        if released < available {
            records += self.records(after: after &+ UInt64(released), limit: available &- released).records
        }
        release()
        return (records, missed)
    }

    /// The patches of the records the claim of `token`, a holding one, has not read, oldest
    /// first, joined, and its cursor moved past them (the observers' round); a record whose
    /// patch could not be made adds nothing. Only the patches are read: no record is made.
    mutating func takePatches(_ token: UInt64) -> [JSONPatch.Operation] {
        guard let index = index(of: token), count > 0 else { return [] }
        let oldest = newest &- UInt64(count) &+ 1
        let first = max(claims[index].cursor &+ 1, oldest)
        guard first <= newest else { return [] }
        claims[index].cursor = newest
        var joined: [JSONPatch.Operation] = []
        if !patches.isEmpty {
            for offset in Int(first &- oldest)..<count {
                guard let operations = patches[(start &+ offset) % capacity].operations else { continue }
                // The first shares the record's array (no element is copied); the ring lets it go.
                if joined.isEmpty { joined = operations } else { joined += operations }
            }
        }
        pace()
        release()
        return joined
    }

    /// The versions the claim of `token` missed so far and has not been told of by a read.
    func missed(_ token: UInt64) -> UInt64 {
        index(of: token).map { readingPoint(of: claims[$0]).missed } ?? 0
    }

    /// Releases the oldest records no claim needs any more: every claim that reads from a
    /// cursor read them (or missed them), and they are older than the newest the other claims
    /// keep.
    ///
    /// A ring grown past ``limit`` for a holding claim (a burst the journal's writer or the
    /// observers' round had not read yet) is made smaller again once a quarter of it or less is
    /// in use: its memory, too, follows the backlog.
    mutating func release() {
        guard count > 0 else {
            if capacity > limit { shrinkPastLimit() }
            return
        }
        let oldest = newest &- UInt64(count) &+ 1
        let floor = releaseFloor()
        guard floor > oldest else { return }
        for _ in 0..<min(Int(floor &- oldest), count) { destroyOldest() }
        if capacity > limit { shrinkPastLimit() }
    }

    /// Makes a ring grown past ``limit`` twice as large as what it holds (or its limit, if more)
    /// when a quarter of it or less is in use: a ring that grows by doubling and shrinks only a
    /// quarter full moves each record a bounded number of times.
    @inline(never)
    private mutating func shrinkPastLimit() {
        guard count <= capacity / 4 else { return }
        reallocate(to: max(limit, count &* 2))
    }

    /// The oldest version a claim still needs: every claim that reads from a cursor needs what
    /// it has not read (of the newest it keeps, unless it holds), the others the newest they keep.
    private func releaseFloor() -> UInt64 {
        var floor = newest &+ 1
        for index in claims.indices {
            let capacity = UInt64(claims[index].capacity)
            let keeps = newest > capacity ? newest &- capacity &+ 1 : 1
            guard claims[index].readsFromCursor else {
                floor = min(floor, keeps)
                continue
            }
            let cursor = claims[index].cursor
            floor = min(floor, claims[index].holds ? cursor &+ 1 : max(cursor &+ 1, keeps))
        }
        return floor
    }

    /// Hands each reader that reads from a cursor (a sequence, the journal) its unread records
    /// and closes its claim: the store is being freed.
    mutating func endReaders() {
        for claim in claims {
            if let reader = claim.reader {
                reader.end(handing: read(claim.token, limit: .max).records)
            } else if let journal = claim.journal {
                handUnread(to: journal)
            }
        }
    }

    /// Hands `journal` the records its claim has not read: the journal is being stopped (its
    /// claim is closed next) and writes them before it ends.
    mutating func handUnread(to journal: Journal) {
        let (records, dropped) = read(journal.token, limit: .max)
        journal.end(handing: records, dropped: dropped)
    }

    /// Checks the ring (under REDUXSTORE_INTERNAL_CHECKS, from ``Store/_checkInvariantsLocked()``):
    /// its columns exist exactly while it is on, at most ``capacity`` slots are filled, the oldest
    /// slot is within them, exactly those slots hold an action, the newest version is at most
    /// the store's, no record a holding claim has not read was overwritten, and the marks are in
    /// order with a time for the oldest record.
    func _checkInvariants(newest version: UInt64) {
        #if REDUXSTORE_INTERNAL_CHECKS
        precondition((actions != nil) == (capacity > 0) && (sources != nil) == (capacity > 0),
                     "ReduxStore: the action log's columns do not match its capacity")
        precondition(armed == !wakes.isEmpty, "ReduxStore: the action log is armed without a wake-up, or the reverse")
        precondition(count >= 0 && count <= capacity && (capacity == 0 ? start == 0 : start < capacity)
                     && (capacity <= limit || held != .max),
                     "ReduxStore: the action log's ring is out of bounds")
        checkSlots()
        precondition(patches.isEmpty || (patches.count == capacity && claims.contains { $0.patches }),
                     "ReduxStore: the action log's patches do not match its ring or its claims")
        precondition((snapshots.isEmpty || (snapshots.count == capacity && claims.contains { $0.snapshots }))
                     && (snapshots.isEmpty == (capacity == 0 || !claims.contains { $0.snapshots })),
                     "ReduxStore: the action log's snapshots do not match its ring or its claims")
        if !snapshots.isEmpty, capacity <= 256 {
            // A free slot holds no snapshot: released records let theirs go.
            for offset in count..<capacity {
                precondition(snapshots[(start + offset) % capacity] == nil,
                             "ReduxStore: the action log keeps a snapshot in a free slot")
            }
        }
        precondition(held == (claims.filter(\.holds).map(\.cursor).min() ?? .max),
                     "ReduxStore: the action log's held cursor is not its holding claims' lowest")
        guard count > 0 else { return }
        precondition(newest <= version && UInt64(count) <= newest,
                     "ReduxStore: the action log holds a version the store has not reached")
        precondition(held >= newest || held &+ 1 >= newest &- UInt64(count) &+ 1,
                     "ReduxStore: the action log overwrote a record a holding claim had not read")
        precondition(zip(times, times.dropFirst()).allSatisfy { $0.version < $1.version }
                     && (times.first.map { $0.version <= newest &- UInt64(count) &+ 1 } ?? false),
                     "ReduxStore: the action log's times are out of order or miss its oldest record")
        precondition(zip(batches, batches.dropFirst()).allSatisfy { $0.upperBound < $1.lowerBound },
                     "ReduxStore: the action log's batches are out of order")
        #endif
    }

    #if REDUXSTORE_INTERNAL_CHECKS
    /// Which slots hold an action: the `count` from `start` on name a type; the rest hold
    /// zeros (never written since allocation, or zeroed when released; a slot overwritten is
    /// destroyed only to be written again at once). Every slot of a small ring; of a large one,
    /// those at the ring's two ends and the first free one (a check per dispatch stays cheap).
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
        reallocate(to: 0)
        claims = []
        held = .max
        attention = .max
        wakes = []
        armed = false
    }
}
