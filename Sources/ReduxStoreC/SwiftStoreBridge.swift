internal import CJSONC
@_spi(Bindings) import ReduxStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension Store {
    /// Hands C a handle on this store: an `rdx_store *` with one reference, which C releases
    /// with `rdx_store_release()`. C dispatches JSON through it; C snapshots are the state
    /// encoded to a json-c tree; C observers hear every action, whoever dispatched it.
    ///
    /// The handle keeps the store alive. When the last reference is released, the observers
    /// registered through it are removed; the store lives on as long as Swift holds it.
    ///
    /// An action of a registered type is decoded from its payload at each dispatch, except one
    /// of a type without stored properties (an empty struct, an enum of one case) dispatched
    /// with a NULL payload: all its values are the same, so the handle decodes it once per
    /// identifier (its `init(from:)` runs once) and reuses it, which makes such a dispatch
    /// nearly as cheap as a Swift one.
    ///
    /// - Parameter actions: the typed actions payloads are decoded into, by identifier.
    /// - Returns: the `rdx_store *`, as Swift imports the C type.
    public func makeCStore(actions: ActionTypes = ActionTypes()) -> OpaquePointer {
        let core = SwiftStoreCore(store: self, actions: actions)
        return CStoreHandle(core: core, recognized: core.recognized).openedPointer()
    }
}

/// A Swift store reached from C: C's actions become typed actions or ``JSONAction``s.
final class SwiftStoreCore<State: Codable>: CStoreCore, @unchecked Sendable {
    // @unchecked: `store`, `actions` and `recognized` are Sendable; `State` itself need not be.
    let store: Store<State>
    let actions: ActionTypes
    /// The actions of registered types without stored properties, decoded from no payload once
    /// (its handle looks them up).
    let recognized = RecognizedActions()

    init(store: Store<State>, actions: ActionTypes) {
        self.store = store
        self.actions = actions
    }

    func dispatch(identifier: UnsafePointer<CChar>, payload: OpaquePointer?, source: DispatchSite)
        throws(StoreError)
    {
        let action = try makeAction(identifier: identifier, payload: payload)
        try store.checkMiddlewareDepth()
        store.dispatch(erased: action, source: source)
    }

    /// A registered type's action decoded from the payload, or a ``JSONAction``: Swift values
    /// that own what they hold.
    /// A Swift store's actions own what they hold (decoded values), so a batch's are the same.
    func makeBatchAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?)
        throws(StoreError) -> any Action
    {
        try makeAction(identifier: identifier, payload: payload)
    }

    func makeAction(identifier: UnsafePointer<CChar>, payload: OpaquePointer?)
        throws(StoreError) -> any Action
    {
        // Copied into a String of the known length (CInput.identifier checked its UTF-8): cheaper
        // than String(cString:), which measures the length and repairs (Benchmarks/README.md has
        // the figures).
        let length = strlen(identifier)
        let name = String(unsafeUninitializedCapacity: length) { buffer in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(
                from: UnsafeRawBufferPointer(start: identifier, count: length))
            return length
        }
        var isValueless = false
        if !actions.isEmpty,
            let action = try actions.registeredAction(identifier: name, payload: payload, isValueless: &isValueless)
        {
            if payload == nil, isValueless {
                // Later dispatches of these bytes apply this action again, lent by the entry.
                recognized.keep(for: identifier) { [store] (source) throws(StoreError) in
                    try store.checkMiddlewareDepth()
                    store.dispatch(erased: action, source: source)
                }
            }
            return action
        }
        return try JSONAction(identifier: name, jsonCPayload: payload)
    }
}

/// The actions a Swift store handed to C decoded from no payload for registered types without
/// stored properties (``ActionTypes/registeredAction(identifier:payload:isValueless:)``), for the store's
/// next dispatches: every value of such a type is the same, so a NULL-payload dispatch of the same identifier
/// reuses the one decoded, without the identifier's check, its `String`, the registry's lookup or the
/// decoder. (Its `init(from:)` runs once per store and identifier.)
///
/// As ``KeptIdentifiers``: ``SlotsByAddress``, each slot holding an entry with a copy of the
/// identifier, written by ``keep(for:_:)`` alone. At most ``limit`` entries per store, kept until
/// the store's handle is gone.
final class RecognizedActions: Sendable {
    /// An identifier's copy, and how its action is applied: the decoded action dispatched to the
    /// store (after the middleware depth's check), where it was dispatched from being the argument.
    final class Entry: @unchecked Sendable {
        // @unchecked: the identifier's copy is written once, before the entry is published,
        // and only read after.
        let identifier: UnsafeMutablePointer<CChar>
        let apply: @Sendable (DispatchSite) throws(StoreError) -> Void
        init(identifier: UnsafeMutablePointer<CChar>, apply: @escaping @Sendable (DispatchSite) throws(StoreError) -> Void) {
            self.identifier = identifier
            self.apply = apply
        }
        deinit { free(identifier) }
    }

    /// The most identifiers kept.
    static let limit = 64
    private let slots = SlotsByAddress()
    /// Every entry made; they live as long as this object, so a slot's pointer stays valid.
    private let entries = Locked<[Entry]>([])

    init() {}

    /// The entry of the action kept for `identifier` (C's, not checked yet: read only up to its
    /// NUL or its first byte that differs), if its slot holds one of the same bytes. Valid as
    /// long as this object.
    @inline(__always)
    func entry(for identifier: UnsafePointer<CChar>) -> Unmanaged<Entry>? {
        guard let pointer = UnsafeRawPointer(bitPattern: slots.load(for: identifier)) else { return nil }
        let entry = Unmanaged<Entry>.fromOpaque(pointer)
        return entry._withUnsafeGuaranteedRef { strcmp($0.identifier, identifier) == 0 } ? entry : nil
    }

    /// Keeps `apply`, which applies the action decoded from no payload for `identifier`
    /// (checked), for the next dispatches from the same address; nothing past ``limit``
    /// identifiers or without memory.
    func keep(for identifier: UnsafePointer<CChar>, _ apply: @escaping @Sendable (DispatchSite) throws(StoreError) -> Void) {
        let entry = entries.withLock { entries -> Entry? in
            if let known = entries.first(where: { strcmp($0.identifier, identifier) == 0 }) { return known }
            guard entries.count < Self.limit, let copy = strdup(identifier) else { return nil }
            entries.append(Entry(identifier: copy, apply: apply))
            return entries.last
        }
        guard let entry else { return }
        slots.store(UInt(bitPattern: Unmanaged.passUnretained(entry).toOpaque()), for: identifier)
    }
}
