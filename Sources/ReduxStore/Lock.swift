import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The store's one lock type: a value and its lock in one allocation. The way to the value is
/// ``withLock(_:)``. Taking and releasing the lock by hand, touching the value through its
/// address and waiting on the condition sit behind ``unsafe`` (``UnsafeView``), for the few
/// places that cannot be one closure: the store's dispatch path (which unlocks before it
/// delivers) and the waits in a loop on a condition. Waking waiters is ``broadcast()``, from
/// inside ``withLock(_:)``.
///
/// `Sendable` where the value is (as swift-nio's `NIOLockedValueBox`): the lock makes sharing
/// the value between threads sound, not sharing a value that is itself bound to one thread.
/// A value that is not `Sendable` but is only touched under this lock is wrapped by its user in
/// a type that says why it may be shared (``StoreCore``).
///
/// The lock is a word taken and released by one atomic instruction each, inlined into the
/// caller, with a pthread mutex and conditions for the slow paths (``LockPrimitives``): every
/// dispatch takes it once, and calls into glibc's mutex cost more than the rest of the lock. Not
/// `Synchronization.Mutex`: on Linux its futex is one ThreadSanitizer cannot follow (it
/// reports every access inside it as a race, which would bury a real one), where it follows
/// this word's acquiring and releasing atomics. Debug builds trap when the holder locks again
/// (which would hang) or another thread releases it. Every pthread call's result is checked.
@_spi(Bindings) public struct Locked<Value> {
    private let storage: LockStorage<Value>

    @_spi(Bindings) public init(_ value: Value) {
        storage = LockStorage.make(value)
    }

    /// Runs `body` with the value, holding the lock. `body` must not take this lock again.
    @inline(__always)
    @_spi(Bindings) public func withLock<T, E: Error>(_ body: (inout Value) throws(E) -> T) throws(E) -> T {
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
    func broadcast() { storage.broadcast() }

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

// @unchecked: the storage is a class the compiler cannot see is only reached under its lock;
// the condition on `Value` is the checked part.
extension Locked: @unchecked Sendable where Value: Sendable {}

/// What a ``Locked`` value is locked with: a word taken and released by one atomic instruction
/// each (the calls inlined into the caller), and, for the slow paths only, a pthread mutex with
/// two conditions: one where threads wait for the word while another holds it, one for
/// ``Locked/UnsafeView/wait()``.
///
/// The word is the three-state lock of Drepper's "Futexes Are Tricky" (0 free, 1 held, 2 held
/// and perhaps wanted by a waiting thread), with the pthread pair in the futex's place: a thread
/// that finds the word held takes the mutex, marks the word 2 and waits on `waiters` until its
/// exchange finds the word free; releasing a word that was 2 takes the mutex and wakes one
/// waiter. A waiter marks the word under the mutex and waits atomically with releasing it, and
/// the releaser signals under the mutex, so no wake-up is lost. The word's atomics are
/// `acquiring` and `releasing`, which ThreadSanitizer follows.
struct LockPrimitives: ~Copyable {
    /// 0: free; 1: held; 2: held, and a thread may be waiting for it.
    let word = Atomic<UInt32>(0)
    #if DEBUG
    /// The holding thread's ``currentThreadID()``, 0 when free: debug builds trap on a second
    /// lock by the holder (which would otherwise hang) and on a release by another thread.
    let owner = Atomic<UInt>(0)
    #endif
    var mutex = pthread_mutex_t()
    /// Where threads wait for the word.
    var waiters = pthread_cond_t()
    /// ``Locked/UnsafeView/wait()``'s condition.
    var condition = pthread_cond_t()
}

/// The value (header) and its lock (one element) in one allocation.
final class LockStorage<Value>: ManagedBuffer<Value, LockPrimitives> {
    static func make(_ value: Value) -> LockStorage<Value> {
        let buffer = create(minimumCapacity: 1) { _ in value }
        let storage = unsafeDowncast(buffer, to: LockStorage<Value>.self)
        storage.withUnsafeMutablePointerToElements { primitives in
            primitives.initialize(to: LockPrimitives())
            check(pthread_mutex_init(&primitives.pointee.mutex, nil), "pthread_mutex_init")
            check(pthread_cond_init(&primitives.pointee.waiters, nil), "pthread_cond_init")
            check(pthread_cond_init(&primitives.pointee.condition, nil), "pthread_cond_init")
        }
        return storage
    }

    deinit {
        // The header (the value) is destroyed by ManagedBuffer itself; the element is ours.
        withUnsafeMutablePointerToElements { primitives in
            check(pthread_cond_destroy(&primitives.pointee.condition), "pthread_cond_destroy")
            check(pthread_cond_destroy(&primitives.pointee.waiters), "pthread_cond_destroy")
            check(pthread_mutex_destroy(&primitives.pointee.mutex), "pthread_mutex_destroy")
            primitives.deinitialize(count: 1)
        }
    }

    @inline(__always)
    func lock() {
        withUnsafeMutablePointerToElements { primitives in
            #if DEBUG
            precondition(primitives.pointee.owner.load(ordering: .relaxed) != currentThreadID(),
                         "ReduxStore: a lock taken again by the thread holding it")
            #endif
            if !primitives.pointee.word.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged {
                lockContended(primitives)
            }
            #if DEBUG
            primitives.pointee.owner.store(currentThreadID(), ordering: .relaxed)
            #endif
        }
    }

    /// ``lock()`` when the word was held: waits until this thread's exchange finds it free.
    /// No spin first: spinning before waiting bought nothing measurable (Benchmarks/README.md,
    /// "The lock under contention").
    @inline(never)
    private func lockContended(_ primitives: UnsafeMutablePointer<LockPrimitives>) {
        check(pthread_mutex_lock(&primitives.pointee.mutex), "pthread_mutex_lock")
        while primitives.pointee.word.exchange(2, ordering: .acquiring) != 0 {
            check(pthread_cond_wait(&primitives.pointee.waiters, &primitives.pointee.mutex), "pthread_cond_wait")
        }
        check(pthread_mutex_unlock(&primitives.pointee.mutex), "pthread_mutex_unlock")
    }

    @inline(__always)
    func unlock() {
        withUnsafeMutablePointerToElements { primitives in
            if Self.releaseWord(primitives, "ReduxStore: a lock released by a thread not holding it") {
                wakeWaiter(primitives)
            }
        }
    }

    /// Releases the word (in debug builds, first checks that this thread holds it and forgets
    /// the owner, else stops with `misuse`); true when a thread may be waiting for it, which the
    /// caller then wakes.
    @inline(__always)
    private static func releaseWord(_ primitives: UnsafeMutablePointer<LockPrimitives>, _ misuse: StaticString) -> Bool {
        #if DEBUG
        precondition(primitives.pointee.owner.load(ordering: .relaxed) == currentThreadID(), "\(misuse)")
        primitives.pointee.owner.store(0, ordering: .relaxed)
        #endif
        return primitives.pointee.word.exchange(0, ordering: .releasing) == 2
    }

    /// ``unlock()`` when a thread may be waiting for the word: wakes one.
    @inline(never)
    private func wakeWaiter(_ primitives: UnsafeMutablePointer<LockPrimitives>) {
        check(pthread_mutex_lock(&primitives.pointee.mutex), "pthread_mutex_lock")
        check(pthread_cond_signal(&primitives.pointee.waiters), "pthread_cond_signal")
        check(pthread_mutex_unlock(&primitives.pointee.mutex), "pthread_mutex_unlock")
    }

    /// Releases the lock and waits on the condition, then takes the lock again. The mutex is
    /// taken before the word is released, so a ``broadcast()`` (made holding the word, then the
    /// mutex) after this thread released the word finds it waiting.
    func wait() {
        withUnsafeMutablePointerToElements { primitives in
            check(pthread_mutex_lock(&primitives.pointee.mutex), "pthread_mutex_lock")
            releaseHoldingMutex(primitives)
            check(pthread_cond_wait(&primitives.pointee.condition, &primitives.pointee.mutex), "pthread_cond_wait")
            check(pthread_mutex_unlock(&primitives.pointee.mutex), "pthread_mutex_unlock")
        }
        lock()
    }

    func wait(milliseconds: Int) {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + milliseconds * 1_000_000
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        withUnsafeMutablePointerToElements { primitives in
            check(pthread_mutex_lock(&primitives.pointee.mutex), "pthread_mutex_lock")
            releaseHoldingMutex(primitives)
            let result = pthread_cond_timedwait(
                &primitives.pointee.condition, &primitives.pointee.mutex, &deadline)
            if result != ETIMEDOUT { check(result, "pthread_cond_timedwait") }
            check(pthread_mutex_unlock(&primitives.pointee.mutex), "pthread_mutex_unlock")
        }
        lock()
    }

    /// ``unlock()`` by a thread holding the mutex: wakes a waiter for the word itself.
    private func releaseHoldingMutex(_ primitives: UnsafeMutablePointer<LockPrimitives>) {
        if Self.releaseWord(primitives, "ReduxStore: a wait by a thread not holding the lock") {
            check(pthread_cond_signal(&primitives.pointee.waiters), "pthread_cond_signal")
        }
    }

    /// Wakes the threads in ``wait()``; the caller holds the lock.
    func broadcast() {
        withUnsafeMutablePointerToElements { primitives in
            check(pthread_mutex_lock(&primitives.pointee.mutex), "pthread_mutex_lock")
            check(pthread_cond_broadcast(&primitives.pointee.condition), "pthread_cond_broadcast")
            check(pthread_mutex_unlock(&primitives.pointee.mutex), "pthread_mutex_unlock")
        }
    }
}

/// Traps with the call's name and error number when a pthread call failed: a failure means a
/// broken invariant (a lock used after destruction, locked twice, unlocked by another thread).
@inline(__always)
private func check(_ result: Int32, _ call: StaticString) {
    precondition(result == 0, "ReduxStore: \(call) failed (\(result))")
}
