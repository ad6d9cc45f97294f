internal import CJSONC
#if canImport(Glibc)
import Glibc
#endif

/// A JSON value written flat into one buffer this object owns: what a pointer observer keeps of
/// the value it compares the next state with. Writing one is a walk of the json-c tree that
/// allocates nothing once the buffer is large enough, where a deep copy allocates every node and
/// its release frees every node (Benchmarks/README.md, "What composition costs", has the
/// figures). The walk is bound by reading json-c's nodes, which lie apart in memory.
///
/// Layout, in pre-order, each value a tag byte and then:
/// - null, false, true: nothing;
/// - an integer: 8 bytes, as an `Int64` (`int`) or, past `Int64.max`, a `UInt64` (`uint`);
/// - a double: its 8 bytes (-0 written as 0, so the two compare equal, as json-c's do);
/// - a string: its length in 8 bytes, then its bytes (NUL included);
/// - an array: its element count and the byte length of its elements, 8 bytes each, then the
///   elements;
/// - an object: its member count and the byte length of its members, then each member: the key's
///   length in 8 bytes, its bytes, its value.
///
/// Members are written in json-c's order (the order of insertion); ``sameValue(as:)`` compares
/// objects by key, as `json_object_equal` does. Two equal values are the same number of bytes.
final class FlatJSON {
    /// The bytes: `count` of them written, room for `capacity`.
    private var buffer = Buffer()

    deinit { free(buffer.base) }

    private enum Tag: UInt8 {
        case null, no, yes, int, uint, double, string, array, object
    }

    /// Writes `node` (borrowed; `nil`: JSON null) in place of what this held. `false` when
    /// memory ran out: then this holds nothing to compare with.
    func write(_ node: OpaquePointer?) -> Bool {
        // Written through a local copy, not the stored property: no exclusivity check per access.
        var buffer = self.buffer
        buffer.count = 0
        let written = buffer.append(node)
        self.buffer = buffer
        return written
    }

    /// Whether this holds the same JSON value as `other`, comparing as `json_object_equal` does:
    /// numbers by kind (an integer is never a double) and value, objects by key whatever their
    /// order. Bytes first: equal bytes are equal values; only unequal bytes of the same length
    /// may still be one value with members in another order, which a walk from the first
    /// unequal byte finds out.
    func sameValue(as other: FlatJSON) -> Bool {
        let (count, base, otherBase) = (buffer.count, buffer.base, other.buffer.base)
        guard count == other.buffer.count else { return false }
        guard count > 0, let base, let otherBase else { return true }
        let (a, b) = (UnsafeRawPointer(base), UnsafeRawPointer(otherBase))
        // The first unequal byte, by halves (memcmp does the reading).
        var (equalUpTo, end) = (0, count)
        while end - equalUpTo > 1 {
            let middle = equalUpTo + (end - equalUpTo) / 2
            if memcmp(a + equalUpTo, b + equalUpTo, middle - equalUpTo) == 0 {
                equalUpTo = middle
            } else {
                end = middle
            }
        }
        if equalUpTo == count - 1 && memcmp(a + equalUpTo, b + equalUpTo, 1) == 0 { return true }
        return Comparison(a: a, b: b, firstDifference: a + equalUpTo).same(a, b)
    }

    /// Memory this object owns (freed by its `deinit`) and how much of it is written.
    private struct Buffer {
        var base: UnsafeMutableRawPointer?
        var count = 0
        var capacity = 0

        mutating func append(_ node: OpaquePointer?) -> Bool {
            guard let node else { return appendTag(.null) }
            // An `if` chain on the raw value: a `switch` on json-c's enum compares through the
            // generic `~=`, which unoptimized builds call as such (half the time of a walk).
            let type = json_object_get_type(node).rawValue
            if type == json_type_object.rawValue {
                let members = json_object_object_length(node)
                guard appendTag(.object), appendWord(UInt64(members)), appendWord(0) else {
                    return false
                }
                let start = count
                // json-c's own walk of an object (its json_object_object_foreach): a third of
                // the time of the iterator functions, which are a call each per member.
                var entry = lh_table_head(json_object_get_object(node))
                while let member = entry {
                    guard let name = lh_entry_k(member),
                          appendBytes(name, strlen(name)),
                          append(OpaquePointer(lh_entry_v(member)))
                    else { return false }
                    entry = lh_entry_next(member)
                }
                var span = UInt64(count - start)
                memcpy(base! + start - 8, &span, 8)
                return true
            }
            if type == json_type_array.rawValue {
                let elements = json_object_array_length(node)
                guard appendTag(.array), appendWord(UInt64(elements)), appendWord(0) else {
                    return false
                }
                let start = count
                for index in 0..<elements {
                    guard append(json_object_array_get_idx(node, index)) else { return false }
                }
                var span = UInt64(count - start)
                memcpy(base! + start - 8, &span, 8)
                return true
            }
            if type == json_type_string.rawValue {
                let length = Int(json_object_get_string_len(node))
                return appendTag(.string) && appendBytes(json_object_get_string(node), length)
            }
            if type == json_type_int.rawValue {
                let signed = json_object_get_int64(node)
                if signed == Int64.max {
                    // json-c clamps a UInt64 past Int64.max to Int64.max here.
                    let unsigned = json_object_get_uint64(node)
                    if unsigned > UInt64(Int64.max) {
                        return appendTag(.uint) && appendWord(unsigned)
                    }
                }
                return appendTag(.int) && appendWord(UInt64(bitPattern: signed))
            }
            if type == json_type_boolean.rawValue {
                return appendTag(json_object_get_boolean(node) != 0 ? .yes : .no)
            }
            if type == json_type_double.rawValue {
                let value = json_object_get_double(node)
                return appendTag(.double) && appendWord((value == 0 ? 0 : value).bitPattern)
            }
            return appendTag(.null)
        }

        @_transparent
        mutating func appendTag(_ tag: Tag) -> Bool {
            guard count < capacity || grow(1) else { return false }
            (base! + count).assumingMemoryBound(to: UInt8.self).pointee = tag.rawValue
            count &+= 1
            return true
        }

        @_transparent
        mutating func appendWord(_ word: UInt64) -> Bool {
            guard count &+ 8 <= capacity || grow(8) else { return false }
            var word = word
            memcpy(base! + count, &word, 8)  // a call of its own in an unoptimized build, not generic
            count &+= 8
            return true
        }

        /// The length in a word, then the bytes.
        @_transparent
        mutating func appendBytes(_ bytes: UnsafeRawPointer?, _ length: Int) -> Bool {
            guard appendWord(UInt64(length)) else { return false }
            guard length > 0, let bytes else { return true }
            guard count &+ length <= capacity || grow(length) else { return false }
            memcpy(base! + count, bytes, length)
            count &+= length
            return true
        }

        mutating func grow(_ extra: Int) -> Bool {
            let newCapacity = max(count + extra, capacity * 2, 256)
            guard let grown = realloc(base, newCapacity) else { return false }
            base = grown
            capacity = newCapacity
            return true
        }
    }

    // MARK: Comparing

    /// A walk of two flat values of the same length whose bytes are equal up to
    /// `firstDifference` (an address in `a`): what lies wholly before it is equal, and skipped.
    private struct Comparison {
        let a: UnsafeRawPointer
        let b: UnsafeRawPointer
        let firstDifference: UnsafeRawPointer

        /// Whether the values at `x` (in `a`) and `y` (in `b`) are the same JSON value.
        func same(_ x: UnsafeRawPointer, _ y: UnsafeRawPointer) -> Bool {
            let tag = x.load(as: UInt8.self)
            guard tag == y.load(as: UInt8.self) else { return false }
            if tag == Tag.array.rawValue {
                let elements = word(x, 1)
                guard elements == word(y, 1), word(x, 9) == word(y, 9) else { return false }
                var (x, y) = (x + 17, y + 17)
                for _ in 0..<elements {
                    let (xSize, ySize) = (size(x), size(y))
                    guard x + xSize <= firstDifference || same(x, y) else { return false }
                    x += xSize
                    y += ySize
                }
                return true
            }
            if tag == Tag.object.rawValue {
                let members = word(x, 1)
                guard members == word(y, 1), word(x, 9) == word(y, 9) else { return false }
                // In the same order, as usual: member by member. Otherwise each key of `x` is
                // looked up among the members of `y` (keys are unique in a json-c object).
                var (p, q) = (x + 17, y + 17)
                for _ in 0..<members {
                    let length = word(p)
                    guard length == word(q) && memcmp(p + 8, q + 8, length) == 0 else {
                        return sameMembers(x, y)
                    }
                    let (pValue, qValue) = (p + 8 + length, q + 8 + length)
                    let (pSize, qSize) = (size(pValue), size(qValue))
                    guard pValue + pSize <= firstDifference || same(pValue, qValue) else {
                        return false
                    }
                    p = pValue + pSize
                    q = qValue + qSize
                }
                return true
            }
            if tag == Tag.string.rawValue {
                let length = word(x, 1)
                return length == word(y, 1) && memcmp(x + 9, y + 9, length) == 0
            }
            if tag == Tag.double.rawValue {
                // As json-c: by value.
                return Double(bitPattern: UInt64(bitPattern: Int64(word(x, 1))))
                    == Double(bitPattern: UInt64(bitPattern: Int64(word(y, 1))))
            }
            if tag == Tag.int.rawValue || tag == Tag.uint.rawValue {
                return word(x, 1) == word(y, 1)
            }
            return true  // null, false, true: the tag is all
        }

        /// Whether the objects at `x` and `y` (as many members each) have the same members,
        /// looked up by key.
        func sameMembers(_ x: UnsafeRawPointer, _ y: UnsafeRawPointer) -> Bool {
            let members = word(x, 1)
            var p = x + 17
            for _ in 0..<members {
                let length = word(p)
                var q = y + 17
                var found = false
                for _ in 0..<members {
                    let otherLength = word(q)
                    let value = q + 8 + otherLength
                    if otherLength == length && memcmp(p + 8, q + 8, length) == 0 {
                        guard Comparison(a: a, b: b, firstDifference: a).same(p + 8 + length, value)
                        else { return false }
                        found = true
                        break
                    }
                    q = value + size(value)
                }
                guard found else { return false }
                p += 8 + length
                p += size(p)
            }
            return true
        }
    }

    private static func word(_ at: UnsafeRawPointer, _ offset: Int = 0) -> Int {
        var word = 0
        memcpy(&word, at + offset, 8)
        return word
    }

    /// The number of bytes of the value at `value`.
    private static func size(_ value: UnsafeRawPointer) -> Int {
        let tag = value.load(as: UInt8.self)
        if tag == Tag.array.rawValue || tag == Tag.object.rawValue { return 17 + word(value, 9) }
        if tag == Tag.string.rawValue { return 9 + word(value, 1) }
        if tag <= Tag.yes.rawValue { return 1 }  // null, false, true
        return 9  // int, uint, double
    }
}
