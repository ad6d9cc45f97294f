internal import CJSONC
internal import CReduxStoreAPI
@_spi(Bindings) import ReduxStore

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
