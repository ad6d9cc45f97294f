#if canImport(Glibc)
import Glibc
#endif

/// A JSON value in Swift: the payload of a ``JSONAction``.
///
/// Integers stay integers (`int` for those that fit `Int64`, `uint` above), so a payload that
/// came from C as `42` is decoded as `42`, never as `42.0`; and doubles stay doubles: read by
/// this library's coders (from json-c, from a snapshot), a number written with a fraction or an
/// exponent — a json-c double, a Swift `Double` or `Float` — is a `double` even when whole
/// (`1.0`, `-0.0`, `1e16`), so a value keeps its kinds through `currentState()`, `save`, the
/// journal and replication. Through another decoder (Foundation's `JSONDecoder`), which does not
/// say which kind it read, a whole number is an `int`. Objects keep no key order.
///
/// Strings and object keys are sequences of Unicode code points, as JSON defines them: two
/// values are equal only when their strings have the same code points. `.string("\u{E9}")` (é)
/// and `.string("e\u{301}")` (e and a combining acute accent) differ, although Swift's `String`
/// calls them equal; an object holds both keys side by side (see ``JSONKey``). Diffs, patches,
/// the journal and json-c trees compare them the same way. Numbers compare as `Double` and the
/// integer types do, but for the sign of zero: `.double(-0.0)` and `.double(0.0)` differ (JSON
/// writes them apart, and the library keeps `-0.0`), `.double(.nan)` equals nothing, `.int(1)`
/// and `.double(1.0)` differ.
///
/// The coders of this library (``JSONCEncoder``, ``JSONCDecoder``, snapshots) keep such keys
/// apart. Foundation's `JSONEncoder` and `JSONDecoder` keep an object's keys in a Swift
/// dictionary of `String`s, so they merge keys that differ only so.
public enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([JSONKey: JSONValue])
}

extension JSONValue: Hashable {
    /// Equal when of the same kind with equal contents: strings with the same code points,
    /// numbers by `==` of their own type (and doubles by the sign of zero too: `-0.0` is not
    /// `0.0`), arrays element by element, objects with the same keys (code point by code point)
    /// and equal members.
    ///
    /// - Complexity: O(size of the smaller value); a string is compared by its UTF-8 bytes.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.uint(let a), .uint(let b)): a == b
        case (.double(let a), .double(let b)): a == b && a.sign == b.sign
        case (.string(let a), .string(let b)): JSONKey.sameCodePoints(a, b)
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }

    /// Hashes the kind and the contents; a string by its UTF-8 bytes.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null:
            hasher.combine(0 as UInt8)
        case .bool(let value):
            hasher.combine(1 as UInt8)
            hasher.combine(value)
        case .int(let value):
            hasher.combine(2 as UInt8)
            hasher.combine(value)
        case .uint(let value):
            hasher.combine(3 as UInt8)
            hasher.combine(value)
        case .double(let value):
            hasher.combine(4 as UInt8)
            hasher.combine(value)
        case .string(let value):
            hasher.combine(5 as UInt8)
            JSONKey.hashCodePoints(value, into: &hasher)
        case .array(let elements):
            hasher.combine(6 as UInt8)
            hasher.combine(elements)
        case .object(let members):
            hasher.combine(7 as UInt8)
            hasher.combine(members)
        }
    }
}

/// A key of a JSON object (``JSONValue/object(_:)``): a string compared code point by code point.
///
/// Swift's `String` compares by canonical equivalence, so `"\u{E9}"` (é) and `"e\u{301}"` (e
/// and a combining acute accent) are one `String` key of a `Dictionary`. JSON keeps them apart:
/// they are different keys, and an object may have both. `JSONKey` is equal to another key,
/// hashes, and sorts by the key's Unicode code points (equivalently its UTF-8 bytes), so a
/// `[JSONKey: JSONValue]` holds both.
///
/// A string literal is a key, so object literals read as before:
///
/// ```swift
/// let value: JSONValue = .object(["title": "milk", "done": false])
/// if case .object(let members) = value {
///     let title = members["title"]          // a literal key
///     let named = members[JSONKey(name)]    // a key from a String (or `members[name]`)
/// }
/// ```
///
/// - Complexity: `==`, `<` and `hash(into:)` are O(length of the key) over its UTF-8 bytes.
public struct JSONKey: Hashable, Comparable, Sendable, ExpressibleByStringLiteral,
    CustomStringConvertible, CustomDebugStringConvertible
{
    /// The key's text.
    public let string: String

    /// The key whose text is `string`, code point by code point.
    public init(_ string: String) { self.string = string }

    public init(stringLiteral value: String) { self.string = value }

    /// The key's text.
    public var description: String { string }

    public var debugDescription: String { string.debugDescription }

    /// Whether the two keys have the same code points (the same UTF-8 bytes).
    public static func == (lhs: JSONKey, rhs: JSONKey) -> Bool {
        sameCodePoints(lhs.string, rhs.string)
    }

    /// Code point order (equivalently, the order of the UTF-8 bytes): `"Z" < "a" < "\u{E9}"`.
    /// The order in which ``JSONPatch/diff(from:to:)`` lists keys.
    public static func < (lhs: JSONKey, rhs: JSONKey) -> Bool {
        lhs.string.utf8.lexicographicallyPrecedes(rhs.string.utf8)
    }

    /// Hashes the key's UTF-8 bytes.
    public func hash(into hasher: inout Hasher) {
        Self.hashCodePoints(string, into: &hasher)
    }

    /// Whether `a` and `b` have the same code points: the same UTF-8 bytes. A native string's
    /// bytes are compared in place, with no copy; short ones (most keys) byte by byte, which
    /// costs less than a call to `memcmp`.
    @inline(__always)
    static func sameCodePoints(_ a: String, _ b: String) -> Bool {
        if sameRepresentation(a, b) { return true }
        let x = a.utf8
        let y = b.utf8
        let count = x.count
        guard count == y.count else { return false }
        let same = x.withContiguousStorageIfAvailable { p in
            y.withContiguousStorageIfAvailable { q in
                guard count > 32 else {
                    for i in 0..<count where p[i] != q[i] { return false }
                    return true
                }
                return memcmp(p.baseAddress!, q.baseAddress!, count) == 0
            }
        }
        if let same, let same { return same }
        return x.elementsEqual(y)
    }

    /// Whether the two strings are the same bits: the same small string (its bytes inline), or
    /// the same buffer. Such strings hold the same text; other strings may too.
    @inline(__always)
    private static func sameRepresentation(_ a: String, _ b: String) -> Bool {
        guard MemoryLayout<String>.size == MemoryLayout<(UInt64, UInt64)>.size else { return false }
        // Read as two words in registers: no copy of either string to the stack.
        let x = unsafeBitCast(a, to: (UInt64, UInt64).self)
        let y = unsafeBitCast(b, to: (UInt64, UInt64).self)
        return x.0 == y.0 && x.1 == y.1
    }

    /// Feeds `string`'s UTF-8 bytes to `hasher`, then 0xFF (never a byte of UTF-8), so that
    /// the strings of a sequence cannot run into each other: what `String` feeds for an ASCII
    /// string.
    @inline(__always)
    static func hashCodePoints(_ string: String, into hasher: inout Hasher) {
        let utf8 = string.utf8
        let done: Void? = utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if done == nil {
            for byte in utf8 { hasher.combine(byte) }
        }
        hasher.combine(0xFF as UInt8)
    }
}

extension Dictionary where Key == JSONKey {
    /// The value under the key whose text is `key`, code point by code point:
    /// `members[JSONKey(key)]`.
    public subscript(key: String) -> Value? {
        get { self[JSONKey(key)] }
        set { self[JSONKey(key)] = newValue }
    }
}

// Not ExpressibleByNilLiteral: `nil` must keep meaning "no value" for a `JSONValue?` payload.
extension JSONValue: ExpressibleByBooleanLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByStringLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (JSONKey, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        // This library's decoders know each number's kind: read straight from their trees.
        if let tape = decoder as? TapeDecoder {
            self = tape.session.pointee.jsonValue(at: tape.node)
            return
        }
        if let jsonC = decoder as? JSONCDecoderImpl {
            self = try jsonC.readJSONValueHere()
            return
        }
        // Objects and arrays first: asking a scalar container of them would fail anyway. Only a
        // mismatch (or a null) means "not this kind"; any other error (a limit, say) is the
        // answer.
        if let object = try Self.attempt({ try decoder.container(keyedBy: MemberKey.self) }) {
            var result: [JSONKey: JSONValue] = [:]
            let keys = object.allKeys
            result.reserveCapacity(keys.count)
            for key in keys {
                result[JSONKey(key.stringValue)] = try object.decode(JSONValue.self, forKey: key)
            }
            self = .object(result)
            return
        }
        if var array = try Self.attempt({ try decoder.unkeyedContainer() }) {
            var result: [JSONValue] = []
            if let count = array.count { result.reserveCapacity(count) }
            while !array.isAtEnd { result.append(try array.decode(JSONValue.self)) }
            self = .array(result)
            return
        }
        let value = try decoder.singleValueContainer()
        if value.decodeNil() {
            self = .null
        } else if let bool = try? value.decode(Bool.self) {
            self = .bool(bool)
        } else if let int = try? value.decode(Int64.self) {
            self = .int(int)
        } else if let uint = try? value.decode(UInt64.self) {
            self = .uint(uint)
        } else if let double = try Self.attempt({ try value.decode(Double.self) }) {
            // A number that is not a Double (NaN where JSON is required, say) is the answer,
            // not "not a number": decoding it as a string would only say "expected String".
            self = .double(double)
        } else {
            self = .string(try value.decode(String.self))
        }
    }

    /// The coding key of an object's member. The coders of this library know it: they compare
    /// its keys code point by code point (a ``JSONValue`` object's keys are all distinct so),
    /// where the keys of other types are compared as Swift strings, as Foundation does.
    struct MemberKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { return nil }
    }

    /// The container `make` opens, or nil when the value is of another kind.
    private static func attempt<C>(_ make: () throws -> C) throws -> C? {
        do {
            return try make()
        } catch DecodingError.typeMismatch {
            return nil
        } catch DecodingError.valueNotFound {
            return nil  // null
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var value = encoder.singleValueContainer()
            try value.encodeNil()
        case .bool(let bool):
            var value = encoder.singleValueContainer()
            try value.encode(bool)
        case .int(let int):
            var value = encoder.singleValueContainer()
            try value.encode(int)
        case .uint(let uint):
            var value = encoder.singleValueContainer()
            try value.encode(uint)
        case .double(let double):
            var value = encoder.singleValueContainer()
            try value.encode(double)
        case .string(let string):
            var value = encoder.singleValueContainer()
            try value.encode(string)
        case .array(let elements):
            var array = encoder.unkeyedContainer()
            for element in elements { try array.encode(element) }
        case .object(let members):
            var object = encoder.container(keyedBy: MemberKey.self)
            for (key, member) in members {
                try object.encode(member, forKey: MemberKey(stringValue: key.string))
            }
        }
    }
}

extension JSONValue {
    /// Decodes a typed value from this JSON value.
    ///
    /// Costs one encode into a snapshot tape and one decode from it; no JSON text.
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/decode`` naming the coding path.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws(StoreError) -> T {
        try JSONValue.decode(type, from: self, prefix: nil)
    }

    /// Makes a JSON value of any `Encodable` value (a round trip through a snapshot tape).
    public init(encoding value: some Encodable) throws(StoreError) {
        let tape = SnapshotTape()
        try SnapshotEncoder().encode(value, into: tape)
        self = try SnapshotDecoder.decode(JSONValue.self, from: tape)
    }

    static func decode<T: Decodable>(
        _ type: T.Type, from value: JSONValue, prefix: String?
    ) throws(StoreError) -> T {
        let tape = SnapshotTape()
        try SnapshotEncoder().encode(value, into: tape)
        do {
            return try SnapshotDecoder.decode(type, from: tape)
        } catch {
            throw StoreError(coding: error, prefix: prefix)
        }
    }
}

extension JSONValue: CustomStringConvertible {
    /// The value as compact JSON text, object keys sorted by code point:
    /// `{"done":false,"title":"milk"}`. A non-finite double (which JSON cannot hold) prints as
    /// `nan`, `inf` or `-inf`.
    public var description: String {
        var text = ""
        JSONValue.write(self, to: &text)
        return text
    }

    private static func write(_ value: JSONValue, to text: inout String) {
        switch value {
        case .null: text += "null"
        case .bool(let bool): text += bool ? "true" : "false"
        case .int(let int): text += String(int)
        case .uint(let uint): text += String(uint)
        case .double(let double): text += double.description
        case .string(let string): writeString(string, to: &text)
        case .array(let elements):
            text += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { text += "," }
                write(element, to: &text)
            }
            text += "]"
        case .object(let members):
            text += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { text += "," }
                writeString(key.string, to: &text)
                text += ":"
                write(members[key]!, to: &text)
            }
            text += "}"
        }
    }

    /// `string` as a JSON string: quotes, backslashes and control characters escaped.
    private static func writeString(_ string: String, to text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
