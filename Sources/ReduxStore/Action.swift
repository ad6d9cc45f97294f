/// Something that happened, told to the store. The only way to change a store's state is to
/// dispatch an action; every reducer of the store sees every action (of a store made from
/// ``Reducers``: every reducer of the action's type, of its identifier, or of every action).
///
/// Any `Sendable` type can be an action. Value types whose stored properties fit in three machine
/// words (an enum, or a struct of an identifier and a number) are dispatched without a heap
/// allocation.
public protocol Action: Sendable {
    /// What kind of action this is, such as `"todo.toggle"`. Reducers switch on it; observers are
    /// told it with each notification.
    var identifier: String { get }

    /// Whether observers hear of this action: `true` unless the action says otherwise. An action
    /// that returns `false` is applied as any other (the reducers run, the version grows) but
    /// posts no notification: no observer, key-path observer or state stream is told of it. The
    /// next notifying action tells them of the state as it then is.
    ///
    /// ```swift
    /// struct CursorMoved: Action {
    ///     let identifier = "cursor.moved"
    ///     var notifiesObservers: Bool { false }
    /// }
    /// ```
    var notifiesObservers: Bool { get }
}

extension Action {
    /// `true`: an action notifies observers unless it opts out.
    @inlinable
    public var notifiesObservers: Bool { true }
}

/// A reducer: mutates the state in place for one action. Reducers run in the order the store was
/// given them, one action at a time, while the store holds its lock; they must not block on
/// other threads that use the same store.
public typealias Reducer<State> = @Sendable (_ state: inout State, _ action: any Action) -> Void

/// An action whose payload is untyped JSON: what a program sends that knows the action only as
/// JSON, and what Swift code can use when an action has no type of its own.
///
/// Three machine words (the identifier and a reference to the payload), so dispatching one
/// without a payload allocates nothing.
public struct JSONAction: Action, Hashable {
    public let identifier: String
    /// Where a payload is kept: a reference, so the action stays small enough to travel in an
    /// `any Action` without a box of its own.
    private let payloadStorage: PayloadStorage?

    /// The payload, or `nil` when the action carries none (`"payload": null` is also `nil`).
    public var payload: JSONValue? { payloadStorage?.value }

    /// Creates an action with an identifier and an optional JSON payload.
    public init(identifier: String, payload: JSONValue? = nil) {
        self.identifier = identifier
        self.payloadStorage = payload.map(PayloadStorage.init)
    }

    /// Decodes the payload into a typed value. A missing payload decodes as JSON `null`.
    ///
    /// Costs one encode of the payload into a snapshot tape and one decode from it.
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/decode`` whose message names the coding
    ///   path below `payload`, such as `payload.items[3].title: expected String, found number`.
    public func decodePayload<T: Decodable>(as type: T.Type = T.self) throws(StoreError) -> T {
        try JSONValue.decode(type, from: payload ?? .null, prefix: "payload")
    }

    /// Equal when the identifiers have the same code points (as ``JSONKey`` compares them) and
    /// the payloads are equal ``JSONValue``s.
    public static func == (lhs: JSONAction, rhs: JSONAction) -> Bool {
        JSONKey.sameCodePoints(lhs.identifier, rhs.identifier) && lhs.payload == rhs.payload
    }

    public func hash(into hasher: inout Hasher) {
        JSONKey.hashCodePoints(identifier, into: &hasher)
        hasher.combine(payload)
    }

    private final class PayloadStorage: Sendable {
        let value: JSONValue
        init(_ value: JSONValue) { self.value = value }
    }
}

extension JSONAction: Codable {
    private enum CodingKeys: String, CodingKey {
        case identifier, payload
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            identifier: try container.decode(String.self, forKey: .identifier),
            payload: try container.decodeIfPresent(JSONValue.self, forKey: .payload))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(identifier, forKey: .identifier)
        try container.encodeIfPresent(payload, forKey: .payload)
    }
}
