import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The store's own serial queue of actions given to ``Store/enqueueAction(_:)``.
final class EnqueuedActions: @unchecked Sendable {
    // @unchecked: every var below is touched only while holding `mutex`.
    let queue = DispatchQueue(label: "ReduxStore.enqueue")
    let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Signalled each time an enqueued action was applied.
    let applied: UnsafeMutablePointer<pthread_cond_t>

    var actions: [any Action] = []
    var head = 0
    var enqueuedCount: UInt64 = 0
    /// Actions taken off the queue to be applied.
    var dequeuedCount: UInt64 = 0
    /// Actions applied whose synchronous observers all ran: what `flush` waits for.
    var appliedCount: UInt64 = 0
    /// A drain is scheduled or running.
    var draining = false
    /// The thread applying an enqueued action right now, or 0.
    var drainingThread: UInt = 0
    /// How many drains are running on the draining thread: 2 while an observer of an enqueued
    /// action flushes (and so drains the rest itself).
    var drainDepth = 0
    /// Actions the inner drain applied whose notifications wait for the current round to end:
    /// counted as applied when the outer action's dispatch returned.
    var appliedAwaitingRound: UInt64 = 0

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        applied = .allocate(capacity: 1)
        applied.initialize(to: pthread_cond_t())
        pthread_cond_init(applied, nil)
    }

    deinit {
        pthread_cond_destroy(applied)
        applied.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
}

extension Store {
    /// Applies `action` later, on the store's own serial queue, and returns at once (ReduxObjC's
    /// `dispatchAction:`). Enqueued actions are applied in the order they were enqueued, in the
    /// same total order as every other action; their synchronous observers run on that queue.
    ///
    /// Cost: one lock and, for the first action of a burst, one block scheduled on the queue.
    /// The store stays alive until its enqueued actions were applied.
    public func enqueueAction(_ action: some Action) {
        enqueue(erased: action)
    }

    /// ``enqueueAction(_:)`` for an action already in an existential box (kept as it is).
    package func enqueue(erased action: any Action) {
        let queue = enqueued
        pthread_mutex_lock(queue.mutex)
        queue.actions.append(action)
        queue.enqueuedCount += 1
        let schedule = !queue.draining
        queue.draining = true
        pthread_mutex_unlock(queue.mutex)
        if schedule {
            // Through the type-erased face: a block that runs elsewhere must not capture the
            // (possibly non-Sendable) `State.Type`.
            let store: any AnyStore = self
            queue.queue.async { store.drainEnqueued(upTo: nil) }
        }
    }

    /// Returns once every action enqueued before the call was applied and its synchronous
    /// observers ran.
    ///
    /// Called from an observer of an enqueued action (on the store's queue), it applies the
    /// remaining enqueued actions itself, in order, rather than wait for itself. Called from
    /// inside a reducer it returns at once: no action can be applied until the reducer returns.
    public func flush() {
        if isInsideReducer { return }
        let queue = enqueued
        let me = currentThreadID()
        pthread_mutex_lock(queue.mutex)
        let target = queue.enqueuedCount
        if queue.drainingThread == me {
            pthread_mutex_unlock(queue.mutex)
            drainEnqueued(upTo: target)
            return
        }
        while queue.appliedCount < target {
            pthread_cond_wait(queue.applied, queue.mutex)
        }
        pthread_mutex_unlock(queue.mutex)
    }

    /// Applies enqueued actions in order until the queue is empty (the scheduled drain, `target`
    /// nil) or until `target` actions were taken off it (a flush from inside the drain).
    ///
    /// An action applied by a drain nested in an observer has its notification delivered only
    /// after the outer action's round; it counts as applied (for `flush` on other threads) once
    /// the outer action's dispatch returned.
    package func drainEnqueued(upTo target: UInt64?) {
        let queue = enqueued
        let me = currentThreadID()
        pthread_mutex_lock(queue.mutex)
        queue.drainDepth += 1
        while true {
            if let target, queue.dequeuedCount >= target { break }
            if queue.head == queue.actions.count {
                queue.actions.removeAll(keepingCapacity: true)
                queue.head = 0
                if target == nil {
                    queue.draining = false
                    queue.drainingThread = 0
                }
                break
            }
            let action = queue.actions[queue.head]
            queue.head += 1
            queue.dequeuedCount += 1
            queue.drainingThread = me
            pthread_mutex_unlock(queue.mutex)

            dispatch(erased: action)

            pthread_mutex_lock(queue.mutex)
            if queue.drainDepth == 1 {
                queue.appliedCount += 1 + queue.appliedAwaitingRound
                queue.appliedAwaitingRound = 0
                pthread_cond_broadcast(queue.applied)
            } else {
                queue.appliedAwaitingRound += 1
            }
        }
        queue.drainDepth -= 1
        pthread_mutex_unlock(queue.mutex)
    }
}
