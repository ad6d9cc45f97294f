import Logging
import ReduxStore
import ReduxStoreTestSupport
import Testing

// The examples of the DocC article "Composition"
// (Sources/ReduxStore/ReduxStore.docc/ComposingStores.md), which were the README's, as written
// there, so they keep compiling and doing what the article says. Kept in step by hand: a change
// to the article's blocks is made here too.

private struct Todos: Codable, Sendable {
    var todos: [String] = []
    var cursor = 0
}

private struct AddTodo: Action { let identifier = "todo.add"; var title: String }

private struct CursorMoved: Action {
    let identifier = "cursor.moved"
    var position: Int
    var notifiesObservers: Bool { false }
}

private let todosReducer: Reducer<Todos> = { state, action in
    if let add = action as? AddTodo { state.todos.append(add.title) }
    if let move = action as? CursorMoved { state.cursor = move.position }
}

@Suite("The Composition article's examples (ComposingStores.md)")
struct ReadmeCompositionTests {
    @Test("middleware, batches, observing one value, an action that does not notify")
    func examples() {
        let dropEmpty: Middleware<Todos> = { store, action, next in
            if let add = action as? AddTodo, add.title.isEmpty { return }   // dropped
            next(action)                                                     // passed on
        }
        let store = Store(reducers: [todosReducer], state: Todos(), middleware: [dropEmpty])
        store.dispatchAction(AddTodo(title: ""))       // nothing happens: no reducer, no version
        #expect(store.version == 0)
        store.dispatchAction(AddTodo(title: "milk"))   // applied: version 1
        #expect(store.version == 1)

        let counts = Recorder<Int>()
        let token = store.observe(\.todos.count) { count in counts.append(count) }
        store.dispatchActions([AddTodo(title: "eggs"), AddTodo(title: "bread")])
        #expect(store.version == 3)
        #expect(counts.all == [3])
        store.dispatchAction(CursorMoved(position: 2))
        #expect(store.version == 4)
        #expect(store.currentState().cursor == 2)
        #expect(store.removeObserver(token))

        let logging = LoggingMiddleware(label: "app.store", level: .info)
        let logged = Store(reducers: [todosReducer], state: Todos(), middleware: [logging.middleware()])
        logged.dispatchAction(AddTodo(title: "x"))
        #expect(logged.currentState().todos == ["x"])
    }

    @Test("effects and streams of states")
    func effects() async throws {
        let store = Store(reducers: [todosReducer], state: Todos(todos: ["a"]))
        // Apply each action of an async sequence as it arrives; cancel the task to stop.
        let ticks = AsyncStream<AddTodo> { continuation in
            continuation.yield(AddTodo(title: "from a stream"))
            continuation.finish()
        }
        try await store.dispatch(contentsOf: ticks).value

        // Run async work that dispatches (a thunk); its error reaches `task.value`.
        let task = store.dispatch { store in
            try await Task.sleep(nanoseconds: 1_000_000)
            store.dispatchAction(AddTodo(title: "later"))
        }
        try await task.value

        store.dispatchAction(AddTodo(title: "fourth"))
        // Snapshots as an async sequence: the state now, then the newest after changes.
        var counts: [Int] = []
        for await state in store.states() {
            counts.append(state.todos.count)
            if state.todos.count >= 4 { break }
        }
        #expect(counts == [4])
    }
}
