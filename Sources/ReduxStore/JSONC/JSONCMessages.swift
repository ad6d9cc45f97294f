// The words the json-c bridge uses in messages and errors: a node's kind, a number's text, and
// the standard `DecodingError`s with the coding path.

internal import CJSONC
import FoundationEssentials

extension JSONC {
    // MARK: Describing values in messages

    /// The JSON kind of a node, as error messages name it: `null`, `boolean`, `number`, …
    static func kindName(_ node: OpaquePointer?) -> String {
        guard let node else { return "null" }
        switch json_object_get_type(node) {
        case json_type_null: return "null"
        case json_type_boolean: return "boolean"
        case json_type_int, json_type_double: return "number"
        case json_type_string: return "string"
        case json_type_array: return "array"
        case json_type_object: return "object"
        default: return "unknown value"
        }
    }

    /// Text for a number node in a message: `300`, `3.5`, `-1`, `1e+20`.
    static func numberText(_ node: OpaquePointer) -> String {
        if json_object_get_type(node) == json_type_int {
            let signed = json_object_get_int64(node)
            return signed < 0 ? String(signed) : String(json_object_get_uint64(node))
        }
        return json_object_get_double(node).description
    }

    /// The error for "this is not the kind of value that was asked for".
    static func mismatch(
        _ type: Any.Type, _ node: OpaquePointer?, _ path: [any CodingKey],
        expected: String? = nil
    ) -> DecodingError {
        let found: String
        if let node, json_object_get_type(node) == json_type_double,
           json_object_get_double(node).isFinite {
            // A fractional number where an integer was asked for names the number itself.
            found = numberText(node)
        } else if let node, json_object_get_type(node) == json_type_double {
            found = json_object_get_double(node).description
        } else {
            found = kindName(node)
        }
        let context = DecodingError.Context(
            codingPath: path, debugDescription: "expected \(expected ?? typeName(type)), found \(found)")
        return node == nil
            ? DecodingError.valueNotFound(type, context)
            : DecodingError.typeMismatch(type, context)
    }

    /// `number 300 does not fit in UInt8`.
    static func doesNotFit(_ text: String, _ type: Any.Type, _ path: [any CodingKey]) -> DecodingError {
        DecodingError.dataCorrupted(.init(
            codingPath: path, debugDescription: "number \(text) does not fit in \(typeName(type))"))
    }

    /// The short name messages use for a type: `Int32`, `String`, `Item`.
    static func typeName(_ type: Any.Type) -> String {
        String(describing: type)
    }

    /// The limit error for values nested deeper than ``StoreLimits/maximumNestingDepth``.
    static func tooDeep(_ path: [any CodingKey]) -> StoreError {
        let place = CodingPath.describe(path)
        let detail = "nesting deeper than \(StoreLimits.maximumNestingDepth) levels"
        return StoreError(.limit, place.isEmpty ? detail : "\(place): \(detail)")
    }
}
