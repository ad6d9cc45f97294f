internal import CJSONC
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Store {
    /// Writes the state and its version to `path`, atomically: the file is written to a temporary
    /// file in the same folder, synced, renamed over `path`, and the folder synced. A crash at any
    /// instant leaves either the old file or the new one, whole.
    ///
    /// The file is JSON text: `{"reduxstore": 1, "version": 12, "state": …}`, the state encoded by
    /// ``JSONCEncoder``. The encode runs under the store's lock (a consistent version), the
    /// writing outside it.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io`` naming the file and the system's
    ///   reason, or ``StoreError/Kind/decode`` when the state does not encode.
    public func save(to path: String) throws(StoreError) {
        let (tree, version) = try withLockedState {
            (state, version) throws(StoreError) -> (OpaquePointer?, UInt64) in
            (try JSONCEncoder().encode(state), version)
        }
        try StoreFile.writeState(tree, version: version, to: path)
    }

    /// Opens a store saved by ``save(to:)``: its state and version as they were saved, with these
    /// reducers.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io`` for a file that is missing or
    ///   unreadable, ``StoreError/Kind/corrupt`` for a file that is not a saved state of this
    ///   type (the message names the file and the coding path). The file is never changed.
    public convenience init(contentsOf path: String, reducers: [Reducer<State>]) throws(StoreError) {
        let (state, version) = try StoreFile.readState(State.self, from: path)
        self.init(reducers: reducers, adopting: state, version: version)
    }
}

/// The saved-state file: reading and atomic writing.
package enum StoreFile {
    /// The format marker's key and value: `"reduxstore": 1`.
    static let formatKey = "reduxstore"
    static let formatVersion: Int64 = 1

    /// Saves in one process are serialized, so two saves to one path never share the temporary.
    private static let saving = Locked<Void>(())

    /// Writes `{"reduxstore": 1, "version": version, "state": state}` atomically. Takes
    /// ownership of `state` (a json-c tree, NULL for null).
    package static func writeState(_ state: OpaquePointer?, version: UInt64, to path: String)
        throws(StoreError)
    {
        guard let root = json_object_new_object() else {
            json_object_put(state)
            throw StoreError(.outOfMemory, "save \(path): out of memory")
        }
        defer { json_object_put(root) }
        json_object_object_add(root, formatKey, json_object_new_int64(formatVersion))
        json_object_object_add(root, "version", json_object_new_uint64(version))
        json_object_object_add(root, "state", state)
        let text = try JSONC.print(root, pretty: false) + "\n"
        try saving.withLock { _ throws(StoreError) in try writeAtomically(text, to: path) }
    }

    /// Reads a saved state of type `State` and its version.
    package static func readState<State: Decodable>(_ type: State.Type, from path: String)
        throws(StoreError) -> (State, UInt64)
    {
        let bytes = try readFile(path)
        let root: OpaquePointer?
        do {
            root = try bytes.withUnsafeBufferPointer { (buffer) throws(StoreError) in
                try JSONC.parse(buffer, maximumDepth: StoreLimits.maximumNestingDepth + 2)
            }
        } catch {
            throw StoreError(.corrupt, "\(path): not a saved state: \(error.message)")
        }
        defer { json_object_put(root) }
        guard let root, json_object_get_type(root) == json_type_object else {
            throw StoreError(.corrupt, "\(path): not a saved state: expected object, found \(JSONC.kindName(root))")
        }
        var marker: OpaquePointer?
        guard json_object_object_get_ex(root, formatKey, &marker) != 0,
              json_object_get_type(marker) == json_type_int,
              json_object_get_int64(marker) == formatVersion
        else {
            throw StoreError(.corrupt, "\(path): not a saved state: \(formatKey): expected \(formatVersion)")
        }
        var versionNode: OpaquePointer?
        // json-c clamps what it cannot hold, so both readings must agree: 0 ..< 2^63.
        guard json_object_object_get_ex(root, "version", &versionNode) != 0,
              json_object_get_type(versionNode) == json_type_int,
              json_object_get_int64(versionNode) >= 0,
              json_object_get_uint64(versionNode) <= UInt64(Int64.max) - 1
        else {
            throw StoreError(.corrupt, "\(path): not a saved state: version: expected a whole number from 0 to 2^63 - 2")
        }
        let version = json_object_get_uint64(versionNode)
        var stateNode: OpaquePointer?
        guard json_object_object_get_ex(root, "state", &stateNode) != 0 else {
            throw StoreError(.corrupt, "\(path): not a saved state: state: key not found")
        }
        do {
            return (try JSONCDecoder().decode(State.self, from: stateNode), version)
        } catch {
            let located = StoreError(coding: error, prefix: "state")
            throw StoreError(.corrupt, "\(path): \(located.message)")
        }
    }

    private static func systemError(_ what: String, _ path: String) -> StoreError {
        StoreError(.io, "\(what) \(path): \(String(cString: strerror(errno)))")
    }

    private static func readFile(_ path: String) throws(StoreError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw systemError("open", path) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw systemError("read", path)
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return bytes
    }

    private static func writeAtomically(_ text: String, to path: String) throws(StoreError) {
        let folder: String
        let name: String
        if let slash = path.lastIndex(of: "/") {
            folder = slash == path.startIndex ? "/" : String(path[..<slash])
            name = String(path[path.index(after: slash)...])
        } else {
            folder = "."
            name = path
        }
        guard !name.isEmpty else { throw StoreError(.io, "save \(path): not a file name") }
        // One fixed temporary per target: a crash leaves at most this file, and the next
        // successful save renames it away.
        let temporary = folder == "/" ? "/.\(name).tmp" : "\(folder)/.\(name).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw systemError("create", temporary) }
        let bytes = Array(text.utf8)
        var written = 0
        let ok = bytes.withUnsafeBytes { buffer -> Bool in
            while written < buffer.count {
                let count = write(fd, buffer.baseAddress! + written, buffer.count - written)
                if count < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                written += count
            }
            return true
        }
        guard ok else {
            let error = systemError("write", temporary)
            close(fd)
            unlink(temporary)
            throw error
        }
        guard fsync(fd) == 0 else {
            let error = systemError("fsync", temporary)
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = systemError("rename to", path)
            unlink(temporary)
            throw error
        }
        let folderFD = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folderFD >= 0 else { throw systemError("open folder", folder) }
        defer { close(folderFD) }
        guard fsync(folderFD) == 0 else { throw systemError("fsync folder", folder) }
    }
}
