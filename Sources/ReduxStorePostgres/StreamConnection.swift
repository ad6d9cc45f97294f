import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Synchronization

/// Opening connections to a stream's server, and saying in words what went wrong with one —
/// never with the password.
enum StreamConnection {
    /// Connects to the stream's server.
    static func connect(_ stream: PostgresStream, logger: Logger) async throws(ReplicationError) -> PostgresConnection {
        let configuration: PostgresConnection.Configuration
        do {
            configuration = try makeConfiguration(stream)
        } catch {
            throw ReplicationError(.invalidArgument, stream: stream.stream, "TLS could not be set up: \(error)")
        }
        // The whole of it within a bound: postgres-nio's connectTimeout covers the TCP connect
        // only, and a server that ends the session during its start-up may leave it waiting.
        let made: PostgresConnection?
        do {
            made = try await withThrowingTaskGroup(of: PostgresConnection?.self) { group in
                group.addTask {
                    try await PostgresConnection.connect(
                        configuration: configuration, id: connectionIDs.wrappingAdd(1, ordering: .relaxed).oldValue,
                        logger: logger)
                }
                group.addTask {
                    try? await Task.sleep(for: connectTimeout)
                    return nil
                }
                var made: PostgresConnection?
                while let result = try await group.next() {
                    group.cancelAll()
                    if let result { made = result }
                }
                return made
            }
        } catch {
            throw describe(error, stream)
        }
        guard let made else {
            throw ReplicationError(
                .connection, stream: stream.stream,
                "PostgreSQL at \(stream.serverDescription) did not complete the connection within \(connectTimeout)")
        }
        return made
    }

    /// How long one statement may take before its connection counts as lost.
    static let queryTimeout = Duration.seconds(10)

    /// How long the server lets a statement wait for a lock (`lock_timeout`).
    static let lockTimeout = Duration.seconds(5)

    /// How long the server lets a statement run (`statement_timeout`): less than
    /// ``queryTimeout``, so that the server ends a statement before its client gives up on it.
    static let statementTimeout = Duration.seconds(9)

    /// How long the server keeps a session that sits idle inside a transaction
    /// (`idle_in_transaction_session_timeout`): only opening a stream (its migration) spans
    /// round trips inside one.
    static let idleInTransactionTimeout = Duration.seconds(10)

    /// How long connecting (TCP, TLS, authentication) may take.
    static let connectTimeout = Duration.seconds(15)

    /// Connection ids, for postgres-nio's logs.
    private static let connectionIDs = Atomic<Int>(0)

    private static func makeConfiguration(_ stream: PostgresStream) throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if stream.host.hasPrefix("/") {
            configuration = .init(
                unixSocketPath: stream.host + "/.s.PGSQL.\(stream.port)", username: stream.user,
                password: stream.password, database: stream.database)
        } else {
            let tls: PostgresConnection.Configuration.TLS
            switch stream.tls {
            case .disable:
                tls = .disable
            case .prefer, .require:
                // libpq's prefer and require: encrypted, the certificate not checked.
                var settings = TLSConfiguration.makeClientConfiguration()
                settings.certificateVerification = .none
                let context = try NIOSSLContext(configuration: settings)
                tls = stream.tls == .prefer ? .prefer(context) : .require(context)
            case .verifyCA:
                var settings = TLSConfiguration.makeClientConfiguration()
                settings.certificateVerification = .noHostnameVerification
                tls = .require(try NIOSSLContext(configuration: settings))
            case .verifyFull:
                tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
            configuration = .init(
                host: stream.host, port: stream.port, username: stream.user, password: stream.password,
                database: stream.database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(10)
        // The server bounds every session too: a statement waits at most `lockTimeout` for a
        // lock and runs at most `statementTimeout` (so a statement whose client gave up does not
        // run on), and a session idle inside a transaction (its client stopped) is ended.
        configuration.options.additionalStartupParameters = [
            ("lock_timeout", "\(Int(lockTimeout.seconds * 1000))ms"),
            ("statement_timeout", "\(Int(statementTimeout.seconds * 1000))ms"),
            ("idle_in_transaction_session_timeout", "\(Int(idleInTransactionTimeout.seconds * 1000))ms"),
        ]
        return configuration
    }

    /// Whether `error` means the connection is gone (the server stopped, restarted or ended the
    /// session, the network failed): a new connection may succeed where this one failed.
    static func isConnectionLoss(_ error: any Error) -> Bool {
        if let error = error as? ReplicationError { return error.kind == .connection }
        guard let error = error as? PSQLError else { return error is ChannelError || error is IOError }
        switch error.code {
        case .serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown:
            return true
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            // 08: connection exceptions; 57P01-57P03: the server is shutting down or starting.
            return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03"
        default:
            return false
        }
    }

    /// Whether `error` may not happen again if the same call is made soon: a lost connection,
    /// or a server error of SQLSTATE class 53 (insufficient resources: too many connections),
    /// class 40 (serialization failure, deadlock), 55P03 (lock timeout) or 57014 (a statement
    /// cancelled by its timeout).
    static func isTransient(_ error: any Error) -> Bool {
        if let error = error as? ReplicationError { return error.isTransient }
        if isConnectionLoss(error) { return true }
        guard let error = error as? PSQLError, error.code == .server else { return false }
        let state = error.serverInfo?[.sqlState] ?? ""
        return state.hasPrefix("53") || state.hasPrefix("40") || state == "55P03" || state == "57014"
    }

    /// `error` as a ``ReplicationError`` naming the stream and the server, without the password.
    static func describe(_ error: any Error, _ stream: PostgresStream) -> ReplicationError {
        if let error = error as? ReplicationError { return error.naming(stream: stream.stream) }
        let place = "PostgreSQL at \(stream.serverDescription)"
        guard let error = error as? PSQLError else {
            return ReplicationError(.connection, stream: stream.stream, "\(place): \(error)")
        }
        switch error.code {
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            let message = error.serverInfo?[.message] ?? "an error"
            if state == "28P01" || state == "28000" {
                return ReplicationError(
                    .authentication, stream: stream.stream,
                    "\(place) refused user \"\(stream.user)\": \(message) (SQLSTATE \(state))")
            }
            if isConnectionLoss(error) {
                return ReplicationError(
                    .connection, stream: stream.stream, "\(place) ended the connection: \(message) (SQLSTATE \(state))")
            }
            return ReplicationError(
                .server, stream: stream.stream, "\(place): \(message) (SQLSTATE \(state))", transient: isTransient(error))
        case .connectionError:
            let reason = error.underlying.map { "\($0)" } ?? "no answer"
            return ReplicationError(.connection, stream: stream.stream, "cannot reach \(place): \(reason)")
        case .authMechanismRequiresPassword:
            return ReplicationError(
                .authentication, stream: stream.stream,
                "\(place) asks user \"\(stream.user)\" for a password and none was given (connection string or PGPASSWORD)")
        case .unsupportedAuthMechanism, .saslError:
            return ReplicationError(
                .authentication, stream: stream.stream, "\(place): authentication of user \"\(stream.user)\" failed (\(error.code))")
        case .sslUnsupported:
            return ReplicationError(
                .connection, stream: stream.stream, "\(place) does not offer TLS, which sslmode=\(stream.tls.rawValue) requires")
        default:
            return ReplicationError(.connection, stream: stream.stream, "\(place): the connection failed (\(error.code))")
        }
    }
}

