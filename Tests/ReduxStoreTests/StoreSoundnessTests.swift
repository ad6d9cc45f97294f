import Dispatch
@_spi(Bindings) @testable import ReduxStore
import ReduxStoreTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The rules of the sound core (the DocC article "The store's contract"), as a Swift program
/// meets them: reads inside reducers, removals that cannot deadlock, release handlers, and
/// sequences that end with their store.
@Suite("Soundness: reads inside reducers, removals, release, endings")
struct StoreSoundnessTests {
    @Test("the tests run with the internal checks of the unsafe structures compiled in")
    func internalChecksAreOn() {
        #expect(internalChecksEnabled)
    }

    @Test("inside a reducer of a struct state, snapshot() is refused with words, and nothing changes")
    func structReadInsideReducerIsRefused() {
        final class Box: @unchecked Sendable {
            var store: Store<CounterValue>?
            var error: StoreError?
        }
        let box = Box()
        let reducer: Reducer<CounterValue> = { state, action in
            guard case .increment? = action as? CounterAction, let store = box.store else { return }
            state.count += 1
            do {
                _ = try store.snapshot()
            } catch {
                box.error = error as? StoreError
            }
        }
        let store = Store(reducers: [reducer], state: CounterValue())
        box.store = store
        store.dispatchAction(CounterAction.increment)
        #expect(box.error?.kind == .invalidArgument)
        #expect(box.error?.message == "currentState() inside a reducer of a store whose state is a struct: the reducer holds the state inout, so read the reducer's state parameter instead")
        #expect(store.currentState() == CounterValue(count: 1))
        #expect(store.version == 1)
        box.store = nil
    }

    @Test("inside a reducer of a class state, a save writes the state so far")
    func classSaveInsideReducer() throws {
        let path = temporaryFolder() + "/inside.json"
        final class Box: @unchecked Sendable { var store: Store<CounterState>? }
        let box = Box()
        let saved = Recorder<String>()
        let reducer: Reducer<CounterState> = { state, action in
            guard case .increment? = action as? CounterAction, let store = box.store else { return }
            state.count += 10
            do {
                try store.save(to: path)
                saved.append("ok")
            } catch {
                saved.append("\(error)")
            }
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        store.dispatchAction(CounterAction.increment)
        #expect(saved.all == ["ok"])
        let reopened = try Store<CounterState>(contentsOf: path, reducers: [])
        #expect(reopened.currentState().count == 10)
        #expect(reopened.version == 0)  // the version of the last completed action
        box.store = nil
    }

    @Test("a class-state reducer that assigns a new object replaces the stored one")
    func classReducerAssigns() {
        let reducer: Reducer<CounterState> = { state, _ in state = CounterState(count: state.count + 5) }
        let store = Store(reducers: [reducer, counterReducer], state: CounterState())
        store.dispatchAction(CounterAction.increment)
        #expect(store.currentState().count == 6)
    }

    @Test("two observers removing each other on two threads: both removals return")
    func observersRemoveEachOther() {
        for _ in 0..<20 {
            let store = Store(reducers: [counterReducer], state: CounterState())
            let box = StoreBox()
            box.store = store
            let removed = Tally()
            // Thread i runs observer i only, so each thread is inside its own observer when both
            // remove the other's.
            let threads = Locked<[pthread_t?]>([nil, nil])
            let bothInside = Tally()
            func observer(_ me: Int) -> @Sendable (StoreNotification) -> Void {
                { _ in
                    guard let mine = threads.withLock({ $0[me] }), pthread_equal(mine, pthread_self()) != 0
                    else { return }
                    bothInside.increment()
                    while bothInside.count < 2 { sleepBriefly() }
                    if box.store?.removeObserver(box.tokens["\(1 - me)"]!) == true {
                        removed.increment()
                    }
                }
            }
            box.tokens["0"] = store.addObserver(using: observer(0))
            box.tokens["1"] = store.addObserver(using: observer(1))
            onThreads(2) { index in
                threads.withLock { $0[index] = pthread_self() }
                while threads.withLock({ $0.contains { $0 == nil } }) {}
                store.dispatchAction(CounterAction.increment)
            }
            #expect(removed.count == 2)
            #expect(store.observerCount == 0)
            box.store = nil
        }
    }

    @Test("the release handler runs once, after the removal and the end of the running call")
    func releaseHandler() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let released = Tally()
        let inside = Flag()
        let leave = Flag()
        let token = store.addObserver(named: nil, queue: nil, onRelease: { released.increment() }) { _ in
            inside.raise()
            _ = leave.wait()
        }
        let dispatched = Flag()
        onThreadInBackground {
            store.dispatchAction(CounterAction.increment)
            dispatched.raise()
        }
        _ = inside.wait()
        // From a callback of another store, removal does not wait for the running call.
        let other = Store(reducers: [counterReducer], state: CounterState())
        other.addObserver { _ in #expect(store.removeObserver(token)) }
        other.dispatchAction(CounterAction.increment)
        #expect(released.count == 0)
        leave.raise()
        #expect(dispatched.wait())
        #expect(released.count == 1)
        #expect(!store.removeObserver(token))
        #expect(released.count == 1)
    }

    @Test("a store that goes away releases its observers: notifications() ends")
    func notificationsEndWithTheStore() async {
        var store: Store<CounterState>? = Store(reducers: [counterReducer], state: CounterState())
        let stream = store!.notifications(bufferingPolicy: .unbounded)
        store!.dispatchAction(CounterAction.increment)
        store = nil
        var versions: [UInt64] = []
        for await note in stream { versions.append(note.version) }
        #expect(versions == [1])
    }

    @Test("a queue that never runs empty keeps only its backlog, not the applied actions")
    func endlessQueue() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let remaining = Locked(2_000)
        let mostAlive = Locked(0)
        // Weak: the store holds its observers, so a strong capture would be a cycle (a leak that
        // LeakSanitizer reports), as with NotificationCenter.
        store.addObserver { [weak store] _ in
            mostAlive.withLock { $0 = max($0, Tracked.alive.load(ordering: .relaxed)) }
            let more = remaining.withLock { count -> Bool in
                count -= 1
                return count > 0
            }
            if more { store?.enqueueAction(Tracked()) }
        }
        store.enqueueAction(Tracked())
        store.enqueueAction(Tracked())
        while remaining.withLock({ $0 }) > 0 { store.flush() }
        store.flush()
        #expect(store.version == 2_001)
        // Two chains: the backlog is a few actions; the history is 2,001.
        #expect(mostAlive.withLock { $0 } <= 4)
        #expect(Tracked.alive.load(ordering: .relaxed) == 0)
    }
}

/// An action that counts how many of it are alive.
struct Tracked: Action {
    static let alive = Atomic<Int>(0)
    final class Life: Sendable {
        init() { Tracked.alive.wrappingAdd(1, ordering: .relaxed) }
        deinit { Tracked.alive.wrappingSubtract(1, ordering: .relaxed) }
    }
    let life = Life()
    var identifier: String { "tracked" }
}

/// Runs `body` on a new thread and returns at once.
func onThreadInBackground(_ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let status = pthread_create(&thread, nil, { raw in
        Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
        return nil
    }, box)
    precondition(status == 0, "pthread_create failed")
    pthread_detach(thread)
}
