/// What an observer is told after an action was applied: ReduxObjC's `StateDidChange`
/// notification, as a value.
public struct StoreNotification: Sendable, Hashable {
    /// The notification's name; the store posts ``Name/stateDidChange``.
    public var name: Name { customName ?? .stateDidChange }
    /// The store's version after the action: 1 for the first action applied, +1 for each after it.
    public let version: UInt64
    /// The identifier of the action that was applied.
    public let actionIdentifier: String
    /// For ``Name/stateDidRestore``: the version whose state was restored
    /// (``Store/restore(version:)``); `nil` otherwise.
    public var restoredVersion: UInt64? { extra?.restoredVersion }
    /// What the action changed, as RFC 6902 operations on the state's JSON form, when an
    /// observer of the store asked for patches (``Store/addObserver(forName:queue:includingPatch:using:)``);
    /// `nil` otherwise. For a batch: the patches of its actions, in order.
    public var patch: [JSONPatch.Operation]? { extra?.patch }
    /// What few notifications carry (a restored version, a patch), kept apart: a dispatch's
    /// notification holds `nil` here, one word, so making and copying it stays cheap.
    private let extra: Extra?
    private final class Extra: Sendable {
        let restoredVersion: UInt64?
        let patch: [JSONPatch.Operation]?
        init(restoredVersion: UInt64?, patch: [JSONPatch.Operation]?) {
            self.restoredVersion = restoredVersion
            self.patch = patch
        }
    }
    /// The name unless it is ``Name/stateDidChange`` (then `nil`): the notification a dispatch
    /// makes holds no name string, so making, copying and matching it costs no string
    /// reference counting and no string comparison.
    private let customName: Name?

    /// Creates a notification value (the store makes them; tests and adapters may too).
    public init(
        name: Name, version: UInt64, actionIdentifier: String, restoredVersion: UInt64? = nil,
        patch: [JSONPatch.Operation]? = nil
    ) {
        self.customName = name
        self.version = version
        self.actionIdentifier = actionIdentifier
        self.extra = restoredVersion == nil && patch == nil
            ? nil : Extra(restoredVersion: restoredVersion, patch: patch)
    }

    /// A ``Name/stateDidChange`` notification, as a dispatch makes it.
    @inline(__always)
    package init(stateDidChangeAt version: UInt64, actionIdentifier: String) {
        self.customName = nil
        self.version = version
        self.actionIdentifier = actionIdentifier
        self.extra = nil
    }

    /// A ``Name/stateDidChange`` notification with the action's patch.
    package init(stateDidChangeAt version: UInt64, actionIdentifier: String, patch: [JSONPatch.Operation]) {
        self.customName = nil
        self.version = version
        self.actionIdentifier = actionIdentifier
        self.extra = Extra(restoredVersion: nil, patch: patch)
    }

    /// Whether this is a ``Name/stateDidChange`` notification as a dispatch makes it (no string
    /// comparison); `false` for one made with ``init(name:version:actionIdentifier:)``, whose
    /// name is then compared as a string.
    @inline(__always)
    package var isStateDidChange: Bool { customName == nil }

    // Equal and hashed by the name, whichever way it is held.
    public static func == (lhs: StoreNotification, rhs: StoreNotification) -> Bool {
        lhs.version == rhs.version && lhs.actionIdentifier == rhs.actionIdentifier
            && lhs.restoredVersion == rhs.restoredVersion && lhs.patch == rhs.patch
            && lhs.name == rhs.name
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
    /// The token's number (the C face hands it out as a `uint64_t`); never 0.
    public let rawValue: UInt64
    package init(rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "ObserverToken(\(rawValue))" }
}
