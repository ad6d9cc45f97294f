internal import CJSONC

extension Store {
    /// Writes the state and its version to `path`, atomically: the file is written to a
    /// temporary file of its own in the same folder, synced, renamed over `path`, and the
    /// folder synced. A crash at any instant leaves either the old file or the new one, whole;
    /// saves of one path from several threads or processes at once each put one whole file in
    /// place.
    ///
    /// The file is JSON text: `{"reduxstore": 1, "version": 12, "state": …}`, the state encoded by
    /// ``JSONCEncoder``. The encode runs under the store's lock (a consistent version), the
    /// checks and the writing outside it.
    ///
    /// What `save` writes, ``init(contentsOf:reducers:)-(_,[Reducer<State>])`` opens: a state or version a
    /// file cannot hold is refused before anything is written. Only a regular file is replaced (or a name
    /// nothing has yet); it keeps its mode, and its owner where the process may set it.
    ///
    /// - Throws: ``StoreError`` whose message starts `save PATH: `, and the file at `path` is as
    ///   it was:
    ///   - ``StoreError/Kind/io``: the target is not a regular file (a folder, a device, a FIFO,
    ///     a symbolic link), or the folder cannot be written, or a write or sync failed;
    ///   - ``StoreError/Kind/limit``: the text would be larger than
    ///     ``StoreLimits/maximumJSONTextSize``, the state nests deeper than
    ///     ``StoreLimits/maximumNestingDepth``, or the version is 2^63 - 1 or more;
    ///   - ``StoreError/Kind/encode``: the state's `encode(to:)` throws, or it encodes a NaN or
    ///     an infinity;
    ///   - ``StoreError/Kind/decode``: a json-c tree state holds a NaN, an
    ///     infinity or a string that is not valid UTF-8.
    public func save(to path: String) throws(StoreError) {
        _ = try save(to: path, unlessVersion: nil)
    }

    /// Saves unless the version is `unlessVersion`; returns the version saved, nil when nothing
    /// was to save. The check and the encode happen under one lock, so the version returned is
    /// the one in the file.
    func save(to path: String, unlessVersion: UInt64?) throws(StoreError) -> UInt64? {
        let encoded = try withLockedState { (state, version) -> Result<(OpaquePointer?, UInt64)?, StoreError> in
            if version == unlessVersion { return .success(nil) }
            do throws(StoreError) {
                return .success((try JSONCEncoder().encode(state), version))
            } catch {
                return .failure(error)
            }
        }
        let tree: OpaquePointer?
        let version: UInt64
        switch encoded {
        case .success(nil): return nil
        case .success(let .some(encoded)): (tree, version) = encoded
        case .failure(let error):
            throw StoreError(error.kind, codingPath: "", detail: "save \(path): \(error.message)")
        }
        try StoreFile.writeState(tree, version: version, to: path)
        return version
    }

    /// Opens a store saved by ``save(to:)``: its state and version as they were saved, with these
    /// reducers.
    ///
    /// Reads regular files only (a symbolic link to one is followed), at most
    /// ``StoreLimits/maximumJSONTextSize`` bytes, and never blocks: a FIFO or a device is
    /// refused without reading.
    ///
    /// - Throws: ``StoreError`` of kind ``StoreError/Kind/io`` for a file that is missing,
    ///   unreadable or not a regular file, ``StoreError/Kind/corrupt`` for a file that is not a
    ///   saved state of this type, or larger than ``StoreLimits/maximumJSONTextSize`` (the
    ///   message names the file and the coding path). The file is never changed.
    public convenience init(contentsOf path: String, reducers: [Reducer<State>]) throws(StoreError) {
        let (state, version) = try StoreFile.readState(State.self, from: path)
        self.init(reducers: reducers, adopting: state, version: version)
    }
}
