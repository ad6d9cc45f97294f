// The decoders and containers of the snapshot coder's decode half (SnapshotDecoder.swift): what
// `init(from:)` is handed. Structs of a raw session pointer and slot indices: copying them costs
// no retain/release and they fit an existential's inline buffer.

import FoundationEssentials

/// The `Decoder` handed to `init(from:)`: 12 bytes, a session pointer and a slot.
struct TapeDecoder: Decoder {
    let session: UnsafePointer<DecodeSession>
    let node: UInt32

    @inline(__always)
    init(session: UnsafePointer<DecodeSession>, node: UInt32) {
        self.session = session
        self.node = node
    }

    /// Computed by walking the tape: O(size of the tape).
    var codingPath: [any CodingKey] { session.pointee.codingPath(node) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let tag = session.pointee.slots[Int(node)].tag
        guard tag == .object || tag == .pending else {
            throw session.pointee.mismatch(KeyedDecodingContainer<Key>.self, node, expected: "object")
        }
        let cache = session.pointee.cache
        if let (i, isNew) = cache.entry(depth: session.pointee.slots[Int(node)].depth,
                                        type: ObjectIdentifier(Key.self), node: node) {
            return cache.container(
                i, isNew: isNew, pointedAt: CachedTarget(buffer: nil, node: node, busy: true),
                type: ObjectIdentifier(Key.self)
            ) { target in KeyedDecodingContainer(TapeKeyedDecoder<Key>(session: session, target: target)) }
        }
        return KeyedDecodingContainer(TapeKeyedDecoder<Key>(session: session, node: node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let slot = session.pointee.slots[Int(node)]
        guard slot.tag == .array else {
            throw session.pointee.mismatch((any UnkeyedDecodingContainer).self, node, expected: "array")
        }
        return TapeUnkeyedDecoder(session: session, node: node, next: slot.first)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        TapeSingleValueDecoder(session: session, node: node)
    }
}

extension DecodeSession {
    @inline(never)
    func mismatch(_ type: Any.Type, _ node: UInt32, expected: String) -> DecodingError {
        let found = buffer.pointee.kindName(node)
        let context = DecodingError.Context(
            codingPath: codingPath(node), debugDescription: "expected \(expected), found \(found)")
        if found == "null" { return .valueNotFound(type, context) }
        return .typeMismatch(type, context)
    }
}

struct TapeKeyedDecoder<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let session: UnsafePointer<DecodeSession>
    /// For a cached container: where it currently points; else nil and `fixedNode`.
    let target: UnsafeMutablePointer<CachedTarget>?
    let fixedNode: UInt32

    init(session: UnsafePointer<DecodeSession>, node: UInt32) {
        self.session = session
        target = nil
        fixedNode = node
    }

    init(session: UnsafePointer<DecodeSession>, target: UnsafeMutablePointer<CachedTarget>) {
        self.session = session
        self.target = target
        fixedNode = 0
    }

    @inline(__always)
    var node: UInt32 {
        if let target { return target.pointee.node }
        return fixedNode
    }

    var codingPath: [any CodingKey] { session.pointee.codingPath(node) }

    /// The keys present, in encoding order, that `Key` can represent. O(entries).
    var allKeys: [Key] {
        let s = session.pointee
        var keys: [Key] = []
        var entry = s.slots[Int(node)].first
        while entry != 0 {
            if let key = Key(stringValue: s.strings[Int(s.slots[Int(entry)].key)]) { keys.append(key) }
            entry = s.slots[Int(entry)].next
        }
        return keys
    }

    func contains(_ key: Key) -> Bool {
        lookUp(key) != 0
    }

    /// The child for `key`, or 0. A ``JSONValue``'s member keys are matched code point by code
    /// point, other keys as Swift strings.
    @inline(__always)
    func lookUp(_ key: Key) -> UInt32 {
        if Key.self == JSONValue.MemberKey.self {
            return session.pointee.exactChild(of: node, named: key.stringValue)
        }
        return session.pointee.child(of: node, named: key.stringValue)
    }

    @inline(__always)
    func child(_ key: Key) throws -> UInt32 {
        let child = lookUp(key)
        if child == 0 { throw session.pointee.keyNotFound(key, in: node) }
        return child
    }

    /// The child for `key` unless it is missing or null.
    @inline(__always)
    func present(_ key: Key) -> UInt32? {
        let child = lookUp(key)
        if child == 0 || session.pointee.isNull(child) { return nil }
        return child
    }

    func decodeNil(forKey key: Key) throws -> Bool { session.pointee.isNull(try child(key)) }
    func decode(_: Bool.Type, forKey key: Key) throws -> Bool { try session.pointee.bool(child(key)) }
    func decode(_: String.Type, forKey key: Key) throws -> String { try session.pointee.string(child(key)) }
    func decode(_: Double.Type, forKey key: Key) throws -> Double { try session.pointee.double(child(key)) }
    func decode(_: Float.Type, forKey key: Key) throws -> Float { try session.pointee.float(child(key)) }
    func decode(_: Int.Type, forKey key: Key) throws -> Int { try session.pointee.integer(Int.self, child(key)) }
    func decode(_: Int8.Type, forKey key: Key) throws -> Int8 { try session.pointee.integer(Int8.self, child(key)) }
    func decode(_: Int16.Type, forKey key: Key) throws -> Int16 { try session.pointee.integer(Int16.self, child(key)) }
    func decode(_: Int32.Type, forKey key: Key) throws -> Int32 { try session.pointee.integer(Int32.self, child(key)) }
    func decode(_: Int64.Type, forKey key: Key) throws -> Int64 { try session.pointee.integer(Int64.self, child(key)) }
    func decode(_: Int128.Type, forKey key: Key) throws -> Int128 { try session.pointee.integer(Int128.self, child(key)) }
    func decode(_: UInt.Type, forKey key: Key) throws -> UInt { try session.pointee.integer(UInt.self, child(key)) }
    func decode(_: UInt8.Type, forKey key: Key) throws -> UInt8 { try session.pointee.integer(UInt8.self, child(key)) }
    func decode(_: UInt16.Type, forKey key: Key) throws -> UInt16 { try session.pointee.integer(UInt16.self, child(key)) }
    func decode(_: UInt32.Type, forKey key: Key) throws -> UInt32 { try session.pointee.integer(UInt32.self, child(key)) }
    func decode(_: UInt64.Type, forKey key: Key) throws -> UInt64 { try session.pointee.integer(UInt64.self, child(key)) }
    func decode(_: UInt128.Type, forKey key: Key) throws -> UInt128 { try session.pointee.integer(UInt128.self, child(key)) }
    func decode<T: Decodable>(_: T.Type, forKey key: Key) throws -> T {
        try session.pointee.decodeValue(T.self, at: child(key), session)
    }

    func decodeIfPresent(_: Bool.Type, forKey key: Key) throws -> Bool? {
        guard let c = present(key) else { return nil }; return try session.pointee.bool(c)
    }
    func decodeIfPresent(_: String.Type, forKey key: Key) throws -> String? {
        guard let c = present(key) else { return nil }; return try session.pointee.string(c)
    }
    func decodeIfPresent(_: Double.Type, forKey key: Key) throws -> Double? {
        guard let c = present(key) else { return nil }; return try session.pointee.double(c)
    }
    func decodeIfPresent(_: Float.Type, forKey key: Key) throws -> Float? {
        guard let c = present(key) else { return nil }; return try session.pointee.float(c)
    }
    func decodeIfPresent(_: Int.Type, forKey key: Key) throws -> Int? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(Int.self, c)
    }
    func decodeIfPresent(_: Int8.Type, forKey key: Key) throws -> Int8? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(Int8.self, c)
    }
    func decodeIfPresent(_: Int16.Type, forKey key: Key) throws -> Int16? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(Int16.self, c)
    }
    func decodeIfPresent(_: Int32.Type, forKey key: Key) throws -> Int32? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(Int32.self, c)
    }
    func decodeIfPresent(_: Int64.Type, forKey key: Key) throws -> Int64? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(Int64.self, c)
    }
    func decodeIfPresent(_: Int128.Type, forKey key: Key) throws -> Int128? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(Int128.self, c)
    }
    func decodeIfPresent(_: UInt.Type, forKey key: Key) throws -> UInt? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(UInt.self, c)
    }
    func decodeIfPresent(_: UInt8.Type, forKey key: Key) throws -> UInt8? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(UInt8.self, c)
    }
    func decodeIfPresent(_: UInt16.Type, forKey key: Key) throws -> UInt16? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(UInt16.self, c)
    }
    func decodeIfPresent(_: UInt32.Type, forKey key: Key) throws -> UInt32? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(UInt32.self, c)
    }
    func decodeIfPresent(_: UInt64.Type, forKey key: Key) throws -> UInt64? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(UInt64.self, c)
    }
    func decodeIfPresent(_: UInt128.Type, forKey key: Key) throws -> UInt128? {
        guard let c = present(key) else { return nil }; return try session.pointee.integer(UInt128.self, c)
    }
    func decodeIfPresent<T: Decodable>(_: T.Type, forKey key: Key) throws -> T? {
        guard let c = present(key) else { return nil }
        return try session.pointee.decodeValue(T.self, at: c, session)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try TapeDecoder(session: session, node: child(key)).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try TapeDecoder(session: session, node: child(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        try decoder(named: AnyCodingKey.super)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        try decoder(named: AnyCodingKey(key))
    }

    /// A decoder for the value under `key`; for a missing key, one that reads as null.
    private func decoder(named key: AnyCodingKey) throws -> any Decoder {
        let child = session.pointee.child(of: node, named: key.stringValue)
        if child == 0 { return NullDecoder(codingPath: codingPath + [key]) }
        return TapeDecoder(session: session, node: child)
    }
}

struct TapeUnkeyedDecoder: UnkeyedDecodingContainer {
    let session: UnsafePointer<DecodeSession>
    let node: UInt32
    /// The next element's slot, 0 at the end.
    var next: UInt32
    private(set) var currentIndex: Int = 0

    init(session: UnsafePointer<DecodeSession>, node: UInt32, next: UInt32) {
        self.session = session
        self.node = node
        self.next = next
    }

    var codingPath: [any CodingKey] { session.pointee.codingPath(node) }
    var count: Int? { session.pointee.slots[Int(node)].count }
    var isAtEnd: Bool { next == 0 }

    /// The current element's slot; throws at the end.
    @inline(__always)
    func current(_ type: Any.Type) throws -> UInt32 {
        if next == 0 { throw atEnd(type) }
        return next
    }

    @inline(never)
    func atEnd(_ type: Any.Type) -> DecodingError {
        .valueNotFound(type, DecodingError.Context(
            codingPath: codingPath + [IndexKey(currentIndex)],
            debugDescription: "expected \(type), found the end of the array"))
    }

    @inline(__always)
    mutating func advance(_ value: UInt32) {
        next = session.pointee.slots[Int(value)].next
        currentIndex += 1
    }

    @inline(__always)
    mutating func read<T>(_ type: T.Type, _ body: (DecodeSession, UInt32) throws -> T) throws -> T {
        let c = try current(T.self)
        let value = try body(session.pointee, c)
        advance(c)
        return value
    }

    mutating func decodeNil() throws -> Bool {
        let c = try current(Never?.self)
        if session.pointee.isNull(c) { advance(c); return true }
        return false
    }
    mutating func decode(_: Bool.Type) throws -> Bool { try read(Bool.self) { try $0.bool($1) } }
    mutating func decode(_: String.Type) throws -> String { try read(String.self) { try $0.string($1) } }
    mutating func decode(_: Double.Type) throws -> Double { try read(Double.self) { try $0.double($1) } }
    mutating func decode(_: Float.Type) throws -> Float { try read(Float.self) { try $0.float($1) } }
    mutating func decode(_: Int.Type) throws -> Int { try read(Int.self) { try $0.integer(Int.self, $1) } }
    mutating func decode(_: Int8.Type) throws -> Int8 { try read(Int8.self) { try $0.integer(Int8.self, $1) } }
    mutating func decode(_: Int16.Type) throws -> Int16 { try read(Int16.self) { try $0.integer(Int16.self, $1) } }
    mutating func decode(_: Int32.Type) throws -> Int32 { try read(Int32.self) { try $0.integer(Int32.self, $1) } }
    mutating func decode(_: Int64.Type) throws -> Int64 { try read(Int64.self) { try $0.integer(Int64.self, $1) } }
    mutating func decode(_: Int128.Type) throws -> Int128 { try read(Int128.self) { try $0.integer(Int128.self, $1) } }
    mutating func decode(_: UInt.Type) throws -> UInt { try read(UInt.self) { try $0.integer(UInt.self, $1) } }
    mutating func decode(_: UInt8.Type) throws -> UInt8 { try read(UInt8.self) { try $0.integer(UInt8.self, $1) } }
    mutating func decode(_: UInt16.Type) throws -> UInt16 { try read(UInt16.self) { try $0.integer(UInt16.self, $1) } }
    mutating func decode(_: UInt32.Type) throws -> UInt32 { try read(UInt32.self) { try $0.integer(UInt32.self, $1) } }
    mutating func decode(_: UInt64.Type) throws -> UInt64 { try read(UInt64.self) { try $0.integer(UInt64.self, $1) } }
    mutating func decode(_: UInt128.Type) throws -> UInt128 { try read(UInt128.self) { try $0.integer(UInt128.self, $1) } }
    mutating func decode<T: Decodable>(_: T.Type) throws -> T {
        let c = try current(T.self)
        let value = try session.pointee.decodeValue(T.self, at: c, session)
        advance(c)
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let c = try current(KeyedDecodingContainer<NestedKey>.self)
        let container = try TapeDecoder(session: session, node: c).container(keyedBy: NestedKey.self)
        advance(c)
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let c = try current((any UnkeyedDecodingContainer).self)
        let container = try TapeDecoder(session: session, node: c).unkeyedContainer()
        advance(c)
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let c = try current((any Decoder).self)
        advance(c)
        return TapeDecoder(session: session, node: c)
    }
}

struct TapeSingleValueDecoder: SingleValueDecodingContainer {
    let session: UnsafePointer<DecodeSession>
    let node: UInt32

    var codingPath: [any CodingKey] { session.pointee.codingPath(node) }

    func decodeNil() -> Bool { session.pointee.isNull(node) }
    func decode(_: Bool.Type) throws -> Bool { try session.pointee.bool(node) }
    func decode(_: String.Type) throws -> String { try session.pointee.string(node) }
    func decode(_: Double.Type) throws -> Double { try session.pointee.double(node) }
    func decode(_: Float.Type) throws -> Float { try session.pointee.float(node) }
    func decode(_: Int.Type) throws -> Int { try session.pointee.integer(Int.self, node) }
    func decode(_: Int8.Type) throws -> Int8 { try session.pointee.integer(Int8.self, node) }
    func decode(_: Int16.Type) throws -> Int16 { try session.pointee.integer(Int16.self, node) }
    func decode(_: Int32.Type) throws -> Int32 { try session.pointee.integer(Int32.self, node) }
    func decode(_: Int64.Type) throws -> Int64 { try session.pointee.integer(Int64.self, node) }
    func decode(_: Int128.Type) throws -> Int128 { try session.pointee.integer(Int128.self, node) }
    func decode(_: UInt.Type) throws -> UInt { try session.pointee.integer(UInt.self, node) }
    func decode(_: UInt8.Type) throws -> UInt8 { try session.pointee.integer(UInt8.self, node) }
    func decode(_: UInt16.Type) throws -> UInt16 { try session.pointee.integer(UInt16.self, node) }
    func decode(_: UInt32.Type) throws -> UInt32 { try session.pointee.integer(UInt32.self, node) }
    func decode(_: UInt64.Type) throws -> UInt64 { try session.pointee.integer(UInt64.self, node) }
    func decode(_: UInt128.Type) throws -> UInt128 { try session.pointee.integer(UInt128.self, node) }
    func decode<T: Decodable>(_: T.Type) throws -> T {
        try session.pointee.decodeValue(T.self, at: node, session)
    }
}

/// The decoder `superDecoder(forKey:)` returns for a key that is not there: it reads as null,
/// so containers fail with `valueNotFound` naming the path. Rare path; a class is fine.
final class NullDecoder: Decoder, SingleValueDecodingContainer {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(codingPath: [any CodingKey]) { self.codingPath = codingPath }

    private func missing(_ type: Any.Type) -> DecodingError {
        .valueNotFound(type, DecodingError.Context(
            codingPath: codingPath, debugDescription: "expected \(type), found nothing"))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw missing(KeyedDecodingContainer<Key>.self)
    }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw missing((any UnkeyedDecodingContainer).self)
    }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { true }
    func decode(_: Bool.Type) throws -> Bool { throw missing(Bool.self) }
    func decode(_: String.Type) throws -> String { throw missing(String.self) }
    func decode(_: Double.Type) throws -> Double { throw missing(Double.self) }
    func decode(_: Float.Type) throws -> Float { throw missing(Float.self) }
    func decode(_: Int.Type) throws -> Int { throw missing(Int.self) }
    func decode(_: Int8.Type) throws -> Int8 { throw missing(Int8.self) }
    func decode(_: Int16.Type) throws -> Int16 { throw missing(Int16.self) }
    func decode(_: Int32.Type) throws -> Int32 { throw missing(Int32.self) }
    func decode(_: Int64.Type) throws -> Int64 { throw missing(Int64.self) }
    func decode(_: Int128.Type) throws -> Int128 { throw missing(Int128.self) }
    func decode(_: UInt.Type) throws -> UInt { throw missing(UInt.self) }
    func decode(_: UInt8.Type) throws -> UInt8 { throw missing(UInt8.self) }
    func decode(_: UInt16.Type) throws -> UInt16 { throw missing(UInt16.self) }
    func decode(_: UInt32.Type) throws -> UInt32 { throw missing(UInt32.self) }
    func decode(_: UInt64.Type) throws -> UInt64 { throw missing(UInt64.self) }
    func decode(_: UInt128.Type) throws -> UInt128 { throw missing(UInt128.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { throw missing(T.self) }
}
