#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Synchronization

/// The store's one lock type: a value, a mutex and a condition variable in one allocation. The
/// only way to the value is ``withLock(_:)`` (or, for the store's own dispatch path, ``lock()``,
/// ``valuePointer`` and ``unlock()``); waiting is ``wait()`` on the condition, never polling.
///
/// The lock is `Synchronization`'s mutex handle (a futex word, locked and unlocked inline with one
/// compare-and-swap each when uncontended; a pthread mutex costs two library calls of about 25
/// instructions each). Locking it twice on one thread traps (the kernel reports the deadlock).
/// Two additions make it this store's lock:
/// - A hand-off counter, stored with release ordering before each unlock and loaded with acquire
///   ordering after each lock. A contended lock is handed over by the kernel, where
///   ThreadSanitizer cannot see it; these two atomics show it the same ordering the futex gives,
///   so it reports real races only. On x86-64 both are plain moves.
/// - The condition: a pthread condition variable with a pthread mutex of its own (the *wait
///   mutex*), used only by ``wait()`` and ``broadcast()``. A waiter takes the wait mutex before it
///   releases the lock and sleeps on the condition (which releases the wait mutex atomically); a
///   waker changes what is waited for under the lock and broadcasts holding the wait mutex. So a
///   waker's broadcast comes either before the waiter checked (it sees the change) or after it
///   sleeps (it is woken): no wake-up is lost. The order is always lock, then wait mutex; the
///   waiter takes the lock again only after it released the wait mutex.
package struct Locked<Value>: @unchecked Sendable {
    // @unchecked: the value is reached only while holding the mutex (as `Synchronization.Mutex`,
    // the lock is what makes sharing it sound).
    private let storage: LockStorage<Value>

    package init(_ value: Value) {
        storage = LockStorage.make(value)
    }

    /// Runs `body` with the value, holding the lock. `body` must not take this lock again.
    @inline(__always)
    package func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
        storage.lock()
        defer { storage.unlock() }
        return try body(&valuePointer.pointee)
    }

    /// Takes the lock. Pair with ``unlock()`` on the same thread.
    @inline(__always)
    package func lock() { storage.lock() }

    /// Releases the lock taken by ``lock()``.
    @inline(__always)
    package func unlock() { storage.unlock() }

    /// The value's address, to be touched only while holding the lock. Valid as long as this
    /// `Locked` (its storage) is alive.
    @inline(__always)
    package var valuePointer: UnsafeMutablePointer<Value> {
        storage.withUnsafeMutablePointerToHeader { $0 }
    }

    /// Waits on the condition variable; the caller holds the lock, which is released while
    /// waiting and held again on return. Wake-ups may be spurious: wait in a loop on the
    /// condition the waker changes under this lock.
    package func wait() { storage.wait() }

    /// Wakes every thread waiting in ``wait()``. Call it holding the lock, after changing what
    /// they wait for.
    package func broadcast() { storage.broadcast() }
}

/// The lock, its hand-off counter, and the condition variable of a ``Locked`` value.
package struct LockPrimitives: ~Copyable {
    let mutex = _MutexHandle()
    let handoff = Atomic<UInt32>(0)
    var waitMutex = pthread_mutex_t()
    var condition = pthread_cond_t()
}

/// The value (header) and its lock primitives (one element) in one allocation, so every address
/// in it is stable.
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
            #endif
            check(pthread_mutex_init(&primitives.pointee.waitMutex, &attributes), "pthread_mutex_init")
            check(pthread_mutexattr_destroy(&attributes), "pthread_mutexattr_destroy")
            check(pthread_cond_init(&primitives.pointee.condition, nil), "pthread_cond_init")
        }
        return storage
    }

    deinit {
        // The header (the value) is destroyed by ManagedBuffer itself; the element is ours.
        withUnsafeMutablePointerToElements { primitives in
            check(pthread_cond_destroy(&primitives.pointee.condition), "pthread_cond_destroy")
            check(pthread_mutex_destroy(&primitives.pointee.waitMutex), "pthread_mutex_destroy")
            _ = primitives.deinitialize(count: 1)
        }
    }

    @inline(__always)
    func lock() {
        withUnsafeMutablePointerToElements { primitives in
            primitives.pointee.mutex.unsafeLock()
            _ = primitives.pointee.handoff.load(ordering: .acquiring)
        }
    }

    @inline(__always)
    func unlock() {
        withUnsafeMutablePointerToElements { primitives in
            // Only the holder writes it, so a load and a store (no read-modify-write) suffice.
            let next = primitives.pointee.handoff.load(ordering: .relaxed) &+ 1
            primitives.pointee.handoff.store(next, ordering: .releasing)
            primitives.pointee.mutex.unsafeUnlock()
        }
    }

    /// The caller holds the lock. See ``Locked`` for why no wake-up is lost.
    func wait() {
        withUnsafeMutablePointerToElements { primitives in
            check(pthread_mutex_lock(&primitives.pointee.waitMutex), "pthread_mutex_lock")
            unlock()
            check(pthread_cond_wait(&primitives.pointee.condition, &primitives.pointee.waitMutex),
                  "pthread_cond_wait")
            check(pthread_mutex_unlock(&primitives.pointee.waitMutex), "pthread_mutex_unlock")
            lock()
        }
    }

    /// The caller holds the lock.
    func broadcast() {
        withUnsafeMutablePointerToElements { primitives in
            check(pthread_mutex_lock(&primitives.pointee.waitMutex), "pthread_mutex_lock")
            check(pthread_cond_broadcast(&primitives.pointee.condition), "pthread_cond_broadcast")
            check(pthread_mutex_unlock(&primitives.pointee.waitMutex), "pthread_mutex_unlock")
        }
    }
}

/// Traps with the call's name and error number when a pthread call failed: a failure means a
/// broken invariant (a lock used after destruction, locked twice, unlocked by another thread).
@inline(__always)
private func check(_ result: Int32, _ call: StaticString) {
    precondition(result == 0, "ReduxStore: \(call) failed (\(result))")
}
