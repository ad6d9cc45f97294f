import Benchmark
import ReduxStore

/// `currentState()` after one action, against Foundation's JSONEncoder + JSONDecoder round trip
/// and a plain value copy, at 10, 1,000 and 100,000 todos; 1 reader and 10 readers.
func registerSnapshotBenchmarks() {
    // One warm-up: a Foundation round trip of 100,000 todos takes about half a second.
    let snapshotConfiguration = Benchmark.Configuration(warmupIterations: 1)
    for size in todoSizes {
        for readers in [1, 10] {
            // One action (so the kept snapshot is stale), then `readers` snapshots: one encode and
            // `readers` decodes.
            Benchmark("snapshot.store.todos\(size).readers\(readers)", configuration: snapshotConfiguration) { benchmark, store in
                var index = 0
                for _ in benchmark.scaledIterations {
                    store.dispatchAction(Toggle(index: index))
                    index = (index + 1) % size
                    for _ in 0..<readers {
                        blackHole(store.currentState())
                    }
                }
            } setup: {
                Store(reducers: todoReducers(1), state: TodoList(count: size))
            }

            // The naive snapshot: one JSONEncoder encode, `readers` JSONDecoder decodes.
            Benchmark("snapshot.foundation.todos\(size).readers\(readers)", configuration: snapshotConfiguration) { benchmark, state in
                for _ in benchmark.scaledIterations {
                    let data = try! JSONEncoder().encode(state)
                    for _ in 0..<readers {
                        blackHole(try! JSONDecoder().decode(TodoList.self, from: data))
                    }
                }
            } setup: {
                TodoList(count: size)
            }
        }

        // The limit of a copy.
        Benchmark("snapshot.copy.todos\(size)", configuration: snapshotConfiguration) { benchmark, state in
            for _ in benchmark.scaledIterations {
                blackHole(state.valueCopy())
            }
        } setup: {
            TodoList(count: size)
        }
    }
}

import Foundation
