internal import CJSONC
internal import CReduxStoreAPI
@_spi(Bindings) import ReduxStore

/// A store created from C (`rdx_store_create`, `rdx_store_open`): a `Store<JSONCTree>` whose one
/// Swift reducer calls the C reducers.
final class JSONCTreeStoreCore: CStoreCore {
    let store: Store<JSONCTree>
    /// The identifiers the store was dispatched last without a payload: a dispatch of one of
    /// them is applied as a ``KeptCAction`` (``dispatch(kept:source:)``).
    let keptIdentifiers = KeptIdentifiers()

    private init(store: Store<JSONCTree>) {
        self.store = store
    }

    /// A new handle on a new store of `state`.
    static func makeHandle(
        state: JSONCTree, version: UInt64, reducers: [rdx_reducer],
        middleware: [rdx_middleware] = [], forwarding: CForwarding? = nil
    ) throws(StoreError) -> CStoreHandle {
        // The C reducers mutate the tree in place: each action reads the tree's root from the
        // state (a restore replaces the tree) and calls them with it, without going through the
        // Swift state. So no reducer holds the Swift state `inout`, and reads from inside a
        // reducer are sound.
        let reducers = try CReducers(reducers)
        let keeper = CActionKeeper()
        let owner = HandleReference()
        let store = Store(
            erasedReducer: { state, action in
                reducers.apply(action, to: state.assumingMemoryBound(to: JSONCTree.self).pointee.object)
            },
            adopting: state, version: version, readableInsideReducer: true,
            middleware: CMiddleware.chain(middleware, owner: owner),
            // A C action borrows the caller's identifier and payload: the journal and the
            // action log keep a copy.
            keeper: { keeper.keep($0) },
            refusingLocalChanges: forwarding == nil
                ? nil
                : "this store's order is decided by another library (a replicated store): its versions come from there")
        let handle = CStoreHandle(
            core: JSONCTreeStoreCore(store: store), forwarding: forwarding)
        // Only with middleware: a weak reference gives the handle a side table, after which
        // every retain and release of it takes the slow path (Benchmarks/README.md has the
        // figures).
        if !middleware.isEmpty { owner.handle = handle }
        return handle
    }

    func makeAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?)
        throws(StoreError) -> any Action
    {
        try CAction(copying: identifier, payload: payload)
    }

    func makeBatchAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?)
        throws(StoreError) -> any Action
    {
        // Not from inside a reducer: the batch is applied before the call returns, so the
        // actions borrow, as a single dispatch's does (a journal or action log keeps a copy).
        store.isInsideReducer
            ? try CAction(copying: identifier, payload: payload)
            : CAction(borrowing: identifier, payload: payload)
    }

    func dispatch(identifier: UnsafePointer<CChar>, payload: OpaquePointer?, source: DispatchSite)
        throws(StoreError)
    {
        if store.isInsideReducer {
            let action = try CAction(copying: identifier, payload: payload)
            store.dispatch(erased: action, notifies: action.notifiesObservers, source: source)
        } else {
            try store.checkMiddlewareDepth()
            let action = CAction(borrowing: identifier, payload: payload)
            store.dispatch(erased: action, notifies: action.notifiesObservers, source: source)
        }
    }

    /// Applies now an action without a payload whose identifier is `identifier`, a kept copy
    /// (``KeptIdentifiers``). The action owns what it holds: from inside a reducer it is queued
    /// as it is, with no copy (and no middleware depth counts there).
    @inline(__always)
    func dispatch(kept identifier: UnsafePointer<CChar>, source: DispatchSite) throws(StoreError) {
        try store.checkMiddlewareDepth()
        let action = KeptCAction(identifierPointer: identifier)
        store.dispatch(erased: action, notifies: action.notifiesObservers, source: source)
    }
}
