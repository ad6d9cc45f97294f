internal import CJSONC
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// The registry of typed actions C payloads are decoded into: ``ActionTypes``, by its name
/// before it moved to the core (where replay and the journal reader use it too).
public typealias CActionTypes = ActionTypes

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
    public func makeCStore(actions: ActionTypes = ActionTypes()) -> OpaquePointer {
        CStoreHandle(core: SwiftStoreCore(store: self, actions: actions)).openedPointer()
    }
}

/// A Swift store reached from C: C's actions become typed actions or ``JSONAction``s.
final class SwiftStoreCore<State: Codable>: CStoreCore, @unchecked Sendable {
    // @unchecked: `store` and `actions` are Sendable; `State` itself need not be.
    let store: Store<State>
    let actions: ActionTypes

    init(store: Store<State>, actions: ActionTypes) {
        self.store = store
        self.actions = actions
    }

    func dispatch(identifier: UnsafePointer<CChar>, payload: OpaquePointer?, source: DispatchSite)
        throws(StoreError)
    {
        let action = try makeAction(identifier: identifier, payload: payload)
        try store.checkMiddlewareDepth()
        store.dispatch(erased: action, source: source)
    }

    /// A registered type's action decoded from the payload, or a ``JSONAction``: Swift values
    /// that own what they hold.
    /// A Swift store's actions own what they hold (decoded values), so a batch's are the same.
    func makeBatchAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?)
        throws(StoreError) -> any Action
    {
        try makeAction(identifier: identifier, payload: payload)
    }

    func makeAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?)
        throws(StoreError) -> any Action
    {
        // Copied into a String of the known length (CInput.identifier checked its UTF-8): cheaper
        // than String(cString:), which measures the length and repairs (Benchmarks/README.md has
        // the figures).
        let length = strlen(identifier)
        let name = String(unsafeUninitializedCapacity: length) { buffer in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(
                from: UnsafeRawBufferPointer(start: identifier, count: length))
            return length
        }
        if let decode = actions.decoder(for: name) {
            do {
                return try decode(payload)
            } catch {
                throw StoreError(coding: error, prefix: "payload")
            }
        }
        return try JSONAction(identifier: name, jsonCPayload: payload)
    }
}
