import Logging
import PostgresNIO

/// A stream as a process finds it when it opens it: a connection to its server, the library's
/// tables created or migrated (and, for a writer, the stream's row), and the newest snapshot.
/// Every statement's wait is bounded, as a replica's are.
package struct OpenedStream {
    package let connection: PostgresConnection
    package let schema: StreamSchema
    package let logger: Logger
    /// The newest snapshot's version and state (canonical JSON text), or 0 and `nil`.
    package let version: UInt64
    package let state: String?

    /// Opens `stream`: what may pass (a lost connection, a server starting up or restarting, a
    /// full connection table: ``ReplicationError/isTransient``) is tried again with back-off,
    /// each attempt logged, until `reconnectTimeout` seconds have passed; the rest is thrown at
    /// once. Every step is safe to repeat.
    package static func open(
        _ stream: PostgresStream, writes: Bool, reconnectTimeout: Double
    ) async throws(ReplicationError) -> OpenedStream {
        let logger = Logger(label: "ReduxStorePostgres")
        let deadline = ContinuousClock.now.advanced(by: .nanoseconds(Int64(reconnectTimeout * 1e9)))
        var attempt = 0
        while true {
            do {
                return try await openOnce(stream, writes: writes, logger: logger)
            } catch where error.isTransient && ContinuousClock.now < deadline {
                attempt += 1
                logger.warning(
                    "ReduxStorePostgres: \(error.description); trying again",
                    metadata: ["stream": .string(stream.stream), "attempt": .stringConvertible(attempt)])
                try? await Task.sleep(for: .milliseconds(min(50 * attempt, 1000)))
            }
        }
    }

    private static func openOnce(
        _ stream: PostgresStream, writes: Bool, logger: Logger
    ) async throws(ReplicationError) -> OpenedStream {
        let schema = StreamSchema(stream.schema)
        // The first connection becomes the replica's appending one.
        let connection = try await StreamConnection.connect(stream, appends: true, logger: logger)
        do {
            try await schema.migrate(connection, logger: logger)
            if writes { _ = try await connection.rows(schema.createStream(stream.stream), logger: logger) }
            var newest: (UInt64, String?) = (0, nil)
            for row in try await connection.rows(schema.newestSnapshot(stream.stream), logger: logger) {
                let (version, state) = try row.decode((Int64, String).self)
                newest = (UInt64(version), state)
            }
            return OpenedStream(
                connection: connection, schema: schema, logger: logger, version: newest.0, state: newest.1)
        } catch {
            try? await connection.close()
            throw StreamConnection.describe(error, stream)
        }
    }
}
