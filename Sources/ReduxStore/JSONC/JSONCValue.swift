// Values of the json-c bridge: reading scalars out of borrowed json-c nodes, making new nodes,
// and the keys of objects.
//
// Ownership, everywhere in this folder: a pointer passed to a `make…` helper's caller is a new
// reference the caller owns; a pointer given to a `read…` helper is borrowed and never changed.

internal import CJSONC
import FoundationEssentials

/// Helpers over json-c values. Not public: json-c types never appear in the module's API. Split
/// by concern over this file (values), JSONCMessages.swift (the words of errors) and
/// JSONCText.swift (JSON text in and out).
enum JSONC {
    /// How deep in Swift calls (values inside values, counting single-value wrappers) coding may
    /// go before it is refused: a guard against stack overflow well above any JSON nesting the
    /// limit lets through.
    static let maximumValueDepth = StoreLimits.maximumNestingDepth * 4

    // MARK: Reading scalars (borrowed nodes)

    static func readBool(_ node: OpaquePointer?, _ path: () -> [any CodingKey]) throws -> Bool {
        guard let node, json_object_get_type(node) == json_type_boolean else {
            throw mismatch(Bool.self, node, path())
        }
        return json_object_get_boolean(node) != 0
    }

    static func readString(_ node: OpaquePointer?, _ path: () -> [any CodingKey]) throws -> String {
        guard let node, json_object_get_type(node) == json_type_string else {
            throw mismatch(String.self, node, path())
        }
        return try stringValue(of: node, path)
    }

    /// The text of a node known to be a json-c string. Invalid UTF-8 (possible in trees built by
    /// C code) is an error rather than silently repaired.
    static func stringValue(of node: OpaquePointer, _ path: () -> [any CodingKey]) throws -> String {
        let length = Int(json_object_get_string_len(node))
        guard let bytes = json_object_get_string(node) else { return "" }
        let buffer = UnsafeRawBufferPointer(start: bytes, count: length)
        guard let text = String(validating: buffer, as: UTF8.self) else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: path(), debugDescription: "string is not valid UTF-8"))
        }
        return text
    }

    /// An integer of any width. json-c keeps integers as int64 or uint64; a negative int64 and a
    /// uint64 above `Int64.max` are told apart by reading both. An integral double (`3.0`) is
    /// accepted; a fractional one, or any value out of `T`'s range, is an error.
    static func readInteger<T: FixedWidthInteger>(
        _ node: OpaquePointer?, as type: T.Type, _ path: () -> [any CodingKey]
    ) throws -> T {
        guard let node else { throw mismatch(T.self, nil, path()) }
        switch json_object_get_type(node) {
        case json_type_int:
            let signed = json_object_get_int64(node)
            if signed < 0 {
                guard let value = T(exactly: signed) else {
                    throw doesNotFit(String(signed), T.self, path())
                }
                return value
            }
            let unsigned = json_object_get_uint64(node)
            guard let value = T(exactly: unsigned) else {
                throw doesNotFit(String(unsigned), T.self, path())
            }
            return value
        case json_type_double:
            let double = json_object_get_double(node)
            guard double.isFinite, double.rounded(.towardZero) == double else {
                throw mismatch(T.self, node, path())
            }
            // Past 2^53 a double does not hold every integer: read the digits it was made from
            // (integer text past 64 bits is such a node), as Foundation reads the text.
            if abs(double) >= 0x1p53, let digits = integerDigits(node) {
                guard let value = T(digits) else { throw doesNotFit(digits, T.self, path()) }
                return value
            }
            guard let value = T(exactly: double) else {
                throw doesNotFit(double.description, T.self, path())
            }
            return value
        default:
            throw mismatch(T.self, node, path())
        }
    }

    /// The digits of a number node whose text is an integer, with `.0…` allowed after it (what
    /// ``parse(_:maximumDepth:)`` makes of integer text past 64 bits), or nil.
    static func integerDigits(_ node: OpaquePointer) -> String? {
        guard let text = printedNumber(node) else { return nil }
        var utf8 = Substring(text).utf8
        if let dot = utf8.firstIndex(of: UInt8(ascii: ".")) {
            guard utf8[utf8.index(after: dot)...].allSatisfy({ $0 == UInt8(ascii: "0") }) else { return nil }
            utf8 = utf8[..<dot]
        }
        let digits = utf8.first == UInt8(ascii: "-") ? utf8.dropFirst() : utf8[...]
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return String(Substring(utf8))
    }

    /// The text of a number node as json-c prints it: the digits it was parsed or made from.
    /// Printed from a copy: json-c prints into the node's own buffer, and a borrowed tree may be
    /// read by other threads at the same time. (Only the rare paths need it: `Decimal`, integers
    /// past 2^53, a `Float` from another number.)
    static func printedNumber(_ node: OpaquePointer) -> String? {
        var copy: OpaquePointer?
        guard json_object_deep_copy(node, &copy, nil) == 0, let copy else { return nil }
        defer { json_object_put(copy) }
        guard let raw = json_object_get_string(copy) else { return nil }
        return String(cString: raw)
    }

    // MARK: Keys

    /// Whether another key with different bytes can be the same Swift string (canonically
    /// equivalent): any non-ASCII key, and the ASCII keys holding `K`, `;` or `` ` ``, the only
    /// ASCII characters a non-ASCII one (KELVIN SIGN, GREEK QUESTION MARK, GREEK VARIA)
    /// normalizes to. For every other key, json-c's byte comparison is Swift's.
    static func mayEqualOtherBytes(_ key: String) -> Bool {
        key.utf8.contains { $0 >= 0x80 || $0 == UInt8(ascii: "K") || $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: "`") }
    }

    /// The key of `object` that equals `key` as Swift compares strings but has other bytes, or
    /// nil. O(number of keys); asked only when ``mayEqualOtherBytes(_:)``.
    static func equivalentKey(in object: OpaquePointer, to key: String) -> String? {
        var found: String?
        forEachKey(of: object) { name in
            if found == nil && name == key && !name.utf8.elementsEqual(key.utf8) { found = name }
        }
        return found
    }

    /// Calls `body` with each key of `object`, in order (a key that is not valid UTF-8 repaired).
    static func forEachKey(of object: OpaquePointer, _ body: (String) -> Void) {
        for (name, _) in members(of: object) { body(String(cString: name)) }
    }

    /// The members of `object`, in its order: `for (name, value) in JSONC.members(of: object)`.
    static func members(of object: OpaquePointer) -> Members { Members(object) }

    /// The members of a json-c object, each as its key (C text, borrowed from the object) and
    /// its value (`nil` for null), walked with json-c's object iterator.
    struct Members: Sequence, IteratorProtocol {
        private var position: json_object_iterator
        private var end: json_object_iterator

        init(_ object: OpaquePointer) {
            position = json_object_iter_begin(object)
            end = json_object_iter_end(object)
        }

        mutating func next() -> (name: UnsafePointer<CChar>, value: OpaquePointer?)? {
            while json_object_iter_equal(&position, &end) == 0 {
                defer { json_object_iter_next(&position) }
                if let name = json_object_iter_peek_name(&position) {
                    return (name, json_object_iter_peek_value(&position))
                }
            }
            return nil
        }
    }

    /// A member's key as Swift text; a key that is not valid UTF-8 (possible in trees built by C
    /// code) is an error at `path` plus that key, rather than repaired: repaired, two such keys
    /// could become one, or name a member the object does not have.
    static func key(_ name: UnsafePointer<CChar>, at path: [any CodingKey]) throws(DecodingError) -> String {
        guard let text = String(validatingCString: name) else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: path + [AnyCodingKey(stringValue: String(cString: name))],
                debugDescription: "key is not valid UTF-8"))
        }
        return text
    }

    /// The value of `object` under `key` (Swift string equality): `.none` if it has no such key,
    /// `.some(nil)` for a null.
    static func value(in object: OpaquePointer, forKey key: String) -> OpaquePointer?? {
        var node: OpaquePointer?
        if key.withCString({ json_object_object_get_ex(object, $0, &node) }) != 0 { return .some(node) }
        if mayEqualOtherBytes(key), let other = equivalentKey(in: object, to: key) {
            _ = other.withCString { json_object_object_get_ex(object, $0, &node) }
            return .some(node)
        }
        return .none
    }

    /// A Double from a number node (integers convert, possibly rounding), or from a string under
    /// the `convertFromString` strategy. A non-finite double node (json-c's tokener reads `NaN`
    /// and `1e400`) is accepted only under that strategy, the one that opts into such values.
    static func readDouble(
        _ node: OpaquePointer?, as type: Any.Type,
        _ strategy: JSONCDecoder.NonConformingFloatDecodingStrategy,
        _ path: () -> [any CodingKey]
    ) throws -> Double {
        guard let node else { throw mismatch(type, nil, path()) }
        switch json_object_get_type(node) {
        case json_type_int:
            let signed = json_object_get_int64(node)
            return signed < 0 ? Double(signed) : Double(json_object_get_uint64(node))
        case json_type_double:
            let double = json_object_get_double(node)
            if !double.isFinite, case .throw = strategy {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: path(),
                    debugDescription: "non-finite number \(double) is not valid JSON"))
            }
            return double
        case json_type_string:
            if case .convertFromString(let plus, let minus, let nan) = strategy {
                let text = try stringValue(of: node, path)
                if text == plus { return .infinity }
                if text == minus { return -.infinity }
                if text == nan { return .nan }
            }
            throw mismatch(type, node, path())
        default:
            throw mismatch(type, node, path())
        }
    }

    static func readFloat(
        _ node: OpaquePointer?,
        _ strategy: JSONCDecoder.NonConformingFloatDecodingStrategy,
        _ path: () -> [any CodingKey]
    ) throws -> Float {
        let double = try readDouble(node, as: Float.self, strategy, path)
        // Zero and non-finite values (under the strategy that lets them through) convert as
        // they are; any other number is its text parsed as a `Float`, as Foundation's
        // `JSONDecoder` reads it, refused when that overflows or underflows to zero.
        guard double.isFinite, double != 0, let node else { return Float(double) }
        let text: String
        if json_object_get_type(node) == json_type_int {
            let signed = json_object_get_int64(node)
            text = signed < 0 ? String(signed) : String(json_object_get_uint64(node))
        } else if let printed = printedNumber(node) {
            text = printed
        } else {
            text = double.description
        }
        guard let float = Float(text) ?? Float(exactly: double), float.isFinite, float != 0 else {
            throw doesNotFit(text, Float.self, path())
        }
        return float
    }

    // MARK: Making nodes (new references)

    /// Checks a constructor's result: json-c returns NULL only when it could not allocate.
    static func made(_ node: OpaquePointer?) throws -> OpaquePointer {
        guard let node else { throw StoreError(.outOfMemory, "json-c could not allocate a value") }
        return node
    }

    static func makeBool(_ value: Bool) throws -> OpaquePointer {
        try made(json_object_new_boolean(value ? 1 : 0))
    }

    /// An integer node; past 64 bits (an `Int128`), a number node that prints all the digits
    /// (json-c holds integers in 64 bits), which ``parse(_:maximumDepth:)`` and
    /// ``readInteger(_:as:_:)`` read back exactly.
    static func makeInteger<T: FixedWidthInteger>(_ value: T) throws -> OpaquePointer {
        if let signed = Int64(exactly: value) {
            return try made(json_object_new_int64(signed))
        }
        if let unsigned = UInt64(exactly: value) {
            return try made(json_object_new_uint64(unsigned))
        }
        return try makeNumber(Double(value), text: String(value))
    }

    /// A `Float` as Foundation's `JSONEncoder` writes it: its shortest text, so that it reads
    /// back as the `Double` of that text (`Float(0.1)` as `0.1`, not `0.10000000149011612`).
    static func makeFloat(
        _ value: Float, _ strategy: JSONCEncoder.NonConformingFloatEncodingStrategy,
        _ path: () -> [any CodingKey]
    ) throws -> OpaquePointer {
        let text = value.description
        return try makeDouble(Double(text) ?? Double(value), printed: text, strategy, path)
    }

    static func makeString(_ value: String, _ path: () -> [any CodingKey]) throws -> OpaquePointer {
        var text = value
        return try text.withUTF8 { bytes throws -> OpaquePointer in
            guard let length = Int32(exactly: bytes.count) else {
                throw EncodingError.invalidValue(value, .init(
                    codingPath: path(), debugDescription: "string of \(bytes.count) bytes is too long for json-c"))
            }
            return try made(json_object_new_string_len(
                UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self), length))
        }
    }

    /// A finite number node that prints as `text` (Swift's shortest round-tripping form, so
    /// `0.1` prints as `0.1`, not json-c's `%.17g` `0.10000000000000001`).
    static func makeNumber(_ value: Double, text: String) throws -> OpaquePointer {
        try made(text.withCString { json_object_new_double_s(value, $0) })
    }

    static func makeDouble(
        _ value: Double, printed text: @autoclosure () -> String,
        _ strategy: JSONCEncoder.NonConformingFloatEncodingStrategy,
        _ path: () -> [any CodingKey]
    ) throws -> OpaquePointer {
        if value.isFinite { return try makeNumber(value, text: text()) }
        switch strategy {
        case .throw:
            throw EncodingError.invalidValue(value, .init(
                codingPath: path(), debugDescription: "non-finite number \(value) is not valid JSON"))
        case .convertToString(let plus, let minus, let nan):
            let word = value.isNaN ? nan : (value > 0 ? plus : minus)
            return try makeString(word, path)
        }
    }

    /// Adds `value` (owned; may be NULL for JSON null) to `object` under `key`. Ownership passes to
    /// the object even on failure: the value is put if it could not be added.
    ///
    /// A key the object already has (the same bytes) is replaced: the last value wins, as with
    /// Foundation's `JSONEncoder`. The encoder finds the spelling first, for keys that are equal
    /// strings with other bytes (`EncodingState.spelling(of:in:)`).
    static func add(
        _ value: OpaquePointer?, to object: OpaquePointer, key: String,
        _ path: () -> [any CodingKey]
    ) throws {
        // json-c keys are C strings: a key with a NUL in it would be cut short.
        let status = key.utf8.contains(0)
            ? -2 : key.withCString { json_object_object_add(object, $0, value) }
        guard status == 0 else {
            json_object_put(value)
            if status == -2 {
                throw EncodingError.invalidValue(key, .init(
                    codingPath: path(), debugDescription: "key contains a NUL character"))
            }
            throw StoreError(.outOfMemory, "json-c could not add key \(key)")
        }
    }

    /// Appends `value` (owned; may be NULL) to `array`; on failure the value is put.
    static func append(_ value: OpaquePointer?, to array: OpaquePointer) throws {
        guard json_object_array_add(array, value) == 0 else {
            json_object_put(value)
            throw StoreError(.outOfMemory, "json-c could not grow an array")
        }
    }

    // MARK: Dates

    static let iso8601 = Date.ISO8601FormatStyle()
    static let iso8601Fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}
