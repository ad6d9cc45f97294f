/// What went wrong with a replicated store, in words: the stream, and the version where there is
/// one. Never the password of the connection.
public struct ReplicationError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// A connection string, a name or an option that is not acceptable.
        case invalidArgument
        /// The server could not be reached, or the connection was lost and not regained in time.
        case connection
        /// The server refused the user or the password.
        case authentication
        /// The server answered a statement with an error (a missing database, a permission).
        case server
        /// The stream's tables were made by a newer version of this library.
        case schema
        /// A stored action's payload, or a stored snapshot's state, does not decode into the
        /// program's types: the replica stops at that version rather than skip it.
        case decode
        /// The replica's state at a version differs from the snapshot another process stored
        /// at that version: the reducers are not deterministic (or the programs differ).
        case divergence
        /// The versions this replica needs next were trimmed by the retention policy.
        case trimmed
        /// The replicated store was closed, or stopped by an earlier failure.
        case closed
        /// A write to the store that only the stream may make (a follower's dispatch).
        case readOnly
    }

    public let kind: Kind
    /// The stream's name.
    public let stream: String
    /// The stream's version the failure concerns, when there is one.
    public let version: UInt64?
    /// What happened, in words.
    public let message: String
    /// Whether the same call may succeed if tried again soon: a lost connection, a full
    /// connection table, an administrator's shutdown, a serialization failure, a deadlock, a
    /// lock or statement timeout. The library retries these itself, with back-off, within
    /// ``ReplicationOptions/reconnectTimeout``; one that reaches the program outlasted it.
    public let isTransient: Bool

    /// What became of a dispatch, as the error that answers it says.
    public enum DispatchOutcome: Sendable, Equatable {
        /// Nothing of it was stored: no request reached the server, or the server refused it.
        case notStored
        /// A request reached the server and its answer was lost: the action may have been
        /// committed. Learn which from the stream — ``ReplicationError/writer`` and
        /// ``ReplicationError/sequence`` name it in the `writer` and `seq` columns of the
        /// `actions` table — or from the replica, which applies it, if it was committed, when
        /// it reads the stream (``ReplicatedStore/catchUp()``).
        case unknown
        /// Committed, durably, at this version, but not applied by this replica (it stopped, or
        /// could not read the stream): every other replica applies it.
        case stored(version: UInt64)
    }

    /// What became of the dispatch this error answers; `nil` for an error that answers no
    /// dispatch (opening, following, ``ReplicatedStore/catchUp()``).
    public let outcome: DispatchOutcome?
    /// The name this process writes its actions under (the `writer` column), when this error
    /// answers a dispatch that reached the server.
    public let writer: String?
    /// The dispatch's sequence number among this writer's (the `seq` column), with ``writer``.
    public let sequence: Int64?

    public init(_ kind: Kind, stream: String = "", version: UInt64? = nil, _ message: String) {
        self.init(kind, stream: stream, version: version, message, transient: kind == .connection)
    }

    init(
        _ kind: Kind, stream: String = "", version: UInt64? = nil, _ message: String, transient: Bool,
        outcome: DispatchOutcome? = nil, writer: String? = nil, sequence: Int64? = nil
    ) {
        self.kind = kind
        self.stream = stream
        self.version = version
        self.message = message
        self.isTransient = transient
        self.outcome = outcome
        self.writer = writer
        self.sequence = sequence
    }

    /// The same error as the answer to a dispatch refused before it was sent.
    ///
    /// Package: the C face refuses a dispatch from a forked child on C's thread, before the
    /// replicator sees it.
    package func refusingDispatch() -> ReplicationError {
        ReplicationError(
            kind, stream: stream, version: version, message + "; nothing was stored", transient: isTransient,
            outcome: .notStored)
    }

    /// The same error as the answer to the dispatch `sequence` of `writer`, whose outcome it
    /// states in its words too, so that C programs (`rdx_last_error()`) can test them:
    /// "outcome unknown", "stored at version N", "nothing was stored".
    func answering(writer: String, sequence: Int64, outcome: DispatchOutcome) -> ReplicationError {
        let words: String
        switch outcome {
        case .notStored:
            words = "nothing was stored"
        case .unknown:
            words = "outcome unknown: the action may have been committed, as writer \(writer), seq \(sequence) "
                + "(if it was, this replica applies it when it reads the stream)"
        case .stored(let version):
            words = "stored at version \(version) (writer \(writer), seq \(sequence)) but not applied by this replica"
        }
        return ReplicationError(
            kind, stream: stream, version: self.version, message + "; " + words, transient: isTransient,
            outcome: outcome, writer: outcome == .notStored ? nil : writer,
            sequence: outcome == .notStored ? nil : sequence)
    }

    /// Whether this error stops a replica for good: what retrying cannot heal (a refused
    /// password, tables of a newer library, a payload or snapshot that does not decode, a
    /// divergence, trimmed versions). Everything else fails the call it happened to and is
    /// retried by the next.
    var stopsReplica: Bool {
        switch kind {
        case .authentication, .schema, .decode, .divergence, .trimmed: true
        case .invalidArgument, .connection, .server, .closed, .readOnly: false
        }
    }

    /// `stream "counter", version 42: …`.
    public var description: String {
        var text = stream.isEmpty ? "" : "stream \"\(stream)\""
        if let version { text += text.isEmpty ? "version \(version)" : ", version \(version)" }
        return text.isEmpty ? message : "\(text): \(message)"
    }

    /// The same error, naming `stream` (and `version` when it named none).
    func naming(stream: String, version: UInt64? = nil) -> ReplicationError {
        ReplicationError(
            kind, stream: stream, version: self.version ?? version, message, transient: isTransient,
            outcome: outcome, writer: writer, sequence: sequence)
    }
}
