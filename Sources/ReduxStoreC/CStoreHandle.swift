internal import CReduxStoreAPI
import ReduxStore
import Synchronization

/// The object behind an `rdx_store *`, reference-counted by `rdx_store_retain` and
/// `rdx_store_release` through `Unmanaged`.
///
/// Each kind of store is a subclass of ``StoreHandle``: ``JSONStateStore`` (a store C created
/// around a json-c tree) and ``SwiftStoreHandle`` (a Swift `Store<State>` handed to C). A C
/// function reaches it through one virtual call on the borrowed handle: no existential, no retain.
class CStoreHandle: @unchecked Sendable {
    // @unchecked: the only state is the Mutex-guarded token set; subclasses are Sendable.

    /// The observers C registered through this handle. They are removed when the handle goes, so
    /// a Swift store that outlives its C handle never calls C with a freed `rdx_store *`.
    private let tokens = Locked<Set<ObserverToken>>([])

    init() {}

    deinit {
        // The last release waits for what C enqueued, so no reducer or observer of C's runs
        // after rdx_store_release() returned. (Stored properties of the subclass are destroyed
        // only after this deinit ran.)
        flush()
        for token in tokens.withLock({ $0 }) { _ = removeStoreObserver(token) }
    }

    // MARK: What each kind of store provides

    /// Applies (`enqueue` false) or enqueues an action. `identifier` and `payload` are borrowed
    /// and already checked; what is kept past the call is copied.
    func dispatch(identifier: UnsafePointer<CChar>, payload: OpaquePointer?, enqueue: Bool)
        throws(StoreError)
    { preconditionFailure("every kind of C store overrides \(#function)") }

    /// A NEW json-c tree of the state.
    func currentState() throws(StoreError) -> OpaquePointer? {
        preconditionFailure("every kind of C store overrides \(#function)")
    }

    var version: UInt64 { preconditionFailure("every kind of C store overrides \(#function)") }

    func flush() { preconditionFailure("every kind of C store overrides \(#function)") }

    func addStoreObserver(
        name: StoreNotification.Name?, using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken { preconditionFailure("every kind of C store overrides \(#function)") }

    func removeStoreObserver(_ token: ObserverToken) -> Bool {
        preconditionFailure("every kind of C store overrides \(#function)")
    }

    func save(to path: String) throws(StoreError) {
        preconditionFailure("every kind of C store overrides \(#function)")
    }

    // MARK: Shared

    /// A NEW reference as an `rdx_store *`.
    func retainedPointer() -> OpaquePointer {
        OpaquePointer(Unmanaged.passRetained(self).toOpaque())
    }

    /// Runs `body` with the handle behind a pointer C passed in, borrowed for the call (C holds a
    /// reference, so no retain is needed); `RDX_EINVAL` for NULL.
    static func with<T>(
        _ pointer: OpaquePointer?, _ body: (CStoreHandle) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        guard let pointer else { throw StoreError(.invalidArgument, "store is NULL") }
        let result = Unmanaged<CStoreHandle>.fromOpaque(UnsafeRawPointer(pointer))
            ._withUnsafeGuaranteedRef { handle in
                Result { () throws(StoreError) -> T in try body(handle) }
            }
        return try result.get()
    }

    /// Registers a C observer; it is called with this handle as its `rdx_store *`.
    func addObserver(
        name: UnsafePointer<CChar>?, observer: @escaping rdx_observer_fn,
        context: UnsafeMutableRawPointer?
    ) -> ObserverToken {
        let call = CObserverCall(
            function: observer, context: context,
            store: OpaquePointer(Unmanaged.passUnretained(self).toOpaque()))
        let name = name.map { StoreNotification.Name(String(cString: $0)) }
        let token = addStoreObserver(name: name) { notification in call(notification) }
        tokens.withLock { _ = $0.insert(token) }
        return token
    }

    /// Removes an observer registered through this handle; `false` for any other token.
    func removeObserver(_ token: ObserverToken) -> Bool {
        guard tokens.withLock({ $0.remove(token) }) != nil else { return false }
        return removeStoreObserver(token)
    }
}

/// A C observer and what it is called with.
struct CObserverCall: @unchecked Sendable {
    // @unchecked: C promised the function may be called from any thread with this context; the
    // store pointer is the handle, which outlives its observers.
    let function: rdx_observer_fn
    let context: UnsafeMutableRawPointer?
    let store: OpaquePointer

    func callAsFunction(_ notification: StoreNotification) {
        if notification.name == .stateDidChange {
            function(store, StaticText.stateDidChange, notification.version, context)
        } else {
            notification.name.rawValue.withCString {
                function(store, $0, notification.version, context)
            }
        }
    }
}

/// A handle on a `Store<State>`: what every kind of C store does the same way. Subclasses say how
/// C's actions become the store's.
class StoreHandle<State: Codable>: CStoreHandle, @unchecked Sendable {
    // @unchecked: `store` is Sendable; the rest is the base class's.
    let store: Store<State>

    init(store: Store<State>) {
        self.store = store
        super.init()
    }

    /// The state encoded to a new json-c tree, under the store's lock (a json-c state is copied
    /// as a tree: ``JSONCEncoder`` passes trees straight through).
    override func currentState() throws(StoreError) -> OpaquePointer? {
        try store.withLockedState { (state, _) throws(StoreError) in
            try JSONCEncoder().encode(state)
        }
    }

    override var version: UInt64 { store.version }
    override func flush() { store.flush() }

    override func addStoreObserver(
        name: StoreNotification.Name?, using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken {
        store.addObserver(named: name, queue: nil, using: block)
    }

    override func removeStoreObserver(_ token: ObserverToken) -> Bool {
        store.removeObserver(token)
    }

    override func save(to path: String) throws(StoreError) { try store.save(to: path) }
}
