// The decode half of the snapshot coder: SnapshotTape → a fresh value.
//
// The tape is only read. Per-decode mutable state (the keyed-lookup cursors) lives in a
// `DecodeSession` on the decoding thread's stack, so any number of threads may decode from one
// tape at once. Decoders and containers are structs of a raw session pointer and slot indices:
// copying them costs no retain/release and they fit an existential's inline buffer.

import FoundationEssentials

/// Reads fresh values back from ``SnapshotTape``s.
enum SnapshotDecoder {
    /// Decodes a new `T` from `tape`. Thread-safe: reads only.
    ///
    /// The result shares no reference-typed storage with the value that was encoded: classes
    /// are new instances, collections new buffers (strings, being immutable values, may share
    /// their character storage). Cost: O(number of JSON values) plus what `T`'s own
    /// `init(from:)` allocates; a keyed lookup is O(1) when keys are asked in encoding order
    /// (as synthesized `Decodable` does) and a scan of the object otherwise. Each call uses
    /// a few dozen bytes of scratch memory per nesting depth of the tape (key cursors and cached
    /// keyed containers), so the keyed container of a type is allocated once per decode, not once
    /// per value.
    ///
    /// - Throws: ``StoreError`` of kind `.decode` whose message names the coding path,
    ///   e.g. `items[3].title: expected String, found number`.
    static func decode<T: Decodable>(_ type: T.Type, from tape: SnapshotTape) throws(StoreError) -> T {
        let buffer = tape.buffer
        guard buffer.pointee.slotCount > 0 else {
            throw StoreError(.decode, "the snapshot is empty: nothing was encoded into it")
        }
        // Scratch per nesting depth, for the depths this tape has (a small state's fits on the
        // stack; sizing it by the limit would put ~20 KB on the heap for every decode).
        let depths = min(buffer.pointee.deepestContainer, StoreLimits.maximumNestingDepth) + 2
        buffer.pointee._checkInvariants()
        do {
            return try withExtendedLifetime(tape) {
                try withUnsafeTemporaryAllocation(
                    byteCount: depths * MemoryLayout<KeyHint>.stride
                        + KeyedContainerCache.byteCount(ways: cacheWays, depths: depths),
                    alignment: 16
                ) { memory in
                    let hints = memory.baseAddress.unsafelyUnwrapped.bindMemory(to: KeyHint.self, capacity: depths)
                    hints.initialize(repeating: KeyHint(container: 0, next: 0), count: depths)
                    let cache = KeyedContainerCache(
                        ways: cacheWays, depths: depths,
                        memory: memory.baseAddress.unsafelyUnwrapped + depths * MemoryLayout<KeyHint>.stride)
                    defer {
                        cache._checkInvariants(slots: buffer.pointee.slots, slotCount: buffer.pointee.slotCount)
                        cache.releaseBoxes()
                    }
                    var session = DecodeSession(
                        slots: buffer.pointee.slots, strings: buffer.pointee.strings,
                        buffer: buffer, hints: hints, hintCount: depths, cache: cache)
                    return try withUnsafePointer(to: &session) { session in
                        try session.pointee.decodeValue(T.self, at: 0, session)
                    }
                }
            }
        } catch {
            throw StoreError(coding: error)
        }
    }

    /// Cached keyed containers per depth and key type.
    static let cacheWays = 2
}

/// Where the next key of the object most recently read at one depth probably is.
struct KeyHint {
    var container: UInt32
    var next: UInt32
}

/// The state of one top-level decode, on the decoding thread's stack.
struct DecodeSession {
    let slots: UnsafeMutablePointer<TapeSlot>
    let strings: UnsafeMutablePointer<String>
    let buffer: UnsafeMutablePointer<TapeBuffer>
    let hints: UnsafeMutablePointer<KeyHint>
    /// How many depths `hints` holds; a deeper object is searched without a hint.
    let hintCount: Int
    let cache: KeyedContainerCache

    // MARK: Values

    /// Decodes a `T` from the slot `node`: scalars directly, arrays in one loop, everything else
    /// through `T.init(from:)`.
    func decodeValue<T: Decodable>(_: T.Type, at node: UInt32, _ session: UnsafePointer<DecodeSession>) throws -> T {
        if let kind = ScalarKind(T.self) {
            return try decodeScalar(kind, T.self, at: node)
        }
        if T.self == URL.self { return reinterpret(try url(node), as: T.self) }
        if T.self == JSONValue.self { return reinterpret(jsonValue(at: node), as: T.self) }
        if let array = T.self as? any SnapshotArrayDecodable.Type {
            return try Self.decodeArray(array, node, session) as! T
        }
        let value = try T(from: TapeDecoder(session: session, node: node))
        cache.release(depth: slots[Int(node)].depth, node: node)
        return value
    }

    /// The ``JSONValue`` of the slot `node`, read straight off the tape: what
    /// `JSONValue.init(from:)` makes through the decoder, without its trial decodes (each one
    /// that failed built an error with a coding path, found by walking the tape: quadratic in
    /// the size of a large state).
    ///
    /// As there, a number is an `int` when it is a whole number that fits `Int64`, else a
    /// `uint` when it fits `UInt64`, else a `double` (a `Float` read through its shortest
    /// decimal text, as ``double(_:)`` reads it); an object's duplicate keys keep the last value.
    func jsonValue(at node: UInt32) -> JSONValue {
        let slot = slots[Int(node)]
        switch slot.tag {
        case .null: return .null
        case .bool: return .bool(slot.payload != 0)
        case .int: return .int(Int64(bitPattern: slot.payload))
        case .uint: return Self.number(whole: slot.payload)
        case .double: return Self.number(Double(bitPattern: slot.payload))
        case .float:
            let float = Float(bitPattern: UInt32(truncatingIfNeeded: slot.payload))
            if let whole = Int64(exactly: float) { return .int(whole) }
            if let whole = UInt64(exactly: float) { return .uint(whole) }
            return .double((try? double(node)) ?? Double(float))
        case .bigint:
            let text = strings[Int(truncatingIfNeeded: slot.payload)]
            if let whole = Int64(text) { return .int(whole) }
            if let whole = UInt64(text) { return .uint(whole) }
            return .double(Double(text) ?? .nan)
        case .string: return .string(strings[Int(truncatingIfNeeded: slot.payload)])
        case .array:
            var elements: [JSONValue] = []
            elements.reserveCapacity(slot.count)
            var child = slot.first
            while child != 0 {
                elements.append(jsonValue(at: child))
                child = slots[Int(child)].next
            }
            return .array(elements)
        default:  // an object, or a value that encoded nothing (read as `{}`)
            var members: [JSONKey: JSONValue] = [:]
            if slot.tag == .object { members.reserveCapacity(slot.count) }
            var child = slot.tag == .object ? slot.first : 0
            while child != 0 {
                members[JSONKey(strings[Int(slots[Int(child)].key)])] = jsonValue(at: child)
                child = slots[Int(child)].next
            }
            return .object(members)
        }
    }

    private static func number(whole: UInt64) -> JSONValue {
        whole <= UInt64(Int64.max) ? .int(Int64(whole)) : .uint(whole)
    }

    private static func number(_ value: Double) -> JSONValue {
        if let whole = Int64(exactly: value) { return .int(whole) }
        if let whole = UInt64(exactly: value) { return .uint(whole) }
        return .double(value)
    }

    private static func decodeArray<A: SnapshotArrayDecodable>(
        _: A.Type, _ node: UInt32, _ session: UnsafePointer<DecodeSession>
    ) throws -> A {
        try A.decodeElements(session, node)
    }

    /// A `URL` from its string, as Foundation's `JSONDecoder` reads one.
    func url(_ node: UInt32) throws -> URL {
        let text = try string(node)
        guard let url = URL(string: text) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: codingPath(node), debugDescription: "invalid URL string \"\(text)\""))
        }
        return url
    }

    @inline(__always)
    func decodeScalar<T>(_ kind: ScalarKind, _: T.Type, at node: UInt32) throws -> T {
        switch kind {
        case .string: return reinterpret(try string(node), as: T.self)
        case .int: return reinterpret(try integer(Int.self, node), as: T.self)
        case .bool: return reinterpret(try bool(node), as: T.self)
        case .double: return reinterpret(try double(node), as: T.self)
        case .float: return reinterpret(try float(node), as: T.self)
        case .int8: return reinterpret(try integer(Int8.self, node), as: T.self)
        case .int16: return reinterpret(try integer(Int16.self, node), as: T.self)
        case .int32: return reinterpret(try integer(Int32.self, node), as: T.self)
        case .int64: return reinterpret(try integer(Int64.self, node), as: T.self)
        case .uint: return reinterpret(try integer(UInt.self, node), as: T.self)
        case .uint8: return reinterpret(try integer(UInt8.self, node), as: T.self)
        case .uint16: return reinterpret(try integer(UInt16.self, node), as: T.self)
        case .uint32: return reinterpret(try integer(UInt32.self, node), as: T.self)
        case .uint64: return reinterpret(try integer(UInt64.self, node), as: T.self)
        case .int128: return reinterpret(try integer(Int128.self, node), as: T.self)
        case .uint128: return reinterpret(try integer(UInt128.self, node), as: T.self)
        }
    }

    @inline(__always)
    func string(_ node: UInt32) throws -> String {
        let slot = slots[Int(node)]
        guard slot.tag == .string else { throw mismatch(String.self, node) }
        return strings[Int(truncatingIfNeeded: slot.payload)]
    }

    @inline(__always)
    func bool(_ node: UInt32) throws -> Bool {
        let slot = slots[Int(node)]
        guard slot.tag == .bool else { throw mismatch(Bool.self, node) }
        return slot.payload != 0
    }

    /// An integer of type `I`; a number that does not fit `I` exactly is an error, not a wrap.
    @inline(__always)
    func integer<I: FixedWidthInteger>(_: I.Type, _ node: UInt32) throws -> I {
        let slot = slots[Int(node)]
        let result: I?
        switch slot.tag {
        case .int: result = I(exactly: Int64(bitPattern: slot.payload))
        case .uint: result = I(exactly: slot.payload)
        default: return try otherInteger(I.self, node)
        }
        guard let result else { throw doesNotFit(I.self, node) }
        return result
    }

    private func otherInteger<I: FixedWidthInteger>(_: I.Type, _ node: UInt32) throws -> I {
        let slot = slots[Int(node)]
        let result: I?
        switch slot.tag {
        case .double: result = I(exactly: Double(bitPattern: slot.payload))
        case .float: result = I(exactly: Float(bitPattern: UInt32(truncatingIfNeeded: slot.payload)))
        case .bigint: result = I(strings[Int(truncatingIfNeeded: slot.payload)])
        default: throw mismatch(I.self, node)
        }
        guard let result else { throw doesNotFit(I.self, node) }
        return result
    }

    @inline(__always)
    func double(_ node: UInt32) throws -> Double {
        let slot = slots[Int(node)]
        switch slot.tag {
        case .double: return Double(bitPattern: slot.payload)
        case .float:
            // As a JSON round trip reads it: the Float's shortest decimal text, read as a Double
            // (a Float 0.1 read as Double is 0.1, not 0.10000000149011612).
            let float = Float(bitPattern: UInt32(truncatingIfNeeded: slot.payload))
            guard float.isFinite, let double = Double(float.description) else { return Double(float) }
            return double
        case .int: return Double(Int64(bitPattern: slot.payload))
        case .uint: return Double(slot.payload)
        case .bigint:
            if let value = Double(strings[Int(truncatingIfNeeded: slot.payload)]) { return value }
            throw doesNotFit(Double.self, node)
        default: throw mismatch(Double.self, node)
        }
    }

    /// A `Float`. Another number is read as a JSON round trip reads it: its shortest decimal
    /// text parsed as a `Float`, refused when that overflows, or underflows to zero (as
    /// Foundation's `JSONDecoder` refuses it). Zero and non-finite values convert as they are.
    @inline(__always)
    func float(_ node: UInt32) throws -> Float {
        let slot = slots[Int(node)]
        if slot.tag == .float { return Float(bitPattern: UInt32(truncatingIfNeeded: slot.payload)) }
        return try floatFromOtherNumber(node)
    }

    private func floatFromOtherNumber(_ node: UInt32) throws -> Float {
        let slot = slots[Int(node)]
        let value = try double(node)
        if !value.isFinite || value == 0 { return Float(value) }
        let text: String
        switch slot.tag {
        case .int: text = String(Int64(bitPattern: slot.payload))
        case .uint: text = String(slot.payload)
        case .bigint: text = strings[Int(truncatingIfNeeded: slot.payload)]
        default: text = value.description
        }
        guard let float = Float(text), float.isFinite, float != 0 else { throw doesNotFit(Float.self, node) }
        return float
    }

    @inline(__always)
    func isNull(_ node: UInt32) -> Bool { slots[Int(node)].tag == .null }

    // MARK: Keyed lookup

    /// The child of the object `container` whose key is `name`, or 0. O(1) when keys are asked
    /// in encoding order (the cursor of this depth points at the next entry), else a scan.
    ///
    /// Keys compare as Swift strings (as Foundation's decoder looks them up), except that a key
    /// of the same code points wins over a look-alike: an object (a ``JSONValue``'s) may hold
    /// `"\u{E9}"` and `"e\u{301}"` side by side, and each is read under its own name, as the
    /// json-c decoder reads them.
    @inline(__always)
    func child(of container: UInt32, named name: String) -> UInt32 {
        let slot = slots[Int(container)]
        guard slot.depth < hintCount else { return scan(container, slot, named: name) }
        let hint = hints + slot.depth
        if hint.pointee.container == container {
            let candidate = hint.pointee.next
            if candidate != 0 && strings[Int(slots[Int(candidate)].key)] == name {
                hint.pointee.next = slots[Int(candidate)].next
                return preferExact(candidate, in: container, named: name)
            }
        }
        guard slot.tag == .object else { return 0 }
        var entry = slot.first
        while entry != 0 {
            if strings[Int(slots[Int(entry)].key)] == name {
                hint.pointee = KeyHint(container: container, next: slots[Int(entry)].next)
                return preferExact(entry, in: container, named: name)
            }
            entry = slots[Int(entry)].next
        }
        return 0
    }

    /// `entry`, whose key equals `name` as a Swift string, unless it has other code points and
    /// the object has a key of the same code points: then that key's entry.
    @inline(__always)
    private func preferExact(_ entry: UInt32, in container: UInt32, named name: String) -> UInt32 {
        if JSONKey.sameCodePoints(strings[Int(slots[Int(entry)].key)], name) { return entry }
        let exact = exactChild(of: container, named: name)
        return exact != 0 ? exact : entry
    }

    /// The child of `container` whose key has the same code points as `name`, or 0: how a
    /// ``JSONValue``'s member keys are looked up (an object may hold look-alikes side by side).
    func exactChild(of container: UInt32, named name: String) -> UInt32 {
        let slot = slots[Int(container)]
        guard slot.tag == .object else { return 0 }
        var entry = slot.first
        while entry != 0 {
            if JSONKey.sameCodePoints(strings[Int(slots[Int(entry)].key)], name) { return entry }
            entry = slots[Int(entry)].next
        }
        return 0
    }

    /// The child of `container` named `name` by a plain scan, or 0.
    private func scan(_ container: UInt32, _ slot: TapeSlot, named name: String) -> UInt32 {
        guard slot.tag == .object else { return 0 }
        var entry = slot.first
        while entry != 0 {
            if strings[Int(slots[Int(entry)].key)] == name { return preferExact(entry, in: container, named: name) }
            entry = slots[Int(entry)].next
        }
        return 0
    }

    // MARK: Errors (slow paths)

    func codingPath(_ node: UInt32) -> [any CodingKey] { buffer.pointee.codingPath(to: node) }

    @inline(never)
    func mismatch(_ type: Any.Type, _ node: UInt32) -> DecodingError {
        let found = buffer.pointee.kindName(node)
        let context = DecodingError.Context(
            codingPath: codingPath(node), debugDescription: "expected \(type), found \(found)")
        if found == "null" { return .valueNotFound(type, context) }
        return .typeMismatch(type, context)
    }

    @inline(never)
    func doesNotFit(_ type: Any.Type, _ node: UInt32) -> DecodingError {
        let slot = slots[Int(node)]
        let number: String
        switch slot.tag {
        case .int: number = String(Int64(bitPattern: slot.payload))
        case .uint: number = String(slot.payload)
        case .double: number = "\(Double(bitPattern: slot.payload))"
        case .float: number = "\(Float(bitPattern: UInt32(truncatingIfNeeded: slot.payload)))"
        default: number = strings[Int(truncatingIfNeeded: slot.payload)]
        }
        let fractional: Bool
        switch slot.tag {
        case .double: fractional = Double(bitPattern: slot.payload).rounded(.towardZero) != Double(bitPattern: slot.payload)
        case .float:
            let value = Float(bitPattern: UInt32(truncatingIfNeeded: slot.payload))
            fractional = value.rounded(.towardZero) != value
        default: fractional = false
        }
        // The same words as the json-c decoder's: a fraction is the wrong kind of number.
        let words = fractional
            ? "expected \(type), found \(number)" : "number \(number) does not fit in \(type)"
        return .dataCorrupted(DecodingError.Context(
            codingPath: codingPath(node), debugDescription: words))
    }

    @inline(never)
    func keyNotFound(_ key: some CodingKey, in container: UInt32) -> DecodingError {
        .keyNotFound(key, DecodingError.Context(
            codingPath: codingPath(container), debugDescription: "key not found"))
    }
}

/// Marks `Array`s so that the decoder reserves their exact capacity and decodes elements in
/// one loop, without a dynamic type check per element.
protocol SnapshotArrayDecodable {
    static func decodeElements(_ session: UnsafePointer<DecodeSession>, _ node: UInt32) throws -> Self
}

extension Array: SnapshotArrayDecodable where Element: Decodable {
    static func decodeElements(_ session: UnsafePointer<DecodeSession>, _ node: UInt32) throws -> [Element] {
        let s = session.pointee
        let slot = s.slots[Int(node)]
        guard slot.tag == .array else {
            throw DecodingError.typeMismatch(self, DecodingError.Context(
                codingPath: s.codingPath(node),
                debugDescription: "expected array, found \(s.buffer.pointee.kindName(node))"))
        }
        var result: [Element] = []
        result.reserveCapacity(slot.count)
        var child = slot.first
        if let kind = ScalarKind(Element.self) {
            while child != 0 {
                result.append(try s.decodeScalar(kind, Element.self, at: child))
                child = s.slots[Int(child)].next
            }
        } else if Element.self == URL.self {
            while child != 0 {
                result.append(reinterpret(try s.url(child), as: Element.self))
                child = s.slots[Int(child)].next
            }
        } else {
            let depth = slot.depth &+ 1
            while child != 0 {
                result.append(try Element(from: TapeDecoder(session: session, node: child)))
                s.cache.release(depth: depth, node: child)
                child = s.slots[Int(child)].next
            }
        }
        return result
    }
}

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
            let target = cache.targets + i
            if isNew { return newCachedContainer(Key.self, cache, i) }
            target.pointee = CachedTarget(buffer: nil, node: node, busy: true)
            // The box cached for this key type, back as its container: a KeyedDecodingContainer is one
            // strong reference to its box (checked once, `KeyedContainerCache.layoutHolds`).
            return unsafeBitCast(cache.boxes[i], to: KeyedDecodingContainer<Key>.self)
        }
        return KeyedDecodingContainer(TapeKeyedDecoder<Key>(session: session, node: node))
    }

    @inline(never)
    private func newCachedContainer<Key: CodingKey>(
        _: Key.Type, _ cache: KeyedContainerCache, _ i: Int
    ) -> KeyedDecodingContainer<Key> {
        let target = cache.targets + i
        target.initialize(to: CachedTarget(buffer: nil, node: node, busy: true))
        let container = KeyedDecodingContainer(TapeKeyedDecoder<Key>(session: session, target: target))
        // Kept as its box: a KeyedDecodingContainer is one strong reference to it (checked once,
        // `KeyedContainerCache.layoutHolds`); the cache's copy retains it.
        (cache.boxes + i).initialize(to: unsafeBitCast(container, to: AnyObject.self))
        cache.types[i] = ObjectIdentifier(Key.self)
        return container
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
