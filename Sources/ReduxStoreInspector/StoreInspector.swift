import ReduxStore

/// How a ``StoreInspector`` serves.
public struct InspectorOptions: Sendable {
    /// The address to listen on: `"127.0.0.1"` (loopback) unless the program names another.
    public var host = "127.0.0.1"
    /// The port; 0 picks a free one (see ``StoreInspector/url``).
    public var port = 0
    /// Whether the page may restore the store to a kept version (`Store.restore(version:)`).
    public var allowsRestore = false
    /// Whether the page may dispatch actions, of the identifiers registered in ``actions`` only.
    public var allowsDispatch = false
    /// The most pages (WebSocket clients) connected at once; past it a connection is refused.
    public var maximumClients = 8
    /// The typed actions a page may dispatch (with ``allowsDispatch``), by identifier.
    public var actions = ActionTypes()
    /// How many versions the store keeps for restore (`Store.keepHistory(_:)`), turned on when
    /// ``allowsRestore`` is set; 0 leaves the store's history as it is. The history costs each
    /// dispatch a snapshot, so it is not turned on otherwise: a page then sees the newest state,
    /// and the patches of the actions applied while it is open. A program that wants earlier
    /// states and patches without restore calls `keepHistory(_:)` itself (the page uses what the
    /// history keeps).
    public var keptVersions = 100
    /// How many of the newest actions the inspector keeps for a page that connects later. Each
    /// action is recorded as it is applied, at a cost that grows with this number once the ring
    /// no longer stays in the processor's caches (`Benchmarks/README.md`, "The live inspector");
    /// 0 records nothing while no page is connected (a page then sees the actions applied while
    /// it is open).
    public var keptActions = 1_000
    /// How many changes a page's sender takes from the store's log at once: a page never slows a
    /// dispatch and never holds unbounded memory. A page that falls behind by more than the log
    /// keeps is told of the gap.
    public var clientBuffer = 1_024
    /// The times a misbehaving connection is given (``ConnectionBounds/standard``, as documented);
    /// the inspector's tests shorten them.
    package var connectionBounds = ConnectionBounds.standard

    public init() {}
}

/// A live inspector of a store: a web page, served on loopback by default, that shows the store's
/// action log, its state tree, each action's patch, and (when the program allows it) restores a
/// kept version or dispatches an action.
///
/// ```swift
/// let inspector = try await StoreInspector(store)
/// print("inspect at", inspector.url)       // http://127.0.0.1:PORT/?token=…
/// // …
/// await inspector.stop()
/// ```
///
/// Every request needs the token in `url` (query `token=` or `Authorization: Bearer …`); a
/// WebSocket upgrade from another origin, and a request naming another host, are refused. Every
/// connection is held to bounds (a request head within 10 seconds, idle 15, malformed requests
/// answered and closed at once, connections capped below the descriptor limit), so that no
/// client can wedge the program. The page is described in the DocC article "Watching a store
/// live", its protocol and those bounds in "The inspector's protocol".
public final class StoreInspector: Sendable {
    /// The page's address, with its token: open it in a browser.
    public let url: String
    /// The token every request must carry.
    public let token: String
    private let server: InspectorServer

    /// Starts serving `store`'s inspector; returns once it listens.
    ///
    /// - Throws: `StoreError` (`.io`) when the address cannot be bound, `.invalidArgument` for
    ///   options out of range.
    public convenience init<State>(_ store: Store<State>, options: InspectorOptions = .init()) async throws {
        try await self.init(access: SwiftStoreAccess(store: store, actions: options.actions), options: options)
        // Once it listens: a failure to start leaves the store as it was.
        if options.allowsRestore, options.keptVersions > 0 { store.keepHistory(options.keptVersions) }
    }

    /// Starts serving the store `access` reaches (a C store, a recorded journal), whose history
    /// the caller has set up; returns once it listens.
    package init(access: any StoreAccess, options: InspectorOptions) async throws {
        try Self.check(options)
        let token = InspectorToken.make()
        let inspected = InspectedStore(access, options: options)
        // Detaches from the store itself when it cannot start.
        server = try await InspectorServer.start(inspected: inspected, options: options, token: token)
        self.token = token
        let host = options.host.contains(":") ? "[\(options.host)]" : options.host
        url = "http://\(host):\(server.port)/?token=\(token)"
    }

    package static func check(_ options: InspectorOptions) throws(StoreError) {
        guard (0...65_535).contains(options.port) else {
            throw StoreError(.invalidArgument, "port \(options.port) is not 0–65535")
        }
        guard options.maximumClients > 0, options.keptActions >= 0, options.keptVersions >= 0,
              options.clientBuffer > 0
        else {
            throw StoreError(
                .invalidArgument, "maximumClients and clientBuffer must be at least 1, keptActions and keptVersions at least 0")
        }
    }

    /// The port it listens on.
    public var port: Int { server.port }

    /// The most connections it keeps open at once (pages, requests, connections yet to send one),
    /// set when it starts from the descriptors the process has left.
    package var connectionLimit: Int { server.connections.limit }

    /// How many connections are open now.
    package var openConnections: Int { server.connections.count }

    /// Stops serving: closes the pages' connections (close code 1001, "the inspector stopped"),
    /// every other connection and the listening socket. Returns within 5 seconds whatever the
    /// clients do (idle connections, half a request, a page that reads nothing), at once when
    /// they do nothing wrong; no connection or descriptor is left. Idempotent.
    public func stop() async {
        await server.stop()
    }
}

/// The inspector's token: 128 random bits, as hex.
enum InspectorToken {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        return hex(high) + hex(low)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Whether `candidate` is `token`, in time that depends on the lengths only.
    static func matches(_ candidate: Substring?, _ token: String) -> Bool {
        guard let candidate else { return false }
        let a = Array(candidate.utf8)
        let b = Array(token.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}
