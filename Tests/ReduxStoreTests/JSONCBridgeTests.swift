// Tests of the json-c bridge: JSONCEncoder and JSONCDecoder.
import CJSONC
import FoundationEssentials
import Testing
@_spi(Bindings) @testable import ReduxStore

// MARK: - Helpers

/// Encodes to compact JSON text through a json-c tree.
private func text<T: Encodable>(_ value: T, _ encoder: JSONCEncoder = JSONCEncoder()) throws(StoreError) -> String {
    try encoder.encodeToJSONString(value)
}

/// Decodes from JSON text through a json-c tree.
private func decode<T: Decodable>(
    _ type: T.Type, _ json: String, _ decoder: JSONCDecoder = JSONCDecoder()
) throws(StoreError) -> T {
    try decoder.decode(type, fromJSONString: json)
}

/// The error decoding `json` as `T` throws, or `nil`.
private func decodeError<T: Decodable>(
    _ type: T.Type, _ json: String, _ decoder: JSONCDecoder = JSONCDecoder()
) -> StoreError? {
    do { _ = try decoder.decode(type, fromJSONString: json); return nil } catch { return error }
}

/// The error encoding `value` throws, or `nil`.
private func encodeError<T: Encodable>(_ value: T, _ encoder: JSONCEncoder = JSONCEncoder()) -> StoreError? {
    do {
        let tree = try encoder.encode(value)
        json_object_put(tree)
        return nil
    } catch { return error }
}

/// Encodes `value` to a tree, decodes the tree back, and frees it; also checks the tree is still
/// exactly once referenced (the decoder took no reference and put none).
private func treeRoundTrip<T: Codable>(
    _ value: T, _ encoder: JSONCEncoder = JSONCEncoder(), _ decoder: JSONCDecoder = JSONCDecoder()
) throws(StoreError) -> T {
    let tree = try encoder.encode(value)
    var freed = true
    defer { if !freed { json_object_put(tree) } }
    freed = false
    let back = try decoder.decode(T.self, from: tree)
    if let tree {
        freed = true
        #expect(json_object_put(tree) == 1, "the tree should be freed by its one owner")
    }
    return back
}

/// One sample value for the round-trip table: its expected compact text, and a check that both
/// a tree round trip and a text round trip give back an equal value.
struct JBSample: Sendable, CustomTestStringConvertible {
    let name: String
    let expected: String
    let run: @Sendable () throws -> (text: String, treeEqual: Bool, textEqual: Bool)
    var testDescription: String { name }

    static func of<T: Codable & Equatable & Sendable>(_ name: String, _ value: T, _ expected: String) -> JBSample {
        JBSample(name: name, expected: expected) {
            let encoded = try text(value)
            let viaTree = try treeRoundTrip(value)
            let viaText = try decode(T.self, encoded)
            return (encoded, viaTree == value, viaText == value)
        }
    }
}

// MARK: - Types with every shape

struct JBItem: Codable, Equatable, Sendable {
    var title: String
}

struct JBInbox: Codable, Equatable, Sendable {
    var items: [JBItem]
}

struct JBScalars: Codable, Equatable, Sendable {
    var b: Bool
    var s: String
    var d: Double
    var f: Float
    var i: Int
    var u8: UInt8
}

enum JBShape: Codable, Equatable, Sendable {
    case point
    case circle(radius: Double)
    case labeled(String, Int)
}

struct JBOptionals: Codable, Equatable, Sendable {
    var a: Int?
    var b: Int??
    var c: [String?]
}

/// Written by hand with nested keyed and unkeyed containers.
struct JBManual: Codable, Equatable, Sendable {
    var name: String
    var x: Int
    var y: Int
    var tags: [String]

    enum Keys: String, CodingKey { case name, position, tags }
    enum PositionKeys: String, CodingKey { case x, y }

    init(name: String, x: Int, y: Int, tags: [String]) {
        (self.name, self.x, self.y, self.tags) = (name, x, y, tags)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(name, forKey: .name)
        var position = c.nestedContainer(keyedBy: PositionKeys.self, forKey: .position)
        try position.encode(x, forKey: .x)
        try position.encode(y, forKey: .y)
        var tagList = c.nestedUnkeyedContainer(forKey: .tags)
        for tag in tags {
            var pair = tagList.nestedUnkeyedContainer()
            try pair.encode(tag)
            var meta = tagList.nestedContainer(keyedBy: PositionKeys.self)
            try meta.encode(tag.count, forKey: .x)
        }
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        name = try c.decode(String.self, forKey: .name)
        let position = try c.nestedContainer(keyedBy: PositionKeys.self, forKey: .position)
        x = try position.decode(Int.self, forKey: .x)
        y = try position.decode(Int.self, forKey: .y)
        var tagList = try c.nestedUnkeyedContainer(forKey: .tags)
        tags = []
        while !tagList.isAtEnd {
            var pair = try tagList.nestedUnkeyedContainer()
            tags.append(try pair.decode(String.self))
            let meta = try tagList.nestedContainer(keyedBy: PositionKeys.self)
            _ = try meta.decode(Int.self, forKey: .x)
        }
    }
}

/// A wrapper that encodes as its single value.
struct JBIdentifier: Codable, Equatable, Sendable {
    var raw: String
    init(_ raw: String) { self.raw = raw }
    init(from decoder: any Decoder) throws { raw = try decoder.singleValueContainer().decode(String.self) }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(raw)
    }
}

/// Encodes nothing at all.
struct JBNothing: Codable, Equatable, Sendable {
    init() {}
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {}
}

class JBAnimal: Codable, @unchecked Sendable {
    var legs: Int
    init(legs: Int) { self.legs = legs }
}

final class JBDog: JBAnimal, @unchecked Sendable, Equatable {
    var name: String
    enum Keys: String, CodingKey { case name, base }
    init(legs: Int, name: String) { self.name = name; super.init(legs: legs) }
    required init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        name = try c.decode(String.self, forKey: .name)
        try super.init(from: c.superDecoder())
    }
    override func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(name, forKey: .name)
        try super.encode(to: c.superEncoder())
    }
    static func == (a: JBDog, b: JBDog) -> Bool { a.legs == b.legs && a.name == b.name }
}

/// Uses `superEncoder(forKey:)` for its base class.
final class JBCat: JBAnimal, @unchecked Sendable, Equatable {
    var lives: Int
    enum Keys: String, CodingKey { case lives, base }
    init(legs: Int, lives: Int) { self.lives = lives; super.init(legs: legs) }
    required init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        lives = try c.decode(Int.self, forKey: .lives)
        try super.init(from: c.superDecoder(forKey: .base))
    }
    override func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(lives, forKey: .lives)
        try super.encode(to: c.superEncoder(forKey: .base))
    }
    static func == (a: JBCat, b: JBCat) -> Bool { a.legs == b.legs && a.lives == b.lives }
}

/// Uses `superEncoder()` of an unkeyed container: `[tag, <super>, tail]`.
final class JBBird: JBAnimal, @unchecked Sendable, Equatable {
    var tag: String
    init(legs: Int, tag: String) { self.tag = tag; super.init(legs: legs) }
    required init(from decoder: any Decoder) throws {
        var c = try decoder.unkeyedContainer()
        tag = try c.decode(String.self)
        try super.init(from: c.superDecoder())
        _ = try c.decode(String.self)
    }
    override func encode(to encoder: any Encoder) throws {
        var c = encoder.unkeyedContainer()
        try c.encode(tag)
        try super.encode(to: c.superEncoder())
        try c.encode("tail")
    }
    static func == (a: JBBird, b: JBBird) -> Bool { a.legs == b.legs && a.tag == b.tag }
}

/// A super encoder given a single value rather than a container.
struct JBSingleSuper: Codable, Equatable, Sendable {
    var value: Int
    enum Keys: CodingKey { case other }
    init(value: Int) { self.value = value }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        var single = c.superEncoder().singleValueContainer()
        try single.encode(value)
    }
    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        value = try c.superDecoder().singleValueContainer().decode(Int.self)
    }
}

/// `n` arrays inside each other: `[[[]]]` for 3.
struct JBNest: Codable, Equatable, Sendable {
    var depth: Int
    init(depth: Int) { self.depth = depth }
    func encode(to encoder: any Encoder) throws {
        var c = encoder.unkeyedContainer()
        if depth > 1 { try c.encode(JBNest(depth: depth - 1)) }
    }
    init(from decoder: any Decoder) throws {
        var c = try decoder.unkeyedContainer()
        depth = c.isAtEnd ? 1 : try c.decode(JBNest.self).depth + 1
    }
}

// MARK: - Round trips

@Suite("json-c bridge: round trips of every shape")
struct JSONCRoundTripTests {
    static let samples: [JBSample] = [
        .of("Int", 42, "42"),
        .of("negative Int", -7, "-7"),
        .of("String", "héllo \"q\" / 😀", #""héllo \"q\" / 😀""#),
        .of("String with NUL", "a\u{0}b", #""a\u0000b""#),
        .of("empty String", "", #""""#),
        .of("Bool", true, "true"),
        .of("Double", 0.1, "0.1"),
        .of("Double integral", 3.0, "3.0"),
        .of("Double exponent", 1e-5, "1e-05"),
        .of("Float", Float(0.1), "0.1"),
        .of("top-level nil", Int?.none, "null"),
        .of("top-level some", Int?.some(5), "5"),
        .of("scalars", JBScalars(b: false, s: "x", d: -2.5, f: 1.5, i: 9, u8: 255),
            #"{"b":false,"s":"x","d":-2.5,"f":1.5,"i":9,"u8":255}"#),
        .of("nested keyed and unkeyed", JBInbox(items: [JBItem(title: "a"), JBItem(title: "b")]),
            #"{"items":[{"title":"a"},{"title":"b"}]}"#),
        .of("empty array", [Int](), "[]"),
        .of("nested arrays", [[1, 2], [], [3]], "[[1,2],[],[3]]"),
        .of("array of optionals", [1, nil, 3], "[1,null,3]"),
        .of("[String: Int]", ["one": 1], #"{"one":1}"#),
        .of("[Int: String]", [7: "seven"], #"{"7":"seven"}"#),
        .of("[String: [Int: Bool]]", ["m": [-1: true]], #"{"m":{"-1":true}}"#),
        .of("enum without payload", JBShape.point, #"{"point":{}}"#),
        .of("enum with labeled payload", JBShape.circle(radius: 2), #"{"circle":{"radius":2.0}}"#),
        .of("enum with unlabeled payload", JBShape.labeled("x", 1), #"{"labeled":{"_0":"x","_1":1}}"#),
        .of("optionals all nil", JBOptionals(a: nil, b: nil, c: []), #"{"c":[]}"#),
        .of("optionals set", JBOptionals(a: 1, b: .some(2), c: ["x", nil]), #"{"a":1,"b":2,"c":["x",null]}"#),
        .of("manual nested containers", JBManual(name: "n", x: 1, y: 2, tags: ["ab"]),
            #"{"name":"n","position":{"x":1,"y":2},"tags":[["ab"],{"x":2}]}"#),
        .of("single-value wrapper", [JBIdentifier("a"), JBIdentifier("b")], #"["a","b"]"#),
        .of("value that encodes nothing", JBNothing(), "{}"),
        .of("superEncoder()", JBDog(legs: 4, name: "Rex"), #"{"name":"Rex","super":{"legs":4}}"#),
        .of("superEncoder(forKey:)", JBCat(legs: 4, lives: 9), #"{"lives":9,"base":{"legs":4}}"#),
        .of("unkeyed superEncoder()", JBBird(legs: 2, tag: "t"), #"["t",{"legs":2},"tail"]"#),
        .of("superEncoder() with a single value", JBSingleSuper(value: 5), #"{"super":5}"#),
        .of("URL", URL(string: "https://example.com/a?b=c")!, #""https://example.com/a?b=c""#),
        .of("Decimal", Decimal(string: "3.14")!, "3.14"),
        .of("negative Decimal integer", Decimal(-12), "-12"),
        .of("nest of 3", JBNest(depth: 3), "[[[]]]"),
    ]

    @Test(arguments: samples)
    func roundTrip(_ sample: JBSample) throws {
        let result = try sample.run()
        #expect(result.text == sample.expected)
        #expect(result.treeEqual)
        #expect(result.textEqual)
    }

    @Test func dictionariesWithManyKeys() throws {
        let strings = ["a": 1, "b": 2, "c": 3]
        #expect(try treeRoundTrip(strings) == ["a": 1, "b": 2, "c": 3])
        let ints = [1: "x", -2: "y", 300: "z"]
        #expect(try treeRoundTrip(ints) == [1: "x", -2: "y", 300: "z"])
        #expect(try decode([Int: String].self, #"{"1":"a","2":"b"}"#) == [1: "a", 2: "b"])
    }

    @Test func prettyText() throws {
        let pretty = try JSONCEncoder().encodeToJSONString(JBInbox(items: [JBItem(title: "a/b")]), pretty: true)
        #expect(pretty == """
            {
              "items": [
                {
                  "title": "a/b"
                }
              ]
            }
            """)
    }

    @Test func treeNodesHaveJSONCTypes() throws {
        let encoder = JSONCEncoder()
        #expect(try encoder.encode(Int?.none) == nil)
        let big = try #require(try encoder.encode(UInt64.max))
        defer { json_object_put(big) }
        #expect(json_object_get_type(big) == json_type_int)
        #expect(json_object_get_uint64(big) == 18446744073709551615)
        let small = try #require(try encoder.encode(Int64.min))
        defer { json_object_put(small) }
        #expect(json_object_get_int64(small) == -9223372036854775808)
        let double = try #require(try encoder.encode(2.5))
        defer { json_object_put(double) }
        #expect(json_object_get_type(double) == json_type_double)
        #expect(json_object_get_double(double) == 2.5)
    }

    @Test func decodesTreesBuiltInC() throws {
        let object = json_object_new_object()
        defer { json_object_put(object) }
        let items = json_object_new_array()
        let item = json_object_new_object()
        json_object_object_add(item, "title", json_object_new_string("from C"))
        json_object_array_add(items, item)
        json_object_object_add(object, "items", items)
        #expect(try JSONCDecoder().decode(JBInbox.self, from: object) == JBInbox(items: [JBItem(title: "from C")]))
        // Decoding twice reads the same, untouched tree.
        #expect(try JSONCDecoder().decode(JBInbox.self, from: object) == JBInbox(items: [JBItem(title: "from C")]))
        #expect(try JSONCDecoder().decode(Int?.self, from: nil) == nil)
    }
}

// MARK: - Integers

protocol JBTestInteger: FixedWidthInteger, Codable, Sendable {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws
    func encode(in c: inout any UnkeyedEncodingContainer) throws
    func encode(in c: inout any SingleValueEncodingContainer) throws
}

enum JBProbeKey: CodingKey { case v }

/// Where a probed value sits: each calls the containers' concrete (non-generic) methods.
enum JBPlace: String, Sendable, CaseIterable {
    case single, keyed, unkeyed, array

    /// Wraps a JSON value for this place.
    func wrap(_ json: String) -> String {
        switch self {
        case .single: json
        case .keyed: #"{"v":\#(json)}"#
        case .unkeyed, .array: "[\(json)]"
        }
    }

    /// The coding path messages start with.
    var prefix: String {
        switch self {
        case .single: ""
        case .keyed: "v: "
        case .unkeyed, .array: "[0]: "
        }
    }
}

struct JBProbe<T: JBTestInteger>: Codable {
    var value: T
    var place: JBPlace
    init(_ value: T, _ place: JBPlace) { (self.value, self.place) = (value, place) }

    init(from decoder: any Decoder) throws {
        place = .single
        if let keyed = try? decoder.container(keyedBy: JBProbeKey.self) {
            place = .keyed
            value = try T.decode(in: keyed)
        } else if var unkeyed = try? decoder.unkeyedContainer() {
            place = .unkeyed
            value = try T.decode(in: &unkeyed)
        } else {
            value = try T.decode(in: decoder.singleValueContainer())
        }
    }

    func encode(to encoder: any Encoder) throws {
        switch place {
        case .keyed:
            var c = encoder.container(keyedBy: JBProbeKey.self)
            try value.encode(in: &c)
        case .unkeyed:
            var c = encoder.unkeyedContainer()
            try value.encode(in: &c)
        case .single:
            var c = encoder.singleValueContainer()
            try value.encode(in: &c)
        case .array:
            try [value].encode(to: encoder)
        }
    }
}

/// Decodes `json` as integer type `type` at `place`: the value as text, or the error message.
private func decodeInteger(_ type: String, _ json: String, _ place: JBPlace) -> String {
    func run<T: JBTestInteger>(_: T.Type) -> String {
        do {
            switch place {
            case .single: return String(try decode(T.self, json))
            case .array: return String(try decode([T].self, place.wrap(json))[0])
            case .keyed, .unkeyed: break
            }
            return String(try decode(JBProbe<T>.self, place.wrap(json)).value)
        } catch {
            return error.message
        }
    }
    switch type {
    case "Int": return run(Int.self)
    case "Int8": return run(Int8.self)
    case "Int16": return run(Int16.self)
    case "Int32": return run(Int32.self)
    case "Int64": return run(Int64.self)
    case "UInt": return run(UInt.self)
    case "UInt8": return run(UInt8.self)
    case "UInt16": return run(UInt16.self)
    case "UInt32": return run(UInt32.self)
    case "UInt64": return run(UInt64.self)
    default: return "unknown type"
    }
}

/// Encodes `value` (given as text) as integer type `type` at `place`, returning the JSON text.
private func encodeInteger(_ type: String, _ value: String, _ place: JBPlace) -> String {
    func run<T: JBTestInteger>(_: T.Type) -> String {
        do { return try text(JBProbe(T(value)!, place)) } catch { return error.message }
    }
    switch type {
    case "Int": return run(Int.self)
    case "Int8": return run(Int8.self)
    case "Int16": return run(Int16.self)
    case "Int32": return run(Int32.self)
    case "Int64": return run(Int64.self)
    case "UInt": return run(UInt.self)
    case "UInt8": return run(UInt8.self)
    case "UInt16": return run(UInt16.self)
    case "UInt32": return run(UInt32.self)
    case "UInt64": return run(UInt64.self)
    default: return "unknown type"
    }
}

@Suite("json-c bridge: integers of every width")
struct JSONCIntegerTests {
    /// (type, JSON, expected value or message without the path).
    static let decoding: [(String, String, String)] = [
        ("Int8", "127", "127"), ("Int8", "128", "number 128 does not fit in Int8"),
        ("Int8", "-128", "-128"), ("Int8", "-129", "number -129 does not fit in Int8"),
        ("Int16", "32767", "32767"), ("Int16", "32768", "number 32768 does not fit in Int16"),
        ("Int16", "-32768", "-32768"), ("Int16", "-32769", "number -32769 does not fit in Int16"),
        ("Int32", "2147483647", "2147483647"),
        ("Int32", "2147483648", "number 2147483648 does not fit in Int32"),
        ("Int32", "-2147483648", "-2147483648"),
        ("Int32", "-2147483649", "number -2147483649 does not fit in Int32"),
        ("Int64", "9223372036854775807", "9223372036854775807"),
        ("Int64", "9223372036854775808", "number 9223372036854775808 does not fit in Int64"),
        ("Int64", "-9223372036854775808", "-9223372036854775808"),
        // json-c clamps integer text past Int64.min, so one past is given as a double.
        ("Int64", "-9.3e18", "number -9.3e+18 does not fit in Int64"),
        ("Int", "9223372036854775807", "9223372036854775807"),
        ("Int", "9223372036854775808", "number 9223372036854775808 does not fit in Int"),
        ("Int", "-9223372036854775808", "-9223372036854775808"),
        ("UInt8", "255", "255"), ("UInt8", "256", "number 256 does not fit in UInt8"),
        ("UInt8", "0", "0"), ("UInt8", "-1", "number -1 does not fit in UInt8"),
        ("UInt8", "300", "number 300 does not fit in UInt8"),
        ("UInt16", "65535", "65535"), ("UInt16", "65536", "number 65536 does not fit in UInt16"),
        ("UInt16", "-1", "number -1 does not fit in UInt16"),
        ("UInt32", "4294967295", "4294967295"),
        ("UInt32", "4294967296", "number 4294967296 does not fit in UInt32"),
        ("UInt32", "-1", "number -1 does not fit in UInt32"),
        ("UInt64", "18446744073709551615", "18446744073709551615"),
        // json-c clamps integer text past UInt64.max, so one past is given as a double (2^64).
        ("UInt64", "1.8446744073709552e19", "number 1.8446744073709552e+19 does not fit in UInt64"),
        ("UInt64", "-1", "number -1 does not fit in UInt64"),
        ("UInt", "18446744073709551615", "18446744073709551615"),
        ("UInt", "-1", "number -1 does not fit in UInt"),
        // Doubles: integral ones decode, fractional ones do not.
        ("Int", "3.0", "3"), ("Int", "1e2", "100"), ("Int8", "-128.0", "-128"),
        ("Int32", "3.5", "expected Int32, found 3.5"),
        ("UInt", "-0.5", "expected UInt, found -0.5"),
        ("Int8", "300.0", "number 300.0 does not fit in Int8"),
        // Other kinds.
        ("Int", "true", "expected Int, found boolean"),
        ("Int16", #""12""#, "expected Int16, found string"),
        ("UInt64", "null", "expected UInt64, found null"),
        ("Int", "{}", "expected Int, found object"),
    ]

    @Test(arguments: decoding, JBPlace.allCases)
    func decodes(_ row: (String, String, String), _ place: JBPlace) {
        let (type, json, expected) = row
        let isValue = expected.first.map { $0.isNumber || $0 == "-" } ?? false
        #expect(decodeInteger(type, json, place) == (isValue ? expected : place.prefix + expected))
    }

    /// (type, value, JSON text).
    static let encoding: [(String, String, String)] = [
        ("Int", "-9223372036854775808", "-9223372036854775808"),
        ("Int", "9223372036854775807", "9223372036854775807"),
        ("Int8", "-128", "-128"), ("Int8", "127", "127"),
        ("Int16", "-32768", "-32768"), ("Int16", "32767", "32767"),
        ("Int32", "-2147483648", "-2147483648"), ("Int32", "2147483647", "2147483647"),
        ("Int64", "-9223372036854775808", "-9223372036854775808"),
        ("Int64", "9223372036854775807", "9223372036854775807"),
        ("UInt", "18446744073709551615", "18446744073709551615"),
        ("UInt8", "255", "255"), ("UInt16", "65535", "65535"), ("UInt32", "4294967295", "4294967295"),
        ("UInt64", "0", "0"), ("UInt64", "18446744073709551615", "18446744073709551615"),
    ]

    @Test(arguments: encoding, JBPlace.allCases)
    func encodesAndDecodesBack(_ row: (String, String, String), _ place: JBPlace) {
        let (type, value, json) = row
        #expect(encodeInteger(type, value, place) == place.wrap(json))
        #expect(decodeInteger(type, json, place) == value)
    }
}

// MARK: - Floating point

@Suite("json-c bridge: Double and Float")
struct JSONCFloatTests {
    static let convert = (plus: "+Inf", minus: "-Inf", nan: "NaN")

    static var convertingEncoder: JSONCEncoder {
        var encoder = JSONCEncoder()
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: convert.plus, negativeInfinity: convert.minus, nan: convert.nan)
        return encoder
    }

    static var convertingDecoder: JSONCDecoder {
        var decoder = JSONCDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: convert.plus, negativeInfinity: convert.minus, nan: convert.nan)
        return decoder
    }

    /// (JSON, Float decoded as text or the message).
    static let floats: [(String, String)] = [
        ("3.4028234663852886e38", "3.4028235e+38"),
        ("-3.4028234663852886e38", "-3.4028235e+38"),
        ("1e39", "number 1e39 does not fit in Float"),
        ("-1e39", "number -1e39 does not fit in Float"),
        ("16777217", "16777216.0"),
        // Underflow to zero is refused, as Foundation's JSONDecoder refuses it; the smallest
        // subnormal is not.
        ("1e-50", "number 1e-50 does not fit in Float"),
        ("1e-45", "1e-45"),
        ("0.0", "0.0"),
        ("0.1", "0.1"),
        (#""x""#, "expected Float, found string"),
    ]

    @Test(arguments: floats)
    func floatRange(_ json: String, _ expected: String) {
        do { #expect(try decode(Float.self, json).description == expected) } catch {
            #expect(error.message == expected)
        }
    }

    @Test func integersDecodeIntoDouble() throws {
        #expect(try decode(Double.self, "7") == 7.0)
        #expect(try decode(Double.self, "-7") == -7.0)
        #expect(try decode(Double.self, "18446744073709551615") == 18446744073709551615.0)
        #expect(try decode([Double].self, "[1,2.5]") == [1.0, 2.5])
    }

    /// (value, text under the converting strategy, message under the throwing one).
    static let nonFinite: [(Double, String, String)] = [
        (.infinity, #"{"d":"+Inf","f":"+Inf"}"#, "d: non-finite number inf is not valid JSON"),
        (-.infinity, #"{"d":"-Inf","f":"-Inf"}"#, "d: non-finite number -inf is not valid JSON"),
        (.nan, #"{"d":"NaN","f":"NaN"}"#, "d: non-finite number nan is not valid JSON"),
    ]

    struct Pair: Codable { var d: Double; var f: Float }

    @Test(arguments: nonFinite)
    func nonFiniteStrategies(_ value: Double, _ converted: String, _ refused: String) throws {
        let pair = Pair(d: value, f: Float(value))
        #expect(encodeError(pair)?.message == refused)
        #expect(try text(pair, Self.convertingEncoder) == converted)

        let back = try decode(Pair.self, converted, Self.convertingDecoder)
        #expect(back.d.isNaN == value.isNaN && (value.isNaN || back.d == value))
        #expect(back.f.isNaN == value.isNaN && (value.isNaN || back.f == Float(value)))
        #expect(decodeError(Pair.self, converted)?.message == "d: expected Double, found string")
    }

    @Test func nonFiniteInUnkeyedAndSingleValue() throws {
        #expect(encodeError([1.0, .infinity])?.message == "[1]: non-finite number inf is not valid JSON")
        #expect(encodeError(Float.nan)?.message == "non-finite number nan is not valid JSON")
        #expect(try text([Float.infinity], Self.convertingEncoder) == #"["+Inf"]"#)
        #expect(try decode([Float].self, #"["-Inf"]"#, Self.convertingDecoder) == [-.infinity])
    }

    @Test func nonFiniteNumbersJSONCParses() throws {
        // json-c's tokener would read NaN as a number: the text is refused before it parses.
        // Out-of-range numbers it reads as non-finite doubles, which the decoder refuses.
        #expect(decodeError(Double.self, "NaN")?.kind == .parse)
        #expect(decodeError(Double.self, "NaN")?.message == "JSON text does not parse at byte 0: NaN and Infinity are not JSON numbers")
        #expect(decodeError(Double.self, "[-Infinity]")?.message == "JSON text does not parse at byte 2: NaN and Infinity are not JSON numbers")
        #expect(decodeError(String.self, "\"a\u{0A}b\"")?.message == "JSON text does not parse at byte 2: a control character inside a string must be escaped")
        #expect(try decode(String.self, #""N\"I\\""#) == "N\"I\\")
        // Escapes: a surrogate pair is one character; half of one is refused, not made U+FFFD.
        #expect(try decode(String.self, #""\ud83d\ude00 \\ud800""#) == "\u{1F600} \\ud800")
        #expect(decodeError(String.self, #""\udc00""#)?.message == #"JSON text does not parse at byte 1: \uDC00 is half of a surrogate pair, not a character"#)
        #expect(decodeError(String.self, #""\uD800x""#)?.kind == .parse)
        #expect(decodeError(String.self, #""\ud800\ud800""#)?.kind == .parse)
        #expect(decodeError([Double].self, "[1e400]")?.message == "[0]: non-finite number inf is not valid JSON")
        #expect(try decode(Double.self, "1e400", Self.convertingDecoder) == .infinity)
    }

    /// The scan before json-c reads strings eight bytes at a time: whatever ends a run of plain
    /// bytes (a quote, a backslash, a control character), and whatever follows it, is found at
    /// every offset from the start of the string and of the text's words, and so are the bytes
    /// after the last whole word.
    @Test func stringsScannedAtEveryOffset() throws {
        for before in 0..<20 {
            let plain = String(repeating: "a", count: before)
            for after in [0, 1, 7, 8, 9, 17] {
                let tail = String(repeating: "b", count: after)
                #expect(try decode(String.self, "\"\(plain)\\\"\(tail)\"") == plain + "\"" + tail)
                #expect(try decode(String.self, "\"\(plain)\\u00e9\\n\(tail)\"") == plain + "\u{E9}\n" + tail)
                #expect(try decode(String.self, "\"\(plain)é😀\(tail)\"") == plain + "é😀" + tail)
                #expect(try decode([String].self, "[\"\(plain)\", \"\(tail)\"]") == [plain, tail])
                #expect(decodeError(String.self, "\"\(plain)\u{1F}\(tail)\"")?.message
                        == "JSON text does not parse at byte \(1 + before): a control character inside a string must be escaped")
                #expect(decodeError(String.self, "\"\(plain)\\udbff\(tail)\"")?.message
                        == #"JSON text does not parse at byte \#(1 + before): \uDBFF is half of a surrogate pair, not a character"#)
                #expect(decodeError(String.self, "\"\(plain)\(tail)")?.kind == .parse)
                // Bytes that are not UTF-8 (an overlong NUL), wherever they fall in a word.
                let bytes = [UInt8(ascii: "\"")] + Array(plain.utf8) + [0xC0, 0x80] + Array(tail.utf8) + [UInt8(ascii: "\"")]
                let refused = bytes.withUnsafeBufferPointer { buffer in
                    Result { () throws(StoreError) in try JSONC.rejectWhatJSONCLetsThrough(buffer) }
                }
                #expect(throws: StoreError.self) { try refused.get() }
            }
        }
    }
}

// MARK: - Dates and data

@Suite("json-c bridge: Date and Data strategies")
struct JSONCDateDataTests {
    static let date = Date(timeIntervalSince1970: 1_700_000_000)

    /// (strategy name, text).
    static let dates: [(String, String)] = [
        ("deferredToDate", "721692800.0"),
        ("secondsSince1970", "1700000000.0"),
        ("millisecondsSince1970", "1700000000000.0"),
        ("iso8601", #""2023-11-14T22:13:20Z""#),
    ]

    static func coders(_ name: String) -> (JSONCEncoder, JSONCDecoder) {
        var encoder = JSONCEncoder()
        var decoder = JSONCDecoder()
        switch name {
        case "secondsSince1970": (encoder.dateEncodingStrategy, decoder.dateDecodingStrategy) = (.secondsSince1970, .secondsSince1970)
        case "millisecondsSince1970": (encoder.dateEncodingStrategy, decoder.dateDecodingStrategy) = (.millisecondsSince1970, .millisecondsSince1970)
        case "iso8601": (encoder.dateEncodingStrategy, decoder.dateDecodingStrategy) = (.iso8601, .iso8601)
        default: break
        }
        return (encoder, decoder)
    }

    @Test(arguments: dates)
    func dateStrategies(_ name: String, _ expected: String) throws {
        let (encoder, decoder) = Self.coders(name)
        #expect(try text(Self.date, encoder) == expected)
        #expect(try decode(Date.self, expected, decoder) == Self.date)
        #expect(try treeRoundTrip([Self.date], encoder, decoder) == [Self.date])
        #expect(try text(["at": Self.date], encoder) == #"{"at":\#(expected)}"#)
    }

    @Test func defaultDateStrategyIsDeferred() throws {
        #expect(try text(Date(timeIntervalSinceReferenceDate: 5)) == "5.0")
    }

    @Test func iso8601Details() throws {
        let (_, decoder) = Self.coders("iso8601")
        #expect(try decode(Date.self, #""2023-11-14T22:13:20.500Z""#, decoder) == Date(timeIntervalSince1970: 1_700_000_000.5))
        #expect(decodeError([Date].self, #"["yesterday"]"#, decoder)?.message == #"[0]: expected an ISO 8601 date, found "yesterday""#)
        #expect(decodeError(Date.self, "5", decoder)?.message == "expected String, found number")
    }

    /// (strategy, text).
    static let data: [(JSONCEncoder.DataEncodingStrategy, String)] = [
        (.base64, #""AAEC/w==""#),
        (.deferredToData, "[0,1,2,255]"),
    ]

    @Test(arguments: data)
    func dataStrategies(_ strategy: JSONCEncoder.DataEncodingStrategy, _ expected: String) throws {
        var encoder = JSONCEncoder()
        encoder.dataEncodingStrategy = strategy
        var decoder = JSONCDecoder()
        if case .deferredToData = strategy { decoder.dataDecodingStrategy = .deferredToData }
        let bytes = Data([0, 1, 2, 255])
        #expect(try text(bytes, encoder) == expected)
        #expect(try decode(Data.self, expected, decoder) == bytes)
        #expect(try treeRoundTrip(["d": bytes], encoder, decoder) == ["d": bytes])
    }

    @Test func badData() {
        #expect(decodeError(Data.self, #""@@@""#)?.message == "expected Base64 data, found other text")
        #expect(decodeError(Data.self, "[1]")?.message == "expected String, found array")
        var decoder = JSONCDecoder()
        decoder.dataDecodingStrategy = .deferredToData
        #expect(decodeError(Data.self, "[1,256]", decoder)?.message == "[1]: number 256 does not fit in UInt8")
    }
}

// MARK: - JBOptionals, missing keys, nulls

@Suite("json-c bridge: optionals, missing keys and nulls")
struct JSONCOptionalTests {
    struct Required: Codable, Equatable { var title: String }

    /// (JSON, decoded JBOptionals as text or the message).
    static let cases: [(String, String)] = [
        (#"{"c":[]}"#, "a=nil b=nil c=[]"),
        (#"{"a":null,"b":null,"c":[null]}"#, "a=nil b=nil c=[nil]"),
        (#"{"a":1,"b":2,"c":["x"]}"#, "a=1 b=2 c=[x]"),
        (#"{"a":"1","c":[]}"#, "a: expected Int, found string"),
        (#"{"b":true,"c":[]}"#, "b: expected Int, found boolean"),
        (#"{"a":1}"#, "c: key not found"),
        (#"{"c":null}"#, "c: expected array, found null"),
        (#"{"c":[1]}"#, "c[0]: expected String, found number"),
    ]

    @Test(arguments: cases)
    func optionals(_ json: String, _ expected: String) {
        do {
            let value = try decode(JBOptionals.self, json)
            let b = value.b.map { $0.map(String.init) ?? "nil" } ?? "nil"
            let c = value.c.map { $0 ?? "nil" }.joined(separator: ",")
            #expect("a=\(value.a.map(String.init) ?? "nil") b=\(b) c=[\(c)]" == expected)
        } catch {
            #expect(error.message == expected)
        }
    }

    @Test func missingKeyVersusNull() {
        #expect(decodeError(Required.self, "{}")?.message == "title: key not found")
        #expect(decodeError(Required.self, #"{"title":null}"#)?.message == "title: expected String, found null")
        #expect(decodeError(Required.self, "null")?.message == "expected object, found null")
        #expect(decodeError(Required.self, "[]")?.message == "expected object, found array")
    }

    @Test func nestedOptionalsEncode() throws {
        #expect(try text(JBOptionals(a: nil, b: .some(nil), c: [])) == #"{"b":null,"c":[]}"#)
        // JSON has one null: .some(nil) decodes back as nil.
        #expect(try decode(JBOptionals.self, #"{"b":null,"c":[]}"#).b == nil)
        #expect(try text([Int??.some(nil), .some(1)]) == "[null,1]")
    }

    @Test func superDecoderOfMissingKeyReadsNull() throws {
        struct Reader: Decodable {
            var isNull: Bool
            init(from decoder: any Decoder) throws {
                let c = try decoder.container(keyedBy: JBProbeKey.self)
                isNull = try c.superDecoder().singleValueContainer().decodeNil()
            }
        }
        #expect(try decode(Reader.self, "{}").isNull)
        #expect(try decode(Reader.self, #"{"super":1}"#).isNull == false)
    }
}

// MARK: - Errors and paths

@Suite("json-c bridge: errors name the coding path")
struct JSONCErrorTests {
    struct Triple: Decodable {
        init(from decoder: any Decoder) throws {
            var c = try decoder.unkeyedContainer()
            for _ in 0..<3 { _ = try c.decode(Int.self) }
        }
    }

    struct Deep: Codable { var inbox: JBInbox; var tags: [String: [Int]] }

    /// (what, decode, expected message).
    static let cases: [(String, @Sendable () -> StoreError?, String)] = [
        ("the design's example", {
            decodeError(JBInbox.self, #"{"items":[{"title":"a"},{"title":"b"},{"title":"c"},{"title":7}]}"#)
        }, "items[3].title: expected String, found number"),
        ("missing key in an array element", {
            decodeError(JBInbox.self, #"{"items":[{"title":"a"},{}]}"#)
        }, "items[1].title: key not found"),
        ("arrays in arrays", { decodeError([[Int]].self, #"[[1,2],[3,"x"]]"#) }, #"[1][1]: expected Int, found string"#),
        ("dictionary keys", { decodeError([String: [String: Int]].self, #"{"m":{"k":true}}"#) }, "m.k: expected Int, found boolean"),
        ("Int dictionary keys", { decodeError([Int: [Int8]].self, #"{"5":[1,999]}"#) }, "5[1]: number 999 does not fit in Int8"),
        ("non-Int key for an Int dictionary", { decodeError([Int: String].self, #"{"x":"a"}"#) }, "x: Expected Int key but found String key instead."),
        ("deep struct", { decodeError(Deep.self, #"{"inbox":{"items":[]},"tags":{"t":[1,2.5]}}"#) }, "tags.t[1]: expected Int, found 2.5"),
        ("container kind", { decodeError(JBInbox.self, #"{"items":{}}"#) }, "items: expected array, found object"),
        ("top level", { decodeError(String.self, "1") }, "expected String, found number"),
        ("Bool from a number", { decodeError([Bool].self, "[1]") }, "[0]: expected Bool, found number"),
        ("String from a boolean", { decodeError([String: String].self, #"{"a":false}"#) }, "a: expected String, found boolean"),
        ("unkeyed at end", { decodeError([String: Triple].self, #"{"t":[1,2]}"#) }, "t[2]: unkeyed container is at end"),
        ("nested manual containers", {
            decodeError(JBManual.self, #"{"name":"n","position":{"x":1,"y":"2"},"tags":[]}"#)
        }, "position.y: expected Int, found string"),
        ("nested manual unkeyed", {
            decodeError(JBManual.self, #"{"name":"n","position":{"x":1,"y":2},"tags":[["a"],{"x":"no"}]}"#)
        }, "tags[1].x: expected Int, found string"),
        ("enum payload", { decodeError(JBShape.self, #"{"circle":{"radius":"big"}}"#) }, "circle.radius: expected Double, found string"),
        ("decodeIfPresent with a wrong type", { decodeError(JBOptionals.self, #"{"a":[],"c":[]}"#) }, "a: expected Int, found array"),
        ("super decoder", { decodeError(JBDog.self, #"{"name":"R","super":{"legs":"4"}}"#) }, "super.legs: expected Int, found string"),
        ("unkeyed super decoder", { decodeError(JBBird.self, #"["t",{"legs":null},"x"]"#) }, "[1].legs: expected Int, found null"),
        ("URL", { decodeError(URL.self, #""""#) }, #"expected a URL, found """#),
        ("Decimal from a string", { decodeError(Decimal.self, #""1""#) }, "expected Decimal, found string"),
    ]

    @Test(arguments: cases)
    func decodingErrors(_ what: String, _ run: @Sendable () -> StoreError?, _ expected: String) {
        let error = run()
        #expect(error == StoreError(.decode, expected), "\(what)")
    }

    @Test func prefixIsAddedByStoreError() {
        let error = decodeError(JBInbox.self, #"{"items":[{"title":1}]}"#)!
        #expect(StoreError(coding: error, prefix: "payload").message == "payload.items[0].title: expected String, found number")
    }

    struct BadKey: Encodable {
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: AnyCodingKey.self)
            try c.encode(1, forKey: AnyCodingKey(stringValue: "a\u{0}b"))
        }
    }

    struct Misuse: Encodable {
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: JBProbeKey.self)
            try c.encode(1, forKey: .v)
            var u = encoder.unkeyedContainer()
            try u.encode(2)
        }
    }

    struct DoubleSingle: Encodable {
        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            try c.encode(1)
            try c.encode(2)
        }
    }

    @Test func encodingErrors() {
        #expect(encodeError(["k": [BadKey()]]) == StoreError(.encode, "k[0].a\u{0}b: key contains a NUL character"))
        #expect(encodeError([Misuse()]) == StoreError(.encode, "[0]: a unkeyed container was requested where a different value was already encoded"))
        #expect(encodeError(DoubleSingle()) == StoreError(.encode, "a single value was encoded where a value was already encoded"))
        // A failure deep inside frees everything built so far (checked under the sanitizer).
        #expect(encodeError(["a": [["x": 1.0], ["y": .nan]]]) == StoreError(.encode, "a[1].y: non-finite number nan is not valid JSON"))
    }

    /// (JSON text, kind, message).
    static let textErrors: [(String, StoreError.Kind, String)] = [
        ("{", .parse, "JSON text does not parse at byte 1: unexpected end of data"),
        ("[1] x", .parse, "JSON text does not parse at byte 4: unexpected character"),
        ("", .parse, "JSON text does not parse at byte 0: unexpected end of data"),
        (" \n\t", .parse, "JSON text does not parse at byte 3: unexpected end of data"),
        ("[1]\u{0}", .parse, "JSON text does not parse at byte 3: unexpected text after the value"),
        ("1\u{0}2", .parse, "JSON text does not parse at byte 1: unexpected text after the value"),
        ("1 2", .parse, "JSON text does not parse at byte 2: unexpected character"),
        (" true ", .decode, "expected Int, found boolean"),
        (#"{"a":1,}"#, .parse, "JSON text does not parse at byte 7: unexpected character"),
        (#""\#u{FF}""#, .decode, "expected Int, found string"),
        (String(repeating: "[", count: 257) + "1" + String(repeating: "]", count: 257), .limit,
         "JSON text nests deeper than 256 levels"),
        (String(repeating: "[", count: 256) + "1" + String(repeating: "]", count: 256), .decode,
         "expected Int, found array"),
    ]

    @Test(arguments: textErrors)
    func textError(_ json: String, _ kind: StoreError.Kind, _ message: String) {
        let error = decodeError(Int.self, json)
        #expect(error?.kind == kind)
        #expect(error?.message == message)
    }

    /// Text whose value ends at the very end of the input (json-c waits for more after a number).
    @Test(arguments: [("12", 12), (" 12 \n", 12), ("-0", 0), ("[7]", 7)])
    func valueAtTheEnd(_ json: String, _ expected: Int) throws {
        let value = json.hasPrefix("[") ? try decode([Int].self, json)[0] : try decode(Int.self, json)
        #expect(value == expected)
    }

    @Test func textSizeLimit() {
        let json = "\"" + String(repeating: "x", count: StoreLimits.maximumJSONTextSize) + "\""
        #expect(decodeError(String.self, json) == StoreError(.limit, "JSON text of 67108866 bytes is larger than the limit of 67108864 bytes"))
    }
}

// MARK: - Depth limits

@Suite("json-c bridge: nesting depth limit")
struct JSONCDepthTests {
    static func nestedText(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    /// A json-c tree of `depth` arrays inside each other, built without the tokener.
    static func nestedTree(_ depth: Int) -> OpaquePointer {
        var node = json_object_new_array()!
        for _ in 1..<depth {
            let outer = json_object_new_array()!
            json_object_array_add(outer, node)
            node = outer
        }
        return node
    }

    @Test(arguments: [1, 2, 255, 256])
    func withinLimit(_ depth: Int) throws {
        #expect(try decode(JBNest.self, Self.nestedText(depth)).depth == depth)
        #expect(try text(JBNest(depth: depth)) == Self.nestedText(depth))
        #expect(try treeRoundTrip(JBNest(depth: depth)).depth == depth)
    }

    @Test(arguments: [257, 300, 5000])
    func pastLimit(_ depth: Int) {
        #expect(decodeError(JBNest.self, Self.nestedText(depth))?.kind == .limit)
        let tree = Self.nestedTree(depth)
        defer { json_object_put(tree) }
        var error: StoreError?
        do { _ = try JSONCDecoder().decode(JBNest.self, from: tree) } catch let e { error = e }
        #expect(error?.kind == .limit)
        #expect(error?.message.hasSuffix("nesting deeper than 256 levels") == true)
        #expect(encodeError(JBNest(depth: depth))?.kind == .limit)
        #expect(encodeError(JBNest(depth: depth))?.message.hasSuffix("nesting deeper than 256 levels") == true)
    }

    @Test func limitErrorNamesThePath() {
        let error = encodeError(JBNest(depth: 257))
        #expect(error?.message == String(repeating: "[0]", count: 256) + ": nesting deeper than 256 levels")
    }
}
extension Int: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(Int.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(Int.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(Int.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as Int, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as Int) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as Int) }
}
extension Int8: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(Int8.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(Int8.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(Int8.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as Int8, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as Int8) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as Int8) }
}
extension Int16: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(Int16.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(Int16.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(Int16.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as Int16, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as Int16) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as Int16) }
}
extension Int32: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(Int32.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(Int32.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(Int32.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as Int32, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as Int32) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as Int32) }
}
extension Int64: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(Int64.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(Int64.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(Int64.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as Int64, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as Int64) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as Int64) }
}
extension UInt: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(UInt.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(UInt.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(UInt.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as UInt, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as UInt) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as UInt) }
}
extension UInt8: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(UInt8.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(UInt8.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(UInt8.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as UInt8, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as UInt8) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as UInt8) }
}
extension UInt16: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(UInt16.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(UInt16.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(UInt16.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as UInt16, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as UInt16) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as UInt16) }
}
extension UInt32: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(UInt32.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(UInt32.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(UInt32.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as UInt32, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as UInt32) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as UInt32) }
}
extension UInt64: JBTestInteger {
    static func decode(in c: KeyedDecodingContainer<JBProbeKey>) throws -> Self { try c.decode(UInt64.self, forKey: .v) }
    static func decode(in c: inout any UnkeyedDecodingContainer) throws -> Self { try c.decode(UInt64.self) }
    static func decode(in c: any SingleValueDecodingContainer) throws -> Self { try c.decode(UInt64.self) }
    func encode(in c: inout KeyedEncodingContainer<JBProbeKey>) throws { try c.encode(self as UInt64, forKey: .v) }
    func encode(in c: inout any UnkeyedEncodingContainer) throws { try c.encode(self as UInt64) }
    func encode(in c: inout any SingleValueEncodingContainer) throws { try c.encode(self as UInt64) }
}

// MARK: - Failures part-way through

/// Fails part-way through encoding, in a different place for each case, after building some of
/// the tree: the sanitizer run checks that nothing built is leaked.
struct JBFailer: Encodable, Sendable, CustomTestStringConvertible {
    enum JBPlace: String, CaseIterable, Sendable {
        case keyedSuper, unkeyedSuper, nestedKeyed, nestedUnkeyed, singleSuper, afterNested, superMisuse
    }
    let at: JBPlace
    var testDescription: String { at.rawValue }

    private func key(_ name: String) -> AnyCodingKey { AnyCodingKey(stringValue: name) }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: AnyCodingKey.self)
        try c.encode("x", forKey: key("a"))
        switch at {
        case .keyedSuper:
            var sc = c.superEncoder().container(keyedBy: AnyCodingKey.self)
            try sc.encode(1, forKey: key("b"))
            try sc.encode(Double.nan, forKey: key("bad"))
        case .unkeyedSuper:
            var list = c.nestedUnkeyedContainer(forKey: key("list"))
            try list.encode(1)
            var sc = list.superEncoder().unkeyedContainer()
            try sc.encode(2)
            try sc.encode(Double.nan)
        case .nestedKeyed:
            var n = c.nestedContainer(keyedBy: AnyCodingKey.self, forKey: key("n"))
            var m = n.nestedContainer(keyedBy: AnyCodingKey.self, forKey: key("m"))
            try m.encode("y", forKey: key("y"))
            try m.encode(Float.infinity, forKey: key("bad"))
        case .nestedUnkeyed:
            var n = c.nestedUnkeyedContainer(forKey: key("n"))
            var m = n.nestedUnkeyedContainer()
            try m.encode([1, 2])
            try m.encode([Float.infinity])
        case .singleSuper:
            var single = c.superEncoder().singleValueContainer()
            try single.encode([1.0, .nan])
        case .afterNested:
            var n = c.nestedContainer(keyedBy: AnyCodingKey.self, forKey: key("n"))
            try n.encode([1], forKey: key("x"))
            try c.encode(Double.nan, forKey: key("bad"))
        case .superMisuse:
            let sup = c.superEncoder()
            var k = sup.container(keyedBy: AnyCodingKey.self)
            try k.encode(1, forKey: key("one"))
            var u = sup.unkeyedContainer()
            try u.encode(2)
        }
    }
}

@Suite("json-c bridge: failures part-way through free what was built")
struct JSONCPartialFailureTests {
    static let cases: [(JBFailer.JBPlace, String)] = [
        (.keyedSuper, "[0].super.bad: non-finite number nan is not valid JSON"),
        (.unkeyedSuper, "[0].list[1][1]: non-finite number nan is not valid JSON"),
        (.nestedKeyed, "[0].n.m.bad: non-finite number inf is not valid JSON"),
        (.nestedUnkeyed, "[0].n[0][1][0]: non-finite number inf is not valid JSON"),
        (.singleSuper, "[0].super[1]: non-finite number nan is not valid JSON"),
        (.afterNested, "[0].bad: non-finite number nan is not valid JSON"),
        (.superMisuse, "[0].super: a unkeyed container was requested where a different value was already encoded"),
    ]

    @Test(arguments: cases)
    func failsCleanly(_ place: JBFailer.JBPlace, _ message: String) {
        #expect(encodeError([JBFailer(at: place)]) == StoreError(.encode, message))
    }

    struct Replaced: Encodable {
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: AnyCodingKey.self)
            var nested = c.nestedContainer(keyedBy: AnyCodingKey.self, forKey: AnyCodingKey(stringValue: "n"))
            try c.encode(1, forKey: AnyCodingKey(stringValue: "n"))
            // The nested object was replaced and is no longer in the tree; writing into it is
            // harmless (it is kept alive until the encode call ends) and has no effect.
            try nested.encode(2, forKey: AnyCodingKey(stringValue: "x"))
        }
    }

    @Test func writingIntoAReplacedNestedContainerIsSafe() throws {
        #expect(try text(Replaced()) == #"{"n":1}"#)
    }
}

// MARK: - Values that are json-c trees

/// Holds a json-c tree of its own; Codable only through the json-c coders.
final class JBTree: Codable, JSONCTreeRepresentable, @unchecked Sendable {
    let object: OpaquePointer?
    init(adopting object: OpaquePointer?) { self.object = object }
    deinit { json_object_put(object) }

    init(jsonCObject object: OpaquePointer?) throws(StoreError) {
        var copy: OpaquePointer?
        if let object { #expect(json_object_deep_copy(object, &copy, nil) == 0) }
        self.object = copy
    }

    func makeJSONCObject() throws(StoreError) -> OpaquePointer? {
        var copy: OpaquePointer?
        if let object { #expect(json_object_deep_copy(object, &copy, nil) == 0) }
        return copy
    }

    init(from decoder: any Decoder) throws { throw StoreError(.invalidArgument, "json-c coders only") }
    func encode(to encoder: any Encoder) throws { throw StoreError(.invalidArgument, "json-c coders only") }
}

@Suite("json-c bridge: values that are json-c trees")
struct JSONCTreeValueTests {
    struct Holder: Codable { var name: String; var tree: JBTree; var trees: [JBTree] }

    @Test(arguments: [#"{"a":[1,2.5,"x",null]}"#, "[]", "7", "null"])
    func passesTreesThrough(_ json: String) throws {
        let tree = try JBTree(adopting: JSONCText.parse(json, length: json.utf8.count))
        let holder = Holder(name: "h", tree: tree, trees: [tree])
        let encoded = try text(holder)
        #expect(encoded == #"{"name":"h","tree":\#(json),"trees":[\#(json)]}"#)
        let back = try decode(Holder.self, encoded)
        #expect(try JSONCText.print(back.tree.object) == json)
        #expect(try JSONCText.print(back.trees[0].object) == json)
    }

    @Test func textHelpers() throws {
        let json = #"{"k": [true]} "#
        let tree = try JSONCText.parse(json, length: json.utf8.count)
        defer { json_object_put(tree) }
        #expect(JSONCText.typeName(tree) == "object")
        #expect(try JSONCText.print(tree) == #"{"k":[true]}"#)
        #expect(JSONCText.typeName(nil) == "null")
        var error: StoreError?
        do { _ = try JSONCText.parse("[[1]]", length: 5, maximumDepth: 2) } catch let e { error = e }
        #expect(error == StoreError(.limit, "JSON text nests deeper than 1 levels"))
    }
}
