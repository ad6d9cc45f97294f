/// What an observer is told after an action was applied: ReduxObjC's `StateDidChange`
/// notification, as a value.
public struct StoreNotification: Sendable, Hashable {
    /// The notification's name; the store posts ``Name/stateDidChange`` and, after
    /// ``Store/restore(version:)``, ``Name/stateDidRestore``.
    public var name: Name { custom?.name ?? .stateDidChange }
    /// The store's version after the action: 1 for the first action applied, +1 for each after it.
    public let version: UInt64
    /// The identifier of the action that was applied.
    public let actionIdentifier: String
    /// For ``Name/stateDidRestore``: the version whose state was restored
    /// (``Store/restore(version:)``); `nil` otherwise.
    public var restoredVersion: UInt64? { custom?.restoredVersion }
    /// The name and restored version, or `nil` for a plain ``Name/stateDidChange``: the
    /// notification a dispatch makes holds one empty word here, so making, copying and matching
    /// it costs no reference counting and no string comparison.
    private let custom: Custom?

    private final class Custom: Sendable {
        let name: Name
        let restoredVersion: UInt64?
        init(name: Name, restoredVersion: UInt64?) {
            self.name = name
            self.restoredVersion = restoredVersion
        }
    }

    /// Creates a notification value (the store makes them; tests and adapters may too).
    public init(name: Name, version: UInt64, actionIdentifier: String) {
        self.init(name: name, version: version, actionIdentifier: actionIdentifier, restoredVersion: nil)
    }

    /// Creates a notification that carries the version a restore came from.
    public init(name: Name, version: UInt64, actionIdentifier: String, restoredVersion: UInt64?) {
        // A plain `stateDidChange` holds nothing here, as a dispatch's does.
        self.custom = name == .stateDidChange && restoredVersion == nil
            ? nil : Custom(name: name, restoredVersion: restoredVersion)
        self.version = version
        self.actionIdentifier = actionIdentifier
    }

    /// A ``Name/stateDidChange`` notification, as a dispatch makes it: equal to one made with
    /// ``init(name:version:actionIdentifier:)`` and that name, without comparing the name.
    @inline(__always)
    public init(stateDidChangeAt version: UInt64, actionIdentifier: String) {
        self.custom = nil
        self.version = version
        self.actionIdentifier = actionIdentifier
    }

    /// Whether this is a plain ``Name/stateDidChange`` notification, as a dispatch makes it (no
    /// string comparison).
    @inline(__always)
    @_spi(Bindings) public var isStateDidChange: Bool { custom == nil }

    // Equal and hashed by the name, whichever way it is held; action identifiers compare code
    // point by code point, as ``JSONAction``'s do (the hash of equal bytes is equal).
    public static func == (lhs: StoreNotification, rhs: StoreNotification) -> Bool {
        lhs.version == rhs.version && JSONKey.sameCodePoints(lhs.actionIdentifier, rhs.actionIdentifier)
            && lhs.restoredVersion == rhs.restoredVersion && lhs.name == rhs.name
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(version)
        hasher.combine(actionIdentifier)
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
    /// Posted after ``Store/restore(version:)``: `"RDXStateDidRestoreNotification"`, with
    /// ``StoreNotification/restoredVersion``.
    public static let stateDidRestore = StoreNotification.Name("RDXStateDidRestoreNotification")
}

/// Identifies one observer registration. Pass it to ``Store/removeObserver(_:)``; dropping it does
/// not remove the observer. Tokens are unique across all stores of a process and never reused.
public struct ObserverToken: Hashable, Sendable, CustomStringConvertible {
    /// The token's number, unique among all stores' tokens; never 0.
    public let rawValue: UInt64
    init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "ObserverToken(\(rawValue))" }
}
