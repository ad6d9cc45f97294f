import Dispatch
import Synchronization

/// One registered observer.
///
/// Its life, and how removal waits:
/// - A delivery holds (retains) the observer list it read under the store's lock for as long as
///   it calls that list's observers, and the list holds its entries. So an entry stays alive
///   while any delivery that could call it is running.
/// - Removal takes the entry out of the store's list and marks it removed (``markRemoved()``):
///   a delivery checks the mark before each synchronous call, so no call begins after it.
/// - When the last list holding the entry is gone, the entry is deinitialized: it can never be
///   called again. Its release handler runs then, once, and removers waiting in
///   ``Removal/wait()`` wake up. A store that goes away drops its list, so its observers are
///   released too (an async sequence of notifications ends).
/// - An observer with a queue is also held by its scheduled delivery blocks (so a notification
///   still pending when the store goes away is delivered). Its removal does not wait for a
///   block that has not started (the remover may be the queue's own thread); it waits for a
///   call already running, which is counted in and out.
final class ObserverEntry: @unchecked Sendable {
    // @unchecked: `removed` and `queuedCalls` are atomics; `queued` and `released` are behind
    // locks; the rest is immutable.
    let token: ObserverToken
    /// The name listened for; `nil` listens to every name.
    let name: StoreNotification.Name?
    /// Whether ``name`` is ``StoreNotification/Name/stateDidChange``: decided once, so matching
    /// a dispatch's notification compares no strings.
    private let listensToStateDidChange: Bool
    /// Where notifications go; `nil` calls the block on the dispatching thread.
    let queue: DispatchQueue?
    let block: @Sendable (StoreNotification) -> Void
    /// For an observer of a value in the state: reads and compares that value under the store's
    /// lock; the observer is called only for rounds in which some selected value changed (its
    /// block then checks its own).
    let selection: StateSelection?
    /// For an observer that asked what each action changed: the patches of the rounds not yet
    /// delivered to it. The store adds them under its lock when it makes a round (so a round
    /// stays as small as before); the observer's block takes its own.
    let pendingPatches: PendingPatches?
    var wantsPatch: Bool { pendingPatches != nil }
    /// Runs once, from deinit, when the observer can never be called again.
    let onRelease: (@Sendable () -> Void)?
    /// The first version this observer hears: it is not told of actions applied before it was
    /// added, nor of the action in progress when it was added from inside a reducer.
    let firstVersion: UInt64

    /// Set by removal; read before each call.
    private let removed = Atomic<Bool>(false)
    /// Calls of a queued observer running now (synchronous calls are covered by the lists).
    private let queuedCalls = Atomic<Int>(0)
    /// Set when the entry was released (synchronous) or its queued calls ended (queued), with
    /// the condition removers wait on. Shared with the removers, who outlive the entry.
    private let released = Locked<Bool>(false)

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
        onRelease: (@Sendable () -> Void)?, selection: StateSelection? = nil,
        pendingPatches: PendingPatches? = nil,
        block: @escaping @Sendable (StoreNotification) -> Void
    ) {
        self.selection = selection
        self.pendingPatches = pendingPatches
        self.token = ObserverToken(
            rawValue: Self.nextToken.wrappingAdd(1, ordering: .relaxed).oldValue)
        self.name = name
        self.listensToStateDidChange = name == .stateDidChange
        self.queue = queue
        self.firstVersion = firstVersion
        self.onRelease = onRelease
        self.block = block
    }

    deinit {
        if let onRelease { ThreadContext.asCallback(onRelease) }
        if queue == nil { Self.signal(released) }
    }

    /// Whether this observer is to hear `notification`.
    @inline(__always)
    func wants(_ notification: StoreNotification, selectionsChanged: Bool) -> Bool {
        guard notification.version >= firstVersion else { return false }
        if !selectionsChanged && selection != nil { return false }
        if notification.isStateDidChange { return name == nil || listensToStateDidChange }
        return name == nil || name == notification.name
    }

    /// Whether the observer is called for a round of `version` (for a restore, `restoring`: its
    /// `stateDidChange` round or its `stateDidRestore` one), as ``wants(_:selectionsChanged:)``
    /// decides for an observer without a selection: the rounds whose patch it is put.
    func hearsRound(at version: UInt64, restoring: Bool) -> Bool {
        guard version >= firstVersion else { return false }
        return name == nil || listensToStateDidChange || (restoring && name == .stateDidRestore)
    }

    /// Hands `notification` to the observer: on this thread (the caller holds the list this
    /// entry is in, and counts the call as a callback), or coalesced onto its queue.
    @inline(__always)
    func deliver(_ notification: StoreNotification) {
        if queue == nil {
            if !removed.load(ordering: .acquiring) { block(notification) }
        } else {
            post(notification)
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
            if let newest { invokeQueued(newest) }
        }
    }

    /// Calls the block on the queue unless the observer was removed, counting the call.
    private func invokeQueued(_ notification: StoreNotification) {
        queuedCalls.wrappingAdd(1, ordering: .acquiring)
        if !removed.load(ordering: .acquiring) {
            ThreadContext.asCallback { block(notification) }
        }
        if queuedCalls.wrappingSubtract(1, ordering: .releasing).newValue == 0,
           removed.load(ordering: .acquiring) {
            Self.signal(released)
        }
    }

    /// Marks the observer removed: no call begins any more. Returns what a remover outside every
    /// callback waits on, so that it can drop its reference to the entry first.
    func markRemoved() -> Removal {
        removed.store(true, ordering: .sequentiallyConsistent)
        if queue != nil, queuedCalls.load(ordering: .sequentiallyConsistent) == 0 {
            Self.signal(released)
        }
        return Removal(released: released)
    }

    /// What a remover waits on: the entry's release (synchronous observer) or the end of its
    /// running call (queued observer).
    struct Removal {
        let released: Locked<Bool>

        /// Waits for it. Only for a caller outside every callback that holds no reference to
        /// the entry: a call on this thread, or the caller's own reference, would never end.
        func wait() {
            released.unsafe.lock()
            while !released.unsafe.valuePointer.pointee { released.unsafe.wait() }
            released.unsafe.unlock()
        }
    }

    private static func signal(_ released: Locked<Bool>) {
        released.withLock { done in
            done = true
            released.broadcast()
        }
    }
}

/// The patches of the rounds a patch observer was not yet handed, by version.
final class PendingPatches: Sendable {
    private let patches = Locked<[UInt64: [JSONPatch.Operation]]>([:])

    /// Keeps the patch of the round of `version` (under the store's lock).
    func put(_ patch: [JSONPatch.Operation], at version: UInt64) {
        patches.withLock { $0[version] = patch }
    }

    /// The patch of the round of `version`, taken. Only that one: rounds are delivered on the
    /// threads that dispatched them, so an older round's may still be on its way, and every
    /// patch put is one the observer hears (``ObserverEntry/hearsRound(at:restoring:)``).
    func take(at version: UInt64) -> [JSONPatch.Operation] {
        patches.withLock { $0.removeValue(forKey: version) } ?? []
    }
}
