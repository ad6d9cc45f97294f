// The C functions of include/reduxstore.h's composition part: middleware, batches, and
// observing one value. Thin, as the rest of the C face: checks, then the core.
internal import CJSONC
public import CReduxStoreAPI
@_spi(Bindings) import ReduxStore

@c @implementation
public func rdx_store_create_with_middleware(
    _ initialState: OpaquePointer?, _ reducers: UnsafePointer<rdx_reducer>?, _ reducerCount: Int,
    _ middleware: UnsafePointer<rdx_middleware>?, _ middlewareCount: Int,
    _ status: UnsafeMutablePointer<rdx_status>?
) -> OpaquePointer? {
    constructing(status) { () throws(StoreError) in
        let reducers = try CReducerList.check(reducers, reducerCount)
        let middleware = try CMiddleware.check(middleware, middlewareCount)
        let initialState = try CInput.required(initialState, "initial_state")
        try CInput.tree(initialState, "initial_state")
        let state = JSONCTree(adopting: try JSONCTree.deepCopy(initialState))
        return try JSONCTreeStoreCore.makeHandle(
            state: state, version: 0, reducers: reducers, middleware: middleware)
    }
}

@c @implementation
public func rdx_next_action(
    _ next: OpaquePointer?, _ identifier: UnsafePointer<CChar>?, _ payload: OpaquePointer?
) -> rdx_status {
    status { () throws(StoreError) in
        let link = try CNextLinks.link(try CInput.required(next, "next"))
        let identifier = try CInput.identifier(identifier)
        try CInput.tree(payload, "payload")
        try link.pointee.pass(identifier: identifier, payload: payload)
    }
}

@c @implementation
public func rdx_store_observe_pointer(
    _ store: OpaquePointer?, _ pointer: UnsafePointer<CChar>?, _ observer: rdx_observer_fn?,
    _ context: UnsafeMutableRawPointer?
) -> UInt64 {
    observePointer(store, pointer, observer, context, nil)
}

@c @implementation
public func rdx_store_observe_pointer_full(
    _ store: OpaquePointer?, _ pointer: UnsafePointer<CChar>?, _ observer: rdx_observer_fn?,
    _ context: UnsafeMutableRawPointer?, _ releaseContext: rdx_release_fn?
) -> UInt64 {
    observePointer(store, pointer, observer, context, releaseContext)
}

@c @implementation
public func rdx_store_current_value(
    _ store: OpaquePointer?, _ pointer: UnsafePointer<CChar>?
) -> OpaquePointer? {
    recording(nil) { () throws(StoreError) -> OpaquePointer? in
        return try CStoreHandle.with(store) { (handle) throws(StoreError) -> OpaquePointer? in
            let pointer = try JSONPointerText(checking: pointer)
            let (value, found) = try handle.core.currentValue(at: pointer.text)
            guard found else {
                throw StoreError(
                    .invalidArgument,
                    "pointer \"\(String(cString: pointer.text))\": no value there in the state")
            }
            if value == nil { LastError.set("") }
            return value
        }
    }
}

/// `rdx_store_observe_pointer` and `rdx_store_observe_pointer_full`.
private func observePointer(
    _ store: OpaquePointer?, _ pointer: UnsafePointer<CChar>?, _ observer: rdx_observer_fn?,
    _ context: UnsafeMutableRawPointer?, _ release: rdx_release_fn?
) -> UInt64 {
    recording(0) { () throws(StoreError) -> UInt64 in
        return try CStoreHandle.with(store) { (handle) throws(StoreError) in
            let pointer = try JSONPointerText(checking: pointer)
            let observer = try CInput.required(observer, "observer")
            return handle.observe(
                pointer: pointer, observer: observer, context: context, release: release
            ).rawValue
        }
    }
}
