import Logging
import PostgresNIO

/// A stream as a process finds it when it opens it: a connection to its server (or to the hot
/// standby a follower reads from), the library's tables created or migrated (and, for a writer,
/// the stream's row) — on a standby, which refuses writes, checked instead — and the snapshot to
/// start from. Every statement's wait is bounded, as a replica's are.
///
/// The snapshot to start from is the newest one a second process confirmed (its own hash there
/// was the same) among those every action after which is still stored. With none, a new
/// process trusts no snapshot alone: it starts from version 0 when the stream still holds every
/// action, else from the oldest snapshot it can start from (nothing older is left to check it
/// against: a warning in the log says so), and it compares every snapshot after it on its way.
package struct OpenedStream {
    package let connection: PostgresConnection
    package let schema: StreamSchema
    package let logger: Logger
    /// The start's version and state (canonical JSON text), or 0 and `nil`.
    package let version: UInt64
    package let state: String?

    /// Opens `stream`: what may pass (a lost connection, a server starting up or restarting, a
    /// full connection table: ``ReplicationError/isTransient``) is tried again with back-off,
    /// each attempt logged, until `reconnectTimeout` seconds have passed; the rest is thrown at
    /// once. Every step is safe to repeat.
    /// With `standby`, everything is read from that server (a follower's).
    package static func open(
        _ stream: PostgresStream, writes: Bool, standby: PostgresStream? = nil, reconnectTimeout: Double
    ) async throws(ReplicationError) -> OpenedStream {
        let logger = Logger(label: "ReduxStorePostgres")
        let deadline = deadline(after: reconnectTimeout)
        var attempt = 0
        while true {
            do {
                return try await openOnce(stream, writes: writes, standby: standby, logger: logger)
            } catch where error.isTransient && ContinuousClock.now < deadline {
                attempt += 1
                logger.warning(
                    "ReduxStorePostgres: \(error.description); trying again",
                    metadata: ["stream": .string(stream.stream), "attempt": .stringConvertible(attempt)])
                try? await Task.sleep(for: .milliseconds(min(50 * attempt, 1000)))
            }
        }
    }

    /// The moment `reconnectTimeout` seconds from now.
    private static func deadline(after reconnectTimeout: Double) -> ContinuousClock.Instant {
        ContinuousClock.now.advanced(by: .nanoseconds(Int64(reconnectTimeout * 1e9)))
    }

    /// Runs `attempt`, an opening that starts from the stream's newest snapshot and catches up,
    /// again (logged, after a 20 ms pause) while it fails because the versions after the snapshot
    /// it started from were trimmed meanwhile, by a writer that stored a newer one, which the next
    /// attempt starts from; until `reconnectTimeout` seconds have passed. Nothing was handed to
    /// the program yet, so nothing of a failed attempt is seen. `trimmed` reads the
    /// ``ReplicationError`` of a failure that may be a trim, if any.
    package static func startingAgainAfterTrims<T, Failure: Error>(
        reconnectTimeout: Double, trimmed: (Failure) -> ReplicationError?,
        _ attempt: () async throws(Failure) -> T
    ) async throws(Failure) -> T {
        let deadline = deadline(after: reconnectTimeout)
        while true {
            do {
                return try await attempt()
            } catch {
                guard let trim = trimmed(error), trim.kind == .trimmed, ContinuousClock.now < deadline else {
                    throw error
                }
                Logger(label: "ReduxStorePostgres").notice(
                    "ReduxStorePostgres: \(trim.description); opening again from the newest snapshot",
                    metadata: ["stream": .string(trim.stream)])
                // A pause, so that a stream that stays trimmed is not asked without a break.
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    private static func openOnce(
        _ stream: PostgresStream, writes: Bool, standby: PostgresStream?, logger: Logger
    ) async throws(ReplicationError) -> OpenedStream {
        let schema = StreamSchema(stream.schema)
        // The first connection becomes the replica's appending one (on a standby: its reading one).
        let server = standby ?? stream
        let connection = try await StreamConnection.connect(server, appends: standby == nil, logger: logger)
        do {
            if standby == nil {
                try await schema.migrate(connection, logger: logger)
            } else {
                try await schema.checkVersion(connection, logger: logger)
            }
            if writes { _ = try await connection.rows(schema.createStream(stream.stream), logger: logger) }
            let version = try await start(stream, schema: schema, on: connection, logger: logger)
            var state: String?
            if version > 0 {
                for row in try await connection.rows(schema.snapshotState(stream.stream, version: version), logger: logger) {
                    state = try row.decode(String.self)
                }
            }
            return OpenedStream(
                connection: connection, schema: schema, logger: logger, version: state == nil ? 0 : version, state: state)
        } catch {
            try? await connection.close()
            throw StreamConnection.describe(error, server)
        }
    }

    /// The version to start from (see the type's documentation): a snapshot's, or 0.
    private static func start(
        _ stream: PostgresStream, schema: StreamSchema, on connection: PostgresConnection, logger: Logger
    ) async throws -> UInt64 {
        var head: UInt64 = 0
        var oldest: UInt64 = 0
        for row in try await connection.rows(schema.extent(stream.stream), logger: logger) {
            let (h, o) = try row.decode((Int64, Int64).self)
            (head, oldest) = (UInt64(h), UInt64(o))
        }
        var snapshots: [(version: UInt64, confirmed: Bool)] = []
        for row in try await connection.rows(schema.snapshots(stream.stream), logger: logger) {
            let (version, confirmed) = try row.decode((Int64, Bool).self)
            snapshots.append((UInt64(version), confirmed))
        }
        // Whether every action after `version` is still stored.
        func complete(after version: UInt64) -> Bool { version >= head || (oldest != 0 && oldest <= version + 1) }
        if let confirmed = snapshots.first(where: { $0.confirmed && complete(after: $0.version) }) {
            return confirmed.version
        }
        if complete(after: 0) { return 0 }
        guard let oldestUsable = snapshots.last(where: { complete(after: $0.version) }) else {
            // Nothing to start from: the newest, whose tail reading then reports the gap.
            return snapshots.first?.version ?? 0
        }
        logger.warning(
            "ReduxStorePostgres: starting from the snapshot at version \(oldestUsable.version), which no second process confirmed yet: the actions before it were trimmed, so nothing older can check it",
            metadata: ["stream": .string(stream.stream)])
        return oldestUsable.version
    }
}
