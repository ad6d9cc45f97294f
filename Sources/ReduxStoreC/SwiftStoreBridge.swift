internal import CJSONC
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// The typed Swift actions a Swift store accepts from C, by identifier.
///
/// When C dispatches an action whose identifier is registered here, its payload is decoded
/// straight from the json-c tree into the registered type (the payload holds the type's
/// properties). Any other identifier reaches the reducers as a ``JSONAction``.
///
/// ```swift
/// struct AddTodo: Action, Decodable {
///     var title: String
///     var identifier: String { "todo.add" }
/// }
/// var actions = CActionTypes()
/// actions.register(AddTodo.self, for: "todo.add")
/// let handle = store.makeCStore(actions: actions)   // an rdx_store * for C
/// ```
public struct CActionTypes: Sendable {
    typealias Decode = @Sendable (OpaquePointer?) throws -> any Action

    var decoders: [String: Decode] = [:]

    public init() {}

    /// Decodes payloads of actions named `identifier` into `type`.
    public mutating func register<A: Action & Decodable>(_ type: A.Type, for identifier: String) {
        decoders[identifier] = { payload in try JSONCDecoder().decode(A.self, from: payload) }
    }
}

extension Store {
    /// Hands C a handle on this store: an `rdx_store *` with one reference, which C releases
    /// with `rdx_store_release()`. C dispatches JSON through it; C snapshots are the state
    /// encoded to a json-c tree; C observers hear every action, whoever dispatched it.
    ///
    /// The handle keeps the store alive. When the last reference is released, the observers
    /// registered through it are removed; the store lives on as long as Swift holds it.
    ///
    /// - Parameter actions: the typed actions payloads are decoded into, by identifier.
    /// - Returns: the `rdx_store *`, as Swift imports the C type.
    public func makeCStore(actions: CActionTypes = CActionTypes()) -> OpaquePointer {
        SwiftStoreHandle(store: self, actions: actions).openedPointer()
    }
}

/// A Swift store reached from C.
final class SwiftStoreHandle<State: Codable>: StoreHandle<State>, @unchecked Sendable {
    let actions: CActionTypes

    init(store: Store<State>, actions: CActionTypes) {
        self.actions = actions
        super.init(store: store)
    }

    override func dispatch(
        identifier: UnsafePointer<CChar>, payload: OpaquePointer?, enqueue: Bool
    ) throws(StoreError) {
        let action = try makeAction(identifier: identifier, payload: payload)
        if enqueue {
            try enqueueing { store.enqueue(erased: action) }
        } else {
            store.dispatch(erased: action)
        }
    }

    /// A registered type's action decoded from the payload, or a ``JSONAction``: Swift values
    /// that own what they hold.
    override func makeAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?)
        throws(StoreError) -> any Action
    {
        // Copied into a String of the known length (CInput.identifier checked its UTF-8): about
        // half the instructions of String(cString:), which measures the length and repairs.
        let length = strlen(identifier)
        let name = String(unsafeUninitializedCapacity: length) { buffer in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(
                from: UnsafeRawBufferPointer(start: identifier, count: length))
            return length
        }
        if !actions.decoders.isEmpty, let decode = actions.decoders[name] {
            do {
                return try decode(payload)
            } catch {
                throw StoreError(coding: error, prefix: "payload")
            }
        }
        return try JSONAction(identifier: name, jsonCPayload: payload)
    }
}
