internal import CJSONC
@_spi(Bindings) import ReduxStore
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
        let limit = StoreLimits.maximumIdentifierLength
        let length = strnlen(pointer, limit + 1)
        // ASCII, checked eight bytes at a time; anything else gets the full UTF-8 check.
        let raw = UnsafeRawPointer(pointer)
        var high: UInt64 = 0
        var index = 0
        while index + 8 <= length {
            high |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < length {
            high |= UInt64(raw.load(fromByteOffset: index, as: UInt8.self))
            index += 1
        }
        let ascii = high & 0x8080_8080_8080_8080 == 0
        if ascii && length <= limit { return pointer }
        try JSONInput.identifier(pointer, length: length)
        return pointer
    }

    /// A tree C hands in (a payload, an initial state), checked by ``JSONInput/tree``.
    static func tree(_ object: OpaquePointer?, _ name: String) throws(StoreError) {
        // NULL (no payload) is fine: answered here, without a call.
        guard let object else { return }
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
