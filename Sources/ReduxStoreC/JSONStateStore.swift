internal import CJSONC
internal import CReduxStoreAPI
import ReduxStore

/// The state of a store C created: a json-c tree the store owns. C reducers mutate it in place.
final class JSONCTree: Codable, JSONCTreeRepresentable, @unchecked Sendable {
    // @unchecked: the tree is touched only by the store, under its lock.
    let object: OpaquePointer?

    /// Takes ownership of `object` (one reference).
    init(adopting object: OpaquePointer?) { self.object = object }

    deinit { json_object_put(object) }

    /// A tree of the caller's own: a deep copy of `object` (borrowed), which must keep the rules
    /// of JSON input (nesting depth, no non-finite number): it may come from a saved file.
    init(jsonCObject object: OpaquePointer?) throws(StoreError) {
        try JSONInput.tree(object, "")
        self.object = try JSONCTree.deepCopy(object)
    }

    func makeJSONCObject() throws(StoreError) -> OpaquePointer? {
        try JSONCTree.deepCopy(object)
    }

    static func deepCopy(_ object: OpaquePointer?) throws(StoreError) -> OpaquePointer? {
        guard let object else { return nil }
        var copy: OpaquePointer?
        guard json_object_deep_copy(object, &copy, nil) == 0 else {
            throw StoreError(.outOfMemory, "out of memory copying the state")
        }
        return copy
    }

    // Swift readers of a C store go through JSONValue.
    convenience init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        self.init(adopting: try JSONCEncoder().encode(value))
    }

    func encode(to encoder: any Encoder) throws {
        try JSONCDecoder().decode(JSONValue.self, from: object).encode(to: encoder)
    }
}

/// A store created from C: a `Store<JSONCTree>` whose one Swift reducer calls the C reducers.
final class JSONStateStore: StoreHandle<JSONCTree>, @unchecked Sendable {
    init(state: JSONCTree, version: UInt64, reducers: [rdx_reducer]) {
        // The C reducers work on the tree's root, which never changes (they mutate it in place):
        // one call straight to them per action, without going through the Swift state.
        let reducers = CReducers(reducers, root: state.object)
        super.init(store: Store(
            erasedReducers: [{ _, action in reducers.apply(action) }],
            adopting: state, version: version))
    }

    override func dispatch(
        identifier: UnsafePointer<CChar>, payload: OpaquePointer?, enqueue: Bool
    ) throws(StoreError) {
        if enqueue || store.isInsideReducer {
            // Kept past this call: the action owns copies.
            let action = try CAction(copying: identifier, payload: payload)
            if enqueue { store.enqueueAction(action) } else { store.dispatchAction(action) }
        } else {
            store.dispatchAction(CAction(borrowing: identifier, payload: payload))
        }
    }
}

/// The C reducers of a store, called in order for every action. A buffer this object owns, not
/// an array, so walking it costs no retain and release.
final class CReducers: @unchecked Sendable {
    // @unchecked: immutable; C promised its reducers may be called from any thread, one at a
    // time.
    let reducers: UnsafeMutableBufferPointer<rdx_reducer>
    /// The state tree's root, owned by the store's ``JSONCTree``.
    let root: OpaquePointer?

    init(_ reducers: [rdx_reducer], root: OpaquePointer?) {
        self.reducers = .allocate(capacity: reducers.count)
        _ = self.reducers.initialize(from: reducers)
        self.root = root
    }

    deinit { reducers.deallocate() }

    func apply(_ action: any Action) {
        if let action = action.asCAction {
            for reducer in reducers {
                reducer.reduce!(root, action.identifierPointer, action.payload, reducer.context)
            }
            return
        }
        // A Swift action dispatched to a C store: its identifier, and a JSONAction's payload.
        let payload = (action as? JSONAction)?.payload.flatMap { try? JSONCEncoder().encode($0) }
        defer { json_object_put(payload) }
        action.identifier.withCString { identifier in
            for reducer in reducers {
                reducer.reduce!(root, identifier, payload, reducer.context)
            }
        }
    }
}
