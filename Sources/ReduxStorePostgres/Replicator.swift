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
        /// The dispatch whose call commits the queue itself
        /// (``Replicator/submit(identifier:payload:source:)``): the result waits in the box for that call to
        /// return it.
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
    /// The hot standby a follower reads from (``ReplicationOptions/standbyConnection``), or nil.
    let standby: PostgresStream?
    /// The server the `.read` connection goes to: the standby, or the stream's own.
    var readServer: PostgresStream { standby ?? stream }

    private var writeConnection: PostgresConnection?
    private var readConnection: PostgresConnection?
    var nextSeq: Int64 = 1
    /// Dispatches not yet sent.
    var queue: [PendingDispatch] = []
    /// Dispatches sent and not yet applied, by seq: resolved when their row is applied.
    var inFlight: [Int64: PendingDispatch] = [:]
    var committing = false
    /// A follower wake-up that came while a commit was on its way, looked at once it is done.
    var wokenWhileCommitting = false
    /// What stopped the replica for good; every later call throws it.
    package private(set) var failure: ReplicationError?
    var closed = false
    /// The newest version known to be committed, and since when the oldest unapplied one is known.
    var knownHead: UInt64
    var behindSince: ContinuousClock.Instant?
    /// When this process last stored a snapshot (or opened the stream): whether one is due by time.
    var lastSnapshotTime: ContinuousClock.Instant = .now
    var tasks: [Task<Void, Never>] = []
    let wakeups: AsyncStream<Void>
    let wake: AsyncStream<Void>.Continuation

    package init(
        stream: PostgresStream, schema: StreamSchema, options: ReplicationOptions, target: any ReplicaTarget,
        logger: Logger, writes: Bool, standby: PostgresStream? = nil, connection: PostgresConnection
    ) {
        self.stream = stream
        self.schema = schema
        self.options = options
        self.target = target
        self.logger = logger
        self.writes = writes
        self.standby = standby
        writer = Self.makeWriterName()
        channel = schema.channel(stream.stream)
        // The connection the stream was opened on: to the standby when it reads from one.
        if standby == nil { writeConnection = connection } else { readConnection = connection }
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
            "this process (pid \(current)) is a child of the one that opened the stream (pid \(openedBy)): it never appends under its parent's name, and has none of its threads (open streams after exec())")
    }

    /// A random name for this process's rows: 128 bits, hex.
    private static func makeWriterName() -> String {
        var generator = SystemRandomNumberGenerator()
        let words = (generator.next() as UInt64, generator.next() as UInt64)
        return String(words.0, radix: 16) + "-" + String(words.1, radix: 16)
    }

    // What snapshots and dispatching keep (their code: Replicator+Snapshots.swift,
    // Replicator+Dispatching.swift).
    /// This process's hashes at versions whose snapshot was not stored yet when it applied them.
    var unverified: [UInt64: String] = [:]
    /// Whether a notification is on its way, and the newest version committed since it left.
    var announcing = false
    var unannounced: UInt64?

    // What following keeps (its code: Replicator+Following.swift).
    /// Whether the listener's task runs: ``close()`` waits for it, so that no connection of
    /// its is left opening (or authenticating) once the replica is closed.
    var listenerRunning = false
    /// When the follower last logged an error it will retry, so that a long outage logs once
    /// every few seconds rather than at every poll.
    var lastFollowingWarning: ContinuousClock.Instant?
    /// The listener's connection, closed by ``close()``.
    var listening: PostgresConnection?
    /// The error of the last attempt to read the stream, until one succeeds (``lag``).
    var lastFollowingError: ReplicationError?
    /// On a hot standby: the stream's head the standby had replayed at the last read.
    var standbyHead: UInt64 = 0
    /// When a follower on a hot standby last began a read of it, and since when its reads have
    /// found nothing new though the primary announced more (nil: not stalled).
    var lastStandbyRead: ContinuousClock.Instant?
    var standbyStalledSince: ContinuousClock.Instant?

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
        var next: (after: UInt64, tail: Task<Tail, any Error>)?
        defer { next?.tail.cancel() }
        while true {
            let after = target.version
            if let goal, after >= goal { return after }
            let through = goal ?? .max
            let tail: Tail
            if let read = next, read.after == after, let prefetched = try? await read.tail.value {
                tail = prefetched
            } else {
                tail = try await withConnection(.read) { (connection) async throws -> Tail in
                    try await Self.tail(of: connection, schema.tail(stream.stream, after: after, through: through, limit: options.readBatch), logger: logger)
                }
            }
            let rows = tail.rows
            next = nil
            // The replica may have been closed while the rows came.
            try checkOpen()
            learned(head: tail.head)
            if standby != nil { standbyHead = max(standbyHead, tail.head) }
            guard let first = rows.first else {
                // The head (read with the rows) is past this replica, and no action follows it:
                // they were trimmed. A follower would otherwise take itself for caught up.
                if min(tail.head, through) > target.version {
                    throw fail(ReplicationError(
                        .trimmed, stream: stream.stream, version: target.version + 1,
                        "the stream is at version \(tail.head) and has no action at version \(target.version + 1): trimmed by the retention policy before this replica applied it; open the stream anew to start from its newest snapshot"))
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

    /// What one read of the stream's tail found: the stream's head then (0: no stream yet) and
    /// the actions after the version asked for.
    struct Tail: Sendable {
        var head: UInt64 = 0
        var rows: [StreamRow] = []
    }

    /// Runs a ``StreamSchema/tail(_:after:through:limit:)`` query and decodes its rows.
    private static func tail(
        of connection: PostgresConnection, _ query: PostgresQuery, logger: Logger
    ) async throws -> Tail {
        var tail = Tail()
        for row in try await connection.rows(query, logger: logger) {
            let (head, version, identifier, payload, source, writer, seq, snapshot, hash, storedBy, confirmed) =
                try row.decode(
                    (Int64, Int64?, String?, String?, String?, String?, Int64?, Bool?, String?, String?, Bool?).self)
            tail.head = UInt64(head)
            guard let version, let identifier, let payload, let source, let writer, let seq, let snapshot else {
                continue  // the stream's row alone: no action after the version asked for
            }
            tail.rows.append(
                StreamRow(
                    version: UInt64(version), identifier: identifier, payload: payload, source: source,
                    writer: writer, seq: seq, snapshot: snapshot, snapshotHash: hash, snapshotWriter: storedBy,
                    snapshotConfirmed: confirmed ?? false))
        }
        return tail
    }

    private func caughtUp() {
        guard !closed else { return }
        if target.version >= knownHead { behindSince = nil }
    }

    /// How many ``catchUp(through:)`` calls are running (one inside another's commit included).
    private var reading = 0

    /// Whether this replica has applied `version` already (or is closed): a notification of it
    /// needs no read.
    func hasApplied(_ version: UInt64) -> Bool {
        closed || version <= target.version
    }

    /// Applies `rows` in order, skipping those applied already; resolves this process's own
    /// dispatches among them; compares the state with the snapshots stored at their versions.
    func apply(_ rows: [StreamRow]) async throws(ReplicationError) {
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
            guard row.snapshot || row.snapshotHash != nil, let state = snapshotState(at: row.version) else { continue }
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

    // MARK: Connections

    enum Role { case read, write }

    /// The connection for `role`, connected anew if it was lost.
    func connection(_ role: Role) async throws(ReplicationError) -> PostgresConnection {
        if let live = current(role), !live.isClosed { return live }
        let made = try await StreamConnection.connect(
            role == .read ? readServer : stream, appends: role == .write, logger: logger)
        // Closed while it connected: ``close()`` closed the connections it found, and this one is
        // not kept either (the actor's last release would otherwise drop it open).
        guard !closed else {
            try? await made.close()
            throw ReplicationError(.closed, stream: stream.stream, "the replicated store was closed")
        }
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
    func drop(_ role: Role, failed: PostgresConnection? = nil) async {
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
    func withConnection<T: Sendable>(
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
                let result = try await body(connection)
                if role == .read { lastFollowingError = nil }
                return result
            } catch {
                let described = StreamConnection.describe(error, role == .read ? readServer : stream)
                // Said by ``lag`` while it is tried again.
                if role == .read, !closed { lastFollowingError = described }
                guard described.isTransient, ContinuousClock.now < deadline else { throw described }
                if described.kind == .connection, let used { await drop(role, failed: used) }
                attempt += 1
                try? await Task.sleep(for: .milliseconds(min(50 * attempt, 1000)))
            }
        }
    }

    // MARK: Failure and closing

    func checkOpen() throws(ReplicationError) {
        if let failure { throw failure }
        if closed { throw ReplicationError(.closed, stream: stream.stream, "the replicated store was closed") }
    }

    /// Stops the replica for good with `error` (logged, thrown by every later call); returns it.
    @discardableResult
    func fail(_ error: ReplicationError) -> ReplicationError {
        if failure == nil {
            failure = error
            logger.error("ReduxStorePostgres: \(error.description)")
        }
        return error
    }

    /// Fails every dispatch still waiting: those queued were never sent; one handed to a
    /// commit may have reached the server.
    func failAll(_ error: ReplicationError) {
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
        // none is left, nothing touches the target (which the caller may free) again. The
        // listener ends too, closing a connection it was opening (bounded by connecting's own
        // timeout, and here by the same).
        let deadline = ContinuousClock.now + StreamConnection.connectTimeout
        while reading > 0 || (listenerRunning && ContinuousClock.now < deadline) {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}
