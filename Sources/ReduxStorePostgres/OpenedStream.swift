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

    package static func open(_ stream: PostgresStream, writes: Bool) async throws(ReplicationError) -> OpenedStream {
        let logger = Logger(label: "ReduxStorePostgres")
        let schema = StreamSchema(stream.schema)
        let connection = try await StreamConnection.connect(stream, logger: logger)
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
