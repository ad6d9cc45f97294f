// What the C face (module ReduxStoreC) uses of the json-c bridge besides the two coders: JSON
// text in and out through json-c, and values that are json-c trees already.

internal import CJSONC

/// A value that is a json-c tree itself (a C store's state, say). ``JSONCEncoder`` and
/// ``JSONCDecoder`` hand such values over as trees, skipping `Codable` altogether; other coders
/// use the type's `Codable` conformance as usual.
package protocol JSONCTreeRepresentable {
    /// Makes a value from `object`, which is borrowed (copy what is kept). `nil` is JSON null.
    init(jsonCObject object: OpaquePointer?) throws(StoreError)

    /// Returns a new tree for this value: a reference the caller owns, `nil` for JSON null.
    func makeJSONCObject() throws(StoreError) -> OpaquePointer?
}

/// JSON text through json-c's tokener, for callers outside this module.
package enum JSONCText {
    /// Parses `length` bytes of UTF-8 JSON text at `text` (NUL termination not needed) into a
    /// new tree the caller owns (`nil` for `null`), with json-c's strict tokener.
    ///
    /// - Parameter maximumDepth: json-c's depth: `limit + 1` lets `limit` containers nest.
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/parse`` naming the byte offset, or
    ///   ``StoreError/Kind/limit`` for text longer than ``StoreLimits/maximumJSONTextSize`` or
    ///   nested too deep.
    package static func parse(
        _ text: UnsafePointer<CChar>, length: Int,
        maximumDepth: Int = StoreLimits.maximumNestingDepth + 1
    ) throws(StoreError) -> OpaquePointer? {
        let bytes = UnsafeBufferPointer(
            start: UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self), count: length)
        return try JSONC.parse(bytes, maximumDepth: maximumDepth)
    }

    /// Prints a tree (borrowed; `nil` prints as `null`) as compact or pretty JSON text.
    package static func print(_ object: OpaquePointer?, pretty: Bool = false) throws(StoreError) -> String {
        try JSONC.print(object, pretty: pretty)
    }

    /// The JSON kind of a node, as messages name it: `null`, `boolean`, `number`, `string`,
    /// `array` or `object`.
    package static func typeName(_ object: OpaquePointer?) -> String {
        JSONC.kindName(object)
    }
}
