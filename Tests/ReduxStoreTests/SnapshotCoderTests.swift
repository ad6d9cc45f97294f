import Foundation
import Synchronization
import Testing
@_spi(Bindings) @testable import ReduxStore

// MARK: - Fixtures

private struct Widths: Codable, Equatable {
    var i8: Int8 = -128, i16: Int16 = -32768, i32: Int32 = -2_147_483_648, i64: Int64 = .min
    var u8: UInt8 = 255, u16: UInt16 = 65535, u32: UInt32 = 4_294_967_295, u64: UInt64 = .max
    var i: Int = -1, u: UInt = 7
}

private struct Wide: Codable, Equatable {
    var small: Int128 = -5
    var big: Int128 = .min
    var ubig: UInt128 = .max
}

private struct Floats: Codable, Equatable {
    var d: Double = 0.1
    var f: Float = 0.1
    var negativeZero: Double = -0.0
    var tiny: Double = .leastNonzeroMagnitude
}

private struct Texts: Codable, Equatable {
    var empty = ""
    var small = "héllo"
    var long = "a string longer than fifteen bytes, stored out of line"
    var escapes = "quote \" backslash \\ tab \t nl \n bell \u{07}"
    var emoji = "👩‍👩‍👧"
}

private struct Optionals: Codable, Equatable {
    var present: Int? = 1
    var absent: Int? = nil
    var nested: Int?? = .some(3)
}

/// Encodes `value` as an explicit null (not a missing key), so decoding sees null.
private struct ExplicitNull: Codable, Equatable {
    var value: String?
    enum CodingKeys: String, CodingKey { case value }
    init(value: String?) { self.value = value }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(value, forKey: .value)
    }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        #expect(c.contains(.value))
        value = try c.decodeNil(forKey: .value) ? nil : c.decode(String.self, forKey: .value)
    }
}

private struct Wrapper: Codable, Equatable {
    var raw: Int
    init(raw: Int) { self.raw = raw }
    init(from decoder: any Decoder) throws { raw = try decoder.singleValueContainer().decode(Int.self) }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(raw)
    }
}

/// Writes two nested containers in turns and uses a `superEncoder` after later keys: the tape
/// must keep each container's entries together although they were written interleaved.
private struct Interleaved: Codable, Equatable {
    var a: [Int], b: [String: Int], tail: String, sup: Wrapper
    enum CodingKeys: String, CodingKey { case a, b, tail, sup }
    enum Inner: String, CodingKey { case x, y }
    init(a: [Int], b: [String: Int], tail: String, sup: Wrapper) {
        self.a = a; self.b = b; self.tail = tail; self.sup = sup
    }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        var a = c.nestedUnkeyedContainer(forKey: .a)
        var b = c.nestedContainer(keyedBy: Inner.self, forKey: .b)
        let sup = c.superEncoder(forKey: .sup)
        try a.encode(self.a[0])
        try b.encode(self.b["x"]!, forKey: .x)
        try c.encode(tail, forKey: .tail)
        try a.encode(self.a[1])
        try b.encode(self.b["y"]!, forKey: .y)
        try self.sup.encode(to: sup)
    }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        // Keys in an order different from the encoding order: exercises the search fallback.
        sup = try Wrapper(from: c.superDecoder(forKey: .sup))
        tail = try c.decode(String.self, forKey: .tail)
        let inner = try c.nestedContainer(keyedBy: Inner.self, forKey: .b)
        b = ["y": try inner.decode(Int.self, forKey: .y), "x": try inner.decode(Int.self, forKey: .x)]
        var list = try c.nestedUnkeyedContainer(forKey: .a)
        a = [try list.decode(Int.self), try list.decode(Int.self)]
        #expect(list.isAtEnd)
    }
}

/// Three values of one type written through three `superEncoder`s filled in turns, and read
/// back the same way: containers of the same key type at the same depth, all alive at once.
private struct Thirds: Codable, Equatable {
    var parts: [Point]
    enum CodingKeys: CodingKey { case a, b, c }
    enum P: CodingKey { case x, y }
    init(parts: [Point]) { self.parts = parts }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        var containers = [CodingKeys.a, .b, .c].map { c.superEncoder(forKey: $0).container(keyedBy: P.self) }
        for i in 0..<3 { try containers[i].encode(parts[i].x, forKey: .x) }
        for i in 0..<3 { try containers[i].encode(parts[i].y, forKey: .y) }
    }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let containers = try [CodingKeys.a, .b, .c].map { try c.superDecoder(forKey: $0).container(keyedBy: P.self) }
        let xs = try containers.map { try $0.decode(Int.self, forKey: .x) }
        let ys = try containers.map { try $0.decode(Int.self, forKey: .y) }
        parts = (0..<3).map { Point(x: xs[$0], y: ys[$0]) }
    }
}

private enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rect(width: Int, height: Int)
    case labeled(String, Int)
    case none
}

private struct Point: Codable, Hashable { var x: Int, y: Int }

private class Animal: Codable, Equatable {
    var name: String
    init(name: String) { self.name = name }
    static func == (l: Animal, r: Animal) -> Bool { l.isEqual(to: r) }
    func isEqual(to other: Animal) -> Bool { type(of: self) == type(of: other) && name == other.name }
}

private final class Dog: Animal {
    var breed: String
    enum CodingKeys: String, CodingKey { case breed }
    init(name: String, breed: String) { self.breed = breed; super.init(name: name) }
    required init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        breed = try c.decode(String.self, forKey: .breed)
        try super.init(from: c.superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(breed, forKey: .breed)
        try super.encode(to: c.superEncoder())
    }
    override func isEqual(to other: Animal) -> Bool {
        super.isEqual(to: other) && breed == (other as? Dog)?.breed
    }
}

private struct Empty: Codable, Equatable {}

private struct FoundationValues: Codable, Equatable {
    var date = Date(timeIntervalSinceReferenceDate: 12.5)
    var data = Data([1, 2, 255])
    var url = URL(string: "https://example.org/a?b=c")!
    var decimal = Decimal(string: "12345.6789")!
}

private struct Todo: Codable, Equatable { var id: Int; var title: String; var done: Bool }
private final class Box: Codable { var value: Int; init(value: Int) { self.value = value } }
private final class AppState: Codable {
    var todos: [Todo]
    var box: Box
    init(todos: [Todo], box: Box) { self.todos = todos; self.box = box }
}

// MARK: - Table of round trips

/// One round-trip case: a value, built fresh by `make`, and its tape as JSON (nil where the
/// order of the JSON is not fixed, as for dictionaries with several keys).
struct SnapshotRoundTrip: Sendable, CustomTestStringConvertible {
    let name: String
    let json: String?
    let run: @Sendable () throws -> (equal: Bool, json: String)
    var testDescription: String { name }

    static func make<T: Codable & Equatable & SendableMetatype>(
        _ name: String, json: String?, _ make: @escaping @Sendable () -> T
    ) -> SnapshotRoundTrip {
        SnapshotRoundTrip(name: name, json: json) {
            let value = make()
            let tape = SnapshotTape()
            try SnapshotEncoder().encode(value, into: tape)
            let decoded = try SnapshotDecoder.decode(T.self, from: tape)
            return (decoded == value, tape.jsonString())
        }
    }
}

private let roundTrips: [SnapshotRoundTrip] = [
    .make("integer widths", json: #"{"i8":-128,"i16":-32768,"i32":-2147483648,"i64":-9223372036854775808,"u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"i":-1,"u":7}"#) { Widths() },
    .make("128-bit integers", json: #"{"small":-5,"big":-170141183460469231731687303715884105728,"ubig":340282366920938463463374607431768211455}"#) { Wide() },
    .make("floating point", json: #"{"d":0.1,"f":0.1,"negativeZero":-0.0,"tiny":5e-324}"#) { Floats() },
    .make("strings", json: #"{"empty":"","small":"héllo","long":"a string longer than fifteen bytes, stored out of line","escapes":"quote \" backslash \\ tab \t nl \n bell \u0007","emoji":"👩‍👩‍👧"}"#) { Texts() },
    .make("optionals: nil is a missing key", json: #"{"present":1,"nested":3}"#) { Optionals() },
    .make("explicit null", json: #"{"value":null}"#) { ExplicitNull(value: nil) },
    .make("explicit null, present", json: #"{"value":"v"}"#) { ExplicitNull(value: "v") },
    .make("single-value wrapper", json: "[3,4]") { [Wrapper(raw: 3), Wrapper(raw: 4)] },
    .make("interleaved containers, keys read out of order", json: #"{"a":[1,2],"b":{"x":3,"y":4},"sup":5,"tail":"t"}"#) {
        Interleaved(a: [1, 2], b: ["x": 3, "y": 4], tail: "t", sup: Wrapper(raw: 5))
    },
    .make("same-type containers alive at once", json: #"[{"a":{"x":1,"y":2},"b":{"x":3,"y":4},"c":{"x":5,"y":6}},{"a":{"x":7,"y":8},"b":{"x":9,"y":10},"c":{"x":11,"y":12}}]"#) {
        [Thirds(parts: [Point(x: 1, y: 2), Point(x: 3, y: 4), Point(x: 5, y: 6)]),
         Thirds(parts: [Point(x: 7, y: 8), Point(x: 9, y: 10), Point(x: 11, y: 12)])]
    },
    .make("nested arrays", json: "[[1,2],[],[3]]") { [[1, 2], [], [3]] as [[Int]] },
    .make("array of optionals", json: #"["a",null,"c"]"#) { ["a", nil, "c"] as [String?] },
    .make("array of every scalar", json: #"[[true,false],[1.5],[2.5],[-1],[1]]"#) {
        ArrayOfScalars()
    },
    .make("String-keyed dictionary", json: #"{"k":1}"#) { ["k": 1] },
    .make("Int-keyed dictionary", json: #"{"7":"seven"}"#) { [7: "seven"] },
    .make("struct-keyed dictionary is an array", json: #"[{"x":1,"y":2},"p"]"#) { [Point(x: 1, y: 2): "p"] },
    .make("many-key dictionary", json: nil) { Dictionary(uniqueKeysWithValues: (0..<50).map { ("key\($0)", $0) }) },
    .make("set", json: nil) { Set(0..<20) },
    .make("enum with labeled values", json: #"{"circle":{"radius":2.0}}"#) { Shape.circle(radius: 2) },
    .make("enum with two values", json: #"{"rect":{"width":3,"height":4}}"#) { Shape.rect(width: 3, height: 4) },
    .make("enum with unlabeled values", json: #"{"labeled":{"_0":"x","_1":1}}"#) { Shape.labeled("x", 1) },
    .make("enum without values", json: #"{"none":{}}"#) { Shape.none },
    .make("class inheritance through superEncoder", json: #"{"breed":"beagle","super":{"name":"Rex"}}"#) {
        Dog(name: "Rex", breed: "beagle")
    },
    .make("empty struct", json: "{}") { Empty() },
    .make("empty array", json: "[]") { [Int]() },
    .make("empty dictionary", json: "{}") { [String: Int]() },
    .make("top-level Int", json: "42") { 42 },
    .make("top-level String", json: #""s""#) { "s" },
    .make("top-level Bool", json: "true") { true },
    .make("top-level nil", json: "null") { Int?.none },
    .make("Date, Data, URL, Decimal use their own Codable", json: nil) { FoundationValues() },
    .make("Date", json: "12.5") { Date(timeIntervalSinceReferenceDate: 12.5) },
    .make("Data", json: "[1,2,255]") { Data([1, 2, 255]) },
    .make("URL", json: #""https://example.org/a?b=c""#) { URL(string: "https://example.org/a?b=c")! },
]

private struct ArrayOfScalars: Codable, Equatable {
    var bools = [true, false]
    var doubles: [Double] = [1.5]
    var floats: [Float] = [2.5]
    var int8s: [Int8] = [-1]
    var uint64s: [UInt64] = [1]
    func encode(to encoder: any Encoder) throws {
        var c = encoder.unkeyedContainer()
        try c.encode(bools); try c.encode(doubles); try c.encode(floats); try c.encode(int8s); try c.encode(uint64s)
    }
    init() {}
    init(from decoder: any Decoder) throws {
        var c = try decoder.unkeyedContainer()
        #expect(c.count == 5)
        bools = try c.decode([Bool].self); doubles = try c.decode([Double].self)
        floats = try c.decode([Float].self); int8s = try c.decode([Int8].self)
        uint64s = try c.decode([UInt64].self)
    }
}

// MARK: - Error fixtures

/// Encodes titles either as text or as a number, to decode later as `[ItemIn]`.
private enum TitleOut: Encodable {
    case text(String), number(Int), none
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .text(let s): try c.encode(s)
        case .number(let n): try c.encode(n)
        case .none: try c.encodeNil()
        }
    }
}
private struct ItemOut: Encodable {
    var title: TitleOut?
    var small: Int = 1
    enum CodingKeys: CodingKey { case title, small }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if let title { try c.encode(title, forKey: .title) }
        try c.encode(small, forKey: .small)
    }
}
private struct ListOut: Encodable { var items: [ItemOut] }
private struct ItemIn: Decodable { var title: String; var small: Int8 }
private struct ListIn: Decodable { var items: [ItemIn] }
private struct ObjectIn: Decodable { var items: [String: Int] }
private struct PairIn: Decodable {
    var pair: [Int]
    enum CodingKeys: CodingKey { case pair }
    init(from decoder: any Decoder) throws {
        var c = try decoder.container(keyedBy: CodingKeys.self).nestedUnkeyedContainer(forKey: .pair)
        pair = []
        for _ in 0..<3 { pair.append(try c.decode(Int.self)) }
    }
}

struct SnapshotErrorCase: Sendable, CustomTestStringConvertible {
    let name: String
    let message: String
    let decode: @Sendable (SnapshotTape) throws(StoreError) -> Void
    let encode: @Sendable (SnapshotTape) throws(StoreError) -> Void
    var testDescription: String { name }
}

private func items(_ titles: [TitleOut?], small: Int = 1) -> ListOut {
    ListOut(items: titles.map { ItemOut(title: $0, small: small) })
}

private let errorCases: [SnapshotErrorCase] = [
    SnapshotErrorCase(name: "number where a String is asked (top-level path)", message: "[2].title: expected String, found number",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode([ItemIn].self, from: tape) },
              encode: { tape throws(StoreError) in
                  try SnapshotEncoder().encode(items([.text("a"), .text("b"), .number(3)]).items, into: tape) }),
    SnapshotErrorCase(name: "number where a String is asked", message: "items[3].title: expected String, found number",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode(ListIn.self, from: tape) },
              encode: { tape throws(StoreError) in
                  try SnapshotEncoder().encode(items([.text("a"), .text("b"), .text("c"), .number(4)]), into: tape) }),
    SnapshotErrorCase(name: "null where a String is asked", message: "items[1].title: expected String, found null",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode(ListIn.self, from: tape) },
              encode: { tape throws(StoreError) in try SnapshotEncoder().encode(items([.text("a"), TitleOut.none]), into: tape) }),
    SnapshotErrorCase(name: "missing key", message: "items[0].title: key not found",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode(ListIn.self, from: tape) },
              encode: { tape throws(StoreError) in try SnapshotEncoder().encode(items([nil]), into: tape) }),
    SnapshotErrorCase(name: "Int 300 asked as Int8", message: "items[0].small: number 300 does not fit in Int8",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode(ListIn.self, from: tape) },
              encode: { tape throws(StoreError) in try SnapshotEncoder().encode(items([.text("a")], small: 300), into: tape) }),
    SnapshotErrorCase(name: "array where an object is asked", message: "items: expected object, found array",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode(ObjectIn.self, from: tape) },
              encode: { tape throws(StoreError) in try SnapshotEncoder().encode(items([]), into: tape) }),
    SnapshotErrorCase(name: "top level of the wrong kind", message: "expected Int, found object",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode(Int.self, from: tape) },
              encode: { tape throws(StoreError) in try SnapshotEncoder().encode(items([]), into: tape) }),
    SnapshotErrorCase(name: "reading past the end of an array", message: "pair[2]: expected Int, found the end of the array",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode(PairIn.self, from: tape) },
              encode: { tape throws(StoreError) in try SnapshotEncoder().encode(["pair": [1, 2]], into: tape) }),
    SnapshotErrorCase(name: "negative number asked as UInt", message: "[0]: number -1 does not fit in UInt",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode([UInt].self, from: tape) },
              encode: { tape throws(StoreError) in try SnapshotEncoder().encode([-1], into: tape) }),
    SnapshotErrorCase(name: "fraction asked as Int", message: "[0]: expected Int, found 1.5",
              decode: { tape throws(StoreError) in _ = try SnapshotDecoder.decode([Int].self, from: tape) },
              encode: { tape throws(StoreError) in try SnapshotEncoder().encode([1.5], into: tape) }),
]

/// A linked list `depth` objects deep: `{"next":{"next":...}}`.
private final class Nest: Codable {
    var next: Nest?
    init(depth: Int) { next = depth > 1 ? Nest(depth: depth - 1) : nil }
    var depth: Int { var d = 1; var n = next; while let m = n { d += 1; n = m.next }; return d }
}

/// Arrays `depth` levels deep built by hand, with a scalar at the bottom.
private struct NestedArrays: Codable {
    var depth: Int
    init(depth: Int) { self.depth = depth }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.unkeyedContainer()
        for _ in 1..<depth { c = c.nestedUnkeyedContainer() }
        try c.encode(0)
    }
    init(from decoder: any Decoder) throws {
        var c = try decoder.unkeyedContainer()
        depth = 1
        while (try? c.decode(Int.self)) == nil { c = try c.nestedUnkeyedContainer(); depth += 1 }
    }
}

/// JSON `depth` containers deep, arrays or objects by turns from the top (`kinds`), with `leaf`
/// at the bottom: a value whose type is not a scalar's, encoded through its own `encode(to:)`.
private func jsonNest(depth: Int, kinds: [Bool] = [true], leaf: JSONValue = .int(0)) -> JSONValue {
    var value = leaf
    for level in stride(from: depth - 1, through: 0, by: -1) {
        value = kinds[level % kinds.count] ? .array([value]) : .object(["k": value])
    }
    return value
}

// MARK: - Tests

@Suite("Snapshot coder")
struct SnapshotCoderTests {
    @Test("round trips", arguments: roundTrips)
    func roundTrip(_ c: SnapshotRoundTrip) throws {
        let result = try c.run()
        #expect(result.equal)
        if let json = c.json { #expect(result.json == json) }
    }

    @Test("doubles and floats keep their exact bits", arguments: [
        0x7FF8_0000_0000_0000, 0x7FF0_0000_0000_0001, 0xFFF8_0000_DEAD_BEEF,
        0x7FF0_0000_0000_0000, 0xFFF0_0000_0000_0000, 0x8000_0000_0000_0000,
    ] as [UInt64])
    func exactBits(_ bits: UInt64) throws {
        let tape = SnapshotTape()
        let double = Double(bitPattern: bits)
        let float = Float(bitPattern: UInt32(truncatingIfNeeded: bits >> 32) | UInt32(truncatingIfNeeded: bits & 1))
        try SnapshotEncoder().encode(["d": [double]], into: tape)
        #expect(try SnapshotDecoder.decode([String: [Double]].self, from: tape)["d"]![0].bitPattern == bits)
        try SnapshotEncoder().encode(float, into: tape)
        #expect(try SnapshotDecoder.decode(Float.self, from: tape).bitPattern == float.bitPattern)
    }

    @Test("non-finite numbers print as strings")
    func nonFiniteJSON() throws {
        let tape = SnapshotTape()
        try SnapshotEncoder().encode([Double.nan, .infinity, -.infinity], into: tape)
        #expect(tape.jsonString() == #"["NaN","Infinity","-Infinity"]"#)
        try SnapshotEncoder().encode([Float.nan, .infinity, 1.25], into: tape)
        #expect(tape.jsonString() == #"["NaN","Infinity",1.25]"#)
    }

    @Test("the decoded state is a deep copy")
    func deepCopy() throws {
        let original = AppState(todos: [Todo(id: 1, title: "one", done: false)], box: Box(value: 7))
        let tape = SnapshotTape()
        try SnapshotEncoder().encode(original, into: tape)
        let copy = try SnapshotDecoder.decode(AppState.self, from: tape)
        #expect(copy !== original)
        #expect(copy.box !== original.box)
        copy.todos[0].title = "changed"
        copy.todos.append(Todo(id: 2, title: "two", done: true))
        copy.box.value = 8
        #expect(original.todos == [Todo(id: 1, title: "one", done: false)])
        #expect(original.box.value == 7)
        let again = try SnapshotDecoder.decode(AppState.self, from: tape)
        #expect(again.todos == [Todo(id: 1, title: "one", done: false)])
        #expect(again.box.value == 7)
        #expect(again !== copy)
    }

    @Test("decoding errors name the coding path", arguments: errorCases)
    func decodingErrors(_ c: SnapshotErrorCase) throws {
        let tape = SnapshotTape()
        try c.encode(tape)
        let error = #expect(throws: StoreError.self) { try c.decode(tape) }
        #expect(error?.kind == .decode)
        #expect(error?.message == c.message)
    }

    @Test("an error inside a container is a DecodingError")
    func containerErrorsAreDecodingErrors() throws {
        struct Probe: Decodable {
            var caught: String
            enum CodingKeys: CodingKey { case items }
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: CodingKeys.self)
                do {
                    _ = try c.decode([ItemIn].self, forKey: .items)
                    caught = "nothing"
                } catch let DecodingError.typeMismatch(type, context) {
                    caught = "\(type) at \(CodingPath.describe(context.codingPath))"
                }
            }
        }
        let tape = SnapshotTape()
        try SnapshotEncoder().encode(items([.text("a"), .number(2)]), into: tape)
        #expect(try SnapshotDecoder.decode(Probe.self, from: tape).caught == "String at items[1].title")
    }

    @Test("nesting past the limit is a .limit error", arguments: [1, 200, 256])
    func depthWithinLimit(_ depth: Int) throws {
        let tape = SnapshotTape()
        try SnapshotEncoder().encode(Nest(depth: depth), into: tape)
        #expect(try SnapshotDecoder.decode(Nest.self, from: tape).depth == depth)
        try SnapshotEncoder().encode(NestedArrays(depth: depth), into: tape)
        #expect(try SnapshotDecoder.decode(NestedArrays.self, from: tape).depth == depth)
    }

    /// A scalar inside the deepest container is no level of its own, whichever type holds it.
    @Test("a JSONValue holds a scalar in its deepest container", arguments: [
        [true], [false], [true, false], [false, true],
    ])
    func jsonValueAtTheLimit(_ kinds: [Bool]) throws {
        let tape = SnapshotTape()
        for leaf: JSONValue in [.int(0), .string("x"), .null, .array([]), .object([:])] {
            let value = jsonNest(depth: StoreLimits.maximumNestingDepth, kinds: kinds, leaf: leaf)
            if leaf == .array([]) || leaf == .object([:]) {
                // An empty container is a level all the same.
                let error = #expect(throws: StoreError.self) { try SnapshotEncoder().encode(value, into: tape) }
                #expect(error?.kind == .limit)
                #expect(error?.detail == "value nested deeper than 256 levels")
                continue
            }
            try SnapshotEncoder().encode(value, into: tape)
            #expect(try SnapshotDecoder.decode(JSONValue.self, from: tape) == value)
        }
        let past = jsonNest(depth: StoreLimits.maximumNestingDepth + 1, kinds: kinds)
        let error = #expect(throws: StoreError.self) { try SnapshotEncoder().encode(past, into: tape) }
        #expect(error?.kind == .limit)
        #expect(error?.detail == "value nested deeper than 256 levels")
        #expect(tape.valueCount == 0)
    }

    @Test("nesting deeper than the limit is refused", arguments: [257, 300, 5000])
    func depthPastLimit(_ depth: Int) throws {
        let tape = SnapshotTape()
        for value in [Nest(depth: depth) as any Encodable, NestedArrays(depth: depth)] {
            let error = #expect(throws: StoreError.self) { try SnapshotEncoder().encode(value, into: tape) }
            #expect(error?.kind == .limit)
            #expect(error?.detail == "value nested deeper than 256 levels")
            // The path names the first container past the limit: 256 steps below the top.
            let path = value is Nest
                ? Array(repeating: "next", count: StoreLimits.maximumNestingDepth).joined(separator: ".")
                : String(repeating: "[0]", count: StoreLimits.maximumNestingDepth)
            #expect(error?.codingPath == path)
            #expect(tape.valueCount == 0)
        }
        #expect(throws: StoreError(.decode, codingPath: "", detail: "the snapshot is empty: nothing was encoded into it")) {
            try SnapshotDecoder.decode(Nest.self, from: tape)
        }
    }

    @Test("a tape can be reused for another, different value")
    func reuse() throws {
        let encoder = SnapshotEncoder()
        let tape = SnapshotTape()
        let big = (0..<1000).map { Todo(id: $0, title: "title number \($0)", done: $0 % 2 == 0) }
        try encoder.encode(big, into: tape)
        #expect(try SnapshotDecoder.decode([Todo].self, from: tape) == big)
        try encoder.encode(["only": [true]], into: tape)
        #expect(try SnapshotDecoder.decode([String: [Bool]].self, from: tape) == ["only": [true]])
        #expect(tape.jsonString() == #"{"only":[true]}"#)
        #expect(tape.valueCount == 3)
        try encoder.encode(big, into: tape)
        #expect(try SnapshotDecoder.decode([Todo].self, from: tape) == big)
    }

    @Test("eight threads decode one tape at once")
    func concurrentDecode() throws {
        let todos = (0..<2000).map { Todo(id: $0, title: "a title that is long enough \($0)", done: $0 % 2 == 0) }
        let state = AppState(todos: todos, box: Box(value: 3))
        let tape = SnapshotTape()
        try SnapshotEncoder().encode(state, into: tape)
        let failures = Mutex(0)
        let group = DispatchGroup()
        for _ in 0..<8 {
            group.enter()
            let thread = Thread {
                for _ in 0..<50 {
                    let copy = try? SnapshotDecoder.decode(AppState.self, from: tape)
                    if copy?.todos != todos || copy?.box.value != 3 { failures.withLock { $0 += 1 } }
                }
                group.leave()
            }
            thread.start()
        }
        group.wait()
        #expect(failures.withLock { $0 } == 0)
    }

    @Test("jsonString of a small value")
    func jsonString() throws {
        struct Small: Encodable {
            var id = 1, title = "say \"hi\"\n", done = false, tags = ["x", "y"], score = 2.5
            var note: String? = nil
            var nested = ["k": [UInt8(1)]]
        }
        let tape = SnapshotTape()
        #expect(tape.jsonString() == "")
        try SnapshotEncoder().encode(Small(), into: tape)
        #expect(tape.jsonString() == #"{"id":1,"title":"say \"hi\"\n","done":false,"tags":["x","y"],"score":2.5,"nested":{"k":[1]}}"#)
    }
}

/// `JSONValue`'s own `init(from:)`, called directly, so a decode from the tape takes the path of
/// trial decodes rather than the direct read the tape decoder has for `JSONValue`.
private struct ThroughInit: Decodable {
    let value: JSONValue
    init(from decoder: any Decoder) throws { value = try JSONValue(from: decoder) }
}

/// Every kind of value the tape holds, as the encoder writes it.
private struct EveryKind: Encodable {
    var int = -7, uint = UInt64.max, wholeDouble = 2.0, double = 2.5, nan = Double.nan
    var float: Float = 0.1, wholeFloat: Float = 3, big = Int128.max, small = Int128(5)
    var text = "é \"q\"", flag = true, none: Int? = nil
    var list: [[Int?]] = [[1, nil], []]
    var map = ["a": ["b": 1.5]]
}

/// A value whose `encode(to:)` asks for no container: it reads as `{}`.
private struct EncodesNothing: Encodable {
    func encode(to encoder: any Encoder) throws {}
}

@Suite("JSONValue read from the snapshot tape")
struct TapeJSONValueTests {
    private func both(_ value: some Encodable) throws -> (direct: JSONValue, throughInit: JSONValue) {
        let tape = SnapshotTape()
        try SnapshotEncoder().encode(value, into: tape)
        return (
            try SnapshotDecoder.decode(JSONValue.self, from: tape),
            try SnapshotDecoder.decode(ThroughInit.self, from: tape).value
        )
    }

    @Test("the direct read makes what JSONValue's init(from:) makes, for every kind; a whole Double or Float stays a double")
    func sameAsInit() throws {
        let (direct, throughInit) = try both(EveryKind())
        // NaN is not equal to itself: compare its member apart.
        guard case .object(var directMembers) = direct, case .object(var initMembers) = throughInit else {
            Issue.record("not objects: \(direct)")
            return
        }
        guard case .double(let nan)? = directMembers.removeValue(forKey: "nan"),
              case .double(let initNaN)? = initMembers.removeValue(forKey: "nan")
        else {
            Issue.record("nan is not a double")
            return
        }
        #expect(nan.isNaN && initNaN.isNaN)
        #expect(directMembers == initMembers)
        // The tape says which numbers were doubles: whole ones stay doubles.
        #expect(directMembers["wholeDouble"] == .double(2))
        #expect(directMembers["wholeFloat"] == .double(3))
        #expect(directMembers["uint"] == .uint(.max))
        #expect(directMembers["float"] == .double(0.1))
        #expect(directMembers["list"] == [[1, .null], []])
        #expect(try both(EncodesNothing()) == (.object([:]), .object([:])))
        #expect(try both([String]()) == (.array([]), .array([])))
        #expect(try both(UInt64(5)).direct == .int(5))
    }

    @Test("a large value is read in one pass: 100,000 objects, every one checked")
    func large() throws {
        struct Todo: Encodable { var id: Int; var title: String; var done: Bool }
        let todos = (0..<100_000).map { Todo(id: $0, title: "todo \($0)", done: $0 % 3 == 0) }
        let value = try JSONValue(encoding: todos)
        guard case .array(let elements) = value else {
            Issue.record("not an array")
            return
        }
        #expect(elements.count == 100_000)
        for (index, element) in elements.enumerated() {
            let expected: JSONValue = ["id": .int(Int64(index)), "title": .string("todo \(index)"), "done": .bool(index % 3 == 0)]
            if element != expected {
                Issue.record("element \(index): \(element)")
                break
            }
        }
    }
}
