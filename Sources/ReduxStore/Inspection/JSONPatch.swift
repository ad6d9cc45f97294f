/// JSON Patch (RFC 6902) with the three operations that change a document: `add`, `remove` and
/// `replace`. ``diff(from:to:)`` makes a patch from two JSON values; ``apply(_:to:)`` applies one.
///
/// A patch is an array of ``Operation``s, each naming its target with a JSON Pointer (RFC 6901:
/// `""` is the whole document, `/todos/3/done` a member of an element of a member; `~1` stands for
/// `/` and `~0` for `~` in a key). As JSON text it is RFC 6902's own form:
///
/// ```json
/// [{"op": "replace", "path": "/todos/3/done", "value": true}]
/// ```
///
/// `move`, `copy` and `test` are not supported: decoding a patch that holds one fails.
///
/// For any two values `a` and `b` (no NaN in them, which is never equal to itself),
/// `try JSONPatch.apply(JSONPatch.diff(from: a, to: b), to: a) == b`.
public enum JSONPatch {
    /// One operation of a patch: what to do (``op``), where (``path``), with what (``value``).
    ///
    /// Made with ``add(path:value:)``, ``remove(path:)`` and ``replace(path:value:)``, or decoded,
    /// so `add` and `replace` always carry a value and `remove` never does. Encodes to RFC 6902's
    /// shape: `{"op":"replace","path":"/todos/3/done","value":true}`; a JSON `null` value is
    /// written as `"value":null`, and a `remove` has no `"value"` key.
    public struct Operation: Codable, Equatable, Sendable {
        /// The operations supported: the three of RFC 6902 that change a document.
        public enum Kind: String, Codable, Sendable, CaseIterable {
            /// Adds a member to an object (replacing one of the same key), inserts an element into
            /// an array (`-` as the index appends), or, at `""`, replaces the whole document.
            case add
            /// Removes a member or an element, which must exist. The whole document cannot be
            /// removed.
            case remove
            /// Replaces a member or an element, which must exist, or, at `""`, the whole document.
            case replace
        }

        /// What the operation does.
        public let op: Kind
        /// Where: a JSON Pointer (RFC 6901), such as `/todos/3/done`; `""` is the whole document.
        public let path: String
        /// The value `add` and `replace` put at ``path`` (`.null` for JSON `null`); `nil` for
        /// `remove`.
        public let value: JSONValue?

        private init(op: Kind, path: String, value: JSONValue?) {
            self.op = op
            self.path = path
            self.value = value
        }

        /// An `add` of `value` at `path` (JSON Pointer text, escaped: `~0` for `~`, `~1` for `/`).
        public static func add(path: String, value: JSONValue) -> Operation {
            Operation(op: .add, path: path, value: value)
        }

        /// A `remove` of the member or element at `path`.
        public static func remove(path: String) -> Operation {
            Operation(op: .remove, path: path, value: nil)
        }

        /// A `replace` of what is at `path` by `value`.
        public static func replace(path: String, value: JSONValue) -> Operation {
            Operation(op: .replace, path: path, value: value)
        }

        private enum CodingKeys: String, CodingKey {
            case op, path, value
        }

        /// Decodes an operation from RFC 6902's shape.
        ///
        /// `"value"` is required for `add` and `replace` (`"value": null` is JSON `null`), and
        /// ignored for `remove`, as are keys RFC 6902 does not define. An `"op"` other than
        /// `add`, `remove` or `replace` fails with the standard `DecodingError`, naming the key.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let name = try container.decode(String.self, forKey: .op)
            guard let op = Kind(rawValue: name) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .op, in: container,
                    debugDescription: "\"\(name)\" is not supported: only add, remove and replace")
            }
            self.op = op
            self.path = try container.decode(String.self, forKey: .path)
            switch op {
            case .remove:
                // RFC 6902 section 4: members an operation does not define are ignored.
                self.value = nil
            case .add, .replace:
                guard container.contains(.value) else {
                    throw DecodingError.keyNotFound(
                        CodingKeys.value,
                        .init(
                            codingPath: container.codingPath,
                            debugDescription: "\(name) needs a \"value\""))
                }
                self.value = try container.decode(JSONValue.self, forKey: .value)
            }
        }

        /// Encodes the operation in RFC 6902's shape: `op`, `path`, and `value` for `add` and
        /// `replace` (JSON `null` written as `null`).
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(op, forKey: .op)
            try container.encode(path, forKey: .path)
            if let value { try container.encode(value, forKey: .value) }
        }

        /// The value an `add` or `replace` puts (every such operation has one).
        fileprivate var newValue: JSONValue { value ?? .null }

        /// Equal when the kinds, the paths and the values are: the paths code point by code
        /// point (`"/\u{E9}"` and `"/e\u{301}"` name different members), the values as
        /// ``JSONValue``'s `==` compares them.
        public static func == (lhs: Operation, rhs: Operation) -> Bool {
            lhs.op == rhs.op && JSONKey.sameCodePoints(lhs.path, rhs.path) && lhs.value == rhs.value
        }
    }

    // MARK: - Diff

    /// The patch that turns `from` into `to`: applied to `from` it gives `to`.
    ///
    /// - Objects are compared by key: first a `remove` for each key only `from` has, then the
    ///   changes inside members both have, then an `add` for each key only `to` has; each group
    ///   in code point order of the keys (``JSONKey``'s `<`), so the same two values always give
    ///   the same patch. Keys are compared code point by code point: `"\u{E9}"` (é) and
    ///   `"e\u{301}"` are two keys.
    /// - Arrays are compared by index: elements both have are compared one by one (and only the
    ///   unequal ones are looked into); the elements only `to` has are added at their indices, in
    ///   increasing order; the elements only `from` has are removed from the end backwards, so
    ///   each index is valid when its operation runs.
    /// - Values of different kinds, or unequal scalars, give one `replace` (at `""` when the
    ///   whole documents differ so). Equality is ``JSONValue``'s `==`: `.int(1)` and
    ///   `.double(1.0)` differ, and so do strings with different code points.
    ///
    /// So one changed field of one element of a large array is one operation:
    /// `{"op":"replace","path":"/todos/12345/done","value":true}`.
    ///
    /// - Complexity: one equality test of the two values, then, for each unequal container, one
    ///   more of each of its children; operations only where they differ. No copy of either
    ///   value: operations share the values they carry with `to`.
    public static func diff(from source: JSONValue, to target: JSONValue) -> [Operation] {
        var operations: [Operation] = []
        if source != target {
            diff(source, target, path: "", into: &operations)
        }
        return operations
    }

    /// Appends the operations that turn `source` into `target`, which differ, at `path`.
    private static func diff(
        _ source: JSONValue, _ target: JSONValue, path: String, into operations: inout [Operation]
    ) {
        switch (source, target) {
        case (.object(let before), .object(let after)):
            var removed: [JSONKey] = []
            var changed: [(key: JSONKey, before: JSONValue, after: JSONValue)] = []
            for (key, old) in before {
                if let new = after[key] {
                    if old != new { changed.append((key, old, new)) }
                } else {
                    removed.append(key)
                }
            }
            for key in removed.sorted() {
                operations.append(.remove(path: path + "/" + JSONPointerPath.escape(key.string)))
            }
            changed.sort { $0.key < $1.key }
            for change in changed {
                diff(
                    change.before, change.after, path: path + "/" + JSONPointerPath.escape(change.key.string),
                    into: &operations)
            }
            // Keys `after` has beyond those it shares with `before`.
            if after.count > before.count - removed.count {
                var added: [(key: JSONKey, value: JSONValue)] = []
                for (key, new) in after where before[key] == nil { added.append((key, new)) }
                added.sort { $0.key < $1.key }
                for (key, new) in added {
                    operations.append(.add(path: path + "/" + JSONPointerPath.escape(key.string), value: new))
                }
            }
        case (.array(let before), .array(let after)):
            let common = min(before.count, after.count)
            for index in 0..<common where before[index] != after[index] {
                diff(before[index], after[index], path: "\(path)/\(index)", into: &operations)
            }
            if after.count > common {
                for index in common..<after.count {
                    operations.append(.add(path: "\(path)/\(index)", value: after[index]))
                }
            } else {
                for index in (common..<before.count).reversed() {
                    operations.append(.remove(path: "\(path)/\(index)"))
                }
            }
        default:
            operations.append(.replace(path: path, value: target))
        }
    }

    // MARK: - Apply

    /// `document` with `patch` applied, operation by operation, as RFC 6902 says:
    ///
    /// - `add` sets an object's member (replacing one of the same key), or inserts into an
    ///   array at an index from 0 to its count (`-` appends); at `""` it replaces the document;
    /// - `remove` removes a member or element that must exist;
    /// - `replace` replaces a member or element that must exist, or at `""` the document.
    ///
    /// Each operation sees what the ones before it did. The containers on an operation's path
    /// must exist (RFC 6902 creates none).
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/decode`` when an operation does not
    ///   apply, naming the operation's index and its path:
    ///   `patch[2]: path "/todos/7": no such element: the array at "/todos" has 5 elements`.
    ///   A path that is not a JSON Pointer fails the same way. Nothing is applied then: the
    ///   result is either the whole patch applied, or an error.
    /// - Complexity: each operation walks its path and changes the container at its end in
    ///   place (an array insert or remove moves the elements after it). A container on the path
    ///   that is shared with another value, such as with the caller's `document` when the caller
    ///   still uses it, is copied once (its own level only, not its children); pass the
    ///   document with `consume` to spare even that.
    public static func apply(
        _ patch: [Operation], to document: consuming JSONValue
    ) throws(StoreError) -> JSONValue {
        for (index, operation) in patch.enumerated() {
            do throws(StoreError) {
                let tokens = try JSONPointerPath.tokens(of: operation.path)
                if tokens.isEmpty {
                    guard operation.op != .remove else {
                        throw StoreError(.decode, "the whole document cannot be removed")
                    }
                    document = operation.newValue
                } else {
                    try apply(operation, tokens, depth: 0, to: &document)
                }
            } catch {
                throw StoreError(
                    error.kind, codingPath: "patch[\(index)]",
                    detail: "path \"\(operation.path)\": \(error.detail)")
            }
        }
        return document
    }

    /// Applies `operation` below `node`, which the first `depth` tokens of its path lead to.
    private static func apply(
        _ operation: Operation, _ tokens: [String], depth: Int, to node: inout JSONValue
    ) throws(StoreError) {
        let token = tokens[depth]
        let isLast = depth == tokens.count - 1
        switch node {
        case .object(var members):
            // The node gives up its reference for the walk, so `members` is unique (when nobody
            // else shares it) and changes in place; it is put back on every way out.
            node = .null
            defer { node = .object(members) }
            let key = JSONKey(token)
            if isLast, operation.op == .add {
                members[key] = operation.newValue
                return
            }
            guard let position = members.index(forKey: key) else {
                throw StoreError(
                    .decode,
                    "no such member: \(describe(tokens, depth, "the object")) has no key "
                        + "\"\(JSONPointerPath.escape(token))\"")
            }
            if !isLast {
                try apply(operation, tokens, depth: depth + 1, to: &members.values[position])
            } else if operation.op == .remove {
                members.remove(at: position)
            } else {
                members.values[position] = operation.newValue
            }
        case .array(var elements):
            node = .null
            defer { node = .array(elements) }
            let count = elements.count
            if isLast, operation.op == .add, token == "-" {
                elements.append(operation.newValue)
                return
            }
            guard let index = JSONPointerPath.index(token) else {
                let detail =
                    token == "-"
                    ? "\"-\" (past the last element) names no element: only add may use it"
                    : "\"\(JSONPointerPath.escape(token))\" is not an array index"
                let array = depth == 0 ? "the document is an array" : describe(tokens, depth, "the array")
                throw StoreError(.decode, "\(detail) (\(array))")
            }
            if isLast, operation.op == .add {
                guard index <= count else {
                    throw StoreError(
                        .decode,
                        "index \(token) is past the end: \(describe(tokens, depth, "the array")) "
                            + "has \(elementCount(count))")
                }
                elements.insert(operation.newValue, at: index)
                return
            }
            guard index < count else {
                throw StoreError(
                    .decode,
                    "no such element: \(describe(tokens, depth, "the array")) has "
                        + elementCount(count))
            }
            if !isLast {
                try apply(operation, tokens, depth: depth + 1, to: &elements[index])
            } else if operation.op == .remove {
                elements.remove(at: index)
            } else {
                elements[index] = operation.newValue
            }
        default:
            let location = depth == 0 ? "the document" : "\"\(JSONPointerPath.text(tokens[..<depth]))\""
            throw StoreError(
                .decode, "no such member: \(location) is \(node.kindName), not an object or array")
        }
    }

    /// `the array at "/todos"`, or `the document` when it is the whole document.
    private static func describe(_ tokens: [String], _ depth: Int, _ what: String) -> String {
        depth == 0 ? "the document" : "\(what) at \"\(JSONPointerPath.text(tokens[..<depth]))\""
    }

    private static func elementCount(_ count: Int) -> String {
        count == 1 ? "1 element" : "\(count) elements"
    }

}

extension JSONValue {
    /// The kind of value, for messages: "null", "a boolean", "a number", "a string", "an
    /// array", "an object".
    @_spi(Bindings) public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .uint, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// JSON Pointer text (RFC 6901) to tokens and back.
enum JSONPointerPath {
    /// The unescaped tokens of `path`: `[]` for `""`, `["a/b", "0"]` for `/a~1b/0`.
    ///
    /// - Throws: ``StoreError/Kind/decode`` for text that is neither `""` nor starts with `/`,
    ///   and for a `~` not followed by `0` or `1`.
    static func tokens(of path: String) throws(StoreError) -> [String] {
        if path.isEmpty { return [] }
        let scalars = path.unicodeScalars
        guard scalars.first == "/" else {
            throw StoreError(
                .decode, "not a JSON Pointer: it must be \"\" (the whole document) or start with \"/\"")
        }
        var tokens: [String] = []
        var token = String.UnicodeScalarView()
        var escaping = false
        for scalar in scalars.dropFirst() {
            if escaping {
                switch scalar {
                case "0": token.append("~")
                case "1": token.append("/")
                default:
                    throw StoreError(
                        .decode,
                        "\"~\(scalar)\" is not an escape of a JSON Pointer: \"~0\" is \"~\" and \"~1\" is \"/\"")
                }
                escaping = false
            } else if scalar == "~" {
                escaping = true
            } else if scalar == "/" {
                tokens.append(String(token))
                token = String.UnicodeScalarView()
            } else {
                token.append(scalar)
            }
        }
        guard !escaping else {
            throw StoreError(
                .decode, "a JSON Pointer cannot end in \"~\": \"~0\" is \"~\" and \"~1\" is \"/\"")
        }
        tokens.append(String(token))
        return tokens
    }

    /// `key` as a token of JSON Pointer text: `~` as `~0`, `/` as `~1` (scalar by scalar, so a
    /// combining mark after either changes nothing).
    static func escape(_ key: String) -> String {
        guard key.utf8.contains(where: { $0 == 0x7E || $0 == 0x2F }) else { return key }
        var escaped = String.UnicodeScalarView()
        for scalar in key.unicodeScalars {
            switch scalar {
            case "~": escaped.append(contentsOf: "~0".unicodeScalars)
            case "/": escaped.append(contentsOf: "~1".unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// JSON Pointer text of `tokens`: `/a~1b/0` for `["a/b", "0"]`.
    static func text(_ tokens: ArraySlice<String>) -> String {
        var text = ""
        for token in tokens { text += "/" + escape(token) }
        return text
    }

    /// The array index a token names: `0`, or digits without a leading zero (RFC 6901); one
    /// too large for `Int` is `Int.max` (past the end of any array). `nil` for anything else,
    /// `-` included.
    static func index(_ token: String) -> Int? {
        let digits = token.utf8
        guard let first = digits.first, first >= 0x30, first <= 0x39 else { return nil }
        if first == 0x30 { return digits.count == 1 ? 0 : nil }
        var value = 0
        var overflow = false
        for digit in digits {
            guard digit >= 0x30, digit <= 0x39 else { return nil }
            if !overflow {
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(Int(digit - 0x30))
                overflow = o1 || o2
                value = sum
            }
        }
        return overflow ? Int.max : value
    }
}
