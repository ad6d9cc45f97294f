// The differential test of the coders: every shape below goes through the three ways a value is
// copied here — `currentState()` (the snapshot coder), `save` + reopen (the json-c bridge and its
// text), and the json-c coders alone — and each must give what Foundation's `JSONEncoder` +
// `JSONDecoder` round trip gives on Linux: the same value, or a failure where Foundation fails.

import Foundation
import ReduxStore
import ReduxStoreTestSupport
import Testing
import CJSONC

/// One Codable shape and the check of its three copies.
struct ParityShape: Sendable, CustomTestStringConvertible {
    let name: String
    let differences: @Sendable (_ folder: String) -> [String]
    var testDescription: String { name }
}

/// What a round trip gave: a value, or a failure (with its words, which are not compared).
enum RoundTrip<T: Equatable>: Equatable {
    case value(T)
    case failed(String)

    static func == (a: Self, b: Self) -> Bool {
        switch (a, b) {
        case let (.value(x), .value(y)): return x == y
        case (.failed, .failed): return true
        default: return false
        }
    }
}

func roundTrip<T>(_ body: () throws -> T) -> RoundTrip<T> {
    do { return .value(try body()) } catch { return .failed("\(error)") }
}

func shape<T: Codable & Equatable & Sendable>(_ name: String, _ value: T) -> ParityShape {
    ParityShape(name: name) { folder in
        let expected = roundTrip { try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value)) }
        var differences: [String] = []
        func compare(_ path: String, _ got: RoundTrip<T>) {
            if got != expected { differences.append("\(path): \(got), Foundation: \(expected)") }
        }
        compare("currentState", roundTrip { try Store(reducers: [], state: value).snapshot() })
        let file = folder + "/" + String(name.unicodeScalars.filter { $0.properties.isAlphabetic || ("0"..."9").contains($0) }.prefix(60)) + ".json"
        compare("save + open", roundTrip {
            try Store(reducers: [], state: value).save(to: file)
            return try Store<T>(contentsOf: file, reducers: []).snapshot()
        })
        compare("json-c coders", roundTrip {
            let tree = try JSONCEncoder().encode(value)
            defer { json_object_put(tree) }
            return try JSONCDecoder().decode(T.self, from: tree)
        })
        return differences
    }
}

@Suite struct CodableParityTests {
    static let folder = temporaryFolder()

    @Test(arguments: parityShapes)
    func sameAsFoundation(_ shape: ParityShape) {
        let differences = shape.differences(Self.folder)
        #expect(differences.isEmpty, "\(shape.name): \(differences.joined(separator: "; "))")
    }

    @Test func thereAreAtLeastSixtyShapes() {
        #expect(parityShapes.count >= 60)
        #expect(Set(parityShapes.map(\.name)).count == parityShapes.count)
    }
}

// MARK: - The shapes

struct PIntegers: Codable, Equatable, Sendable {
    var i8: Int8, i16: Int16, i32: Int32, i64: Int64, i: Int
    var u8: UInt8, u16: UInt16, u32: UInt32, u64: UInt64, u: UInt
}

struct PFloats: Codable, Equatable, Sendable {
    var float: Float
    var double: Double
}

/// Writes a `Float`, reads a `Double`.
struct PFloatReadAsDouble: Codable, Equatable, Sendable {
    var value: Double
    init(_ value: Float) { self.value = Double(value) }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(Float(value))
    }
    init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Double.self) }
}

/// Writes a `Double`, reads a `Float`.
struct PDoubleReadAsFloat: Codable, Equatable, Sendable {
    var value: Double
    init(_ value: Double) { self.value = value }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(value)
    }
    init(from decoder: any Decoder) throws { value = Double(try decoder.singleValueContainer().decode(Float.self)) }
}

/// Writes integers, reads `Float`s.
struct PIntegersAsFloat: Codable, Equatable, Sendable {
    var values: [Int64]
    init(values: [Int64]) { self.values = values }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(values)
    }
    init(from decoder: any Decoder) throws { values = try decoder.singleValueContainer().decode([Float].self).map { Int64(exactly: $0) ?? -1 } }
}

struct PTodo: Codable, Equatable, Sendable {
    var id: Int
    var title: String
    var done: Bool
    var note: String?
}

enum PShape: Codable, Equatable, Sendable {
    case point
    case circle(radius: Double)
    case rectangle(width: Int, height: Int)
    case labelled(String, Int)
    indirect case group([PShape])
}

enum PColour: String, Codable, Equatable, Sendable { case red, green, blue = "BLUE" }

struct PDeep: Codable, Equatable, Sendable {
    var children: [PDeep]
    static func chain(_ depth: Int) -> PDeep {
        depth == 0 ? PDeep(children: []) : PDeep(children: [chain(depth - 1)])
    }
}

/// A base class and a subclass that encodes its superclass through `superEncoder()`.
class PAnimal: Codable, Equatable, @unchecked Sendable {
    var name: String
    init(name: String) { self.name = name }
    static func == (a: PAnimal, b: PAnimal) -> Bool { a.isEqual(to: b) }
    func isEqual(to other: PAnimal) -> Bool { type(of: self) == type(of: other) && name == other.name }
}

final class PDog: PAnimal, @unchecked Sendable {
    var legs: Int
    init(name: String, legs: Int) { self.legs = legs; super.init(name: name) }
    enum Keys: String, CodingKey { case legs, base }
    required init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        legs = try c.decode(Int.self, forKey: .legs)
        try super.init(from: c.superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(legs, forKey: .legs)
        try super.encode(to: c.superEncoder())
    }
    override func isEqual(to other: PAnimal) -> Bool {
        guard let other = other as? PDog else { return false }
        return legs == other.legs && super.isEqual(to: other)
    }
}

/// Encodes its superclass under a key of its own, `superEncoder(forKey:)`.
final class PCat: PAnimal, @unchecked Sendable {
    var lives: Int
    init(name: String, lives: Int) { self.lives = lives; super.init(name: name) }
    enum Keys: String, CodingKey { case lives, parent }
    required init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        lives = try c.decode(Int.self, forKey: .lives)
        try super.init(from: c.superDecoder(forKey: .parent))
    }
    override func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(lives, forKey: .lives)
        try super.encode(to: c.superEncoder(forKey: .parent))
    }
    override func isEqual(to other: PAnimal) -> Bool {
        guard let other = other as? PCat else { return false }
        return lives == other.lives && super.isEqual(to: other)
    }
}

struct PKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// A value written by custom `encode(to:)` code, read back as the JSON it made.
protocol Writing: Sendable { static func write(to encoder: any Encoder) throws }

struct Written<W: Writing>: Codable, Equatable, Sendable {
    var json: JSONValue
    init() { json = .null }
    init(from decoder: any Decoder) throws { json = try JSONValue(from: decoder) }
    func encode(to encoder: any Encoder) throws { try W.write(to: encoder) }
}

/// Nested containers `levels` deep, keyed and unkeyed in turns, with a value at each level.
struct Nesting<L: Levels>: Writing {
    static func write(to encoder: any Encoder) throws {
        var top = encoder.container(keyedBy: PKey.self)
        try top.encode(0, forKey: PKey("level"))
        try writeKeyed(&top, L.levels - 1)
    }
    static func writeKeyed(_ c: inout KeyedEncodingContainer<PKey>, _ left: Int) throws {
        guard left > 0 else { return }
        var inner = c.nestedUnkeyedContainer(forKey: PKey("cells"))
        try inner.encode("cell \(left)")
        try writeUnkeyed(&inner, left - 1)
    }
    static func writeUnkeyed(_ c: inout any UnkeyedEncodingContainer, _ left: Int) throws {
        guard left > 0 else { return }
        var inner = c.nestedContainer(keyedBy: PKey.self)
        try inner.encode(left, forKey: PKey("level"))
        try writeKeyed(&inner, left - 1)
    }
}
protocol Levels: Sendable { static var levels: Int { get } }
enum One: Levels { static let levels = 1 }
enum Two: Levels { static let levels = 2 }
enum Three: Levels { static let levels = 3 }
enum Four: Levels { static let levels = 4 }
enum Five: Levels { static let levels = 5 }

/// A key encoded twice: the last value wins.
enum KeyTwice: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        try c.encode(1, forKey: PKey("a"))
        try c.encode("b", forKey: PKey("b"))
        try c.encode([3], forKey: PKey("a"))
    }
}

/// A nested keyed container asked for twice under one key: one object.
enum ReopenedKeyed: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        var first = c.nestedContainer(keyedBy: PKey.self, forKey: PKey("a"))
        try first.encode(1, forKey: PKey("x"))
        try c.encode(9, forKey: PKey("c"))
        var second = c.nestedContainer(keyedBy: PKey.self, forKey: PKey("a"))
        try second.encode(2, forKey: PKey("y"))
        try second.encode(3, forKey: PKey("x"))
        try first.encode(4, forKey: PKey("z"))
    }
}

/// `nestedUnkeyedContainer(forKey:)` twice: one array.
enum ReopenedUnkeyed: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        var first = c.nestedUnkeyedContainer(forKey: PKey("a"))
        try first.encode(1)
        var second = c.nestedUnkeyedContainer(forKey: PKey("a"))
        try second.encode(2)
        try first.encode(3)
    }
}

/// An object value, then a nested container under the same key: merged.
enum ObjectThenContainer: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        try c.encode(["x": 1], forKey: PKey("a"))
        var nested = c.nestedContainer(keyedBy: PKey.self, forKey: PKey("a"))
        try nested.encode(2, forKey: PKey("y"))
    }
}

/// An array value, then a nested unkeyed container under the same key: appended.
enum ArrayThenContainer: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        try c.encode([1, 2], forKey: PKey("a"))
        var nested = c.nestedUnkeyedContainer(forKey: PKey("a"))
        try nested.encode(3)
    }
}

/// A nested container, then a value under the same key: the value wins, later writes into the
/// container are lost.
enum ContainerThenValue: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        var nested = c.nestedContainer(keyedBy: PKey.self, forKey: PKey("a"))
        try nested.encode(2, forKey: PKey("b"))
        try c.encode(5, forKey: PKey("a"))
        try nested.encode(7, forKey: PKey("c"))
    }
}

/// `container(keyedBy:)` twice on one encoder: one object.
enum TopContainerTwice: Writing {
    static func write(to encoder: any Encoder) throws {
        var first = encoder.container(keyedBy: PKey.self)
        try first.encode(1, forKey: PKey("a"))
        var second = encoder.container(keyedBy: PKey.self)
        try second.encode(2, forKey: PKey("b"))
        try first.encode(3, forKey: PKey("a"))
    }
}

/// `superEncoder()` twice, after a value under `super`: the last one wins.
enum SuperTwice: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        try c.encode(1, forKey: PKey("super"))
        // Each in a scope of its own: Foundation writes a super encoder's value into its parent
        // when the encoder is freed, so the order in which two live ones are freed would decide.
        do {
            var first = c.superEncoder().container(keyedBy: PKey.self)
            try first.encode(2, forKey: PKey("a"))
        }
        do {
            var second = c.superEncoder().container(keyedBy: PKey.self)
            try second.encode(3, forKey: PKey("b"))
        }
    }
}

/// `superEncoder(forKey:)` twice for one key: the last one wins.
enum SuperForKeyTwice: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        try 5.encode(to: c.superEncoder(forKey: PKey("a")))
        var second = c.superEncoder(forKey: PKey("a")).container(keyedBy: PKey.self)
        try second.encode(3, forKey: PKey("b"))
    }
}

/// A value, then `encodeNil` under the same key.
enum NilAfterValue: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        try c.encode(1, forKey: PKey("a"))
        try c.encodeNil(forKey: PKey("a"))
        try c.encode(true, forKey: PKey("b"))
    }
}

/// Keys that differ in bytes but are equal strings (canonical equivalence): one key.
enum EquivalentKeys: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        try c.encode(1, forKey: PKey("K"))
        try c.encode(2, forKey: PKey("\u{212A}"))  // KELVIN SIGN, equal to "K"
        try c.encode(3, forKey: PKey("\u{E9}"))
        try c.encode(4, forKey: PKey("e\u{301}"))
    }
}

/// An object of many keys, some written again: the large-object path of the key index.
enum ManyKeysRewritten: Writing {
    static func write(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PKey.self)
        var nested = c.nestedContainer(keyedBy: PKey.self, forKey: PKey("nested"))
        try nested.encode(1, forKey: PKey("inner"))
        for i in 0..<300 { try c.encode(i, forKey: PKey("key\(i)")) }
        for i in stride(from: 0, to: 300, by: 7) { try c.encode("again \(i)", forKey: PKey("key\(i)")) }
        var again = c.nestedContainer(keyedBy: PKey.self, forKey: PKey("nested"))
        try again.encode(2, forKey: PKey("other"))
    }
}

/// Keys rewritten in a nested object while its siblings are written in turns.
enum InterleavedObjects: Writing {
    static func write(to encoder: any Encoder) throws {
        var u = encoder.unkeyedContainer()
        var objects = (0..<300).map { _ in u.nestedContainer(keyedBy: PKey.self) }
        for round in 0..<3 {
            for i in objects.indices { try objects[i].encode(round * 1000 + i, forKey: PKey("k\(round % 2)")) }
        }
    }
}

/// Writes nothing at all: `{}`.
enum Nothing: Writing {
    static func write(to encoder: any Encoder) throws {}
}

let parityShapes: [ParityShape] = [
    shape("Int8 min", Int8.min),
    shape("Int8 max", Int8.max),
    shape("Int16 edges", [Int16.min, Int16.max, 0]),
    shape("Int32 edges", [Int32.min, Int32.max]),
    shape("Int64 edges", [Int64.min, Int64.max]),
    shape("UInt64 max", UInt64.max),
    shape("integers at their minimum", PIntegers(
        i8: .min, i16: .min, i32: .min, i64: .min, i: .min, u8: .min, u16: .min, u32: .min, u64: .min, u: .min)),
    shape("integers at their maximum", PIntegers(
        i8: .max, i16: .max, i32: .max, i64: .max, i: .max, u8: .max, u16: .max, u32: .max, u64: .max, u: .max)),
    shape("Int128 min", Int128.min),
    shape("Int128 max", Int128.max),
    shape("UInt128 max", UInt128.max),
    shape("Int128 just past Int64", [Int128(Int64.max) + 1, Int128(Int64.min) - 1]),
    shape("UInt128 just past UInt64", UInt128(UInt64.max) + 1),
    shape("Int128 in 64 bits", [Int128(-5), Int128(Int64.max)]),
    shape("Float 0.1", Float(0.1)),
    shape("Float written, Double read", PFloatReadAsDouble(0.1)),
    shape("Double written, Float read: underflow", PDoubleReadAsFloat(1e-50)),
    shape("Double written, Float read: overflow", PDoubleReadAsFloat(3.5e38)),
    shape("Double written, Float read: rounding", [PDoubleReadAsFloat(0.1), PDoubleReadAsFloat(16_777_217), PDoubleReadAsFloat(1e-45)]),
    shape("integers read as Float", PIntegersAsFloat(values: [16_777_217, -3, Int64.max])),
    shape("Float edges", [Float.greatestFiniteMagnitude, -Float.greatestFiniteMagnitude, .leastNonzeroMagnitude, .leastNormalMagnitude]),
    shape("Double 0.1 and friends", [0.1, 0.2, 0.30000000000000004, 1.0 / 3.0]),
    shape("Double subnormal", [Double.leastNonzeroMagnitude, Double.leastNormalMagnitude]),
    shape("Double largest", [Double.greatestFiniteMagnitude, -Double.greatestFiniteMagnitude]),
    shape("Double negative zero", PFloats(float: -0.0, double: -0.0)),
    shape("Double integral and huge", [1e20, 1e300, -1e-300, 4_503_599_627_370_497]),
    shape("Decimal small", Decimal(string: "3.14")!),
    shape("Decimal past 64 bits", Decimal(string: "123456789012345678901234567890.123")!),
    shape("Decimal negative past 64 bits", Decimal(string: "-98765432109876543210987654321")!),
    shape("Decimal integer 2^70", Decimal(string: "1180591620717411303424")!),
    shape("Decimal zero and tiny", [Decimal(0), Decimal(string: "0.000000000000000000000001")!]),
    shape("Date", Date(timeIntervalSinceReferenceDate: 123_456.789)),
    shape("Date far", [Date.distantPast, Date.distantFuture]),
    shape("Data empty", Data()),
    shape("Data all bytes", Data(0...255)),
    shape("URL", URL(string: "https://example.com/a%20b?c=d#e")!),
    shape("URL relative", URL(string: "b/c", relativeTo: URL(string: "https://example.com/a/")!)!),
    shape("URLs in an array", [URL(string: "https://example.com/a/b")!, URL(string: "c", relativeTo: URL(string: "file:///d/")!)!]),
    shape("Int?? some(nil)", [Int??.some(nil), .some(.some(1)), .none]),
    shape("optional fields absent", [PTodo(id: 1, title: "a", done: false, note: nil), PTodo(id: 2, title: "b", done: true, note: "n")]),
    shape("array with nils", [1, nil, 3] as [Int?]),
    shape("String?? nested", ["a": String??.some(.some("x")), "b": .some(nil)]),
    shape("Int keys", [-1: "minus one", 0: "zero", 42: "forty-two"]),
    shape("String keys", ["1": 1, "": 2, "a b": 3, "ünï": 4, "\u{1F600}": 5]),
    shape("nested dictionaries", ["a": ["b": ["c": 1]], "d": [:]]),
    shape("Int8 keys as an array", [Int8(1): true, Int8(-2): false]),
    shape("Bool keys as an array", [true: 1]),
    shape("enum without payload", PShape.point),
    shape("enum with labelled payload", PShape.rectangle(width: 2, height: 3)),
    shape("enum with unlabelled payload", PShape.labelled("x", 1)),
    shape("indirect enum", PShape.group([.circle(radius: 1.5), .group([.point])])),
    shape("enum with raw values", [PColour.red, .blue]),
    shape("superEncoder class", [PDog(name: "Rex", legs: 4)]),
    shape("superEncoder(forKey:) class", [PCat(name: "Tom", lives: 9)]),
    shape("nested containers, 1 level", Written<Nesting<One>>()),
    shape("nested containers, 2 levels", Written<Nesting<Two>>()),
    shape("nested containers, 3 levels", Written<Nesting<Three>>()),
    shape("nested containers, 4 levels", Written<Nesting<Four>>()),
    shape("nested containers, 5 levels", Written<Nesting<Five>>()),
    shape("key written twice", Written<KeyTwice>()),
    shape("keyed container reopened", Written<ReopenedKeyed>()),
    shape("unkeyed container reopened", Written<ReopenedUnkeyed>()),
    shape("object value, then a container", Written<ObjectThenContainer>()),
    shape("array value, then a container", Written<ArrayThenContainer>()),
    shape("container, then a value", Written<ContainerThenValue>()),
    shape("top container asked twice", Written<TopContainerTwice>()),
    shape("superEncoder twice", Written<SuperTwice>()),
    shape("superEncoder(forKey:) twice", Written<SuperForKeyTwice>()),
    shape("nil after a value", Written<NilAfterValue>()),
    shape("canonically equal keys", Written<EquivalentKeys>()),
    shape("many keys rewritten", Written<ManyKeysRewritten>()),
    shape("objects written in turns", Written<InterleavedObjects>()),
    // Nested: at the top level Foundation refuses a value that writes nothing, where the
    // snapshot and the json-c bridge write `{}` (their documented rule).
    shape("a value that writes nothing", [Written<Nothing>()]),
    shape("deep nesting, 120 levels of objects", PDeep.chain(120)),
    shape("large array of integers", Array(0..<100_000)),
    shape("large array of structs", (0..<10_000).map { PTodo(id: $0, title: "todo \($0)", done: $0 % 2 == 0, note: nil) }),
    shape("large dictionary", Dictionary(uniqueKeysWithValues: (0..<2_000).map { ("key \($0)", $0) })),
    // Keys the json-c bridge looks up by Swift string equality (a `K`, non-ASCII): still one
    // lookup each, not a scan of the object per key.
    shape("large dictionary of keys with K and non-ASCII", Dictionary(uniqueKeysWithValues:
        (0..<3_000).flatMap { [("Key \($0)", $0), ("ключ \($0)", -$0), ("K\u{212A}\($0)", $0)] })),
    shape("empty struct array", [PDeep]()),
    shape("empty containers", PDeep(children: [PDeep(children: [])])),
    shape("unicode strings", ["", "\u{0}", "\u{1F600}\u{1F469}\u{200D}\u{1F4BB}", "e\u{301}", "\u{FFFF}", "\"\\/\n\t"]),
    shape("Set", Set([3, 1, 2])),
    shape("Bool", [true, false]),
]

// MARK: - Random writers

/// One step of a custom `encode(to:)` into a keyed container.
indirect enum PWrite: Sendable {
    case value(String, Int)
    case null(String)
    case object(String, [PWrite])
    case array(String, [Int])
}

/// A value whose `encode(to:)` runs a random program of keyed writes: keys written again,
/// containers reopened, values replaced, with keys drawn from a small pool (canonically equal
/// spellings among them). Read back as the JSON it made.
struct PRandomWriter: Codable, Equatable, Sendable {
    var program: [PWrite] = []
    var json: JSONValue = .null

    init(program: [PWrite]) { self.program = program }
    init(from decoder: any Decoder) throws { json = try JSONValue(from: decoder) }
    static func == (a: Self, b: Self) -> Bool { a.json == b.json }

    /// Runs the program; a copy read back (which has no program) writes the JSON it read, so
    /// that the store's own first copy of its state keeps what the program made.
    func encode(to encoder: any Encoder) throws {
        if program.isEmpty && json != .null { return try json.encode(to: encoder) }
        var top = encoder.container(keyedBy: PKey.self)
        try Self.run(program, &top)
    }

    static func run(_ program: [PWrite], _ c: inout KeyedEncodingContainer<PKey>) throws {
        for step in program {
            switch step {
            case .value(let key, let n): try c.encode(n, forKey: PKey(key))
            case .null(let key): try c.encodeNil(forKey: PKey(key))
            case .object(let key, let inner):
                var nested = c.nestedContainer(keyedBy: PKey.self, forKey: PKey(key))
                try run(inner, &nested)
            case .array(let key, let numbers):
                var nested = c.nestedUnkeyedContainer(forKey: PKey(key))
                for n in numbers { try nested.encode(n) }
            }
        }
    }

    /// What a key holds so far, so that the program never asks Foundation for what it traps on
    /// (a keyed container over an array or a scalar, an unkeyed one over an object or a scalar).
    indirect enum Held { case scalar, array, object([String: Held]) }

    static func program(_ random: inout PSplitMix, depth: Int, steps: Int, held: inout [String: Held]) -> [PWrite] {
        let pool = ["a", "b", "c", "K", "\u{212A}", "\u{E9}", "e\u{301}"] + (0..<40).map { "k\($0)" }
        var program: [PWrite] = []
        for _ in 0..<steps {
            let key = pool[Int(random.next() % UInt64(depth == 0 ? pool.count : 9))]
            switch random.next() % 6 {
            case 0, 1:
                let n = Int(random.next() % 1000)
                program.append(.value(key, n))
                held[key] = .scalar
            case 2:
                program.append(.null(key))
                held[key] = .scalar
            case 3 where depth < 4, 4 where depth < 4:
                var inner: [String: Held]
                switch held[key] {
                case nil: inner = [:]
                case .object(let existing): inner = existing
                default: continue
                }
                let steps = Int(random.next() % 6)
                program.append(.object(key, Self.program(&random, depth: depth + 1, steps: steps, held: &inner)))
                held[key] = .object(inner)
            default:
                switch held[key] {
                case nil, .array: break
                default: continue
                }
                program.append(.array(key, (0..<Int(random.next() % 3)).map { _ in Int(random.next() % 10) }))
                held[key] = .array
            }
        }
        return program
    }
}

/// A small deterministic generator (SplitMix64), so that a failing program can be replayed.
struct PSplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct CodableParityRandomTests {
    @Test(arguments: 0..<40)
    func randomWritersAsFoundation(_ seed: Int) {
        var random = PSplitMix(state: UInt64(seed) &* 7919)
        var values: [PRandomWriter] = []
        for _ in 0..<5 {
            var held: [String: PRandomWriter.Held] = [:]
            let steps = 1 + Int(random.next() % 120)
            values.append(PRandomWriter(program: PRandomWriter.program(&random, depth: 0, steps: steps, held: &held)))
        }
        let differences = shape("random writers, seed \(seed)", values).differences(CodableParityTests.folder)
        #expect(differences.isEmpty, "seed \(seed): \(differences.joined(separator: "; "))")
    }
}
