import Benchmark
import Foundation
import ReduxStore

/// What inspection costs: a dispatch with the journal on (with and without patches),
/// against the same store without it; a dispatch while the history keeps snapshots; a restore;
/// the diff of two large states with one change.
func registerJournalBenchmarks() {
    let configuration = Benchmark.Configuration(scalingFactor: .kilo)
    let folder = NSTemporaryDirectory() + "reduxstore-bench-journal-\(getpid())"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)

    // What a dispatch costs with the journal on: 1,000 dispatches measured, then (not measured)
    // the writer catches up, so the queue never fills and the disk's pace is not in the figure.
    // The sustained rate, bounded by how fast the disk takes the lines, is a benchmark below.
    // `inspection.journal.off.counter` is the same store and loop without a journal (its
    // `flushJournal()` returns at once), for the tables; the goal's figure pairs the two stores
    // in each sample (`inspection.journal.paired.counter`, below).
    for (name, journal, patches) in [
        ("inspection.journal.counter", true, false),
        ("inspection.journal.off.counter", false, false),
        ("inspection.journal.patches.counter", true, true),
    ] {
        Benchmark(name, configuration: configuration) { benchmark, store in
            for _ in benchmark.scaledIterations {
                store.dispatchAction(Increment(amount: 1))
            }
            benchmark.stopMeasurement()
            try! store.flushJournal()
        } setup: { () -> Store<Counter> in
            journal
                ? journaledCounter(at: folder + "/\(name).jsonl", patches: patches)
                : Store(reducers: counterReducers(1), state: Counter())
        }
    }
    // The goal's figure: the two stores side by side in each sample (1,000 dispatches each,
    // timed apart, in alternating order, then the writer catches up), so a slow spell of the
    // machine falls on both; the sample's ratio, in thousandths, is the metric.
    let perMille = BenchmarkMetric.custom("journalPerMille", polarity: .prefersSmaller, useScalingFactor: false)
    Benchmark(
        "inspection.journal.paired.counter",
        configuration: .init(metrics: [perMille], warmupIterations: 3)
    ) { benchmark, pair in
        func burst(_ store: Store<Counter>) -> UInt64 {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<1_000 { store.dispatchAction(Increment(amount: 1)) }
            return DispatchTime.now().uptimeNanoseconds - start
        }
        pair.samples += 1
        let with: UInt64, without: UInt64
        if pair.samples.isMultiple(of: 2) {
            with = burst(pair.journaled)
            without = burst(pair.plain)
        } else {
            without = burst(pair.plain)
            with = burst(pair.journaled)
        }
        try! pair.journaled.flushJournal()
        benchmark.measurement(perMille, Int(1_000 * with / max(without, 1)))
    } setup: {
        JournalPair(
            plain: Store(reducers: counterReducers(1), state: Counter()),
            journaled: journaledCounter(at: folder + "/paired.jsonl", patches: false))
    }

    Benchmark("inspection.journal.sustained.counter", configuration: configuration) { benchmark, store in
        for _ in benchmark.scaledIterations {
            store.dispatchAction(Increment(amount: 1))
        }
    } setup: { () -> Store<Counter> in
        journaledCounter(at: folder + "/sustained.jsonl", patches: false)
    }

    Benchmark("inspection.history100.todos1000", configuration: configuration) { benchmark, store in
        var index = 0
        for _ in benchmark.scaledIterations {
            store.dispatchAction(Toggle(index: index))
            index = (index + 1) % 1_000
        }
    } setup: { () -> Store<TodoList> in
        let store = Store(reducers: todoReducers(1), state: TodoList(count: 1_000))
        store.keepHistory(100)
        return store
    }

    Benchmark("inspection.restore.todos1000") { benchmark, store in
        for _ in benchmark.scaledIterations {
            try! store.restore(version: store.historyVersions.first!)
        }
    } setup: { () -> Store<TodoList> in
        let store = Store(reducers: todoReducers(1), state: TodoList(count: 1_000))
        store.keepHistory(1_000_000)
        for index in 0..<10 { store.dispatchAction(Toggle(index: index)) }
        return store
    }

    // Two 100,000-todo states, as JSON values, that differ in one todo: the diff is one
    // `replace`, found by walking both (the goal row compares it with a snapshot of that state).
    Benchmark("inspection.diff.todos100000", configuration: .init(warmupIterations: 1)) { benchmark, states in
        for _ in benchmark.scaledIterations {
            blackHole(JSONPatch.diff(from: states.0, to: states.1))
        }
    } setup: { () -> (JSONValue, JSONValue) in
        let list = TodoList(count: 100_000)
        let before = try! JSONValue(encoding: list)
        list.todos[50_000].done = true
        return (before, try! JSONValue(encoding: list))
    }
}

/// A store with a journal and the same store without, for the paired benchmark.
final class JournalPair: @unchecked Sendable {
    // @unchecked: used by the benchmark's one thread.
    let plain: Store<Counter>
    let journaled: Store<Counter>
    var samples = 0
    init(plain: Store<Counter>, journaled: Store<Counter>) {
        self.plain = plain
        self.journaled = journaled
    }
}

/// A counter store with a journal at `path` (rotated: two files of at most 4 MB, so the disk
/// used stays small).
private func journaledCounter(at path: String, patches: Bool) -> Store<Counter> {
    let store = Store(reducers: counterReducers(1), state: Counter())
    var options = JournalOptions()
    options.recordPatches = patches
    options.maximumFileSize = 4 << 20
    options.maximumFiles = 1
    try? store.startJournal(at: path, options: options)
    return store
}
