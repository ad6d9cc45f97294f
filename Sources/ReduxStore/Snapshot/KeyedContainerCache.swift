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
