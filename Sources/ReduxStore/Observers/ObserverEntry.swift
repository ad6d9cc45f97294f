import Dispatch
import Synchronization

/// One registered observer.
///
/// Every call of the block is counted in and out (``invoke(_:)``). Removal marks the entry
/// (``markRemoved()``): from then on no call begins. Once the entry is marked and its last running
/// call has ended, it is *released*: its release handler runs, exactly once, and removers
/// waiting in ``waitUntilReleased()`` wake up. A store that goes away marks every entry it still
/// has, so the release handler also tells that the store is gone.
final class ObserverEntry: @unchecked Sendable {
    // @unchecked: `calls` and `releaseClaimed` are atomics; `released` and `queued` are behind
    // locks; the rest is immutable.
    let token: ObserverToken
    /// The name listened for; `nil` listens to every name.
    let name: StoreNotification.Name?
    /// Where notifications go; `nil` calls the block on the dispatching thread.
    let queue: DispatchQueue?
    let block: @Sendable (StoreNotification) -> Void
    /// Runs once the observer can never be called again (see the type's comment).
    let onRelease: (@Sendable () -> Void)?
    /// The first version this observer hears: it is not told of actions applied before it was
    /// added, nor of the action in progress when it was added from inside a reducer.
    let firstVersion: UInt64

    /// Bit 63: removed. The rest: calls that began and have not ended (a call that finds the bit
    /// set ends at once without calling the block).
    private let calls = Atomic<UInt64>(0)
    private static let removedBit: UInt64 = 1 << 63
    /// Set by the one thread that releases the entry.
    private let releaseClaimed = Atomic<Bool>(false)
    /// Whether the entry was released; what removers wait on.
    private let released = Locked<Bool>(false)

    /// For observers with a queue: the newest notification not yet handed to the queue, and
    /// whether a delivery is already scheduled (coalescing).
    private let queued = Locked<QueuedDelivery>(QueuedDelivery())

    private struct QueuedDelivery {
        var newest: StoreNotification?
        var highestVersion: UInt64 = 0
        /// A delivery block is scheduled or running on the queue.
        var scheduled = false
        /// The store went away: once the scheduled delivery ran, the observer is released.
        var storeGone = false
    }

    private static let nextToken = Atomic<UInt64>(1)

    init(
        name: StoreNotification.Name?, queue: DispatchQueue?, firstVersion: UInt64,
        onRelease: (@Sendable () -> Void)?, block: @escaping @Sendable (StoreNotification) -> Void
    ) {
        self.token = ObserverToken(
            rawValue: Self.nextToken.wrappingAdd(1, ordering: .relaxed).oldValue)
        self.name = name
        self.queue = queue
        self.firstVersion = firstVersion
        self.onRelease = onRelease
        self.block = block
    }

    /// Whether this observer is to hear `notification`.
    @inline(__always)
    func wants(_ notification: StoreNotification) -> Bool {
        notification.version >= firstVersion && (name == nil || name == notification.name)
    }

    /// Hands `notification` to the observer: on this thread (the caller counts it as a
    /// callback), or coalesced onto its queue.
    @inline(__always)
    func deliver(_ notification: StoreNotification) {
        if queue == nil {
            invoke(notification)
        } else {
            post(notification)
        }
    }

    /// Calls the block unless the observer was removed, counting the call in and out.
    @inline(__always)
    private func invoke(_ notification: StoreNotification) {
        let before = calls.wrappingAdd(1, ordering: .acquiring).oldValue
        if before & Self.removedBit == 0 {
            block(notification)
        }
        let after = calls.wrappingSubtract(1, ordering: .releasing).newValue
        if after == Self.removedBit { release() }
    }

    /// Coalesces `notification` with any not yet delivered, and schedules one delivery on the
    /// queue if none is scheduled or running. Older versions arriving late from other threads are
    /// dropped, so the queue sees versions in increasing order and always the newest.
    private func post(_ notification: StoreNotification) {
        let schedule = queued.withLock { state -> Bool in
            guard notification.version > state.highestVersion else { return false }
            state.highestVersion = notification.version
            state.newest = notification
            if state.scheduled { return false }
            state.scheduled = true
            return true
        }
        if schedule { scheduleQueuedDelivery() }
    }

    /// Delivers the newest notification on the queue; again if a newer one came meanwhile.
    private func scheduleQueuedDelivery() {
        queue?.async { [self] in
            let newest = queued.withLock { state -> StoreNotification? in
                defer { state.newest = nil }
                return state.newest
            }
            if let newest { ThreadContext.asCallback { invoke(newest) } }
            let (again, storeGone) = queued.withLock { state -> (Bool, Bool) in
                if state.newest != nil { return (true, false) }
                state.scheduled = false
                return (false, state.storeGone)
            }
            if again {
                scheduleQueuedDelivery()
            } else if storeGone {
                markRemoved()
            }
        }
    }

    /// The store went away: no notification comes any more. The observer is released now, or,
    /// with a queued delivery still to run, once it ran.
    func storeDidGoAway() {
        let deliveryPending = queued.withLock { state -> Bool in
            state.storeGone = true
            return state.scheduled
        }
        if !deliveryPending { markRemoved() }
    }

    /// Marks the observer removed: no call begins any more. Releases it at once if no call is
    /// running; else the last running call releases it when it ends.
    ///
    /// - Returns: `false` if it was already removed.
    @discardableResult
    func markRemoved() -> Bool {
        let before = calls.bitwiseOr(Self.removedBit, ordering: .acquiringAndReleasing).oldValue
        if before & Self.removedBit != 0 { return false }
        if before == 0 { release() }
        return true
    }

    /// Waits until the entry was released: every call running on another thread ended and the
    /// release handler ran. Only for a caller outside every callback (a call on this thread would
    /// never end while it waits).
    func waitUntilReleased() {
        released.lock()
        while !released.valuePointer.pointee { released.wait() }
        released.unlock()
    }

    /// Runs the release handler, once, then wakes the removers.
    private func release() {
        guard !releaseClaimed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if let onRelease { ThreadContext.asCallback(onRelease) }
        released.withLock { done in
            done = true
            released.broadcast()
        }
    }
}
