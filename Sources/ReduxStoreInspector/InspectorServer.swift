import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import ReduxStore
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#endif

/// The inspector's HTTP server: the page at `/`, its WebSocket at `/ws`, both behind the token,
/// the `Host` check and (for the WebSocket) the `Origin` check.
final class InspectorServer: Sendable {
    let port: Int
    private let inspected: InspectedStore
    private let group: ServiceGroup
    private let running: NIOLockedValueBox<Task<Void, Never>?>
    /// Signalled when the server's task ends.
    private let finished: Completion
    private let sessions: SessionRegistry
    /// The connections open; at most `connections.limit`.
    let connections: ConnectionRegistry

    private init(
        port: Int, inspected: InspectedStore, group: ServiceGroup, running: Task<Void, Never>, finished: Completion,
        sessions: SessionRegistry, connections: ConnectionRegistry
    ) {
        self.port = port
        self.inspected = inspected
        self.group = group
        self.running = NIOLockedValueBox(running)
        self.finished = finished
        self.sessions = sessions
        self.connections = connections
    }

    static func start(
        inspected: InspectedStore, options: InspectorOptions, token: String
    ) async throws(StoreError) -> InspectorServer {
        let sessions = SessionRegistry()
        let gate = RequestGate(token: token, address: NIOLockedValueBox(nil))
        var logger = Logger(label: "ReduxStoreInspector")
        logger.logLevel = .critical

        let router = Router()
        // First, for every request, whatever its path or method: the checks in the documented
        // order (Host, token, and for `/ws` Origin), then the route, or 404.
        router.add(middleware: RequestCheck(gate: gate))
        router.get("/") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [
                    .contentType: "text/html; charset=utf-8",
                    .cacheControl: "no-store",
                    // Nothing from any other address: the page is self-contained.
                    .contentSecurityPolicy:
                        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                        + "connect-src 'self'; img-src data:; frame-ancestors 'none'",
                    .init("Referrer-Policy")!: "no-referrer",
                ],
                body: .init(byteBuffer: ByteBuffer(bytes: InspectorPage.html)))
        }
        // Reached when the request asked for no upgrade (the checks passed).
        router.get("/ws") { _, _ -> Response in
            if inspected.clientCount >= options.maximumClients {
                throw HTTPError(.tooManyRequests, message: "at most \(options.maximumClients) pages at once")
            }
            throw HTTPError(.badRequest, message: "a WebSocket upgrade is expected here")
        }

        let bound = AsyncStream<Int>.makeStream()
        let connections = ConnectionRegistry(limit: ConnectionBounds.maximumConnections())
        let shouldUpgrade: @Sendable (HTTPRequest, any Channel, Logger) throws
            -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> = { head, channel, _ in
                // Runs on the connection's event loop, before the upgrade. An upgrade request for
                // any path is checked as every request is (Host, token, Origin), then its path.
                let path = head.path ?? ""
                let webSocket = path == "/ws" || path.hasPrefix("/ws?")
                do {
                    try gate.check(path: path, authority: head.authority, headers: head.headerFields, webSocket: webSocket)
                    guard webSocket else { throw HTTPError(.notFound, message: "no such page") }
                    guard inspected.clientCount < options.maximumClients else {
                        throw HTTPError(.tooManyRequests, message: "at most \(options.maximumClients) pages at once")
                    }
                } catch let error as HTTPError {
                    RefusedUpgrade.respond(on: channel, status: error.status, message: error.body ?? "")
                    return .dontUpgrade
                }
                sessions.upgrading(channel)
                return .upgrade([:]) { inbound, outbound, _ in
                    let session = InspectorSession(inspected: inspected, outbound: outbound)
                    try await sessions.run(session, on: channel, inbound: inbound)
                }
            }
        // The bounds of ConnectionBounds, in Hummingbird's and SwiftNIO's own settings where they
        // have one: the idle timeout, the header limits, the WebSocket close handshake.
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(
                additionalChannelHandlers: [RequestBodyRefusal()],
                idleTimeout: options.connectionBounds.keepAliveIdle,
                httpDecoderConfiguration: .init(
                    maxHeaderFieldSize: ConnectionBounds.maximumHeaderField,
                    maxHeaderListSize: ConnectionBounds.maximumHeaderList,
                    maxHeaderFieldCount: ConnectionBounds.maximumHeaderCount)),
            // maxFrameSize: the longest frame taken, and the size the writer cuts a longer message
            // into (fragments); validateUTF8: a text message that is not UTF-8 is closed with 1007
            // rather than read with U+FFFD in place of its bad bytes.
            ws: .init(
                maxFrameSize: InspectorSession.maximumMessageSize, closeTimeout: ConnectionBounds.webSocketClose,
                validateUTF8: true))
        let server = HTTPServerBuilder { responder in
            GuardedChannel(
                base: HTTP1WebSocketUpgradeChannel(
                    responder: { request, writer, channel in
                        // Only the page keeps its connection: any other answer (a refusal, 404,
                        // 405) is the connection's last (Hummingbird closes it once written).
                        if request.uri.path != "/" || request.method != .get
                            || (try? gate.check(request, webSocket: false)) == nil {
                            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
                        }
                        try await responder(request, writer, channel)
                    },
                    configuration: configuration, shouldUpgrade: shouldUpgrade),
                connections: connections, bounds: options.connectionBounds)
        }
        let app = Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(options.host, port: options.port), serverName: nil),
            onServerRunning: { channel in
                bound.continuation.yield(channel.localAddress?.port ?? -1)
                bound.continuation.finish()
            },
            logger: logger)
        let group = ServiceGroup(
            configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let failure = NIOLockedValueBox<(any Error)?>(nil)
        let finished = Completion()
        let running = Task {
            do {
                try await group.run()
            } catch {
                failure.withLockedValue { $0 = error }
            }
            bound.continuation.finish()
            finished.signal()
        }
        var port: Int?
        for await value in bound.stream { port = value }
        guard let port, port > 0 else {
            running.cancel()
            await running.value
            inspected.detach()
            let reason = failure.withLockedValue { $0 }.map { "\($0)" } ?? "the server did not start"
            throw StoreError(.io, "inspector: cannot listen on \(options.host):\(options.port): \(reason)")
        }
        gate.address.withLockedValue { $0 = AddressCheck(host: options.host, port: port) }
        return InspectorServer(
            port: port, inspected: inspected, group: group, running: running, finished: finished, sessions: sessions,
            connections: connections)
    }

    /// Stops within ``ConnectionBounds/stop`` whatever the clients do: the pages are sent their
    /// close frame (1001, "the inspector stopped"); the server stops listening and closes the
    /// connections that have no request in progress, the others once answered; what is left after
    /// ``ConnectionBounds/stopGraceful`` (a client that reads nothing, a page that does not
    /// answer the close) is closed.
    func stop() async {
        guard let running = running.withLockedValue({ task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }) else { return }
        connections.refuseNew()
        await sessions.closeAll(within: ConnectionBounds.stopPages)
        await group.triggerGracefulShutdown()
        if await !finished.wait(for: ConnectionBounds.stopGraceful) {
            connections.closeAll()
            if await !finished.wait(for: ConnectionBounds.stopForced) {
                // Every connection is closed: what still runs is cancelled.
                running.cancel()
                _ = await finished.wait(for: .seconds(1))
            }
        }
        inspected.detach()
    }
}

/// The hosts a request may name: the address served (and, on loopback, `localhost`). Served on
/// every address (`0.0.0.0`, `::`), any IP address literal with the port is allowed too, and
/// `localhost`: the machine's own addresses are not known in advance, and an IP literal cannot
/// be a rebound DNS name.
struct AddressCheck: Sendable {
    let hosts: Set<String>
    let port: Int
    let wildcard: Bool

    init(host: String, port: Int) {
        var names: Set<String> = []
        let bracketed = host.contains(":") ? "[\(host)]" : host
        names.insert("\(bracketed):\(port)")
        wildcard = host == "0.0.0.0" || host == "::"
        if host == "127.0.0.1" || host == "::1" || host == "localhost" || wildcard {
            names.insert("localhost:\(port)")
            names.insert("127.0.0.1:\(port)")
            names.insert("[::1]:\(port)")
        }
        hosts = names.union(names.map { $0.lowercased() })
        self.port = port
    }

    /// Whether `authority` (a `Host` header, or an `Origin`'s host and port) names this address.
    func allows(_ authority: String) -> Bool {
        let lowered = authority.lowercased()
        if hosts.contains(lowered) { return true }
        guard wildcard, lowered.hasSuffix(":\(port)") else { return false }
        var name = String(lowered.dropLast(":\(port)".count))
        if name.hasPrefix("["), name.hasSuffix("]") {
            name = String(name.dropFirst().dropLast())
            var address = in6_addr()
            return inet_pton(AF_INET6, name, &address) == 1
        }
        var address = in_addr()
        return inet_pton(AF_INET, name, &address) == 1
    }
}

/// The checks every request passes: the token, the `Host` header, and for a WebSocket upgrade
/// the `Origin` header.
final class RequestGate: Sendable {
    let token: String
    /// Set once the port is known (before the first request can arrive).
    let address: NIOLockedValueBox<AddressCheck?>

    init(token: String, address: NIOLockedValueBox<AddressCheck?>) {
        self.token = token
        self.address = address
    }

    func check(_ request: Request, webSocket: Bool) throws {
        try check(path: request.head.path ?? "", authority: request.head.authority, headers: request.headers, webSocket: webSocket)
    }

    func check(path: String, authority: String?, headers: HTTPFields, webSocket: Bool) throws {
        let allowed = address.withLockedValue { $0 }
        // One Host header (RFC 9112, 3.2): the first is the request's authority, the others stay
        // among its fields. Two are refused before anything else is looked at.
        if headers.contains(where: { $0.name.canonicalName == "host" }) {
            throw HTTPError(.badRequest, message: "a request names one Host, not several")
        }
        // Host first: a request for another name (DNS rebinding) learns nothing, not even
        // whether its token was right.
        guard let host = authority, let allowed, allowed.allows(host) else {
            throw HTTPError(.forbidden, message: "Host is not the address this inspector serves")
        }
        let query = URI(path).queryParameters.get("token")
        var bearer: Substring?
        // The scheme's name in any case (RFC 9110, 11.1).
        if let authorization = headers[.authorization], authorization.prefix(7).lowercased() == "bearer " {
            bearer = authorization.dropFirst("Bearer ".count)
        }
        guard InspectorToken.matches(query.map { Substring($0) }, token) || InspectorToken.matches(bearer, token) else {
            throw HTTPError(.unauthorized, message: "a token is required: open the address the program printed")
        }
        if webSocket, let origin = headers[.origin] {
            // A browser says where the page that opens the WebSocket came from (http:, https:, or
            // null for a file or a sandboxed page): only this inspector's own page may. Other
            // clients (a terminal tool) send no Origin, or their own scheme, and need the token.
            let lowered = origin.lowercased()
            let fromBrowser = lowered == "null" || lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
            if fromBrowser {
                guard lowered.hasPrefix("http://"), allowed.allows(String(lowered.dropFirst(7))) else {
                    throw HTTPError(.forbidden, message: "Origin \(origin) is not this inspector's page")
                }
            }
        }
    }
}

/// Every request's checks (``RequestGate``), before its route is looked for: a request for an
/// unknown path learns nothing before its `Host` and token are checked.
struct RequestCheck: RouterMiddleware {
    typealias Context = BasicRequestContext
    let gate: RequestGate

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let path = request.uri.path
        try gate.check(request, webSocket: path == "/ws")
        // Exactly two paths exist: Hummingbird's router would also take `/ws/` for `/ws`.
        guard path == "/" || path == "/ws" else { throw HTTPError(.notFound, message: "no such page") }
        // And one method, which the router would answer for any other with an empty 404.
        guard request.method == .get else {
            throw HTTPError(
                .methodNotAllowed, headers: [.allow: "GET"],
                message: "\(request.method) is not served here: the page and its WebSocket are read with GET")
        }
        return try await next(request, context)
    }
}

/// The pages connected, and those being upgraded, so that a stop closes every one with 1001: a
/// page whose upgrade was answered but whose session has not started yet is closed as its session
/// starts, before the server's shutdown would close it with 1000.
final class SessionRegistry: Sendable {
    private struct State {
        var sessions: [ObjectIdentifier: InspectorSession] = [:]
        /// Connections answered 101 (or about to be) whose session has not started.
        var upgrading: Set<ObjectIdentifier> = []
        var closing = false
    }
    private let state = NIOLockedValueBox(State())

    /// `channel` is to become a page: counted until its session starts or it closes.
    func upgrading(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        state.withLockedValue { _ = $0.upgrading.insert(id) }
        channel.closeFuture.whenComplete { _ in
            _ = self.state.withLockedValue { $0.upgrading.remove(id) }
        }
    }

    func run(_ session: InspectorSession, on channel: any Channel, inbound: WebSocketInboundStream) async throws {
        let closing = state.withLockedValue { state -> Bool in
            state.upgrading.remove(ObjectIdentifier(channel))
            if !state.closing { state.sessions[ObjectIdentifier(session)] = session }
            return state.closing
        }
        if closing {
            // The inspector is stopping: the page hears why at once.
            await session.close()
            return
        }
        defer { _ = state.withLockedValue { $0.sessions.removeValue(forKey: ObjectIdentifier(session)) } }
        try await session.run(inbound: inbound)
    }

    /// Sends each page its close frame, all at once, and those whose session starts meanwhile
    /// theirs as they start; waits for them for at most `limit` (a page that reads nothing takes
    /// none; its connection is closed after).
    func closeAll(within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        let open = state.withLockedValue { state -> [InspectorSession] in
            state.closing = true
            return Array(state.sessions.values)
        }
        if !open.isEmpty {
            let closed = Completion()
            Task {
                await withTaskGroup(of: Void.self) { group in
                    for session in open { group.addTask { await session.close() } }
                }
                closed.signal()
            }
            _ = await closed.wait(for: limit)
        }
        // The upgrades in progress: each session closes itself as it starts.
        while state.withLockedValue({ !$0.upgrading.isEmpty }), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}

/// The answer to a WebSocket upgrade the inspector refuses: the status and its reason, where the
/// WebSocket module would answer every refusal with an empty 400. Written on the connection's
/// event loop, before the HTTP/1 pipeline would have answered, then the connection is closed.
enum RefusedUpgrade {
    static func respond(on channel: any Channel, status: HTTPResponse.Status, message: String) {
        let body = ByteBuffer(string: message + "\n")
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        headers.add(name: "Connection", value: "close")
        let head = HTTPResponseHead(
            version: .http1_1, status: .init(statusCode: status.code, reasonPhrase: status.reasonPhrase), headers: headers)
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(body)), promise: nil)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
    }
}
