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
///
/// The four times a misbehaving client waits out are values (``standard`` is what every
/// inspector uses), so that the inspector's own tests can see each one enforced in a second
/// rather than in half a minute (`InspectorOptions.connectionBounds`); the sizes are fixed.
package struct ConnectionBounds: Sendable {
    /// A connection's first request head must have arrived within this of its opening: past it,
    /// a connection that sent nothing is closed, one that sent part of a head is answered 408.
    package var requestHead = TimeAmount.seconds(10)
    /// A connection with no request in progress is closed this long after its last answer
    /// (Hummingbird's idle timeout): the next request's head must have arrived by then.
    package var keepAliveIdle = TimeAmount.seconds(15)
    /// A connection whose answer or changes have not moved for this long (the client reads
    /// nothing: the socket's buffers are full) is closed, WebSocket pages included.
    package var stalledSend = TimeAmount.seconds(30)
    /// After a refusal the answer is the connection's last bytes: its sending side is closed at
    /// once, and what the client still sends is read and dropped for at most this, so that the
    /// answer is not lost to a reset, then the connection is closed.
    package var linger = TimeAmount.seconds(1)

    /// The bounds the documentation states.
    package static let standard = ConnectionBounds()

    package init() {}

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
