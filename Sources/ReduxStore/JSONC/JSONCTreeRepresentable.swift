// Values that are json-c trees already: the coders hand them over as trees.

internal import CJSONC

/// A value that is a json-c tree itself (a store's state that its reducers edit as a tree).
/// ``JSONCEncoder`` and ``JSONCDecoder`` hand such values over as trees, skipping `Codable`
/// altogether; other coders use the type's `Codable` conformance as usual.
@_spi(Bindings) public protocol JSONCTreeRepresentable {
    /// Makes a value from `object`, which is borrowed (copy what is kept). `nil` is JSON null.
    init(jsonCObject object: OpaquePointer?) throws(StoreError)

    /// Returns a new tree for this value: a reference the caller owns, `nil` for JSON null.
    func makeJSONCObject() throws(StoreError) -> OpaquePointer?
}
