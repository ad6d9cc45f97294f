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
    /// process needs is lost; a follower further behind than the oldest kept snapshot stops with
    /// ``ReplicationError/Kind/trimmed``. Default false: the stream keeps every action.
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

    public init() {}

    /// The options, or an error naming the first one out of range.
    package func validated(stream: String) throws(ReplicationError) -> ReplicationOptions {
        func check(_ ok: Bool, _ what: String) throws(ReplicationError) {
            if !ok { throw ReplicationError(.invalidArgument, stream: stream, "ReplicationOptions.\(what)") }
        }
        try check(snapshotEvery >= 0, "snapshotEvery must be 0 or more")
        try check(snapshotInterval >= 0 && snapshotInterval.isFinite, "snapshotInterval must be 0 or more seconds")
        try check(snapshotsKept >= 1, "snapshotsKept must be 1 or more")
        try check(pollInterval > 0 && pollInterval <= 3600, "pollInterval must be more than 0 and at most 3600 seconds")
        try check((1...10_000).contains(maximumBatch), "maximumBatch must be 1 to 10,000")
        try check((1...1_000_000).contains(readBatch), "readBatch must be 1 to 1,000,000")
        try check(reconnectTimeout >= 0 && reconnectTimeout.isFinite, "reconnectTimeout must be 0 or more seconds")
        return self
    }
}

/// How far a replica is behind its stream.
public struct ReplicationLag: Sendable, Equatable {
    /// The newest version of the stream this process knows of, less the version it applied.
    public let versions: UInt64
    /// How long, in seconds, the oldest version it knows of and has not applied has been known:
    /// 0 when it is caught up.
    public let seconds: Double
}
