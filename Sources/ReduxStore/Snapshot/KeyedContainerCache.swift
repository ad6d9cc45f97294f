// Reuse of keyed containers between values.
//
// `KeyedEncodingContainer(_:)` and `KeyedDecodingContainer(_:)` allocate a box object and look up
// the generic metadata of the box and of our container type on every call: for a state that is
// an array of small structs that is most of the cost of a snapshot. So `container(keyedBy:)`
// hands out cached containers: one per (nesting depth, key type, way), pointing at the value
// being coded through a `CachedTarget` that is retargeted on each use.
//
// A cached container is "busy" from `container(keyedBy:)` until the value it was handed to
// finished `encode(to:)` / `init(from:)`; a busy entry is only reused for the same value. So two
// containers that are alive at the same time (a value's container and its children's, which sit
// one level deeper; or containers of encoders from `superEncoder()` used in turns) never share
// an entry, and when all ways are busy a fresh, uncached container is made. As with every
// Codable coder, containers must not be used after the `encode(to:)`/`init(from:)` that got
// them returned.
//
// The boxes are kept type-erased, as `AnyObject`, and cast back with `unsafeBitCast`: that rests
// on the standard library's layout of `KeyedEncodingContainer<Key>` and
// `KeyedDecodingContainer<Key>` (one stored property, a strong reference to a native Swift class
// instance, the box), which is not part of its API. `KeyedContainerCache.layoutHolds` checks it
// once per process, at the first cache made, and traps with the assumption named if a standard
// library breaks it (rather than corrupting memory at the first cast).

/// Where a cached container currently points.
struct CachedTarget {
    var buffer: UnsafeMutablePointer<TapeBuffer>?
    var node: UInt32
    var busy: Bool
}

/// A fixed table of cached keyed containers: `ways` entries per nesting depth.
struct KeyedContainerCache {
    let ways: Int
    let capacity: Int
    /// The key type of each entry, nil for an unused entry.
    let types: UnsafeMutablePointer<ObjectIdentifier?>
    /// The stdlib box of each used entry (its `KeyedEncodingContainer`/`KeyedDecodingContainer`).
    let boxes: UnsafeMutablePointer<AnyObject>
    let targets: UnsafeMutablePointer<CachedTarget>

    /// A cache for depths `0..<depths` (by default 0...maximumNestingDepth + 1). Only `types`
    /// is initialized (to nil).
    init(ways: Int, depths: Int = StoreLimits.maximumNestingDepth + 2,
         memory: UnsafeMutableRawPointer? = nil) {
        precondition(Self.layoutHolds)
        self.ways = ways
        capacity = depths * ways
        let raw = memory ?? UnsafeMutableRawPointer.allocate(
            byteCount: Self.byteCount(ways: ways, depths: depths), alignment: 16)
        types = raw.bindMemory(to: ObjectIdentifier?.self, capacity: capacity)
        boxes = (raw + capacity * 8).bindMemory(to: AnyObject.self, capacity: capacity)
        targets = (raw + capacity * 16).bindMemory(to: CachedTarget.self, capacity: capacity)
        types.initialize(repeating: nil, count: capacity)
    }

    static func byteCount(ways: Int, depths: Int = StoreLimits.maximumNestingDepth + 2) -> Int {
        depths * ways * (16 + MemoryLayout<CachedTarget>.stride)
    }

    /// Releases the cached boxes (keeps the memory).
    func releaseBoxes() {
        for i in 0..<capacity where types[i] != nil {
            (boxes + i).deinitialize(count: 1)
            types[i] = nil
        }
    }

    /// Frees memory allocated by `init(ways:)` without `memory`.
    func deallocate() {
        releaseBoxes()
        UnsafeMutableRawPointer(types).deallocate()
    }

    /// Marks every entry free (between two top-level encodes).
    func freeAll() {
        for i in 0..<capacity where types[i] != nil { targets[i].busy = false }
    }

    /// Whether the standard library's keyed containers are what the casts to and from the
    /// cached boxes assume: as large and as aligned as one object reference, that reference
    /// a native, strongly held class instance (the container's box, freed when the container and
    /// its casts are gone), and a container cast to `AnyObject` and back the same container. Checked once per
    /// process (a lazy global), at the first cache made; a failure traps, naming the assumption.
    static let layoutHolds: Bool = {
        checkLayout(KeyedEncodingContainer<LayoutProbeKey>.self, "KeyedEncodingContainer",
                    make: { KeyedEncodingContainer(LayoutProbeEncoder()) }, codingPath: { $0.codingPath })
        checkLayout(KeyedDecodingContainer<LayoutProbeKey>.self, "KeyedDecodingContainer",
                    make: { KeyedDecodingContainer(LayoutProbeDecoder()) }, codingPath: { $0.codingPath })
        return true
    }()

    private static func checkLayout<Container>(
        _: Container.Type, _ name: StaticString, make: () -> Container,
        codingPath: (Container) -> [any CodingKey]
    ) {
        precondition(MemoryLayout<Container>.size == MemoryLayout<AnyObject>.size
                     && MemoryLayout<Container>.alignment == MemoryLayout<AnyObject>.alignment,
                     "ReduxStore: \(name) is no longer one object reference in size; the snapshot "
                     + "coder's cached containers (KeyedContainerCache) assume it is")
        weak var released: AnyObject?
        do {
            let box = erase(make)
            released = box
            let back = unsafeBitCast(box, to: Container.self)
            precondition(codingPath(back).map(\.stringValue) == [LayoutProbeKey.marker.stringValue],
                         "ReduxStore: \(name) cast to AnyObject and back is no longer the same "
                         + "container; the snapshot coder's cached containers (KeyedContainerCache) "
                         + "assume it is")
        }
        precondition(released == nil,
                     "ReduxStore: \(name) no longer holds its box as one strong reference to a "
                     + "native object that goes with it; the snapshot coder's cached containers "
                     + "(KeyedContainerCache) assume it does")
    }

    /// A container made by `make`, cast as the cache casts it; the container itself is gone
    /// when this returns, so the box's only reference is the one returned.
    @inline(never)
    private static func erase<Container>(_ make: () -> Container) -> AnyObject {
        unsafeBitCast(make(), to: AnyObject.self)
    }

    /// The entry for `type` at `depth` that is free or already serves `node`, or an unused one
    /// (`isNew`), or nil when all ways are busy. O(ways).
    @inline(__always)
    func entry(depth: Int, type: ObjectIdentifier, node: UInt32) -> (index: Int, isNew: Bool)? {
        let base = depth &* ways
        // A depth past the ones sized for is served uncached: never an access out of bounds.
        guard depth >= 0, base &+ ways <= capacity else { return nil }
        for i in base..<(base &+ ways) {
            guard let t = types[i] else { return (i, true) }
            if t == type && (!targets[i].busy || targets[i].node == node) { return (i, false) }
        }
        return nil
    }

    /// The container of entry `i` (from ``entry(depth:type:node:)``) pointed at `target`: the one
    /// cached there, or for a new entry (`isNew`) the one `make` makes on the entry's target,
    /// kept for key type `type`. The casts to and from the cached box rest on the layout that
    /// ``layoutHolds`` checked.
    @inline(__always)
    func container<Container>(
        _ i: Int, isNew: Bool, pointedAt target: CachedTarget, type: ObjectIdentifier,
        make: (UnsafeMutablePointer<CachedTarget>) -> Container
    ) -> Container {
        if isNew { return keep(i, pointedAt: target, type: type, make: make) }
        targets[i] = target
        return unsafeBitCast(boxes[i], to: Container.self)
    }

    /// ``container(_:isNew:pointedAt:type:make:)`` for a new entry.
    @inline(never)
    private func keep<Container>(
        _ i: Int, pointedAt target: CachedTarget, type: ObjectIdentifier,
        make: (UnsafeMutablePointer<CachedTarget>) -> Container
    ) -> Container {
        (targets + i).initialize(to: target)
        let container = make(targets + i)
        // The cache's copy of the box retains it.
        (boxes + i).initialize(to: unsafeBitCast(container, to: AnyObject.self))
        types[i] = type
        return container
    }

    /// Frees the entries at `depth` that serve `node`. O(ways).
    @inline(__always)
    func release(depth: Int, node: UInt32) {
        let base = depth &* ways
        guard depth >= 0, base &+ ways <= capacity else { return }
        for i in base..<(base &+ ways) {
            if types[i] == nil { return }
            if targets[i].node == node { targets[i].busy = false }
        }
    }
}

// MARK: Invariants (REDUXSTORE_INTERNAL_CHECKS: debug builds, the tests)

extension KeyedContainerCache {
    /// Checks what must hold of the table at rest (when reused for another encode or decode,
    /// and when an encode or decode ends): in each depth's row the used entries come first
    /// (``entry(depth:type:node:)`` hands out the first unused one and ``release(depth:node:)``
    /// stops at it), no two used entries of a row serve one key type busy for one node, and a
    /// busy entry points at a slot of `slots` (the tape being coded, `slotCount` of them) at its
    /// row's depth. O(size of the table); compiles to nothing without
    /// REDUXSTORE_INTERNAL_CHECKS.
    func _checkInvariants(slots: UnsafePointer<TapeSlot>?, slotCount: Int) {
        #if REDUXSTORE_INTERNAL_CHECKS
        precondition(ways > 0 && capacity % ways == 0,
                     "ReduxStore: container cache of \(capacity) entries is not rows of \(ways)")
        for row in 0..<(capacity / ways) {
            let base = row * ways
            var used = 0
            while used < ways && types[base + used] != nil { used += 1 }
            for i in (base + used)..<(base + ways) {
                precondition(types[i] == nil,
                             "ReduxStore: container cache entry \(i) is used after an unused one")
            }
            for i in base..<(base + used) where targets[i].busy {
                let node = Int(targets[i].node)
                precondition(node < slotCount,
                             "ReduxStore: container cache entry \(i) is busy for slot \(node) of \(slotCount)")
                if let slots {
                    precondition(slots[node].depth == row,
                                 "ReduxStore: container cache entry \(i) of depth \(row) serves a slot "
                                 + "of depth \(slots[node].depth)")
                }
                for j in (i + 1)..<(base + used) {
                    precondition(!(targets[j].busy && types[j] == types[i] && targets[j].node == targets[i].node),
                                 "ReduxStore: container cache entries \(i) and \(j) serve one container")
                }
            }
        }
        #endif
    }
}

/// The key of the layout probes: the one coding path they report.
fileprivate enum LayoutProbeKey: String, CodingKey { case marker }

/// A keyed encoding container that only answers `codingPath`: what ``KeyedContainerCache/layoutHolds``
/// casts and casts back.
private struct LayoutProbeEncoder: KeyedEncodingContainerProtocol {
    var codingPath: [any CodingKey] { [LayoutProbeKey.marker] }
    mutating func encodeNil(forKey key: LayoutProbeKey) throws {}
    mutating func encode<T: Encodable>(_ value: T, forKey key: LayoutProbeKey) throws {}
    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: LayoutProbeKey
    ) -> KeyedEncodingContainer<NestedKey> {
        preconditionFailure("ReduxStore: the layout probe is never encoded into")
    }
    mutating func nestedUnkeyedContainer(forKey key: LayoutProbeKey) -> any UnkeyedEncodingContainer {
        preconditionFailure("ReduxStore: the layout probe is never encoded into")
    }
    mutating func superEncoder() -> any Encoder {
        preconditionFailure("ReduxStore: the layout probe is never encoded into")
    }
    mutating func superEncoder(forKey key: LayoutProbeKey) -> any Encoder {
        preconditionFailure("ReduxStore: the layout probe is never encoded into")
    }
}

/// A keyed decoding container that only answers `codingPath`: what ``KeyedContainerCache/layoutHolds``
/// casts and casts back.
private struct LayoutProbeDecoder: KeyedDecodingContainerProtocol {
    var codingPath: [any CodingKey] { [LayoutProbeKey.marker] }
    var allKeys: [LayoutProbeKey] { [] }
    func contains(_ key: LayoutProbeKey) -> Bool { false }
    func decodeNil(forKey key: LayoutProbeKey) throws -> Bool { true }
    func decode<T: Decodable>(_ type: T.Type, forKey key: LayoutProbeKey) throws -> T {
        preconditionFailure("ReduxStore: the layout probe is never decoded from")
    }
    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: LayoutProbeKey
    ) throws -> KeyedDecodingContainer<NestedKey> {
        preconditionFailure("ReduxStore: the layout probe is never decoded from")
    }
    func nestedUnkeyedContainer(forKey key: LayoutProbeKey) throws -> any UnkeyedDecodingContainer {
        preconditionFailure("ReduxStore: the layout probe is never decoded from")
    }
    func superDecoder() throws -> any Decoder {
        preconditionFailure("ReduxStore: the layout probe is never decoded from")
    }
    func superDecoder(forKey key: LayoutProbeKey) throws -> any Decoder {
        preconditionFailure("ReduxStore: the layout probe is never decoded from")
    }
}
