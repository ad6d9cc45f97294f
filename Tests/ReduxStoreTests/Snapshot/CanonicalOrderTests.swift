import Foundation
import Testing
@testable import ReduxStore

/// `JSONValue(canonicallyEncoding:)`: equal values give the same text whatever order their
/// unordered collections iterate in (which depends on the process's hash seed, and within one
/// process on a collection's capacity and history).
@Suite("Canonical order of unordered collections")
struct CanonicalOrderTests {
    private struct Point: Codable, Hashable { var x: Int; var y: Int }

    private struct State: Codable, Equatable {
        var tags: Set<String> = []
        var byPoint: [Point: String] = [:]
        var byID: [UUID: Int] = [:]
        var byName: [String: Set<Int>] = [:]
        var list: [Set<Int>] = []
        var nested: [Int: [Point: Set<String>]] = [:]
    }

    /// The same contents, built in a different order into collections of a different capacity:
    /// their iteration orders differ.
    private static func states() -> (State, State) {
        let ids = (0..<50).map { _ in UUID() }
        var a = State()
        var b = State()
        b.tags.reserveCapacity(4096)
        b.byPoint.reserveCapacity(4096)
        b.byID.reserveCapacity(4096)
        for i in 0..<200 {
            a.tags.insert("tag \(i)")
            b.tags.insert("tag \(199 - i)")
        }
        for i in 0..<50 {
            a.byPoint[Point(x: i, y: -i)] = "p\(i)"
            b.byPoint[Point(x: 49 - i, y: i - 49)] = "p\(49 - i)"
            a.byID[ids[i]] = i
            b.byID[ids[49 - i]] = 49 - i
        }
        a.byName["n"] = Set(0..<100)
        var big = Set<Int>(minimumCapacity: 10_000)
        for i in (0..<100).reversed() { big.insert(i) }
        b.byName["n"] = big
        a.list = [Set(0..<64), []]
        var listed = Set<Int>(minimumCapacity: 5_000)
        for i in (0..<64).reversed() { listed.insert(i) }
        b.list = [listed, []]
        a.nested[1] = [Point(x: 1, y: 2): Set(["x", "y", "z", "w"])]
        var letters = Set<String>(minimumCapacity: 1000)
        for letter in ["w", "z", "y", "x"] { letters.insert(letter) }
        b.nested[1] = [Point(x: 1, y: 2): letters]
        return (a, b)
    }

    @Test("equal states with differently ordered sets and dictionaries give one text")
    func sameText() throws {
        let (a, b) = Self.states()
        #expect(a == b)
        // The plain encoding follows iteration order: the two differ there (else this test
        // would prove nothing).
        #expect(try JSONValue(encoding: a).description != JSONValue(encoding: b).description)
        let textA = try JSONValue(canonicallyEncoding: a).description
        let textB = try JSONValue(canonicallyEncoding: b).description
        #expect(textA == textB)
    }

    @Test("the canonical text keeps the shapes Swift's own encoding has, and decodes back to the value")
    func shapes() throws {
        let (a, _) = Self.states()
        let canonical = try JSONValue(canonicallyEncoding: a)
        let plain = try JSONValue(encoding: a)
        #expect(try canonical.decode(as: State.self) == a)
        // The same JSON up to the order of arrays made from sets and non-string-keyed dictionaries.
        guard case .object(let members) = canonical, case .object(let plainMembers) = plain else {
            Issue.record("not objects")
            return
        }
        #expect(Set(members.keys) == Set(plainMembers.keys))
        // A set: its elements sorted by their JSON text.
        guard case .array(let tags)? = members["tags"] else {
            Issue.record("tags is not an array")
            return
        }
        let texts = tags.map(\.description)
        #expect(texts == texts.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        #expect(texts.count == 200)
        // A dictionary of struct keys: keys and values alternating, pairs sorted by the key's text.
        guard case .array(let pairs)? = members["byPoint"] else {
            Issue.record("byPoint is not an array")
            return
        }
        #expect(pairs.count == 100)
        let keys = stride(from: 0, to: pairs.count, by: 2).map { pairs[$0].description }
        #expect(keys == keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        // String keys stay an object.
        guard case .object? = members["byName"] else {
            Issue.record("byName is not an object")
            return
        }
    }

    @Test("the canonical text keeps each number's kind: a whole Double is written as a double, as json-c keeps a C program's")
    func numberKinds() throws {
        struct Numbers: Codable {
            var whole = 2.0
            var negativeZero = -0.0
            var large = 1e16
            var fraction = 0.1
            var float: Float = 0.1
            var wholeFloat: Float = 3
            var integer = 7
            var unsigned = UInt64.max
            var value: JSONValue = .double(1)
        }
        let text = try JSONValue(canonicallyEncoding: Numbers()).description
        #expect(text == #"{"float":0.1,"fraction":0.1,"integer":7,"large":1e+16,"negativeZero":-0.0,"#
            + #""unsigned":18446744073709551615,"value":1.0,"whole":2.0,"wholeFloat":3.0}"#)
        // The text parses back to the same kinds.
        let reread = try JSONAction(jsonText: #"{"identifier": "n", "payload": \#(text)}"#)
        #expect(reread.payload != nil)
        // The same kinds through the snapshot coder's plain encode, and through json-c.
        #expect(try JSONValue(encoding: Numbers()).description == text)
        #expect(try JSONCDecoder().decode(JSONValue.self, fromJSONString: text) == JSONValue(encoding: Numbers()))
    }

    @Test("a canonical encode leaves the ordinary encoder as it was (the flag is per encode)")
    func flagIsPerEncode() throws {
        let (a, _) = Self.states()
        let encoder = SnapshotEncoder()
        let tape = SnapshotTape()
        try encoder.encode(a, into: tape, canonicalOrder: true)
        let canonical = try SnapshotDecoder.decode(JSONValue.self, from: tape)
        try encoder.encode(a, into: tape)
        let plain = try SnapshotDecoder.decode(JSONValue.self, from: tape)
        #expect(plain == (try JSONValue(encoding: a)))
        #expect(canonical == (try JSONValue(canonicallyEncoding: a)))
    }
}
