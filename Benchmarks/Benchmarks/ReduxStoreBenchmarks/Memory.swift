import Benchmark
import Foundation
import MallocInterposerSwift
import ReduxStore

/// Peak extra memory of one snapshot: the highest number of live heap bytes during
/// `currentState()` (after one action, so it encodes afresh), above the live bytes before it.
/// Measured exactly, at every allocation, through the malloc interposer's allocation hook.
/// Reported with the state's JSON text size, which the goal is relative to.
func registerMemoryBenchmarks() {
    let peakExtra = BenchmarkMetric.custom("peakExtraBytes", polarity: .prefersSmaller, useScalingFactor: false)
    let jsonBytes = BenchmarkMetric.custom("stateJSONBytes", polarity: .prefersSmaller, useScalingFactor: false)
    let configuration = Benchmark.Configuration(
        metrics: [.mallocCountTotal, .mallocBytesCount, peakExtra, jsonBytes],
        warmupIterations: 1, maxIterations: 25)

    for size in todoSizes {
        Benchmark("memory.store.todos\(size)", configuration: configuration) { benchmark, store in
            store.dispatchAction(Toggle(index: 0))
            let (copy, peak) = PeakMemory.measure { store.currentState() }
            benchmark.measurement(peakExtra, peak)
            benchmark.measurement(jsonBytes, jsonTextSize(copy))
            blackHole(copy)
        } setup: {
            Store(reducers: todoReducers(1), state: TodoList(count: size))
        }

        Benchmark("memory.foundation.todos\(size)", configuration: configuration) { benchmark, state in
            let (copy, peak) = PeakMemory.measure { foundationRoundTrip(state) }
            benchmark.measurement(peakExtra, peak)
            benchmark.measurement(jsonBytes, jsonTextSize(copy))
            blackHole(copy)
        } setup: {
            TodoList(count: size)
        }
    }
}

/// The highest number of live heap bytes while a body runs, above the number before it.
enum PeakMemory {
    nonisolated(unsafe) static var peak = 0

    static let hook: MallocInterposerSwift.AllocationHook = { _ in
        let statistics = MallocInterposerSwift.getStatistics()
        let live = statistics.mallocBytesCount - statistics.freeBytesCount
        if live > PeakMemory.peak { PeakMemory.peak = live }
    }

    static func live() -> Int {
        let statistics = MallocInterposerSwift.getStatistics()
        return statistics.mallocBytesCount - statistics.freeBytesCount
    }

    @inline(never)
    static func measure<T>(_ body: () -> T) -> (T, Int) {
        MallocInterposerSwift.hook()  // counting on (the benchmark's malloc metrics turn it on too)
        let before = live()
        peak = before
        MallocInterposerSwift.setAllocationHook(hook)
        let result = body()
        MallocInterposerSwift.setAllocationHook(nil)
        return (result, max(0, peak - before))
    }
}
