import Testing
@testable import ReduxStore

// The internal checks of the snapshot coder's raw structures (`TapeBuffer._checkInvariants()`,
// `KeyedContainerCache._checkInvariants(slots:slotCount:)`, `KeyedContainerCache.layoutHolds`):
// what they accept, and that a broken structure traps with words before it is read.

private struct Row: Codable, Equatable {
    var id: Int
    var tags: [String]
}

private struct Table: Codable, Equatable {
    var name = "t"
    var rows = [Row(id: 1, tags: ["a", "b"]), Row(id: 2, tags: [])]
    var deep: [[Int]] = [[1], [2, 3]]
}

/// Writes `a` twice (the second replaces the first, leaving an unlinked slot) and asks for a
/// super encoder late: the tape shapes that leave slots no chain reaches.
private struct Rewritten: Encodable {
    enum Keys: String, CodingKey { case a, b }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(1, forKey: .a)
        try container.encode("two", forKey: .b)
        try container.encode([3, 4], forKey: .a)
        try 5.encode(to: container.superEncoder(forKey: .b))
    }
}

/// A tape of `Table()`, encoded (the encode checks it) and checked again.
private func encodedTable() throws -> SnapshotTape {
    let tape = SnapshotTape()
    try SnapshotEncoder().encode(Table(), into: tape)
    return tape
}

@Suite("Internal checks of the snapshot tape and the container cache")
struct UnsafeStructureInvariantTests {
    @Test("well-formed tapes pass the tape's check, replaced keys and super encoders included")
    func wellFormedTapesPass() throws {
        let tape = try encodedTable()
        tape._checkInvariants()
        #expect(tape.jsonString()
            == #"{"name":"t","rows":[{"id":1,"tags":["a","b"]},{"id":2,"tags":[]}],"deep":[[1],[2,3]]}"#)
        #expect(try SnapshotDecoder.decode(Table.self, from: tape) == Table())

        let rewritten = SnapshotTape()
        try SnapshotEncoder().encode(Rewritten(), into: rewritten)
        rewritten._checkInvariants()
        #expect(rewritten.jsonString() == #"{"a":[3,4],"b":5}"#)
        #expect(rewritten.valueCount == 7)
    }

    @Test("the standard library's keyed containers are laid out as the cached boxes assume")
    func containerLayoutHolds() {
        #expect(KeyedContainerCache.layoutHolds)
        #expect(MemoryLayout<KeyedEncodingContainer<AnyCodingKey>>.size == MemoryLayout<AnyObject>.size)
        #expect(MemoryLayout<KeyedDecodingContainer<AnyCodingKey>>.size == MemoryLayout<AnyObject>.size)
    }

    @Test("a container link past the tape's end traps with words before a decode reads it")
    func linkOutOfBoundsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let tape = try encodedTable()
            // Slot 0's first child ("name") now names a slot past the last one.
            tape.buffer.pointee.slots[0].first = UInt32(tape.buffer.pointee.slotCount)
            _ = try? SnapshotDecoder.decode(Table.self, from: tape)
        }
        let words = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(words.contains("ReduxStore: tape link 17 of container 0 out of bounds"))
    }

    @Test("a container whose count disagrees with its chain traps with words")
    func countMismatchTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let tape = try encodedTable()
            tape.buffer.pointee.slots[0].payload += 1  // 4 children claimed, 3 linked
            _ = try? SnapshotDecoder.decode(Table.self, from: tape)
        }
        let words = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(words.contains("ReduxStore: tape container 0 links 3 of its 4"))
    }

    @Test("a chain that loops back to a sibling traps with words instead of walking forever")
    func cycleTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let tape = try encodedTable()
            // "deep" (the last of slot 0's children) links back to "rows".
            let rows = tape.buffer.pointee.slots[Int(tape.buffer.pointee.slots[0].first)].next
            let last = Int(truncatingIfNeeded: tape.buffer.pointee.slots[0].payload >> 32)
            tape.buffer.pointee.slots[last].next = rows
            _ = try? SnapshotDecoder.decode(Table.self, from: tape)
        }
        let words = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(words.contains("ReduxStore: tape slot 2 linked twice"))
    }

    @Test("a string index past the tape's strings traps with words")
    func stringIndexOutOfBoundsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let tape = try encodedTable()
            let name = Int(tape.buffer.pointee.slots[0].first)
            tape.buffer.pointee.slots[name].payload = UInt64(tape.buffer.pointee.stringCount)
            _ = try? SnapshotDecoder.decode(Table.self, from: tape)
        }
        let words = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(words.contains("ReduxStore: tape string index of slot 1 out of bounds"))
    }

    @Test("a container cache entry used after an unused one in its row traps with words")
    func cacheGapTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let cache = KeyedContainerCache(ways: 2, depths: 2)
            cache._checkInvariants(slots: nil, slotCount: 0)
            cache.types[3] = ObjectIdentifier(Int.self)
            cache.targets[3] = CachedTarget(buffer: nil, node: 0, busy: false)
            cache._checkInvariants(slots: nil, slotCount: 0)
        }
        let words = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(words.contains("ReduxStore: container cache entry 3 is used after an unused one"))
    }

    @Test("a busy container cache entry for a slot past the tape's end traps with words")
    func cacheBusyPastTheTapeTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let cache = KeyedContainerCache(ways: 2, depths: 2)
            cache.types[2] = ObjectIdentifier(Int.self)
            cache.targets[2] = CachedTarget(buffer: nil, node: 9, busy: true)
            cache._checkInvariants(slots: nil, slotCount: 4)
        }
        let words = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(words.contains("ReduxStore: container cache entry 2 is busy for slot 9 of 4"))
    }
}
