import DequeModule
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The store's own serial queue of actions given to ``Store/enqueueAction(_:file:line:)``.
final class EnqueuedActions: Sendable {
    /// Where the drains run.
    let queue = DispatchQueue(label: "ReduxStore.enqueue")
    /// What enqueuers, the drain and flushes share; its condition is signalled each time an
    /// enqueued action counts as applied.
    let state = Locked(Backlog())
    init() { ForkGeneration.watch() }

    struct Backlog {
        /// Actions not yet taken off the queue: only the backlog, never the history (an
        /// action is dropped as soon as it is taken off).
        var actions = Deque<QueuedAction>()
        var enqueuedCount: UInt64 = 0
        /// Actions taken off the queue to be applied.
        var dequeuedCount: UInt64 = 0
        /// Actions applied whose synchronous observers all ran: what `flush` waits for.
        var appliedCount: UInt64 = 0
        /// A drain is scheduled or running.
        var draining = false
        /// The thread applying an enqueued action right now, or 0.
        var drainingThread: UInt = 0
        /// How many drains are running on the draining thread: 2 while an observer of an
        /// enqueued action flushes (and so drains the rest itself).
        var drainDepth = 0
        /// Actions the inner drain applied whose notifications wait for the current round to
        /// end: counted as applied when the outer action's dispatch returned.
        var appliedAwaitingRound: UInt64 = 0
    }
}

/// Tells whether this process is a child made by `fork()` (and not yet replaced by `exec`).
/// The store's queue runs on libdispatch, which does not work in such a child (its worker
/// threads are not there, and a queue inherited from the parent may be locked for good): there
/// enqueueing and flushing are refused instead of hanging.
enum ForkGeneration {
    private static let forks = Atomic<UInt64>(0)
    private static let handlerInstalled: Void = {
        pthread_atfork(nil, nil) { ForkGeneration.childStarted() }
    }()

    private static func childStarted() { forks.wrappingAdd(1, ordering: .relaxed) }

    /// Installs the fork handler; the store does it when it is made.
    static func watch() { _ = handlerInstalled }

    /// Whether this process is a forked child.
    static var isForkedChild: Bool { forks.load(ordering: .relaxed) != 0 }
}

extension Store {
    /// Applies `action` later, on the store's own serial queue, and returns at once (ReduxObjC's
    /// `dispatchAction:`). Enqueued actions are applied in the order they were enqueued, in the
    /// same total order as every other action; their synchronous observers run on that queue.
    ///
    /// From inside a reducer it returns at once too, and the action goes to the queue as from
    /// anywhere else: applied after the current action, on the queue, not right after it as an
    /// action given to ``dispatchAction(_:file:line:)`` there is (so its place among the actions
    /// that reducer dispatches is not fixed).
    ///
    /// Cost: one lock and, for the first action of a burst, one block scheduled on the queue.
    /// The store stays alive until its enqueued actions were applied. Memory follows the
    /// backlog: an applied action is not kept.
    ///
    /// - Precondition: this process is not a child made by `fork()` (libdispatch, which runs the
    ///   queue, does not work there).
    ///
    /// `file` and `line` are recorded as where the action was dispatched from (see
    /// ``dispatchAction(_:file:line:)``).
    public func enqueueAction(_ action: some Action, file: StaticString = #fileID, line: UInt = #line) {
        enqueue(erased: action, source: DispatchSite(file, line))
    }

    /// Whether enqueueing and flushing work in this process: not in a child made by `fork()`
    /// (see ``ForkGeneration``).
    @_spi(Bindings) public var canEnqueue: Bool { !ForkGeneration.isForkedChild }

    /// ``enqueueAction(_:file:line:)`` for an action already in an existential box (kept as it
    /// is); a borrowed `source` is kept (``DispatchSite/kept()``), as the action is applied later.
    ///
    /// Package, as ``DispatchSite`` is (see it): bindings enqueue with a lent source.
    package func enqueue(erased action: any Action, source: DispatchSite = .unknown) {
        let queued = QueuedAction(.one(action), source)
        precondition(canEnqueue, "ReduxStore: enqueueAction in a child process made by fork()")
        let schedule = enqueued.state.withLock { backlog -> Bool in
            backlog.actions.append(queued)
            backlog.enqueuedCount += 1
            defer { backlog.draining = true }
            return !backlog.draining
        }
        if schedule {
            // Through the type-erased face: a block that runs elsewhere must not capture the
            // (possibly non-Sendable) `State.Type`.
            let store: any AnyStore = self
            enqueued.queue.async { store.drainEnqueued(upTo: nil) }
        }
    }

    /// Returns once every action enqueued before the call was applied and its synchronous
    /// observers ran.
    ///
    /// Called from an observer of an enqueued action (on the store's queue), it applies the
    /// remaining enqueued actions itself, in order, rather than wait for itself. Called from
    /// inside a reducer it returns at once: no action can be applied until the reducer returns.
    ///
    /// - Precondition: this process is not a child made by `fork()` (libdispatch, which runs the
    ///   queue, does not work there).
    public func flush() {
        if isInsideReducer { return }
        precondition(canEnqueue, "ReduxStore: flush in a child process made by fork()")
        let me = currentThreadID()
        let lock = enqueued.state
        lock.unsafe.lock()
        let target = lock.unsafe.valuePointer.pointee.enqueuedCount
        if lock.unsafe.valuePointer.pointee.drainingThread == me {
            lock.unsafe.unlock()
            drainEnqueued(upTo: target)
            return
        }
        while lock.unsafe.valuePointer.pointee.appliedCount < target { lock.unsafe.wait() }
        lock.unsafe.unlock()
    }

    /// Applies enqueued actions in order until the queue is empty (the scheduled drain, `target`
    /// nil) or until `target` actions were taken off it (a flush from inside the drain).
    ///
    /// An action applied by a drain nested in an observer has its notification delivered only
    /// after the outer action's round; it counts as applied (for `flush` on other threads) once
    /// the outer action's dispatch returned.
    func drainEnqueued(upTo target: UInt64?) {
        let me = currentThreadID()
        let lock = enqueued.state
        let backlog = lock.unsafe.valuePointer
        lock.unsafe.lock()
        backlog.pointee.drainDepth += 1
        while true {
            if let target, backlog.pointee.dequeuedCount >= target { break }
            guard let queued = backlog.pointee.actions.popFirst() else {
                if target == nil {
                    backlog.pointee.draining = false
                    backlog.pointee.drainingThread = 0
                }
                break
            }
            backlog.pointee.dequeuedCount += 1
            backlog.pointee.drainingThread = me
            lock.unsafe.unlock()

            dispatch(queued)

            lock.unsafe.lock()
            if backlog.pointee.drainDepth == 1 {
                backlog.pointee.appliedCount += 1 + backlog.pointee.appliedAwaitingRound
                backlog.pointee.appliedAwaitingRound = 0
                lock.broadcast()
            } else {
                backlog.pointee.appliedAwaitingRound += 1
            }
        }
        backlog.pointee.drainDepth -= 1
        lock.unsafe.unlock()
    }
}
