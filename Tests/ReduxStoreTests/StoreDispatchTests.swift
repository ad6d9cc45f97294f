import ReduxStore
import ReduxStoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Dispatch: reducers in place, total order, nested dispatch")
struct StoreDispatchTests {
    @Test("a new store has version 0 and the initial state")
    func newStore() {
        let store = Store(reducers: [counterReducer], state: CounterState(count: 5))
        #expect(store.version == 0)
        #expect(store.currentState().count == 5)
    }

    @Test("each dispatched action runs the reducers and adds one to the version")
    func dispatchCounts() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.add(10))
        store.dispatchAction(CounterAction.increment)
        #expect(store.currentState().count == 12)
        #expect(store.version == 3)
    }

    @Test("a struct state is mutated in place as well")
    func structState() {
        let store = Store(reducers: [counterValueReducer], state: CounterValue())
        for _ in 0..<100 { store.dispatchAction(CounterAction.increment) }
        #expect(store.currentState() == CounterValue(count: 100))
        #expect(store.version == 100)
    }

    @Test("a class state: each reducer gets the object the one before left, a new one included")
    func classStateAcrossReducers() {
        final class Tally: Codable, @unchecked Sendable {
            var steps: [String] = []
            var generation = 0
        }
        let replace: Reducer<Tally> = { state, _ in
            let next = Tally()
            next.steps = state.steps + ["replaced"]
            next.generation = state.generation + 1
            state = next
        }
        let mark: Reducer<Tally> = { state, action in state.steps.append("marked \(action.identifier)") }
        let zero: Reducer<Tally> = { state, _ in state.steps.append("zero") }
        for reducers in [[replace, mark], [mark, replace, zero], [replace]] {
            let store = Store(reducers: reducers, state: Tally())
            store.dispatchAction(CounterAction.increment)
            store.dispatchAction(CounterAction.increment)
            let state = store.currentState()
            #expect(state.generation == 2)
            var expected: [String] = []
            for _ in 0..<2 {
                for reducer in reducers.indices {
                    switch (reducers.count, reducer) {
                    case (2, 0), (1, 0), (3, 1): expected.append("replaced")
                    case (3, 2): expected.append("zero")
                    default: expected.append("marked counter.increment")
                    }
                }
            }
            #expect(state.steps == expected, "\(reducers.count) reducers")
        }
    }

    @Test("reducers run in the order given, every one for every action")
    func reducerOrder() {
        let first: Reducer<CounterState> = { state, action in state.log.append("first \(action.identifier)") }
        let second: Reducer<CounterState> = { state, action in state.log.append("second \(action.identifier)") }
        let store = Store(reducers: [first, second], state: CounterState())
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(JSONAction(identifier: "other"))
        #expect(store.currentState().log == [
            "first counter.increment", "second counter.increment", "first other", "second other",
        ])
    }

    @Test("the store keeps a copy of the initial state: the caller's reference cannot change it")
    func initialStateIsCopied() {
        let initial = CounterState(count: 1)
        let store = Store(reducers: [counterReducer], state: initial)
        initial.count = 99
        store.dispatchAction(CounterAction.increment)
        #expect(store.currentState().count == 2)
        #expect(initial.count == 99)
    }

    @Test("reducers see the state as mutated so far: the same instance across actions")
    func stateHeldByReference() {
        let seen = Recorder<ObjectIdentifier>()
        let store = Store(reducers: [{ state, _ in seen.append(ObjectIdentifier(state)) }],
                          state: CounterState())
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.increment)
        let ids = seen.all
        #expect(ids.count == 2)
        #expect(ids.first == ids.last)
    }

    @Test("8 threads dispatching at once: none lost, every action counted once")
    func eightThreads() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        onThreads(8) { _ in
            for _ in 0..<5_000 { store.dispatchAction(CounterAction.increment) }
        }
        #expect(store.currentState().count == 40_000)
        #expect(store.version == 40_000)
    }

    @Test("an action dispatched inside a reducer is applied right after the current one, FIFO")
    func nestedDispatch() {
        final class Box: @unchecked Sendable { var store: Store<CounterState>? }
        let box = Box()
        let reducer: Reducer<CounterState> = { state, action in
            guard case .note(let text)? = action as? CounterAction else { return }
            state.log.append("begin \(text)")
            if text == "parent" {
                box.store?.dispatchAction(CounterAction.note("child 1"))
                box.store?.dispatchAction(CounterAction.note("child 2"))
            }
            state.log.append("end \(text)")
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        store.dispatchAction(CounterAction.note("parent"))
        #expect(store.currentState().log == [
            "begin parent", "end parent", "begin child 1", "end child 1", "begin child 2", "end child 2",
        ])
        #expect(store.version == 3)
        box.store = nil
    }

    @Test("an action enqueued inside a reducer goes to the store's queue: applied after the current one, on the queue")
    func enqueueInsideReducer() {
        final class Box: @unchecked Sendable { var store: Store<CounterState>? }
        let box = Box()
        let reducer: Reducer<CounterState> = { state, action in
            guard case .note(let text)? = action as? CounterAction else { return }
            state.log.append(text)
            if text == "parent" {
                box.store?.enqueueAction(CounterAction.note("enqueued"))
                box.store?.flush()  // inside a reducer: returns at once
                state.log.append("after flush")
            }
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        let threads = Recorder<(version: UInt64, onCaller: Bool)>()
        let caller = pthread_self()
        _ = store.addObserver { note in
            threads.append((note.version, pthread_equal(pthread_self(), caller) != 0))
        }
        store.dispatchAction(CounterAction.note("parent"))
        store.flush()
        #expect(store.currentState().log == ["parent", "after flush", "enqueued"])
        #expect(store.version == 2)
        // Two threads deliver: the queue's round may reach the observer before the caller's.
        let heard = threads.all.sorted { $0.version < $1.version }
        #expect(heard.map(\.version) == [1, 2])
        #expect(heard.map(\.onCaller) == [true, false], "the enqueued action's observer runs on the queue")
        box.store = nil
    }

    @Test("inside a reducer, currentState() shows the action so far and version the last completed")
    func readsInsideReducer() {
        final class Box: @unchecked Sendable { var store: Store<CounterState>? }
        let box = Box()
        let reads = Recorder<String>()
        let reducer: Reducer<CounterState> = { state, action in
            guard case .increment? = action as? CounterAction, let store = box.store else { return }
            state.count += 1
            reads.append("count \(store.currentState().count) version \(store.version)")
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.increment)
        #expect(reads.all == ["count 1 version 0", "count 2 version 1"])
        box.store = nil
    }

    @Test("a JSONAction fits an existential's inline buffer: dispatching one without a payload allocates nothing")
    func jsonActionSize() {
        #expect(MemoryLayout<JSONAction>.size <= 3 * MemoryLayout<Int>.size)
        #expect(JSONAction(identifier: "a", payload: [1, "b"]).payload == [1, "b"])
        #expect(JSONAction(identifier: "a").payload == nil)
        #expect(JSONAction(identifier: "a", payload: [1]) == JSONAction(identifier: "a", payload: [1]))
        #expect(JSONAction(identifier: "a", payload: [1]) != JSONAction(identifier: "a", payload: [2]))
    }

    @Test("a JSONAction's payload decodes into a typed value, errors name the path")
    func jsonActionPayload() throws {
        struct Add: Decodable, Equatable { var amount: Int; var tags: [String] }
        let action = JSONAction(identifier: "add", payload: ["amount": 3, "tags": ["a", "b"]])
        #expect(try action.decodePayload(as: Add.self) == Add(amount: 3, tags: ["a", "b"]))

        let bad = JSONAction(identifier: "add", payload: ["amount": 3, "tags": ["a", 7]])
        let error = #expect(throws: StoreError.self) { try bad.decodePayload(as: Add.self) }
        #expect(error?.kind == .decode)
        #expect(error?.message == "payload.tags[1]: expected String, found number")
    }
}
