// Keys written twice into one object.
//
// Foundation's `JSONEncoder` keeps one value per key: a key encoded again replaces the value
// (the last one wins), and a nested container asked for again under the same key is the same
// container (what is written through both is merged). The tape keeps one entry per key the same
// way: before a keyed entry is appended, the encoder asks this index whether the object already
// has that key, and replaces or reuses the entry it finds. So the tape never holds a key twice in
// one object, and everything that reads it (the decoder's in-order cursor, `JSONValue`) needs no
// rule of its own.
//
// Asking must cost next to nothing in the common case, where every key is new: a state's objects
// are mostly small, written once, key by key. Each object being written has a 64-bit mask of the
// hashes of its keys' UTF-8 bytes in a small direct-mapped table; a key whose bit is clear is new
// and costs one hash of its bytes. Otherwise the object's entries are compared with the key as
// Swift compares strings (canonical equivalence, as Foundation's dictionary of keys does). A
// non-ASCII key switches its object to that exact comparison for every later key: two strings
// with different bytes can be equal (a Kelvin sign and a `K`), so a hash of bytes cannot prove
// them different. Objects past `largeObject` keys (dictionaries, mostly) keep a `Set<String>`
// of their keys instead, so writing n keys stays O(n), never O(n²).
//
// A `JSONValue`'s object is the exception: its keys are compared code point by code point
// (`exact`), since JSON keeps "é" and "e\u{301}" apart where Swift calls them equal. Its keys are
// distinct so already; asking still finds a key written twice by code that mixes its own keys in.

/// Which keys each object of the tape being encoded already holds.
final class ObjectKeys {
    struct Entry {
        /// The object's slot, or `UInt32.max` for an unused entry.
        var object: UInt32
        /// One bit per key written, chosen by the key's byte hash.
        var mask: UInt64
        /// The object has a key the mask cannot describe: compare every key exactly.
        var exact: Bool
    }

    static let tableSize = 256
    /// From this many keys on, an object's keys are kept in a set.
    static let largeObject = 32

    private let table: UnsafeMutablePointer<Entry>
    private var large: [UInt32: Set<String>] = [:]

    init() {
        table = .allocate(capacity: Self.tableSize)
        table.initialize(repeating: Entry(object: .max, mask: 0, exact: false), count: Self.tableSize)
    }

    deinit { table.deallocate() }

    /// Forgets every object: called before each encode.
    func reset() {
        table.update(repeating: Entry(object: .max, mask: 0, exact: false), count: Self.tableSize)
        if !large.isEmpty { large.removeAll(keepingCapacity: true) }
    }

    /// The entry of `object` keyed `name` (and the entry before it in the object's chain, 0 if it
    /// is the first), or nil when `object` does not have that key yet. Either way, `name` is
    /// recorded as a key of `object`: the caller appends or keeps an entry under it. `exact`
    /// compares keys code point by code point (a ``JSONValue``'s members) instead of as Swift
    /// strings.
    @inline(__always)
    func existing(
        _ name: String, in object: UInt32, _ tape: UnsafeMutablePointer<TapeBuffer>, exact: Bool = false
    ) -> (previous: UInt32, entry: UInt32)? {
        let count = tape.pointee.slots[Int(object)].count
        if count >= Self.largeObject { return existingInLarge(name, object, tape, exact: exact) }
        let e = table + Int(object & UInt32(Self.tableSize - 1))
        let hash = Self.hash(name)
        if count == 0 {
            e.pointee = Entry(object: object, mask: hash.map(Self.bit) ?? 0, exact: hash == nil)
            return nil
        }
        if e.pointee.object != object { rebuild(e, object, tape) }
        if let hash {
            let bit = Self.bit(hash)
            if !e.pointee.exact && e.pointee.mask & bit == 0 {
                e.pointee.mask |= bit
                return nil
            }
            e.pointee.mask |= bit
        } else {
            e.pointee.exact = true
        }
        return tape.pointee.entry(of: object, named: name, exact: exact)
    }

    /// For an object of `largeObject` keys or more: its set of keys, made on first use.
    @inline(never)
    private func existingInLarge(
        _ name: String, _ object: UInt32, _ tape: UnsafeMutablePointer<TapeBuffer>, exact: Bool
    ) -> (previous: UInt32, entry: UInt32)? {
        if large[object] == nil {
            var keys = Set<String>(minimumCapacity: Self.largeObject * 2)
            tape.pointee.forEachKey(of: object) { keys.insert($0) }
            large[object] = keys
        }
        // A key the set holds may be another key's look-alike: `entry` compares as asked.
        if large[object, default: []].insert(name).inserted { return nil }
        return tape.pointee.entry(of: object, named: name, exact: exact)
    }

    /// Remakes the table entry of an object whose entry another object took meanwhile.
    @inline(never)
    private func rebuild(_ e: UnsafeMutablePointer<Entry>, _ object: UInt32, _ tape: UnsafeMutablePointer<TapeBuffer>) {
        var entry = Entry(object: object, mask: 0, exact: false)
        tape.pointee.forEachKey(of: object) { key in
            if let hash = Self.hash(key) { entry.mask |= Self.bit(hash) } else { entry.exact = true }
        }
        e.pointee = entry
    }

    /// A hash of an ASCII key's bytes; nil for a key with other characters.
    @inline(__always)
    static func hash(_ key: String) -> UInt64? {
        let result: UInt64?? = key.utf8.withContiguousStorageIfAvailable { bytes in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            var any: UInt8 = 0
            for byte in bytes {
                hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
                any |= byte
            }
            return any & 0x80 == 0 ? hash : nil
        }
        return result ?? nil
    }

    @inline(__always)
    static func bit(_ hash: UInt64) -> UInt64 { 1 &<< ((hash &* 0x9E37_79B9_7F4A_7C15) &>> 58) }
}

extension TapeBuffer {
    /// The entry of `object` whose key equals `name` (Swift string equality, or with `exact`
    /// the same code points), with the entry before it (0 for the first), or nil. O(number of
    /// entries).
    func entry(
        of object: UInt32, named name: String, exact: Bool = false
    ) -> (previous: UInt32, entry: UInt32)? {
        var previous: UInt32 = 0
        var entry = slots[Int(object)].first
        while entry != 0 {
            let key = strings[Int(slots[Int(entry)].key)]
            if exact ? JSONKey.sameCodePoints(key, name) : key == name { return (previous, entry) }
            previous = entry
            entry = slots[Int(entry)].next
        }
        return nil
    }

    func forEachKey(of object: UInt32, _ body: (String) -> Void) {
        var entry = slots[Int(object)].first
        while entry != 0 {
            body(strings[Int(slots[Int(entry)].key)])
            entry = slots[Int(entry)].next
        }
    }

    /// Takes `entry` out of `object`'s chain; `previous` is the entry before it, 0 if none. The
    /// slot stays on the tape, unreachable.
    mutating func unlink(_ entry: UInt32, previous: UInt32, from object: UInt32) {
        let p = slots + Int(object)
        let next = slots[Int(entry)].next
        if previous == 0 { p.pointee.first = next } else { slots[Int(previous)].next = next }
        let count = p.pointee.payload & 0xFFFF_FFFF
        let last = UInt32(truncatingIfNeeded: p.pointee.payload >> 32) == entry ? previous
            : UInt32(truncatingIfNeeded: p.pointee.payload >> 32)
        p.pointee.payload = (count &- 1) | UInt64(last) << 32
        if count == 1 { p.pointee.first = 0 }
    }
}
