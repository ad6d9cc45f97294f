#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where an action was dispatched from: the file and line of the call to
/// ``Store/dispatchAction(_:file:line:)``, ``Store/enqueueAction(_:file:line:)`` or
/// ``Store/dispatchActions(_:file:line:)`` (Swift fills them in by default), or those another
/// language's caller passed (a C program's `__FILE__` and `__LINE__`).
///
/// ```swift
/// for await change in store.changes() {
///     print(change.identifier, change.source?.description ?? "?")   // "addTodo Feature.swift:42"
/// }
/// ```
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    /// The file as the caller named it: Swift's `#fileID` (`"Module/Feature.swift"`), or the
    /// path another language's compiler was given.
    public let fileID: String
    /// The line of the call, from 1.
    public let line: UInt

    public init(fileID: String, line: UInt) {
        self.fileID = fileID
        self.line = line
    }

    /// The file's name without its folders, a colon and the line: `"Feature.swift:42"`. The
    /// journal writes this (`"source":"Feature.swift:42"`).
    public var description: String { "\(fileName):\(line)" }

    /// ``fileID`` without its folders (after the last `/`).
    public var fileName: String {
        guard let slash = fileID.utf8.lastIndex(of: UInt8(ascii: "/")) else { return fileID }
        return String(fileID[fileID.utf8.index(after: slash)...])
    }
}
