import Benchmark
import Dispatch
import ReduxStore

/// Two threads dispatching to one store at once, against one thread doing the same number of
/// actions: 1,000,000 actions per measured iteration in all (the counter, 1 reducer, 1 observer).
func registerContentionBenchmarks() {
    let configuration = Benchmark.Configuration(
        warmupIterations: 1, scalingFactor: .mega, maxIterations: 8)

    for threads in [1, 2] {
        Benchmark("contention.threads\(threads)", configuration: configuration) { benchmark, store in
            let perThread = benchmark.scaledIterations.count / threads
            if threads == 1 {
                for _ in 0..<perThread { store.dispatchAction(Increment(amount: 1)) }
            } else {
                DispatchQueue.concurrentPerform(iterations: threads) { _ in
                    for _ in 0..<perThread { store.dispatchAction(Increment(amount: 1)) }
                }
            }
        } setup: { () -> Store<Counter> in
            let store = Store(reducers: counterReducers(1), state: Counter())
            addObservers(1, to: store)
            return store
        }
    }
}
