internal import CJSONC
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// Checks of what C hands the store, each failing with the status and words the header promises.
enum CInput {
    /// A non-NULL argument, or `RDX_EINVAL` naming it.
    static func required<T>(_ value: T?, _ name: String) throws(StoreError) -> T {
        guard let value else { throw StoreError(.invalidArgument, "\(name) is NULL") }
        return value
    }

    /// An action identifier: not NULL, at most ``StoreLimits/maximumIdentifierLength`` bytes,
    /// valid UTF-8.
    static func identifier(_ pointer: UnsafePointer<CChar>?) throws(StoreError)
        -> UnsafePointer<CChar>
    {
        let pointer = try required(pointer, "identifier")
        let limit = StoreLimits.maximumIdentifierLength
        let length = strnlen(pointer, limit + 1)
        guard length <= limit else {
            throw StoreError(.limit, "identifier is longer than \(limit) bytes")
        }
        try utf8(pointer, length: length, what: "identifier")
        return pointer
    }

    /// Fails with `RDX_EDECODE` if the bytes are not valid UTF-8. ASCII is checked byte by byte;
    /// only text with other bytes is decoded.
    static func utf8(_ pointer: UnsafePointer<CChar>, length: Int, what: String) throws(StoreError) {
        let bytes = UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self)
        var index = 0
        while index < length, bytes[index] < 0x80 { index += 1 }
        if index == length { return }
        let buffer = UnsafeBufferPointer(start: bytes, count: length)
        var decoder = Unicode.UTF8.ForwardParser()
        var iterator = buffer.makeIterator()
        while true {
            switch decoder.parseScalar(from: &iterator) {
            case .valid: continue
            case .emptyInput: return
            case .error: throw StoreError(.decode, "\(what) is not valid UTF-8")
            }
        }
    }

    /// A tree C hands in (a payload, an initial state): at most
    /// ``StoreLimits/maximumNestingDepth`` arrays and objects inside each other, and no
    /// non-finite number (JSON has none; a saved file could not hold it).
    ///
    /// - Parameter containersAbove: containers around the tree in the input it came in (the
    ///   action object around a payload parsed from action text).
    static func tree(_ object: OpaquePointer?, _ name: String, containersAbove: Int = 0)
        throws(StoreError)
    {
        guard let object else { return }
        try check(object, name, containersAbove: containersAbove)
    }

    private static func check(_ object: OpaquePointer, _ path: String, containersAbove: Int)
        throws(StoreError)
    {
        let limit = StoreLimits.maximumNestingDepth
        switch json_object_get_type(object) {
        case json_type_array, json_type_object:
            let depth = containersAbove + 1
            guard depth <= limit else {
                let root = path.prefix(while: { $0 != "." && $0 != "[" })
                throw StoreError(.limit, "\(root) is nested deeper than \(limit) levels")
            }
            if json_object_get_type(object) == json_type_array {
                let count = json_object_array_length(object)
                for index in 0..<count {
                    if let element = json_object_array_get_idx(object, index) {
                        try check(element, "\(path)[\(index)]", containersAbove: depth)
                    }
                }
            } else {
                var iterator = json_object_iter_begin(object)
                var end = json_object_iter_end(object)
                while json_object_iter_equal(&iterator, &end) == 0 {
                    if let member = json_object_iter_peek_value(&iterator) {
                        let key = String(cString: json_object_iter_peek_name(&iterator))
                        try check(member, "\(path).\(key)", containersAbove: depth)
                    }
                    json_object_iter_next(&iterator)
                }
            }
        case json_type_double:
            guard json_object_get_double(object).isFinite else {
                throw StoreError(.decode, codingPath: path, detail: "non-finite number is not valid JSON")
            }
        default:
            break
        }
    }

    /// Parses `{"identifier": "...", "payload": ...}` and hands the identifier and payload
    /// (borrowed from the parsed tree, which is freed after `body`) to `body`.
    static func withParsedAction<T>(
        _ text: UnsafePointer<CChar>?,
        _ body: (UnsafePointer<CChar>, OpaquePointer?) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        let text = try required(text, "action_json")
        let limit = StoreLimits.maximumJSONTextSize
        let length = strnlen(text, limit + 1)
        guard length <= limit else {
            throw StoreError(.limit, "action_json is longer than \(limit) bytes")
        }
        // The limit is on the text as a whole, the action object included. json-c's depth counts
        // one more than the containers it lets nest, and does not count the inside of an empty
        // container: the payload's depth is checked again after parsing.
        let root = try JSONCText.parse(
            text, length: length, maximumDepth: StoreLimits.maximumNestingDepth + 1)
        defer { json_object_put(root) }
        guard let root, json_object_get_type(root) == json_type_object else {
            throw StoreError(.decode, "action: expected object, found \(JSONCText.typeName(root))")
        }
        var identifier: OpaquePointer?
        var payload: OpaquePointer?
        var iterator = json_object_iter_begin(root)
        var end = json_object_iter_end(root)
        while json_object_iter_equal(&iterator, &end) == 0 {
            let key = String(cString: json_object_iter_peek_name(&iterator))
            let value = json_object_iter_peek_value(&iterator)
            switch key {
            case "identifier": identifier = value
            case "payload": payload = value
            default:
                throw StoreError(.decode, "action.\(key): unexpected key (an action has \"identifier\" and \"payload\")")
            }
            json_object_iter_next(&iterator)
        }
        guard json_object_object_get_ex(root, "identifier", nil) != 0 else {
            throw StoreError(.decode, "identifier: key not found")
        }
        guard let identifier, json_object_get_type(identifier) == json_type_string else {
            throw StoreError(.decode, "identifier: expected string, found \(JSONCText.typeName(identifier))")
        }
        let pointer = json_object_get_string(identifier)!
        let byteCount = Int(json_object_get_string_len(identifier))
        guard strlen(pointer) == byteCount else {
            throw StoreError(.decode, "identifier contains a NUL character")
        }
        let checked = try CInput.identifier(pointer)
        try tree(payload, "action_json", containersAbove: 1)
        return try body(checked, payload)
    }
}
