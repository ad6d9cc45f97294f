import Benchmark
import Foundation
import ReduxStore

/// What inspection costs (issue 10): a dispatch with the journal on (with and without patches),
/// against the same store without it; a dispatch while the history keeps snapshots; a restore.
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
}
