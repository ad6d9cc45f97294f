internal import CJSONC
import ReduxStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An action sent from C: its identifier and payload as C gave them.
///
/// Dispatched at once, it borrows the caller's pointers for the call (no copy, no allocation).
/// Kept past the call (enqueued, or dispatched from inside a reducer), it owns copies:
/// ``Storage`` frees them when the last copy of the action is gone.
struct CAction: Action, @unchecked Sendable {
    // Three words at most: ``parts(of:)`` reads it from an existential's inline buffer.
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

/// What a C action holds, read in place (``CAction/parts(of:)``).
enum CActionParts {
    /// A ``KeptCAction``: its identifier is a kept copy (``KeptNames/identifiers``), and it has
    /// no payload.
    case kept(UnsafePointer<CChar>)
    /// A ``CAction``: its identifier and payload, borrowed from a caller or owned.
    case borrowedOrOwned(UnsafePointer<CChar>, OpaquePointer?)

    var identifier: UnsafePointer<CChar> {
        switch self {
        case .kept(let identifier), .borrowedOrOwned(let identifier, _): identifier
        }
    }

    var payload: OpaquePointer? {
        switch self {
        case .kept: nil
        case .borrowedOrOwned(_, let payload): payload
        }
    }
}

extension CAction {
    /// What the C action `action` holds — a ``CAction`` or a ``KeptCAction`` — or nil for any
    /// other action. Valid while `action` is.
    ///
    /// Found by the type its container names and read in place
    /// (``ActionContainer/withValue(of:as:_:)``), without the runtime's dynamic cast or
    /// dynamic-type lookup (Benchmarks/README.md, "The live inspector on a C store").
    @inline(__always)
    static func parts(of action: any Action) -> CActionParts? {
        if let kept = ActionContainer.withValue(of: action, as: KeptCAction.self, {
            $0.load(as: UnsafePointer<CChar>.self)
        }) {
            return .kept(kept)
        }
        return ActionContainer.withValue(of: action, as: CAction.self) { value in
            .borrowedOrOwned(
                value.load(as: UnsafePointer<CChar>.self),
                value.load(fromByteOffset: MemoryLayout<CAction>.offset(of: \.payload)!, as: OpaquePointer?.self))
        }
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
/// word, nothing to retain or free, so the log copies it as bytes.
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
final class CActionKeeper {
    /// The keeper's memory (``ActionKeeper``'s `state`): read and written under the store's lock.
    struct State {
        /// The caller's identifier last kept, and its kept copy.
        var lastAddress: UnsafePointer<CChar>?
        var lastKept: UnsafePointer<CChar>?
        /// Where each identifier kept is published for the store's next dispatches
        /// (``KeptIdentifiers``); the keeper's owner keeps it alive.
        let published: Unmanaged<KeptIdentifiers>
    }

    private let state: UnsafeMutablePointer<State>
    private let published: KeptIdentifiers

    private init(publishingIn published: KeptIdentifiers) {
        self.published = published
        state = .allocate(capacity: 1)
        state.initialize(to: State(lastAddress: nil, lastKept: nil, published: .passUnretained(published)))
    }

    deinit { state.deallocate() }

    /// A keeper for one store, publishing each identifier it keeps in `published`.
    static func make(publishingIn published: KeptIdentifiers) -> ActionKeeper {
        let keeper = CActionKeeper(publishingIn: published)
        return ActionKeeper(
            keeping: CAction.self, as: KeptCAction(identifierPointer: StaticText.empty), keep: keep,
            state: UnsafeMutableRawPointer(keeper.state), owner: keeper)
    }

    /// Keeps the ``CAction`` at `action`: a ``KeptCAction``'s bytes for one without a payload
    /// whose identifier is kept, an owned copy for another; nothing for one that owns already.
    private static let keep: @convention(c) (UnsafeRawPointer, UnsafeMutableRawPointer, UnsafeMutableRawPointer?) -> Int = {
        action, slot, state in
        let state = state!.assumingMemoryBound(to: State.self)
        // The CAction's fields, read in place (``CAction/parts(of:)``'s layout) without
        // retaining its storage: the identifier, whether it has a payload, whether it owns them.
        let identifier = action.load(as: UnsafePointer<CChar>.self)
        let payload = action.load(fromByteOffset: MemoryLayout<CAction>.offset(of: \.payload)!, as: UInt.self)
        let storage = action.load(fromByteOffset: MemoryLayout<CAction>.offset(of: \.storage)!, as: UInt.self)
        guard storage == 0 else { return ActionKeeper.Outcome.owns.rawValue }
        if payload == 0, let kept = keptIdentifier(identifier, state) {
            slot.storeBytes(of: KeptCAction(identifierPointer: kept), as: KeptCAction.self)
            return ActionKeeper.Outcome.wroteKept.rawValue
        }
        let borrowed = CAction(borrowing: identifier, payload: payload == 0 ? nil : OpaquePointer(bitPattern: payload))
        slot.assumingMemoryBound(to: (any Action).self).initialize(to: borrowed.owned())
        return ActionKeeper.Outcome.wroteAction.rawValue
    }

    /// The kept copy of `identifier` (``KeptNames``): the last one when the caller passed the same
    /// bytes at the same address again; nil when the kept names are full.
    @inline(__always)
    private static func keptIdentifier(
        _ identifier: UnsafePointer<CChar>, _ state: UnsafeMutablePointer<State>
    ) -> UnsafePointer<CChar>? {
        if state.pointee.lastAddress == identifier, let kept = state.pointee.lastKept, strcmp(kept, identifier) == 0 {
            state.pointee.published._withUnsafeGuaranteedRef { $0.publish(kept, for: identifier) }
            return kept
        }
        return keptAnew(identifier, state)
    }

    /// ``keptIdentifier(_:_:)`` when the identifier is not the last one: found among (or added
    /// to) the kept names.
    @inline(never)
    private static func keptAnew(
        _ identifier: UnsafePointer<CChar>, _ state: UnsafeMutablePointer<State>
    ) -> UnsafePointer<CChar>? {
        guard let pointer = KeptNames.identifiers.intern(cString: identifier) else { return nil }
        state.pointee.lastAddress = identifier
        state.pointee.lastKept = pointer
        state.pointee.published._withUnsafeGuaranteedRef { $0.publish(pointer, for: identifier) }
        return pointer
    }
}

/// The identifiers a C store kept last, for the store's next dispatches: a dispatch without a
/// payload whose identifier has the bytes of one of them is applied as a ``KeptCAction`` of the
/// kept copy. Its identifier needs no check (the copy was checked when it was first dispatched),
/// its reducers are found by the copy's address (``CReducers``), and nobody who keeps the action
/// past the dispatch (the action log, the journal) copies anything: the action owns what it holds.
///
/// Filled by the store's keeper (``CActionKeeper``), which runs only while something keeps the
/// store's actions, by its reducers' table when an action's identifier is one a reducer names
/// (kept when the store was made), and otherwise by ``offer(_:)``: an empty slot takes the next
/// identifier a C caller dispatches at an address of that slot without a payload, once, so a
/// store interns at most eight identifiers that way. Eight slots, one chosen by the caller's
/// address of the identifier (a literal has one address), each holding a kept copy; a dispatch
/// compares the bytes, so a slot taken over by another identifier costs only the comparison.
/// Read by any dispatching thread, written by the keeper and the table under the store's lock
/// and by ``offer(_:)`` after a dispatch: atomic words, the copies they point to never written
/// again.
final class KeptIdentifiers: Sendable {
    private let slots = SlotsByAddress()

    init() {}

    /// The kept copy of `identifier` (C's, not checked yet: read only up to its NUL or its first
    /// byte that differs), if its slot holds one with the same bytes.
    @inline(__always)
    func kept(_ identifier: UnsafePointer<CChar>) -> UnsafePointer<CChar>? {
        guard let kept = UnsafePointer<CChar>(bitPattern: slots.load(for: identifier)),
              strcmp(kept, identifier) == 0
        else { return nil }
        return kept
    }

    /// Publishes `kept`, the kept copy of `identifier` (which has been checked).
    @inline(__always)
    func publish(_ kept: UnsafePointer<CChar>, for identifier: UnsafePointer<CChar>) {
        slots.store(UInt(bitPattern: kept), for: identifier)
    }

    /// Keeps and publishes `identifier` (checked, dispatched without a payload) when its slot
    /// holds nothing yet: how a store whose reducers name no identifier, and whose actions
    /// nobody keeps, learns the identifiers it is dispatched. A slot is filled once, so a store
    /// interns at most eight identifiers this way, and a program whose identifiers change at
    /// every call pays a load and a comparison; once the kept names are full, nothing more is
    /// tried.
    @inline(__always)
    func offer(_ identifier: UnsafePointer<CChar>) {
        guard slots.load(for: identifier) == 0 else { return }
        offerAnew(identifier)
    }

    @inline(never)
    private func offerAnew(_ identifier: UnsafePointer<CChar>) {
        guard !namesFull.load(ordering: .relaxed) else { return }
        guard let kept = KeptNames.identifiers.intern(cString: identifier) else {
            namesFull.store(true, ordering: .relaxed)
            return
        }
        publish(kept, for: identifier)
    }

    /// Whether ``KeptNames/identifiers`` refused an identifier ``offer(_:)`` brought.
    private let namesFull = Atomic<Bool>(false)
}

extension KeptNames {
    /// The kept copy of the C string `identifier` (a kept name has a NUL after it); nil past
    /// ``limit`` names.
    func intern(cString identifier: UnsafePointer<CChar>) -> UnsafePointer<CChar>? {
        intern(UnsafeRawBufferPointer(start: identifier, count: strlen(identifier)))
            .map { $0.baseAddress!.assumingMemoryBound(to: CChar.self) }
    }
}

/// Eight atomic words, one chosen by the address of a caller's identifier (a literal has one
/// address): where a store remembers what it made of the identifiers dispatched last
/// (``KeptIdentifiers``, ``RecognizedActions``). A word holds the address of something that
/// carries a copy of the identifier, which a reader compares byte for byte with the caller's:
/// a slot taken over by another identifier costs only the comparison. Written with release
/// ordering, read with acquire, so what the word points to is whole when it is read.
struct SlotsByAddress: ~Copyable, Sendable {
    private let words: InlineArray<8, Atomic<UInt>> = InlineArray { _ in Atomic(0) }

    init() {}

    @inline(__always)
    private static func slot(for identifier: UnsafePointer<CChar>) -> Int {
        Int(truncatingIfNeeded: UInt(bitPattern: identifier) >> 3) & 7
    }

    /// The word of `identifier`'s slot: 0, or an address stored there.
    @inline(__always)
    func load(for identifier: UnsafePointer<CChar>) -> UInt {
        words[Self.slot(for: identifier)].load(ordering: .acquiring)
    }

    /// Stores `address` in `identifier`'s slot.
    @inline(__always)
    func store(_ address: UInt, for identifier: UnsafePointer<CChar>) {
        words[Self.slot(for: identifier)].store(address, ordering: .releasing)
    }
}
