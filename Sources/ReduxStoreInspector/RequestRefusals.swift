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
