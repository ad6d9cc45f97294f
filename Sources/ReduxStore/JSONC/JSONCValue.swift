// Shared pieces of the json-c bridge: reading scalars out of borrowed json-c nodes, making new
// nodes, the words used in error messages, and json-c's printer and tokener for the text forms.
//
// Ownership, everywhere in this folder: a pointer passed to a `make…` helper's caller is a new
// reference the caller owns; a pointer given to a `read…` helper is borrowed and never changed.

internal import CJSONC
import FoundationEssentials

/// Helpers over json-c values. Not public: json-c types never appear in the module's API.
enum JSONC {

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
        guard let raw = json_object_get_string(node) else { return nil }
        let text = String(cString: raw)
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
        var iterator = json_object_iter_begin(object)
        var end = json_object_iter_end(object)
        while json_object_iter_equal(&iterator, &end) == 0 {
            if let raw = json_object_iter_peek_name(&iterator) {
                let name = String(cString: raw)
                if name == key && !name.utf8.elementsEqual(key.utf8) { return name }
            }
            json_object_iter_next(&iterator)
        }
        return nil
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
        let float = Float(double)
        if double.isFinite && !float.isFinite {
            throw doesNotFit(double.description, Float.self, path())
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
    /// A key the object already has is replaced, as Foundation's `JSONEncoder` replaces it: the
    /// last value wins, under the key's first spelling when the two are equal strings with
    /// other bytes.
    static func add(
        _ value: OpaquePointer?, to object: OpaquePointer, key: String,
        _ path: () -> [any CodingKey]
    ) throws {
        let key = mayEqualOtherBytes(key) ? (equivalentKey(in: object, to: key) ?? key) : key
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

    // MARK: Text

    /// Parses JSON text into a new tree (NULL for `null`) with json-c's strict tokener, refusing
    /// text over ``StoreLimits/maximumJSONTextSize`` bytes or nested deeper than
    /// ``StoreLimits/maximumNestingDepth``.
    static func parse(_ text: String) throws(StoreError) -> OpaquePointer? {
        var text = text
        let result = text.withUTF8 { bytes in Result { () throws(StoreError) in try parse(bytes) } }
        return try result.get()
    }

    /// Parses UTF-8 JSON text (not NUL-terminated; the whole buffer must be one JSON value, with
    /// white space around it allowed) into a new tree the caller owns, NULL for `null`.
    ///
    /// - Parameter maximumDepth: json-c's depth: it counts a level for each value inside a
    ///   container, so `limit + 1` lets exactly `limit` containers nest around a value. (One
    ///   quirk: json-c never counts the inside of an empty container, so `limit + 1` nested
    ///   containers whose innermost is empty still parse; the decoders refuse to open a container
    ///   past ``StoreLimits/maximumNestingDepth`` all the same.)
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/parse`` (the message names the byte
    ///   offset), or ``StoreError/Kind/limit`` for text too large or too deep.
    static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>,
        maximumDepth: Int = StoreLimits.maximumNestingDepth + 1
    ) throws(StoreError) -> OpaquePointer? {
        let size = bytes.count
        guard size <= StoreLimits.maximumJSONTextSize, Int32(exactly: size) != nil else {
            throw StoreError(.limit, "JSON text of \(size) bytes is larger than the limit of \(StoreLimits.maximumJSONTextSize) bytes")
        }
        // json-c holds integers in 64 bits and clamps longer integer text to a bound without a
        // word; with `.0` after it, it is a double node that keeps its text, which the decoders
        // read exactly (an `Int128`, a `Decimal`) or as a `Double`.
        let wideIntegers = try rejectWhatJSONCLetsThrough(bytes)
        if !wideIntegers.isEmpty {
            var patched: [UInt8] = []
            patched.reserveCapacity(size + 2 * wideIntegers.count)
            var from = 0
            for end in wideIntegers {
                patched.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[from..<end]))
                patched.append(contentsOf: [UInt8(ascii: "."), UInt8(ascii: "0")])
                from = end
            }
            patched.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[from...]))
            let result = patched.withUnsafeBufferPointer { patchedBytes in
                Result { () throws(StoreError) in try tokenize(patchedBytes, maximumDepth: maximumDepth) }
            }
            do {
                return try result.get()
            } catch {
                // The offset in the caller's text: less the two bytes added after each integer.
                throw StoreError(error.kind, error.message.replacing(/at byte (\d+)/) { match in
                    let offset = Int(match.1) ?? 0
                    var shift = 0
                    for end in wideIntegers where end + shift < offset { shift += 2 }
                    return "at byte \(offset - shift)"
                })
            }
        }
        return try tokenize(bytes, maximumDepth: maximumDepth)
    }

    /// json-c's strict tokener on text that passed ``rejectWhatJSONCLetsThrough(_:)``.
    private static func tokenize(
        _ bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int
    ) throws(StoreError) -> OpaquePointer? {
        let size = bytes.count
        guard let length = Int32(exactly: size) else {
            throw StoreError(.limit, "JSON text of \(size) bytes is too large for json-c")
        }
        guard let tokener = json_tokener_new_ex(Int32(clamping: maximumDepth)) else {
            throw StoreError(.outOfMemory, "json-c could not allocate a tokener")
        }
        defer { json_tokener_free(tokener) }
        json_tokener_set_flags(tokener, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8)

        var tree: OpaquePointer?
        if let base = bytes.baseAddress, size > 0 {
            tree = base.withMemoryRebound(to: CChar.self, capacity: size) {
                json_tokener_parse_ex(tokener, $0, length)
            }
        } else {
            tree = json_tokener_parse_ex(tokener, "", 0)
        }
        var end = json_tokener_get_parse_end(tokener)
        if tree == nil && json_tokener_get_error(tokener) == json_tokener_continue {
            // All the text was read and json-c waits for more: a NUL ends the input (and
            // completes a number at the very end).
            tree = json_tokener_parse_ex(tokener, "", 1)
        }
        let status = json_tokener_get_error(tokener)
        // White space only may follow the value.
        while end < size, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[end]) { end += 1 }
        if status == json_tokener_success && end >= size { return tree }
        json_object_put(tree)
        if status == json_tokener_error_depth {
            throw StoreError(.limit, "JSON text nests deeper than \(maximumDepth - 1) levels")
        }
        let reason: String
        if status == json_tokener_success {
            reason = "unexpected text after the value"
        } else if status == json_tokener_continue {
            reason = "unexpected end of data"
        } else {
            reason = String(cString: json_tokener_error_desc(status))
        }
        throw StoreError(.parse, "JSON text does not parse at byte \(end): \(reason)")
    }

    /// Refuses what json-c's strict tokener still accepts but JSON does not: raw control
    /// characters inside strings, and the words `NaN` and `Infinity`. One pass over the bytes,
    /// before parsing.
    ///
    /// - Returns: where each integer past the 64-bit range ends (json-c would clamp them).
    static func rejectWhatJSONCLetsThrough(_ bytes: UnsafeBufferPointer<UInt8>) throws(StoreError) -> [Int] {
        var wideIntegers: [Int] = []
        var inString = false
        var index = 0
        let count = bytes.count
        var ascii = true
        while index < count {
            let byte = bytes[index]
            if byte >= 0x80 { ascii = false }
            if inString {
                if byte == UInt8(ascii: "\\") {
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") {
                    inString = false
                } else if byte < 0x20 {
                    throw StoreError(.parse, "JSON text does not parse at byte \(index): a control character inside a string must be escaped")
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: "N") || byte == UInt8(ascii: "I") {
                throw StoreError(.parse, "JSON text does not parse at byte \(index): NaN and Infinity are not JSON numbers")
            } else if byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) {
                let (end, fits) = checkNumber(bytes, at: index)
                if !fits { wideIntegers.append(end) }
                index = end
                continue
            }
            index += 1
        }
        // json-c's UTF-8 check lets overlong forms and surrogates through (`C0 93`, say), which a
        // Swift `String` would repair into U+FFFD: a key read from C and from Swift would differ.
        if !ascii, let offset = firstInvalidUTF8(bytes) {
            throw StoreError(.parse, "JSON text does not parse at byte \(offset): invalid UTF-8")
        }
        return wideIntegers
    }

    /// The offset of the first byte that does not start a well-formed UTF-8 scalar, or nil when
    /// every scalar is well formed (no overlong forms, surrogates or values past U+10FFFF).
    static func firstInvalidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let scalar): offset += scalar.count
            case .emptyInput: return nil
            case .error: return offset
            }
        }
    }

    /// Reads over the number starting at `start`: the index after it, and whether json-c holds
    /// it as it is (a number with a fraction or exponent is a double, and fine; an integer only
    /// within 64 bits).
    private static func checkNumber(_ bytes: UnsafeBufferPointer<UInt8>, at start: Int) -> (end: Int, fits: Bool) {
        var index = start
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let digitsStart = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            index += 1
        }
        let digits = UnsafeBufferPointer(rebasing: bytes[digitsStart..<index])
        if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) {
            // A double: skip the rest of it.
            index += 1
            while index < bytes.count,
                  (bytes[index] >= UInt8(ascii: "0") && bytes[index] <= UInt8(ascii: "9"))
                    || [UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) {
                index += 1
            }
            return (index, true)
        }
        // The largest magnitudes json-c holds exactly: 2^63 for negative integers, 2^64 - 1 else.
        let bound: StaticString = negative ? "9223372036854775808" : "18446744073709551615"
        let boundDigits = UnsafeBufferPointer(start: bound.utf8Start, count: bound.utf8CodeUnitCount)
        // Digit strings of one length compare as their numbers do.
        let fits = digits.count < boundDigits.count
            || (digits.count == boundDigits.count && !boundDigits.lexicographicallyPrecedes(digits))
        return (index, fits || digits.isEmpty)
    }

    /// Prints a tree (NULL prints as `null`) with json-c's printer.
    static func print(_ tree: OpaquePointer?, pretty: Bool) throws(StoreError) -> String {
        guard let tree else { return "null" }
        let flags = pretty
            ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE
            : JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE
        var length = 0
        guard let text = json_object_to_json_string_length(tree, flags, &length) else {
            throw StoreError(.outOfMemory, "json-c could not print a value")
        }
        return String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self)
    }

    // MARK: Dates

    static let iso8601 = Date.ISO8601FormatStyle()
    static let iso8601Fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
}
