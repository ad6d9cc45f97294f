import HTTPTypes
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// The bounds every connection to the inspector is held to: however a client behaves (it sends
/// nothing, half a request, a malformed one, or stops reading), its connection is answered or
/// closed within them, and ``InspectorServer/stop()`` returns within ``stop``. The DocC article
/// "The inspector's protocol" ("Connections") and `reduxstore_inspector.h` document them.
package enum ConnectionBounds {
    /// A connection's first request head must have arrived within this of its opening: past it,
    /// a connection that sent nothing is closed, one that sent part of a head is answered 408.
    package static let requestHead = TimeAmount.seconds(10)
    /// A connection with no request in progress is closed this long after its last answer
    /// (Hummingbird's idle timeout): the next request's head must have arrived by then.
    package static let keepAliveIdle = TimeAmount.seconds(15)
    /// A connection whose answer or changes have not moved for this long (the client reads
    /// nothing: the socket's buffers are full) is closed, WebSocket pages included.
    package static let stalledSend = TimeAmount.seconds(30)
    /// After a refusal the answer is the connection's last bytes: its sending side is closed at
    /// once, and what the client still sends is read and dropped for at most this, so that the
    /// answer is not lost to a reset, then the connection is closed.
    package static let linger = TimeAmount.seconds(1)
    /// The longest request line (method, target, version): past it, 414.
    package static let maximumRequestLine = 8 * 1_024
    /// The longest header field (name or value), past it 431 (SwiftNIO's decoder).
    package static let maximumHeaderField = 16 * 1_024
    /// The most bytes of header fields in one request, past it 431 (SwiftNIO's decoder).
    package static let maximumHeaderList = 32 * 1_024
    /// The most header fields in one request, past it 431 (SwiftNIO's decoder).
    package static let maximumHeaderCount = 100
    /// How long a page has to answer the inspector's close frame (WebSocket close handshake).
    package static let webSocketClose = Duration.seconds(2)
    /// How long `stop` lets the pages take their close frame, then lets the connections end after
    /// the server stops listening, then waits for those it closed: the parts of ``stop``.
    static let stopPages = Duration.seconds(1)
    static let stopGraceful = Duration.seconds(1)
    static let stopForced = Duration.seconds(1)
    /// The most `stop` takes, whatever the clients do (the parts above, and a last second for the
    /// server's tasks after they are cancelled).
    package static let stop = Duration.seconds(5)
    /// The most connections open at once, ever.
    package static let maximumConnectionsEver = 1_024

    /// The most connections open at once for an inspector starting now: half the descriptors the
    /// process has left below its limit (`RLIMIT_NOFILE`'s soft limit less those open), at most
    /// ``maximumConnectionsEver``, at least 4.
    package static func maximumConnections() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 64 }
        let soft = UInt64(limit.rlim_cur)  // RLIM_INFINITY: the largest value
        let open = UInt64(openDescriptors() ?? 64)
        let left = soft > open ? soft - open : 0
        return Int(max(4, min(UInt64(maximumConnectionsEver), left / 2)))
    }

    /// How many descriptors the process has open (the entries of `/proc/self/fd`), or nil.
    package static func openDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { $0.first }
            if name != UInt8(ascii: ".") { count += 1 }
        }
        return count - 1  // the directory's own descriptor
    }
}

/// The connections open, so that there are never more than ``limit`` (a new one past it closes
/// the oldest that has not sent a request head yet, or is refused when every one has: a flood of
/// connections that send nothing never keeps a page from being served), and so that a stop
/// closes every one.
final class ConnectionRegistry: Sendable {
    let limit: Int
    private struct Entry {
        let channel: any Channel
        let order: UInt64
        var started: Bool
    }
    private struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var next: UInt64 = 0
        var closed = false
    }
    private let state = Locked(State())

    init(limit: Int) { self.limit = limit }

    /// Registers `channel`, making room when at the limit; false when it is to be refused.
    func admit(_ channel: any Channel) -> Bool {
        let (admitted, evicted) = state.withLock { state -> (Bool, (any Channel)?) in
            if state.closed { return (false, nil) }
            var evicted: (any Channel)?
            if state.entries.count >= limit {
                var oldest: (key: ObjectIdentifier, order: UInt64)?
                for (key, entry) in state.entries where !entry.started && entry.order < (oldest?.order ?? .max) {
                    oldest = (key, entry.order)
                }
                guard let oldest else { return (false, nil) }
                evicted = state.entries.removeValue(forKey: oldest.key)?.channel
            }
            state.entries[ObjectIdentifier(channel)] = Entry(channel: channel, order: state.next, started: false)
            state.next += 1
            return (true, evicted)
        }
        evicted?.close(promise: nil)
        return admitted
    }

    /// `channel`'s first request head reached the server: it is no longer closed to make room.
    func started(_ channel: any Channel) {
        state.withLock { $0.entries[ObjectIdentifier(channel)]?.started = true }
    }

    func remove(_ channel: any Channel) {
        _ = state.withLock { $0.entries.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    var count: Int { state.withLock { $0.entries.count } }

    /// From now on every new connection is refused.
    func refuseNew() {
        state.withLock { $0.closed = true }
    }

    /// Closes every connection open, and refuses new ones.
    func closeAll() {
        let channels = state.withLock { state -> [any Channel] in
            state.closed = true
            return state.entries.values.map(\.channel)
        }
        for channel in channels { channel.close(promise: nil) }
    }
}

/// The inspector's child channel: Hummingbird's HTTP/1 with the WebSocket upgrade, behind the
/// connection limits (``ConnectionRegistry``) and a ``ConnectionGuard`` on each connection.
struct GuardedChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value
    let base: HTTP1WebSocketUpgradeChannel
    let connections: ConnectionRegistry

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard connections.admit(channel) else {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        let connections = connections
        channel.closeFuture.whenComplete { _ in connections.remove(channel) }
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard { connections.started(channel) })
        } catch {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Last for now: after SwiftNIO's HTTP decoder and the upgrade's handler.
            try channel.pipeline.syncOperations.addHandler(MalformedRequestHandler())
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
        // However its handling ended (an upgrade that failed leaves it open), it ends here.
        value.channel.close(promise: nil)
    }
}

/// First in each connection's pipeline, on its bytes: closes a connection whose first request
/// head does not arrive in time, or whose sending is stalled; refuses a request line that is too
/// long (414); writes a refusal (``refuse(_:reason:)``) as the connection's last bytes; and
/// closes a connection that has not started a request at once when the server stops.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private enum Phase {
        /// The first request head is awaited (the head deadline runs).
        case awaitingRequest
        /// The first head ended; the server decides whether it upgrades.
        case deciding
        /// Plain HTTP/1 requests (Hummingbird's idle timeout runs between them).
        case http
        /// A WebSocket: its bytes are frames, not looked at.
        case webSocket
        /// A refusal was written; what arrives is dropped until the connection closes.
        case refusing
        /// A page sent a frame that is not masked: its close frame (1002) was written, nothing
        /// more is sent, and what arrives is dropped until the connection closes.
        case failedWebSocket
        /// A page's connection is being closed (after its close frame): nothing more is sent,
        /// and what arrives is dropped until the page closes or the linger ends.
        case closingWebSocket

        /// Whether what arrives is read and dropped: the connection's last bytes are written.
        var drops: Bool { self == .refusing || self == .failedWebSocket || self == .closingWebSocket }
    }

    private var phase = Phase.awaitingRequest
    private var context: ChannelHandlerContext?
    /// Called when the first answer starts: the connection is no longer closed to make room.
    private let onStart: @Sendable () -> Void
    private var receivedAny = false
    private var headDeadline: Scheduled<Void>?
    private var stallDeadline: Scheduled<Void>?
    private var lingerDeadline: Scheduled<Void>?
    /// Where the request being received is: its first line ended; the current line has no bytes
    /// yet; the first line's length so far.
    private var requestLineEnded = false
    private var lineIsEmpty = true
    private var requestLineLength = 0
    /// The client's WebSocket frames, followed from the first request head's end (the frames a
    /// client sends right behind its upgrade request included), while the upgrade is decided
    /// and after it.
    private var frames = ClientFrameScanner()
    /// A frame that is not masked came while the upgrade was being decided: the connection is
    /// failed as soon as it becomes a WebSocket.
    private var unmaskedBeforeUpgrade = false

    init(onStart: @escaping @Sendable () -> Void) {
        self.onStart = onStart
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { armHeadDeadline(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelDeadlines()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        armHeadDeadline(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelDeadlines()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch phase {
        case .refusing, .failedWebSocket, .closingWebSocket:
            return
        case .webSocket:
            if frames.findsUnmaskedFrame(in: unwrapInboundIn(data).readableBytesView) {
                // RFC 6455, 5.1: a server closes the connection on a client frame that is not
                // masked. Neither it nor what follows reaches the page's session.
                failWebSocket()
                return
            }
            context.fireChannelRead(data)
        case .deciding:
            if frames.findsUnmaskedFrame(in: unwrapInboundIn(data).readableBytesView) { unmaskedBeforeUpgrade = true }
            context.fireChannelRead(data)
        case .awaitingRequest, .http:
            let buffer = unwrapInboundIn(data)
            if buffer.readableBytes > 0 { receivedAny = true }
            let wasAwaiting = phase == .awaitingRequest
            let (fits, headEnd) = scan(buffer)
            guard fits else {
                refuse(.uriTooLong, reason: "the request line is longer than \(ConnectionBounds.maximumRequestLine) bytes")
                return
            }
            if wasAwaiting, phase == .deciding, let headEnd,
                frames.findsUnmaskedFrame(in: buffer.readableBytesView[(buffer.readerIndex + headEnd)...])
            {
                unmaskedBeforeUpgrade = true
            }
            context.fireChannelRead(data)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard !phase.drops else {
            // Drained until the client closes or the linger ends.
            context.read()
            return
        }
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            stallDeadline?.cancel()
            stallDeadline = nil
        } else if stallDeadline == nil {
            let channel = context.channel
            stallDeadline = context.eventLoop.scheduleTask(in: ConnectionBounds.stalledSend) {
                if !channel.isWritable { channel.close(promise: nil) }
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            switch phase {
            case .awaitingRequest, .refusing, .failedWebSocket, .closingWebSocket:
                // The server stops: a request whose head has not arrived is not waited for.
                context.close(promise: nil)
                return
            case .deciding, .http, .webSocket:
                // Hummingbird closes it once the request in progress is answered.
                break
            }
        }
        if phase.drops, let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if phase == .failedWebSocket || phase == .closingWebSocket {
            // After the close frame nothing more is sent.
            promise?.fail(ChannelError.outputClosed)
            return
        }
        if phase == .awaitingRequest || phase == .deciding, case .byteBuffer(let bytes) = unwrapOutboundIn(data) {
            // The first answer starts: from now on the connection is Hummingbird's, with its idle
            // timeout, or a WebSocket page's (101).
            headDeadline?.cancel()
            headDeadline = nil
            phase = bytes.readableBytesView.starts(with: "HTTP/1.1 101".utf8) ? .webSocket : .http
            onStart()
            if phase == .webSocket, unmaskedBeforeUpgrade {
                // The 101, then at once the close frame: nothing the page's session writes
                // follows it.
                context.write(data, promise: promise)
                failWebSocket()
                return
            }
        }
        context.write(data, promise: promise)
    }

    /// Closes a page's connection as a lingering close does: the frame written last (the close
    /// frame) is followed by the end of sending, and what the page still sends (the rest of a
    /// message over the limit) is read and dropped until it closes or ``ConnectionBounds/linger``
    /// ends, so that no reset overtakes the close frame. Any other close goes through.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch phase {
        case .webSocket where mode == .all && context.channel.isActive:
            phase = .closingWebSocket
            context.channel.closeFuture.cascade(to: promise)
            endSending(context)
        case .closingWebSocket where mode == .all, .failedWebSocket where mode == .all:
            context.channel.closeFuture.cascade(to: promise)
        default:
            context.close(mode: mode, promise: promise)
        }
    }

    /// Fails a WebSocket whose client sent a frame that is not masked (RFC 6455, 5.1): a close
    /// frame with 1002 (protocol error) as the connection's last bytes, its sending side closed
    /// at once, the connection after ``ConnectionBounds/linger`` (or when the client closes).
    private func failWebSocket() {
        guard let context, phase != .failedWebSocket else { return }
        phase = .failedWebSocket
        let reason = Array("a client's frames must be masked".utf8)
        var frame = ByteBuffer(bytes: [0x88, UInt8(2 + reason.count), 0x03, 0xEA])  // FIN, close; 1002
        frame.writeBytes(reason)
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(frame)), promise: nil)
        endSending(context)
    }

    /// Answers `status` with `reason` as the connection's last bytes, closes its sending side at
    /// once and the connection after ``ConnectionBounds/linger`` (or when the client closes).
    func refuse(_ status: HTTPResponseStatus, reason: String) {
        guard let context, phase != .refusing else { return }
        phase = .refusing
        headDeadline?.cancel()
        headDeadline = nil
        guard context.channel.isActive else { return }
        let body = reason + "\n"
        let head =
            "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nContent-Type: text/plain; charset=utf-8\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(ByteBuffer(string: head + body))), promise: nil)
        endSending(context)
    }

    /// Closes the connection's sending side, drops what the client still sends, and closes the
    /// connection after ``ConnectionBounds/linger`` (or when the client closes).
    private func endSending(_ context: ChannelHandlerContext) {
        context.close(mode: .output, promise: nil)
        // Closed from here, not from the channel's tail: this handler's own `close` would wait.
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        lingerDeadline = context.eventLoop.scheduleTask(in: ConnectionBounds.linger) {
            loopBound.value.context?.close(promise: nil)
        }
        context.read()
    }

    private func armHeadDeadline(_ context: ChannelHandlerContext) {
        guard headDeadline == nil, phase == .awaitingRequest else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        headDeadline = context.eventLoop.scheduleTask(in: ConnectionBounds.requestHead) {
            loopBound.value.headDeadlinePassed()
        }
    }

    private func headDeadlinePassed() {
        headDeadline = nil
        guard phase == .awaitingRequest || phase == .deciding else { return }
        if receivedAny {
            refuse(.requestTimeout, reason: "the request head did not arrive within \(ConnectionBounds.requestHead.nanoseconds / 1_000_000_000) seconds")
        } else {
            context?.close(promise: nil)
        }
    }

    private func cancelDeadlines() {
        for deadline in [headDeadline, stallDeadline, lingerDeadline] { deadline?.cancel() }
        headDeadline = nil
        stallDeadline = nil
        lingerDeadline = nil
    }

    /// Follows the request lines in `buffer`: whether each request line fits, and the offset in
    /// `buffer` just past the first request head's end when it ends in `buffer`. A head
    /// ends at an empty line after its first; empty lines before a request line are skipped (as
    /// SwiftNIO's decoder skips them).
    private func scan(_ buffer: ByteBuffer) -> (fits: Bool, headEnd: Int?) {
        var headEnd: Int?
        for (offset, byte) in buffer.readableBytesView.enumerated() {
            if byte == UInt8(ascii: "\n") {
                if !lineIsEmpty {
                    requestLineEnded = true
                } else if requestLineEnded {
                    // The head's end: the next bytes are a body, the next request, or frames.
                    requestLineEnded = false
                    requestLineLength = 0
                    if phase == .awaitingRequest {
                        phase = .deciding
                        headEnd = offset + 1
                    }
                }
                lineIsEmpty = true
            } else if byte != UInt8(ascii: "\r") {
                lineIsEmpty = false
            }
            if !requestLineEnded {
                requestLineLength += 1
                if requestLineLength > ConnectionBounds.maximumRequestLine { return (false, headEnd) }
            }
        }
        return (true, headEnd)
    }
}

/// Follows a client's WebSocket frames on its bytes (RFC 6455, 5.2), looking at each frame's
/// header only, to find one whose mask bit is not set.
struct ClientFrameScanner {
    /// The current frame's header bytes so far (at most 14).
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to come.
    private var payloadLeft: UInt64 = 0
    /// Once a frame that is not masked was found: nothing more is looked at.
    private(set) var foundUnmasked = false

    /// Follows `bytes`; true when a frame that is not masked begins in them (or did before).
    mutating func findsUnmaskedFrame(in bytes: ByteBufferView) -> Bool {
        guard !foundUnmasked else { return true }
        var index = bytes.startIndex
        while index < bytes.endIndex {
            if payloadLeft > 0 {
                let skip = Int(min(payloadLeft, UInt64(bytes.endIndex - index)))
                index += skip
                payloadLeft -= UInt64(skip)
                continue
            }
            header.append(bytes[index])
            index += 1
            guard header.count >= 2 else { continue }
            if header.count == 2, header[1] & 0x80 == 0 {
                foundUnmasked = true
                return true
            }
            let length7 = header[1] & 0x7F
            let needed = 2 + (length7 == 126 ? 2 : length7 == 127 ? 8 : 0) + 4
            guard header.count == needed else { continue }
            switch length7 {
            case 126: payloadLeft = UInt64(header[2]) << 8 | UInt64(header[3])
            case 127: payloadLeft = header[2..<10].reduce(0) { $0 << 8 | UInt64($1) }
            default: payloadLeft = UInt64(length7)
            }
            header.removeAll(keepingCapacity: true)
        }
        return false
    }
}

/// After SwiftNIO's HTTP decoder: a request it cannot parse is answered 400 (431 when its head is
/// too large) and the connection closed, where it would otherwise wait for ever.
final class MalformedRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Never

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let error = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        let connectionGuard = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self)
        if error == .headerOverflow {
            connectionGuard?.refuse(.requestHeaderFieldsTooLarge, reason: "the request's header fields are too large")
        } else {
            connectionGuard?.refuse(.badRequest, reason: "the request is not HTTP/1.1 the inspector can read (\(error))")
        }
        if connectionGuard == nil { context.close(promise: nil) }
    }
}

/// After Hummingbird's HTTP/1 codec (Hummingbird's additional channel handlers): the inspector
/// takes no request body (it serves GET alone), so a request announcing one is answered 413 and
/// the connection closed, where a body sent a byte at a time would hold it open; a request head
/// the codec cannot convert is answered 400.
final class RequestBodyRefusal: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if case .head(let request) = unwrapInboundIn(data) {
            let length = request.headerFields[.contentLength]
            if request.headerFields[.transferEncoding] != nil || (length != nil && length != "0") {
                refused = true
                refuse(context, .payloadTooLarge, "the inspector takes no request body")
                return
            }
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTP1TypeConversionError else {
            context.fireErrorCaught(error)
            return
        }
        refused = true
        refuse(context, .badRequest, "the request's head is not valid HTTP")
    }

    private func refuse(_ context: ChannelHandlerContext, _ status: HTTPResponseStatus, _ reason: String) {
        if let connectionGuard = try? context.pipeline.syncOperations.handler(type: ConnectionGuard.self) {
            connectionGuard.refuse(status, reason: reason)
        } else {
            context.close(promise: nil)
        }
    }
}

/// A one-time event waited for with a time limit.
final class Completion: Sendable {
    private struct State {
        var done = false
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var timers: [Int: Task<Void, Never>] = [:]
        var next = 0
    }
    private let state = Locked(State())

    func signal() {
        let (waiters, timers) = state.withLock { state in
            state.done = true
            defer {
                state.waiters = [:]
                state.timers = [:]
            }
            return (Array(state.waiters.values), Array(state.timers.values))
        }
        for timer in timers { timer.cancel() }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// True once signalled, false when `limit` passed first.
    func wait(for limit: Duration) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let id = state.withLock { state -> Int? in
                if state.done { return nil }
                state.next += 1
                state.waiters[state.next] = continuation
                return state.next
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                self.expire(id)
            }
            let signalled = state.withLock { state -> Bool in
                if state.waiters[id] == nil { return true }
                state.timers[id] = timer
                return false
            }
            if signalled { timer.cancel() }
        }
    }

    private func expire(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.timers[id] = nil
            return state.waiters.removeValue(forKey: id)
        }
        waiter?.resume(returning: false)
    }
}
