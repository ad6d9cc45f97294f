internal import CJSONC
#if canImport(Glibc)
import Glibc
#endif

/// One entry of a journal, read back by ``JournalReader`` (see ``Store/startJournal(at:options:)``
/// for the format).
///
/// The payload and the patch stay as the line held them until asked for: ``payload()`` and
/// ``patch()`` decode them, so a reader that only counts entries never pays for them. An entry
/// may be kept and handed to other threads: the parsed line it reads from is never changed and
/// is freed with the last entry of it.
public struct JournalEntry: @unchecked Sendable {
    // @unchecked: `payloadTree` and `patchTree` are json-c trees owned by `root`, only read after
    // parsing (decoding never changes, retains or puts a node), freed with `root`.

    /// The version the entry's action made.
    public let version: UInt64
    /// The action's identifier.
    public let identifier: String
    /// Whether the payload is a typed action's properties (a Swift action): a replay needs its
    /// type registered in ``ActionTypes``.
    public let isTyped: Bool
    /// Whether the action can be replayed: false for an action recorded without its payload
    /// (one that is not `Encodable`, or whose payload could not be written: ``payloadError``).
    public let isReplayable: Bool
    /// The first version of the batch the action was applied in (``Store/dispatchActions(_:file:line:)``),
    /// for an action of a batch.
    public let batch: UInt64?
    /// `"time"` as written: `2026-11-22T10:00:00.000Z`.
    public let time: String
    /// Why the payload is not in the line (`"payloadError"`), when the journal could not write it.
    public let payloadError: String?
    /// Why the patch is not in the line (`"patchError"`), when it was asked for and could not be
    /// made or written.
    public let patchError: String?
    /// Where the action was dispatched from (`"source"`: `"Feature.swift:42"`), when recorded.
    public let source: String?
    /// Where the line is, for messages: `journal.1:17` (the file's name and the line's number).
    public let place: String
    /// The payload, borrowed from the parsed line; NULL for none (or JSON null).
    let payloadTree: OpaquePointer?
    /// The patch, borrowed from the parsed line; NULL when not recorded.
    let patchTree: OpaquePointer?
    let root: JSONCTreeOwner

    /// Whether the line holds a patch (``JournalOptions/recordPatches``).
    public var hasPatch: Bool { patchTree != nil }

    /// The action's payload; `nil` when the line has none (or JSON `null`).
    ///
    /// - Throws: ``StoreError`` naming the line and the coding path, for a payload past the
    ///   nesting limit.
    public func payload() throws(StoreError) -> JSONValue? {
        try decode(JSONValue.self, payloadTree, "payload")
    }

    /// The action's RFC 6902 patch; `nil` when the line holds none.
    ///
    /// - Throws: ``StoreError`` naming the line, for a `"patch"` that is not an array of
    ///   operations.
    public func patch() throws(StoreError) -> [JSONPatch.Operation]? {
        try decode([JSONPatch.Operation].self, patchTree, "patch")
    }

    private func decode<T: Decodable>(_ type: T.Type, _ tree: OpaquePointer?, _ name: String)
        throws(StoreError) -> T?
    {
        guard let tree else { return nil }
        do {
            return try JSONCDecoder().decode(T.self, from: tree)
        } catch {
            throw StoreError(error.kind, "\(place): \(error.prefixed(name).message)")
        }
    }
}

/// Owns a parsed line's tree.
final class JSONCTreeOwner: @unchecked Sendable {
    let tree: OpaquePointer?
    init(_ tree: OpaquePointer?) { self.tree = tree }
    deinit { json_object_put(tree) }
}

/// Reads a journal: its rotated files oldest first (`journal.N` … `journal.1`), then `journal`.
///
/// ```swift
/// try JournalReader.read("app.jsonl") { (entry) throws(StoreError) in
///     print(entry.version, entry.identifier, try entry.payload() ?? .null)
///     return true  // false stops reading
/// }
/// ```
public enum JournalReader {
    /// The files of the journal at `path` that exist, oldest first.
    public static func files(of path: String) -> [String] {
        var rotated: [String] = []
        var index = 1
        var info = stat()
        while stat("\(path).\(index)", &info) == 0 {
            rotated.append("\(path).\(index)")
            index += 1
        }
        var files = Array(rotated.reversed())
        if stat(path, &info) == 0 { files.append(path) }
        return files
    }

    /// Calls `body` with each line of the journal, in order, checked: each line a JSON object
    /// with a `version` from 1 to `UInt64.max`, a string `identifier` and a string `time`; versions
    /// contiguous (each one more than the last), never going back; the last line of the last
    /// file ending with a newline (else it is torn); the rotated files numbered without a hole.
    /// Errors name the file and line.
    ///
    /// - Parameters:
    ///   - path: the journal's path, as given to ``Store/startJournal(at:options:)``.
    ///   - body: called with each entry; returns whether to go on reading. Like every call of
    ///     the library, it throws ``StoreError``: a closure of more than one statement that tries
    ///     says so, `{ (entry) throws(StoreError) in … }`.
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io`` for a journal with no file or a
    ///   file that cannot be read, ``StoreError/Kind/corrupt`` for a line that breaks the rules
    ///   above, ``StoreError/Kind/limit`` for a line longer than
    ///   ``StoreLimits/maximumJSONTextSize`` bytes, or what `body` throws.
    public static func read(
        _ path: String, _ body: (JournalEntry) throws(StoreError) -> Bool
    ) throws(StoreError) {
        let files = files(of: path)
        guard !files.isEmpty else {
            throw StoreError(.io, "journal \(path): no such file")
        }
        // Rotation numbers the files without a hole: one past the first missing number means a
        // file was taken away, and with it the versions it held.
        var info = stat()
        let missing = files.count - (files.last == path ? 1 : 0) + 1
        if stat("\(path).\(missing + 1)", &info) == 0 {
            throw StoreError(
                .corrupt,
                "journal \(path): \(path).\(missing) is missing though \(path).\(missing + 1) exists: the entries it held are lost")
        }
        var previous: UInt64?
        // A file is read a piece at a time: a journal can be larger than memory. At most one
        // line (up to the limit on JSON text) and one piece are held at once.
        var piece: [UInt8] = []
        for file in files {
            let (fd, size) = try RegularFile.openForReading(file)
            defer { close(fd) }
            // A megabyte, or less for a smaller file (a few lines are read often, and quickly).
            let pieceSize = min(1 << 20, max(size + 1, 1 << 12))
            if piece.count < pieceSize { piece = [UInt8](repeating: 0, count: pieceSize) }
            let name = file.split(separator: "/").last.map(String.init) ?? file
            var lineNumber = 0
            // Bytes read and not yet a whole line; no newline before `scanned`.
            var bytes: [UInt8] = []
            var scanned = 0
            while true {
                let count = try piece.withUnsafeMutableBytes { buffer in
                    Result { () throws(StoreError) in try RegularFile.readSome(fd, into: buffer, file) }
                }.get()
                if count == 0 { break }
                bytes.append(contentsOf: piece[..<count])
                var start = 0
                while let end = newline(in: bytes, from: scanned) {
                    lineNumber += 1
                    let place = "\(name):\(lineNumber)"
                    let line = try parse(bytes, start, end, place: place)
                    if let previous {
                        if line.version <= previous {
                            throw StoreError(.corrupt, "\(place): version \(line.version) goes back (after \(previous))")
                        }
                        if line.version != previous + 1 {
                            throw StoreError(
                                .corrupt,
                                "\(place): version \(line.version) follows \(previous): a gap of \(line.version - previous - 1) entries")
                        }
                    }
                    previous = line.version
                    if try !body(line) { return }
                    start = end + 1
                    scanned = start
                }
                bytes.removeSubrange(..<start)
                scanned = bytes.count
                if bytes.count > StoreLimits.maximumJSONTextSize {
                    throw StoreError(
                        .limit,
                        "\(name):\(lineNumber + 1): a line longer than the limit of \(StoreLimits.maximumJSONTextSize) bytes of JSON text")
                }
            }
            if !bytes.isEmpty {
                throw StoreError(
                    .corrupt,
                    "\(name):\(lineNumber + 1): the last line is torn (no newline at its end: the writer was stopped mid-line)")
            }
        }
    }

    /// The index of the first newline in `bytes` from `start`, if any (memchr: a line can be
    /// megabytes long).
    private static func newline(in bytes: [UInt8], from start: Int) -> Int? {
        bytes.withUnsafeBufferPointer { buffer in
            guard start < buffer.count, let base = buffer.baseAddress,
                  let found = memchr(base + start, 0x0A, buffer.count - start)
            else { return nil }
            return base.distance(to: found.assumingMemoryBound(to: UInt8.self))
        }
    }

    private static func parse(_ bytes: [UInt8], _ start: Int, _ end: Int, place: String) throws(StoreError)
        -> JournalEntry
    {
        let tree = try bytes.withUnsafeBufferPointer { (buffer) throws(StoreError) -> OpaquePointer? in
            do throws(StoreError) {
                // The line's own containers (the line, its patch, an operation) do not count
                // against its values' nesting: a payload or patch value may nest as deep as a
                // state may, which its decoding checks.
                return try JSONCText.parse(
                    UnsafeRawPointer(buffer.baseAddress! + start).assumingMemoryBound(to: CChar.self),
                    length: end - start, maximumDepth: StoreLimits.maximumNestingDepth + 1 + 3)
            } catch {
                throw StoreError(error.kind, "\(place): \(error.message)")
            }
        }
        let owner = JSONCTreeOwner(tree)
        guard let tree, json_object_get_type(tree) == json_type_object else {
            throw StoreError(.corrupt, "\(place): expected a JSON object")
        }
        func member(_ key: String) -> (found: Bool, value: OpaquePointer?) {
            var value: OpaquePointer?
            let found = json_object_object_get_ex(tree, key, &value) != 0
            return (found, value)
        }
        guard let version = versionNumber(member("version").value) else {
            throw StoreError(
                .corrupt, "\(place): \"version\" is missing or not a whole number from 1 to \(UInt64.max)")
        }
        let identifier = member("identifier").value
        guard json_object_get_type(identifier) == json_type_string else {
            throw StoreError(.corrupt, "\(place): \"identifier\" is missing or not a string")
        }
        let time = member("time").value
        guard json_object_get_type(time) == json_type_string else {
            throw StoreError(.corrupt, "\(place): \"time\" is missing or not a string")
        }
        let payload = member("payload")
        let batch = member("batch")
        let batchStart: UInt64?
        if batch.found {
            // A batch's first version: a whole number from 1 to this line's version.
            guard let first = versionNumber(batch.value), first <= version else {
                throw StoreError(
                    .corrupt, "\(place): \"batch\" is not a version from 1 to this line's \"version\"")
            }
            batchStart = first
        } else {
            batchStart = nil
        }
        let patch = member("patch")
        func reason(_ key: String) throws(StoreError) -> String? {
            let (found, value) = member(key)
            guard found else { return nil }
            guard json_object_get_type(value) == json_type_string else {
                throw StoreError(.corrupt, "\(place): \"\(key)\" is not a string")
            }
            return try text(value!, key)
        }
        /// A string member's whole text: U+0000 included, which a C string would end at.
        func text(_ node: OpaquePointer, _ key: String) throws(StoreError) -> String {
            let bytes = UnsafeRawBufferPointer(
                start: json_object_get_string(node), count: Int(json_object_get_string_len(node)))
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw StoreError(.corrupt, "\(place): \"\(key)\" is not UTF-8 text")
            }
            return text
        }
        let payloadError = try reason("payloadError")
        let patchError = try reason("patchError")
        let source = try reason("source")
        return JournalEntry(
            version: version,
            identifier: try text(identifier!, "identifier"),
            isTyped: json_object_get_boolean(member("typed").value) != 0,
            isReplayable: !(member("replayable").found && json_object_get_boolean(member("replayable").value) == 0),
            batch: batchStart,
            time: try text(time!, "time"),
            payloadError: payloadError, patchError: patchError, source: source,
            place: place, payloadTree: payload.value, patchTree: patch.found ? patch.value : nil,
            root: owner)
    }

    /// A version as a line holds it: an integer from 1 to `UInt64.max`, exactly. (json-c keeps
    /// integers above `Int64.max` as unsigned, where `json_object_get_int64` saturates; a negative
    /// one reads as 0 through `json_object_get_uint64`. Integer text past 64 bits is a double
    /// node, as is `1.0`.) Nil for anything else, 0 included: an entry's version is the store's
    /// version after its action.
    private static func versionNumber(_ node: OpaquePointer?) -> UInt64? {
        guard json_object_get_type(node) == json_type_int, json_object_get_int64(node) > 0 else { return nil }
        return json_object_get_uint64(node)
    }
}
