#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What one thread is doing with stores right now, kept per thread (a pthread key), because two
/// rules depend on the thread and need no lock that way:
/// - an action dispatched from inside an observer is notified after the current round: the
///   thread's delivery frame for that store collects it (``frames``);
/// - a removal made from inside any store's reducer or observer does not wait for calls running
///   on other threads, since one of them may be waiting for this thread (``callbackDepth``).
struct ThreadContext {
    /// Calls into user code of any store running on this thread: reducers, observers, and
    /// autosave error handlers. A removal waits for another thread's call only when this is 0.
    var callbackDepth = 0
    /// Dispatches running through a middleware chain on this thread, of any store, one inside
    /// another: at most ``StoreLimits/maximumMiddlewareDepth``.
    var middlewareDepth = 0
    /// The innermost delivery in progress on this thread; each frame links to the one it is
    /// nested in. Frames live on the stack of ``Store/deliver(_:context:)``, which links its
    /// frame here for exactly the time it runs and unlinks it before returning, so every pointer
    /// in the chain is valid while it is linked.
    var innermost: UnsafeMutablePointer<DeliveryFrame>?

    /// The innermost pass of actions through a store's middleware on this thread; each links to
    /// the one it is nested in. Passes live on the stack of the store's `throughMiddleware`,
    /// linked for exactly the time it runs, as frames are.
    var innermostPass: UnsafeMutablePointer<MiddlewarePass>?

    /// What the store transactions open on this thread left to do once they released their lock,
    /// beyond delivering their first round: the wait a full journal is owed, a restore's second
    /// notification, the rounds of the actions the reducers dispatched, or those actions
    /// themselves in a store with middleware. One stack for all: each transaction
    /// owns what lies past the mark it took when it began (a reducer may run another store's
    /// transaction inside it), and takes it once it released its lock. Kept here, not in the
    /// transaction, so that a transaction without them releases nothing and tests one count
    /// (Benchmarks/README.md, "Dispatch against the plain store").
    var pending: [PendingWork] = []

    /// The pending work from `mark` on, taken out: the rounds and the actions, each in order.
    mutating func takePending(from mark: Int)
        -> (journalWait: JournalWait?, rounds: [NotificationRound]?, actions: [QueuedAction]?)
    {
        var journalWait: JournalWait?
        var rounds: [NotificationRound]?
        var actions: [QueuedAction]?
        for work in pending[mark...] {
            switch work {
            case .journalWait(let wait): journalWait = wait
            case .round(let round):
                if rounds == nil { rounds = [] }
                rounds!.append(round)
            case .action(let action):
                if actions == nil { actions = [] }
                actions!.append(action)
            }
        }
        pending.removeSubrange(mark...)
        return (journalWait, rounds, actions)
    }

    /// The innermost pass of `store` through its middleware on this thread, if any.
    func pass(of store: ObjectIdentifier) -> UnsafeMutablePointer<MiddlewarePass>? {
        var pass = innermostPass
        while let current = pass {
            if current.pointee.store == store { return current }
            pass = current.pointee.outer
        }
        return nil
    }

    /// The frame delivering `store`'s notifications, if this thread is inside such a delivery.
    func frame(for store: ObjectIdentifier) -> UnsafeMutablePointer<DeliveryFrame>? {
        var frame = innermost
        while let current = frame {
            if current.pointee.store == store { return current }
            frame = current.pointee.outer
        }
        return nil
    }

    /// This thread's context, created on first use and freed when the thread exits. The pointer
    /// stays valid for the life of the thread.
    static var current: UnsafeMutablePointer<ThreadContext> { current(threadContexts) }

    /// ``current``, given the storage: a caller that keeps a copy of ``threadContexts`` (a store
    /// does) skips the check that the global was initialized, on every dispatch.
    @inline(__always)
    static func current(_ storage: ThreadStorage<ThreadContext>) -> UnsafeMutablePointer<ThreadContext> {
        guard let context = storage.value(orMake: { ThreadContext() }) else {
            preconditionFailure("ReduxStore: out of memory for this thread's context")
        }
        return context
    }

    /// Whether this thread is inside a reducer, observer or autosave error handler of any store.
    static var isInsideCallback: Bool { current.pointee.callbackDepth > 0 }

    /// Runs `body` (user code) counted as a callback on this thread.
    static func asCallback<T>(_ body: () throws -> T) rethrows -> T {
        let context = current
        context.pointee.callbackDepth += 1
        defer { context.pointee.callbackDepth -= 1 }
        return try body()
    }
}

/// What a store transaction leaves to do once it released its lock (``ThreadContext/pending``).
enum PendingWork {
    /// A round to deliver, after the transaction's first.
    case round(NotificationRound)
    /// An action to pass through the store's middleware.
    case action(QueuedAction)
    /// A full journal to wait for, before anything else (``JournalOptions/Overflow/block``).
    case journalWait(JournalWait)
}

/// One store's notification delivery in progress on a thread.
///
/// Nothing in it to release: the rounds queued behind the current one live in a queue made when
/// the first is queued (most deliveries queue none), which the delivering function frees when it
/// is done (``Store/deliver(_:then:context:)``). A frame holding the queue itself cost a release
/// call on every delivery, of a queue that was almost always empty.
struct DeliveryFrame {
    let store: ObjectIdentifier
    /// Rounds queued by actions dispatched from inside the observers, delivered in order after the
    /// current round (``FIFO``); `nil` until the first is queued.
    private(set) var pending: UnsafeMutablePointer<FIFO<NotificationRound>>?
    /// The frame this one is nested in.
    let outer: UnsafeMutablePointer<DeliveryFrame>?

    init(store: ObjectIdentifier, outer: UnsafeMutablePointer<DeliveryFrame>?) {
        self.store = store
        self.outer = outer
    }

    /// Queues `rounds` behind the current one.
    mutating func queue(_ rounds: some Sequence<NotificationRound>) {
        if pending == nil {
            pending = .allocate(capacity: 1)
            pending!.initialize(to: FIFO())
        }
        pending!.pointee.append(contentsOf: rounds)
    }

    /// The next queued round, if any.
    @inline(__always)
    mutating func next() -> NotificationRound? {
        pending?.pointee.popFirst()
    }

    /// Frees the queue; the frame's delivery is over.
    @inline(__always)
    mutating func end() {
        guard let queue = pending else { return }
        queue.deinitialize(count: 1)
        queue.deallocate()
        pending = nil
    }
}

/// One notification and the observers that were registered when its action was applied. The
/// round holds a strong reference to the list for as long as it is being delivered.
struct NotificationRound {
    let notification: StoreNotification
    let observers: ObserverList
    /// Whether the value of any selecting observer of the list changed with this round's action
    /// (selecting observers are called only then).
    let selectionsChanged: Bool
}

/// Each thread's ``ThreadContext``, freed when the thread exits.
let threadContexts = ThreadStorage<ThreadContext> { ThreadStorage<ThreadContext>.free($0) }
