/// Reads an `any Action` existential container as bytes: the identity of the type it holds —
/// what the action log does to copy trivial actions without their value witnesses, and the
/// routed reducers to find an action's reducers by its type without the runtime's dynamic-type
/// lookup.
///
/// The layout read here — three words of inline buffer, then the held type's metadata, a value
/// of at most three words stored at the buffer's start — is the Swift runtime's existential
/// layout on 64-bit Linux. It is checked once, by ``checkLayout()``, before any store exists:
/// a runtime that lays the container out otherwise stops the program with a clear message
/// rather than reading the wrong bytes. Each read names the container `as any Action`: passed
/// to a generic parameter as it is, an existential is opened, and the bytes would be the held
/// value's.
@usableFromInline
enum ActionContainer {
    /// The byte offset of the held type's metadata in the container.
    /// It is also the size of the inline buffer, where a value of at most that size is stored.
    @usableFromInline
    static var typeOffset: Int { 3 * MemoryLayout<Int>.size }

    /// Checks the layout once (a store's initializer calls it).
    static func checkLayout() { _ = layoutChecked }

    private static let layoutChecked: Bool = {
        let probe = LayoutProbe.make()
        return withUnsafeBytes(of: probe as any Action) { bytes in
            precondition(
                bytes.count == typeOffset + 2 * MemoryLayout<UInt>.size
                    && bytes.load(fromByteOffset: typeOffset, as: UInt.self) == identity(of: LayoutProbe.self)
                    && bytes.load(as: UInt.self) == 0x5EED_0001
                    && bytes.load(fromByteOffset: 2 * MemoryLayout<UInt>.size, as: UInt.self) == 0x5EED_0003,
                "ReduxStore: this Swift runtime does not lay out an `any Action` as the store reads it (three words of value, then the type's metadata and its conformance)")
            return true
        }
    }()

    /// Whether a value of `type` is stored in a container's inline buffer, at its start (known
    /// when compiling).
    @inlinable @inline(__always)
    static func fitsInline<A: Action>(_ type: A.Type) -> Bool {
        MemoryLayout<A>.size <= typeOffset && MemoryLayout<A>.alignment <= MemoryLayout<Int>.alignment
    }

    /// The identity of `type`: what ``typeIdentity(at:)`` returns for an action of that type.
    @usableFromInline @inline(__always)
    static func identity(of type: any Action.Type) -> UInt {
        UInt(bitPattern: ObjectIdentifier(type))
    }

    /// The identity of the type `action` holds, read from its container: for a value type, the
    /// same as `identity(of: type(of: action))` without the runtime's dynamic-type lookup. (For
    /// a class it is the static type the container was made with, never a struct's.)
    @inline(__always)
    static func typeIdentity(of action: borrowing any Action) -> UInt {
        withUnsafeBytes(of: action as any Action) { typeIdentity(at: $0.baseAddress!) }
    }

    /// The identity of the type held in the container at `container` (``typeIdentity(of:)``).
    @usableFromInline @inline(__always)
    static func typeIdentity(at container: UnsafeRawPointer) -> UInt {
        container.load(fromByteOffset: typeOffset, as: UInt.self)
    }
}

/// The value ``ActionContainer`` checks the layout with: three words it can recognize.
private struct LayoutProbe: Action {
    let first: UInt
    let second: UInt
    let third: UInt
    var identifier: String { "ReduxStore.LayoutProbe" }

    /// The probe in a container made where the optimizer cannot see it: the check reads what
    /// the runtime built, not what the compiler folded.
    @inline(never)
    static func make() -> any Action {
        LayoutProbe(first: 0x5EED_0001, second: 0x5EED_0002, third: 0x5EED_0003)
    }
}
