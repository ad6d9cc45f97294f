/// The typed actions a store can rebuild from JSON, by identifier: one registry for payloads
/// dispatched as JSON, replay (a journal's entries) and the journal reader.
///
/// ```swift
/// struct AddTodo: Action, Codable {
///     var title: String
///     var identifier: String { "todo.add" }
/// }
/// var actions = ActionTypes()
/// actions.register(AddTodo.self, for: "todo.add")
/// ```
///
/// A registered identifier's payload (the action's encoded properties) is decoded into the
/// registered type; any other identifier becomes a ``JSONAction`` carrying the payload.
/// Identifiers are matched code point by code point, as JSON compares strings: a type
/// registered for `"caf\u{E9}"` does not decode an action named `"cafe\u{301}"`, which Swift's
/// `String` calls equal.
public struct ActionTypes: Sendable {
    /// Decodes an action from its payload as a json-c tree (borrowed; NULL: no payload).
    typealias Decode = @Sendable (OpaquePointer?) throws -> any Action
    /// Decodes an action from a ``JSONAction`` of its identifier (the payload as a ``JSONValue``).
    typealias DecodeJSONAction = @Sendable (JSONAction) throws -> any Action

    /// What was registered for an identifier: its decoder, and whether its type has no stored
    /// properties (an empty struct, an enum of one case; its size is 0). All the values of such
    /// a type are the same, so one decoded from no payload stands for every later one, and a
    /// store may decode it once.
    @usableFromInline struct Registration: Sendable {
        let decode: Decode
        let isValueless: Bool
    }

    @usableFromInline private(set) var registrations: [JSONKey: Registration] = [:]
    /// The same types' decoders from a ``JSONAction``, by identifier, for a store with routed
    /// reducers (``Reducers``), which decodes a dispatched ``JSONAction`` of a registered identifier.
    private(set) var jsonActionDecoders: [JSONKey: DecodeJSONAction] = [:]

    public init() {}

    /// Decodes payloads of actions named `identifier` into `type`.
    ///
    /// The decoded action is an `A`, and routed reducers (``Reducers/on(identifier:_:)``) see it
    /// under its own ``Action/identifier``. Register a type for the identifier its values have:
    /// registered under another name (an alias), an action dispatched as JSON under that name
    /// reaches the reducers of the type's identifier, not those of the name.
    public mutating func register<A: Action & Decodable>(_ type: A.Type, for identifier: String) {
        registrations[JSONKey(identifier)] = Registration(
            decode: { payload in try JSONCDecoder().decode(A.self, from: payload) },
            isValueless: MemoryLayout<A>.size == 0)
        jsonActionDecoders[JSONKey(identifier)] = { action in try action.decodePayload(as: A.self) }
    }

    /// Whether no type is registered: tested before ``registeredAction(identifier:payload:isValueless:)``
    /// on a dispatch path (inlined there), it spares a store without registered types the call.
    @inlinable @_spi(Bindings) public var isEmpty: Bool { registrations.isEmpty }

    /// The registered identifiers, sorted by code point.
    public var identifiers: [String] { registrations.keys.sorted().map(\.string) }

    /// The action of the type registered for `identifier`, decoded from `payload` (a json-c
    /// tree, borrowed; NULL: none); `nil` when no type is registered for `identifier`.
    /// `isValueless` is set to whether that type has no stored properties (see ``Registration``).
    ///
    /// - Throws: ``StoreError`` naming the coding path (`payload.title: …`) when the payload
    ///   does not decode into the registered type.
    ///
    /// Package: the inspector decodes an action its page dispatches with it.
    package func registeredAction(identifier: String, payload: OpaquePointer?, isValueless: inout Bool)
        throws(StoreError) -> (any Action)?
    {
        guard let registration = registrations[JSONKey(identifier)] else { return nil }
        isValueless = registration.isValueless
        do {
            return try registration.decode(payload)
        } catch {
            throw StoreError(coding: error, prefix: "payload")
        }
    }

    /// The action an identifier and its payload (a json-c tree, borrowed; NULL: none) stand for:
    /// the registered type's, decoded from the payload, or a ``JSONAction`` carrying it.
    ///
    /// - Throws: ``StoreError`` naming the coding path (`payload.title: …`) when the payload
    ///   does not decode into the registered type.
    ///
    /// Package: replication decodes each stored action with it.
    package func action(identifier: String, payload: OpaquePointer?) throws(StoreError) -> any Action {
        var isValueless = false
        if !isEmpty, let action = try registeredAction(identifier: identifier, payload: payload, isValueless: &isValueless) {
            return action
        }
        return try JSONAction(identifier: identifier, jsonCPayload: payload)
    }

    /// Whether a type is registered for `identifier`.
    public func isRegistered(_ identifier: String) -> Bool {
        registrations[JSONKey(identifier)] != nil
    }
}
