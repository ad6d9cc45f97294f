import Foundation
import ReduxStore
import ReduxStoreTestSupport
import Testing

/// Custom coding that opens nested containers inside one `encode(to:)` — the shape that crashed
/// `currentState()` when the decoder's per-depth scratch was sized by a depth the encoder did not
/// record for nested containers. Compared with Foundation's round trip.
struct NestedByHand: Codable, Equatable, Sendable {
    var a: Int
    var b: String
    var cells: [Int]
    /// Levels of keyed containers opened by hand inside one encode (1 to 5).
    var levels: Int

    enum Key: String, CodingKey { case a, b, cells, levels, inner }

    init(a: Int, b: String, cells: [Int], levels: Int) {
        self.a = a; self.b = b; self.cells = cells; self.levels = levels
    }

    func encode(to encoder: any Encoder) throws {
        var top = encoder.container(keyedBy: Key.self)
        try top.encode(levels, forKey: .levels)
        var container = top
        for _ in 0..<levels { container = container.nestedContainer(keyedBy: Key.self, forKey: .inner) }
        try container.encode(a, forKey: .a)
        try container.encode(b, forKey: .b)
        var list = container.nestedUnkeyedContainer(forKey: .cells)
        for cell in cells {
            var keyed = list.nestedContainer(keyedBy: Key.self)   // unkeyed -> keyed cells
            try keyed.encode(cell, forKey: .a)
        }
    }

    init(from decoder: any Decoder) throws {
        let top = try decoder.container(keyedBy: Key.self)
        levels = try top.decode(Int.self, forKey: .levels)
        var container = top
        for _ in 0..<levels { container = try container.nestedContainer(keyedBy: Key.self, forKey: .inner) }
        a = try container.decode(Int.self, forKey: .a)
        b = try container.decode(String.self, forKey: .b)
        var list = try container.nestedUnkeyedContainer(forKey: .cells)
        var cells: [Int] = []
        while !list.isAtEnd {
            let keyed = try list.nestedContainer(keyedBy: Key.self)
            cells.append(try keyed.decode(Int.self, forKey: .a))
        }
        self.cells = cells
    }
}

@Suite("Snapshots of custom coding with nested containers")
struct SnapshotNestingTests {
    @Test("keyed containers nested 1 to 5 levels inside one encode, and keyed cells in a list", arguments: 1...5)
    func nestedByHand(levels: Int) throws {
        let value = NestedByHand(a: 7, b: "seven", cells: [1, 2, 3], levels: levels)
        let foundation = try JSONDecoder().decode(NestedByHand.self, from: JSONEncoder().encode(value))
        let store = Store(reducers: [], state: [value, value])
        #expect(store.currentState() == [foundation, foundation])
        let folder = temporaryFolder()
        try store.save(to: folder + "/nested.json")
        let reopened = try Store<[NestedByHand]>(contentsOf: folder + "/nested.json", reducers: [])
        #expect(reopened.currentState() == [foundation, foundation])
    }
}

@Suite("Snapshots read numbers as a JSON round trip reads them")
struct SnapshotNumberTests {
    struct AsFloat: Encodable { var x: Float }
    struct AsDouble: Codable, Equatable, Sendable { var x: Double }
    /// Encodes as `AsFloat`, decodes as `AsDouble`.
    struct Widened: Codable, Sendable {
        var x: Double
        init(_ x: Float) { self.x = Double(x) ; self.float = x }
        var float: Float?
        enum CodingKeys: String, CodingKey { case x }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(float ?? Float(x), forKey: .x)
        }
        init(from decoder: any Decoder) throws {
            x = try decoder.container(keyedBy: CodingKeys.self).decode(Double.self, forKey: .x)
        }
    }

    @Test("a Float encoded and decoded as a Double is what Foundation gives", arguments: [Float(0.1), 1.1, 3.4e38, -2.5e-7, 0])
    func floatAsDouble(value: Float) throws {
        let foundation = try JSONDecoder().decode(AsDouble.self, from: JSONEncoder().encode(AsFloat(x: value)))
        let store = Store(reducers: [], state: Widened(value))
        #expect(store.currentState().x == foundation.x)
    }
}
