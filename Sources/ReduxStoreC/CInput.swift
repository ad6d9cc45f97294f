internal import CJSONC
import ReduxStore
#if canImport(Glibc)
import Glibc
#endif

/// Checks of what C hands the store, each failing with the status and words the header promises.
/// The rules themselves are the core's (``JSONInput``), the same for Swift and C.
enum CInput {
    /// A non-NULL argument, or `RDX_EINVAL` naming it.
    static func required<T>(_ value: T?, _ name: String) throws(StoreError) -> T {
        guard let value else { throw StoreError(.invalidArgument, "\(name) is NULL") }
        return value
    }

    /// An action identifier: not NULL, at most ``StoreLimits/maximumIdentifierLength`` bytes,
    /// valid UTF-8.
    static func identifier(_ pointer: UnsafePointer<CChar>?) throws(StoreError)
        -> UnsafePointer<CChar>
    {
        let pointer = try required(pointer, "identifier")
        let length = strnlen(pointer, StoreLimits.maximumIdentifierLength + 1)
        try JSONInput.identifier(pointer, length: length)
        return pointer
    }

    /// A tree C hands in (a payload, an initial state), checked by ``JSONInput/tree``.
    static func tree(_ object: OpaquePointer?, _ name: String) throws(StoreError) {
        try JSONInput.tree(object, name)
    }

    /// Action text C hands in, parsed by ``JSONInput/withParsedAction``.
    static func withParsedAction<T>(
        _ text: UnsafePointer<CChar>?,
        _ body: (UnsafePointer<CChar>, OpaquePointer?) throws(StoreError) -> T
    ) throws(StoreError) -> T {
        let text = try required(text, "action_json")
        let length = strnlen(text, StoreLimits.maximumJSONTextSize + 1)
        return try JSONInput.withParsedAction(text, length: length, body)
    }
}
