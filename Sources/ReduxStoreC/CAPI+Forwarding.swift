// The C functions of include/reduxstore.h's "Stores whose order another library decides": for a
// library layered on this one (libreduxstore-postgres.so) that orders a store's actions itself.
internal import CJSONC
public import CReduxStoreAPI
@_spi(Bindings) import ReduxStore

@c @implementation
public func rdx_store_create_forwarding(
    _ state: OpaquePointer?, _ version: UInt64, _ reducers: UnsafePointer<rdx_reducer>?, _ reducerCount: Int,
    _ forward: rdx_forward_fn?, _ context: UnsafeMutableRawPointer?, _ releaseContext: rdx_release_fn?,
    _ status: UnsafeMutablePointer<rdx_status>?
) -> OpaquePointer? {
    constructing(status) { () throws(StoreError) in
        let reducers = try CReducerList.check(reducers, reducerCount)
        let state = try CInput.required(state, "state")
        guard let forward else { throw StoreError(.invalidArgument, "forward is NULL") }
        try CInput.tree(state, "state")
        let tree = JSONCTree(adopting: try JSONCTree.deepCopy(state))
        return try JSONCTreeStoreCore.makeHandle(
            state: tree, version: version, reducers: reducers,
            forwarding: CForwarding(function: forward, context: context, release: releaseContext))
    }
}

@c @implementation
public func rdx_store_apply_forwarded(
    _ store: OpaquePointer?, _ context: UnsafeMutableRawPointer?, _ identifier: UnsafePointer<CChar>?,
    _ payload: OpaquePointer?, _ source: UnsafePointer<CChar>?
) -> rdx_status {
    status { () throws(StoreError) in
        try CStoreHandle.with(store) { (handle) throws(StoreError) in
            guard let forwarding = handle.forwarding else {
                throw StoreError(
                    .invalidArgument,
                    "rdx_store_apply_forwarded: the store is not a forwarding one (rdx_store_create_forwarding)")
            }
            guard forwarding.context == context else {
                throw StoreError(
                    .invalidArgument,
                    "rdx_store_apply_forwarded: the context is not the one the store was created with: only the library that decides this store's order (a replicated store's stream) applies actions to it; nothing was applied")
            }
            let identifier = try CInput.identifier(identifier)
            try CInput.tree(payload, "payload")
            let site = source.map { DispatchSite(stored: String(cString: $0)) } ?? .unknown
            try forwarding.applying { () throws(StoreError) in
                try handle.core.dispatch(identifier: identifier, payload: payload, source: site)
            }
        }
    }
}
