#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The store's one lock type: a value, a pthread mutex and a condition variable in one
/// allocation. The way to the value is ``withLock(_:)``. Taking and releasing the lock by hand,
/// touching the value through its address and waiting on the condition sit behind ``unsafe``
/// (``UnsafeView``), for the few places that cannot be one closure: the store's dispatch path
/// (which unlocks before it delivers) and the waits in a loop on a condition. Waking waiters is
/// ``broadcast()``, from inside ``withLock(_:)``.
///
/// `Sendable` where the value is (as swift-nio's `NIOLockedValueBox`): the lock makes sharing
/// the value between threads sound, not sharing a value that is itself bound to one thread.
/// A value that is not `Sendable` but is only touched under this lock is wrapped by its user in
/// a type that says why it may be shared (``StoreCore``).
///
/// A pthread mutex rather than `Synchronization.Mutex`: on Linux that one is a bare futex that
/// ThreadSanitizer cannot follow (it reports every access inside it as a race, which would bury
/// a real one). Every pthread call's result is checked; debug builds use an error-checking mutex,
/// so locking twice on one thread traps at once instead of hanging; release builds glibc's
/// adaptive mutex, which spins a little before it sleeps: faster than the default mutex with more
/// threads dispatching than there are cores, the same on one thread (Benchmarks/README.md, "The
/// lock under contention").
package struct Locked<Value> {
    private let storage: LockStorage<Value>

    package init(_ value: Value) {
        storage = LockStorage.make(value)
    }

    /// Runs `body` with the value, holding the lock. `body` must not take this lock again.
    @inline(__always)
    package func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        storage.lock()
        defer { storage.unlock() }
        return try body(&storage.withUnsafeMutablePointerToHeader { $0 }.pointee)
    }

    /// Runs `body` holding the lock, without an access to the value: for a lock that guards a
    /// turn rather than a value (`Locked<Void>`). (An `inout` access to a value of no size is
    /// one ThreadSanitizer can report against the lock's own reads of the storage.)
    @inline(__always)
    func withLockHeld<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        storage.lock()
        defer { storage.unlock() }
        return try body()
    }

    /// Wakes every thread waiting in ``UnsafeView/wait()``. Call it holding the lock (inside
    /// ``withLock(_:)``), after changing what they wait for.
    @inline(__always)
    package func broadcast() { storage.broadcast() }

    /// The manual operations: lock and unlock by hand, the value's address, waiting. Nothing
    /// here checks that the caller holds the lock; each use says why it does.
    @inline(__always)
    var unsafe: UnsafeView { UnsafeView(storage: Unmanaged.passUnretained(storage)) }

    /// See ``Locked/unsafe``. Not `Sendable`: a view is used on the thread that made it, while
    /// the ``Locked`` it came from is alive. It holds the storage unretained, so that the
    /// dispatch path's manual locking costs no retain and release per use (a strong reference
    /// here costs two of each per dispatch).
    struct UnsafeView {
        fileprivate let storage: Unmanaged<LockStorage<Value>>

        /// Takes the lock. Pair with ``unlock()`` on the same thread.
        @inline(__always)
        func lock() { storage._withUnsafeGuaranteedRef { $0.lock() } }

        /// Releases the lock taken by ``lock()``.
        @inline(__always)
        func unlock() { storage._withUnsafeGuaranteedRef { $0.unlock() } }

        /// The value's address, to be touched only while holding the lock. Valid as long as the
        /// ``Locked`` (its storage) is alive.
        @inline(__always)
        var valuePointer: UnsafeMutablePointer<Value> {
            storage._withUnsafeGuaranteedRef { $0.withUnsafeMutablePointerToHeader { $0 } }
        }

        /// Waits on the condition variable; the caller holds the lock, which is released while
        /// waiting and held again on return. Wake-ups may be spurious: wait in a loop on the
        /// condition the waker changes under this lock.
        @inline(__always)
        func wait() { storage._withUnsafeGuaranteedRef { $0.wait() } }

        /// ``wait()`` for at most `milliseconds` (against `CLOCK_REALTIME`, pthread's default; a
        /// clock change only shortens or lengthens one wait).
        func wait(milliseconds: Int) {
            storage._withUnsafeGuaranteedRef { $0.wait(milliseconds: milliseconds) }
        }
    }
}

// @unchecked: the storage is a class the compiler cannot see is only reached under its mutex;
// the condition on `Value` is the checked part.
extension Locked: @unchecked Sendable where Value: Sendable {}

/// The pthread pair of a ``Locked`` value.
struct LockPrimitives {
    var mutex = pthread_mutex_t()
    var condition = pthread_cond_t()
}

/// The value (header) and its mutex and condition (one element) in one allocation.
final class LockStorage<Value>: ManagedBuffer<Value, LockPrimitives> {
    static func make(_ value: Value) -> LockStorage<Value> {
        let buffer = create(minimumCapacity: 1) { _ in value }
        let storage = unsafeDowncast(buffer, to: LockStorage<Value>.self)
        storage.withUnsafeMutablePointerToElements { primitives in
            primitives.initialize(to: LockPrimitives())
            var attributes = pthread_mutexattr_t()
            check(pthread_mutexattr_init(&attributes), "pthread_mutexattr_init")
            #if DEBUG
            check(pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK)),
                  "pthread_mutexattr_settype")
            #else
            // Spins briefly while the holder runs on another core, instead of sleeping at once.
            check(pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP)),
                  "pthread_mutexattr_settype")
            #endif
            check(pthread_mutex_init(&primitives.pointee.mutex, &attributes), "pthread_mutex_init")
            check(pthread_mutexattr_destroy(&attributes), "pthread_mutexattr_destroy")
            check(pthread_cond_init(&primitives.pointee.condition, nil), "pthread_cond_init")
        }
        return storage
    }

    deinit {
        // The header (the value) is destroyed by ManagedBuffer itself; the element is ours.
        withUnsafeMutablePointerToElements { primitives in
            check(pthread_cond_destroy(&primitives.pointee.condition), "pthread_cond_destroy")
            check(pthread_mutex_destroy(&primitives.pointee.mutex), "pthread_mutex_destroy")
            primitives.deinitialize(count: 1)
        }
    }

    @inline(__always)
    func lock() {
        withUnsafeMutablePointerToElements {
            check(pthread_mutex_lock(&$0.pointee.mutex), "pthread_mutex_lock")
        }
    }

    @inline(__always)
    func unlock() {
        withUnsafeMutablePointerToElements {
            check(pthread_mutex_unlock(&$0.pointee.mutex), "pthread_mutex_unlock")
        }
    }

    func wait() {
        withUnsafeMutablePointerToElements {
            check(pthread_cond_wait(&$0.pointee.condition, &$0.pointee.mutex), "pthread_cond_wait")
        }
    }

    func wait(milliseconds: Int) {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + milliseconds * 1_000_000
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        withUnsafeMutablePointerToElements {
            let result = pthread_cond_timedwait(&$0.pointee.condition, &$0.pointee.mutex, &deadline)
            if result != ETIMEDOUT { check(result, "pthread_cond_timedwait") }
        }
    }

    func broadcast() {
        withUnsafeMutablePointerToElements {
            check(pthread_cond_broadcast(&$0.pointee.condition), "pthread_cond_broadcast")
        }
    }
}

/// Traps with the call's name and error number when a pthread call failed: a failure means a
/// broken invariant (a lock used after destruction, locked twice, unlocked by another thread).
@inline(__always)
private func check(_ result: Int32, _ call: StaticString) {
    precondition(result == 0, "ReduxStore: \(call) failed (\(result))")
}
