import Benchmark
import Foundation
import ReduxStore

/// What inspection costs (issue 10): a dispatch with the journal on (with and without patches),
/// against the same store without it; a dispatch while the history keeps snapshots; a restore;
/// the diff of two large states with one change.
func registerJournalBenchmarks() {
    let configuration = Benchmark.Configuration(scalingFactor: .kilo)
    let folder = NSTemporaryDirectory() + "reduxstore-bench-journal-\(getpid())"
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)

    // What a dispatch costs with the journal on: 1,000 dispatches measured, then (not measured)
    // the writer catches up, so the queue never fills and the disk's pace is not in the figure.
    // The sustained rate, bounded by how fast the disk takes the lines, is the next benchmark.
    for patches in [false, true] {
        let name = patches ? "inspection.journal.patches.counter" : "inspection.journal.counter"
        Benchmark(name, configuration: configuration) { benchmark, store in
            for _ in benchmark.scaledIterations {
                store.dispatchAction(Increment(amount: 1))
            }
            benchmark.stopMeasurement()
            store.flushJournal()
        } setup: { () -> Store<Counter> in
            journaledCounter(at: folder + "/\(name).jsonl", patches: patches)
        }
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
