internal import CJSONC
import FoundationEssentials

/// Encodes any `Encodable` value straight into a json-c tree (`json_object *`), with no JSON text
/// in between.
///
/// The tree is what C code reads: C snapshots, payloads handed to C callbacks, and, printed with
/// json-c's own printer, saved state. JSON `null` is json-c's `NULL` pointer, so
/// `encode(_:)` returns `OpaquePointer?`: `nil` means the value encoded to `null` (an
/// `Optional` that is `nil`), and every other value comes back as a non-`nil` tree. That tree
/// form is `package`: json-c pointers never cross the module's public API. Swift callers use
/// ``encodeToJSONString(_:pretty:)``.
///
/// Special types, as Foundation's `JSONEncoder` treats them: `Date` and `Data` follow the
/// strategies below, `URL` encodes as its absolute string, `Decimal` as a number that prints with
/// all its digits. Dictionaries with `String` or `Int` keys encode as JSON objects (`[1: "a"]` as
/// `{"1":"a"}`). `superEncoder()` writes under the key `"super"` (or, in an unkeyed container, as
/// the next element). A value that encodes nothing at all becomes an empty object, `{}`.
///
/// Errors are ``StoreError``s whose message starts with the coding path:
/// `items[3].price: non-finite number nan is not valid JSON` (kind ``StoreError/Kind/encode``);
/// nesting deeper than ``StoreLimits/maximumNestingDepth`` is kind ``StoreError/Kind/limit``.
/// On any error nothing is returned and every json-c node built so far has been freed.
///
/// `JSONCEncoder` is a small value: configure one and share it freely across threads. Each call
/// allocates its own working state.
public struct JSONCEncoder: Sendable {
    /// How `Date` values are encoded.
    public enum DateEncodingStrategy: Sendable {
        /// Whatever `Date.encode(to:)` does: a number, seconds since 2001-01-01 00:00:00 UTC.
        case deferredToDate
        /// A number: seconds since 1970-01-01 00:00:00 UTC.
        case secondsSince1970
        /// A number: milliseconds since 1970-01-01 00:00:00 UTC.
        case millisecondsSince1970
        /// A string in ISO 8601 form, whole seconds, UTC: `2024-03-01T12:00:00Z`.
        case iso8601
    }

    /// How `Data` values are encoded.
    public enum DataEncodingStrategy: Sendable {
        /// A Base64 string.
        case base64
        /// Whatever `Data.encode(to:)` does: an array of byte values.
        case deferredToData
    }

    /// What to do with `Double` and `Float` values JSON cannot hold: infinities and NaN.
    public enum NonConformingFloatEncodingStrategy: Sendable {
        /// Refuse them: encoding fails with an error naming the path.
        case `throw`
        /// Write them as these strings instead.
        case convertToString(positiveInfinity: String, negativeInfinity: String, nan: String)
    }

    /// How `Date` values are encoded. Default: ``DateEncodingStrategy/deferredToDate``, as in
    /// Foundation.
    public var dateEncodingStrategy: DateEncodingStrategy = .deferredToDate
    /// How `Data` values are encoded. Default: ``DataEncodingStrategy/base64``.
    public var dataEncodingStrategy: DataEncodingStrategy = .base64
    /// What to do with infinities and NaN. Default: ``NonConformingFloatEncodingStrategy/throw``.
    public var nonConformingFloatEncodingStrategy: NonConformingFloatEncodingStrategy = .throw

    /// Creates an encoder with the default strategies.
    public init() {}

    /// Encodes `value` into a new json-c tree.
    ///
    /// - Returns: a new `json_object` reference that the caller owns and must release with
    ///   `json_object_put`, or `nil` when the value encoded to JSON `null` (json-c's `NULL`;
    ///   `json_object_put(NULL)` is harmless, so callers may put the result unconditionally).
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/encode`` for a value that cannot be
    ///   encoded (message `path: reason`), ``StoreError/Kind/limit`` for nesting deeper than
    ///   ``StoreLimits/maximumNestingDepth``, ``StoreError/Kind/outOfMemory`` if json-c cannot
    ///   allocate. Nothing is leaked on any error.
    /// - Complexity: O(n) in the size of the encoded value; one json-c allocation per JSON value
    ///   (plus a hash table per object), no JSON text.
    ///
    /// Package: the inspector and replication encode values into trees.
    package func encode<T: Encodable>(_ value: T) throws(StoreError) -> OpaquePointer? {
        let state = EncodingState(options: self)
        let encoder = JSONCEncoderImpl(state: state, codingPath: [])
        defer { state.finish() }
        do {
            return try encoder.encodeChild(value, extra: [], key: nil)
        } catch {
            throw StoreError(coding: error)
        }
    }

    /// Encodes `value` and prints it as JSON text with json-c's printer.
    ///
    /// - Parameters:
    ///   - value: the value to encode.
    ///   - pretty: `false` (the default) for compact text, `true` for text indented by two
    ///     spaces. Object keys keep the order in which they were encoded; `/` is not escaped.
    /// - Returns: the text; `"null"` for a value that encodes to `null`.
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/encode`` for a value that cannot be
    ///   encoded (message `path: reason`), ``StoreError/Kind/limit`` for nesting deeper than
    ///   ``StoreLimits/maximumNestingDepth``, ``StoreError/Kind/outOfMemory`` if json-c cannot
    ///   allocate.
    /// - Complexity: builds the json-c tree, prints it once, and frees it.
    public func encodeToJSONString<T: Encodable>(
        _ value: T, pretty: Bool = false
    ) throws(StoreError) -> String {
        let tree = try encode(value)
        defer { json_object_put(tree) }
        return try JSONC.print(tree, pretty: pretty)
    }
}

// MARK: - Working state

/// What one top-level `encode` call shares among its encoders.
final class EncodingState {
    let options: JSONCEncoder
    /// Extra references taken on nodes that containers write into after the node has been
    /// attached to its parent (nested containers, super encoders' parents). Released at the end,
    /// so a container never writes into a freed node whatever the user code does.
    private var pinned: [OpaquePointer] = []
    /// Encoders handed out by `superEncoder()`; containers refer to them without retaining.
    private var kept: [JSONCEncoderImpl] = []
    /// A failure found where the Codable API gives no way to throw (opening a container): thrown
    /// at the next chance, and at the latest when the value being encoded returns.
    var failure: (any Error)?

    init(options: JSONCEncoder) { self.options = options }

    /// Takes an extra reference on `node` until ``finish()``.
    func pin(_ node: OpaquePointer) {
        pinned.append(json_object_get(node))
    }

    func keep(_ encoder: JSONCEncoderImpl) { kept.append(encoder) }

    /// For each object written that has keys other spellings could equal: those keys, by the
    /// Swift string, with the spelling the object has.
    private var spellings: [OpaquePointer: [String: String]] = [:]

    /// The spelling under which `object` has `key` already, or `key` itself, which is then
    /// recorded: a key equal to one the object has (Swift's string equality, as Foundation's
    /// dictionary of keys compares) replaces that one, under its first spelling. json-c compares
    /// bytes, which is Swift's comparison for every key but those
    /// ``JSONC/mayEqualOtherBytes(_:)`` picks out; only those are looked up here, so writing n
    /// keys stays O(n).
    ///
    /// An entry may outlive its object (a replaced value is freed, and json-c may reuse the
    /// address for a new one). That is harmless: every key such an object gets is looked up here
    /// too, so the entry only ever answers with a spelling equal to the key asked for.
    func spelling(of key: String, in object: OpaquePointer) -> String {
        guard JSONC.mayEqualOtherBytes(key) else { return key }
        if spellings[object] == nil {
            var known: [String: String] = [:]
            JSONC.forEachKey(of: object) { name in
                if JSONC.mayEqualOtherBytes(name), known[name] == nil { known[name] = name }
            }
            spellings[object] = known
        }
        if let existing = spellings[object]?[key] { return existing }
        spellings[object, default: [:]][key] = key
        return key
    }

    func record(_ error: any Error) {
        if failure == nil { failure = error }
    }

    /// Releases the pins and the super encoders (breaking their reference back to this state).
    func finish() {
        for encoder in kept where encoder.sink == nil {
            // A super encoder whose parent could not take its value still owns what it built.
            json_object_put(encoder.slot)
            encoder.slot = nil
        }
        kept.removeAll()
        for node in pinned { json_object_put(node) }
        pinned.removeAll()
    }
}

/// The `Encoder` user code sees. One instance serves a whole top-level `encode` call: encoding a
/// nested value pushes a level (the slot for that value's node and its key on ``codingPath``)
/// and pops it afterwards, so nested values cost no allocation of their own. Containers hold
/// unretained references to it; the top-level call (or, for super encoders, ``EncodingState``)
/// keeps it alive.
final class JSONCEncoderImpl: Encoder {
    enum Kind { case empty, keyed, unkeyed, single }

    /// Where a super encoder's value goes as soon as it exists.
    enum Sink {
        case key(OpaquePointer, String)
        case index(OpaquePointer, Int)
    }

    let state: EncodingState
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The node encoded at the current level: owned by this encoder, except under a ``sink``,
    /// where it is borrowed (pinned) or already handed over.
    var slot: OpaquePointer?
    var kind = Kind.empty
    /// Set only at a super encoder's own level.
    var sink: Sink?
    /// Values nested right now, counting single-value wrappers (a stack-overflow guard).
    private var valueDepth = 0

    init(state: EncodingState, codingPath: [any CodingKey], sink: Sink? = nil) {
        self.state = state
        self.codingPath = codingPath
        self.sink = sink
    }

    private var options: JSONCEncoder { state.options }

    // MARK: Levels

    /// Encodes `value` one level down, under `extra` then `key` in the coding path, and returns
    /// its node, owned by the caller (`nil` for `null`). On error, whatever it built is freed.
    func encodeChild<T: Encodable>(
        _ value: T, extra: [any CodingKey], key: (any CodingKey)?
    ) throws -> OpaquePointer? {
        if let failure = state.failure { throw failure }
        // The most common leaves, without a level of their own.
        if T.self == String.self {
            return try JSONC.makeString(value as! String) { self.path(extra, key) }
        } else if T.self == Int.self {
            return try JSONC.makeInteger(value as! Int)
        } else if T.self == Bool.self {
            return try JSONC.makeBool(value as! Bool)
        } else if T.self == Double.self {
            let double = value as! Double
            return try JSONC.makeDouble(
                double, printed: double.description, options.nonConformingFloatEncodingStrategy
            ) { self.path(extra, key) }
        }

        let saved = (slot, kind, sink, codingPath.count)
        codingPath.append(contentsOf: extra)
        if let key { codingPath.append(key) }
        (slot, kind, sink) = (nil, .empty, nil)
        defer {
            (slot, kind, sink) = (saved.0, saved.1, saved.2)
            codingPath.removeSubrange(saved.3...)
        }
        do {
            try encodeHere(value)
            if let failure = state.failure { throw failure }
        } catch {
            json_object_put(slot)
            slot = nil
            throw error
        }
        if kind == .empty { return try JSONC.made(json_object_new_object()) }
        let node = slot
        slot = nil
        return node
    }

    /// Encodes `value` at the current level (a single-value container's value is its encoder's).
    func encodeHere<T: Encodable>(_ value: T) throws {
        valueDepth += 1
        defer { valueDepth -= 1 }
        guard valueDepth <= JSONC.maximumValueDepth else { throw JSONC.tooDeep(codingPath) }

        let path = { self.codingPath }
        if T.self == Date.self {
            let date = value as! Date
            switch options.dateEncodingStrategy {
            case .deferredToDate:
                try date.encode(to: self)
            case .secondsSince1970:
                let seconds = date.timeIntervalSince1970
                try setSingle(JSONC.makeDouble(
                    seconds, printed: seconds.description, options.nonConformingFloatEncodingStrategy, path))
            case .millisecondsSince1970:
                let milliseconds = date.timeIntervalSince1970 * 1000
                try setSingle(JSONC.makeDouble(
                    milliseconds, printed: milliseconds.description,
                    options.nonConformingFloatEncodingStrategy, path))
            case .iso8601:
                try setSingle(JSONC.makeString(JSONC.iso8601.format(date), path))
            }
        } else if T.self == Data.self {
            let data = value as! Data
            switch options.dataEncodingStrategy {
            case .base64: try setSingle(JSONC.makeString(data.base64EncodedString(), path))
            case .deferredToData: try data.encode(to: self)
            }
        } else if T.self == URL.self {
            try setSingle(JSONC.makeString((value as! URL).absoluteString, path))
        } else if T.self == Decimal.self {
            let decimal = value as! Decimal
            if decimal.isNaN {
                try setSingle(JSONC.makeDouble(
                    .nan, printed: "", options.nonConformingFloatEncodingStrategy, path))
            } else {
                let text = decimal.description
                try setSingle(JSONC.makeNumber(Double(text) ?? 0, text: text))
            }
        } else if let tree = value as? any JSONCTreeRepresentable {
            try setSingle(tree.makeJSONCObject())
        } else {
            try value.encode(to: self)
        }
    }

    /// Stores a single value's node (owned) at the current level.
    func setSingle(_ node: OpaquePointer?) throws {
        guard kind == .empty else {
            json_object_put(node)
            throw misuse("a single value was encoded where a value was already encoded")
        }
        kind = .single
        if let sink {
            slot = nil
            try attach(node, to: sink)
        } else {
            slot = node
        }
    }

    /// Opens a container node at the current level (`nil` after recording a failure).
    private func openContainer(_ wanted: Kind) -> OpaquePointer? {
        if kind == wanted { return slot }
        guard kind == .empty else {
            state.record(misuse("a \(wanted == .keyed ? "keyed" : "unkeyed") container was requested where a different value was already encoded"))
            return nil
        }
        guard codingPath.count < StoreLimits.maximumNestingDepth else {
            state.record(JSONC.tooDeep(codingPath))
            return nil
        }
        guard let node = wanted == .keyed ? json_object_new_object() : json_object_new_array() else {
            state.record(StoreError(.outOfMemory, "json-c could not allocate a container"))
            return nil
        }
        (slot, kind) = (node, wanted)
        if let sink {
            state.pin(node)
            do { try attach(node, to: sink) } catch { state.record(error) }
        }
        return node
    }

    /// Hands `node` (owned, may be NULL) to a super encoder's parent.
    private func attach(_ node: OpaquePointer?, to sink: Sink) throws {
        switch sink {
        case .key(let object, let key):
            try JSONC.add(node, to: object, key: state.spelling(of: key, in: object)) { self.codingPath }
        case .index(let array, let index):
            guard json_object_array_put_idx(array, index, node) == 0 else {
                json_object_put(node)
                throw StoreError(.outOfMemory, "json-c could not grow an array")
            }
        }
    }

    /// Makes a new node for a nested container under `key`, attached to `parent` (pinned, since
    /// the container writes into it after the parent owns it). `nil` after recording a failure.
    func openNested(
        in parent: OpaquePointer?, path: [any CodingKey], keyed: Bool,
        attach: (OpaquePointer) throws -> Void
    ) -> OpaquePointer? {
        guard parent != nil else { return nil }
        guard path.count < StoreLimits.maximumNestingDepth else {
            state.record(JSONC.tooDeep(path))
            return nil
        }
        guard let node = keyed ? json_object_new_object() : json_object_new_array() else {
            state.record(StoreError(.outOfMemory, "json-c could not allocate a container"))
            return nil
        }
        state.pin(node)
        do { try attach(node) } catch { state.record(error); return nil }
        return node
    }

    /// Makes the encoder `superEncoder()` returns, with `{}` in place until it encodes a value.
    func makeSuperEncoder(path: [any CodingKey], sink: Sink?) -> JSONCEncoderImpl {
        let encoder = JSONCEncoderImpl(state: state, codingPath: path, sink: sink)
        state.keep(encoder)
        if let sink {
            switch sink {
            case .key(let object, _), .index(let object, _): state.pin(object)
            }
            do {
                try attach(JSONC.made(json_object_new_object()), to: sink)
            } catch {
                state.record(error)
            }
        }
        return encoder
    }

    private func misuse(_ detail: String) -> EncodingError {
        EncodingError.invalidValue(0, .init(codingPath: codingPath, debugDescription: detail))
    }

    private func path(_ extra: [any CodingKey], _ key: (any CodingKey)?) -> [any CodingKey] {
        var path = codingPath + extra
        if let key { path.append(key) }
        return path
    }

    // MARK: Encoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let node = openContainer(.keyed)
        return KeyedEncodingContainer(JSONCKeyedEncodingContainer<Key>(
            impl: Unmanaged.passUnretained(self), object: node,
            baseDepth: codingPath.count, extra: []))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let node = openContainer(.unkeyed)
        return JSONCUnkeyedEncodingContainer(
            impl: Unmanaged.passUnretained(self), array: node,
            baseDepth: codingPath.count, extra: [])
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        JSONCSingleValueEncodingContainer(impl: Unmanaged.passUnretained(self))
    }
}

// MARK: - Containers
