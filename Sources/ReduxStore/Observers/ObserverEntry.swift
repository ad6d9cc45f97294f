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
    private let queued = Mutex<QueuedDelivery>(QueuedDelivery())

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

    var isRemoved: Bool { calls.load(ordering: .acquiring) & Self.removedBit != 0 }

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
    /// another thread can wait for it.
    func invoke(_ notification: StoreNotification) {
        var current = calls.load(ordering: .relaxed)
        while true {
            if current & Self.removedBit != 0 { return }
            let (exchanged, original) = calls.compareExchange(
                expected: current, desired: current + 1, ordering: .acquiring)
            if exchanged { break }
            current = original
        }
        let context = ThreadContext.current
        context.pointee.calling.append(ObjectIdentifier(self))
        block(notification)
        context.pointee.calling.removeLast()
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

    /// Marks the observer removed so that no call begins any more, then waits until the calls
    /// running on other threads ended. Calls running on this thread (the observer removing
    /// itself from inside its own block) are not waited for.
    ///
    /// - Parameter wait: `false` inside a reducer, where waiting for another thread's call could
    ///   deadlock with that call dispatching to the same store.
    /// - Returns: `false` if it was already removed.
    @discardableResult
    func markRemoved(wait: Bool) -> Bool {
        let before = calls.bitwiseOr(Self.removedBit, ordering: .acquiringAndReleasing).oldValue
        guard before & Self.removedBit == 0 else { return false }
        guard wait else { return true }
        let own = UInt64(ThreadContext.current.pointee.callCount(of: ObjectIdentifier(self)))
        if calls.load(ordering: .acquiring) & ~Self.removedBit <= own { return true }
        pthread_mutex_lock(waitMutex)
        while calls.load(ordering: .acquiring) & ~Self.removedBit > own {
            pthread_cond_wait(waitCondition, waitMutex)
        }
        pthread_mutex_unlock(waitMutex)
        return true
    }
}
