import ReduxStore
import ReduxStoreTestSupport
import Testing

private struct Boom: Error, Equatable {}

@Suite("Effects: dispatch(contentsOf:) and dispatch(_ thunk:)")
struct EffectsTests {
    @Test("actions of an async sequence are applied in order, and the task ends with the sequence")
    func sequenceInOrder() async throws {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let actions = AsyncStream<CounterAction> { continuation in
            for index in 1...100 { continuation.yield(.note("\(index)")) }
            continuation.finish()
        }
        try await store.dispatch(contentsOf: actions).value
        #expect(store.version == 100)
        #expect(store.currentState().log == (1...100).map(String.init))
    }

    @Test("cancelling stops further actions at once")
    func cancellation() async throws {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let (actions, continuation) = AsyncStream<CounterAction>.makeStream()
        let task = store.dispatch(contentsOf: actions)
        continuation.yield(.increment)
        while store.version < 1 { await Task.yield() }
        task.cancel()
        // Whatever arrives after the cancellation is not applied.
        for _ in 0..<100 { continuation.yield(.increment) }
        continuation.finish()
        let result = await task.result
        #expect(store.version == 1)
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test("an error the sequence throws reaches the caller through the task")
    func sequenceError() async {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let actions = AsyncThrowingStream<CounterAction, any Error> { continuation in
            continuation.yield(.increment)
            continuation.finish(throwing: Boom())
        }
        let task = store.dispatch(contentsOf: actions)
        await #expect(throws: Boom.self) { try await task.value }
        #expect(store.version == 1)
    }

    @Test("the task does not keep the store alive; once it is freed nothing more is applied")
    func freedStore() async throws {
        let applied = Tally()
        let (actions, continuation) = AsyncStream<CounterAction>.makeStream()
        weak var weakStore: Store<CounterState>?
        var task: Task<Void, any Error>?
        do {
            let store = Store(
                reducers: [{ state, action in applied.increment(); counterReducer(&state, action) }],
                state: CounterState())
            weakStore = store
            task = store.dispatch(contentsOf: actions)
            continuation.yield(.increment)
            while applied.count < 1 { await Task.yield() }
        }
        #expect(weakStore == nil)
        continuation.yield(.increment)
        continuation.finish()
        try await task?.value
        #expect(applied.count == 1)
    }

    @Test("a thunk may await and dispatch; its error reaches the caller")
    func thunk() async throws {
        let store = Store(reducers: [counterReducer], state: CounterState())
        try await store.dispatch { store in
            store.dispatchAction(CounterAction.increment)
            try await Task.sleep(nanoseconds: 1_000_000)
            store.dispatchAction(CounterAction.add(10))
        }.value
        #expect(store.currentState().count == 11)
        let failing = store.dispatch { store in
            store.dispatchAction(CounterAction.increment)
            throw Boom()
        }
        await #expect(throws: Boom.self) { try await failing.value }
        #expect(store.currentState().count == 12)
    }

    @Test("a thunk whose store was freed before it started does not run")
    func thunkAfterFree() async throws {
        let ran = Tally()
        let gate = AsyncStream<Void>.makeStream()
        var task: Task<Void, any Error>?
        do {
            let store = Store(reducers: [counterReducer], state: CounterState())
            // Started from inside another task that waits, so the store is gone first.
            let started = Task {
                for await _ in gate.stream { break }
            }
            task = store.dispatch { _ in
                _ = await started.result
                ran.increment()
            }
            _ = task
        }
        gate.continuation.yield()
        gate.continuation.finish()
        try await task?.value
        // The thunk either ran with the store it was given (if its task started before the
        // store was freed), or not at all; it never runs with a freed store.
        #expect(ran.count <= 1)
    }

    @Test("a cancelled thunk sees the cancellation")
    func thunkCancelled() async {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let task = store.dispatch { store in
            try await Task.sleep(nanoseconds: 10_000_000_000)
            store.dispatchAction(CounterAction.increment)
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(store.version == 0)
    }
}

@Suite("states(): an async sequence of snapshots")
struct StatesStreamTests {
    @Test("the first element is the state now; then the state after changes")
    func firstAndNext() async {
        let store = Store(reducers: [counterReducer], state: CounterState(count: 5))
        var iterator = store.states().makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.count == 5)
        store.dispatchAction(CounterAction.increment)
        let second = await iterator.next()
        #expect(second?.count == 6)
    }

    @Test("after a burst from 4 threads the consumer reaches the newest state")
    func burst() async {
        let store = Store(reducers: [counterReducer], state: CounterState())
        var seen: [Int] = []
        do {
            let stream = store.states()
            #expect(store.observerCount == 1)
            onThreads(4) { _ in
                for _ in 0..<2_500 { store.dispatchAction(CounterAction.increment) }
            }
            for await state in stream {
                seen.append(state.count)
                if state.count == 10_000 { break }
            }
        }
        #expect(seen.last == 10_000)
        #expect(seen.count <= 2)  // the state at the first request, then the newest
        #expect(store.observerCount == 0)  // dropping the stream removed the observer
    }

    @Test("the sequence ends when the store is freed")
    func endsWhenFreed() async {
        var store: Store<CounterState>? = Store(reducers: [counterReducer], state: CounterState())
        let stream = store!.states()
        var iterator = stream.makeAsyncIterator()
        _ = await iterator.next()
        store = nil
        let next = await iterator.next()
        #expect(next == nil)
    }

    @Test("notifications() ends when the store is freed")
    func notificationsEndWhenFreed() async {
        var store: Store<CounterState>? = Store(reducers: [counterReducer], state: CounterState())
        var iterator = store!.notifications().makeAsyncIterator()
        store?.dispatchAction(CounterAction.increment)
        let first = await iterator.next()
        #expect(first?.version == 1)
        store = nil
        let next = await iterator.next()
        #expect(next == nil)
    }

    @Test("cancelling the consumer ends the sequence and removes its observer")
    func cancelled() async {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let stream = store.states()
        let consumer = Task {
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        while store.version == 0 && store.observerCount == 0 { await Task.yield() }
        consumer.cancel()
        _ = await consumer.value
        #expect(store.observerCount == 0)
    }
}
