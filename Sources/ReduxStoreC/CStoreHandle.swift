internal import CJSONC
internal import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
import Synchronization

/// The object behind an `rdx_store *`: C's pointer is its address.
///
/// C's references are counted here (`rdx_store_retain`, `rdx_store_release`), apart from Swift's:
/// while C holds any, the handle keeps itself alive (`lifecycle.keepAlive`). When the last one is
/// dropped, ``close()`` applies what C enqueued, removes C's observers and lets the handle go; an
/// observer that retains the store meanwhile simply becomes its owner, and the store lives on.
/// Each C function holds a Swift reference to the handle for the whole call, and each C observer
/// holds one for its call, so a callback may release, retain or remove anything.
///
/// What differs between kinds of store is the handle's ``core``, a ``CStoreCore``:
/// ``JSONCTreeStoreCore`` (a store C created around a json-c tree) or ``SwiftStoreCore`` (a
/// Swift `Store<State>` handed to C). The handle itself is one final class, so C's pointer is
/// always the address of the same kind of object.
final class CStoreHandle: @unchecked Sendable {
    // @unchecked: `core` is immutable and Sendable, `references` is atomic, `lifecycle` is
    // behind its lock.

    /// The store this handle reaches, and how C's actions become its own.
    let core: any CStoreCore
    /// C's references.
    private let references = Atomic<Int>(1)
    private let lifecycle = Locked(Lifecycle())

    private struct Lifecycle {
        /// The handle itself while C holds references; dropped by ``close()``.
        var keepAlive: CStoreHandle?
        /// The observers C registered through this handle, by the number C holds (the token's
        /// `rawValue`), removed when it closes.
        var tokens: [UInt64: ObserverToken] = [:]
        /// The tokens of the change listeners C added through this handle (their keys in the
        /// store: unique among all stores); removed when it closes.
        var listeners: Set<UInt64> = []
        /// Set by ``close()``: enqueueing is refused from then on.
        var closed = false
        /// An action was enqueued through this handle since ``close()`` last flushed.
        var enqueuedSinceFlush = false
    }

    /// Where a forwarding store's dispatches go (`rdx_store_create_forwarding`); `nil` for others.
    let forwarding: CForwarding?

    /// For a store created from C that forwards nothing: its core, whose kept identifiers a
    /// dispatch without a payload looks up first (``dispatchKept(_:source:)``).
    /// Unretained, so that a dispatch retains nothing to read it: `core` keeps it alive.
    private let treeCore: Unmanaged<JSONCTreeStoreCore>?
    /// For a Swift store: the actions its core decoded once (``RecognizedActions``). Unretained:
    /// `core` keeps it alive.
    private let recognized: Unmanaged<RecognizedActions>?

    /// A handle on `core`; `recognized`: the actions a Swift store's core decodes once.
    init(core: any CStoreCore, forwarding: CForwarding? = nil, recognized: RecognizedActions? = nil) {
        self.core = core
        self.forwarding = forwarding
        treeCore = forwarding == nil ? (core as? JSONCTreeStoreCore).map(Unmanaged.passUnretained) : nil
        self.recognized = recognized.map(Unmanaged.passUnretained)
    }

    // MARK: Actions

    /// Applies (`enqueue` false) or enqueues an action. `identifier` and `payload` are borrowed
    /// and already checked; what is kept past the call is copied. A forwarding store hands it to
    /// its forwarder instead, which returns once it was applied.
    func dispatch(
        identifier: UnsafePointer<CChar>, payload: OpaquePointer?, enqueue: Bool, source: DispatchSite,
        offering: Bool = false
    ) throws(StoreError) {
        if let forwarding {
            try forwarding.forward(self, identifier: identifier, payload: payload, enqueue: enqueue, source: source)
            return
        }
        if enqueue {
            // Kept past this call: the action owns copies (and the core keeps the source).
            let action = try core.makeAction(identifier: identifier, payload: payload)
            try enqueueing { core.enqueue(action, source: source) }
        } else {
            try core.dispatch(identifier: identifier, payload: payload, source: source)
            if offering, payload == nil, let treeCore {
                treeCore._withUnsafeGuaranteedRef { $0.keptIdentifiers.offer(identifier) }
            }
        }
    }

    /// Applies now an action without a payload of C's `identifier` (not checked yet) if it has
    /// the bytes of an identifier this store kept (``KeptIdentifiers``), or of one whose action a
    /// Swift store's core decoded once (``RecognizedActions``), and returns true; false, having
    /// done nothing, otherwise.
    @inline(__always)
    func dispatchKept(_ identifier: UnsafePointer<CChar>, source: DispatchSite) throws(StoreError) -> Bool {
        if let treeCore {
            guard let copy = treeCore._withUnsafeGuaranteedRef({ $0.keptIdentifiers.kept(identifier) }) else {
                return false
            }
            try treeCore.withGuaranteedRef { (core) throws(StoreError) in
                try core.dispatch(kept: copy, source: source)
            }
            return true
        }
        guard let entry = recognized?._withUnsafeGuaranteedRef({ $0.entry(for: identifier) }) else { return false }
        try entry.withGuaranteedRef { (entry) throws(StoreError) in try entry.apply(source) }
        return true
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
        // A forwarding store's library stops applying to it first (while it is whole).
        if references.load(ordering: .acquiring) == 0 { forwarding?.releaseOnce() }
        // (In a forked child nothing could be enqueued, and the queue does not run.)
        while core.canEnqueue {
            lifecycle.withLock { $0.enqueuedSinceFlush = false }
            core.flush()
            if !lifecycle.withLock({ $0.enqueuedSinceFlush }) { break }
        }
        let closing = lifecycle.withLock {
            state -> (tokens: [UInt64: ObserverToken].Values, listeners: Set<UInt64>)? in
            // A retain after the count reached 0 revived the store; a concurrent close of that
            // owner's release may have closed it already.
            guard !state.closed, references.load(ordering: .acquiring) == 0 else { return nil }
            state.closed = true
            defer {
                state.tokens = [:]
                state.listeners = []
            }
            return (state.tokens.values, state.listeners)
        }
        guard let closing else { return }
        for token in closing.tokens { _ = core.removeObserver(token) }
        for key in closing.listeners { _ = core.removeChangeListener(key: key) }
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
        guard core.canEnqueue else {
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
    private func enqueueing(_ body: () throws(StoreError) -> Void) throws(StoreError) {
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
        let token = core.addObserver(name: name, onRelease: onRelease, selecting: nil) { call($0) }
        lifecycle.withLock { $0.tokens[token.rawValue] = token }
        return token
    }

    /// Registers a C observer of the value at a JSON Pointer: called, with the pointer as its
    /// name and the version of the change, only after actions that changed that value.
    func observe(
        pointer: JSONPointerText, observer: @escaping rdx_observer_fn,
        context: UnsafeMutableRawPointer?, release: rdx_release_fn?
    ) -> ObserverToken {
        let selection = core.makeSelection(pointer)
        let call = CPointerObserverCall(
            function: observer, context: context, handle: self, pointer: pointer,
            selection: selection)
        let onRelease = release.map { release in
            CContextRelease(function: release, context: context).callAsFunction
        }
        let token = core.addObserver(
            name: .stateDidChange, onRelease: onRelease, selecting: selection
        ) {
            _ in call()
        }
        lifecycle.withLock { $0.tokens[token.rawValue] = token }
        return token
    }

    /// Adds a C change listener; returns its token.
    func addChangeListener(_ call: CChangeCall, includingPatches: Bool) -> UInt64 {
        let token = Self.nextListenerToken.wrappingAdd(1, ordering: .relaxed).oldValue
        // Known to the handle before it can be called, so that it may remove itself.
        lifecycle.withLock { _ = $0.listeners.insert(token) }
        core.addChangeListener(key: token, includingPatches: includingPatches) { record in
            call(record, includingPatch: includingPatches)
        }
        return token
    }

    /// Removes the change listener C knows by `token` if it was added through this handle;
    /// `false` for any other number.
    func removeChangeListener(token: UInt64) -> Bool {
        guard lifecycle.withLock({ $0.listeners.remove(token) != nil }) else { return false }
        return core.removeChangeListener(key: token)
    }

    private static let nextListenerToken = Atomic<UInt64>(1)

    /// Removes the observer C knows by `rawValue` if it was registered through this handle;
    /// `false` for any other number.
    func removeObserver(rawValue: UInt64) -> Bool {
        guard let token = lifecycle.withLock({ $0.tokens.removeValue(forKey: rawValue) }) else {
            return false
        }
        return core.removeObserver(token)
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

extension Unmanaged {
    /// `_withUnsafeGuaranteedRef` for a body that throws a ``StoreError``: the instance, not
    /// retained, for the call.
    @inline(__always)
    func withGuaranteedRef(_ body: (Instance) throws(StoreError) -> Void) throws(StoreError) {
        let failure = _withUnsafeGuaranteedRef { instance -> StoreError? in
            do throws(StoreError) {
                try body(instance)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }
}
