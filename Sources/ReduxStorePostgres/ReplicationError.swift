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

    public init(_ kind: Kind, stream: String = "", version: UInt64? = nil, _ message: String) {
        self.kind = kind
        self.stream = stream
        self.version = version
        self.message = message
    }

    /// `stream "counter", version 42: …`.
    public var description: String {
        var text = stream.isEmpty ? "" : "stream \"\(stream)\""
        if let version { text += text.isEmpty ? "version \(version)" : ", version \(version)" }
        return text.isEmpty ? message : "\(text): \(message)"
    }

    /// The same error, naming `stream` (and `version` when it named none).
    func naming(stream: String, version: UInt64? = nil) -> ReplicationError {
        ReplicationError(kind, stream: stream, version: self.version ?? version, message)
    }
}
