import NIOCore
import NIOEmbedded
@testable import ReduxStorePostgres
import Testing

/// Counts what reaches the handlers after the guard (postgres-nio's, on a real connection).
private final class Counter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    var reads = 0
    var completes = 0
    func channelRead(context: ChannelHandlerContext, data: NIOAny) { reads += 1 }
    func channelReadComplete(context: ChannelHandlerContext) { completes += 1 }
}

@Suite("A connection's read-complete guard")
struct StreamConnectionTests {
    @Test("a read-complete passes on only after a read was asked for and data came")
    func readCompleteGuard() throws {
        let counter = Counter()
        let channel = EmbeddedChannel(handlers: [ReadCompleteGuard(), counter])
        // Data nobody asked for (the server ended the connection while a consumer held back its
        // demand): it passes, its read-complete does not.
        try channel.writeInbound(ByteBuffer(string: "rows"))
        #expect(counter.reads == 1 && counter.completes == 0)
        // A read asked for, and nothing came: held back too.
        channel.read()
        channel.pipeline.fireChannelReadComplete()
        #expect(counter.completes == 1, "the data that came before is completed once a read is asked for")
        channel.read()
        channel.pipeline.fireChannelReadComplete()
        #expect(counter.completes == 1, "no data since: held back")
        // Asked for, and data came: passes, once.
        try channel.writeInbound(ByteBuffer(string: "more rows"))
        #expect(counter.reads == 2 && counter.completes == 2)
        channel.pipeline.fireChannelReadComplete()
        #expect(counter.completes == 2)
        _ = try channel.finish()
    }
}
