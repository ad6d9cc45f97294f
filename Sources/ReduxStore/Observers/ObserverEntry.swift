import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One registered observer.
///
/// Removal is a flag plus a wait: ``markRemoved(waitingOutside:)`` sets the flag so no new call
/// begins, then waits for the calls already running on other threads. A call begins only through
/// ``invoke(_:)``, which checks the flag and counts itself in with one atomic step.
final class ObserverEntry: @unchecked Sendable {
    let token: ObserverToken
    /// The name listened for; `nil` listens to every name.
    let name: StoreNotification.Name?
    /// Where notifications go; `nil` calls the block on the dispatching thread.
    let queue: DispatchQueue?
    let block: @Sendable (StoreNotification) -> Void
    /// The first version this observer hears: it is not told of actions applied before it was
    /// added, nor of the action in progress when it was added from inside a reducer.
    let firstVersion: UInt64

    /// Bit 63: removed. The rest: calls running now.
    private let calls = Atomic<UInt64>(0)
    private static let removedBit: UInt64 = 1 << 63

    /// Guards nothing but the sleep of a remover waiting for running calls to end.
    private let waitMutex: UnsafeMutablePointer<pthread_mutex_t>
    private let waitCondition: UnsafeMutablePointer<pthread_cond_t>

    /// For observers with a queue: the newest notification not yet handed to the queue, and
    /// whether a delivery is already scheduled (coalescing).
    private let queued = Locked<QueuedDelivery>(QueuedDelivery())

    private struct QueuedDelivery {
        var newest: StoreNotification?
        var highestVersion: UInt64 = 0
        var scheduled = false
    }

    private static let nextToken = Atomic<UInt64>(1)

    init(
        name: StoreNotification.Name?, queue: DispatchQueue?, firstVersion: UInt64,
        block: @escaping @Sendable (StoreNotification) -> Void
    ) {
        self.token = ObserverToken(
            rawValue: Self.nextToken.wrappingAdd(1, ordering: .relaxed).oldValue)
        self.name = name
        self.queue = queue
        self.firstVersion = firstVersion
        self.block = block
        waitMutex = .allocate(capacity: 1)
        waitMutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(waitMutex, nil)
        waitCondition = .allocate(capacity: 1)
        waitCondition.initialize(to: pthread_cond_t())
        pthread_cond_init(waitCondition, nil)
    }

    deinit {
        pthread_cond_destroy(waitCondition)
        waitCondition.deallocate()
        pthread_mutex_destroy(waitMutex)
        waitMutex.deallocate()
    }

    /// Whether the observer was removed (a sequentially consistent load: see `Store.callFast`).
    var isRemoved: Bool { calls.load(ordering: .sequentiallyConsistent) & Self.removedBit != 0 }

    /// Whether this observer is to hear `notification`.
    @inline(__always)
    func wants(_ notification: StoreNotification) -> Bool {
        notification.version >= firstVersion && (name == nil || name == notification.name)
    }

    /// Hands `notification` to the observer: at once on this thread, or coalesced onto its queue.
    @inline(__always)
    func deliver(_ notification: StoreNotification) {
        if queue == nil {
            invoke(notification)
        } else {
            post(notification)
        }
    }

    /// Calls the block unless the observer was removed; the call is counted so a remover on
    /// another thread can wait for it, and recorded in this thread's context so a remover on
    /// this thread (the observer itself) does not.
    func invoke(_ notification: StoreNotification) {
        guard beginCall() else { return }
        let context = ThreadContext.current
        context.pointee.calling.append(ObjectIdentifier(self))
        block(notification)
        context.pointee.calling.removeLast()
        endCall()
    }

    /// Counts a call in, unless the observer was removed: one compare-and-swap.
    @inline(__always)
    private func beginCall() -> Bool {
        var current = calls.load(ordering: .relaxed)
        while true {
            if current & Self.removedBit != 0 { return false }
            let (exchanged, original) = calls.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiring)
            if exchanged { return true }
            current = original
        }
    }

    /// Counts a call out, and wakes a remover waiting for it.
    @inline(__always)
    private func endCall() {
        let after = calls.wrappingSubtract(1, ordering: .releasing).newValue
        if after & Self.removedBit != 0 {
            pthread_mutex_lock(waitMutex)
            pthread_cond_broadcast(waitCondition)
            pthread_mutex_unlock(waitMutex)
        }
    }

    /// Coalesces `notification` with any not yet delivered, and schedules one delivery on the
    /// queue if none is scheduled. Older versions arriving late from other threads are dropped,
    /// so the queue sees versions in increasing order and always the newest.
    private func post(_ notification: StoreNotification) {
        let schedule = queued.withLock { state -> Bool in
            guard notification.version > state.highestVersion else { return false }
            state.highestVersion = notification.version
            state.newest = notification
            if state.scheduled { return false }
            state.scheduled = true
            return true
        }
        guard schedule, let queue else { return }
        queue.async { [self] in
            let newest = queued.withLock { state -> StoreNotification? in
                state.scheduled = false
                defer { state.newest = nil }
                return state.newest
            }
            if let newest { invoke(newest) }
        }
    }

    /// Marks the observer removed: no counted call begins any more, and the store's fast path
    /// reads the flag before each call.
    ///
    /// - Returns: `false` if it was already removed.
    func markRemoved() -> Bool {
        let before = calls.bitwiseOr(Self.removedBit, ordering: .sequentiallyConsistent).oldValue
        return before & Self.removedBit == 0
    }

    /// Waits until the counted calls running on other threads ended; calls running on this thread
    /// (the observer removing itself from inside its own block) are not waited for.
    func waitForCountedCalls() {
        let own = UInt64(ThreadContext.current.pointee.callCount(of: ObjectIdentifier(self)))
        if calls.load(ordering: .acquiring) & ~Self.removedBit <= own { return }
        pthread_mutex_lock(waitMutex)
        while calls.load(ordering: .acquiring) & ~Self.removedBit > own {
            pthread_cond_wait(waitCondition, waitMutex)
        }
        pthread_mutex_unlock(waitMutex)
    }

    /// Waits while `condition` holds: for a call on a store's fast path to end. The caller of
    /// that call wakes waiters after it; a wake-up that races past is covered by waking every
    /// millisecond to check again.
    func waitWhile(_ condition: () -> Bool) {
        guard condition() else { return }
        pthread_mutex_lock(waitMutex)
        while condition() {
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            var deadline = now
            deadline.tv_nsec += 1_000_000
            if deadline.tv_nsec >= 1_000_000_000 {
                deadline.tv_sec += 1
                deadline.tv_nsec -= 1_000_000_000
            }
            pthread_cond_timedwait(waitCondition, waitMutex, &deadline)
        }
        pthread_mutex_unlock(waitMutex)
    }

    /// Wakes removers waiting in ``waitWhile(_:)`` or ``waitForCountedCalls()``.
    func wakeWaiters() {
        pthread_mutex_lock(waitMutex)
        pthread_cond_broadcast(waitCondition)
        pthread_mutex_unlock(waitMutex)
    }
}
