#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where an action was dispatched from, as the dispatch path carries it: a pointer, a length and
/// a line, so that carrying it costs no allocation and no reference count.
///
/// Invariant: `file` is `nil` (no source known) or points at `count` bytes of UTF-8 and a NUL that stay
/// valid for the life of the program (a Swift `#fileID` literal, or a lent name copied once
/// into ``KeptNames/files``), unless `borrowed` is true: then the caller lent them only until
/// its dispatch returns, and whatever keeps the site past that call takes
/// ``kept()`` instead (the record of an applied action does, under the store's lock, which is
/// still within the call).
///
/// Package rather than part of the bindings seam (<doc:TheBindingsSeam>), for the inlinable
/// ``Store/dispatchAction(_:file:line:)`` makes one in its caller's module: replication dispatches
/// with the source a stored action names (``init(stored:)``), bindings with a lent one
/// (``init(borrowingFile:line:)``).
@frozen @usableFromInline
package struct DispatchSite: Sendable {
    // Sendable: the bytes are immutable; `borrowed` sites never leave the dispatching call.
    /// The file's name, ``count`` bytes of UTF-8 followed by a NUL; `nil` when unknown.
    @usableFromInline nonisolated(unsafe) package let file: UnsafeRawPointer?
    /// The line (the low 32 bits), the name's length (the next 31) and whether it is borrowed
    /// (the top bit), in one word: two words in all, passed in two registers along the dispatch
    /// path (four separate fields cost every dispatch more).
    @usableFromInline let bits: UInt64

    /// The line; 0 when unknown.
    @inlinable package var line: UInt { UInt(bits & 0xFFFF_FFFF) }
    /// The name's length in bytes.
    @inlinable var count: Int { Int((bits >> 32) & 0x7FFF_FFFF) }
    /// Whether `file` is lent by the caller, valid only for its call.
    @inlinable var borrowed: Bool { bits >> 63 != 0 }

    /// No source known (a caller that names none, replayed actions).
    @inlinable
    package static var unknown: DispatchSite { DispatchSite(file: nil, bits: 0) }

    @inlinable
    init(file: UnsafeRawPointer?, bits: UInt64) {
        self.file = file
        self.bits = bits
    }

    /// A site of `count` bytes at `file` and `line`; no source when either does not fit (a
    /// name of 2 GiB or more, a line past 2^32 - 1).
    @inlinable
    init(file: UnsafeRawPointer?, count: Int, line: UInt, borrowed: Bool) {
        guard let file, count < 0x8000_0000, line <= 0xFFFF_FFFF else {
            self.init(file: nil, bits: 0)
            return
        }
        self.init(file: file, bits: UInt64(line) | UInt64(count) << 32 | (borrowed ? 1 << 63 : 0))
    }

    /// A Swift caller's `#fileID` and `#line`: a literal, which lives as long as the program.
    @inlinable
    init(_ file: StaticString, _ line: UInt) {
        if file.hasPointerRepresentation {
            self.init(file: UnsafeRawPointer(file.utf8Start), count: file.utf8CodeUnitCount, line: line, borrowed: false)
        } else {
            self.init(file: nil, bits: 0)
        }
    }

    /// A caller's `file` (a NUL-terminated name) and `line`, lent for the call. `nil` or an
    /// empty name is no source.
    package init(borrowingFile file: UnsafePointer<CChar>?, line: UInt) {
        guard let file, file.pointee != 0 else {
            self.init(file: nil, bits: 0)
            return
        }
        self.init(file: UnsafeRawPointer(file), count: strlen(file), line: line, borrowed: true)
    }

    /// A site named by a string (a source another process recorded), its name copied once per
    /// distinct name (``KeptNames/files``); unknown past that table's limit or for an empty name.
    init(keeping fileID: String, line: UInt) {
        var name = fileID
        let kept = name.withUTF8 { bytes in
            bytes.isEmpty ? nil : KeptNames.files.intern(UnsafeRawBufferPointer(bytes))
        }
        guard let kept else {
            self.init(file: nil, bits: 0)
            return
        }
        self.init(file: kept.baseAddress, count: kept.count, line: line, borrowed: false)
    }

    /// A source as journals and streams store it, `"Module/File.swift:42"` or `"prog.c:42"`,
    /// kept for the life of the program; unknown when it has no line after its last colon.
    package init(stored source: String) {
        guard let colon = source.utf8.lastIndex(of: UInt8(ascii: ":")),
            let line = UInt(source[source.utf8.index(after: colon)...])
        else {
            self.init(file: nil, bits: 0)
            return
        }
        self.init(keeping: String(source[..<colon]), line: line)
    }

    /// Whether a source is known.
    @inline(__always)
    var isKnown: Bool { file != nil }

    /// A kept site's file name at another line.
    init(kept site: DispatchSite, line: UInt) {
        self.init(file: site.file, count: site.count, line: line, borrowed: false)
    }

    /// This site, with bytes that live as long as the program: a lent name is copied once
    /// per distinct name (``KeptNames/files``); any other site is itself. The one way a borrowed
    /// site is kept: what outlives a dispatch (a queued action, the action log's column, whose
    /// records every consumer reads) takes its site through it.
    func kept() -> DispatchSite {
        guard borrowed, let file else { return self }
        guard let name = KeptNames.files.intern(UnsafeRawBufferPointer(start: file, count: count)) else {
            return .unknown
        }
        return DispatchSite(file: name.baseAddress, count: name.count, line: line, borrowed: false)
    }

    /// The site as the public type; `nil` when unknown. Copies the name (the one allocation, for a
    /// consumer that asked for it).
    var location: SourceLocation? {
        guard let file else { return nil }
        return SourceLocation(
            fileID: String(decoding: UnsafeRawBufferPointer(start: file, count: count), as: UTF8.self),
            line: line)
    }

    /// The file's name without folders, as UTF-8 bytes (the journal prints it).
    var fileNameBytes: UnsafeRawBufferPointer {
        let bytes = UnsafeRawBufferPointer(start: file, count: count)
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else { return bytes }
        return UnsafeRawBufferPointer(rebasing: bytes[(slash + 1)...])
    }
}
