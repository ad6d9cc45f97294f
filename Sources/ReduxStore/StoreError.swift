/// The one error type of ReduxStore.
///
/// Inside the package, failures travel as values of this type; the Swift API throws it, and
/// other faces map ``Kind`` to their own codes. ``message`` always says what went wrong and, for coding
/// failures, where: `payload.items[3].title: expected String, found number`.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What class of failure this is. Each kind has one C status code.
    public enum Kind: String, Sendable, Equatable {
        /// An argument was missing or not acceptable (a removed observer token, say).
        case invalidArgument
        /// Text that should be JSON did not parse.
        case parse
        /// A value did not decode into the expected type.
        case decode
        /// A value did not encode: its `encode(to:)` threw, or it holds what JSON cannot (a
        /// NaN or an infinity, a string that is not UTF-8).
        case encode
        /// Input went past a documented limit (nesting depth, size, identifier length).
        case limit
        /// A file could not be read, written or synced.
        case io
        /// A file was read but does not hold a valid saved state.
        case corrupt
        /// Memory could not be allocated.
        case outOfMemory
    }

    /// The class of failure.
    public let kind: Kind
    /// Where a coding failure happened, such as `payload.items[3].title`; `""` when the failure
    /// is not about one place in a value.
    public let codingPath: String
    /// What went wrong, without the place: `expected String, found number`.
    public let detail: String

    /// What went wrong, in words, starting with the coding path when there is one:
    /// `payload.items[3].title: expected String, found number`.
    public var message: String { codingPath.isEmpty ? detail : "\(codingPath): \(detail)" }

    /// Creates an error of the given kind with a message.
    public init(_ kind: Kind, _ message: String) {
        self.init(kind, codingPath: "", detail: message)
    }

    /// Creates an error of the given kind at a coding path.
    public init(_ kind: Kind, codingPath: String, detail: String) {
        self.kind = kind
        self.codingPath = codingPath
        self.detail = detail
    }

    public var description: String { message }

    /// Two errors are equal when their kind and message are.
    public static func == (lhs: StoreError, rhs: StoreError) -> Bool {
        lhs.kind == rhs.kind && lhs.message == rhs.message
    }
}

extension StoreError {
    /// The same error one level down a path: `prefix` goes before the coding path (`"[2]"`
    /// makes `identifier: key not found` into `[2].identifier: key not found`).
    @_spi(Bindings) public func prefixed(_ prefix: String) -> StoreError {
        StoreError(kind, codingPath: CodingPath.join(prefix, codingPath), detail: detail)
    }

    /// Wraps any error thrown by an encoder or decoder, naming the coding path first.
    ///
    /// - Parameter prefix: a path segment to put before the coding path (`"payload"`), or `nil`.
    init(coding error: any Error, prefix: String? = nil) {
        if let error = error as? StoreError {
            self.init(
                error.kind, codingPath: CodingPath.join(prefix, error.codingPath),
                detail: error.detail)
            return
        }
        let (path, detail): ([any CodingKey], String)
        var kind = Kind.decode
        switch error {
        case let error as DecodingError:
            switch error {
            case .typeMismatch(_, let context), .valueNotFound(_, let context),
                 .dataCorrupted(let context):
                (path, detail) = (context.codingPath, context.debugDescription)
            case .keyNotFound(let key, let context):
                (path, detail) = (context.codingPath + [key], context.debugDescription)
            @unknown default:
                (path, detail) = ([], "\(error)")
            }
        case let error as EncodingError:
            kind = .encode
            switch error {
            case .invalidValue(_, let context):
                (path, detail) = (context.codingPath, context.debugDescription)
            @unknown default:
                (path, detail) = ([], "\(error)")
            }
        default:
            (path, detail) = ([], "\(error)")
        }
        self.init(kind, codingPath: CodingPath.describe(path, prefix: prefix), detail: detail)
    }
}

extension StoreError {
    /// `message` with each control character (C0: U+0000 to U+001F; DEL; C1: U+0080 to U+009F)
    /// written as `\u00XX`, lower-case hex as json-c writes them; `message` itself when it holds
    /// none. For the faces that print a message: messages quote what callers passed (keys, paths,
    /// identifiers), and there a NUL would cut a C string short, a newline or an escape sequence
    /// (C1's CSI included) garble a log or a terminal.
    @_spi(Bindings) public static func printable(_ message: String) -> String {
        func isControl(_ scalar: Unicode.Scalar) -> Bool { scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) }
        guard message.unicodeScalars.contains(where: isControl) else { return message }
        let hex = Array("0123456789abcdef".unicodeScalars)
        var escaped = String.UnicodeScalarView()
        for scalar in message.unicodeScalars {
            if isControl(scalar) {
                escaped.append(contentsOf: "\\u00".unicodeScalars)
                escaped.append(hex[Int(scalar.value >> 4)])
                escaped.append(hex[Int(scalar.value & 0xF)])
            } else {
                escaped.append(scalar)
            }
        }
        return String(escaped)
    }
}

/// Renders coding paths the way every message in ReduxStore shows them: `items[3].title`.
enum CodingPath {
    /// `[items, Index 3, title]` → `items[3].title`; with a prefix, `payload.items[3].title`.
    ///
    /// A key whose `intValue` is set and whose `stringValue` is `"Index N"` is an array position
    /// and prints as `[N]`; every other key prints as `.name` (an integer dictionary key as `.3`).
    static func describe(_ path: [any CodingKey], prefix: String? = nil) -> String {
        var out = prefix ?? ""
        for key in path {
            if let index = key.intValue, key.stringValue == "Index \(index)" {
                out += "[\(index)]"
            } else {
                if !out.isEmpty { out += "." }
                out += key.stringValue
            }
        }
        return out
    }

    /// `payload` + `items[3]` → `payload.items[3]`; `payload` + `[3]` → `payload[3]`.
    static func join(_ prefix: String?, _ path: String) -> String {
        guard let prefix, !prefix.isEmpty else { return path }
        if path.isEmpty { return prefix }
        return path.hasPrefix("[") ? prefix + path : "\(prefix).\(path)"
    }
}

/// The key coders in ReduxStore use for array positions: prints as `[N]` in coding paths.
struct IndexKey: CodingKey, Sendable {
    let intValue: Int?
    var stringValue: String { "Index \(intValue!)" }
    init(_ index: Int) { self.intValue = index }
    init?(intValue: Int) { self.intValue = intValue }
    init?(stringValue: String) { return nil }
}

/// A key made from a plain string or integer, for `superEncoder` and dictionary keys.
struct AnyCodingKey: CodingKey, Sendable {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue; self.intValue = nil }
    init(intValue: Int) { self.stringValue = String(intValue); self.intValue = intValue }
    init(_ key: some CodingKey) { self.stringValue = key.stringValue; self.intValue = key.intValue }
    /// The key `superEncoder()` and `superDecoder()` use: `"super"`.
    static let `super` = AnyCodingKey(stringValue: "super")
}
