internal import CJSONC
import FoundationEssentials

/// Reads a JSON object. Holds no strong references: the standard library copies containers on
/// every call.
struct JSONCKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let impl: Unmanaged<JSONCDecoderImpl>
    let object: OpaquePointer
    /// How much of the decoder's coding path is this container's, plus keys of nested containers.
    let baseDepth: Int
    let extra: [any CodingKey]

    var codingPath: [any CodingKey] {
        Array(impl.takeUnretainedValue().codingPath.prefix(baseDepth)) + extra
    }

    private var decoder: JSONCDecoderImpl { impl.takeUnretainedValue() }
    private var floats: JSONCDecoder.NonConformingFloatDecodingStrategy {
        decoder.state.options.nonConformingFloatDecodingStrategy
    }

    /// The keys, in the object's order. A key that is not valid UTF-8 (possible in trees built
    /// by C code) is left out and fails the decode, as such a string does (``JSONC/key(_:at:)``).
    var allKeys: [Key] {
        var keys: [Key] = []
        keys.reserveCapacity(Int(json_object_object_length(object)))
        for (name, _) in JSONC.members(of: object) {
            do {
                if let key = Key(stringValue: try JSONC.key(name, at: codingPath)) { keys.append(key) }
            } catch {
                decoder.state.record(error)
            }
        }
        return keys
    }

    /// The node under `key`: `.none` if the key is missing, `.some(nil)` if it holds null.
    private func lookUp(_ key: Key) -> OpaquePointer?? {
        JSONC.value(in: object, forKey: key.stringValue)
    }

    private func require(_ key: Key) throws -> OpaquePointer? {
        guard let node = lookUp(key) else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "key not found"))
        }
        return node
    }

    private func keyPath(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func contains(_ key: Key) -> Bool { lookUp(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { try require(key) == nil }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try JSONC.readBool(require(key)) { keyPath(key) }
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try JSONC.readString(require(key)) { keyPath(key) }
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try JSONC.readDouble(require(key), as: Double.self, floats) { keyPath(key) }
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try JSONC.readFloat(require(key), floats) { keyPath(key) }
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try integer(key) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try integer(key) }

    private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        try JSONC.readInteger(require(key), as: T.self) { keyPath(key) }
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decoder.decodeChild(T.self, from: require(key), extra: extra, key: key)
    }

    // One lookup each, where the default implementations make three.

    private func ifPresent<T>(_ key: Key, _ read: (OpaquePointer) throws -> T) throws -> T? {
        guard let found = lookUp(key), let node = found else { return nil }
        return try read(node)
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        try ifPresent(key) { try JSONC.readBool($0) { keyPath(key) } }
    }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        try ifPresent(key) { try JSONC.readString($0) { keyPath(key) } }
    }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        try ifPresent(key) { try JSONC.readDouble($0, as: Double.self, floats) { keyPath(key) } }
    }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? {
        try ifPresent(key) { try JSONC.readFloat($0, floats) { keyPath(key) } }
    }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int128.Type, forKey key: Key) throws -> Int128? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt128.Type, forKey key: Key) throws -> UInt128? { try integerIfPresent(key) }

    private func integerIfPresent<T: FixedWidthInteger>(_ key: Key) throws -> T? {
        try ifPresent(key) { try JSONC.readInteger($0, as: T.self) { keyPath(key) } }
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try ifPresent(key) { try decoder.decodeChild(T.self, from: $0, extra: extra, key: key) }
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let node = try decoder.containerNode(
            require(key), object: true, path: keyPath(key), depth: baseDepth + extra.count + 1)
        return KeyedDecodingContainer(JSONCKeyedDecodingContainer<NestedKey>(
            impl: impl, object: node, baseDepth: baseDepth, extra: extra + [key]))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let node = try decoder.containerNode(
            require(key), object: false, path: keyPath(key), depth: baseDepth + extra.count + 1)
        return JSONCUnkeyedDecodingContainer(
            impl: impl, array: node, baseDepth: baseDepth, extra: extra + [key])
    }

    func superDecoder() throws -> any Decoder {
        try superDecoder(key: AnyCodingKey.super)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        try superDecoder(key: AnyCodingKey(key))
    }

    private func superDecoder(key: AnyCodingKey) throws -> any Decoder {
        var node: OpaquePointer?
        _ = key.stringValue.withCString { json_object_object_get_ex(object, $0, &node) }
        return decoder.makeSuperDecoder(path: codingPath + [key], node: node)
    }
}

/// Reads a JSON array, front to back.
struct JSONCUnkeyedDecodingContainer: UnkeyedDecodingContainer {
    let impl: Unmanaged<JSONCDecoderImpl>
    let array: OpaquePointer
    let baseDepth: Int
    let extra: [any CodingKey]
    let length: Int
    private(set) var currentIndex = 0

    init(impl: Unmanaged<JSONCDecoderImpl>, array: OpaquePointer, baseDepth: Int, extra: [any CodingKey]) {
        self.impl = impl
        self.array = array
        self.baseDepth = baseDepth
        self.extra = extra
        self.length = json_object_array_length(array)
    }

    var codingPath: [any CodingKey] {
        Array(impl.takeUnretainedValue().codingPath.prefix(baseDepth)) + extra
    }
    var count: Int? { length }
    var isAtEnd: Bool { currentIndex >= length }

    private var decoder: JSONCDecoderImpl { impl.takeUnretainedValue() }
    private var floats: JSONCDecoder.NonConformingFloatDecodingStrategy {
        decoder.state.options.nonConformingFloatDecodingStrategy
    }

    /// Reads the next element with `read` and moves past it (only if `read` succeeds).
    private mutating func next<T>(
        _ type: Any.Type, _ read: (OpaquePointer?, _ index: Int, _ path: () -> [any CodingKey]) throws -> T
    ) throws -> T {
        let index = currentIndex
        let me = self
        guard index < length else {
            throw DecodingError.valueNotFound(type, .init(
                codingPath: codingPath + [IndexKey(index)], debugDescription: "unkeyed container is at end"))
        }
        let value = try read(json_object_array_get_idx(array, index), index) {
            me.codingPath + [IndexKey(index)]
        }
        currentIndex = index + 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard currentIndex < length else {
            throw DecodingError.valueNotFound(Any?.self, .init(
                codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "unkeyed container is at end"))
        }
        if json_object_array_get_idx(array, currentIndex) == nil {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        try next(type) { node, _, path in try JSONC.readBool(node, path) }
    }
    mutating func decode(_ type: String.Type) throws -> String {
        try next(type) { node, _, path in try JSONC.readString(node, path) }
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let floats = self.floats
        return try next(type) { node, _, path in try JSONC.readDouble(node, as: Double.self, floats, path) }
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let floats = self.floats
        return try next(type) { node, _, path in try JSONC.readFloat(node, floats, path) }
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try integer() }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try integer() }

    private mutating func integer<T: FixedWidthInteger>() throws -> T {
        try next(T.self) { node, _, path in try JSONC.readInteger(node, as: T.self, path) }
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = self.decoder, extra = self.extra
        return try next(type) { node, index, _ in
            try decoder.decodeChild(T.self, from: node, extra: extra, key: IndexKey(index))
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let (decoder, depth, extra) = (self.decoder, baseDepth + extra.count + 1, self.extra)
        let (impl, baseDepth) = (self.impl, self.baseDepth)
        return try next(KeyedDecodingContainer<NestedKey>.self) { node, index, path in
            let object = try decoder.containerNode(node, object: true, path: path(), depth: depth)
            return KeyedDecodingContainer(JSONCKeyedDecodingContainer<NestedKey>(
                impl: impl, object: object, baseDepth: baseDepth, extra: extra + [IndexKey(index)]))
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (decoder, depth, extra) = (self.decoder, baseDepth + extra.count + 1, self.extra)
        let (impl, baseDepth) = (self.impl, self.baseDepth)
        return try next((any UnkeyedDecodingContainer).self) { node, index, path in
            let array = try decoder.containerNode(node, object: false, path: path(), depth: depth)
            return JSONCUnkeyedDecodingContainer(
                impl: impl, array: array, baseDepth: baseDepth, extra: extra + [IndexKey(index)])
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = self.decoder
        return try next((any Decoder).self) { node, _, path in
            decoder.makeSuperDecoder(path: path(), node: node)
        }
    }
}

/// Reads the value of its decoder's level.
struct JSONCSingleValueDecodingContainer: SingleValueDecodingContainer {
    let impl: Unmanaged<JSONCDecoderImpl>
    let node: OpaquePointer?

    var codingPath: [any CodingKey] { impl.takeUnretainedValue().codingPath }

    private var floats: JSONCDecoder.NonConformingFloatDecodingStrategy {
        impl.takeUnretainedValue().state.options.nonConformingFloatDecodingStrategy
    }

    func decodeNil() -> Bool { node == nil }
    func decode(_ type: Bool.Type) throws -> Bool { try JSONC.readBool(node) { codingPath } }
    func decode(_ type: String.Type) throws -> String { try JSONC.readString(node) { codingPath } }
    func decode(_ type: Double.Type) throws -> Double {
        try JSONC.readDouble(node, as: Double.self, floats) { codingPath }
    }
    func decode(_ type: Float.Type) throws -> Float { try JSONC.readFloat(node, floats) { codingPath } }
    func decode(_ type: Int.Type) throws -> Int { try integer() }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }
    func decode(_ type: Int128.Type) throws -> Int128 { try integer() }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try integer() }

    private func integer<T: FixedWidthInteger>() throws -> T {
        try JSONC.readInteger(node, as: T.self) { codingPath }
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = impl.takeUnretainedValue()
        let saved = decoder.current
        decoder.current = node
        defer { decoder.current = saved }
        return try decoder.decodeHere(T.self)
    }
}
