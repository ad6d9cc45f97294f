internal import CJSONC
#if canImport(Glibc)
import Glibc
#endif

/// Saved states and plain JSON files read as documents, and JSON Pointers resolved in them, by
/// the store's own rules: what `reduxstore-inspect` and its library (`ReduxStoreInspectKit`,
/// which adds the journals' summaries and rebuilt states) read files with. Every error is a
/// ``StoreError`` whose message names the file and, where there is one, the byte
/// (`state.json: at byte 12: …`).
package enum Inspector {
    /// A JSON document read from a file: a saved state's state and version, or a plain JSON
    /// file's value (no version).
    package struct Document: Sendable {
        package let value: JSONValue
        package let version: UInt64?
    }

    /// Reads `path`: a saved state (`{"reduxstore":1,"version":N,"state":…}`, as
    /// ``Store/save(to:)`` writes it, read by the rules ``Store/init(contentsOf:reducers:)``
    /// reads it with: any object with `"reduxstore": 1` and a `"state"` is one) or any JSON text.
    package static func readDocument(_ path: String) throws(StoreError) -> Document {
        let bytes: [UInt8]
        switch try RegularFile.read(path, maximumSize: StoreLimits.maximumJSONTextSize) {
        case .bytes(let read): bytes = read
        case .larger(let bound):
            throw StoreError(.limit, "\(path): larger than \(bound) bytes")
        }
        do {
            // The bytes as they are: through a String, invalid UTF-8 would become U+FFFD (read
            // without a word, and every byte offset after it off by two). Parsed as the store
            // parses a saved state, whose root object counts one level more than the state.
            let tree = try bytes.withUnsafeBufferPointer { (buffer) throws(StoreError) in
                try SavedStateFormat.parse(buffer)
            }
            defer { json_object_put(tree) }
            if SavedStateFormat.isMarked(tree) {
                // A saved state, read by the store's own rules.
                let (state, version) = try SavedStateFormat.decode(JSONValue.self, fromTree: tree)
                return Document(value: state, version: version)
            }
            // Any other JSON: the decoder keeps it within the nesting limit.
            return Document(value: try JSONCDecoder().decode(JSONValue.self, from: tree), version: nil)
        } catch {
            throw StoreError(error.kind, "\(path): \(error.message)")
        }
    }

    /// The value at the JSON Pointer `pointer` (RFC 6901; `""` is the whole document).
    package static func value(at pointer: String, in document: JSONValue) throws(StoreError) -> JSONValue {
        var node = document
        var walked = ""
        for token in try JSONPointerPath.tokens(of: pointer) {
            walked += "/" + JSONPointerPath.escape(token)
            switch node {
            case .object(let members):
                guard let member = members[JSONKey(token)] else {
                    throw StoreError(.invalidArgument, "pointer \"\(pointer)\": no member \"\(token)\" at \"\(walked)\"")
                }
                node = member
            case .array(let elements):
                guard let index = JSONPointerPath.index(token), elements.indices.contains(index) else {
                    throw StoreError(
                        .invalidArgument,
                        "pointer \"\(pointer)\": no element \"\(token)\" at \"\(walked)\": the array has \(elements.count) elements")
                }
                node = elements[index]
            default:
                throw StoreError(
                    .invalidArgument, "pointer \"\(pointer)\": \"\(walked)\" goes into \(node.kindName), not an object or array")
            }
        }
        return node
    }
}
