import ReduxStore
import ReduxStoreTestSupport
import Testing

// The Swift example of the DocC article "The change feed"
// (Sources/ReduxStore/ReduxStore.docc/ChangeFeed.md), as written there, its printed lines
// checked. Kept in step by hand: a change to the article's block is made here too.

private struct Todo: Codable, Equatable, Sendable { var title: String; var done = false }
private struct TodoList: Codable, Equatable, Sendable { var todos: [Todo] = [] }
private struct AddTodo: Action, Codable { var identifier: String { "todo.add" }; var title: String }

private let todoReducer: Reducer<TodoList> = { state, action in
    if let add = action as? AddTodo { state.todos.append(Todo(title: add.title)) }
}

@Suite("The change feed article's example (ChangeFeed.md)")
struct ChangeFeedArticleTests {
    @Test("an async sequence of changes, with payload, patch and source")
    func example() async {
        var printed: [String] = []
        func print(_ items: Any...) { printed.append(items.map { "\($0)" }.joined(separator: " ")) }
        let line = #line + 3
        let store = Store(reducers: [todoReducer], state: TodoList())
        let feed = store.changes(includingPatches: true)
        store.dispatchAction(AddTodo(title: "milk"))
        for await change in feed {
            print(change.version, change.identifier, change.source!)   // 1 todo.add Feature.swift:3
            print(change.payload!)                                      // {"title":"milk"}
            print(change.patch!)                                        // add /todos/0 …
            break
        }
        #expect(printed.count == 3)
        #expect(printed[0] == "1 todo.add ChangeFeedArticleTests.swift:\(line)")
        #expect(printed[1] == #"{"title":"milk"}"#)
        #expect(printed[2].contains("add") && printed[2].contains("/todos/0"))
    }
}
