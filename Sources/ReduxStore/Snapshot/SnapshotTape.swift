import Synchronization
// The snapshot tape: one flat, JSON-shaped, in-memory encoding of a Codable value.
//
// Layout
// -------
// A tape is two manually managed buffers:
//
// * `slots`: an array of 24-byte ``TapeSlot``s, one per JSON value (scalar, array or object).
//   Slot 0 is the top-level value. A container slot names its first child (`first`) and holds
//   its child count; children are chained through `next` (0 ends the chain — slot 0 is never a
//   child). An object's children carry their key (`key`, an index into `strings`); an array's do
//   not. Children are appended after their parent in the order they were encoded, so in the
//   common case a container's subtree is one contiguous run and the chains walk memory forward;
//   the links make interleaved writes (two nested containers filled in turns, `superEncoder`
//   used late) correct without moving anything.
// * `strings`: every string value and every key, in encoding order. Decoding a string is one
//   copy out of this buffer (a retain for large strings, nothing for small ones).
//
// Scalars keep their exact bits: signed integers as `Int64`, unsigned as `UInt64`, `Double` and
// `Float` as their raw bit patterns (so NaN payloads and infinities survive), `Int128`/`UInt128`
// values that do not fit 64 bits as decimal text in `strings`.

/// What kind of value a slot holds. The low 8 bits of ``TapeSlot/info``. (A struct of constants
/// rather than an enum, so that reading a tag from a slot is a plain load, never a conversion.)
struct TapeTag: Equatable {
    let rawValue: UInt32
    @inline(__always) init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Reserved for a value whose `encode(to:)` has not asked for a container yet; reads as `{}`.
    static let pending = TapeTag(rawValue: 0)
    static let null = TapeTag(rawValue: 1)
    static let bool = TapeTag(rawValue: 2)
    /// payload: Int64 bit pattern
    static let int = TapeTag(rawValue: 3)
    /// payload: UInt64
    static let uint = TapeTag(rawValue: 4)
    /// payload: Double.bitPattern
    static let double = TapeTag(rawValue: 5)
    /// payload: Float.bitPattern
    static let float = TapeTag(rawValue: 6)
    /// payload: index into strings
    static let string = TapeTag(rawValue: 7)
    /// payload: index into strings (decimal text of an Int128/UInt128 beyond 64 bits)
    static let bigint = TapeTag(rawValue: 8)
    /// payload: count | last child << 32; first: first child
    static let array = TapeTag(rawValue: 9)
    /// payload: count | last child << 32; first: first child
    static let object = TapeTag(rawValue: 10)
}

/// One value on the tape. 24 bytes, trivially copyable.
struct TapeSlot {
    /// Scalar bits, a string index, or for containers `count | lastChild << 32`.
    var payload: UInt64
    /// The next sibling in the parent container, 0 if this is the last one.
    var next: UInt32
    /// For a child of an object: the index of its key in `strings`.
    var key: UInt32
    /// The tag (low 8 bits) and the nesting depth of this value (the top level is 1) above them.
    var info: UInt32
    /// For containers: the first child, 0 if empty.
    var first: UInt32

    @inline(__always)
    init(payload: UInt64, next: UInt32, key: UInt32, info: UInt32, first: UInt32) {
        self.payload = payload
        self.next = next
        self.key = key
        self.info = info
        self.first = first
    }

    @inline(__always)
    var tag: TapeTag { TapeTag(rawValue: info & 0xFF) }

    @inline(__always)
    var depth: Int { Int(info >> 8) }

    @inline(__always)
    var count: Int { Int(truncatingIfNeeded: payload & 0xFFFF_FFFF) }

    /// The value of an `.int` slot.
    @inline(__always)
    var int64: Int64 { Int64(bitPattern: payload) }

    /// The value of a `.double` slot.
    @inline(__always)
    var double: Double { Double(bitPattern: payload) }

    /// The value of a `.float` slot.
    @inline(__always)
    var float: Float { Float(bitPattern: UInt32(truncatingIfNeeded: payload)) }

    /// A `.float` slot's value as a JSON round trip reads it into a `Double`: through its
    /// shortest decimal text (a `Float` 0.1 gives 0.1, not 0.10000000149011612). A non-finite
    /// value converts as it is.
    var floatAsDouble: Double {
        let float = self.float
        guard float.isFinite, let double = Double(float.description) else { return Double(float) }
        return double
    }

    /// The index in `strings` of a `.string` or `.bigint` slot's text.
    @inline(__always)
    var stringIndex: Int { Int(truncatingIfNeeded: payload) }
}

/// The storage behind a ``SnapshotTape``: raw buffers that grow geometrically and are kept
/// (with their capacity) when the tape is cleared for another encode.
struct TapeBuffer {
    var slots: UnsafeMutablePointer<TapeSlot>
    var slotCount: Int
    var slotCapacity: Int
    var strings: UnsafeMutablePointer<String>
    var stringCount: Int
    var stringCapacity: Int
    /// The first container created past ``StoreLimits/maximumNestingDepth``, or -1.
    var tooDeep: Int
    /// The deepest nesting depth of a container on the tape: the decoder sizes its per-depth
    /// scratch by it rather than by the limit.
    var deepestContainer: Int
    /// The encoder's container cache, set while an encode runs.
    var cache: KeyedContainerCache?
    /// The encoder's index of the keys each object holds, set while an encode runs.
    var keys: Unmanaged<ObjectKeys>?
    /// Whether the encode running writes unordered collections in a canonical order (see
    /// ``CanonicallyOrdered``), set while an encode runs.
    var canonicalOrder: Bool

    init() {
        slotCapacity = 64
        slots = .allocate(capacity: slotCapacity)
        slotCount = 0
        stringCapacity = 32
        strings = .allocate(capacity: stringCapacity)
        stringCount = 0
        tooDeep = -1
        deepestContainer = 0
        cache = nil
        keys = nil
        canonicalOrder = false
    }

    /// Drops the contents, keeps the capacity. O(number of strings) for their releases.
    mutating func clear() {
        strings.deinitialize(count: stringCount)
        stringCount = 0
        slotCount = 0
        tooDeep = -1
        deepestContainer = 0
    }

    mutating func free() {
        strings.deinitialize(count: stringCount)
        strings.deallocate()
        slots.deallocate()
    }

    @inline(never)
    mutating func growSlots() { Self.double(&slots, count: slotCount, capacity: &slotCapacity) }

    @inline(never)
    mutating func growStrings() { Self.double(&strings, count: stringCount, capacity: &stringCapacity) }

    /// Moves the `count` elements at `elements` into a new allocation of twice `capacity`.
    private static func double<Element>(
        _ elements: inout UnsafeMutablePointer<Element>, count: Int, capacity: inout Int
    ) {
        let grown = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
        grown.moveInitialize(from: elements, count: count)
        elements.deallocate()
        elements = grown
        capacity *= 2
    }

    /// Appends a string and returns its index. Amortized O(1).
    @inline(__always)
    mutating func appendString(_ string: String) -> UInt32 {
        if stringCount == stringCapacity { growStrings() }
        (strings + stringCount).initialize(to: string)
        defer { stringCount &+= 1 }
        return UInt32(truncatingIfNeeded: stringCount)
    }

    /// Appends a child to the container at `parent` and returns its index. Amortized O(1).
    @inline(__always)
    mutating func appendChild(of parent: UInt32, key: UInt32, tag: TapeTag, payload: UInt64) -> UInt32 {
        if slotCount == slotCapacity { growSlots() }
        let index = UInt32(truncatingIfNeeded: slotCount)
        slotCount &+= 1
        let p = slots + Int(parent)
        let depth = (p.pointee.info >> 8) &+ 1
        (slots + Int(index)).initialize(to: TapeSlot(
            payload: payload, next: 0, key: key, info: tag.rawValue | depth << 8, first: 0))
        let count = p.pointee.payload & 0xFFFF_FFFF
        if count == 0 {
            p.pointee.first = index
        } else {
            slots[Int(truncatingIfNeeded: p.pointee.payload >> 32)].next = index
        }
        p.pointee.payload = (count &+ 1) | UInt64(index) << 32
        return index
    }

    /// Makes the slot at `node` a scalar, keeping its place in its parent.
    @inline(__always)
    mutating func set(_ node: UInt32, tag: TapeTag, payload: UInt64) {
        let p = slots + Int(node)
        p.pointee.info = (p.pointee.info & ~0xFF) | tag.rawValue
        p.pointee.payload = payload
        p.pointee.first = 0
    }

    /// Makes the slot at `node` a container of `tag` unless it already is one; an existing
    /// container of the same kind is kept so that asking twice appends to the same one.
    @inline(__always)
    mutating func makeContainer(_ node: UInt32, _ tag: TapeTag) {
        let p = slots + Int(node)
        if p.pointee.tag == tag { return }
        p.pointee.info = (p.pointee.info & ~0xFF) | tag.rawValue
        p.pointee.payload = 0
        p.pointee.first = 0
        if Int(p.pointee.depth) > deepestContainer { deepestContainer = Int(p.pointee.depth) }
        if p.pointee.depth > StoreLimits.maximumNestingDepth && tooDeep < 0 { tooDeep = Int(node) }
    }
}

/// An encoded snapshot: a value written by ``SnapshotEncoder`` into one flat JSON-shaped tape.
///
/// Immutable once ``SnapshotEncoder/encode(_:into:)`` returned; any number of threads may then
/// decode from it at once with ``SnapshotDecoder/decode(_:from:)``. Memory: 24 bytes per JSON
/// value plus 16 bytes per string and key (string contents are shared with the encoded value,
/// not copied).
final class SnapshotTape: @unchecked Sendable {
    let buffer: UnsafeMutablePointer<TapeBuffer>
    /// Decodes running from this tape. A store reuses a kept tape's storage only when this is 0,
    /// read with acquire ordering: it pairs with each reader's releasing decrement, so the
    /// reader's last read happens before the tape is written again.
    let readers = Atomic<Int>(0)

    /// An empty tape. Decoding from it fails until something was encoded into it.
    init() {
        buffer = .allocate(capacity: 1)
        buffer.initialize(to: TapeBuffer())
    }

    deinit {
        buffer.pointee.free()
        buffer.deinitialize(count: 1)
        buffer.deallocate()
    }

    /// The number of JSON values (slots) on the tape; 0 when empty.
    var valueCount: Int { buffer.pointee.slotCount }
}

extension TapeBuffer {
    /// The coding path from the top level to `target`, found by walking the tape from the root.
    /// O(size of the tape); only used for error messages and `codingPath` queries.
    func codingPath(to target: UInt32) -> [any CodingKey] {
        var path: [any CodingKey] = []
        if target != 0, slotCount > 0 { _ = search(0, target, &path) }
        return path
    }

    private func search(_ node: UInt32, _ target: UInt32, _ path: inout [any CodingKey]) -> Bool {
        if node == target { return true }
        let slot = slots[Int(node)]
        guard slot.tag == .array || slot.tag == .object else { return false }
        var child = slot.first
        var position = 0
        while child != 0 {
            if slot.tag == .object {
                path.append(AnyCodingKey(stringValue: strings[Int(slots[Int(child)].key)]))
            } else {
                path.append(IndexKey(position))
            }
            if search(child, target, &path) { return true }
            path.removeLast()
            child = slots[Int(child)].next
            position += 1
        }
        return false
    }

    /// Describes the kind of value at `node` for error messages: "number", "string", ...
    func kindName(_ node: UInt32) -> String {
        switch slots[Int(node)].tag {
        case .pending, .object: return "object"
        case .array: return "array"
        case .null: return "null"
        case .bool: return "bool"
        case .int, .uint, .double, .float, .bigint: return "number"
        default: return "string"
        }
    }
}

// MARK: Invariants (REDUXSTORE_INTERNAL_CHECKS: debug builds, the tests)

extension TapeBuffer {
    /// Checks what must hold of a tape at rest (after an encode returned, before a decode reads
    /// it): counts within capacities; from slot 0, every link of a container's chain names a
    /// slot after its parent (so no cycle), one level deeper, reached from one parent only, and
    /// the chain's length and last link are the ones the container records; string and key
    /// indices within `strings`; the deepest container recorded. Slots that no chain reaches
    /// (an entry replaced under its key, a container re-asked as another kind) are allowed.
    /// O(size of the tape); compiles to nothing without REDUXSTORE_INTERNAL_CHECKS.
    func _checkInvariants() {
        #if REDUXSTORE_INTERNAL_CHECKS
        precondition(slotCount >= 0 && slotCount <= slotCapacity && slotCapacity <= Int(UInt32.max),
                     "ReduxStore: tape slot count \(slotCount) outside its capacity \(slotCapacity)")
        precondition(stringCount >= 0 && stringCount <= stringCapacity,
                     "ReduxStore: tape string count \(stringCount) outside its capacity \(stringCapacity)")
        precondition(tooDeep == -1 || (tooDeep > 0 && tooDeep < slotCount
                                        && slots[tooDeep].depth > StoreLimits.maximumNestingDepth),
                     "ReduxStore: the tape's too-deep mark \(tooDeep) names no too-deep container")
        guard slotCount > 0 else { return }
        precondition(slots[0].depth == 1, "ReduxStore: the tape's top-level slot is not at depth 1")
        var reached = [Bool](repeating: false, count: slotCount)
        reached[0] = true
        var containers: [Int] = [0]
        while let index = containers.popLast() {
            let slot = slots[index]
            switch slot.tag {
            case .array, .object:
                precondition(slot.depth <= deepestContainer,
                             "ReduxStore: tape container \(index) deeper than the deepest recorded")
                var child = slot.first
                var last: UInt32 = 0
                var walked = 0
                while child != 0 {
                    let c = Int(child)
                    precondition(c > index && c < slotCount,
                                 "ReduxStore: tape link \(c) of container \(index) out of bounds")
                    precondition(!reached[c], "ReduxStore: tape slot \(c) linked twice")
                    precondition(walked < slot.count,
                                 "ReduxStore: tape container \(index) links more than its count \(slot.count)")
                    reached[c] = true
                    precondition(slots[c].depth == slot.depth + 1,
                                 "ReduxStore: tape slot \(c) is not one level below its container")
                    if slot.tag == .object {
                        precondition(Int(slots[c].key) < stringCount,
                                     "ReduxStore: tape key index of slot \(c) out of bounds")
                    }
                    containers.append(c)
                    walked += 1
                    last = child
                    child = slots[c].next
                }
                precondition(walked == slot.count,
                             "ReduxStore: tape container \(index) links \(walked) of its \(slot.count)")
                precondition(walked == 0 || UInt32(truncatingIfNeeded: slot.payload >> 32) == last,
                             "ReduxStore: tape container \(index) records a last child it does not end with")
            case .pending:
                precondition(slot.payload == 0 && slot.first == 0,
                             "ReduxStore: tape slot \(index) awaits a container yet holds children")
            case .string, .bigint:
                precondition(slot.payload < UInt64(stringCount) && slot.first == 0,
                             "ReduxStore: tape string index of slot \(index) out of bounds")
            case .null, .bool, .int, .uint, .double, .float:
                precondition(slot.first == 0, "ReduxStore: tape scalar slot \(index) has children")
            default:
                preconditionFailure("ReduxStore: tape slot \(index) has no known tag (\(slot.tag.rawValue))")
            }
        }
        #endif
    }
}

extension SnapshotTape {
    /// ``TapeBuffer/_checkInvariants()`` of this tape's storage.
    func _checkInvariants() { buffer.pointee._checkInvariants() }
}
