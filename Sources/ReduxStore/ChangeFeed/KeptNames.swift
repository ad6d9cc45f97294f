#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Names kept for the life of the process, each copied once (with a NUL after it), so that a
/// record kept after its dispatch returned (a journal's line written later, the action log) can
/// point at a name its dispatcher only lent: the file names dispatches were recorded with
/// (``files``), and any other table a module makes of its own. A program names a fixed set of
/// files and identifiers; past ``limit`` distinct names a new one is not kept (the caller records
/// no source, or copies what it needed).
@_spi(Bindings) public final class KeptNames: @unchecked Sendable {
    // @unchecked: the table is reached only under its lock; the buffers it holds are never
    // written after they were filled.

    /// The file names of recorded dispatches that were lent (``DispatchSite/kept()``).
    static let files = KeptNames(limit: 4096)

    /// The most names kept; past it ``intern(_:)`` returns `nil` for a new one.
    let limit: Int

    private struct Table {
        /// Each name's copy, by its bytes.
        var byContent: [[UInt8]: UnsafeRawBufferPointer] = [:]
        /// The copy of the name last seen at an address (`__FILE__` is one address per file):
        /// found without making a key, then compared byte for byte.
        var byAddress: [UInt: UnsafeRawBufferPointer] = [:]
    }

    private let table = Locked(Table())

    /// A table of at most `limit` names.
    @_spi(Bindings) public init(limit: Int) { self.limit = limit }

    /// The kept copy of `bytes`; `nil` past ``limit`` names.
    @_spi(Bindings) public func intern(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        table.withLock { table in
            let address = UInt(bitPattern: bytes.baseAddress)
            if let kept = table.byAddress[address], kept.count == bytes.count,
                bytes.isEmpty || memcmp(kept.baseAddress!, bytes.baseAddress!, bytes.count) == 0
            {
                return kept
            }
            let key = Array(bytes)
            let kept: UnsafeRawBufferPointer
            if let known = table.byContent[key] {
                kept = known
            } else {
                guard table.byContent.count < limit else { return nil }
                // With a NUL after it, as a C string and a Swift literal have.
                let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count + 1, alignment: 1)
                copy.copyMemory(from: bytes)
                copy[bytes.count] = 0
                kept = UnsafeRawBufferPointer(rebasing: copy[..<bytes.count])
                table.byContent[key] = kept
            }
            if table.byAddress.count < 4 * limit { table.byAddress[address] = kept }
            return kept
        }
    }
}
