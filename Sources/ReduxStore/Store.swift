import Dispatch
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
    // the thread holding `mutex` touches (or the thread applying an action, which holds it); the
    // rest is atomic or immutable.

    /// The reducers, each erased to a function of the state's address. Nothing on the dispatch
    /// path has a type that depends on `State`, so a dispatch looks up no generic metadata; and
    /// a buffer the store owns, not an array, so walking it costs no retain and release.
    let reducers: UnsafeMutableBufferPointer<ErasedReducer>
    /// Guards `state` and `core`.
    let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The state; guarded by `mutex`.
    let state: UnsafeMutablePointer<State>
    /// `state`, as the erased reducers take it.
    let stateAddress: UnsafeMutableRawPointer
    /// Everything else that changes with each action; guarded by `mutex`.
    let core: UnsafeMutablePointer<StoreCore>
    /// The thread applying an action right now (holding `mutex`), or 0: how a dispatch, a read or
    /// an observer change from inside a reducer is recognised, without taking the lock again.
    let applyingThread = Atomic<UInt>(0)
    /// The version of the last completed action, readable without the lock.
    let publishedVersion = Atomic<UInt64>(0)
    /// Actions given to ``enqueueAction(_:)`` and not yet applied.
    let enqueued: EnqueuedActions
    /// The thread delivering notifications on the fast path, or 0 (see ``DeliveryState``). Set
    /// only under the lock (by a dispatch that found it 0); cleared by its owner.
    let deliveryOwner = Atomic<UInt>(0)
    /// The synchronous observer the fast path's owner is calling right now (its object
    /// identifier's bits), or 0: what a remover on another thread waits for.
    let callingEntry = Atomic<UInt>(0)
    /// Deliveries of this store in progress on the slow path, on all threads.
    let slowDeliveries = Atomic<Int>(0)
    /// What only the fast path's owner touches: its pending rounds and the observer it calls.
    let delivery: UnsafeMutablePointer<DeliveryState>
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
        let encoder = SnapshotEncoder()
        let tape = SnapshotTape()
        let initial: State
        do {
            try encoder.encode(state, into: tape)
            initial = try SnapshotDecoder.decode(State.self, from: tape)
        } catch {
            initial = state
        }
        self.init(reducers: reducers, adopting: initial, version: 0, encoder: encoder)
    }

    /// Creates a store that takes `state` as it is (no copy) and starts at `version`: for callers
    /// that made the state themselves (a restored file, a C program's deep-copied tree).
    package convenience init(
        reducers: [Reducer<State>], adopting state: State, version: UInt64,
        encoder: SnapshotEncoder = SnapshotEncoder()
    ) {
        self.init(
            erasedReducers: reducers.map { reducer in
                { address, action in
                    reducer(&address.assumingMemoryBound(to: State.self).pointee, action)
                }
            },
            adopting: state, version: version, encoder: encoder)
    }

    /// Creates a store whose reducers take the state's address, for callers that need not reach
    /// the state through its Swift type (the C face's reducers work on the json-c tree itself).
    package init(
        erasedReducers reducers: [ErasedReducer], adopting state: State, version: UInt64,
        encoder: SnapshotEncoder = SnapshotEncoder()
    ) {
        self.reducers = .allocate(capacity: reducers.count)
        _ = self.reducers.initialize(from: reducers)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.state = .allocate(capacity: 1)
        self.state.initialize(to: state)
        stateAddress = UnsafeMutableRawPointer(self.state)
        core = .allocate(capacity: 1)
        core.initialize(to: StoreCore(version: version, encoder: encoder))
        delivery = .allocate(capacity: 1)
        delivery.initialize(to: DeliveryState())
        publishedVersion.store(version, ordering: .relaxed)
        enqueued = EnqueuedActions()
    }

    /// Creates a store with one reducer.
    public convenience init(state: State, reducer: @escaping Reducer<State>) {
        self.init(reducers: [reducer], state: state)
    }

    deinit {
        finishAutosaveAtDeinit()
        core.pointee.releaseRetiredObservers()
        core.pointee.observers.release()
        delivery.deinitialize(count: 1)
        delivery.deallocate()
        core.deinitialize(count: 1)
        core.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        reducers.deinitialize()
        reducers.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// The number of actions applied so far: 0 for a new store, +1 for each applied action.
    ///
    /// O(1), lock-free. Inside a reducer it is still the version of the last completed action.
    public var version: UInt64 { publishedVersion.load(ordering: .acquiring) }

    /// Whether the calling thread is running one of this store's reducers right now.
    @inline(__always)
    package var isInsideReducer: Bool {
        applyingThread.load(ordering: .relaxed) == currentThreadID()
    }
}

/// A reducer erased to a function of the state's address (the store's `state` pointer). Not
/// `@Sendable` itself: the store keeps them immutable and calls them under its lock only.
package typealias ErasedReducer = (UnsafeMutableRawPointer, any Action) -> Void

/// Everything of a store that changes with each action, but the state itself: kept together
/// behind one pointer and the store's lock. Not generic, so reaching a field costs no metadata.
struct StoreCore {
    var version: UInt64 = 0
    /// Actions dispatched from inside a reducer, applied after the current one (FIFO).
    var nested: [any Action] = []
    var nestedHead = 0
    /// Registered observers in the order they were added, retained once through this field. A
    /// delivery on the fast path walks the list it read under the lock without retaining it.
    var observers: Unmanaged<ObserverList> = .passRetained(ObserverList.empty)
    var observerCount = 0
    /// Lists replaced while the fast path's owner may still be walking them: released once the
    /// fast path is seen free under the lock (a new owner reads the current list only).
    var retiredObservers: [Unmanaged<ObserverList>] = []
    /// The snapshot of `tapeVersion`, kept until the version changes.
    var tape: SnapshotTape?
    var tapeVersion: UInt64 = .max
    let encoder: SnapshotEncoder

    /// Replaces the observer list, keeping the old one until no fast delivery can be walking it.
    mutating func replaceObservers(with entries: [ObserverEntry]) {
        retiredObservers.append(observers)
        observers = .passRetained(ObserverList(entries))
        observerCount = entries.count
    }

    /// Releases the retired lists; the caller holds the lock and saw no fast-path owner.
    mutating func releaseRetiredObservers() {
        for list in retiredObservers { list.release() }
        retiredObservers.removeAll()
    }

    init(version: UInt64, encoder: SnapshotEncoder) {
        self.version = version
        self.encoder = encoder
    }
}

@inline(__always)
func currentThreadID() -> UInt {
    UInt(pthread_self())
}
