internal import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
import ReduxStoreCStatus
#if canImport(Glibc)
import Glibc
#endif

/// This thread's last failure message, kept as a C string the thread owns (a pthread key frees
/// it when the thread exits). `rdx_last_error()` hands it out.
enum LastError {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { raw in free(raw) }
        precondition(status == 0, "ReduxStore: pthread_key_create failed (\(status))")
        return key
    }()

    /// The message, or `""` before any failure on this thread.
    static var current: UnsafePointer<CChar> {
        if let raw = pthread_getspecific(key) {
            return UnsafePointer(raw.assumingMemoryBound(to: CChar.self))
        }
        return StaticText.empty
    }

    /// Keeps `message` as this thread's last failure, with its control characters escaped as
    /// `\u00XX` (``StoreError/printable(_:)``): a NUL in a quoted key would cut the C string.
    static func set(_ message: String) {
        let copy = strdup(StoreError.printable(message))
        let old = pthread_getspecific(key)
        pthread_setspecific(key, copy)
        free(old)
    }
}

extension StoreError {
    /// Records the error as this thread's last failure and returns its status.
    func record() -> rdx_status {
        LastError.set(message)
        return kind.status
    }
}

/// Turns a result into a status, recording the failure.
func status(_ body: () throws(StoreError) -> Void) -> rdx_status {
    do {
        try body()
        return RDX_OK
    } catch {
        return error.record()
    }
}

/// Runs `body` and returns what it returns; on a failure records it (this thread's last error)
/// and returns `failure` instead: what a function that answers a tree or a token returns then
/// (`NULL` or 0).
func recording<T>(_ failure: T, _ body: () throws(StoreError) -> T) -> T {
    do {
        return try body()
    } catch {
        _ = error.record()
        return failure
    }
}

/// Static C strings: valid for the life of the process, never freed.
enum StaticText {
    static var empty: UnsafePointer<CChar> { pointer("") }
    static var stateDidChange: UnsafePointer<CChar> { pointer("RDXStateDidChangeNotification") }

    /// The library's version: the header's `RDX_VERSION`, so the two cannot disagree.
    // nonisolated(unsafe): written once by the initializer, read-only after.
    nonisolated(unsafe) static let libraryVersion: UnsafePointer<CChar> = {
        guard let copy = strdup(RDX_VERSION) else { fatalError("ReduxStore: out of memory") }
        return UnsafePointer(copy)  // kept for the life of the process
    }()

    static func pointer(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
