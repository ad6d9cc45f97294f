internal import CJSONC
#if canImport(Glibc)
import Glibc
#endif

/// A JSON document read from a file: a saved state's state and version, or a plain JSON file's
/// value (no version). What `reduxstore-inspect` reads its files with.
///
/// ```swift
/// let document = try JSONDocument(contentsOf: "state.json")
/// print(document.version ?? 0, try document.value.value(atPointer: "/todos/0/title"))
/// ```
public struct JSONDocument: Sendable {
    /// The state of a saved state, or the whole value of a plain JSON file.
    public let value: JSONValue
    /// A saved state's version; `nil` for a plain JSON file.
    public let version: UInt64?

    /// Reads `path`: a saved state (`{"reduxstore":1,"version":N,"state":…}`, as
    /// ``Store/save(to:)`` writes it, read by the rules
    /// ``Store/init(contentsOf:reducers:)-(_,[Reducer<State>])`` reads it with: any object with
    /// `"reduxstore": 1` and a `"state"` is one) or any JSON text.
    ///
    /// - Parameter path: the file to read.
    /// - Throws: ``StoreError`` whose message names the file and, where there is one, the byte
    ///   (`state.json: at byte 12: …`): ``StoreError/Kind/io`` for a file that is missing, not a
    ///   regular file or unreadable, ``StoreError/Kind/limit`` for one larger than
    ///   ``StoreLimits/maximumJSONTextSize`` bytes or nested deeper than
    ///   ``StoreLimits/maximumNestingDepth``, ``StoreError/Kind/parse`` for text that is not
    ///   JSON, and what reading a saved state throws for a marked object that is not a valid one.
    public init(contentsOf path: String) throws(StoreError) {
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
                (value, version) = try SavedStateFormat.decode(JSONValue.self, fromTree: tree)
            } else {
                // Any other JSON: the decoder keeps it within the nesting limit.
                value = try JSONCDecoder().decode(JSONValue.self, from: tree)
                version = nil
            }
        } catch {
            throw StoreError(error.kind, "\(path): \(error.message)")
        }
    }
}

extension JSONValue {
    /// The value at the JSON Pointer `pointer` (RFC 6901; `""` is the whole value, `"/a~1b/0"`
    /// the first element of the member `a/b`).
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/decode`` for text that is not a JSON
    ///   Pointer (neither `""` nor starting with `/`), ``StoreError/Kind/invalidArgument`` naming
    ///   how far the pointer went for a member or element that is not there or a step into a value
    ///   that is not an object or array.
    public func value(atPointer pointer: String) throws(StoreError) -> JSONValue {
        var node = self
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
