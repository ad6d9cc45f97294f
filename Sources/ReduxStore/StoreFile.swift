#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The saved-state file: the format (``SavedStateFormat``) read from a regular file with a
/// bound (``RegularFile``), and written by atomic replacement (``AtomicFile``). What one side
/// writes the other reads: writing refuses what reading would refuse, and leaves the old file
/// as it was.
@_spi(Bindings) public enum StoreFile {
    /// Writes `{"reduxstore": 1, "version": version, "state": state}` and a newline to `path`,
    /// atomically. Takes ownership of `state` (a json-c tree, NULL for null).
    ///
    /// - Throws: ``StoreError`` whose message starts `save PATH: `: ``StoreError/Kind/limit``
    ///   or ``StoreError/Kind/decode`` for a state or version a file cannot hold (see
    ///   ``SavedStateFormat``), ``StoreError/Kind/io`` for a target that is not a regular file
    ///   or a write that failed (see ``AtomicFile``). The file at `path` is then as it was.
    static func writeState(_ state: OpaquePointer?, version: UInt64, to path: String)
        throws(StoreError)
    {
        do {
            try SavedStateFormat.encode(state, version: version) { (text) throws(StoreError) in
                let end = SavedStateFormat.lineEnd
                try AtomicFile.replace(path, with: [
                    text, UnsafeRawBufferPointer(start: end.utf8Start, count: end.utf8CodeUnitCount),
                ])
            }
        } catch {
            throw StoreError(error.kind, codingPath: "", detail: "save \(path): \(error.message)")
        }
    }

    /// Reads a saved state of type `State` and its version.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io`` for a file that is missing,
    ///   unreadable or not a regular file (`open PATH: REASON`), ``StoreError/Kind/corrupt``
    ///   for one that is not a saved state of this type, larger than
    ///   ``StoreLimits/maximumJSONTextSize`` included (`PATH: not a saved state: …`).
    public static func readState<State: Decodable>(_ type: State.Type, from path: String)
        throws(StoreError) -> (State, UInt64)
    {
        let limit = StoreLimits.maximumJSONTextSize
        switch try RegularFile.read(path, maximumSize: limit) {
        case .larger:
            throw StoreError(
                .corrupt,
                "\(path): not a saved state: the file is larger than \(limit) bytes, the most a saved state may be")
        case .bytes(let bytes):
            do {
                return try bytes.withUnsafeBufferPointer { (buffer) throws(StoreError) in
                    try SavedStateFormat.decode(State.self, from: buffer)
                }
            } catch {
                throw StoreError(.corrupt, "\(path): \(error.message)")
            }
        }
    }
}

extension StoreError {
    /// A ``Kind/io`` error for the failed system call that set `errno`: `WHAT: REASON`.
    static func system(_ what: @autoclosure () -> String) -> StoreError {
        let reason = String(cString: strerror(errno))
        return StoreError(.io, "\(what()): \(reason)")
    }
}
