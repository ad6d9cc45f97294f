internal import CJSONC
import Logging
import PostgresNIO
import ReduxStore
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Replicator {
    // MARK: Dispatching

    /// Sends a dispatch to the stream; returns the version it was committed and applied at.
    package func submit(identifier: String, payload: String, source: String) async throws -> UInt64 {
        do throws(ReplicationError) {
            try checkSubmission(identifier: identifier, payload: payload, source: source)
        } catch {
            throw error.refusingDispatch()
        }
        let seq = nextSeq
        nextSeq += 1
        if committing {
            return try await withCheckedThrowingContinuation { continuation in
                queue.append(PendingDispatch(
                    seq: seq, identifier: identifier, payload: payload, source: source,
                    waiter: .continuation(continuation)))
            }
        }
        // No commit on its way: this call commits its dispatch itself, with any that join the
        // queue meanwhile, rather than starting a task to and waiting to be resumed by it (two
        // thread hops fewer for each dispatch of a lone writer: Benchmarks/README.md).
        let box = CallerResult()
        queue.append(PendingDispatch(
            seq: seq, identifier: identifier, payload: payload, source: source, waiter: .caller(box)))
        committing = true
        await commitQueued(returningAfter: box)
        guard let result = box.result else {
            throw (failure ?? ReplicationError(.closed, stream: stream.stream, "the replicated store was closed"))
                .answering(writer: writer, sequence: seq, outcome: .unknown)
        }
        return try result.get()
    }

    /// Throws why a dispatch may not be sent, checked before it is given a sequence number.
    private func checkSubmission(identifier: String, payload: String, source: String) throws(ReplicationError) {
        try checkOpen()
        if let refusal = forked() { throw refusal }
        guard writes else {
            throw ReplicationError(
                .readOnly, stream: stream.stream,
                "this process follows the stream read-only (ReplicatedStore.follow): open it with ReplicatedStore.open to dispatch")
        }
        let action = "action \"\(identifier.debugDescription.dropFirst().dropLast())\" was not written"
        if let refusal = Self.unstorable(identifier: identifier, payload: payload, source: source) {
            throw ReplicationError(.invalidArgument, stream: stream.stream, "\(action): \(refusal)")
        }
        // What every replica will do with the stored text, done first: an action this program
        // cannot apply is refused before it is stored, never committed to stop every replica.
        do throws(StoreError) {
            try target.check(identifier: identifier, payload: payload)
        } catch {
            throw ReplicationError(
                .invalidArgument, stream: stream.stream,
                "\(action): its payload does not decode back into what a replica applies: \(error.message)")
        }
    }

    /// Why PostgreSQL would refuse to store an action, or nil: its `text` columns hold no U+0000,
    /// and a payload's `\u0000` escape, which `json` keeps, would make the row one that `->>` and
    /// `jsonb` refuse. Checked before the action joins a group, so that it fails alone.
    static func unstorable(identifier: String, payload: String, source: String) -> String? {
        if identifier.utf8.contains(0) { return "its identifier holds U+0000, which PostgreSQL's text cannot store" }
        if source.utf8.contains(0) { return "its source holds U+0000, which PostgreSQL's text cannot store" }
        if payload.utf8.contains(0) || containsNULEscape(payload) {
            return "its payload holds U+0000 (\\u0000), which PostgreSQL's text and jsonb cannot hold"
        }
        return nil
    }

    /// Whether JSON text holds the escape `\u0000` (not an escaped backslash before `u0000`).
    static func containsNULEscape(_ json: String) -> Bool {
        var bytes = json.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "\\") else { continue }
            guard let escaped = bytes.next() else { return false }
            guard escaped == UInt8(ascii: "u") else { continue }
            var digits = 0
            var zero = true
            while digits < 4, let digit = bytes.next() {
                digits += 1
                if digit != UInt8(ascii: "0") { zero = false }
                // A backslash cannot stand among the four hex digits of valid JSON.
                if digit == UInt8(ascii: "\\") { zero = false; break }
            }
            if zero && digits == 4 { return true }
        }
        return false
    }

    /// Commits what is queued, one group per statement, until the queue is empty; with `caller`,
    /// only until that dispatch has its result (a task goes on with the rest).
    private func commitQueued(returningAfter caller: CallerResult? = nil) async {
        while !queue.isEmpty, failure == nil, !closed {
            if let caller, caller.result != nil {
                Task { await self.commitQueued() }
                return
            }
            let group = Array(queue.prefix(options.maximumBatch))
            queue.removeFirst(group.count)
            for pending in group { inFlight[pending.seq] = pending }
            do throws(CommitFailure) {
                try await commit(group, until: retryDeadline())
            } catch where group.count > 1 && error.outcome == .notStored && error.error.kind == .server
                && !error.error.isTransient && failure == nil
            {
                // The server refused the group (nothing of it was stored): each action is
                // judged alone, so that one the server refuses fails only its own dispatch.
                // One retry bound for them all: an outage meanwhile fails the rest together.
                let deadline = retryDeadline()
                for pending in group {
                    do throws(CommitFailure) {
                        try await commit([pending], until: deadline)
                    } catch {
                        settle([pending], error)
                    }
                }
            } catch {
                settle(group, error)
            }
        }
        committing = false
        if let failure { failAll(failure) }
        if wokenWhileCommitting {
            wokenWhileCommitting = false
            wake.yield()
        }
    }

    /// When retries that start now must end: ``ReplicationOptions/reconnectTimeout`` on.
    private func retryDeadline() -> ContinuousClock.Instant {
        ContinuousClock.now.advanced(by: .nanoseconds(Int64(options.reconnectTimeout * 1e9)))
    }

    /// Why a group's commit failed, and what became of its dispatches.
    struct CommitFailure: Error {
        let error: ReplicationError
        /// `.stored(version:)` names the group's last version.
        let outcome: ReplicationError.DispatchOutcome
    }

    /// Fails the dispatches of `group` not applied yet with `failure`'s error, each saying what
    /// became of it.
    private func settle(_ group: [PendingDispatch], _ failure: CommitFailure) {
        for (index, pending) in group.enumerated() {
            guard let pending = inFlight.removeValue(forKey: pending.seq) else { continue }
            var outcome = failure.outcome
            if case .stored(let last) = outcome {
                outcome = .stored(version: last - UInt64(group.count - 1 - index))
            }
            pending.resolve(.failure(failure.error.answering(writer: writer, sequence: pending.seq, outcome: outcome)))
        }
    }

    /// Commits `group` and applies it (with whatever other processes committed before it).
    ///
    /// The append commits on the server before it answers, and is idempotent: its dispatches
    /// carry this writer's name and their seqs, and a request whose dispatches are stored already
    /// stores nothing and answers the versions stored the first time. So when the outcome is
    /// uncertain (the connection lost before the answer came) or the server answered with an
    /// error that may pass (a full connection table, a shutdown, a lock timeout), the same
    /// request is simply made again, with back-off, until `reconnectTimeout`: none is lost and
    /// none is written twice, whether the first request never arrived, committed, or arrives late.
    ///
    /// Whatever ends it, the failure says what became of the group: stored (the append answered,
    /// then applying it here failed), unknown (an attempt's answer was lost, and no later one
    /// answered), or not stored (no request reached the server, or the server refused each one).
    func commit(_ group: [PendingDispatch], until deadline: ContinuousClock.Instant) async throws(CommitFailure) {
        let snapshotLast = snapshotDueByTime()
        let last = try await appendRetrying(group, snapshotLast: snapshotLast, until: deadline)
        announce(last)
        do throws(ReplicationError) {
            try await applyOwn(group, last: last, snapshotLast: snapshotLast)
        } catch {
            throw CommitFailure(error: error, outcome: .stored(version: last))
        }
    }

    /// Appends `group`, trying again what may pass until `deadline`; returns the version of its
    /// last action, once committed.
    private func appendRetrying(
        _ group: [PendingDispatch], snapshotLast: Bool, until deadline: ContinuousClock.Instant
    ) async throws(CommitFailure) -> UInt64 {
        var attempt = 0
        // Whether an attempt's answer was lost after its request may have reached the server.
        var mayHaveCommitted = false
        while true {
            var used: PostgresConnection?
            do throws(ReplicationError) {
                try checkOpen()
                let connection = try await connection(.write)
                used = connection
                do throws(ReplicationError) {
                    return try await append(group, snapshotLast: snapshotLast, on: connection)
                } catch {
                    // The server's error is its answer: that attempt stored nothing. A lost
                    // connection or an answer not come in time leaves it unknown.
                    if error.kind == .connection { mayHaveCommitted = true }
                    throw error
                }
            } catch {
                if error.kind == .connection, let used { await drop(.write, failed: used) }
                guard error.isTransient else {
                    throw CommitFailure(error: error, outcome: mayHaveCommitted ? .unknown : .notStored)
                }
                guard ContinuousClock.now < deadline else {
                    let outlasted = ReplicationError(
                        error.kind, stream: stream.stream, version: error.version,
                        error.message + "; not regained within \(options.reconnectTimeout) s", transient: true)
                    throw CommitFailure(error: outlasted, outcome: mayHaveCommitted ? .unknown : .notStored)
                }
                attempt += 1
                logger.warning(
                    "ReduxStorePostgres: \(error.description); trying again",
                    metadata: ["stream": .string(stream.stream), "attempt": .stringConvertible(attempt)])
                try? await Task.sleep(for: .milliseconds(min(50 * attempt, 1000)))
            }
        }
    }

    // MARK: Waking the followers


    /// Wakes the stream's other processes: `NOTIFY` on the listening connection, apart from the
    /// append and off the dispatch's path, and coalesced — while one notification is on its way,
    /// the commits that follow are announced together by the next. A notification lost (no
    /// listening connection, a failure) costs a follower at most ``ReplicationOptions/pollInterval``.
    private func announce(_ version: UInt64) {
        guard options.notifies else { return }
        if announcing {
            unannounced = max(unannounced ?? 0, version)
            return
        }
        announcing = true
        Task { await self.sendAnnouncements(from: version) }
    }

    private func sendAnnouncements(from first: UInt64) async {
        var version = first
        while true {
            if let connection = listening, !closed {
                _ = try? await connection.rows(schema.notify(channel, version: version), logger: logger)
            }
            guard let next = unannounced, !closed else { break }
            unannounced = nil
            version = next
        }
        announcing = false
    }

    /// Appends `group` in one call; returns the version of its last action, once committed.
    func append(
        _ group: [PendingDispatch], snapshotLast: Bool, on connection: PostgresConnection
    ) async throws(ReplicationError) -> UInt64 {
        let query = schema.append(
            stream.stream, identifiers: group.map(\.identifier), payloads: group.map(\.payload),
            sources: group.map(\.source), writer: writer, firstSeq: group[0].seq,
            snapshotEvery: options.snapshotEvery, snapshotLast: snapshotLast)
        // The seqs of one group are consecutive: `firstSeq + i` is the i-th's.
        assert(zip(group, group.dropFirst()).allSatisfy { $0.seq + 1 == $1.seq })
        do {
            var last: Int64?
            for row in try await connection.rows(query, logger: logger) {
                last = try row.decode(Int64?.self)
            }
            guard let last else {
                throw ReplicationError(.server, stream: stream.stream, "the append answered no version")
            }
            return UInt64(last)
        } catch {
            throw StreamConnection.describe(error, stream)
        }
    }

    /// Applies `group`, committed as the versions through `last`, after whatever the stream
    /// holds before it; its rows marked for snapshots as the procedure marked them.
    private func applyOwn(_ group: [PendingDispatch], last: UInt64, snapshotLast: Bool) async throws(ReplicationError) {
        learned(head: last)
        let first = last - UInt64(group.count) + 1
        if target.version < first - 1 {
            try await catchUp(through: first - 1)
        }
        let every = UInt64(options.snapshotEvery)
        try await apply(group.enumerated().map { index, pending in
            let version = first + UInt64(index)
            return StreamRow(
                version: version, identifier: pending.identifier, payload: pending.payload,
                source: pending.source, writer: writer, seq: pending.seq,
                snapshot: (every > 0 && version % every == 0) || (snapshotLast && version == last))
        })
    }
}
