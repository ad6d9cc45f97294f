internal import CJSONC

/// The saved-state format, apart from any file: the JSON text
/// `{"reduxstore": 1, "version": N, "state": …}` and the rules it keeps.
///
/// One set of rules serves both directions. Reading applies the rules of JSON input (text of at
/// most ``StoreLimits/maximumJSONTextSize`` bytes, nesting at most
/// ``StoreLimits/maximumNestingDepth`` containers, no NaN or Infinity, valid UTF-8) and the
/// version range below; writing checks the very same rules, with the same functions, before a
/// byte reaches the disk, and refuses what reading would refuse. So what ``encode(_:version:_:)``
/// hands out always reads back.
enum SavedStateFormat {
    /// The format marker's key and value: `"reduxstore": 1`.
    static let formatKey = "reduxstore"
    static let formatVersion: Int64 = 1

    /// The versions a saved file holds: json-c keeps integers up to 2^63 - 1 exactly in both of
    /// its readings, and one below that leaves room for the next action.
    static let versions: ClosedRange<UInt64> = 0...(UInt64(Int64.max) - 1)
    /// How ``versions`` reads in messages.
    static let versionsInWords = "a whole number from 0 to 2^63 - 2"
    /// What follows the text in a file.
    static let lineEnd: StaticString = "\n"

    // MARK: Writing

    /// Hands the saved-state text of `state` (a json-c tree, taken over: put here; NULL for null)
    /// at `version` to `body`, borrowed for the call. A file holds this text and a newline
    /// (``lineEnd``); the limit on its size counts both.
    ///
    /// Refuses, before `body` runs, what ``decode(_:from:)`` would refuse:
    /// - a version past ``versions``: ``StoreError/Kind/limit``;
    /// - a state nested deeper than ``StoreLimits/maximumNestingDepth``: ``StoreError/Kind/limit``;
    ///   a NaN or infinity in it: ``StoreError/Kind/decode`` (both with the coding path);
    /// - text that would not parse back (a string that is not valid UTF-8, which a tree's reducer
    ///   can put in it): ``StoreError/Kind/decode``;
    /// - text longer than ``StoreLimits/maximumJSONTextSize`` bytes: ``StoreError/Kind/limit``.
    ///
    /// Costs one walk of the tree, one print by json-c (into json-c's own buffer, not copied)
    /// and one pass over the text.
    static func encode<T>(
        _ state: OpaquePointer?, version: UInt64,
        _ body: (UnsafeRawBufferPointer) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        guard let root = json_object_new_object() else {
            json_object_put(state)
            throw StoreError(.outOfMemory, "out of memory")
        }
        defer { json_object_put(root) }
        json_object_object_add(root, formatKey, json_object_new_int64(formatVersion))
        json_object_object_add(root, "version", json_object_new_uint64(version))
        json_object_object_add(root, "state", state)
        guard versions.contains(version) else {
            throw StoreError(
                .limit, "version \(version) cannot be saved: a saved version is \(versionsInWords)")
        }
        // The rules a tree read from a file must keep: the same function checks them.
        try JSONInput.tree(state, "state")
        var length = 0
        let flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE
        guard let printed = json_object_to_json_string_length(root, flags, &length) else {
            throw StoreError(.outOfMemory, "json-c could not print the state")
        }
        let limit = StoreLimits.maximumJSONTextSize
        let fileSize = length + lineEnd.utf8CodeUnitCount
        guard fileSize <= limit else {
            throw StoreError(
                .limit,
                "the saved state would be \(fileSize) bytes of JSON text, more than the limit of \(limit) bytes a saved state is read with")
        }
        let bytes = UnsafeRawBufferPointer(start: printed, count: length)
        do {
            _ = try JSONC.rejectWhatJSONCLetsThrough(bytes.bindMemory(to: UInt8.self))
        } catch {
            throw StoreError(.decode, "the state would not read back: \(error.message)")
        }
        return try body(bytes)
    }

    // MARK: Reading

    /// Decodes saved-state text: the state as a `State` and its version.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/corrupt`` for text that is not a saved
    ///   state of this type; the message says what and where, without the file's name.
    static func decode<State: Decodable>(_ type: State.Type, from bytes: UnsafeBufferPointer<UInt8>)
        throws(StoreError) -> (State, UInt64)
    {
        let root: OpaquePointer?
        do {
            root = try parse(bytes)
        } catch {
            throw StoreError(.corrupt, "not a saved state: \(error.message)")
        }
        defer { json_object_put(root) }
        return try decode(type, fromTree: root)
    }

    /// Parses JSON text as a saved state's is parsed: a tree the caller owns (NULL for `null`).
    /// The root object counts one level more than the state.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(StoreError) -> OpaquePointer? {
        try JSONC.parse(bytes, maximumDepth: StoreLimits.maximumNestingDepth + 2)
    }

    /// Whether `root` is marked as a saved state: an object with `"reduxstore": 1` and a
    /// `"state"`. (What ``decode(_:fromTree:)`` then refuses is a broken saved state, not
    /// another kind of JSON.)
    static func isMarked(_ root: OpaquePointer?) -> Bool {
        var marker: OpaquePointer?
        return json_object_get_type(root) == json_type_object
            && json_object_object_get_ex(root, formatKey, &marker) != 0
            && json_object_get_type(marker) == json_type_int && json_object_get_int64(marker) == formatVersion
            && json_object_object_get_ex(root, "state", nil) != 0
    }

    /// Decodes a parsed saved state (borrowed): the state as a `State` and its version, with
    /// the rules of ``decode(_:from:)``.
    static func decode<State: Decodable>(_ type: State.Type, fromTree root: OpaquePointer?)
        throws(StoreError) -> (State, UInt64)
    {
        guard let root, json_object_get_type(root) == json_type_object else {
            throw StoreError(.corrupt, "not a saved state: expected object, found \(JSONC.kindName(root))")
        }
        var marker: OpaquePointer?
        guard json_object_object_get_ex(root, formatKey, &marker) != 0,
              json_object_get_type(marker) == json_type_int,
              json_object_get_int64(marker) == formatVersion
        else {
            throw StoreError(.corrupt, "not a saved state: \(formatKey): expected \(formatVersion)")
        }
        var versionNode: OpaquePointer?
        // json-c clamps what it cannot hold, so both of its readings must agree.
        guard json_object_object_get_ex(root, "version", &versionNode) != 0,
              json_object_get_type(versionNode) == json_type_int,
              json_object_get_int64(versionNode) >= 0,
              versions.contains(json_object_get_uint64(versionNode))
        else {
            throw StoreError(.corrupt, "not a saved state: version: expected \(versionsInWords)")
        }
        let version = json_object_get_uint64(versionNode)
        var stateNode: OpaquePointer?
        guard json_object_object_get_ex(root, "state", &stateNode) != 0 else {
            throw StoreError(.corrupt, "not a saved state: state: key not found")
        }
        do {
            return (try JSONCDecoder().decode(State.self, from: stateNode), version)
        } catch {
            throw StoreError(.corrupt, StoreError(coding: error, prefix: "state").message)
        }
    }
}
