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

    /// The ``JSONValue`` of the slot `node`, read straight off the tape
    /// (``TapeBuffer/jsonValue(at:)``): its numbers keep their kinds, and no trial decodes (each
    /// one that failed built an error with a coding path, found by walking the tape: quadratic
    /// in the size of a large state).
    func jsonValue(at node: UInt32) -> JSONValue {
        buffer.pointee.jsonValue(at: node)
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
        return strings[slot.stringIndex]
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
        case .int: result = I(exactly: slot.int64)
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
        case .double: result = I(exactly: slot.double)
        case .float: result = I(exactly: slot.float)
        case .bigint: result = I(strings[slot.stringIndex])
        default: throw mismatch(I.self, node)
        }
        guard let result else { throw doesNotFit(I.self, node) }
        return result
    }

    @inline(__always)
    func double(_ node: UInt32) throws -> Double {
        let slot = slots[Int(node)]
        switch slot.tag {
        case .double: return slot.double
        case .float: return slot.floatAsDouble
        case .int: return Double(slot.int64)
        case .uint: return Double(slot.payload)
        case .bigint:
            if let value = Double(strings[slot.stringIndex]) { return value }
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
        if slot.tag == .float { return slot.float }
        return try floatFromOtherNumber(node)
    }

    private func floatFromOtherNumber(_ node: UInt32) throws -> Float {
        let slot = slots[Int(node)]
        let value = try double(node)
        if !value.isFinite || value == 0 { return Float(value) }
        let text: String
        switch slot.tag {
        case .int: text = String(slot.int64)
        case .uint: text = String(slot.payload)
        case .bigint: text = strings[slot.stringIndex]
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
        case .int: number = String(slot.int64)
        case .uint: number = String(slot.payload)
        case .double: number = "\(slot.double)"
        case .float: number = "\(slot.float)"
        default: number = strings[slot.stringIndex]
        }
        let fractional: Bool
        switch slot.tag {
        case .double: fractional = slot.double.rounded(.towardZero) != slot.double
        case .float: fractional = slot.float.rounded(.towardZero) != slot.float
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

extension TapeBuffer {
    /// The ``JSONValue`` of the slot `node`, each number of the kind it was encoded as: an
    /// integer stays an integer (`int`, or `uint` past `Int64.max`), a `Double` or `Float` a
    /// `double` even when whole (`1.0` stays `1.0`, `-0.0` keeps its sign; a `Float` through its
    /// shortest decimal text, as a JSON round trip reads it), as json-c keeps a double.
    /// (`JSONValue.init(from:)`, which other decoders reach, cannot tell: it reads a whole number
    /// as an integer.) An object's duplicate keys keep the last value.
    func jsonValue(at node: UInt32) -> JSONValue {
        let slot = slots[Int(node)]
        switch slot.tag {
        case .null: return .null
        case .bool: return .bool(slot.payload != 0)
        case .int: return .int(slot.int64)
        case .uint: return slot.payload <= UInt64(Int64.max) ? .int(Int64(slot.payload)) : .uint(slot.payload)
        case .double: return .double(slot.double)
        case .float: return .double(slot.floatAsDouble)
        case .bigint:
            let text = strings[slot.stringIndex]
            if let whole = Int64(text) { return .int(whole) }
            if let whole = UInt64(text) { return .uint(whole) }
            return .double(Double(text) ?? .nan)
        case .string: return .string(strings[slot.stringIndex])
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
}
