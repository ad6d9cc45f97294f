import Benchmark
import Dispatch
import ReduxStore

/// 1,000,000 actions per measured iteration (the counter, 1 reducer, 1 observer), dispatched by
/// 1 thread, or by 2 or 4 threads at once on this 2-core machine: ReduxStore and the plain store.
func registerContentionBenchmarks() {
    let configuration = Benchmark.Configuration(
        warmupIterations: 1, scalingFactor: .mega, maxIterations: 8)

    for threads in [1, 2, 4] {
        Benchmark("contention.store.threads\(threads)", configuration: configuration) { benchmark, store in
            let perThread = benchmark.scaledIterations.count / threads
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                for _ in 0..<perThread { store.dispatchAction(Increment(amount: 1)) }
            }
            precondition(store.version % UInt64(perThread * threads) == 0)
        } setup: { () -> Store<Counter> in
            let store = Store(reducers: counterReducers(1), state: Counter())
            addObservers(1, to: store)
            return store
        }

        Benchmark("contention.plain.threads\(threads)", configuration: configuration) { benchmark, store in
            let perThread = benchmark.scaledIterations.count / threads
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                for _ in 0..<perThread { store.dispatchAction(Increment(amount: 1)) }
            }
            precondition(store.count % UInt64(perThread * threads) == 0)
        } setup: { () -> PlainStore<Counter> in
            let store = PlainStore(reducers: counterReducers(1), state: Counter())
            store.addObserver { version in blackHole(version) }
            return store
        }
    }
}
