internal import CJSONC
internal import CReduxStoreAPI
import ReduxStore
import Synchronization

/// The object behind an `rdx_store *`.
///
/// C's references are counted here (`rdx_store_retain`, `rdx_store_release`), apart from Swift's:
/// while C holds any, the handle keeps itself alive (`lifecycle.keepAlive`). When the last one is
/// dropped, ``close()`` applies what C enqueued, removes C's observers and lets the handle go; an
/// observer that retains the store meanwhile simply becomes its owner, and the store lives on.
/// Each C function holds a Swift reference to the handle for the whole call, and each C observer
/// holds one for its call, so a callback may release, retain or remove anything.
///
/// Each kind of store is a subclass of ``StoreHandle``: ``JSONCTreeStoreHandle`` (a store C
/// created around a json-c tree) and ``SwiftStoreHandle`` (a Swift `Store<State>` handed to C).
class CStoreHandle: @unchecked Sendable {
    // @unchecked: `references` is atomic, `lifecycle` is behind its lock; subclasses are Sendable.

    /// C's references.
    private let references = Atomic<Int>(1)
    private let lifecycle = Locked(Lifecycle())

    private struct Lifecycle {
        /// The handle itself while C holds references; dropped by ``close()``.
        var keepAlive: CStoreHandle?
        /// The observers C registered through this handle, removed when it closes.
        var tokens: Set<ObserverToken> = []
        /// Set by ``close()``: enqueueing is refused from then on.
        var closed = false
        /// An action was enqueued through this handle since ``close()`` last flushed.
        var enqueuedSinceFlush = false
    }

    init() {}

    // MARK: What each kind of store provides

    /// Applies (`enqueue` false) or enqueues an action. `identifier` and `payload` are borrowed
    /// and already checked; what is kept past the call is copied.
    func dispatch(identifier: UnsafePointer<CChar>, payload: OpaquePointer?, enqueue: Bool)
        throws(StoreError)
    { preconditionFailure("every kind of C store overrides \(#function)") }

    /// An action of this store's kind for C's identifier and payload (borrowed, already
    /// checked), owning what it keeps: it may be applied after the call.
    func makeAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?) throws(StoreError)
        -> any Action
    { preconditionFailure("every kind of C store overrides \(#function)") }

    /// Applies `actions` as one batch; ``StoreError/Kind/limit`` from inside too many
    /// middleware calls (``Store/checkMiddlewareDepth()``).
    func dispatchBatch(_ actions: [any Action]) throws(StoreError) {
        preconditionFailure("every kind of C store overrides \(#function)")
    }

    /// ``Store/startJournal(at:options:)`` and ``Store/stopJournal()``.
    func startJournal(at path: String, recordPatches: Bool) throws(StoreError) {
        preconditionFailure("every kind of C store overrides \(#function)")
    }

    func stopJournal() throws(StoreError) { preconditionFailure("every kind of C store overrides \(#function)") }

    /// ``Store/flushJournal()``.
    func flushJournal() throws(StoreError) { preconditionFailure("every kind of C store overrides \(#function)") }

    /// The selection of the value at `pointer` in this store's state.
    func makeSelection(_ pointer: JSONPointerText) -> StateSelection {
        preconditionFailure("every kind of C store overrides \(#function)")
    }

    /// A NEW json-c tree of the value at `pointer` in the state; `found` false when absent.
    func currentValue(at pointer: UnsafePointer<CChar>) throws(StoreError)
        -> (value: OpaquePointer?, found: Bool)
    { preconditionFailure("every kind of C store overrides \(#function)") }

    /// A NEW json-c tree of the state.
    func currentState() throws(StoreError) -> OpaquePointer? {
        preconditionFailure("every kind of C store overrides \(#function)")
    }

    var version: UInt64 { preconditionFailure("every kind of C store overrides \(#function)") }

    /// Whether enqueueing and flushing work in this process (not in a forked child).
    var canEnqueue: Bool { preconditionFailure("every kind of C store overrides \(#function)") }

    func flush() { preconditionFailure("every kind of C store overrides \(#function)") }

    func addStoreObserver(
        name: StoreNotification.Name?, onRelease: (@Sendable () -> Void)?,
        selecting selection: StateSelection?,
        using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken { preconditionFailure("every kind of C store overrides \(#function)") }

    func removeStoreObserver(_ token: ObserverToken) -> Bool {
        preconditionFailure("every kind of C store overrides \(#function)")
    }

    func save(to path: String) throws(StoreError) {
        preconditionFailure("every kind of C store overrides \(#function)")
    }

    // MARK: C's references

    /// The handle as a NEW `rdx_store *` with one C reference: the handle keeps itself alive
    /// until that reference and any added later are released.
    func openedPointer() -> OpaquePointer {
        lifecycle.withLock { $0.keepAlive = self }
        return OpaquePointer(Unmanaged.passUnretained(self).toOpaque())
    }

    /// `rdx_store_retain`.
    func retain() {
        references.wrappingAdd(1, ordering: .relaxed)
    }

    /// `rdx_store_release`: the last reference closes the handle.
    func release() {
        if references.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
            close()
        }
    }

    /// Applies everything enqueued through this handle (its reducers and observers run before
    /// this returns, and may enqueue more), refuses further enqueueing, removes C's observers
    /// and drops the handle's hold on itself. If a callback retained the store meanwhile, the
    /// store stays open: its new owner's last release closes it.
    private func close() {
        // (In a forked child nothing could be enqueued, and the queue does not run.)
        while canEnqueue {
            lifecycle.withLock { $0.enqueuedSinceFlush = false }
            flush()
            if !lifecycle.withLock({ $0.enqueuedSinceFlush }) { break }
        }
        let tokens = lifecycle.withLock { state -> Set<ObserverToken>? in
            // A retain after the count reached 0 revived the store; a concurrent close of that
            // owner's release may have closed it already.
            guard !state.closed, references.load(ordering: .acquiring) == 0 else { return nil }
            state.closed = true
            defer { state.tokens = [] }
            return state.tokens
        }
        guard let tokens else { return }
        for token in tokens { _ = removeStoreObserver(token) }
        lifecycle.withLock { $0.keepAlive = nil }
    }

    /// Runs `body` with the handle behind a pointer C passed in, holding a Swift reference to it
    /// for the whole call; `RDX_EINVAL` for NULL.
    static func with<T>(
        _ pointer: OpaquePointer?, _ body: (CStoreHandle) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        guard let pointer else { throw StoreError(.invalidArgument, "store is NULL") }
        let handle = Unmanaged<CStoreHandle>.fromOpaque(UnsafeRawPointer(pointer))
            .takeUnretainedValue()
        return try withExtendedLifetime(handle) { () throws(StoreError) -> T in
            try body(handle)
        }
    }

    /// Refuses enqueueing and flushing in a child made by `fork()`, where the store's queue
    /// (libdispatch) does not run: they could never finish.
    func checkCanEnqueue() throws(StoreError) {
        guard canEnqueue else {
            throw StoreError(
                .invalidArgument,
                "enqueue and flush do not work in a child process made by fork(): the store's "
                    + "queue runs on libdispatch, which such a child cannot use (exec first)")
        }
    }

    /// The handle behind a pointer C passed in, for `rdx_store_retain` and `rdx_store_release`.
    static func unretained(_ pointer: OpaquePointer) -> CStoreHandle {
        Unmanaged<CStoreHandle>.fromOpaque(UnsafeRawPointer(pointer)).takeUnretainedValue()
    }

    /// Enqueues through `body` unless the handle was closed (its last reference released).
    func enqueueing(_ body: () throws(StoreError) -> Void) throws(StoreError) {
        try lifecycle.withLock { (state) throws(StoreError) in
            guard !state.closed else {
                throw StoreError(
                    .invalidArgument,
                    "store was released: its last reference is gone, so it applies nothing more")
            }
            state.enqueuedSinceFlush = true
            try body()
        }
    }

    /// Registers a C observer; it is called with this handle as its `rdx_store *`, and
    /// `release` (if any) is called with `context` once it can never be called again.
    func addObserver(
        name: UnsafePointer<CChar>?, observer: @escaping rdx_observer_fn,
        context: UnsafeMutableRawPointer?, release: rdx_release_fn?
    ) -> ObserverToken {
        let call = CObserverCall(function: observer, context: context, handle: self)
        let name = name.map { StoreNotification.Name(String(cString: $0)) }
        let onRelease = release.map { release in
            CContextRelease(function: release, context: context).callAsFunction
        }
        let token = addStoreObserver(name: name, onRelease: onRelease, selecting: nil) { call($0) }
        lifecycle.withLock { _ = $0.tokens.insert(token) }
        return token
    }

    /// Registers a C observer of the value at a JSON Pointer: called, with the pointer as its
    /// name and the version of the change, only after actions that changed that value.
    func observe(
        pointer: JSONPointerText, observer: @escaping rdx_observer_fn,
        context: UnsafeMutableRawPointer?, release: rdx_release_fn?
    ) -> ObserverToken {
        let selection = makeSelection(pointer)
        let call = CPointerObserverCall(
            function: observer, context: context, handle: self, pointer: pointer,
            selection: selection)
        let onRelease = release.map { release in
            CContextRelease(function: release, context: context).callAsFunction
        }
        let token = addStoreObserver(
            name: .stateDidChange, onRelease: onRelease, selecting: selection
        ) {
            _ in call()
        }
        lifecycle.withLock { _ = $0.tokens.insert(token) }
        return token
    }

    /// Removes an observer registered through this handle; `false` for any other token.
    func removeObserver(_ token: ObserverToken) -> Bool {
        guard lifecycle.withLock({ $0.tokens.remove(token) }) != nil else { return false }
        return removeStoreObserver(token)
    }
}

/// A C observer and what it is called with. It holds a reference to the handle, so the
/// `rdx_store *` it passes stays valid for the call even if the observer releases it.
struct CObserverCall: @unchecked Sendable {
    // @unchecked: C promised the function may be called from any thread with this context.
    let function: rdx_observer_fn
    let context: UnsafeMutableRawPointer?
    let handle: CStoreHandle

    func callAsFunction(_ notification: StoreNotification) {
        let store = OpaquePointer(Unmanaged.passUnretained(handle).toOpaque())
        if notification.isStateDidChange {
            function(store, StaticText.stateDidChange, notification.version, context)
        } else {
            notification.name.rawValue.withCString {
                function(store, $0, notification.version, context)
            }
        }
    }
}

/// A C observer's release callback and its context.
struct CContextRelease: @unchecked Sendable {
    // @unchecked: C promised the function may be called from any thread with this context.
    let function: rdx_release_fn
    let context: UnsafeMutableRawPointer?

    @Sendable func callAsFunction() { function(context) }
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
    override var canEnqueue: Bool { store.canEnqueue }
    override func flush() { store.flush() }

    override func addStoreObserver(
        name: StoreNotification.Name?, onRelease: (@Sendable () -> Void)?,
        selecting selection: StateSelection?,
        using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken {
        store.addObserver(
            named: name, queue: nil, onRelease: onRelease,
            selection: selection, using: block)
    }

    override func startJournal(at path: String, recordPatches: Bool) throws(StoreError) {
        var options = JournalOptions()
        options.recordPatches = recordPatches
        try store.startJournal(at: path, options: options)
    }

    override func stopJournal() throws(StoreError) {
        if let problem = store.stopJournalReporting() { throw problem }
    }

    override func flushJournal() throws(StoreError) { try store.flushJournal() }

    override func makeSelection(_ pointer: JSONPointerText) -> StateSelection {
        PointerValue<State>(pointer: pointer).selection
    }

    override func dispatchBatch(_ actions: [any Action]) throws(StoreError) {
        try store.checkMiddlewareDepth()
        store.dispatchActions(actions)
    }

    /// Under the store's lock, as ``currentState()``: a json-c state is searched in place,
    /// another is encoded first.
    override func currentValue(at pointer: UnsafePointer<CChar>) throws(StoreError)
        -> (value: OpaquePointer?, found: Bool)
    {
        try store.withLockedState { (state, _) throws(StoreError) in
            try PointerValue<State>.withTree(of: state) { (root) throws(StoreError) in
                var node: OpaquePointer?
                guard json_pointer_get(root, pointer, &node) == 0 else { return (nil, false) }
                return (try JSONCTree.deepCopy(node), true)
            }
        }
    }

    override func removeStoreObserver(_ token: ObserverToken) -> Bool {
        store.removeObserver(token)
    }

    override func save(to path: String) throws(StoreError) { try store.save(to: path) }
}
