internal import CJSONC
@_spi(Bindings) import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// An action sent from C: its identifier and payload as C gave them.
///
/// Dispatched at once, it borrows the caller's pointers for the call (no copy, no allocation).
/// Kept past the call (enqueued, or dispatched from inside a reducer), it owns copies:
/// ``Storage`` frees them when the last copy of the action is gone.
struct CAction: Action, @unchecked Sendable {
    // @unchecked: the pointers are read only, by the one thread applying the action; an owned
    // payload is a private deep copy no other code references.
    let identifierPointer: UnsafePointer<CChar>
    let payload: OpaquePointer?
    let storage: Storage?

    var identifier: String { String(cString: identifierPointer) }

    /// An action borrowing the caller's identifier and payload.
    init(borrowing identifier: UnsafePointer<CChar>, payload: OpaquePointer?) {
        identifierPointer = identifier
        self.payload = payload
        storage = nil
    }

    /// An action owning copies of the identifier and payload.
    init(copying identifier: UnsafePointer<CChar>, payload: OpaquePointer?) throws(StoreError) {
        let storage = try Storage(identifier: identifier, payload: payload)
        identifierPointer = UnsafePointer(storage.identifier)
        self.payload = storage.payload
        self.storage = storage
    }

    final class Storage {
        let identifier: UnsafeMutablePointer<CChar>
        let payload: OpaquePointer?

        init(identifier: UnsafePointer<CChar>, payload: OpaquePointer?) throws(StoreError) {
            guard let copy = strdup(identifier) else {
                throw StoreError(.outOfMemory, "out of memory copying the identifier")
            }
            var payloadCopy: OpaquePointer?
            if let payload {
                guard json_object_deep_copy(payload, &payloadCopy, nil) == 0 else {
                    free(copy)
                    throw StoreError(.outOfMemory, "out of memory copying the payload")
                }
            }
            self.identifier = copy
            self.payload = payloadCopy
        }

        deinit {
            json_object_put(payload)
            free(identifier)
        }
    }
}

extension Action {
    /// A C action's identifier and payload as it holds them (a ``CAction``, or a ``KeptCAction``),
    /// valid while the action is; nil for any other action.
    ///
    /// Found by comparing the action's type, then read as that type (the keeper does the same):
    /// a runtime cast (`as?`) that fails walks the conformance tables, and a C store's reducers
    /// ask this of every action (Benchmarks/README.md, "The C fast paths, made plain").
    var cParts: (identifier: UnsafePointer<CChar>, payload: OpaquePointer?)? {
        if Self.self == KeptCAction.self {
            return (unsafeBitCast(self, to: KeptCAction.self).identifierPointer, nil)
        }
        if Self.self == CAction.self {
            let action = unsafeBitCast(self, to: CAction.self)
            return (action.identifierPointer, action.payload)
        }
        return nil
    }
}

extension CAction: JournalRecordable {
    /// The action owning copies of its identifier and payload (itself if it already does): the
    /// store's record keeps it after the dispatch returned. If memory runs out, the identifier
    /// alone.
    func owned() -> any Action {
        if storage != nil { return self }
        return (try? CAction(copying: identifierPointer, payload: payload))
            ?? JSONAction(identifier: identifier)
    }

    var journalPayload: OpaquePointer? { payload }
}

/// A C action without a payload whose identifier is kept for the life of the process
/// (`KeptNames.identifiers`): what the action log and the journal keep of such an action. One
/// word, nothing to retain or free, so the log copies it as bytes and the store's next such
/// action costs no allocation.
struct KeptCAction: JournalRecordable, @unchecked Sendable {
    // @unchecked: the identifier is a kept name, never written again.
    let identifierPointer: UnsafePointer<CChar>

    var identifier: String { String(cString: identifierPointer) }
    var journalPayload: OpaquePointer? { nil }
}

/// What a C store keeps of an action past its dispatch (the store's ``ActionKeeper``): a
/// ``KeptCAction`` for an action without a payload, its identifier found among the kept ones;
/// otherwise a copy that owns its identifier and payload. Called under the store's lock only,
/// so the last identifier seen is remembered without a lock of its own: the common case (one
/// identifier dispatched again and again from one call) costs a comparison of the bytes.
final class CActionKeeper: @unchecked Sendable {
    // @unchecked: its two fields are read and written under the store's lock only.
    /// The caller's identifier last kept, and its kept copy.
    private var lastAddress: UnsafePointer<CChar>?
    private var lastKept: UnsafePointer<CChar>?

    init() {}

    /// The action to keep in `action`'s place, or nil when it is not a ``CAction`` or owns what it
    /// holds already.
    func keep(_ action: any Action) -> (any Action)? {
        keep(opened: action)
    }

    /// ``keep(_:)`` with the action's type known to the function (the existential opened).
    private func keep<A: Action>(opened action: A) -> (any Action)? {
        guard A.self == CAction.self else { return nil }
        let action = unsafeBitCast(action, to: CAction.self)
        guard action.storage == nil else { return nil }
        if action.payload == nil, let kept = keptIdentifier(action.identifierPointer) {
            return KeptCAction(identifierPointer: kept)
        }
        return action.owned()
    }

    /// The kept copy of `identifier` (``KeptNames``): the last one when the caller passed the same
    /// bytes at the same address again; nil when the kept names are full.
    private func keptIdentifier(_ identifier: UnsafePointer<CChar>) -> UnsafePointer<CChar>? {
        if lastAddress == identifier, let lastKept, strcmp(lastKept, identifier) == 0 { return lastKept }
        guard let kept = KeptNames.identifiers.intern(cString: identifier) else { return nil }
        lastAddress = identifier
        lastKept = kept
        return kept
    }
}

extension KeptNames {
    /// The identifiers of C actions kept by stores' logs (`RDX_MAX_LOGGED_IDENTIFIERS`).
    static let identifiers = KeptNames(limit: 4096)

    /// The kept copy of the C string `identifier` (a kept name has a NUL after it); nil past
    /// ``limit`` names.
    func intern(cString identifier: UnsafePointer<CChar>) -> UnsafePointer<CChar>? {
        intern(UnsafeRawBufferPointer(start: identifier, count: strlen(identifier)))
            .map { $0.baseAddress!.assumingMemoryBound(to: CChar.self) }
    }
}
