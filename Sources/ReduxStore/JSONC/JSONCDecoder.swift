internal import CJSONC
import FoundationEssentials

/// Decodes any `Decodable` value straight from a json-c tree (`json_object *`), with no JSON text
/// in between.
///
/// It reads what C hands in: action payloads decoded into typed Swift actions, and saved state
/// parsed by json-c. The tree is borrowed: the decoder never changes it, never takes or releases
/// a reference, and keeps no pointer into it after returning. JSON `null` is json-c's `NULL`, so
/// `decode(_:from:)` takes an `OpaquePointer?`. That tree form is `package`: json-c pointers
/// never cross the module's public API. Swift callers use ``decode(_:fromJSONString:)``, and C
/// programs reach the tree form through `include/reduxstore.h`.
///
/// What it accepts:
/// - integers of every width from JSON integers in range, and from integral doubles (`3.0`); a
///   fractional number or one out of range is an error, never a silent wrap or clamp;
/// - `Bool` only from JSON booleans, `String` only from JSON strings;
/// - `Double` and `Float` from any number (a `Float` out of range is an error); non-finite
///   values per ``nonConformingFloatDecodingStrategy``;
/// - `Date` and `Data` per their strategies, `URL` from a string, `Decimal` from a number;
/// - ``JSONValue`` with each number of json-c's kind: an int node an integer, a double node a
///   `double` even when whole;
/// - dictionaries with `String` keys, and with `Int` keys from object keys like `"1"`;
/// - `superDecoder()` reads the key `"super"` (missing reads as `null`), or in an unkeyed
///   container the next element.
///
/// Errors are ``StoreError``s whose message starts with the coding path:
/// `items[3].title: expected String, found number` (kind ``StoreError/Kind/decode``). Values
/// nested deeper than ``StoreLimits/maximumNestingDepth`` are refused with kind
/// ``StoreError/Kind/limit``. Inside, containers throw the standard `DecodingError`s, so custom
/// `init(from:)` code can catch them as Codable promises.
///
/// json-c keeps integers as 64-bit values; its tokener makes integer text past that range a
/// double node that keeps the digits. This decoder reads those digits: a 64-bit (or narrower)
/// integer type refuses the number as out of range, `Int128`, `UInt128` and `Decimal` read it
/// exactly, and `Double` and ``JSONValue`` (`.double`) get the nearest double.
///
/// `JSONCDecoder` is a small value: configure one and share it freely across threads; trees may
/// be decoded concurrently as long as nobody changes them meanwhile.
public struct JSONCDecoder: Sendable {
    /// How `Date` values are decoded.
    public enum DateDecodingStrategy: Sendable {
        /// Whatever `Date(from:)` does: a number, seconds since 2001-01-01 00:00:00 UTC.
        case deferredToDate
        /// A number: seconds since 1970-01-01 00:00:00 UTC.
        case secondsSince1970
        /// A number: milliseconds since 1970-01-01 00:00:00 UTC.
        case millisecondsSince1970
        /// A string in ISO 8601 form (`2024-03-01T12:00:00Z`, fractional seconds accepted).
        case iso8601
    }

    /// How `Data` values are decoded.
    public enum DataDecodingStrategy: Sendable {
        /// From a Base64 string.
        case base64
        /// Whatever `Data(from:)` does: from an array of byte values.
        case deferredToData
    }

    /// Whether infinities and NaN may be decoded, and from what.
    public enum NonConformingFloatDecodingStrategy: Sendable {
        /// Refuse them. (json-c's tokener reads `NaN`, `Infinity` and `1e400` as non-finite
        /// doubles; under this strategy such numbers are errors.)
        case `throw`
        /// Read these strings as the values they name; non-finite number nodes are accepted too.
        case convertFromString(positiveInfinity: String, negativeInfinity: String, nan: String)
    }

    /// How `Date` values are decoded. Default: ``DateDecodingStrategy/deferredToDate``.
    public var dateDecodingStrategy: DateDecodingStrategy = .deferredToDate
    /// How `Data` values are decoded. Default: ``DataDecodingStrategy/base64``.
    public var dataDecodingStrategy: DataDecodingStrategy = .base64
    /// Whether infinities and NaN may be decoded. Default: ``NonConformingFloatDecodingStrategy/throw``.
    public var nonConformingFloatDecodingStrategy: NonConformingFloatDecodingStrategy = .throw

    /// Creates a decoder with the default strategies.
    public init() {}

    /// Decodes a value of type `T` from a json-c tree.
    ///
    /// - Parameter object: the tree, borrowed: never changed, retained or put. `nil` is JSON
    ///   `null` (which decodes into an `Optional` as `nil`).
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/decode`` with the coding path and the
    ///   reason, or ``StoreError/Kind/limit`` for nesting deeper than
    ///   ``StoreLimits/maximumNestingDepth``.
    /// - Complexity: O(n) in the size of the part of the tree that `T` reads; one hash lookup
    ///   per key asked for, no JSON text and no per-key string copies.
    ///
    /// Package: the inspector and replication decode the trees they parse.
    package func decode<T: Decodable>(_ type: T.Type, from object: OpaquePointer?) throws(StoreError) -> T {
        let state = DecodingState(options: self)
        let decoder = JSONCDecoderImpl(state: state, codingPath: [], current: object)
        defer { state.finish() }
        do {
            let value = try decoder.decodeHere(T.self)
            if let failure = state.failure { throw failure }
            return value
        } catch {
            throw StoreError(coding: state.failure ?? error)
        }
    }

    /// Parses JSON text with json-c's strict tokener and decodes a value of type `T` from it.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/parse`` for text that is not JSON (the
    ///   message names the byte offset), ``StoreError/Kind/limit`` for text longer than
    ///   ``StoreLimits/maximumJSONTextSize`` bytes or nested deeper than
    ///   ``StoreLimits/maximumNestingDepth``, and otherwise ``StoreError/Kind/decode`` with the coding
    ///   path and the reason.
    /// - Complexity: one parse into a temporary json-c tree, which is freed before returning.
    public func decode<T: Decodable>(_ type: T.Type, fromJSONString text: String) throws(StoreError) -> T {
        let tree = try JSONC.parse(text)
        defer { json_object_put(tree) }
        return try decode(type, from: tree)
    }
}

// MARK: - Working state

/// What one top-level `decode` call shares among its decoders.
final class DecodingState {
    let options: JSONCDecoder
    /// Decoders handed out by `superDecoder()`; containers refer to them without retaining.
    private var kept: [JSONCDecoderImpl] = []

    /// A failure found where the Codable API gives no way to throw (a key that is not UTF-8,
    /// met by `allKeys`): the decode fails with it, whatever the value made of the keys.
    var failure: (any Error)?

    init(options: JSONCDecoder) { self.options = options }

    func keep(_ decoder: JSONCDecoderImpl) { kept.append(decoder) }

    func record(_ error: any Error) {
        if failure == nil { failure = error }
    }

    /// Lets go of the super decoders (breaking their reference back to this state).
    func finish() { kept.removeAll() }
}

/// The `Decoder` user code sees. One instance serves a whole top-level `decode` call: decoding a
/// nested value pushes a level (its node as ``current`` and its key on ``codingPath``) and pops
/// it afterwards. Containers hold unretained references to it; the top-level call (or, for
/// super decoders, ``DecodingState``) keeps it alive.
final class JSONCDecoderImpl: Decoder {
    let state: DecodingState
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// The node of the value being decoded at the current level (borrowed; `nil` is null).
    var current: OpaquePointer?
    /// Values nested right now, counting single-value wrappers (a stack-overflow guard).
    private var valueDepth = 0

    init(state: DecodingState, codingPath: [any CodingKey], current: OpaquePointer?) {
        self.state = state
        self.codingPath = codingPath
        self.current = current
    }

    private var options: JSONCDecoder { state.options }

    // MARK: Levels

    /// Decodes a `T` from `node`, one level down under `extra` then `key` in the coding path.
    func decodeChild<T: Decodable>(
        _ type: T.Type, from node: OpaquePointer?, extra: [any CodingKey], key: any CodingKey
    ) throws -> T {
        // The most common leaves, without a level of their own.
        if T.self == String.self {
            return try JSONC.readString(node) { self.path(extra, key) } as! T
        } else if T.self == Int.self {
            return try JSONC.readInteger(node, as: Int.self) { self.path(extra, key) } as! T
        } else if T.self == Bool.self {
            return try JSONC.readBool(node) { self.path(extra, key) } as! T
        } else if T.self == Double.self {
            return try JSONC.readDouble(
                node, as: Double.self, options.nonConformingFloatDecodingStrategy
            ) { self.path(extra, key) } as! T
        }

        let saved = (current, codingPath.count)
        codingPath.append(contentsOf: extra)
        codingPath.append(key)
        current = node
        defer {
            current = saved.0
            codingPath.removeSubrange(saved.1...)
        }
        return try decodeHere(T.self)
    }

    /// Decodes a `T` from ``current`` at the current level.
    func decodeHere<T: Decodable>(_ type: T.Type) throws -> T {
        valueDepth += 1
        defer { valueDepth -= 1 }
        guard valueDepth <= JSONC.maximumValueDepth else { throw JSONC.tooDeep(codingPath) }

        let node = current
        let path = { self.codingPath }
        if T.self == Date.self {
            switch options.dateDecodingStrategy {
            case .deferredToDate:
                return try Date(from: self) as! T
            case .secondsSince1970:
                let seconds = try JSONC.readDouble(
                    node, as: Date.self, options.nonConformingFloatDecodingStrategy, path)
                return Date(timeIntervalSince1970: seconds) as! T
            case .millisecondsSince1970:
                let milliseconds = try JSONC.readDouble(
                    node, as: Date.self, options.nonConformingFloatDecodingStrategy, path)
                return Date(timeIntervalSince1970: milliseconds / 1000) as! T
            case .iso8601:
                let text = try JSONC.readString(node, path)
                guard let date = (try? JSONC.iso8601.parse(text))
                        ?? (try? JSONC.iso8601Fractional.parse(text)) else {
                    throw DecodingError.dataCorrupted(.init(
                        codingPath: codingPath,
                        debugDescription: "expected an ISO 8601 date, found \"\(text)\""))
                }
                return date as! T
            }
        } else if T.self == Data.self {
            switch options.dataDecodingStrategy {
            case .base64:
                let text = try JSONC.readString(node, path)
                guard let data = Data(base64Encoded: text) else {
                    throw DecodingError.dataCorrupted(.init(
                        codingPath: codingPath, debugDescription: "expected Base64 data, found other text"))
                }
                return data as! T
            case .deferredToData:
                return try Data(from: self) as! T
            }
        } else if T.self == URL.self {
            let text = try JSONC.readString(node, path)
            guard let url = URL(string: text) else {
                throw DecodingError.dataCorrupted(.init(
                    codingPath: codingPath, debugDescription: "expected a URL, found \"\(text)\""))
            }
            return url as! T
        } else if T.self == Decimal.self {
            return try readDecimal(node) as! T
        } else if let treeType = T.self as? any JSONCTreeRepresentable.Type {
            return try treeType.init(jsonCObject: node) as! T
        }
        return try T(from: self)
    }

    /// The ``JSONValue`` of ``current`` (``readJSONValue(_:path:)``): what `JSONValue.init(from:)`
    /// reads from this decoder.
    func readJSONValueHere() throws -> JSONValue {
        var path = codingPath
        return try readJSONValue(current, path: &path)
    }

    /// A ``JSONValue`` read straight from `node` (at `path`), each number of the kind json-c
    /// holds: an int node an integer (`uint` past `Int64.max`), a double node a `double` even
    /// when whole (`1.0`, `-0.0`, `1e16`), so that a value keeps its kinds through json-c as it
    /// does through the snapshot coder. (`JSONValue.init(from:)`, which other decoders reach,
    /// cannot tell: it reads a whole number as an integer.) Containers past the nesting limit,
    /// strings and keys that are not UTF-8 and non-finite numbers are refused as elsewhere.
    private func readJSONValue(_ node: OpaquePointer?, path: inout [any CodingKey]) throws -> JSONValue {
        guard let node else { return .null }
        switch json_object_get_type(node) {
        case json_type_boolean:
            return .bool(json_object_get_boolean(node) != 0)
        case json_type_int:
            let signed = json_object_get_int64(node)
            if signed >= 0, case let unsigned = json_object_get_uint64(node), unsigned > UInt64(Int64.max) {
                return .uint(unsigned)
            }
            return .int(signed)
        case json_type_double:
            let current = path
            return .double(try JSONC.readDouble(node, as: Double.self, options.nonConformingFloatDecodingStrategy) {
                current
            })
        case json_type_string:
            let current = path
            return .string(try JSONC.stringValue(of: node) { current })
        case json_type_array:
            _ = try containerNode(node, object: false, path: path, depth: path.count)
            let count = json_object_array_length(node)
            var elements: [JSONValue] = []
            elements.reserveCapacity(count)
            for index in 0..<count {
                path.append(IndexKey(index))
                defer { path.removeLast() }
                elements.append(try readJSONValue(json_object_array_get_idx(node, index), path: &path))
            }
            return .array(elements)
        default:
            _ = try containerNode(node, object: true, path: path, depth: path.count)
            var members: [JSONKey: JSONValue] = [:]
            members.reserveCapacity(Int(json_object_object_length(node)))
            for (name, value) in JSONC.members(of: node) {
                let key = try JSONC.key(name, at: path)
                path.append(AnyCodingKey(stringValue: key))
                defer { path.removeLast() }
                members[JSONKey(key)] = try readJSONValue(value, path: &path)
            }
            return .object(members)
        }
    }

    /// A Decimal from a number: integers exactly, doubles through their shortest text (so the
    /// `0.1` json-c parsed decodes as exactly 0.1, but digits past a double's 17 are lost).
    private func readDecimal(_ node: OpaquePointer?) throws -> Decimal {
        if let node, json_object_get_type(node) == json_type_int {
            let signed = json_object_get_int64(node)
            return signed < 0 ? Decimal(signed) : Decimal(json_object_get_uint64(node))
        }
        let double = try JSONC.readDouble(
            node, as: Decimal.self, options.nonConformingFloatDecodingStrategy) { codingPath }
        if double.isNaN { return .nan }
        // The number's own text first: a double node keeps the digits it was parsed or made
        // from, which a Double may not hold (19 significant digits, say).
        if double.isFinite, let node, let text = JSONC.printedNumber(node),
           let decimal = Decimal(string: text) {
            return decimal
        }
        guard double.isFinite, let decimal = Decimal(string: double.description) else {
            throw JSONC.doesNotFit(double.description, Decimal.self, codingPath)
        }
        return decimal
    }

    private func path(_ extra: [any CodingKey], _ key: any CodingKey) -> [any CodingKey] {
        codingPath + extra + [key]
    }

    /// Checks that a container may open at path length `depth` on `node`, and that `node` is an
    /// object (or array).
    func containerNode(
        _ node: OpaquePointer?, object: Bool, path: @autoclosure () -> [any CodingKey], depth: Int
    ) throws -> OpaquePointer {
        let wanted = object ? json_type_object : json_type_array
        guard let node, json_object_get_type(node) == wanted else {
            throw JSONC.mismatch(
                object ? [String: Any].self : [Any].self, node, path(),
                expected: object ? "object" : "array")
        }
        guard depth < StoreLimits.maximumNestingDepth else { throw JSONC.tooDeep(path()) }
        return node
    }

    /// Makes the decoder `superDecoder()` returns.
    func makeSuperDecoder(path: [any CodingKey], node: OpaquePointer?) -> JSONCDecoderImpl {
        let decoder = JSONCDecoderImpl(state: state, codingPath: path, current: node)
        state.keep(decoder)
        return decoder
    }

    // MARK: Decoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let node = try containerNode(current, object: true, path: codingPath, depth: codingPath.count)
        return KeyedDecodingContainer(JSONCKeyedDecodingContainer<Key>(
            impl: Unmanaged.passUnretained(self), object: node, baseDepth: codingPath.count, extra: []))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let node = try containerNode(current, object: false, path: codingPath, depth: codingPath.count)
        return JSONCUnkeyedDecodingContainer(
            impl: Unmanaged.passUnretained(self), array: node, baseDepth: codingPath.count, extra: [])
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        JSONCSingleValueDecodingContainer(impl: Unmanaged.passUnretained(self), node: current)
    }
}

// MARK: - Containers
