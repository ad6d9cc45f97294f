// Opening a stream from C (include/reduxstore_postgres.h): a C store of libreduxstore.so,
// replicated by the Swift library's Replicator. It reaches the store only through reduxstore.h's
// functions (resolved from libreduxstore.so when a program loads both): the store is a forwarding
// one, whose dispatches come here and whose stream's actions go back with rdx_store_apply_forwarded.
internal import CJSONC
public import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
import ReduxStorePostgres
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

@c @implementation
public func rdx_store_open_stream(
    _ connection: UnsafePointer<CChar>?, _ stream: UnsafePointer<CChar>?, _ initialState: OpaquePointer?,
    _ reducers: UnsafePointer<rdx_reducer>?, _ reducerCount: Int, _ status: UnsafeMutablePointer<rdx_status>?
) -> OpaquePointer? {
    openStream(connection, stream, initialState, reducers, reducerCount, options: nil, writes: true, status)
}

/// The three ways C opens a stream (`rdx_store_open_stream`, `…_with_options`,
/// `rdx_store_follow_stream`): the arguments checked, the stream opened on a task this call
/// waits for, the store or NULL with `status` and `rdx_last_error()` set.
func openStream(
    _ connection: UnsafePointer<CChar>?, _ stream: UnsafePointer<CChar>?, _ initialState: OpaquePointer?,
    _ reducers: UnsafePointer<rdx_reducer>?, _ reducerCount: Int, options: UnsafePointer<rdx_stream_options>?,
    writes: Bool, _ status: UnsafeMutablePointer<rdx_status>?
) -> OpaquePointer? {
    do throws(CFailure) {
        guard let connection else {
            throw CFailure(RDX_EINVAL, "connection is NULL (\"\" takes the PG* environment variables)")
        }
        guard let stream else { throw CFailure(RDX_EINVAL, "stream is NULL") }
        guard let initialState else { throw CFailure(RDX_EINVAL, "initial_state is NULL") }
        // Names that are not UTF-8 are refused, never repaired: two different byte strings must
        // never name one stream.
        guard let streamName = String(validatingCString: stream) else {
            throw CFailure(RDX_EINVAL, "stream is not UTF-8 text")
        }
        guard let connectionText = String(validatingCString: connection) else {
            throw CFailure(RDX_EINVAL, "connection is not UTF-8 text")
        }
        let (replication, schema) = try CStreamOptions.read(options, stream: streamName)
        // The state and the reducers checked as rdx_store_create() checks them, before anything
        // is sent: a refused list must not leave a stream made on the server.
        var created = RDX_OK
        guard let probe = rdx_store_create(initialState, reducers, reducerCount, &created) else {
            throw CFailure.last(created)
        }
        rdx_store_release(probe)
        try LibraryThreads.check(writes ? "rdx_store_open_stream" : "rdx_store_follow_stream")
        let target: PostgresStream
        do {
            target = try PostgresStream(connection: connectionText, stream: streamName, schema: schema)
        } catch {
            throw CFailure(error)
        }
        // The pointers C passed stay valid for the task that uses them: this call waits for it.
        let request = CStreamOpening(
            stream: target, options: replication, writes: writes, initialState: initialState, reducers: reducers,
            reducerCount: reducerCount)
        let store = try blockingWait { () async throws(CFailure) -> CStorePointer in
            try await request.open()
        }.get()
        status?.pointee = RDX_OK
        return store.pointer
    } catch {
        rdx_set_last_error(error.message)
        status?.pointee = error.status
        return nil
    }
}

/// The process whose threads the library's waits need (Swift concurrency's pool, SwiftNIO's
/// event loops), started by the first stream it opened. A child made by fork() has none of them
/// (only the thread that called fork() is copied), and a wait for them would never end: such a
/// child is refused instead.
enum LibraryThreads {
    private static let startedBy = Atomic<Int32>(0)

    /// Notes this process as the one whose threads run, or refuses it (RDX_EINVAL) when it is a
    /// child made by fork() of the process that started them. `call` names the C function.
    static func check(_ call: String) throws(CFailure) {
        let me = getpid()
        let (first, startedBy) = startedBy.compareExchange(expected: 0, desired: me, ordering: .relaxed)
        guard !first, startedBy != me else { return }
        throw CFailure(
            RDX_EINVAL,
            "\(call): this process (pid \(me)) is a child made by fork() of a process (pid \(startedBy)) that opened a stream: the threads the library waits on are not in the child, so the call would never return; open streams in a child that called exec(), or fork() before the first stream is opened")
    }
}

/// A failure as C sees it: a status and its words.
struct CFailure: Error {
    let status: rdx_status
    let message: String

    init(_ status: rdx_status, _ message: String) {
        self.status = status
        self.message = message
    }

    init(_ error: ReplicationError) {
        let status: rdx_status
        switch error.kind {
        case .invalidArgument, .readOnly, .closed: status = RDX_EINVAL
        case .connection, .authentication, .server, .schema: status = RDX_EIO
        case .decode: status = RDX_EDECODE
        case .divergence, .trimmed: status = RDX_ECORRUPT
        }
        self.init(status, error.description)
    }

    /// This thread's `rdx_last_error()` with `status`.
    static func last(_ status: rdx_status) -> CFailure {
        CFailure(status, rdx_last_error().map { String(cString: $0) } ?? "")
    }
}

/// An `rdx_store *` handed between threads: C's stores may be used from any thread.
struct CStorePointer: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// What `rdx_store_open_stream` asked for, carried to the task that opens the stream. The
/// pointers are C's, borrowed for the call, which waits for the task.
struct CStreamOpening: @unchecked Sendable {
    let stream: PostgresStream
    let options: ReplicationOptions
    /// Whether the store may dispatch (`rdx_store_open_stream*`) or only follows.
    let writes: Bool
    let initialState: OpaquePointer
    let reducers: UnsafePointer<rdx_reducer>?
    let reducerCount: Int

    /// Opens the stream, creates the forwarding store at the newest snapshot, catches up and
    /// starts following; starts again when the versions after its snapshot were trimmed
    /// meanwhile (``OpenedStream/startingAgainAfterTrims(reconnectTimeout:trimmed:_:)``).
    func open() async throws(CFailure) -> CStorePointer {
        let standby: PostgresStream?
        do {
            standby = try options.standby(of: stream, writes: writes)
        } catch {
            throw CFailure(RDX_EINVAL, CStreamOptions.cNames(error.description))
        }
        do {
            return try await OpenedStream.startingAgainAfterTrims(
                reconnectTimeout: options.reconnectTimeout,
                trimmed: { if case .caughtUp(let error) = $0 { error } else { nil } }
            ) { () async throws(OpeningFailure) in
                try await openOnce(standby: standby)
            }
        } catch {
            throw error.failure
        }
    }

    /// Why one attempt to open failed: while it caught up (when it may start again), or before.
    private enum OpeningFailure: Error {
        case caughtUp(ReplicationError)
        case other(CFailure)

        var failure: CFailure {
            switch self {
            case .caughtUp(let error): CFailure(error)
            case .other(let failure): failure
            }
        }
    }

    private func openOnce(standby: PostgresStream?) async throws(OpeningFailure) -> CStorePointer {
        let opened: OpenedStream
        do {
            opened = try await OpenedStream.open(
                stream, writes: writes, standby: standby, reconnectTimeout: options.reconnectTimeout)
        } catch {
            throw .other(CFailure(error))
        }
        let replica = CStreamReplica(stream: stream.stream, writes: writes)
        let store: OpaquePointer
        do throws(CFailure) {
            store = try makeStore(at: opened.version, state: opened.state, replica: replica)
        } catch {
            try? await opened.connection.close()
            throw .other(error)
        }
        let replicator = Replicator(
            stream: stream, schema: opened.schema, options: options,
            target: CReplicaTarget(
                store: store, context: Unmanaged.passUnretained(replica).toOpaque(), applying: replica.applying),
            logger: opened.logger, writes: writes,
            standby: standby, connection: opened.connection)
        replica.start(replicator, store: store)
        do {
            try await replicator.catchUp(through: nil)
        } catch {
            // Closed here, on this task; the store's release then only lets the replica go.
            await replicator.close()
            rdx_store_release(store)
            throw .caughtUp(error)
        }
        await replicator.startFollowing()
        return CStorePointer(pointer: store)
    }

    /// The forwarding store at `version` with the snapshot's `state` (canonical JSON text), or
    /// the initial state at version 0; it holds `replica` until its last release.
    private func makeStore(at version: UInt64, state text: String?, replica: CStreamReplica) throws(CFailure) -> OpaquePointer {
        var snapshot: OpaquePointer?
        if let text {
            do throws(StoreError) {
                snapshot = try JSONCText.parse(text)
            } catch {
                throw CFailure(RDX_EDECODE, "stream \"\(stream.stream)\", version \(version): the stored snapshot is not JSON a C store can hold: \(error.message)")
            }
            guard snapshot != nil else {
                throw CFailure(RDX_EDECODE, "stream \"\(stream.stream)\", version \(version): the stored snapshot is null, which a C store cannot hold")
            }
        }
        defer { if let snapshot { json_object_put(snapshot) } }
        var status = RDX_OK
        let context = Unmanaged.passRetained(replica).toOpaque()
        guard let store = rdx_store_create_forwarding(
            snapshot ?? initialState, version, reducers, reducerCount, forwardToStream, context, releaseReplica,
            &status)
        else {
            Unmanaged<CStreamReplica>.fromOpaque(context).release()
            throw CFailure.last(status)
        }
        return store
    }
}

/// The replication of one C store: what its forwarded dispatches are committed through.
final class CStreamReplica: Sendable {
    let stream: String
    /// Whether the store may dispatch: false for `rdx_store_follow_stream`'s.
    let writes: Bool
    /// The thread applying the stream's actions to the store, shared with its ``CReplicaTarget``.
    let applying = ApplyingThread()
    private let replicator = Locked<Replicator?>(nil)

    /// The replicas of the C stores open now, by store, for ``of(_:)``.
    private static let open = Locked<[UInt: CStreamReplica]>([:])

    init(stream: String, writes: Bool) {
        self.stream = stream
        self.writes = writes
    }

    /// Starts committing and following through `replicator`, for `store`.
    func start(_ replicator: Replicator, store: OpaquePointer) {
        self.replicator.withLock { $0 = replicator }
        Self.open.withLock { $0[UInt(bitPattern: store)] = self }
    }

    /// The replica of `store`, or nil when it is not a replicated C store.
    static func of(_ store: OpaquePointer) -> CStreamReplica? {
        open.withLock { $0[UInt(bitPattern: store)] }
    }

    /// How far the replica is behind its stream, and what stopped it (nil while it runs). Read on
    /// the replicator's actor: refused on the thread applying the stream (one of the store's
    /// callbacks), where the actor waits for the callback.
    func lag() throws(CFailure) -> (ReplicationLag, ReplicationError?) {
        guard !applying.isCurrent else {
            throw CFailure(
                RDX_EINVAL,
                "stream \"\(stream)\": the lag was asked from one of the store's callbacks, while it applies the stream: it would wait for itself")
        }
        guard let replicator = replicator.withLock({ $0 }) else {
            throw CFailure(RDX_EINVAL, "stream \"\(stream)\": the replicated store is not open yet")
        }
        // A child after fork has none of the threads the wait below needs.
        if let refusal = replicator.forked() { throw CFailure(refusal) }
        let result = blockingWait { () async -> CStreamLag in
            CStreamLag(lag: await replicator.lag, failure: await replicator.failure)
        }.get()
        return (result.lag, result.failure)
    }

    /// Commits an action and waits (on C's thread) until it is applied here.
    func dispatch(
        identifier: UnsafePointer<CChar>, payload: OpaquePointer?, file: UnsafePointer<CChar>?, line: Int32
    ) -> rdx_status {
        do throws(CFailure) {
            guard let replicator = replicator.withLock({ $0 }) else {
                throw CFailure(RDX_EINVAL, "stream \"\(stream)\": the replicated store is not open yet")
            }
            guard writes else {
                throw CFailure(
                    RDX_EINVAL,
                    "stream \"\(stream)\": this store follows the stream read-only (rdx_store_follow_stream): open it with rdx_store_open_stream to dispatch; nothing was stored")
            }
            // Checked here, on C's thread: a child after fork has none of the threads the wait
            // below would need.
            if let refusal = replicator.forked() { throw CFailure(refusal.refusingDispatch()) }
            let text: String
            do throws(StoreError) {
                if let payload {
                    // What a payload may hold (JSON's values, within the limits), checked; the
                    // text sent is json-c's own, which keeps a double a double (1e16, -0.0,
                    // 100.0): the text every replica, this one too, applies.
                    _ = try JSONCDecoder().decode(JSONValue.self, from: payload)
                    text = try Self.text(of: payload)
                } else {
                    text = "null"
                }
            } catch {
                throw CFailure(RDX_EDECODE, "payload: \(error.message)")
            }
            let name = String(cString: identifier)
            let source = file.map { "\(String(cString: $0)):\(line)" } ?? ""
            _ = try blockingWait { () async throws(CFailure) -> UInt64 in
                do {
                    return try await replicator.submit(identifier: name, payload: text, source: source)
                } catch let error as ReplicationError {
                    throw CFailure(error)
                } catch {
                    throw CFailure(RDX_EIO, "stream \"\(self.stream)\": \(error)")
                }
            }.get()
            return RDX_OK
        } catch {
            rdx_set_last_error(error.message)
            return error.status
        }
    }

    /// A payload's JSON text as json-c prints it, printed from a copy: printing writes into the
    /// tree, which is the caller's.
    private static func text(of payload: OpaquePointer) throws(StoreError) -> String {
        var copy: OpaquePointer?
        guard json_object_deep_copy(payload, &copy, nil) == 0, let copy else {
            throw StoreError(.outOfMemory, "json-c could not copy it")
        }
        defer { json_object_put(copy) }
        return try JSONCText.print(copy)
    }

    /// Waits for the dispatches on their way, stops following, closes the connections.
    func close() {
        Self.open.withLock { open in
            if let key = open.first(where: { $0.value === self })?.key { open[key] = nil }
        }
        guard let replicator = replicator.withLock({ $0 }) else { return }
        // A child after fork lets its copy go: the connections are its parent's.
        guard replicator.forked() == nil else { return }
        _ = blockingWait { () async throws(CFailure) in await replicator.close() }
    }
}

/// The store's forwarder: a dispatch to the stream.
private let forwardToStream: rdx_forward_fn = { _, identifier, payload, file, line, context in
    guard let identifier, let context else { return RDX_EINVAL }
    let replica = Unmanaged<CStreamReplica>.fromOpaque(context).takeUnretainedValue()
    return replica.dispatch(identifier: identifier, payload: payload, file: file, line: line)
}

/// The store's last release: the replica stops, and is let go.
private let releaseReplica: rdx_release_fn = { context in
    guard let context else { return }
    let replica = Unmanaged<CStreamReplica>.fromOpaque(context).takeRetainedValue()
    replica.close()
}

/// The C store as the replicator's target: the stream's actions applied through
/// `rdx_store_apply_forwarded`, the state read as JSON. The store is borrowed: its last release
/// closes the replicator first.
struct CReplicaTarget: ReplicaTarget, @unchecked Sendable {
    // @unchecked: C's stores may be used from any thread.
    let store: OpaquePointer
    /// The context the store was created with (its ``CStreamReplica``'s address): what
    /// `rdx_store_apply_forwarded` asks for.
    let context: UnsafeMutableRawPointer
    let applying: ApplyingThread

    var version: UInt64 { rdx_store_version(store) }

    func apply(_ row: StreamRow) throws(StoreError) {
        let payload = try JSONCText.parse(row.payload)
        defer { json_object_put(payload) }
        let status = applying.marking {
            row.identifier.withCString { identifier in
                row.source.isEmpty
                    ? rdx_store_apply_forwarded(store, context, identifier, payload, nil)
                    : row.source.withCString { rdx_store_apply_forwarded(store, context, identifier, payload, $0) }
            }
        }
        guard status == RDX_OK else {
            throw StoreError(.decode, rdx_last_error().map { String(cString: $0) } ?? "refused (\(status.rawValue))")
        }
    }

    func check(identifier: String, payload: String) throws(StoreError) {
        // A C store's reducers take any JSON: the text must parse, as its apply parses it.
        json_object_put(try JSONCText.parse(payload))
    }

    func canonicalState() throws(StoreError) -> String {
        guard let state = rdx_store_current_state(store) else {
            throw StoreError(.outOfMemory, rdx_last_error().map { String(cString: $0) } ?? "no state")
        }
        defer { json_object_put(state) }
        // Each number of the kind json-c holds (JSONCDecoder keeps a double a double), so
        // that a process starting from the snapshot holds the kinds this one holds.
        return try JSONCDecoder().decode(JSONValue.self, from: state).description
    }
}


/// The thread applying the stream's actions to a C store right now (its reducers, listeners and
/// observers run there, one at a time), or none.
final class ApplyingThread: Sendable {
    private let thread = Atomic<UInt>(0)

    /// Runs `body` as the applying thread.
    func marking<T>(_ body: () -> T) -> T {
        thread.store(UInt(pthread_self()), ordering: .relaxed)
        defer { thread.store(0, ordering: .relaxed) }
        return body()
    }

    /// Whether the calling thread is applying the stream now.
    var isCurrent: Bool { thread.load(ordering: .relaxed) == UInt(pthread_self()) }
}
