// libFuzzer harness: JSONCDecoder on arbitrary json-c trees.
//
// The first byte of the input picks how the rest becomes a tree:
//  - even: JSON text, parsed by json-c's tokener in its NON-strict mode (comments, single quotes,
//    NaN and Infinity, trailing commas, numbers past 64 bits), up to 400 levels deep;
//  - odd: a byte-driven tree builder, which also makes trees no text makes (strings with NUL
//    bytes, NaN and infinities, any 64-bit pattern, deep nesting, many members).
// The tree is decoded into a nested Decodable type with every kind of field, into a type whose
// hand-written init(from:) uses the whole container API, into JSONValue, and into a few
// top-level scalars and collections, with the default decoder and with one whose strategies are
// all the others. What decodes is encoded again with JSONCEncoder and must decode to an equal
// value.
//
// Fuzzing build (scripts/fuzz): -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING; the binary
// takes libFuzzer's options. Plain build: `fuzz-jsonc-decoder FILE_OR_FOLDER...` runs the harness
// once per file (a folder: each file in it) and exits 0.
import CJSONC
import FoundationEssentials
import FuzzSupport
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

// MARK: - What trees are decoded into

enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case rect(width: Float, height: Float)
    case label(String, size: UInt8?)
    case path([Point])
    case none
}

struct Point: Codable, Equatable {
    var x: Int16
    var y: Int16
}

struct Leaf: Codable, Equatable {
    var name: String
    var value: Int?
    var children: [Leaf]?
}

/// Every kind of field: optional ones, so that partial inputs decode far.
struct Document: Codable, Equatable {
    var int: Int?
    var int8: Int8?
    var int16: Int16?
    var int32: Int32?
    var int64: Int64?
    var uint: UInt?
    var uint8: UInt8?
    var uint16: UInt16?
    var uint32: UInt32?
    var uint64: UInt64?
    var double: Double?
    var float: Float?
    var bool: Bool?
    var string: String?
    var optionalOptional: String??
    var numbers: [Int64]?
    var strings: [String?]?
    var matrix: [[Double]]?
    var table: [String: Int32]?
    var byNumber: [Int: String]?
    var point: Point?
    var points: [Point]?
    var shape: Shape?
    var shapes: [String: Shape]?
    var tree: Leaf?
    var date: Date?
    var data: Data?
    var url: URL?
    var decimal: Decimal?
    var any: JSONValue?
}

/// A hand-written decoder user: keys, nested containers, nil checks, super decoders, counts.
struct Walker: Decodable {
    var total = 0

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int?
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
    }

    init(from decoder: any Decoder) throws {
        total = decoder.codingPath.count
        if let keyed = try? decoder.container(keyedBy: Key.self) {
            for key in keyed.allKeys.prefix(32) {
                total &+= keyed.contains(key) ? 1 : 0
                if (try? keyed.decodeNil(forKey: key)) == true { continue }
                if let number = try? keyed.decodeIfPresent(Int64.self, forKey: key) {
                    total &+= Int(truncatingIfNeeded: number)
                } else if let text = try? keyed.decode(String.self, forKey: key) {
                    total &+= text.utf8.count
                } else if var nested = try? keyed.nestedUnkeyedContainer(forKey: key) {
                    total &+= nested.count ?? 0
                    if !nested.isAtEnd { total &+= (try? nested.decode(Walker.self).total) ?? 0 }
                } else if let inner = try? keyed.nestedContainer(keyedBy: Key.self, forKey: key) {
                    total &+= inner.allKeys.count
                    total &+= (try? Walker(from: keyed.superDecoder(forKey: key)).total) ?? 0
                }
            }
            total &+= (try? Walker(from: keyed.superDecoder()).total) ?? 0
        } else if var unkeyed = try? decoder.unkeyedContainer() {
            while !unkeyed.isAtEnd, unkeyed.currentIndex < 32 {
                if (try? unkeyed.decodeNil()) == true { continue }
                if let flag = try? unkeyed.decode(Bool.self) {
                    total &+= flag ? 1 : 2
                } else if let number = try? unkeyed.decode(Double.self) {
                    total &+= number.isFinite ? 1 : 3
                } else if let inner = try? unkeyed.superDecoder() {
                    total &+= (try? Walker(from: inner).total) ?? 0
                } else {
                    break
                }
            }
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() { return }
            total &+= (try? single.decode(UInt16.self)).map(Int.init) ?? 0
            total &+= (try? single.decode(Float.self)).map { $0.isFinite ? 1 : 2 } ?? 0
            total &+= (try? single.decode(String.self))?.count ?? 0
        }
    }
}

// MARK: - Building a tree

/// Parses the bytes as JSON text with json-c's tokener in its default (non-strict) mode.
func parseLoosely(_ bytes: UnsafeBufferPointer<UInt8>) -> OpaquePointer? {
    guard let tokener = json_tokener_new_ex(400) else { fatalError("json_tokener_new_ex failed") }
    defer { json_tokener_free(tokener) }
    guard let base = bytes.baseAddress, bytes.count > 0 else { return nil }
    let tree = base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
        json_tokener_parse_ex(tokener, $0, Int32(bytes.count))
    }
    if tree == nil, json_tokener_get_error(tokener) == json_tokener_continue {
        return json_tokener_parse_ex(tokener, "", 1)
    }
    return tree
}

/// Builds a tree from bytes: each byte picks a node kind, and the bytes after it its contents.
struct TreeBuilder {
    var bytes: UnsafeBufferPointer<UInt8>
    var position = 0
    var nodes = 0

    mutating func byte() -> UInt8 {
        guard position < bytes.count else { return 0 }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func word() -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(byte()) }
        return value
    }

    mutating func text() -> (UnsafeMutablePointer<CChar>, Int32) {
        let length = min(Int(byte()) % 64, bytes.count - min(position, bytes.count))
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: length + 1)
        for index in 0..<length { buffer[index] = CChar(bitPattern: byte()) }
        buffer[length] = 0
        return (buffer, Int32(length))
    }

    /// Keys drawn mostly from Document's, so that decoding goes deep.
    static let keys = [
        "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64",
        "double", "float", "bool", "string", "optionalOptional", "numbers", "strings", "matrix",
        "table", "byNumber", "point", "points", "shape", "shapes", "tree", "date", "data", "url",
        "decimal", "any", "x", "y", "name", "value", "children", "circle", "rect", "label",
        "path", "none", "radius", "width", "height", "_0", "size", "super", "1", "-2",
    ]

    mutating func node(depth: Int) -> OpaquePointer? {
        nodes += 1
        let kind = byte()
        if position >= bytes.count || nodes > 2000 { return nil }
        switch kind % 12 {
        case 0: return nil
        case 1: return json_object_new_boolean(json_bool(kind >> 7))
        case 2: return json_object_new_int64(Int64(Int8(bitPattern: byte())))
        case 3: return json_object_new_int64(Int64(bitPattern: word()))
        case 4: return json_object_new_uint64(word())
        case 5: return json_object_new_double(Double(bitPattern: word()))
        case 6: return json_object_new_double(Double(Int8(bitPattern: byte())) / 4)
        case 7, 8:
            let (buffer, length) = text()
            defer { buffer.deallocate() }
            return json_object_new_string_len(buffer, length)
        case 9, 10:
            guard depth < 300 else { return json_object_new_array() }
            let array = json_object_new_array()
            let count = kind % 12 == 10 ? Int(byte() % 8) : 1
            for _ in 0..<count {
                guard position < bytes.count else { break }
                json_object_array_add(array, node(depth: depth + 1))
            }
            return array
        default:
            guard depth < 300 else { return json_object_new_object() }
            let object = json_object_new_object()
            let count = Int(byte() % 8)
            for _ in 0..<count {
                guard position < bytes.count else { break }
                let pick = byte()
                let value: OpaquePointer?
                if pick & 0x80 == 0 {
                    let key = TreeBuilder.keys[Int(pick) % TreeBuilder.keys.count]
                    value = node(depth: depth + 1)
                    json_object_object_add(object, key, value)
                } else {
                    let (buffer, _) = text()
                    defer { buffer.deallocate() }
                    value = node(depth: depth + 1)
                    json_object_object_add(object, buffer, value)
                }
            }
            return object
        }
    }
}

// MARK: - The harness

/// FUZZ_VERBOSE=1 in the environment: say what each round trip decoded (to check seeds).
let verbose = getenv("FUZZ_VERBOSE") != nil

let otherStrategies: JSONCDecoder = {
    var decoder = JSONCDecoder()
    decoder.dateDecodingStrategy = .iso8601
    decoder.dataDecodingStrategy = .deferredToData
    decoder.nonConformingFloatDecodingStrategy = .convertFromString(
        positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
    return decoder
}()

let secondsStrategies: JSONCDecoder = {
    var decoder = JSONCDecoder()
    decoder.dateDecodingStrategy = .millisecondsSince1970
    return decoder
}()

/// Decodes `T` from the tree; what decodes is encoded again and must decode to an equal value.
func roundTrip<T: Codable & Equatable>(_ type: T.Type, _ tree: OpaquePointer?) {
    let value: T
    do {
        value = try JSONCDecoder().decode(T.self, from: tree)
        if verbose { print("  \(T.self): decoded") }
    } catch {
        if verbose { print("  \(T.self): [\(error.kind)] \(error)") }
        return
    }
    let encoded: OpaquePointer?
    do {
        encoded = try JSONCEncoder().encode(value)
    } catch {
        fatalError("\(T.self) decoded but does not encode: \(error)")
    }
    defer { json_object_put(encoded) }
    let again: T
    do {
        again = try JSONCDecoder().decode(T.self, from: encoded)
    } catch {
        fatalError("""
            \(T.self) encoded by JSONCEncoder does not decode: \(error)
            tree: \(String(cString: json_object_to_json_string(encoded)))
            """)
    }
    guard again == value else {
        fatalError("""
            \(T.self) changed in a round trip:
            first:  \(value)
            second: \(again)
            """)
    }
}

/// Decodes `T` and throws the result away (errors are expected; crashes are not).
func attempt<T: Decodable>(_ type: T.Type, _ tree: OpaquePointer?, _ decoder: JSONCDecoder = JSONCDecoder()) {
    do {
        _ = try decoder.decode(T.self, from: tree)
    } catch {
        guard !error.message.isEmpty else { fatalError("a decoding error with no words") }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let rest = UnsafeBufferPointer(start: data + 1, count: size - 1)
    let tree: OpaquePointer?
    if data[0] & 1 == 0 {
        tree = parseLoosely(rest)
    } else {
        var builder = TreeBuilder(bytes: rest)
        tree = builder.node(depth: 0)
    }
    defer { json_object_put(tree) }

    roundTrip(Document.self, tree)
    roundTrip(JSONValue.self, tree)
    roundTrip([Shape].self, tree)
    roundTrip(Leaf.self, tree)
    attempt(Document.self, tree, otherStrategies)
    attempt(Document.self, tree, secondsStrategies)
    attempt(JSONValue.self, tree, otherStrategies)
    attempt(Walker.self, tree)
    attempt([String: Document].self, tree)
    attempt([Int: [Float]].self, tree)
    attempt([UInt8?].self, tree)
    attempt(Int.self, tree)
    attempt(Float.self, tree, otherStrategies)
    attempt(String.self, tree)
    attempt(Bool.self, tree)
    return 0
}

// MARK: - Entry point

fuzzMain("fuzz-jsonc-decoder") { data, size in fuzz(data, size) }
