import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One store holds the whole state of a program. The only way to change it is to dispatch an
/// ``Action``; every action goes through the store's reducers, which mutate the state in place.
///
/// ```swift
/// final class Counter: Codable { var value = 0 }
/// let store = Store(reducers: [{ state, action in
///     if action.identifier == "increment" { state.value += 1 }
/// }], state: Counter())
/// store.dispatchAction(JSONAction(identifier: "increment"))
/// store.currentState().value  // 1
/// ```
///
/// Every method is safe to call from any thread at once. Actions are applied one at a time in one
/// total order; none is lost. Observers hear of each applied action after the store's lock was
/// released (see ``addObserver(forName:queue:using:)``). ``currentState()`` hands out a deep copy
/// that no later action can reach and whose changes never reach the store.
///
/// The store keeps its state behind a pointer it owns, guarded by one mutex; a dispatch copies
/// nothing of the state, so its cost does not depend on the state's size.
public final class Store<State: Codable>: @unchecked Sendable {
    // @unchecked: the state and every mutable field live behind `state` and `core`, which only
    // the thread holding `core`'s lock touches; the rest is atomic or immutable.

    /// The reducers, erased to one function of the state's address that runs them in order.
    /// Nothing on the dispatch path has a type that depends on `State`, so a dispatch looks up no
    /// generic metadata. One closure in a `let`: calling it borrows it (no retain and release of
    /// its context per action, which calling each of a list's closures costs); a single
    /// reducer is called directly.
    let reduce: ErasedReducer
    /// The middleware every action passes before the reducers; `nil` for none, so a store
    /// without middleware pays one test of a field per dispatch.
    let middleware: MiddlewareChain?
    /// `middleware != nil`, for code inlined into other modules (``checkMiddlewareDepth()``).
    @usableFromInline let hasMiddleware: Bool
    /// The state; guarded by `core`'s lock. Kept behind a pointer the store owns: a reducer
    /// mutates it in place through `inout`, with no run-time exclusivity check.
    let state: UnsafeMutablePointer<State>
    /// `state`, as the erased reducers take it.
    let stateAddress: UnsafeMutableRawPointer
    /// Everything else that changes with each action, and the store's one lock: it guards
    /// `state` and the core. Not `Sendable` by itself (``StoreCore`` holds the snapshot encoder
    /// and the recorder, classes for one thread at a time): the store's `@unchecked` above is
    /// what shares it, since only the thread holding this lock touches what it holds.
    let core: Locked<StoreCore>
    /// The thread applying an action right now (holding the lock), or 0: how a dispatch, a read or
    /// an observer change from inside a reducer is recognised, without taking the lock again.
    @usableFromInline let applyingThread = Atomic<UInt>(0)
    /// ``threadContexts``, copied: reading a global initialized on first use costs a check
    /// each time, which a dispatch need not pay.
    let contexts = threadContexts
    /// The version of the last completed action, readable without the lock.
    let publishedVersion = Atomic<UInt64>(0)
    /// Whether `currentState()`, `snapshot()` and `save(to:)` may read the state from inside a
    /// reducer: only for a class state, which the reducers receive as a copy of the reference
    /// (see the designated initializer, `init(erasedReducer:adopting:…)`); a struct state is held
    /// `inout` by the reducer, and reading it meanwhile would be an overlapping access.
    let readableInsideReducer: Bool
    /// Actions given to ``enqueueAction(_:file:line:)`` and not yet applied.
    let enqueued: EnqueuedActions
    /// For stores whose actions may borrow what they hold: makes the copy the journal and the
    /// action log keep past the dispatch. `nil` for stores of Swift values.
    let keeper: ActionKeeper?
    /// Why this store's state may change only through its owner (a replica of a stream, whose
    /// versions the stream decides): ``restore(version:)`` then throws this. `nil` for most
    /// stores.
    let localChangesRefusal: String?
    /// The running autosave, if any (``startAutosave(to:policy:onError:)``).
    let autosaver = Locked<Autosaver?>(nil)

    /// Creates a store with its reducers and initial state (ReduxObjC's `initWithReducers:state:`).
    ///
    /// The store keeps a deep copy of `state` (a snapshot round trip), so a reference the caller
    /// keeps to a class-typed state can never change the store's state behind its lock. If the
    /// state's Codable conformance fails, the store keeps `state` itself.
    ///
    /// - Parameters:
    ///   - reducers: run in this order for every action.
    ///   - state: the initial state; the store's ``version`` starts at 0.
    public convenience init(reducers: [Reducer<State>], state: State) {
        self.init(reducers: reducers, adopting: Self.deepCopy(state), version: 0)
    }

    /// A deep copy of `state` by a snapshot round trip; `state` itself when its Codable
    /// conformance fails.
    ///
    /// Package: replication copies the state it starts from with it.
    package static func deepCopy(_ state: State) -> State {
        let tape = SnapshotTape()
        do {
            try SnapshotEncoder().encode(state, into: tape)
            return try SnapshotDecoder.decode(State.self, from: tape)
        } catch {
            return state
        }
    }

    /// Creates a store that takes `state` as it is (no copy) and starts at `version`: for callers
    /// that made the state themselves (a restored file, a tree deep-copied from its owner).
    ///
    /// Package: a replica starts its store at a snapshot's version with it.
    package convenience init(
        reducers: [Reducer<State>], adopting state: State, version: UInt64, middleware: [Middleware<State>] = [],
        refusingLocalChanges refusal: String? = nil
    ) {
        // One closure made here from the user's array (``composed(_:_:)``), each reducer erased
        // once (``erased(_:)``, which gives a class state's reducers their own copy of the
        // reference): nothing is read from the array at dispatch.
        let reduce = composed(reducers[...]) { erased($0) }
        self.init(
            erasedReducer: reduce, adopting: state, version: version, middleware: middleware,
            refusingLocalChanges: refusal)
    }

    /// Creates a store from one function that applies an action to the state's address, whatever
    /// it runs: the reducers of an array, the routed reducers' lookup, or reducers that work on a
    /// json-c tree itself rather than the Swift state. Not read from an array,
    /// so it is called with no reabstraction thunk.
    ///
    /// - Parameters:
    ///   - readableInsideReducer: whether the reducers leave `state` free for reads while they
    ///     run (true when they never form an `inout` access to it, as a tree's reducers; by
    ///     default true for a class state only).
    ///   - middleware: called in this order for every action.
    ///   - keeper: makes a borrowed action owned where it is kept past its dispatch.
    ///   - refusal: why the state may change only through the store's owner (a replica's stream,
    ///     a store forwarding to another library): ``restore(version:)`` throws it.
    @_spi(Bindings) public init(
        erasedReducer reduce: @escaping (UnsafeMutableRawPointer, any Action) -> Void, adopting state: State, version: UInt64,
        readableInsideReducer: Bool = State.self is AnyObject.Type,
        middleware: [Middleware<State>] = [], keeper: ActionKeeper? = nil, refusingLocalChanges refusal: String? = nil
    ) {
        ActionContainer.checkLayout()
        self.keeper = keeper
        let middleware = MiddlewareChain.make(middleware)
        self.middleware = middleware
        hasMiddleware = middleware != nil
        localChangesRefusal = refusal
        self.reduce = reduce
        self.state = .allocate(capacity: 1)
        self.state.initialize(to: state)
        stateAddress = UnsafeMutableRawPointer(self.state)
        core = Locked(StoreCore(version: version))
        publishedVersion.store(version, ordering: .relaxed)
        self.readableInsideReducer = readableInsideReducer
        enqueued = EnqueuedActions()
    }

    /// Creates a store with one reducer.
    public convenience init(state: State, reducer: @escaping Reducer<State>) {
        self.init(reducers: [reducer], state: state)
    }

    deinit {
        finishAutosaveAtDeinit()
        // Under the lock: a `changes()` sequence and the journal read the log through it,
        // holding the lock, not the store. Each is handed what it has not read.
        let journal = core.withLock { core in
            core.actionLog.endReaders()
            core.actionLog.deallocate()
            let journal = core.journal
            core.journal = nil
            return journal
        }
        // The journal writes what it was handed, and stops.
        journal?.stop()
        state.deinitialize(count: 1)
        state.deallocate()
        // What the core holds goes with the store, though a sequence may hold the lock longer:
        // each observer is released once no delivery holds it (its release handler runs, so an
        // async sequence of notifications ends), the recorder, the queue, the snapshot. Taken
        // out under the lock, released after it: no release handler runs under it.
        var observers = ObserverList.empty
        var recorder: Recorder?
        var nested = FIFO<QueuedAction>()
        var tape: SnapshotTape?
        core.withLock { core in
            swap(&observers, &core.observers)
            swap(&recorder, &core.recorder)
            swap(&nested, &core.nested)
            swap(&tape, &core.tape)
        }
        withExtendedLifetime((observers, recorder, nested, tape)) {}
    }

    /// The number of actions applied so far: 0 for a new store, +1 for each applied action.
    ///
    /// O(1), lock-free. Inside a reducer it is still the version of the last completed action.
    public var version: UInt64 { publishedVersion.load(ordering: .acquiring) }

    /// Whether the calling thread is running one of this store's reducers right now (it holds the
    /// lock; ``beginTransaction(on:context:)`` marks it): a dispatch from there is queued, not
    /// applied, so a caller that lends what its action holds copies it first then.
    @inlinable @inline(__always)
    @_spi(Bindings) public var isInsideReducer: Bool {
        isInsideReducer(on: currentThreadID())
    }

    /// ``isInsideReducer`` for thread `me` (``currentThreadID()``), which the dispatch functions
    /// read once and use again: the one test of it.
    @inlinable @inline(__always)
    func isInsideReducer(on me: UInt) -> Bool {
        applyingThread.load(ordering: .relaxed) == me
    }
}

/// A reducer erased to a function of the state's address (the store's `state` pointer). Not
/// `@Sendable` itself: the store keeps them immutable and calls them under its lock only.
typealias ErasedReducer = (UnsafeMutableRawPointer, any Action) -> Void

/// Everything of a store that changes with each action, but the state itself: kept together
/// behind the store's lock. Not generic, so reaching a field costs no metadata.
struct StoreCore {
    var version: UInt64 = 0
    /// Actions dispatched from inside a reducer, applied after the current one (``FIFO``).
    var nested = FIFO<QueuedAction>()
    /// Registered observers in the order they were added. Immutable: a change makes a new list,
    /// so a delivery walks the list it took (and retained) under the lock.
    var observers: ObserverList = .empty
    /// The claim on the action log through which the observers that asked for patches read
    /// them, while one is registered.
    var observersClaim: UInt64?
    /// The snapshot of `tapeVersion`, kept until the version changes.
    var tape: SnapshotTape?
    var tapeVersion: UInt64 = .max
    let encoder = SnapshotEncoder()
    /// What the change feed makes of each applied action besides its record: snapshots for the
    /// history (``Store/keepHistory(_:)``), patches, listeners' calls; `nil` for most stores, so a
    /// dispatch tests one field.
    var recorder: Recorder?
    /// The one record of each applied action, while a consumer holds a claim on it (the journal,
    /// `changes()` sequences, the live inspectors, the change listeners, the observers of
    /// patches); off for most stores, so a dispatch tests one field.
    var actionLog = ActionLog()
    /// The running journal (``Store/startJournal(at:options:)``), which reads the action log
    /// through its claim.
    var journal: Journal?
    /// Whether the apply transaction is handing its action, counted already, to the change
    /// feed's consumers (the change listeners run then), rather than running reducers.
    var recording = false

    /// Drops the change feed's recorder when nothing is wanted of it any more: no history, no
    /// listener, no claim on the action log that asks for patches.
    mutating func dropRecorderIfIdle() {
        guard let recorder, recorder.history == nil, recorder.listeners.isEmpty, !actionLog.wantsPatches else { return }
        self.recorder = nil
    }

    /// The first version a consumer added now hears (an observer, a listener, a change
    /// sequence): the next action's. Inside a reducer the action in progress, not yet counted,
    /// is `version + 1`, so the next is `version + 2`; inside a listener that action is counted.
    func firstVersion(insideReducer: Bool) -> UInt64 {
        version &+ (insideReducer && !recording ? 2 : 1)
    }

    init(version: UInt64) {
        self.version = version
    }
}

@inlinable @inline(__always)
func currentThreadID() -> UInt {
    UInt(pthread_self())
}
