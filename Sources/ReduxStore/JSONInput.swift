internal import CJSONC
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The rules for JSON input that crosses into a store, shared by every face of the store, so
/// that every limit holds the same way in each.
@_spi(Bindings) public enum JSONInput {
    /// An action identifier of `length` bytes: at most ``StoreLimits/maximumIdentifierLength``
    /// bytes (``StoreError/Kind/limit``), no NUL, valid UTF-8 (``StoreError/Kind/decode``).
    @_spi(Bindings) public static func identifier(_ pointer: UnsafePointer<CChar>, length: Int) throws(StoreError) {
        let limit = StoreLimits.maximumIdentifierLength
        guard length <= limit else {
            throw StoreError(.limit, "identifier is longer than \(limit) bytes")
        }
        guard strnlen(pointer, length) == length else {
            throw StoreError(.decode, "identifier contains a NUL character")
        }
        try utf8(pointer, length: length, what: "identifier")
    }

    /// Fails with ``StoreError/Kind/decode`` if the bytes are not valid UTF-8. ASCII is checked byte by byte;
    /// only text with other bytes is decoded.
    static func utf8(_ pointer: UnsafePointer<CChar>, length: Int, what: String) throws(StoreError) {
        let bytes = UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self)
        var index = 0
        while index < length, bytes[index] < 0x80 { index += 1 }
        if index == length { return }
        if JSONC.firstInvalidUTF8(UnsafeBufferPointer(start: bytes, count: length)) != nil {
            throw StoreError(.decode, "\(what) is not valid UTF-8")
        }
    }

    /// A tree C hands in (a payload, an initial state): at most
    /// ``StoreLimits/maximumNestingDepth`` arrays and objects inside each other
    /// (``StoreError/Kind/limit``), and no non-finite number (``StoreError/Kind/decode``: JSON has
    /// none, and a saved file could not hold it).
    ///
    /// One walk over the tree with no allocation; the path of a problem is worked out only when
    /// there is one.
    ///
    /// - Parameters:
    ///   - name: what the tree is, for messages (`payload`); `""` when the caller names it.
    ///   - containersAbove: containers around the tree in the input it came in (the action
    ///     object around a payload parsed from action text).
    @_spi(Bindings) public static func tree(_ object: OpaquePointer?, _ name: String, containersAbove: Int = 0)
        throws(StoreError)
    {
        guard let object, let problem = firstProblem(in: object, depth: containersAbove) else {
            return
        }
        let limit = StoreLimits.maximumNestingDepth
        switch problem.kind {
        case .tooDeep:
            let note = containersAbove > 0 ? " (the action object around it counts as one)" : ""
            let what = name.isEmpty ? "the value" : name
            throw StoreError(.limit, "\(what) is nested deeper than \(limit) levels\(note)")
        case .nonFinite:
            let path = CodingPath.join(name, self.path(to: problem.node, in: object) ?? "")
            throw StoreError(.decode, codingPath: path, detail: "non-finite number is not valid JSON")
        }
    }

    private enum ProblemKind { case tooDeep, nonFinite }

    /// The first node that breaks a rule, depth first; `depth` counts the containers above.
    private static func firstProblem(in object: OpaquePointer, depth: Int)
        -> (node: OpaquePointer, kind: ProblemKind)?
    {
        switch json_object_get_type(object) {
        case json_type_array:
            guard depth < StoreLimits.maximumNestingDepth else { return (object, .tooDeep) }
            let count = json_object_array_length(object)
            var index = 0
            while index < count {
                if let element = json_object_array_get_idx(object, index),
                   let problem = firstProblem(in: element, depth: depth + 1) {
                    return problem
                }
                index += 1
            }
        case json_type_object:
            guard depth < StoreLimits.maximumNestingDepth else { return (object, .tooDeep) }
            for (_, value) in JSONC.members(of: object) {
                if let member = value, let problem = firstProblem(in: member, depth: depth + 1) {
                    return problem
                }
            }
        case json_type_double:
            if !json_object_get_double(object).isFinite { return (object, .nonFinite) }
        default:
            break
        }
        return nil
    }

    /// The coding path from `root` to `target` (`items[3].price`), or nil if it is not there.
    private static func path(to target: OpaquePointer, in root: OpaquePointer) -> String? {
        if root == target { return "" }
        switch json_object_get_type(root) {
        case json_type_array:
            for index in 0..<json_object_array_length(root) {
                if let element = json_object_array_get_idx(root, index),
                   let rest = path(to: target, in: element) {
                    return CodingPath.join("[\(index)]", rest)
                }
            }
        case json_type_object:
            for (name, value) in JSONC.members(of: root) {
                if let member = value, let rest = path(to: target, in: member) {
                    return CodingPath.join(String(cString: name), rest)
                }
            }
        default:
            break
        }
        return nil
    }

    /// Parses action text, `{"identifier": "...", "payload": ...}`, and hands the identifier
    /// and the payload (borrowed from the parsed tree, freed after `body`; `nil` when missing
    /// or null) to `body`.
    ///
    /// The text may be at most ``StoreLimits/maximumJSONTextSize`` bytes and nest at most
    /// ``StoreLimits/maximumNestingDepth`` containers, the action object included. Only the
    /// keys `identifier` and `payload` are allowed.
    @_spi(Bindings) public static func withParsedAction<T>(
        _ text: UnsafePointer<CChar>, length: Int,
        _ body: (UnsafePointer<CChar>, OpaquePointer?) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        try withParsedText(text, length: length, naming: "action", containersAround: 0) { root throws(StoreError) in
            let (identifier, payload) = try actionParts(root)
            return try body(identifier, payload)
        }
    }

    /// Parses the text of a batch, `[{"identifier": ..., "payload": ...}, ...]`, and hands the
    /// parts of every action (borrowed from the parsed tree, freed after `body`) to `body`, once
    /// all of them were checked: one bad action refuses the whole batch, its index in the error
    /// (`[2].identifier: key not found`).
    ///
    /// The same limits as ``withParsedAction(_:length:_:)``, for the text as a whole and for
    /// each action (the array around the actions does not count against a payload's nesting).
    @_spi(Bindings) public static func withParsedBatch<T>(
        _ text: UnsafePointer<CChar>, length: Int,
        _ body: ([(identifier: UnsafePointer<CChar>, payload: OpaquePointer?)]) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        try withParsedText(text, length: length, naming: "batch", containersAround: 1) { root throws(StoreError) in
            guard let root, json_object_get_type(root) == json_type_array else {
                throw StoreError(.decode, "batch: expected array, found \(JSONC.kindName(root))")
            }
            let count = json_object_array_length(root)
            var actions: [(identifier: UnsafePointer<CChar>, payload: OpaquePointer?)] = []
            actions.reserveCapacity(count)
            for index in 0..<count {
                do throws(StoreError) {
                    actions.append(try actionParts(json_object_array_get_idx(root, index)))
                } catch {
                    throw error.prefixed("[\(index)]")
                }
            }
            return try body(actions)
        }
    }

    /// Parses `length` bytes of `what`'s text (at most ``StoreLimits/maximumJSONTextSize``) and
    /// hands the tree to `body`, freeing it after. `containersAround`: how many containers around
    /// the actions (a batch's array) may nest beyond the limit.
    private static func withParsedText<T>(
        _ text: UnsafePointer<CChar>, length: Int, naming what: String, containersAround: Int,
        _ body: (OpaquePointer?) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        let limit = StoreLimits.maximumJSONTextSize
        guard length <= limit else {
            throw StoreError(.limit, "\(what) text is longer than \(limit) bytes")
        }
        // json-c's depth counts one more than the containers it lets nest, and does not count
        // the inside of an empty container: a payload's depth is checked again after parsing.
        let root = try JSONCText.parse(
            text, length: length, maximumDepth: StoreLimits.maximumNestingDepth + 1 + containersAround)
        defer { json_object_put(root) }
        return try body(root)
    }

    /// The identifier and payload of one action object (borrowed from it), checked: only the
    /// keys `identifier` and `payload`, a string identifier within the limits, a payload within
    /// the nesting limit counting the action object above it.
    private static func actionParts(_ root: OpaquePointer?)
        throws(StoreError) -> (identifier: UnsafePointer<CChar>, payload: OpaquePointer?)
    {
        guard let root, json_object_get_type(root) == json_type_object else {
            throw StoreError(.decode, "action: expected object, found \(JSONC.kindName(root))")
        }
        var identifier: OpaquePointer?
        var hasIdentifier = false
        var payload: OpaquePointer?
        for (key, value) in JSONC.members(of: root) {
            // The key compared as C text: no String made of it unless it is refused.
            if strcmp(key, "identifier") == 0 {
                identifier = value
                hasIdentifier = true
            } else if strcmp(key, "payload") == 0 {
                payload = value
            } else {
                throw StoreError(
                    .decode, codingPath: "action.\(String(cString: key))",
                    detail: "unexpected key (an action has \"identifier\" and \"payload\")")
            }
        }
        guard hasIdentifier else {
            throw StoreError(.decode, codingPath: "identifier", detail: "key not found")
        }
        guard let identifier, json_object_get_type(identifier) == json_type_string else {
            throw StoreError(
                .decode, codingPath: "identifier",
                detail: "expected string, found \(JSONC.kindName(identifier))")
        }
        let pointer = json_object_get_string(identifier)!
        try JSONInput.identifier(pointer, length: Int(json_object_get_string_len(identifier)))
        try tree(payload, "payload", containersAbove: 1)
        return (pointer, payload)
    }
}

extension JSONAction {
    /// Parses action text, `{"identifier": "...", "payload": ...}`, by the same rules and limits
    /// as every face's dispatch of action text: only those two keys, a string identifier of at
    /// most ``StoreLimits/maximumIdentifierLength`` bytes, text of at most
    /// ``StoreLimits/maximumJSONTextSize`` bytes nesting at most
    /// ``StoreLimits/maximumNestingDepth`` containers, no NaN or Infinity, no `\u` escape of
    /// half a surrogate pair.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/parse``, ``StoreError/Kind/decode``
    ///   or ``StoreError/Kind/limit``, naming what and where.
    public init(jsonText: String) throws(StoreError) {
        let length = jsonText.utf8.count
        let parsed = jsonText.withCString { text in
            Result { () throws(StoreError) -> JSONAction in
                try JSONInput.withParsedAction(text, length: length) {
                    (identifier, payload) throws(StoreError) in
                    try JSONAction(identifier: String(cString: identifier), jsonCPayload: payload)
                }
            }
        }
        self = try parsed.get()
    }
}

extension JSONAction {
    /// An action with a payload given as a json-c tree (borrowed; NULL: no payload), as C sends
    /// them.
    ///
    /// - Throws: ``StoreError`` naming the coding path below `payload`.
    @_spi(Bindings) public init(identifier: String, jsonCPayload payload: OpaquePointer?) throws(StoreError) {
        guard let payload else {
            self.init(identifier: identifier)
            return
        }
        do {
            self.init(
                identifier: identifier,
                payload: try JSONCDecoder().decode(JSONValue.self, from: payload))
        } catch {
            throw StoreError(coding: error, prefix: "payload")
        }
    }
}
