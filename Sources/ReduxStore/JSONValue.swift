/// A JSON value in Swift: the payload of a ``JSONAction``.
///
/// Integers stay integers (`int` for those that fit `Int64`, `uint` above), so a payload that
/// came from C as `42` is decoded as `42`, never as `42.0`. Objects keep no key order.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
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
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        // Objects and arrays first: asking a scalar container of them would fail anyway. Only a
        // mismatch (or a null) means "not this kind"; any other error (a limit, say) is the
        // answer.
        if let object = try Self.attempt({ try decoder.container(keyedBy: AnyCodingKey.self) }) {
            var result: [String: JSONValue] = [:]
            result.reserveCapacity(object.allKeys.count)
            for key in object.allKeys {
                result[key.stringValue] = try object.decode(JSONValue.self, forKey: key)
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
        } else if let double = try? value.decode(Double.self) {
            self = .double(double)
        } else {
            self = .string(try value.decode(String.self))
        }
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
            var object = encoder.container(keyedBy: AnyCodingKey.self)
            for (key, member) in members {
                try object.encode(member, forKey: AnyCodingKey(stringValue: key))
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
