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
    private let bounds: ConnectionBounds
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

    init(bounds: ConnectionBounds, onStart: @escaping @Sendable () -> Void) {
        self.bounds = bounds
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
            stallDeadline = context.eventLoop.scheduleTask(in: bounds.stalledSend) {
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
    /// ends, so that no reset overtakes the close frame. A close asked for while a connection
    /// lingers (after a refusal, or a page's close frame) waits for the linger's end; any other
    /// close goes through.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode == .all, lingerDeadline != nil {
            context.channel.closeFuture.cascade(to: promise)
        } else if mode == .all, phase == .webSocket, context.channel.isActive {
            phase = .closingWebSocket
            context.channel.closeFuture.cascade(to: promise)
            endSending(context)
        } else {
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
        lingerDeadline = context.eventLoop.scheduleTask(in: bounds.linger) {
            loopBound.value.context?.close(promise: nil)
        }
        context.read()
    }

    private func armHeadDeadline(_ context: ChannelHandlerContext) {
        guard headDeadline == nil, phase == .awaitingRequest else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        headDeadline = context.eventLoop.scheduleTask(in: bounds.requestHead) {
            loopBound.value.headDeadlinePassed()
        }
    }

    private func headDeadlinePassed() {
        headDeadline = nil
        guard phase == .awaitingRequest || phase == .deciding else { return }
        if receivedAny {
            refuse(.requestTimeout, reason: "the request head did not arrive within \(bounds.requestHead.nanoseconds / 1_000_000_000) seconds")
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
