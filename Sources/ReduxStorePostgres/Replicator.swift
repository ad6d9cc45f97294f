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

/// One action of a stream as the replica applies it: read from the stream, or one of this
/// process's own dispatches whose version its commit answered.
package struct StreamRow: Sendable {
    package let version: UInt64
    package let identifier: String
    /// The payload as JSON text (`null` for none).
    package let payload: String
    /// `"Module/File.swift:42"`, or `""` when unknown.
    package let source: String
    /// The process that wrote it, and which of its dispatches it was.
    let writer: String
    let seq: Int64
    /// Whether its writer stores a snapshot at this version (every replica keeps its hash there).
    let snapshot: Bool
    /// The snapshot stored at this version, if one is (to compare with): its hash, the process
    /// that stored it, and whether a second process confirmed it.
    var snapshotHash: String? = nil
    var snapshotWriter: String? = nil
    var snapshotConfirmed = false
}

/// A dispatch waiting for its commit.
struct PendingDispatch {
    let seq: Int64
    let identifier: String
    let payload: String
    let source: String
    let waiter: Waiter

    /// Who waits for the dispatch's version.
    enum Waiter {
        /// A dispatch queued behind a commit on its way: resumed when applied.
        case continuation(CheckedContinuation<UInt64, any Error>)
        /// The dispatch whose call commits the queue itself (``Replicator/submit(identifier:payload:source:)``):
        /// the result waits in the box for that call to return it.
        case caller(CallerResult)
    }

    func resolve(_ result: Result<UInt64, any Error>) {
        switch waiter {
        case .continuation(let continuation): continuation.resume(with: result)
        case .caller(let box): box.result = result
        }
    }
}

/// The result of the dispatch a ``Replicator/submit(identifier:payload:source:)`` call commits
/// itself; touched on the replicator's actor only.
final class CallerResult: @unchecked Sendable {
    // @unchecked: written and read on the replicator's actor only.
    var result: Result<UInt64, any Error>?
}

/// The replication of one store: its connections, the commits of its dispatches, and the
/// application of the stream's actions in order. Every change of the local store goes through
/// this actor, one action at a time, in the stream's order.
package actor Replicator {
    let stream: PostgresStream
    let schema: StreamSchema
    let options: ReplicationOptions
    /// The local replica the stream's actions are applied to.
    let target: any ReplicaTarget
    let logger: Logger
    /// This process's name in the rows it writes.
    let writer: String
    let channel: String
    let writes: Bool

    private var writeConnection: PostgresConnection?
    private var readConnection: PostgresConnection?
    private var nextSeq: Int64 = 1
    /// Dispatches not yet sent.
    private var queue: [PendingDispatch] = []
    /// Dispatches sent and not yet applied, by seq: resolved when their row is applied.
    private var inFlight: [Int64: PendingDispatch] = [:]
    private var committing = false
    /// A follower wake-up that came while a commit was on its way, looked at once it is done.
    private var wokenWhileCommitting = false
    /// What stopped the replica for good; every later call throws it.
    package private(set) var failure: ReplicationError?
    private var closed = false
    /// The newest version known to be committed, and since when the oldest unapplied one is known.
    private var knownHead: UInt64
    private var behindSince: ContinuousClock.Instant?
    /// When this process last stored a snapshot (or opened the stream): whether one is due by time.
    private var lastSnapshotTime: ContinuousClock.Instant = .now
    private var tasks: [Task<Void, Never>] = []
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    package init(
        stream: PostgresStream, schema: StreamSchema, options: ReplicationOptions, target: any ReplicaTarget,
        logger: Logger, writes: Bool, connection: PostgresConnection
    ) {
        self.stream = stream
        self.schema = schema
        self.options = options
        self.target = target
        self.logger = logger
        self.writes = writes
        writer = Self.makeWriterName()
        channel = schema.channel(stream.stream)
        writeConnection = connection
        knownHead = target.version
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The process that opened the stream: its writer name is that process's alone.
    nonisolated let openedBy: pid_t = getpid()

    /// The refusal of an append from a child of the process that opened the stream (after
    /// `fork`), or nil: a child that appended under its parent's name and sequence numbers would
    /// be answered with the parent's versions.
    package nonisolated func forked() -> ReplicationError? {
        let current = getpid()
        guard current != openedBy else { return nil }
        return ReplicationError(
            .invalidArgument, stream: stream.stream,
            "this process (pid \(current)) is a child of the one that opened the stream (pid \(openedBy)): it never appends under its parent's name; open the stream anew in the child")
    }

    /// A random name for this process's rows: 128 bits, hex.
    private static func makeWriterName() -> String {
        var generator = SystemRandomNumberGenerator()
        let words = (generator.next() as UInt64, generator.next() as UInt64)
        return String(words.0, radix: 16) + "-" + String(words.1, radix: 16)
    }

    // MARK: Following

    /// Starts the tasks that keep the replica current: a poll every `pollInterval`, and a
    /// listener of the stream's notifications that wakes the follower at once.
    package func startFollowing() {
        let interval = Duration.nanoseconds(Int64(options.pollInterval * 1e9))
        let wake = self.wake
        tasks.append(Task { [weak self] in
            while !Task.isCancelled, self != nil {
                try? await Task.sleep(for: interval)
                wake.yield()
            }
        })
        tasks.append(Task { [weak self] in
            guard let wakeups = self?.wakeups else { return }
            for await _ in wakeups {
                guard let self, await self.followOnce() else { return }
            }
        })
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                guard let self, await self.listenOnce() else { return }
                try? await Task.sleep(for: interval)
            }
        })
    }

    /// Applies what was committed since the last look; false once the replica is closed or failed.
    private func followOnce() async -> Bool {
        guard !closed, failure == nil else { return false }
        // A commit of this process is on its way: it applies what came before it, and this
        // wake-up (most often its own notification) is looked at once it is done.
        if committing {
            wokenWhileCommitting = true
            return true
        }
        do {
            _ = try await catchUp(through: nil)
            try await checkSnapshots()
        } catch {
            // What can heal is tried again at the next wake-up; closing ends the follower
            // without a failure to log.
            if error.stopsReplica, !closed {
                fail(error)
            } else if !closed, error.kind != .closed {
                noteFollowingError(error)
            }
        }
        return !closed && failure == nil
    }

    /// When the follower last logged an error it will retry, so that a long outage logs once
    /// every few seconds rather than at every poll.
    private var lastFollowingWarning: ContinuousClock.Instant?

    private func noteFollowingError(_ error: ReplicationError) {
        if let last = lastFollowingWarning, last.duration(to: .now) < .seconds(5) { return }
        lastFollowingWarning = .now
        logger.warning("ReduxStorePostgres: \(error.description); following again at the next poll")
    }

    /// Listens to the stream's channel on a connection of its own until it fails; false once
    /// the replica is closed or failed.
    private func listenOnce() async -> Bool {
        guard !closed, failure == nil else { return false }
        guard options.notifies else { return false }
        let connection: PostgresConnection
        do {
            connection = try await StreamConnection.connect(stream, logger: logger)
        } catch {
            return !closed && failure == nil
        }
        let wake = self.wake
        let channel = self.channel
        listening = connection
        defer { listening = nil }
        do {
            try await connection.listen(on: channel) { notifications in
                wake.yield()  // anything committed before the listen started
                for try await notification in notifications {
                    if let version = UInt64(notification.payload) {
                        self.learned(head: version)
                        // This process's own commit, applied already: nothing to read.
                        if self.hasApplied(version) { continue }
                    }
                    wake.yield()
                }
            }
        } catch {}
        try? await connection.close()
        return !closed && failure == nil
    }

    /// The listener's connection, closed by ``close()``.
    private var listening: PostgresConnection?

    /// Notes that the stream has reached `head`.
    private func learned(head: UInt64) {
        guard !closed else { return }
        if head > knownHead { knownHead = head }
        if knownHead > target.version, behindSince == nil { behindSince = .now }
    }

    /// How far behind the stream this replica is.
    var lag: ReplicationLag {
        let applied = target.version
        let behind = knownHead > applied ? knownHead - applied : 0
        let seconds = behind == 0 ? 0 : behindSince.map { ($0.duration(to: .now)).seconds } ?? 0
        return ReplicationLag(versions: behind, seconds: seconds)
    }

    // MARK: Reading and applying

    /// Reads and applies the stream's actions after the local version: through `target`, or
    /// until a read finds no more. Returns the version applied.
    @discardableResult
    package func catchUp(through goal: UInt64?) async throws(ReplicationError) -> UInt64 {
        try checkOpen()
        // Counted, so that ``close()`` returns only once no read is left to touch the target.
        reading += 1
        defer { reading -= 1 }
        // The next batch, read while this one is applied: a long tail costs about the longer of
        // reading and applying it, not their sum.
        var next: (after: UInt64, rows: Task<[StreamRow], any Error>)?
        defer { next?.rows.cancel() }
        while true {
            let after = target.version
            if let goal, after >= goal { return after }
            let through = goal ?? .max
            let rows: [StreamRow]
            if let read = next, read.after == after, let prefetched = try? await read.rows.value {
                rows = prefetched
            } else {
                rows = try await withConnection(.read) { (connection) async throws -> [StreamRow] in
                    try await Self.tail(of: connection, schema.tail(stream.stream, after: after, through: through, limit: options.readBatch), logger: logger)
                }
            }
            next = nil
            // The replica may have been closed while the rows came.
            try checkOpen()
            if let last = rows.last { learned(head: last.version) }
            guard let first = rows.first else {
                if let goal, target.version < goal {
                    throw fail(ReplicationError(
                        .trimmed, stream: stream.stream, version: target.version + 1,
                        "the stream has no action at version \(target.version + 1) (trimmed by the retention policy?): open the stream anew to start from its newest snapshot"))
                }
                caughtUp()
                return target.version
            }
            if first.version > target.version + 1 {
                throw fail(ReplicationError(
                    .trimmed, stream: stream.stream, version: target.version + 1,
                    "versions \(target.version + 1) to \(first.version - 1) were trimmed by the retention policy before this replica applied them: open the stream anew to start from its newest snapshot"))
            }
            let full = rows.count == options.readBatch
            if full, let last = rows.last, last.version < through, let connection = current(.read), !connection.isClosed {
                // Off this actor: the query and the rows' decoding run while it applies these.
                let query = schema.tail(stream.stream, after: last.version, through: through, limit: options.readBatch)
                let logger = self.logger
                next = (last.version, Task.detached { try await Self.tail(of: connection, query, logger: logger) })
            }
            try await apply(rows)
            if goal == nil, !full {
                caughtUp()
                return target.version
            }
        }
    }

    /// Runs a ``StreamSchema/tail(_:after:through:limit:)`` query and decodes its rows.
    private static func tail(
        of connection: PostgresConnection, _ query: PostgresQuery, logger: Logger
    ) async throws -> [StreamRow] {
        var rows: [StreamRow] = []
        for row in try await connection.rows(query, logger: logger) {
            let (version, identifier, payload, source, writer, seq, snapshot, hash, storedBy, confirmed) =
                try row.decode((Int64, String, String, String, String, Int64, Bool, String?, String?, Bool?).self)
            rows.append(
                StreamRow(
                    version: UInt64(version), identifier: identifier, payload: payload, source: source,
                    writer: writer, seq: seq, snapshot: snapshot, snapshotHash: hash, snapshotWriter: storedBy,
                    snapshotConfirmed: confirmed ?? false))
        }
        return rows
    }

    private func caughtUp() {
        guard !closed else { return }
        if target.version >= knownHead { behindSince = nil }
    }

    /// How many ``catchUp(through:)`` calls are running (one inside another's commit included).
    private var reading = 0

    /// Whether this replica has applied `version` already (or is closed): a notification of it
    /// needs no read.
    private func hasApplied(_ version: UInt64) -> Bool {
        closed || version <= target.version
    }

    /// Applies `rows` in order, skipping those applied already; resolves this process's own
    /// dispatches among them; compares the state with the snapshots stored at their versions.
    private func apply(_ rows: [StreamRow]) async throws(ReplicationError) {
        for row in rows {
            try checkOpen()
            let applied = target.version
            if row.version <= applied { continue }
            guard row.version == applied + 1 else {
                throw fail(ReplicationError(
                    .trimmed, stream: stream.stream, version: applied + 1, "the stream skips from \(applied) to \(row.version)"))
            }
            do throws(StoreError) {
                try target.apply(row)
            } catch {
                throw fail(ReplicationError(
                    .decode, stream: stream.stream, version: row.version,
                    "action \"\(row.identifier)\" does not decode: \(error.message); the replica stops here rather than skip it"))
            }
            if row.writer == writer, let pending = inFlight.removeValue(forKey: row.seq) {
                pending.resolve(.success(row.version))
            }
            // At the versions snapshots are stored at (whenever they are): this process's own
            // hash of the state, compared with the stored one.
            guard row.snapshot || row.snapshotHash != nil else { continue }
            let state = try canonicalState(at: row.version)
            if let stored = row.snapshotHash {
                if stored != state.hash { throw divergence(at: row.version) }
                if !row.snapshotConfirmed, row.snapshotWriter != writer { await confirm(row.version, hash: stored) }
            } else if row.writer == writer {
                // The writer of the version stores its snapshot. The await lets other rows be
                // applied meanwhile: the state was taken above.
                try await storeSnapshot(state, at: row.version)
            } else {
                // Compared once the snapshot is stored (``checkSnapshots()``).
                unverified[row.version] = state.hash
                if unverified.count > Self.unverifiedLimit, let oldest = unverified.keys.min() {
                    // Its snapshot was never stored in all that time (its writer stopped first):
                    // given up on, and said so.
                    unverified[oldest] = nil
                    logger.warning(
                        "ReduxStorePostgres: no snapshot was stored at version \(oldest) while this replica applied \(Self.unverifiedLimit) later versions marked for one: its state there is not compared",
                        metadata: ["stream": .string(stream.stream)])
                }
            }
        }
        caughtUp()
    }

    // MARK: Snapshots

    /// The state's canonical JSON text (compact, object keys sorted by code point) and its
    /// SHA-256 in hex: what snapshots store and compare.
    private func canonicalState(at version: UInt64) throws(ReplicationError) -> (text: String, hash: String) {
        let text: String
        do {
            text = try target.canonicalState()
        } catch {
            throw fail(ReplicationError(
                .decode, stream: stream.stream, version: version, "the state does not encode as JSON: \(error.message)"))
        }
        let digest = SHA256.hash(data: Array(text.utf8))
        return (text, digest.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined())
    }

    /// Stores `state` as the snapshot at `version`, or compares it with the one stored there
    /// already; then applies the retention policy.
    private func storeSnapshot(_ state: (text: String, hash: String), at version: UInt64) async throws(ReplicationError) {
        let stored = try await withConnection(.write) { (connection) async throws -> String? in
            var stored: String?
            for row in try await connection.rows(
                schema.storeSnapshot(stream.stream, version: version, state: state.text, hash: state.hash, writer: writer),
                logger: logger)
            {
                stored = try row.decode(String?.self)
            }
            for statement in schema.retain(stream.stream, kept: options.snapshotsKept, trimming: options.trimsActions) {
                _ = try await connection.rows(statement, logger: logger)
            }
            return stored
        }
        lastSnapshotTime = .now
        if let stored, stored != state.hash { throw divergence(at: version) }
    }

    /// Records that this process's hash at `version` is the stored snapshot's: a second process
    /// confirmed it, and a new process may start from it. Best effort: a confirmation lost only
    /// makes a new process start further back.
    private func confirm(_ version: UInt64, hash: String) async {
        _ = try? await withConnection(.write) { connection in
            try await connection.rows(
                schema.confirmSnapshot(stream.stream, version: version, hash: hash, writer: writer), logger: logger)
        }
    }

    /// This process's hashes at versions whose snapshot was not stored yet when it applied them.
    private var unverified: [UInt64: String] = [:]
    /// How many such hashes are kept, waiting for their snapshots (about 100 bytes each).
    static let unverifiedLimit = 4_096

    /// Compares the hashes kept in ``unverified`` with the snapshots stored since.
    private func checkSnapshots() async throws(ReplicationError) {
        guard !unverified.isEmpty else { return }
        let versions = unverified.keys.map { Int64(bitPattern: $0) }
        let stored = try await withConnection(.read) { (connection) async throws -> [(Int64, String, String?, Bool)] in
            var stored: [(Int64, String, String?, Bool)] = []
            for row in try await connection.rows(schema.snapshotHashes(stream.stream, versions: versions), logger: logger) {
                stored.append(try row.decode((Int64, String, String?, Bool).self))
            }
            return stored
        }
        for (version, hash, storedBy, confirmed) in stored {
            let version = UInt64(version)
            guard let mine = unverified.removeValue(forKey: version) else { continue }
            if mine != hash { throw divergence(at: version) }
            if !confirmed, storedBy != writer { await confirm(version, hash: hash) }
        }
    }

    private func divergence(at version: UInt64) -> ReplicationError {
        fail(ReplicationError(
            .divergence, stream: stream.stream, version: version,
            "this replica's state differs from the snapshot stored at this version by another process: the reducers are not deterministic, or the processes run different reducers"))
    }

    /// Whether a snapshot is due by time: the newest this process stored (or started from) is
    /// older than ``ReplicationOptions/snapshotInterval``. The next group's last action is then
    /// marked for one, so that every replica compares it.
    private func snapshotDueByTime() -> Bool {
        options.snapshotInterval > 0 && lastSnapshotTime.duration(to: .now).seconds >= options.snapshotInterval
    }

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
    private func commit(_ group: [PendingDispatch], until deadline: ContinuousClock.Instant) async throws(CommitFailure) {
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

    /// Whether a notification is on its way, and the newest version committed since it left.
    private var announcing = false
    private var unannounced: UInt64?

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
    private func append(
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

    // MARK: Connections

    enum Role { case read, write }

    /// The connection for `role`, connected anew if it was lost.
    private func connection(_ role: Role) async throws(ReplicationError) -> PostgresConnection {
        if let live = current(role), !live.isClosed { return live }
        let made = try await StreamConnection.connect(stream, appends: role == .write, logger: logger)
        // Another task of this actor may have connected meanwhile (the await above lets it run).
        if let live = current(role), !live.isClosed {
            try? await made.close()
            return live
        }
        let previous = current(role)
        switch role {
        case .read: readConnection = made
        case .write: writeConnection = made
        }
        try? await previous?.close()
        return made
    }

    private func current(_ role: Role) -> PostgresConnection? {
        switch role {
        case .read: readConnection
        case .write: writeConnection
        }
    }

    /// Closes the connection for `role` (lost, or about to be), so that the next use connects
    /// anew; with `failed`, only if that is still the one in use (another task may have replaced
    /// it with a live one meanwhile).
    private func drop(_ role: Role, failed: PostgresConnection? = nil) async {
        guard let dropped = current(role), failed == nil || dropped === failed else {
            try? await failed?.close()
            return
        }
        switch role {
        case .read: readConnection = nil
        case .write: writeConnection = nil
        }
        try? await dropped.close()
    }

    /// Runs `body` on the connection for `role`; a lost connection is made anew and `body` run
    /// again (it must only read, or be safe to repeat), as it is after an error that may pass
    /// (``ReplicationError/isTransient``), with back-off, until `reconnectTimeout`.
    private func withConnection<T: Sendable>(
        _ role: Role, _ body: (PostgresConnection) async throws -> T
    ) async throws(ReplicationError) -> T {
        let deadline = ContinuousClock.now.advanced(by: .nanoseconds(Int64(options.reconnectTimeout * 1e9)))
        var attempt = 0
        while true {
            try checkOpen()
            var used: PostgresConnection?
            do {
                let connection = try await connection(role)
                used = connection
                return try await body(connection)
            } catch {
                let described = StreamConnection.describe(error, stream)
                guard described.isTransient, ContinuousClock.now < deadline else { throw described }
                if described.kind == .connection, let used { await drop(role, failed: used) }
                attempt += 1
                try? await Task.sleep(for: .milliseconds(min(50 * attempt, 1000)))
            }
        }
    }

    // MARK: Failure and closing

    private func checkOpen() throws(ReplicationError) {
        if let failure { throw failure }
        if closed { throw ReplicationError(.closed, stream: stream.stream, "the replicated store was closed") }
    }

    /// Stops the replica for good with `error` (logged, thrown by every later call); returns it.
    @discardableResult
    private func fail(_ error: ReplicationError) -> ReplicationError {
        if failure == nil {
            failure = error
            logger.error("ReduxStorePostgres: \(error.description)")
        }
        return error
    }

    /// Fails every dispatch still waiting: those queued were never sent; one handed to a
    /// commit may have reached the server.
    private func failAll(_ error: ReplicationError) {
        let queued = queue
        let sent = Array(inFlight.values)
        queue.removeAll()
        inFlight.removeAll()
        for pending in queued {
            pending.resolve(.failure(error.answering(writer: writer, sequence: pending.seq, outcome: .notStored)))
        }
        for pending in sent {
            pending.resolve(.failure(error.answering(writer: writer, sequence: pending.seq, outcome: .unknown)))
        }
    }

    /// Waits for the dispatches sent, stops following and closes the connections. Idempotent.
    package func close() async {
        guard !closed else { return }
        // What was queued is committed first: a dispatch that returned was applied.
        while committing, failure == nil { try? await Task.sleep(for: .milliseconds(5)) }
        closed = true
        failAll(ReplicationError(.closed, stream: stream.stream, "the replicated store was closed"))
        for task in tasks { task.cancel() }
        wake.finish()
        tasks.removeAll()
        await drop(.write)
        await drop(.read)
        try? await listening?.close()
        // A read on its way resumes on this actor meanwhile and ends at its next check: once
        // none is left, nothing touches the target (which the caller may free) again.
        while reading > 0 { try? await Task.sleep(for: .milliseconds(5)) }
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension PostgresConnection {
    /// Runs `query` and collects its rows, within ``StreamConnection/queryTimeout``: a query
    /// sent just as the server ended the session can be left unanswered by postgres-nio (its
    /// promise is never completed), so the wait is bounded, and a query past the bound is a
    /// lost connection (the caller closes it and connects anew).
    func rows(
        _ query: PostgresQuery, logger: Logger, timeout: Duration = StreamConnection.queryTimeout
    ) async throws -> [PostgresRow] {
        let answer = Answer<[PostgresRow]>()
        return try await withCheckedThrowingContinuation { continuation in
            answer.wait(continuation)
            // The bound, on the connection's event loop: no task of its own to start and cancel
            // for every statement.
            let timer = eventLoop.scheduleTask(in: .nanoseconds(Int64(timeout.seconds * 1e9))) {
                answer.give(.failure(ReplicationError(
                    .connection, "PostgreSQL did not answer within \(timeout)")))
            }
            Task {
                do {
                    answer.give(.success(try await self.query(query, logger: logger).collect()))
                } catch {
                    answer.give(.failure(error))
                }
                timer.cancel()
            }
        }
    }
}

/// The first of several results, handed to one waiting continuation.
final class Answer<Value: Sendable>: Sendable {
    private let state = Locked<(continuation: CheckedContinuation<Value, any Error>?, given: Bool)>((nil, false))

    func wait(_ continuation: CheckedContinuation<Value, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    func give(_ result: Result<Value, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard !state.given else { return nil }
            state.given = true
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}
