import ReduxStore
import ReduxStoreTestSupport
import Testing


@Suite("Batches: dispatchActions applies a list as one")
struct BatchTests {
    @Test("a batch grows the version by its length and posts one notification with the last version")
    func oneNotification() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let seen = Recorder<StoreNotification>()
        store.addObserver { seen.append($0) }
        store.dispatchActions([CounterAction.increment, CounterAction.add(5), CounterAction.note("x")])
        #expect(store.version == 3)
        #expect(store.currentState().count == 6)
        #expect(seen.all.map(\.version) == [3])
        #expect(seen.all.first?.actionIdentifier == "counter.note")
    }

    @Test("an empty batch does nothing")
    func empty() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let seen = Tally()
        store.addObserver { _ in seen.increment() }
        store.dispatchActions([])
        #expect(store.version == 0)
        #expect(seen.count == 0)
    }

    @Test("no reader on another thread ever sees the middle of a batch")
    func atomic() {
        // Each batch adds 1 and then 2: the count is always a multiple of 3 between batches,
        // and the version always even.
        let store = Store(reducers: [counterReducer], state: CounterState())
        let torn = Tally()
        let done = Flag()
        onThreads(3) { index in
            if index == 0 {
                for _ in 0..<3_000 {
                    store.dispatchActions([CounterAction.add(1), CounterAction.add(2)])
                }
                done.raise()
            } else {
                while !done.isRaised {
                    if store.currentState().count % 3 != 0 { torn.increment() }
                    if store.version % 2 != 0 { torn.increment() }
                }
            }
        }
        #expect(torn.count == 0)
        #expect(store.currentState().count == 9_000)
        #expect(store.version == 6_000)
    }

    @Test("observers never see the middle of a batch, and their versions only grow, from 4 threads")
    func observersOnThreads() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let odd = Tally()
        store.addObserver { note in
            if note.version % 2 != 0 { odd.increment() }
        }
        onThreads(4) { _ in
            for _ in 0..<1_000 {
                store.dispatchActions([CounterAction.increment, CounterAction.increment])
            }
        }
        #expect(odd.count == 0)
        #expect(store.version == 8_000)
    }

    @Test("actions reducers dispatch during a batch are applied after it, each notified")
    func nestedAfterBatch() {
        let box = WeakStore<CounterState>()
        let reducer: Reducer<CounterState> = { state, action in
            if case .note("spawn")? = action as? CounterAction {
                box.store?.dispatchAction(CounterAction.add(100))
            }
            state.log.append("\(action.identifier) at \(state.count)")
            counterReducer(&state, action)
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        let versions = Recorder<UInt64>()
        store.addObserver { versions.append($0.version) }
        store.dispatchActions([CounterAction.note("spawn"), CounterAction.increment])
        #expect(store.currentState().log == [
            "counter.note at 0", "spawn", "counter.increment at 0", "counter.add at 1",
        ])
        #expect(versions.all == [2, 3])
    }

    @Test("a batch dispatched from inside a reducer is applied whole right after the current action")
    func batchInsideReducer() {
        let box = WeakStore<CounterState>()
        let reducer: Reducer<CounterState> = { state, action in
            if case .note("spawn")? = action as? CounterAction {
                box.store?.dispatchActions([CounterAction.add(1), CounterAction.add(2)])
            }
            counterReducer(&state, action)
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        let versions = Recorder<UInt64>()
        store.addObserver { versions.append($0.version) }
        store.dispatchAction(CounterAction.note("spawn"))
        #expect(store.currentState().count == 3)
        #expect(versions.all == [1, 3])
    }

    @Test("with middleware each action of a batch passes the chain; what passes is applied as one")
    func throughMiddleware() {
        let dropNotes: Middleware<CounterState> = { _, action, next in
            if case .note? = action as? CounterAction { return }
            next(action)
        }
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [dropNotes])
        let versions = Recorder<UInt64>()
        store.addObserver { versions.append($0.version) }
        store.dispatchActions([CounterAction.increment, CounterAction.note("x"), CounterAction.add(4)])
        #expect(store.version == 2)
        #expect(store.currentState().count == 5)
        #expect(versions.all == [2])
        store.dispatchActions([CounterAction.note("only")])
        #expect(store.version == 2)
        #expect(versions.all == [2])
    }
}
