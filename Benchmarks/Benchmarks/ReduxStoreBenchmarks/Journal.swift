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

    for patches in [false, true] {
        let name = patches ? "inspection.journal.patches.counter" : "inspection.journal.counter"
        Benchmark(name, configuration: configuration) { benchmark, store in
            for _ in benchmark.scaledIterations {
                store.dispatchAction(Increment(amount: 1))
            }
        } setup: { () -> Store<Counter> in
            let store = Store(reducers: counterReducers(1), state: Counter())
            var options = JournalOptions()
            options.recordPatches = patches
            // Rotation keeps the disk used small: two files of at most 4 MB.
            options.maximumFileSize = 4 << 20
            options.maximumFiles = 1
            try? store.startJournal(at: folder + "/\(name).jsonl", options: options)
            return store
        }
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
