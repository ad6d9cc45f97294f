internal import CJSONC
internal import CReduxStoreAPI
@_spi(Bindings) import ReduxStore
import ReduxStoreCStatus
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where a forwarding store's dispatches go (`rdx_store_create_forwarding`): a library that
/// decides the store's order itself (libreduxstore-postgres.so, for a store replicated through a
/// PostgreSQL stream) and applies each action back with `rdx_store_apply_forwarded`.
final class CForwarding: @unchecked Sendable {
    // @unchecked: the C function pointers and context are immutable; `applying` is atomic and
    // `released` is behind its lock.
    private let function: rdx_forward_fn
    /// What the library gave `rdx_store_create_forwarding`; `rdx_store_apply_forwarded` must
    /// name it.
    let context: UnsafeMutableRawPointer?
    private let release: rdx_release_fn?
    private let released = Locked(false)
    /// The thread applying a forwarded action (`rdx_store_apply_forwarded`), or 0: the store's
    /// reducers, listeners and observers run on it, and a dispatch from them would wait for the
    /// very action that runs them.
    private let applying = Atomic<UInt>(0)

    init(function: @escaping rdx_forward_fn, context: UnsafeMutableRawPointer?, release: rdx_release_fn?) {
        self.function = function
        self.context = context
        self.release = release
    }

    private static var thisThread: UInt { UInt(bitPattern: Int(bitPattern: pthread_self())) }

    /// Hands a dispatch to the library; returns once it was applied, or throws what it said.
    /// Not inlined: a plain store's dispatch does not carry this path.
    @inline(never)
    func forward(
        _ handle: CStoreHandle, identifier: UnsafePointer<CChar>, payload: OpaquePointer?, enqueue: Bool,
        source: DispatchSite
    ) throws(StoreError) {
        guard !enqueue else {
            throw StoreError(
                .invalidArgument,
                "this store's order is decided by another library (a replicated store): enqueueing is not available; rdx_store_dispatch_action() and rdx_store_dispatch_json() return once the action is applied")
        }
        guard applying.load(ordering: .acquiring) != Self.thisThread else {
            throw StoreError(
                .invalidArgument,
                "action \"\(String(cString: identifier))\" was dispatched from inside a reducer, listener or observer of a store whose order another library decides (a replicated store): it would wait for the action being applied; dispatch from another thread; nothing was stored")
        }
        let pointer = OpaquePointer(Unmanaged.passUnretained(handle).toOpaque())
        let status = function(
            pointer, identifier, payload, source.file?.assumingMemoryBound(to: CChar.self), Int32(clamping: source.line),
            context)
        // The library's words are this thread's last error already: kept as they are.
        guard status == RDX_OK else { throw StoreError(StoreError.Kind(status), String(cString: LastError.current)) }
    }

    /// Applies an action the library forwarded, on this thread, marked as applying.
    func applying<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        let previous = applying.exchange(Self.thisThread, ordering: .acquiringAndReleasing)
        defer { applying.store(previous, ordering: .releasing) }
        return try body()
    }

    /// Calls the library's release function, once.
    func releaseOnce() {
        let first = released.withLock { released -> Bool in
            defer { released = true }
            return !released
        }
        if first, let release { release(context) }
    }
}
