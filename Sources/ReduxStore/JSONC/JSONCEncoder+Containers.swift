internal import CJSONC
import FoundationEssentials

/// Writes a JSON object. Holds no strong references: the standard library copies containers on
/// every call.
struct JSONCKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let impl: Unmanaged<JSONCEncoderImpl>
    /// The object written into; `nil` if it could not be opened (the failure is recorded).
    let object: OpaquePointer?
    /// How much of the encoder's coding path is this container's, plus keys of nested containers.
    let baseDepth: Int
    let extra: [any CodingKey]

    var codingPath: [any CodingKey] {
        Array(impl.takeUnretainedValue().codingPath.prefix(baseDepth)) + extra
    }

    private func keyPath(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    private func add(_ node: OpaquePointer?, _ key: Key) throws {
        guard let object else {
            json_object_put(node)
            throw impl.takeUnretainedValue().state.failure ?? StoreError(.outOfMemory, "no container")
        }
        // A JSON value's own keys are distinct code point by code point, as json-c keeps them.
        let name = Key.self == JSONValue.MemberKey.self
            ? key.stringValue : state.spelling(of: key.stringValue, in: object)
        try JSONC.add(node, to: object, key: name) { keyPath(key) }
    }

    private var state: EncodingState { impl.takeUnretainedValue().state }

    private var options: JSONCEncoder { impl.takeUnretainedValue().state.options }

    mutating func encodeNil(forKey key: Key) throws { try add(nil, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try add(JSONC.makeBool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws {
        try add(JSONC.makeString(value) { keyPath(key) }, key)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        try add(JSONC.makeDouble(
            value, printed: value.description, options.nonConformingFloatEncodingStrategy
        ) { keyPath(key) }, key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        try add(JSONC.makeFloat(value, options.nonConformingFloatEncodingStrategy) { keyPath(key) }, key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: Int128, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }
    mutating func encode(_ value: UInt128, forKey key: Key) throws { try add(JSONC.makeInteger(value), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        if object == nil { try add(nil, key) }  // throws the recorded failure
        try add(impl.takeUnretainedValue().encodeChild(value, extra: extra, key: key), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let node = openNested(key, keyed: true)
        return KeyedEncodingContainer(JSONCKeyedEncodingContainer<NestedKey>(
            impl: impl, object: node, baseDepth: baseDepth, extra: extra + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let node = openNested(key, keyed: false)
        return JSONCUnkeyedEncodingContainer(
            impl: impl, array: node, baseDepth: baseDepth, extra: extra + [key])
    }

    /// A nested container under `key`: the object's value there if it is a container of that
    /// kind (so both are merged, as Foundation merges them), else a new one replacing it.
    private func openNested(_ key: Key, keyed: Bool) -> OpaquePointer? {
        guard let object else { return nil }  // this container could not open: recorded already
        let name = state.spelling(of: key.stringValue, in: object)
        var existing: OpaquePointer?
        if name.withCString({ json_object_object_get_ex(object, $0, &existing) }) != 0, let existing,
           json_object_get_type(existing) == (keyed ? json_type_object : json_type_array) {
            state.pin(existing)
            return existing
        }
        return impl.takeUnretainedValue().openNested(
            in: object, path: keyPath(key), keyed: keyed
        ) { node in try JSONC.add(node, to: object, key: name) { keyPath(key) } }
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(key: AnyCodingKey.super)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(key: AnyCodingKey(key))
    }

    private func superEncoder(key: AnyCodingKey) -> any Encoder {
        impl.takeUnretainedValue().makeSuperEncoder(
            path: codingPath + [key], sink: object.map { .key($0, key.stringValue) })
    }
}

/// Writes a JSON array.
struct JSONCUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let impl: Unmanaged<JSONCEncoderImpl>
    /// The array written into; `nil` if it could not be opened (the failure is recorded).
    let array: OpaquePointer?
    let baseDepth: Int
    let extra: [any CodingKey]

    var codingPath: [any CodingKey] {
        Array(impl.takeUnretainedValue().codingPath.prefix(baseDepth)) + extra
    }

    var count: Int { array.map { json_object_array_length($0) } ?? 0 }

    private var options: JSONCEncoder { impl.takeUnretainedValue().state.options }

    private func nextPath() -> [any CodingKey] { codingPath + [IndexKey(count)] }

    private func append(_ node: OpaquePointer?) throws {
        guard let array else {
            json_object_put(node)
            throw impl.takeUnretainedValue().state.failure ?? StoreError(.outOfMemory, "no container")
        }
        try JSONC.append(node, to: array)
    }

    mutating func encodeNil() throws { try append(nil) }
    mutating func encode(_ value: Bool) throws { try append(JSONC.makeBool(value)) }
    mutating func encode(_ value: String) throws { try append(JSONC.makeString(value, nextPath)) }
    mutating func encode(_ value: Double) throws {
        try append(JSONC.makeDouble(
            value, printed: value.description, options.nonConformingFloatEncodingStrategy, nextPath))
    }
    mutating func encode(_ value: Float) throws {
        try append(JSONC.makeFloat(value, options.nonConformingFloatEncodingStrategy, nextPath))
    }
    mutating func encode(_ value: Int) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: Int8) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: Int16) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: Int32) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: Int64) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: UInt) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: UInt8) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: UInt16) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: UInt32) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: UInt64) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: Int128) throws { try append(JSONC.makeInteger(value)) }
    mutating func encode(_ value: UInt128) throws { try append(JSONC.makeInteger(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        if array == nil { try append(nil) }  // throws the recorded failure
        try append(impl.takeUnretainedValue().encodeChild(value, extra: extra, key: IndexKey(count)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let index = IndexKey(count)
        let node = openNested(keyed: true)
        return KeyedEncodingContainer(JSONCKeyedEncodingContainer<NestedKey>(
            impl: impl, object: node, baseDepth: baseDepth, extra: extra + [index]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let index = IndexKey(count)
        let node = openNested(keyed: false)
        return JSONCUnkeyedEncodingContainer(
            impl: impl, array: node, baseDepth: baseDepth, extra: extra + [index])
    }

    private func openNested(keyed: Bool) -> OpaquePointer? {
        impl.takeUnretainedValue().openNested(
            in: array, path: nextPath(), keyed: keyed
        ) { node in try JSONC.append(node, to: array!) }
    }

    mutating func superEncoder() -> any Encoder {
        let index = count
        let encoder = impl.takeUnretainedValue()
        guard let array else {
            return encoder.makeSuperEncoder(path: codingPath + [IndexKey(index)], sink: nil)
        }
        // Reserve the position with a null, which the super encoder replaces.
        do { try JSONC.append(nil, to: array) } catch {
            encoder.state.record(error)
            return encoder.makeSuperEncoder(path: codingPath + [IndexKey(index)], sink: nil)
        }
        return encoder.makeSuperEncoder(
            path: codingPath + [IndexKey(index)], sink: .index(array, index))
    }
}

/// Writes the value of its encoder's current level.
struct JSONCSingleValueEncodingContainer: SingleValueEncodingContainer {
    let impl: Unmanaged<JSONCEncoderImpl>

    var codingPath: [any CodingKey] { impl.takeUnretainedValue().codingPath }

    private var encoder: JSONCEncoderImpl { impl.takeUnretainedValue() }
    private var options: JSONCEncoder { encoder.state.options }

    private func set(_ make: () throws -> OpaquePointer?) throws {
        let encoder = self.encoder
        if let failure = encoder.state.failure { throw failure }
        try encoder.setSingle(make())
    }

    mutating func encodeNil() throws { try set { nil } }
    mutating func encode(_ value: Bool) throws { try set { try JSONC.makeBool(value) } }
    mutating func encode(_ value: String) throws {
        try set { try JSONC.makeString(value) { codingPath } }
    }
    mutating func encode(_ value: Double) throws {
        try set {
            try JSONC.makeDouble(
                value, printed: value.description, options.nonConformingFloatEncodingStrategy
            ) { codingPath }
        }
    }
    mutating func encode(_ value: Float) throws {
        try set {
            try JSONC.makeFloat(value, options.nonConformingFloatEncodingStrategy) { codingPath }
        }
    }
    mutating func encode(_ value: Int) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: Int8) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: Int16) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: Int32) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: Int64) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: UInt) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: UInt8) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: UInt16) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: UInt32) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: UInt64) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: Int128) throws { try set { try JSONC.makeInteger(value) } }
    mutating func encode(_ value: UInt128) throws { try set { try JSONC.makeInteger(value) } }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let encoder = self.encoder
        if let failure = encoder.state.failure { throw failure }
        guard encoder.kind == .empty else {
            throw EncodingError.invalidValue(value, .init(
                codingPath: codingPath,
                debugDescription: "a single value was encoded where a value was already encoded"))
        }
        try encoder.encodeHere(value)
    }
}
