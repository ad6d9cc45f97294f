/// What an observer is told after an action was applied: ReduxObjC's `StateDidChange`
/// notification, as a value.
public struct StoreNotification: Sendable, Hashable {
    /// The notification's name; the store posts ``Name/stateDidChange``.
    public let name: Name
    /// The store's version after the action: 1 for the first action applied, +1 for each after it.
    public let version: UInt64
    /// The identifier of the action that was applied.
    public let actionIdentifier: String

    /// Creates a notification value (the store makes them; tests and adapters may too).
    public init(name: Name, version: UInt64, actionIdentifier: String) {
        self.name = name
        self.version = version
        self.actionIdentifier = actionIdentifier
    }

    /// A notification name, as NotificationCenter spells them.
    public struct Name: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
    }
}

extension StoreNotification.Name {
    /// Posted after each applied action: `"RDXStateDidChangeNotification"`.
    public static let stateDidChange = StoreNotification.Name("RDXStateDidChangeNotification")
}

/// Identifies one observer registration. Pass it to ``Store/removeObserver(_:)``; dropping it does
/// not remove the observer. Tokens are unique across all stores of a process and never reused.
public struct ObserverToken: Hashable, Sendable, CustomStringConvertible {
    /// The token's number (the C face hands it out as a `uint64_t`); never 0.
    public let rawValue: UInt64
    package init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "ObserverToken(\(rawValue))" }
}
