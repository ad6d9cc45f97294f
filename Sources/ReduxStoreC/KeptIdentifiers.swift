@_spi(Bindings) import ReduxStore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The identifiers a C store was dispatched last without a payload, kept for its next such
/// dispatches: a dispatch whose identifier has the bytes of one of them is applied as a
/// ``KeptCAction`` of the kept copy. Its identifier needs no check (the copy was checked when it
/// was first dispatched), and whoever keeps the action past the dispatch (the action log, the
/// journal, the live inspector) copies a word: the action owns what it holds, so a store that is
/// inspected dispatches at about the cost of one that is not (Benchmarks/README.md, "The live
/// inspector on a C store").
///
/// Eight slots (``SlotsByAddress``), one chosen by the caller's address of the identifier (a
/// literal has one address). ``offer(_:)`` alone writes them, after a dispatch: an empty slot takes
/// the next identifier a C caller dispatches at an address of that slot without a payload, once,
/// so a store keeps at most eight identifiers, and a program whose identifiers change at every
/// call pays a load and a comparison; once the kept names are full, nothing more is tried.
final class KeptIdentifiers: Sendable {
    private let slots = SlotsByAddress()
    /// Whether ``KeptNames/identifiers`` refused an identifier ``offer(_:)`` brought.
    private let namesFull = Atomic<Bool>(false)

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

    /// Keeps `identifier` (checked, just dispatched without a payload) if its slot holds nothing
    /// yet.
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
        slots.store(UInt(bitPattern: kept), for: identifier)
    }
}

/// Eight atomic words, one chosen by the address of a caller's identifier (a literal has one
/// address): where a store remembers what it made of the identifiers dispatched last
/// (``KeptIdentifiers`` for a C store, ``RecognizedActions`` for a Swift store handed to C). A
/// word holds the address of something that carries a copy of the identifier, which a reader
/// compares byte for byte with the caller's: a slot taken over by another identifier costs only
/// the comparison. Written with release ordering, read with acquire, so what the word points to
/// is whole when it is read; what it points to is never written again.
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
