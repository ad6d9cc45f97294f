// The C functions of include/reduxstore.h. Each is `@c @implementation`: the compiler checks it
// against its declaration in the header. Each only checks its arguments, calls the Swift core
// through the handle's kind of store, and turns a StoreError into a status and this thread's
// last error.
internal import CJSONC
// Public: the exported C functions use the header's types in their signatures.
public import CReduxStoreAPI
@_spi(Bindings) import ReduxStore

@c @implementation
public func rdx_store_create(
    _ initialState: OpaquePointer?, _ reducers: UnsafePointer<rdx_reducer>?, _ reducerCount: Int,
    _ status: UnsafeMutablePointer<rdx_status>?
) -> OpaquePointer? {
    constructing(status) { () throws(StoreError) in
        let reducers = try CReducerList.check(reducers, reducerCount)
        // NULL is how json-c's parsers say they failed: never taken for a null state.
        let initialState = try CInput.required(initialState, "initial_state")
        // Checked here with its name in the words; then copied as it is (not checked again).
        try CInput.tree(initialState, "initial_state")
        let state = JSONCTree(adopting: try JSONCTree.deepCopy(initialState))
        return try JSONCTreeStoreCore.makeHandle(state: state, version: 0, reducers: reducers)
    }
}

@c @implementation
public func rdx_store_open(
    _ path: UnsafePointer<CChar>?, _ reducers: UnsafePointer<rdx_reducer>?, _ reducerCount: Int,
    _ status: UnsafeMutablePointer<rdx_status>?
) -> OpaquePointer? {
    constructing(status) { () throws(StoreError) in
        let path = String(cString: try CInput.required(path, "path"))
        let reducers = try CReducerList.check(reducers, reducerCount)
        let (state, version) = try StoreFile.readState(JSONCTree.self, from: path)
        guard state.object != nil else {
            throw StoreError(
                .corrupt, "\(path): state: null cannot be a C store's state (its reducers "
                    + "could not mutate it)")
        }
        return try JSONCTreeStoreCore.makeHandle(state: state, version: version, reducers: reducers)
    }
}

@c @implementation
public func rdx_store_flush(_ store: OpaquePointer?) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            try handle.checkCanEnqueue()
            handle.core.flush()
        }
    }
}

@c @implementation
public func rdx_store_current_state(_ store: OpaquePointer?) -> OpaquePointer? {
    recording(nil) { () throws(StoreError) -> OpaquePointer? in
        return try CStoreHandle.with(store) { (handle) throws(StoreError) in
            try handle.core.currentState().tree
        }
    }
}

@c @implementation
public func rdx_store_current_state_version(
    _ store: OpaquePointer?, _ version: UnsafeMutablePointer<UInt64>?
) -> OpaquePointer? {
    recording(nil) { () throws(StoreError) -> OpaquePointer? in
        let version = try CInput.required(version, "version")
        return try CStoreHandle.with(store) { (handle) throws(StoreError) in
            let (tree, at) = try handle.core.currentState()
            version.pointee = at
            return tree
        }
    }
}

@c @implementation
public func rdx_store_version(_ store: OpaquePointer?) -> UInt64 {
    guard let version = try? CStoreHandle.with(store, { $0.core.version }) else {
        LastError.set("store is NULL")
        return 0
    }
    return version
}

@c @implementation
public func rdx_store_add_observer(
    _ store: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ observer: rdx_observer_fn?,
    _ context: UnsafeMutableRawPointer?
) -> UInt64 {
    addObserver(store, name, observer, context, nil)
}

@c @implementation
public func rdx_store_add_observer_full(
    _ store: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ observer: rdx_observer_fn?,
    _ context: UnsafeMutableRawPointer?, _ releaseContext: rdx_release_fn?
) -> UInt64 {
    addObserver(store, name, observer, context, releaseContext)
}

@c @implementation
public func rdx_store_remove_observer(_ store: OpaquePointer?, _ token: UInt64) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            guard token != 0, handle.removeObserver(rawValue: token) else {
                throw StoreError(
                    .invalidArgument, "observer token \(token) is not registered with this store")
            }
        }
    }
}

@c @implementation
public func rdx_store_save(_ store: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            let path = String(cString: try CInput.required(path, "path"))
            try handle.core.save(to: path)
        }
    }
}

@c @implementation
public func rdx_store_retain(_ store: OpaquePointer?) -> OpaquePointer? {
    guard let store else { return nil }
    CStoreHandle.unretained(store).retain()
    return store
}

@c @implementation
public func rdx_store_release(_ store: OpaquePointer?) {
    guard let store else { return }
    let handle = CStoreHandle.unretained(store)
    withExtendedLifetime(handle) { handle.release() }
}

@c @implementation
public func rdx_status_string(_ status: rdx_status) -> UnsafePointer<CChar>? {
    switch status {
    case RDX_OK: StaticText.pointer("ok")
    case RDX_EINVAL: StaticText.pointer("invalid argument")
    case RDX_EPARSE: StaticText.pointer("JSON text does not parse")
    case RDX_EDECODE: StaticText.pointer("JSON does not decode")
    case RDX_ELIMIT: StaticText.pointer("input past a limit")
    case RDX_EIO: StaticText.pointer("input/output error")
    case RDX_ECORRUPT: StaticText.pointer("not a valid saved state")
    case RDX_ENOMEM: StaticText.pointer("out of memory")
    default: StaticText.pointer("unknown status")
    }
}

@c @implementation
public func rdx_last_error() -> UnsafePointer<CChar>? {
    LastError.current
}

@c @implementation
public func rdx_set_last_error(_ message: UnsafePointer<CChar>?) {
    LastError.set(message.map { String(cString: $0) } ?? "")
}

@c @implementation
public func rdx_version() -> UnsafePointer<CChar>? {
    StaticText.libraryVersion
}

/// `rdx_store_add_observer` and `rdx_store_add_observer_full`.
private func addObserver(
    _ store: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ observer: rdx_observer_fn?,
    _ context: UnsafeMutableRawPointer?, _ release: rdx_release_fn?
) -> UInt64 {
    recording(0) { () throws(StoreError) -> UInt64 in
        return try CStoreHandle.with(store) { (handle) throws(StoreError) in
            let observer = try CInput.required(observer, "observer")
            return handle.addObserver(
                name: name, observer: observer, context: context, release: release
            ).rawValue
        }
    }
}

/// Runs a constructor: a NEW `rdx_store *` and `RDX_OK`, or NULL and the failure's status.
func constructing(
    _ status: UnsafeMutablePointer<rdx_status>?,
    _ body: () throws(StoreError) -> CStoreHandle
) -> OpaquePointer? {
    do {
        let handle = try body()
        status?.pointee = RDX_OK
        return handle.openedPointer()
    } catch {
        status?.pointee = error.record()
        return nil
    }
}
