import Dispatch
@_spi(Bindings) import ReduxStore
import ReduxStoreTestSupport
import Testing

private struct Quiet: Action {
    let identifier = "quiet"
    var notifiesObservers: Bool { false }
}


@Suite("Fine-grained observation: key paths and actions that do not notify")
struct KeyPathObserverTests {
    @Test("a key-path observer hears only changes of its value, with the new value")
    func onlyChanges() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let counts = Recorder<Int>()
        let logs = Recorder<[String]>()
        store.observe(\.count) { counts.append($0) }
        store.observe(\.log) { logs.append($0) }
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.note("a"))
        store.dispatchAction(CounterAction.add(0))
        store.dispatchAction(CounterAction.add(2))
        #expect(counts.all == [1, 3])
        #expect(logs.all == [["a"]])
    }

    @Test("a struct state's key path works the same")
    func structState() {
        let store = Store(reducers: [counterValueReducer], state: CounterValue())
        let counts = Recorder<Int>()
        store.observe(\.count) { counts.append($0) }
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(JSONAction(identifier: "nothing"))
        store.dispatchAction(CounterAction.increment)
        #expect(counts.all == [1, 2])
    }

    @Test("removeObserver stops a key-path observer")
    func removal() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let counts = Recorder<Int>()
        let token = store.observe(\.count) { counts.append($0) }
        store.dispatchAction(CounterAction.increment)
        #expect(store.removeObserver(token))
        store.dispatchAction(CounterAction.increment)
        #expect(counts.all == [1])
        #expect(store.observerCount == 0)
    }

    @Test("an action that does not notify is applied but tells nobody; the next one tells of its change")
    func quietAction() {
        let quietReducer: Reducer<CounterState> = { state, action in
            if action is Quiet { state.count += 10 }
            counterReducer(&state, action)
        }
        let store = Store(reducers: [quietReducer], state: CounterState())
        let notes = Recorder<UInt64>()
        let counts = Recorder<Int>()
        store.addObserver { notes.append($0.version) }
        store.observe(\.count) { counts.append($0) }
        store.dispatchAction(Quiet())
        #expect(store.version == 1)
        #expect(store.currentState().count == 10)
        #expect(notes.all.isEmpty)
        #expect(counts.all.isEmpty)
        store.dispatchAction(CounterAction.note("loud"))
        #expect(notes.all == [2])
        #expect(counts.all == [10])
        #expect(JSONAction(identifier: "x").notifiesObservers)
    }

    @Test("whether an action notifies is its own on every path: typed, boxed, through middleware, with patches")
    func quietOnEveryPath() {
        // The middleware swaps a quiet action for a loud one and back; the rest pass.
        let swap: Middleware<CounterState> = { _, action, next in
            if action is Quiet {
                next(CounterAction.note("was quiet"))
            } else if case .note("make quiet")? = action as? CounterAction {
                next(Quiet())
            } else {
                next(action)
            }
        }
        for (middleware, patches) in [(false, false), (true, false), (false, true)] {
            let store = middleware
                ? Store(reducers: [counterReducer], state: CounterState(), middleware: [swap])
                : Store(reducers: [counterReducer], state: CounterState())
            let notes = Recorder<String>()
            if patches {
                store.addObserver(includingPatch: true) { note, _ in notes.append(note.actionIdentifier) }
            } else {
                store.addObserver { notes.append($0.actionIdentifier) }
            }
            store.dispatchAction(Quiet())
            let boxed: any Action = Quiet()
            store.dispatchAction(boxed)
            store.dispatchAction(CounterAction.note("make quiet"))
            #expect(store.version == 3)
            #expect(notes.all == (middleware ? ["counter.note", "counter.note"] : ["counter.note"]),
                    "middleware \(middleware), patches \(patches)")
        }
    }

    @Test("a batch is compared once, after its last action")
    func batch() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let counts = Recorder<Int>()
        store.observe(\.count) { counts.append($0) }
        store.dispatchActions([CounterAction.add(1), CounterAction.add(1), CounterAction.add(-2)])
        #expect(counts.all.isEmpty)
        store.dispatchActions([CounterAction.add(1), CounterAction.add(1)])
        #expect(counts.all == [2])
    }

    @Test("an observer added inside a reducer starts from the value that action leaves")
    func addedInsideReducer() {
        let box = WeakStore<CounterState>()
        let counts = Recorder<Int>()
        let reducer: Reducer<CounterState> = { state, action in
            counterReducer(&state, action)
            if case .note("watch")? = action as? CounterAction {
                state.count += 5
                _ = box.store?.observe(\CounterState.count) { counts.append($0) }
            }
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        store.dispatchAction(CounterAction.note("watch"))
        #expect(counts.all.isEmpty)
        store.dispatchAction(CounterAction.note("same"))
        #expect(counts.all.isEmpty)
        store.dispatchAction(CounterAction.increment)
        #expect(counts.all == [6])
    }

    @Test("with a queue: values arrive on the queue, the newest last, never going back")
    func onQueue() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let queue = DispatchQueue(label: "keypath")
        let counts = Recorder<Int>()
        store.observe(\.count, queue: queue) { counts.append($0) }
        for _ in 0..<1_000 { store.dispatchAction(CounterAction.increment) }
        queue.sync {}
        store.flush()
        queue.sync {}
        let all = counts.all
        #expect(all.last == 1_000)
        #expect(all == all.sorted())
        #expect(Set(all).count == all.count)
    }

    @Test("4 threads, a queue: the values only grow and end at the final value")
    func threads() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let queue = DispatchQueue(label: "keypath.threads")
        let last = Locked(0)
        let backwards = Tally()
        store.observe(\.count, queue: queue) { value in
            last.withLock { last in
                if value <= last { backwards.increment() }
                last = value
            }
        }
        onThreads(4) { _ in
            for _ in 0..<2_000 { store.dispatchAction(CounterAction.increment) }
        }
        queue.sync {}
        #expect(backwards.count == 0)
        #expect(last.withLock { $0 } == 8_000)
    }

    @Test("4 threads, no queue: every call hands a value no other call handed")
    func threadsSynchronous() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let values = Recorder<Int>()
        store.observe(\.count) { values.append($0) }
        onThreads(4) { _ in
            for _ in 0..<2_000 { store.dispatchAction(CounterAction.increment) }
        }
        let all = values.all
        #expect(Set(all).count == all.count)
        #expect(all.contains(8_000))
        #expect(all.allSatisfy { (1...8_000).contains($0) })
    }

    @Test("a key-path observer may dispatch; its own change is told after the current round")
    func dispatchFromKeyPathObserver() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let counts = Recorder<Int>()
        let box = WeakStore<CounterState>()
        box.store = store
        store.observe(\.count) { value in
            counts.append(value)
            if value < 3 { box.store?.dispatchAction(CounterAction.increment) }
        }
        store.dispatchAction(CounterAction.increment)
        #expect(counts.all == [1, 2, 3])
        #expect(store.version == 3)
    }
}
