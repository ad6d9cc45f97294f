// The benchmarks of ReduxStore. Every goal is a ratio between two benchmarks of this one run (a
// store workload and the baseline it is held against), never an absolute time: Tools/BenchmarkReport
// computes them from the run's saved results (scripts/bench runs both).
//
// Names are `group.subject.workload...`; the report finds benchmarks by these names:
//   dispatch.store.<state>.r<reducers>.o<observers>   a store's dispatchAction, per action
//   dispatch.hand.<state>.r<reducers>                 the hand loop: same reducers, no store
//   snapshot.store.todos<n>.readers<k>                one action, then k currentState() calls
//   snapshot.foundation.todos<n>.readers<k>           one JSONEncoder encode, k JSONDecoder decodes
//   snapshot.copy.todos<n>                            the state's value copied, storage unique
//   memory.<subject>.todos<n>                         peak extra bytes of one snapshot
//   c.*                                               the C interface, called from Swift
//   contention.threads<t>                             dispatch from t threads at once
//   composition.*                                     middleware, batches, key-path observers
//   inspection.*                                      journal (inspection.journal.paired.counter:
//                                                     with ÷ without, paired in each sample),
//                                                     history, restore, diff; the live
//                                                     inspector (inspection.inspector.paired.counter:
//                                                     with a page, and with none, ÷ without an
//                                                     inspector, paired in each sample)
import Benchmark
#if canImport(Glibc)
import Glibc
#endif
import ReduxStore

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: BenchmarkConfig.timeMetrics,
        timeUnits: .nanoseconds,
        warmupIterations: 3,
        maxDuration: BenchmarkConfig.maxDuration,
        maxIterations: 10_000
    )
    registerDispatchBenchmarks()
    registerSnapshotBenchmarks()
    registerMemoryBenchmarks()
    registerCBenchmarks()
    registerContentionBenchmarks()
    registerCompositionBenchmarks()
    registerJournalBenchmarks()
    registerInspectorBenchmarks()
    registerPairedBenchmarks()
    registerOverheadBenchmark()
}

enum BenchmarkConfig {
    /// How long each benchmark runs: `REDUXSTORE_BENCH_MS` milliseconds, 300 by default (the
    /// quick run of scripts/bench).
    static let maxDuration: Duration = {
        let text = getenvString("REDUXSTORE_BENCH_MS") ?? ""
        return .milliseconds(Int(text) ?? 300)
    }()

    /// Wall clock and allocations for every benchmark; instructions where perf events work.
    static let timeMetrics: [BenchmarkMetric] = [.wallClock, .mallocCountTotal, .instructions]
}

func getenvString(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    return String(cString: value)
}

/// The harness's own allocations per measured sample: the report subtracts them.
func registerOverheadBenchmark() {
    Benchmark("overhead.empty", configuration: .init(scalingFactor: .kilo)) { benchmark in
        for index in benchmark.scaledIterations { blackHole(index) }
    }
}
