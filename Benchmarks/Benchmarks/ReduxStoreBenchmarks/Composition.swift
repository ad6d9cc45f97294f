import Benchmark
import ReduxStore

/// A counter with a second field no action changes: what a key-path observer of an unchanged
/// value watches.
struct Gauge: Codable, Sendable {
    var count = 0
    var limit = 100
}

let gaugeReducer: Reducer<Gauge> = { state, action in
    if let add = action as? Increment { state.count &+= add.amount }
}

/// What composition costs: a key-path observer whose value did not change, against
/// the same store without it; one pass-through middleware; a batch of 10 actions. 1,000
/// actions per measured iteration (a batch: 100 batches of 10).
func registerCompositionBenchmarks() {
    let configuration = Benchmark.Configuration(scalingFactor: .kilo)

    Benchmark("composition.gauge.o0", configuration: configuration) { benchmark, store in
        for _ in benchmark.scaledIterations {
            store.dispatchAction(Increment(amount: 1))
        }
    } setup: {
        Store(reducers: [gaugeReducer], state: Gauge())
    }

    Benchmark("composition.keypath.unchanged", configuration: configuration) { benchmark, store in
        for _ in benchmark.scaledIterations {
            store.dispatchAction(Increment(amount: 1))
        }
    } setup: { () -> Store<Gauge> in
        let store = Store(reducers: [gaugeReducer], state: Gauge())
        store.observe(\.limit) { blackHole($0) }
        return store
    }

    Benchmark("composition.middleware.pass1", configuration: configuration) { benchmark, store in
        for _ in benchmark.scaledIterations {
            store.dispatchAction(Increment(amount: 1))
        }
    } setup: {
        Store(
            reducers: counterReducers(1), state: Counter(),
            middleware: [{ _, action, next in next(action) }])
    }

    Benchmark("composition.batch10", configuration: configuration) { benchmark, store in
        let batch: [any Action] = Array(repeating: Increment(amount: 1), count: 10)
        benchmark.startMeasurement()
        for _ in 0..<(benchmark.scaledIterations.count / 10) {
            store.dispatchActions(batch)
        }
        benchmark.stopMeasurement()
    } setup: { () -> Store<Counter> in
        let store = Store(reducers: counterReducers(1), state: Counter())
        addObservers(1, to: store)
        return store
    }
}
