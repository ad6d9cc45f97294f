internal import CJSONC
@_spi(Bindings) import ReduxStore

/// What a ``CStoreHandle`` reaches: a `Store<State>`, and how C's actions become that store's.
///
/// Each kind of store conforms once: ``JSONCTreeStoreCore`` (a store C created around a json-c
/// tree) and ``SwiftStoreCore`` (a Swift `Store<State>` handed to C). A kind provides its
/// ``store`` and how it makes and applies C's actions; everything else has one implementation,
/// below, for every kind.
///
/// Class-bound, and each kind a final class: the handle's existential is then a reference and a
/// witness table, called without projecting a box. A struct kind cost each
/// `rdx_store_dispatch_action` clearly more than the class hierarchy this replaced, a class kind
/// little more (Benchmarks/README.md, "Dispatch against the plain store").
protocol CStoreCore: AnyObject, Sendable {
    associatedtype State: Codable

    var store: Store<State> { get }

    /// Applies an action now. `identifier` and `payload` are borrowed and already checked; what
    /// is kept past the call is copied. `source`: where C dispatched it from.
    func dispatch(identifier: UnsafePointer<CChar>, payload: OpaquePointer?, source: DispatchSite)
        throws(StoreError)

    /// An action of this store's kind for C's identifier and payload (borrowed, already
    /// checked), owning what it keeps: it may be applied after the call.
    func makeAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?) throws(StoreError)
        -> any Action

    /// An action for an element of a batch being applied by this call, from C's identifier
    /// and payload (borrowed, already checked): it may borrow them where the batch is applied
    /// before the call returns (not from inside a reducer, where it is queued).
    func makeBatchAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?) throws(StoreError)
        -> any Action

    // The rest has one implementation (the extension below). Declared here so that each kind's
    // witness is that implementation specialized for its `State`.

    /// Queues an action from ``makeAction(identifier:payload:)``.
    func enqueue(_ action: any Action, source: DispatchSite)

    /// Applies `actions` as one batch; ``StoreError/Kind/limit`` from inside too many
    /// middleware calls (``Store/checkMiddlewareDepth()``).
    func dispatchBatch(_ actions: [any Action], source: DispatchSite) throws(StoreError)

    /// ``Store/startJournal(at:options:)`` and ``Store/stopJournal()``.
    func startJournal(at path: String, recordPatches: Bool) throws(StoreError)
    func stopJournal() throws(StoreError)
    /// ``Store/flushJournal()``.
    func flushJournal() throws(StoreError)

    /// The selection of the value at `pointer` in this store's state.
    func makeSelection(_ pointer: JSONPointerText) -> StateSelection

    /// A NEW json-c tree of the value at `pointer` in the state; `found` false when absent.
    func currentValue(at pointer: UnsafePointer<CChar>) throws(StoreError)
        -> (value: OpaquePointer?, found: Bool)

    /// The action log: ``Store/openActionLog(_:ticked:)``, ``Store/closeActionLog(_:)``,
    /// ``Store/tickActionLog()`` and ``Store/readActionLog(after:limit:wake:)``
    /// (without the state).
    func openActionLog(_ capacity: Int, ticked: Bool) -> UInt64
    func closeActionLog(_ token: UInt64) -> Bool
    func tickActionLog()
    func readActionLog(after version: UInt64, limit: Int) -> (records: [ChangeRecord], dropped: UInt64, version: UInt64)?

    /// A NEW json-c tree of the state, and the version it is at.
    func currentState() throws(StoreError) -> (tree: OpaquePointer?, version: UInt64)

    var version: UInt64 { get }

    /// Whether enqueueing and flushing work in this process (not in a forked child).
    var canEnqueue: Bool { get }

    func flush()

    func addObserver(
        name: StoreNotification.Name?, onRelease: (@Sendable () -> Void)?,
        selecting selection: StateSelection?,
        using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken

    func removeObserver(_ token: ObserverToken) -> Bool

    /// ``Store/addChangeListener(key:includingPatches:receive:)`` and
    /// ``Store/removeChangeListener(key:)``.
    func addChangeListener(key: UInt64, includingPatches: Bool, receive: @escaping (ChangeRecord) -> Void)
    func removeChangeListener(key: UInt64) -> Bool

    func save(to path: String) throws(StoreError)

    /// ``Store/keepHistory(_:)``, ``Store/historyVersions`` and ``Store/restore(version:)``.
    func keepHistory(_ count: Int)
    var historyVersions: [UInt64] { get }
    func restore(version: UInt64) throws(StoreError)
    /// A NEW json-c tree of the state at `version`: the current one, or one the history keeps.
    func state(at version: UInt64) throws(StoreError) -> OpaquePointer?
}

extension CStoreCore {
    func enqueue(_ action: any Action, source: DispatchSite) { store.enqueue(erased: action, source: source) }

    func dispatchBatch(_ actions: [any Action], source: DispatchSite) throws(StoreError) {
        try store.checkMiddlewareDepth()
        store.dispatch(batch: actions, source: source)
    }

    func startJournal(at path: String, recordPatches: Bool) throws(StoreError) {
        var options = JournalOptions()
        options.recordPatches = recordPatches
        try store.startJournal(at: path, options: options)
    }

    func stopJournal() throws(StoreError) {
        if let problem = store.stopJournalReporting() { throw problem }
    }

    func flushJournal() throws(StoreError) { try store.flushJournal() }

    func openActionLog(_ capacity: Int, ticked: Bool) -> UInt64 { store.openActionLog(capacity, ticked: ticked) }
    func closeActionLog(_ token: UInt64) -> Bool { store.closeActionLog(token) }
    func tickActionLog() { store.tickActionLog() }
    func readActionLog(after version: UInt64, limit: Int) -> (records: [ChangeRecord], dropped: UInt64, version: UInt64)? {
        store.readActionLog(after: version, limit: limit)
    }

    func addChangeListener(key: UInt64, includingPatches: Bool, receive: @escaping (ChangeRecord) -> Void) {
        store.addChangeListener(key: key, includingPatches: includingPatches, receive: receive)
    }

    func removeChangeListener(key: UInt64) -> Bool { store.removeChangeListener(key: key) }

    func makeSelection(_ pointer: JSONPointerText) -> StateSelection {
        PointerValue<State>(pointer: pointer).selection
    }

    /// Under the store's lock, as ``currentState()``: a json-c state is searched in place,
    /// another is encoded first.
    func currentValue(at pointer: UnsafePointer<CChar>) throws(StoreError)
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

    /// The state encoded to a new json-c tree, under the store's lock (a json-c state is copied
    /// as a tree: ``JSONCEncoder`` passes trees straight through).
    func currentState() throws(StoreError) -> (tree: OpaquePointer?, version: UInt64) {
        try store.withLockedState { (state, version) throws(StoreError) in
            (try JSONCEncoder().encode(state), version)
        }
    }

    var version: UInt64 { store.version }
    var canEnqueue: Bool { store.canEnqueue }
    func flush() { store.flush() }

    func addObserver(
        name: StoreNotification.Name?, onRelease: (@Sendable () -> Void)?,
        selecting selection: StateSelection?,
        using block: @escaping @Sendable (StoreNotification) -> Void
    ) -> ObserverToken {
        store.addObserver(
            named: name, queue: nil, onRelease: onRelease,
            selection: selection, using: block)
    }

    func removeObserver(_ token: ObserverToken) -> Bool { store.removeObserver(token) }

    func save(to path: String) throws(StoreError) { try store.save(to: path) }

    func keepHistory(_ count: Int) { store.keepHistory(count) }
    var historyVersions: [UInt64] { store.historyVersions }
    func restore(version: UInt64) throws(StoreError) { try store.restore(version: version) }

    func state(at version: UInt64) throws(StoreError) -> OpaquePointer? {
        let current = try store.withLockedState { (state, now) throws(StoreError) -> OpaquePointer?? in
            now == version ? .some(try JSONCEncoder().encode(state)) : .none
        }
        if let current { return current }
        guard let state = store.historyState(at: version) else {
            let kept = store.historyVersions
            let range = kept.isEmpty ? "none" : "\(kept.first!)–\(kept.last!)"
            throw StoreError(
                .invalidArgument, "version \(version) is neither the current one (\(store.version)) nor kept (kept: \(range))")
        }
        return try JSONCEncoder().encode(state)
    }
}
