import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Opening connections to a stream's server, and saying in words what went wrong with one —
/// never with the password.
enum StreamConnection {
    /// Connects to the stream's server: a channel of its own, with a ``ReadCompleteGuard`` first
    /// in its pipeline, handed to postgres-nio. With `appends`, the session is one that commits
    /// appends: the server sets it no ``statementTimeout`` (see ``sessionSettings(appends:)``).
    static func connect(
        _ stream: PostgresStream, appends: Bool = false, logger: Logger
    ) async throws(ReplicationError) -> PostgresConnection {
        let tls: PostgresConnection.Configuration.TLS
        do {
            tls = try makeTLS(stream)
        } catch let error as ReplicationError {
            throw error
        } catch {
            let what = stream.trustedRoots.map { "sslrootcert \($0) holds no PEM certificate that can be used" } ?? "\(error)"
            throw ReplicationError(.invalidArgument, stream: stream.stream, "TLS could not be set up: \(what)")
        }
        // The whole of it within a bound: the TCP connect has its own, and a server that ends the
        // session during its start-up may leave the rest waiting.
        let made: PostgresConnection?
        do {
            made = try await withThrowingTaskGroup(of: PostgresConnection?.self) { group in
                group.addTask { try await connectChannel(stream, tls: tls, appends: appends, logger: logger) }
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

    /// Opens the socket (TCP or the server's Unix socket), then the session over it.
    private static func connectChannel(
        _ stream: PostgresStream, tls: PostgresConnection.Configuration.TLS, appends: Bool, logger: Logger
    ) async throws -> PostgresConnection {
        let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ReadCompleteGuard(), position: .first)
                }
            }
        let channel = stream.host.hasPrefix("/")
            ? try await bootstrap.connect(unixDomainSocketPath: stream.host + "/.s.PGSQL.\(stream.port)").get()
            : try await bootstrap.connect(host: stream.host, port: stream.port).get()
        var configuration = PostgresConnection.Configuration(
            establishedChannel: channel, tls: tls, username: stream.user, password: stream.password,
            database: stream.database)
        // The name the certificate is checked against (and sent as SNI), as postgres-nio sets it
        // for a host it connects to itself: none for an IP address.
        if !stream.host.hasPrefix("/"), (try? SocketAddress(ipAddress: stream.host, port: 0)) == nil {
            configuration.options.tlsServerName = stream.host
        }
        configuration.options.additionalStartupParameters = sessionSettings(appends: appends)
        if let name = stream.applicationName {
            configuration.options.additionalStartupParameters.append(("application_name", name))
        }
        do {
            return try await PostgresConnection.connect(
                on: channel.eventLoop, configuration: configuration,
                id: connectionIDs.wrappingAdd(1, ordering: .relaxed).oldValue, logger: logger
            ).get()
        } catch {
            try? await channel.close()
            throw error
        }
    }

    /// What every session asks of the server, in its start-up packet (where a role's or a
    /// database's settings cannot override it): a statement waits at most ``lockTimeout`` for a
    /// lock; a session idle inside a transaction (its client stopped) is ended after
    /// ``idleInTransactionTimeout``; a statement runs at most ``statementTimeout``, so that one
    /// whose client gave up does not run on — except on the session that commits appends. There
    /// the timeout would cut off a commit's wait for a synchronous standby, and PostgreSQL
    /// answers such a commit as done, with a warning, though it is not replicated: so an append
    /// waits as long as its standbys take, its lock waits still bounded, and this process gives
    /// up on the answer after ``queryTimeout`` and asks again (the procedure answers a repeated
    /// request only once the first one is safe).
    static func sessionSettings(appends: Bool) -> [(String, String)] {
        [
            ("lock_timeout", "\(Int(lockTimeout.seconds * 1000))ms"),
            ("statement_timeout", appends ? "0" : "\(Int(statementTimeout.seconds * 1000))ms"),
            ("idle_in_transaction_session_timeout", "\(Int(idleInTransactionTimeout.seconds * 1000))ms"),
        ]
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

    /// The TLS the stream's `sslmode` asks for.
    private static func makeTLS(_ stream: PostgresStream) throws -> PostgresConnection.Configuration.TLS {
        // The server's Unix socket: no TLS, as libpq.
        if stream.host.hasPrefix("/") { return .disable }
        switch stream.tls {
        case .disable:
            return .disable
        case .prefer, .require:
            // libpq's prefer and require: encrypted, the certificate not checked.
            var settings = TLSConfiguration.makeClientConfiguration()
            settings.certificateVerification = .none
            let context = try NIOSSLContext(configuration: settings)
            return stream.tls == .prefer ? .prefer(context) : .require(context)
        case .verifyCA, .verifyFull:
            var settings = TLSConfiguration.makeClientConfiguration()
            if stream.tls == .verifyCA { settings.certificateVerification = .noHostnameVerification }
            if let roots = stream.trustedRoots {
                guard access(roots, R_OK) == 0 else {
                    throw ReplicationError(
                        .invalidArgument, stream: stream.stream, "sslrootcert \(roots) cannot be read: \(String(cString: strerror(errno)))")
                }
                settings.trustRoots = .file(roots)
            }
            return .require(try NIOSSLContext(configuration: settings))
        }
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
        if let failure = tlsFailure(error, stream) { return failure }
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
            if state == "25006" {
                return ReplicationError(
                    .server, stream: stream.stream,
                    "\(place) is read-only (a hot standby?): \(message) (SQLSTATE \(state)); a writer opens the stream on the primary, and a follower reads a standby through its standby option (ReplicationOptions.standbyConnection; in C, rdx_stream_options.standby)",
                    transient: false)
            }
            return ReplicationError(
                .server, stream: stream.stream, "\(place): \(message) (SQLSTATE \(state))", transient: isTransient(error))
        case .connectionError:
            if let underlying = error.underlying, let failure = tlsFailure(underlying, stream) { return failure }
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
                .connection, stream: stream.stream,
                "\(place) does not offer TLS, which sslmode=\(stream.tls.rawValue) requires", transient: false)
        default:
            return ReplicationError(.connection, stream: stream.stream, "\(place): the connection failed (\(error.code))")
        }
    }

    /// A failed TLS handshake as a ``ReplicationError`` that is not transient: the server's
    /// certificate or TLS settings do not change when the same connection is tried again.
    /// `nil` when `error` is not NIOSSL's.
    private static func tlsFailure(_ error: any Error, _ stream: PostgresStream) -> ReplicationError? {
        let reason: String
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname {
            reason = "its certificate does not name the host \(stream.host) (sslmode=verify-full; verify-ca "
                + "checks the certificate without the name)"
        } else if error is NIOSSLError || error is NIOSSLExtraError {
            if "\(error)".contains("CERTIFICATE_VERIFY_FAILED") {
                let roots = stream.trustedRoots.map { "the certificates in \($0)" } ?? "the system's trusted roots"
                reason = "its certificate was not accepted (sslmode=\(stream.tls.rawValue) checks it against \(roots))"
            } else {
                reason = "the TLS handshake failed (\(error))"
            }
        } else {
            return nil
        }
        return ReplicationError(
            .connection, stream: stream.stream, "cannot connect to PostgreSQL at \(stream.serverDescription): \(reason)",
            transient: false)
    }
}


/// Keeps postgres-nio's row stream from a read-complete event it cannot take. When the server ends
/// a connection while a query's rows stream (a crash, an immediate shutdown), NIO reads what the
/// socket still holds without being asked and signals the read complete; postgres-nio 1.33.2's row
/// stream, waiting for its consumer's demand, then stops the whole process
/// (`RowStreamStateMachine.channelReadComplete`: "How can we receive a body part, after a
/// channelReadComplete, but no read has been forwarded yet"), where it should fail the query.
/// First in the pipeline, this handler passes a read-complete event on only when the handlers
/// after it asked for a read and data came since the last one it passed; the event it holds back
/// is one they would have ignored, or stopped the process on. The connection's end follows, and
/// fails the query, which the replica tries again.
final class ReadCompleteGuard: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var readAsked = false
    private var dataCame = false

    func read(context: ChannelHandlerContext) {
        readAsked = true
        context.read()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        dataCame = true
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard readAsked, dataCame else { return }
        readAsked = false
        dataCame = false
        context.fireChannelReadComplete()
    }
}
