// The encode half of the snapshot coder: Codable → SnapshotTape.
//
// Every encoder and container here is a struct holding only a raw pointer to the tape's buffer
// and a slot index. The standard library copies containers on every `encode(_:forKey:)` call;
// with no strong references inside, those copies cost no retain/release.

import FoundationEssentials

/// Writes Encodable values into ``SnapshotTape``s.
///
/// Not thread-safe: a store owns one and uses it under its lock. Reuses its internal objects
/// (the keyed containers handed to `encode(to:)`, see `KeyedContainerCache`) between values and
/// between encodes.
///
/// Cost of an encode: O(number of JSON values), 24 bytes of tape per value and 16 per string or
/// key, with no allocation per value once the tape's buffers have grown to the size of the value
/// (encoding into a previously used tape reuses them). Containers made by `nestedContainer` and
/// `superEncoder` are not cached: one small allocation each. Strings are not copied: the tape
/// keeps a reference to each (a retain for large strings, nothing for small ones).
final class SnapshotEncoder {
    /// Keyed containers reused between values and between encodes.
    private let cache = KeyedContainerCache(ways: 4)
    /// Which keys each object holds, so that a key written twice keeps one entry.
    private let keys = ObjectKeys()

    init() {}

    deinit { cache.deallocate() }

    /// Clears `tape` and writes `value` into it, reusing the tape's storage (capacity).
    ///
    /// `tape` must not be read by anyone while this runs (the store only re-encodes into a tape
    /// it holds the only reference to). A value whose `encode(to:)` asks for no container is
    /// written as `{}`. A key written twice into one object keeps one entry, as Foundation's
    /// `JSONEncoder` does (see `ObjectKeys`): a value replaces what was there, a nested container
    /// asked for again is the same container.
    ///
    /// - Throws: ``StoreError`` of kind `.limit` for a value nested deeper than
    ///   ``StoreLimits/maximumNestingDepth``; kind `.decode` (with the coding path) for an
    ///   `EncodingError` or any other error thrown by the value's `encode(to:)`. After a
    ///   failure the tape is empty.
    /// - Parameter canonicalOrder: whether a `Set`'s elements, and the entries of a `Dictionary`
    ///   that encodes as an array of keys and values, are written in a canonical order (by their
    ///   canonical JSON text) instead of the hash order, which Swift seeds per process.
    func encode<T: Encodable>(
        _ value: T, into tape: SnapshotTape, canonicalOrder: Bool = false
    ) throws(StoreError) {
        let buffer = tape.buffer
        buffer.pointee.clear()
        buffer.pointee.slots.initialize(to: TapeSlot(
            payload: 0, next: 0, key: 0, info: TapeTag.pending.rawValue | 1 << 8, first: 0))
        buffer.pointee.slotCount = 1
        cache.freeAll()
        cache._checkInvariants(slots: buffer.pointee.slots, slotCount: 1)
        keys.reset()
        buffer.pointee.cache = cache
        buffer.pointee.keys = Unmanaged.passUnretained(keys)
        buffer.pointee.canonicalOrder = canonicalOrder
        defer {
            buffer.pointee.cache = nil
            buffer.pointee.keys = nil
            buffer.pointee.canonicalOrder = false
        }
        do {
            try withExtendedLifetime(tape) {
                try TapeWriter(buffer: buffer).encodeValue(value, into: 0)
            }
        } catch {
            buffer.pointee.clear()
            throw StoreError(coding: error)
        }
        if buffer.pointee.tooDeep >= 0 {
            let error = TapeWriter(buffer: buffer).tooDeepError()
            buffer.pointee.clear()
            throw error
        }
        buffer.pointee._checkInvariants()
        cache._checkInvariants(slots: buffer.pointee.slots, slotCount: buffer.pointee.slotCount)
    }
}

/// Marks `Array`s so that the encoder writes their elements in one loop, without a dynamic type
/// check per element.
protocol SnapshotArrayEncodable {
    func encodeElements(_ writer: TapeWriter, into node: UInt32) throws
}

extension Array: SnapshotArrayEncodable where Element: Encodable {
    func encodeElements(_ writer: TapeWriter, into node: UInt32) throws {
        let buffer = writer.buffer
        buffer.pointee.makeContainer(node, .array)
        if let kind = ScalarKind(Element.self) {
            for element in self {
                let child = buffer.pointee.appendChild(of: node, key: 0, tag: .null, payload: 0)
                writer.encodeScalar(kind, element, into: child)
            }
        } else if Element.self == URL.self {
            for element in self {
                let child = buffer.pointee.appendChild(of: node, key: 0, tag: .null, payload: 0)
                writer.setURL(reinterpret(element, as: URL.self), child)
            }
        } else {
            // Elements one level down may still be scalars (a scalar is no level of its own);
            // an array already too deep (recorded as it was made) stops here, so the recursion
            // ends near the limit.
            if buffer.pointee.slots[Int(node)].depth > StoreLimits.maximumNestingDepth {
                throw writer.tooDeepError()
            }
            if buffer.pointee.canonicalOrder {
                // Each element through `encodeValue`, which orders the unordered collections.
                for element in self {
                    let child = buffer.pointee.appendChild(of: node, key: 0, tag: .pending, payload: 0)
                    try writer.encodeValue(element, into: child)
                }
                return
            }
            let cache = buffer.pointee.cache
            let depth = buffer.pointee.slots[Int(node)].depth &+ 1
            for element in self {
                let child = buffer.pointee.appendChild(of: node, key: 0, tag: .pending, payload: 0)
                try element.encode(to: TapeEncoder(buffer: buffer, node: child))
                cache?.release(depth: depth, node: child)
            }
        }
    }
}

/// The types the tape stores as scalars, found with one metatype comparison each.
enum ScalarKind {
    case string, int, bool, double, float, int8, int16, int32, int64, uint, uint8, uint16, uint32,
         uint64, int128, uint128

    @inline(__always)
    init?<T>(_ type: T.Type) {
        if T.self == String.self { self = .string }
        else if T.self == Int.self { self = .int }
        else if T.self == Bool.self { self = .bool }
        else if T.self == Double.self { self = .double }
        else if T.self == Float.self { self = .float }
        else if T.self == Int64.self { self = .int64 }
        else if T.self == UInt.self { self = .uint }
        else if T.self == UInt8.self { self = .uint8 }
        else if T.self == Int32.self { self = .int32 }
        else if T.self == UInt64.self { self = .uint64 }
        else if T.self == UInt32.self { self = .uint32 }
        else if T.self == Int8.self { self = .int8 }
        else if T.self == Int16.self { self = .int16 }
        else if T.self == UInt16.self { self = .uint16 }
        else if T.self == Int128.self { self = .int128 }
        else if T.self == UInt128.self { self = .uint128 }
        else { return nil }
    }
}

/// Reads a value of generic type `T` as `U`; only called after `T.self == U.self` was checked.
@inline(__always)
func reinterpret<T, U>(_ value: T, as _: U.Type) -> U {
    withUnsafePointer(to: value) { UnsafeRawPointer($0).assumingMemoryBound(to: U.self).pointee }
}

/// The shared writing logic: a raw pointer to the tape's buffer, nothing else.
struct TapeWriter {
    let buffer: UnsafeMutablePointer<TapeBuffer>

    @inline(__always)
    init(buffer: UnsafeMutablePointer<TapeBuffer>) { self.buffer = buffer }

    /// Writes `value` into the slot `node`: scalars directly, arrays in one loop, everything
    /// else through its own `encode(to:)`.
    
    func encodeValue<T: Encodable>(_ value: T, into node: UInt32) throws {
        if let kind = ScalarKind(T.self) {
            encodeScalar(kind, value, into: node)
        } else if T.self == URL.self {
            setURL(reinterpret(value, as: URL.self), node)
        } else if let array = value as? any SnapshotArrayEncodable {
            try array.encodeElements(self, into: node)
        } else if buffer.pointee.canonicalOrder, let unordered = value as? any CanonicallyOrdered,
            let ordered = try unordered.canonicallyOrdered()
        {
            try encodeValue(ordered, into: node)
        } else {
            // A value just below the deepest container may still be a scalar: one past it is
            // inside a container already too deep (recorded as it was made).
            if buffer.pointee.slots[Int(node)].depth > StoreLimits.maximumNestingDepth + 1 {
                throw tooDeepError()
            }
            try value.encode(to: TapeEncoder(buffer: buffer, node: node))
            if let cache = buffer.pointee.cache {
                cache.release(depth: buffer.pointee.slots[Int(node)].depth, node: node)
            }
        }
    }

    @inline(__always)
    func encodeScalar<T>(_ kind: ScalarKind, _ value: T, into node: UInt32) {
        switch kind {
        case .string: setString(reinterpret(value, as: String.self), node)
        case .int: buffer.pointee.set(node, tag: .int, payload: UInt64(bitPattern: Int64(reinterpret(value, as: Int.self))))
        case .bool: buffer.pointee.set(node, tag: .bool, payload: reinterpret(value, as: Bool.self) ? 1 : 0)
        case .double: buffer.pointee.set(node, tag: .double, payload: reinterpret(value, as: Double.self).bitPattern)
        case .float: buffer.pointee.set(node, tag: .float, payload: UInt64(reinterpret(value, as: Float.self).bitPattern))
        case .int8: setSigned(Int64(reinterpret(value, as: Int8.self)), node)
        case .int16: setSigned(Int64(reinterpret(value, as: Int16.self)), node)
        case .int32: setSigned(Int64(reinterpret(value, as: Int32.self)), node)
        case .int64: setSigned(reinterpret(value, as: Int64.self), node)
        case .uint: setUnsigned(UInt64(reinterpret(value, as: UInt.self)), node)
        case .uint8: setUnsigned(UInt64(reinterpret(value, as: UInt8.self)), node)
        case .uint16: setUnsigned(UInt64(reinterpret(value, as: UInt16.self)), node)
        case .uint32: setUnsigned(UInt64(reinterpret(value, as: UInt32.self)), node)
        case .uint64: setUnsigned(reinterpret(value, as: UInt64.self), node)
        case .int128: setInt128(reinterpret(value, as: Int128.self), node)
        case .uint128: setUInt128(reinterpret(value, as: UInt128.self), node)
        }
    }

    /// A `URL` is its absolute string, as Foundation's `JSONEncoder` writes it (its own
    /// `encode(to:)` would keep a relative URL's parts, which a JSON round trip loses).
    func setURL(_ url: URL, _ node: UInt32) {
        setString(url.absoluteString, node)
    }

    @inline(__always)
    func setSigned(_ value: Int64, _ node: UInt32) {
        buffer.pointee.set(node, tag: .int, payload: UInt64(bitPattern: value))
    }

    @inline(__always)
    func setUnsigned(_ value: UInt64, _ node: UInt32) {
        buffer.pointee.set(node, tag: .uint, payload: value)
    }

    @inline(__always)
    func setString(_ value: String, _ node: UInt32) {
        let index = buffer.pointee.appendString(value)
        buffer.pointee.set(node, tag: .string, payload: UInt64(index))
    }

    func setInt128(_ value: Int128, _ node: UInt32) {
        guard let small = Int64(exactly: value) else { return setBigInteger(String(value), node) }
        setSigned(small, node)
    }

    func setUInt128(_ value: UInt128, _ node: UInt32) {
        guard let small = UInt64(exactly: value) else { return setBigInteger(String(value), node) }
        setUnsigned(small, node)
    }

    /// An integer past 64 bits, kept as its decimal digits.
    private func setBigInteger(_ digits: String, _ node: UInt32) {
        let index = buffer.pointee.appendString(digits)
        buffer.pointee.set(node, tag: .bigint, payload: UInt64(index))
    }

    /// Appends a container child, recorded as every container is (``TapeBuffer/makeContainer``:
    /// the deepest, and the first too deep; the container APIs that create it cannot throw, so
    /// the encode reports it when it ends).
    @inline(__always)
    func appendContainer(of parent: UInt32, key: UInt32, _ tag: TapeTag) -> UInt32 {
        let child = buffer.pointee.appendChild(of: parent, key: key, tag: .pending, payload: 0)
        buffer.pointee.makeContainer(child, tag)
        return child
    }

    /// The limit error, naming the first container made past the limit, which the tape has
    /// recorded: whatever stops the encode for its depth is inside it.
    func tooDeepError() -> StoreError {
        precondition(buffer.pointee.tooDeep > 0, "ReduxStore: no container past the nesting limit was recorded")
        let path = CodingPath.describe(buffer.pointee.codingPath(to: UInt32(buffer.pointee.tooDeep)))
        let detail = "value nested deeper than \(StoreLimits.maximumNestingDepth) levels"
        return StoreError(.limit, codingPath: path, detail: detail)
    }

    func codingPath(_ node: UInt32) -> [any CodingKey] { buffer.pointee.codingPath(to: node) }
}

/// The `Encoder` handed to `encode(to:)`: the slot the value goes into.
struct TapeEncoder: Encoder {
    let buffer: UnsafeMutablePointer<TapeBuffer>
    let node: UInt32

    /// Computed by walking the tape: O(size of the tape).
    var codingPath: [any CodingKey] { buffer.pointee.codingPath(to: node) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        buffer.pointee.makeContainer(node, .object)
        if let cache = buffer.pointee.cache,
           let (i, isNew) = cache.entry(depth: buffer.pointee.slots[Int(node)].depth,
                                        type: ObjectIdentifier(Key.self), node: node) {
            return cache.container(
                i, isNew: isNew, pointedAt: CachedTarget(buffer: buffer, node: node, busy: true),
                type: ObjectIdentifier(Key.self)
            ) { target in KeyedEncodingContainer(TapeKeyedEncoder<Key>(target: target)) }
        }
        return KeyedEncodingContainer(TapeKeyedEncoder<Key>(buffer: buffer, node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        buffer.pointee.makeContainer(node, .array)
        return TapeUnkeyedEncoder(buffer: buffer, node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        TapeSingleValueEncoder(buffer: buffer, node: node)
    }
}

struct TapeKeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    /// For a cached container: where it currently points; else nil and the two fields below.
    let target: UnsafeMutablePointer<CachedTarget>?
    let fixedBuffer: UnsafeMutablePointer<TapeBuffer>?
    let fixedNode: UInt32

    init(buffer: UnsafeMutablePointer<TapeBuffer>, node: UInt32) {
        target = nil
        fixedBuffer = buffer
        fixedNode = node
    }

    init(target: UnsafeMutablePointer<CachedTarget>) {
        self.target = target
        fixedBuffer = nil
        fixedNode = 0
    }

    @inline(__always)
    var buffer: UnsafeMutablePointer<TapeBuffer> {
        if let target { return target.pointee.buffer.unsafelyUnwrapped }
        return fixedBuffer.unsafelyUnwrapped
    }

    @inline(__always)
    var node: UInt32 {
        if let target { return target.pointee.node }
        return fixedNode
    }

    var codingPath: [any CodingKey] { buffer.pointee.codingPath(to: node) }

    /// The entry `name` already has in this object (see `ObjectKeys`), or nil; records `name`.
    /// A ``JSONValue``'s member keys are compared code point by code point (its object holds
    /// keys that are equal Swift strings side by side); other keys as Swift strings.
    @inline(__always)
    func existing(_ name: String) -> (previous: UInt32, entry: UInt32)? {
        let node = self.node
        let buffer = self.buffer
        let exact = Key.self == JSONValue.MemberKey.self
        if let keys = buffer.pointee.keys {
            return keys._withUnsafeGuaranteedRef { $0.existing(name, in: node, buffer, exact: exact) }
        }
        return buffer.pointee.entry(of: node, named: name, exact: exact)
    }

    /// Appends an entry keyed `name`, replacing the one the object had under it: the last
    /// value written for a key wins, under the key's first spelling (as Foundation keeps it
    /// when a key equal as a Swift string but of other code points is written again).
    @inline(__always)
    func replace(_ name: String, _ tag: TapeTag, _ payload: UInt64) -> UInt32 {
        if let (previous, entry) = existing(name) {
            return replace(entry, previous: previous, tag, payload)
        }
        let k = buffer.pointee.appendString(name)
        return buffer.pointee.appendChild(of: node, key: k, tag: tag, payload: payload)
    }

    /// Unlinks `entry` and appends a new one under the same key.
    @inline(never)
    func replace(_ entry: UInt32, previous: UInt32, _ tag: TapeTag, _ payload: UInt64) -> UInt32 {
        let k = buffer.pointee.slots[Int(entry)].key
        buffer.pointee.unlink(entry, previous: previous, from: node)
        return buffer.pointee.appendChild(of: node, key: k, tag: tag, payload: payload)
    }

    /// The entry of a nested container of `tag` under `name`: the one the object has, if it is a
    /// container of that kind (so both are merged, as Foundation merges them), else a new one
    /// that replaces whatever was there.
    func nested(_ name: String, _ tag: TapeTag) -> UInt32 {
        let k: UInt32
        if let (previous, entry) = existing(name) {
            if buffer.pointee.slots[Int(entry)].tag == tag { return entry }
            k = buffer.pointee.slots[Int(entry)].key  // the first spelling, as in `replace`
            buffer.pointee.unlink(entry, previous: previous, from: node)
        } else {
            k = buffer.pointee.appendString(name)
        }
        return TapeWriter(buffer: buffer).appendContainer(of: node, key: k, tag)
    }

    @inline(__always)
    func add(_ key: Key, _ tag: TapeTag, _ payload: UInt64) -> UInt32 {
        replace(key.stringValue, tag, payload)
    }

    @inline(__always)
    func addString(_ value: String, _ key: Key) {
        let v = buffer.pointee.appendString(value)
        _ = replace(key.stringValue, .string, UInt64(v))
    }

    mutating func encodeNil(forKey key: Key) throws { _ = add(key, .null, 0) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { _ = add(key, .bool, value ? 1 : 0) }
    mutating func encode(_ value: String, forKey key: Key) throws { addString(value, key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { _ = add(key, .double, value.bitPattern) }
    mutating func encode(_ value: Float, forKey key: Key) throws { _ = add(key, .float, UInt64(value.bitPattern)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { _ = add(key, .int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { _ = add(key, .int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { _ = add(key, .int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { _ = add(key, .int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { _ = add(key, .int, UInt64(bitPattern: value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { _ = add(key, .uint, UInt64(value)) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { _ = add(key, .uint, UInt64(value)) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { _ = add(key, .uint, UInt64(value)) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { _ = add(key, .uint, UInt64(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { _ = add(key, .uint, value) }
    mutating func encode(_ value: Int128, forKey key: Key) throws {
        TapeWriter(buffer: buffer).setInt128(value, add(key, .null, 0))
    }
    mutating func encode(_ value: UInt128, forKey key: Key) throws {
        TapeWriter(buffer: buffer).setUInt128(value, add(key, .null, 0))
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try TapeWriter(buffer: buffer).encodeValue(value, into: add(key, .pending, 0))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(TapeKeyedEncoder<NestedKey>(buffer: buffer, node: nested(key.stringValue, .object)))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        TapeUnkeyedEncoder(buffer: buffer, node: nested(key.stringValue, .array))
    }

    /// A new encoder for the key `super`, replacing what was there (Foundation's rule).
    mutating func superEncoder() -> any Encoder {
        TapeEncoder(buffer: buffer, node: replace(AnyCodingKey.super.stringValue, .pending, 0))
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        TapeEncoder(buffer: buffer, node: add(key, .pending, 0))
    }
}

struct TapeUnkeyedEncoder: UnkeyedEncodingContainer {
    let buffer: UnsafeMutablePointer<TapeBuffer>
    let node: UInt32

    var codingPath: [any CodingKey] { buffer.pointee.codingPath(to: node) }
    var count: Int { buffer.pointee.slots[Int(node)].count }

    @inline(__always)
    func add(_ tag: TapeTag, _ payload: UInt64) -> UInt32 {
        buffer.pointee.appendChild(of: node, key: 0, tag: tag, payload: payload)
    }

    mutating func encodeNil() throws { _ = add(.null, 0) }
    mutating func encode(_ value: Bool) throws { _ = add(.bool, value ? 1 : 0) }
    mutating func encode(_ value: String) throws {
        let v = buffer.pointee.appendString(value)
        _ = add(.string, UInt64(v))
    }
    mutating func encode(_ value: Double) throws { _ = add(.double, value.bitPattern) }
    mutating func encode(_ value: Float) throws { _ = add(.float, UInt64(value.bitPattern)) }
    mutating func encode(_ value: Int) throws { _ = add(.int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int8) throws { _ = add(.int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int16) throws { _ = add(.int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int32) throws { _ = add(.int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int64) throws { _ = add(.int, UInt64(bitPattern: value)) }
    mutating func encode(_ value: UInt) throws { _ = add(.uint, UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { _ = add(.uint, UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { _ = add(.uint, UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { _ = add(.uint, UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { _ = add(.uint, value) }
    mutating func encode(_ value: Int128) throws { TapeWriter(buffer: buffer).setInt128(value, add(.null, 0)) }
    mutating func encode(_ value: UInt128) throws { TapeWriter(buffer: buffer).setUInt128(value, add(.null, 0)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try TapeWriter(buffer: buffer).encodeValue(value, into: add(.pending, 0))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = TapeWriter(buffer: buffer).appendContainer(of: node, key: 0, .object)
        return KeyedEncodingContainer(TapeKeyedEncoder<NestedKey>(buffer: buffer, node: child))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = TapeWriter(buffer: buffer).appendContainer(of: node, key: 0, .array)
        return TapeUnkeyedEncoder(buffer: buffer, node: child)
    }

    mutating func superEncoder() -> any Encoder {
        TapeEncoder(buffer: buffer, node: add(.pending, 0))
    }
}

struct TapeSingleValueEncoder: SingleValueEncodingContainer {
    let buffer: UnsafeMutablePointer<TapeBuffer>
    let node: UInt32

    var codingPath: [any CodingKey] { buffer.pointee.codingPath(to: node) }

    @inline(__always)
    func set(_ tag: TapeTag, _ payload: UInt64) { buffer.pointee.set(node, tag: tag, payload: payload) }

    mutating func encodeNil() throws { set(.null, 0) }
    mutating func encode(_ value: Bool) throws { set(.bool, value ? 1 : 0) }
    mutating func encode(_ value: String) throws { TapeWriter(buffer: buffer).setString(value, node) }
    mutating func encode(_ value: Double) throws { set(.double, value.bitPattern) }
    mutating func encode(_ value: Float) throws { set(.float, UInt64(value.bitPattern)) }
    mutating func encode(_ value: Int) throws { set(.int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int8) throws { set(.int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int16) throws { set(.int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int32) throws { set(.int, UInt64(bitPattern: Int64(value))) }
    mutating func encode(_ value: Int64) throws { set(.int, UInt64(bitPattern: value)) }
    mutating func encode(_ value: UInt) throws { set(.uint, UInt64(value)) }
    mutating func encode(_ value: UInt8) throws { set(.uint, UInt64(value)) }
    mutating func encode(_ value: UInt16) throws { set(.uint, UInt64(value)) }
    mutating func encode(_ value: UInt32) throws { set(.uint, UInt64(value)) }
    mutating func encode(_ value: UInt64) throws { set(.uint, value) }
    mutating func encode(_ value: Int128) throws { TapeWriter(buffer: buffer).setInt128(value, node) }
    mutating func encode(_ value: UInt128) throws { TapeWriter(buffer: buffer).setUInt128(value, node) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try TapeWriter(buffer: buffer).encodeValue(value, into: node)
    }
}
