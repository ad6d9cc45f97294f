/// How a replicated store writes snapshots, keeps history and waits for new actions.
///
/// ```swift
/// var options = ReplicationOptions()
/// options.snapshotEvery = 10_000
/// options.trimsActions = true          // actions older than the oldest kept snapshot may go
/// ```
public struct ReplicationOptions: Sendable {
    /// A writer stores the state as a snapshot at every version that is a multiple of this (the
    /// writer that committed that version stores it). 0: never by count. Default 1,000.
    public var snapshotEvery: Int = 1_000
    /// A writer also stores a snapshot when it commits and the newest one it stored (or started
    /// from) is older than this many seconds: at the last version of that commit, which the
    /// append marks so that every replica compares it. 0: never by time. Default 300.
    public var snapshotInterval: Double = 300
    /// How many of the newest snapshots to keep; older ones are deleted when a writer stores a
    /// new one. At least 1. Default 3.
    public var snapshotsKept: Int = 3
    /// Whether a writer deletes the actions at and below the oldest snapshot it keeps (never newer
    /// ones). A process starts from a snapshot and reads the actions after it, so nothing a new
    /// process needs is lost (an opening whose actions are trimmed while it catches up starts
    /// again from the newer snapshot, within ``reconnectTimeout``). A running replica, writer or
    /// follower, further behind than the oldest kept snapshot stops with
    /// ``ReplicationError/Kind/trimmed``: it cannot apply what is gone. So keep
    /// `snapshotEvery × (snapshotsKept − 1)` versions well above the most any replica falls
    /// behind — a burst of other writers, a paused process, a reconnect. Default false: the
    /// stream keeps every action.
    public var trimsActions: Bool = false
    /// Whether a writer wakes the other processes at once with PostgreSQL's `NOTIFY` after its
    /// commits (apart from the append, coalesced), and a replica listens for it. Without it (or
    /// when a notification is missed) they find new actions by polling. Default true.
    public var notifies: Bool = true
    /// How often a process looks for new actions when no notification came, in seconds: the
    /// longest a missed notification delays a follower. Default 0.1.
    public var pollInterval: Double = 0.1
    /// How many actions one commit writes at most (group commit: concurrent dispatches of one
    /// process share one append). Default 1,000.
    public var maximumBatch: Int = 1_000
    /// How many actions one read of the stream's tail fetches. Default 10,000.
    public var readBatch: Int = 10_000
    /// How long, in seconds, a dispatch, and opening or following a stream, wait for a lost
    /// connection to come back (or a server to finish starting, or a full connection table to
    /// free a place) before they fail with ``ReplicationError/Kind/connection``. Default 30.
    public var reconnectTimeout: Double = 30
    /// A hot standby of the stream's server to read the stream from (a libpq-style connection
    /// string, as ``PostgresStream/init(connection:stream:schema:)`` takes), or nil to read from
    /// the server written to. Writes always go to the primary, so only a follower
    /// (``ReplicatedStore/follow(_:reducers:initialState:actions:options:)``) takes one: it runs
    /// every query on the standby, and keeps one session on the primary that only `LISTEN`s for
    /// wake-ups (none without ``notifies``). The standby must be a streaming replica of the
    /// primary the stream is on, with the library's tables (made by a writer on the primary).
    /// Default nil.
    public var standbyConnection: String? = nil

    public init() {}

    /// The options, or an error naming the first one out of range.
    package func validated(stream: String) throws(ReplicationError) -> ReplicationOptions {
        func check(_ ok: Bool, _ what: String) throws(ReplicationError) {
            if !ok { throw ReplicationError(.invalidArgument, stream: stream, "ReplicationOptions.\(what)") }
        }
        try check(snapshotEvery >= 0, "snapshotEvery must be 0 or more")
        try check(snapshotInterval >= 0 && snapshotInterval.isFinite, "snapshotInterval must be a finite number of seconds, 0 or more")
        try check(snapshotsKept >= 1, "snapshotsKept must be 1 or more")
        try check(pollInterval > 0 && pollInterval <= 3600, "pollInterval must be more than 0 and at most 3600 seconds")
        try check((1...10_000).contains(maximumBatch), "maximumBatch must be 1 to 10,000")
        try check((1...1_000_000).contains(readBatch), "readBatch must be 1 to 1,000,000")
        try check(reconnectTimeout >= 0 && reconnectTimeout.isFinite, "reconnectTimeout must be a finite number of seconds, 0 or more")
        return self
    }

    /// The hot standby ``standbyConnection`` names, as a stream of the same name and schema as
    /// `stream`, or nil; an error when it does not parse, or when a writer (`writes`) is given one.
    package func standby(of stream: PostgresStream, writes: Bool) throws(ReplicationError) -> PostgresStream? {
        guard let standbyConnection else { return nil }
        if writes {
            throw ReplicationError(
                .invalidArgument, stream: stream.stream,
                "ReplicationOptions.standbyConnection is for followers: a writer reads from the server it writes to")
        }
        do {
            return try PostgresStream(connection: standbyConnection, stream: stream.stream, schema: stream.schema)
        } catch {
            throw ReplicationError(
                .invalidArgument, stream: stream.stream, "ReplicationOptions.standbyConnection: \(error.message)")
        }
    }
}

/// How far a replica is behind its stream.
public struct ReplicationLag: Sendable, Equatable {
    /// The newest version of the stream this process knows of, less the version it applied.
    public let versions: UInt64
    /// How long, in seconds, the oldest version it knows of and has not applied has been known:
    /// 0 when it is caught up.
    public let seconds: Double
    /// For a follower on a hot standby (``ReplicationOptions/standbyConnection``): how many of
    /// the versions the primary announced the standby had not replayed yet at this follower's
    /// last read — the part of ``versions`` that is the standby's own delay. `nil` for a replica
    /// that reads from the primary. (It counts what the primary's notifications announced: 0
    /// without ``ReplicationOptions/notifies``.)
    public let standbyVersions: UInt64?
    /// Why the replica is behind, while it is: the error of its last attempt to read the stream
    /// (a lost connection, a stopped standby…), which it tries again at every poll, keeping its
    /// state. `nil` once a read succeeds. (What stops a replica for good is its `failure`.)
    public let lastError: ReplicationError?
}
