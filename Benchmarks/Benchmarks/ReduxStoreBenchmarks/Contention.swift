import Benchmark
import Foundation
import ReduxStore

/// Threads dispatching to one store at once: 1,000,000 actions per measured iteration in all
/// (the counter, 1 reducer, 1 observer), split evenly over 1 or 4 threads of their own (not a
/// pool: libdispatch would run no more than the 2 cores' worth at once). ReduxStore against the
/// plain baseline store doing the same.
func registerContentionBenchmarks() {
    let configuration = Benchmark.Configuration(
        warmupIterations: 1, scalingFactor: .mega, maxIterations: 8)

    for threads in [1, 4] {
        Benchmark("contention.store.threads\(threads)", configuration: configuration) { benchmark, store in
            let perThread = benchmark.scaledIterations.count / threads
            onThreads(threads) {
                for _ in 0..<perThread { store.dispatchAction(Increment(amount: 1)) }
            }
        } setup: { () -> Store<Counter> in
            let store = Store(reducers: counterReducers(1), state: Counter())
            addObservers(1, to: store)
            return store
        }

        Benchmark("contention.plain.threads\(threads)", configuration: configuration) { benchmark, store in
            let perThread = benchmark.scaledIterations.count / threads
            onThreads(threads) {
                for _ in 0..<perThread { store.dispatchAction(Increment(amount: 1)) }
            }
        } setup: { () -> PlainStore<Counter> in
            let store = PlainStore(reducers: counterReducers(1), state: Counter())
            addObservers(1, to: store)
            return store
        }
    }
}

/// Runs `body` on `count` new threads at once (on this thread when `count` is 1), and returns
/// when all of them finished. The threads start together: each waits for the others first.
func onThreads(_ count: Int, _ body: @escaping @Sendable () -> Void) {
    if count == 1 { return body() }
    let ready = DispatchGroup()
    let start = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for _ in 0..<count {
        ready.enter()
        done.enter()
        let thread = Thread {
            ready.leave()
            start.wait()
            body()
            done.leave()
        }
        thread.start()
    }
    ready.wait()
    for _ in 0..<count { start.signal() }
    done.wait()
}
