import HTTPTypes
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

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
    private let state = NIOLockedValueBox(State())

    init(limit: Int) { self.limit = limit }

    /// Registers `channel`, making room when at the limit; false when it is to be refused.
    func admit(_ channel: any Channel) -> Bool {
        let (admitted, evicted) = state.withLockedValue { state -> (Bool, (any Channel)?) in
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
        state.withLockedValue { $0.entries[ObjectIdentifier(channel)]?.started = true }
    }

    func remove(_ channel: any Channel) {
        _ = state.withLockedValue { $0.entries.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    var count: Int { state.withLockedValue { $0.entries.count } }

    /// From now on every new connection is refused.
    func refuseNew() {
        state.withLockedValue { $0.closed = true }
    }

    /// Closes every connection open, and refuses new ones.
    func closeAll() {
        let channels = state.withLockedValue { state -> [any Channel] in
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
    let bounds: ConnectionBounds

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard connections.admit(channel) else {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        let connections = connections
        channel.closeFuture.whenComplete { _ in connections.remove(channel) }
        do {
            try channel.pipeline.syncOperations.addHandler(ConnectionGuard(bounds: bounds) { connections.started(channel) })
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
