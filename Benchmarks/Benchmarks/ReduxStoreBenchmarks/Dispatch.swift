import Benchmark
import ReduxStore

/// Store dispatch against the hand loop: small state (a counter) and todo lists of 10, 1,000 and
/// 100,000 todos, 1 and 10 reducers, 0, 1 and 100 synchronous observers. 1,000 actions per
/// measured iteration (the report divides by the scaling factor).
func registerDispatchBenchmarks() {
    let configuration = Benchmark.Configuration(scalingFactor: .kilo)

    for reducers in [1, 10] {
        // The hand loop, the limit of a dispatch.
        Benchmark("dispatch.hand.counter.r\(reducers)", configuration: configuration) { benchmark, box in
            let list = counterReducers(reducers)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                handDispatch(box, list, Increment(amount: 1))
            }
            benchmark.stopMeasurement()
            blackHole(box.state.count)
        } setup: {
            StateBox(Counter())
        }

        for observers in [0, 1, 100] {
            Benchmark("dispatch.store.counter.r\(reducers).o\(observers)", configuration: configuration) {
                benchmark, store in
                for _ in benchmark.scaledIterations {
                    store.dispatchAction(Increment(amount: 1))
                }
            } setup: { () -> Store<Counter> in
                let store = Store(reducers: counterReducers(reducers), state: Counter())
                addObservers(observers, to: store)
                return store
            }
        }
    }

    // Routed reducers (`Reducers`): the counter's reducer registered for `Increment`, alone or
    // among 49 reducers of other identifiers; the plain store with 50 broadcast reducers beside it.
    for reducers in [1, 50] {
        Benchmark("dispatch.routed.counter.r\(reducers).o1", configuration: configuration) {
            benchmark, store in
            for _ in benchmark.scaledIterations {
                store.dispatchAction(Increment(amount: 1))
            }
        } setup: { () -> Store<Counter> in
            let store = Store(reducers: routedCounterReducers(reducers), state: Counter())
            addObservers(1, to: store)
            return store
        }
    }
    Benchmark("dispatch.plain.counter.r50.o1", configuration: configuration) { benchmark, store in
        for _ in benchmark.scaledIterations {
            store.dispatchAction(Increment(amount: 1))
        }
    } setup: { () -> PlainStore<Counter> in
        let store = PlainStore(reducers: counterReducers(50), state: Counter())
        addObservers(1, to: store)
        return store
    }

    // The plain baseline store (PlainStore.swift): the same reducers and observers.
    for observers in [0, 1] {
        Benchmark("dispatch.plain.counter.r1.o\(observers)", configuration: configuration) {
            benchmark, store in
            for _ in benchmark.scaledIterations {
                store.dispatchAction(Increment(amount: 1))
            }
        } setup: { () -> PlainStore<Counter> in
            let store = PlainStore(reducers: counterReducers(1), state: Counter())
            addObservers(observers, to: store)
            return store
        }
    }

    for size in todoSizes {
        let reducerCounts = size == 100_000 ? [1, 10] : [1]
        for reducers in reducerCounts {
            Benchmark("dispatch.hand.todos\(size).r\(reducers)", configuration: configuration) {
                benchmark, box in
                let list = todoReducers(reducers)
                var index = 0
                benchmark.startMeasurement()
                for _ in benchmark.scaledIterations {
                    handDispatch(box, list, Toggle(index: index))
                    index += 1
                    if index == size { index = 0 }
                }
                benchmark.stopMeasurement()
            } setup: {
                StateBox(TodoList(count: size))
            }

            let observerCounts = size == 100_000 ? [0, 1, 100] : [1]
            for observers in observerCounts {
                Benchmark(
                    "dispatch.store.todos\(size).r\(reducers).o\(observers)", configuration: configuration
                ) { benchmark, store in
                    var index = 0
                    for _ in benchmark.scaledIterations {
                        store.dispatchAction(Toggle(index: index))
                        index += 1
                        if index == size { index = 0 }
                    }
                } setup: { () -> Store<TodoList> in
                    let store = Store(reducers: todoReducers(reducers), state: TodoList(count: size))
                    addObservers(observers, to: store)
                    return store
                }
            }
        }
    }
}

/// Adds `count` observers that each look at the notification, to the plain store.
func addObservers<State: Sendable>(_ count: Int, to store: PlainStore<State>) {
    for _ in 0..<count {
        store.addObserver { note in blackHole(note.version) }
    }
}

/// Adds `count` synchronous observers that each look at the notification.
func addObservers<State>(_ count: Int, to store: Store<State>) {
    for _ in 0..<count {
        store.addObserver { note in blackHole(note.version) }
    }
}
