// The options, the follower and the lag of include/reduxstore_postgres.h: C at parity with
// ReplicatedStore's ReplicationOptions, follow and lag.
internal import CJSONC
public import CReduxStoreAPI
import ReduxStore
import ReduxStorePostgres

@c @implementation
public func rdx_stream_options_init(_ options: UnsafeMutablePointer<rdx_stream_options>?) {
    guard let options else { return }
    let defaults = ReplicationOptions()
    options.pointee = rdx_stream_options(
        schema: nil,
        snapshot_every: Int64(defaults.snapshotEvery),
        snapshot_interval: defaults.snapshotInterval,
        snapshots_kept: Int64(defaults.snapshotsKept),
        trims_actions: defaults.trimsActions ? 1 : 0,
        notifies: defaults.notifies ? 1 : 0,
        poll_interval: defaults.pollInterval,
        maximum_batch: Int64(defaults.maximumBatch),
        read_batch: Int64(defaults.readBatch),
        reconnect_timeout: defaults.reconnectTimeout,
        standby: nil)
}

@c @implementation
public func rdx_store_open_stream_with_options(
    _ connection: UnsafePointer<CChar>?, _ stream: UnsafePointer<CChar>?, _ initialState: OpaquePointer?,
    _ reducers: UnsafePointer<rdx_reducer>?, _ reducerCount: Int, _ options: UnsafePointer<rdx_stream_options>?,
    _ status: UnsafeMutablePointer<rdx_status>?
) -> OpaquePointer? {
    openStream(connection, stream, initialState, reducers, reducerCount, options: options, writes: true, status)
}

@c @implementation
public func rdx_store_follow_stream(
    _ connection: UnsafePointer<CChar>?, _ stream: UnsafePointer<CChar>?, _ initialState: OpaquePointer?,
    _ reducers: UnsafePointer<rdx_reducer>?, _ reducerCount: Int, _ options: UnsafePointer<rdx_stream_options>?,
    _ status: UnsafeMutablePointer<rdx_status>?
) -> OpaquePointer? {
    openStream(connection, stream, initialState, reducers, reducerCount, options: options, writes: false, status)
}

@c @implementation
public func rdx_store_stream_lag(
    _ store: OpaquePointer?, _ secondsBehind: UnsafeMutablePointer<Double>?,
    _ versionsBehind: UnsafeMutablePointer<UInt64>?
) -> rdx_status {
    do throws(CFailure) {
        let (lag, failure) = try replicaLag(store, "rdx_store_stream_lag", "rdx_store_open_stream or rdx_store_follow_stream")
        secondsBehind?.pointee = lag.seconds
        versionsBehind?.pointee = lag.versions
        if let failure { throw CFailure(failure) }
        return RDX_OK
    } catch {
        rdx_set_last_error(error.message)
        return error.status
    }
}

@c @implementation
public func rdx_store_stream_standby_lag(
    _ store: OpaquePointer?, _ standbyVersions: UnsafeMutablePointer<UInt64>?
) -> rdx_status {
    do throws(CFailure) {
        let (lag, failure) = try replicaLag(store, "rdx_store_stream_standby_lag", "rdx_store_follow_stream")
        guard let behind = lag.standbyVersions else {
            throw CFailure(RDX_EINVAL, "the store does not read from a standby (options->standby)")
        }
        standbyVersions?.pointee = behind
        if let failure { throw CFailure(failure) }
        if let stalled = lag.lastError { rdx_set_last_error(stalled.description) }
        return RDX_OK
    } catch {
        rdx_set_last_error(error.message)
        return error.status
    }
}

/// The lag and failure of the replicated `store`, for the C function `function`, which takes a
/// store of `opener`: refused for NULL or a store that is not replicated.
private func replicaLag(
    _ store: OpaquePointer?, _ function: String, _ opener: String
) throws(CFailure) -> (ReplicationLag, ReplicationError?) {
    guard let store else { throw CFailure(RDX_EINVAL, "store is NULL") }
    guard let replica = CStreamReplica.of(store) else {
        throw CFailure(RDX_EINVAL, "the store is not replicated: \(function) takes a store of \(opener)")
    }
    return try replica.lag()
}

/// What C's `rdx_stream_options` asks for, as `ReplicationOptions` and a schema.
enum CStreamOptions {
    /// The options `options` holds (the defaults for NULL), checked, and its schema; an option out
    /// of range is refused with the C field's name.
    static func read(
        _ options: UnsafePointer<rdx_stream_options>?, stream: String
    ) throws(CFailure) -> (ReplicationOptions, String) {
        var replication = ReplicationOptions()
        var schema = "reduxstore"
        if let options = options?.pointee {
            if let name = options.schema {
                guard let text = String(validatingCString: name) else {
                    throw CFailure(RDX_EINVAL, "options->schema is not UTF-8 text")
                }
                schema = text
            }
            guard let every = Int(exactly: options.snapshot_every), let kept = Int(exactly: options.snapshots_kept),
                  let batch = Int(exactly: options.maximum_batch), let read = Int(exactly: options.read_batch)
            else { throw CFailure(RDX_EINVAL, "options: a count is out of range") }
            replication.snapshotEvery = every
            replication.snapshotInterval = options.snapshot_interval
            replication.snapshotsKept = kept
            replication.trimsActions = options.trims_actions != 0
            replication.notifies = options.notifies != 0
            replication.pollInterval = options.poll_interval
            replication.maximumBatch = batch
            replication.readBatch = read
            replication.reconnectTimeout = options.reconnect_timeout
            if let standby = options.standby {
                guard let text = String(validatingCString: standby) else {
                    throw CFailure(RDX_EINVAL, "options->standby is not UTF-8 text")
                }
                replication.standbyConnection = text
            }
        }
        do {
            return (try replication.validated(stream: stream), schema)
        } catch {
            throw CFailure(RDX_EINVAL, cNames(error.description))
        }
    }

    /// `message` with ReplicationOptions' Swift names replaced by the C fields'.
    static func cNames(_ message: String) -> String {
        let names = [
            ("snapshotEvery", "snapshot_every"), ("snapshotInterval", "snapshot_interval"),
            ("snapshotsKept", "snapshots_kept"), ("pollInterval", "poll_interval"),
            ("maximumBatch", "maximum_batch"), ("readBatch", "read_batch"),
            ("reconnectTimeout", "reconnect_timeout"), ("standbyConnection", "standby"),
        ]
        var text = message.replacing("ReplicationOptions.", with: "options->")
        for (swift, c) in names { text = text.replacing(swift, with: c) }
        return text
    }
}

/// A replica's lag and failure, read on the replicator's actor.
struct CStreamLag: Sendable {
    let lag: ReplicationLag
    let failure: ReplicationError?
}
