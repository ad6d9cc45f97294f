// reduxstore-inspector-demo: a todo store with its live inspector, for a person to look at and
// for the browser test (Tests/InspectorBrowser/run.sh).
//
//   swift run reduxstore-inspector-demo [--actions N] [--allow-restore] [--allow-dispatch]
//
// Applies N actions (1,000 by default: a todo added, and every third action one toggled), prints
// the inspector's address on one line (it keeps the last 1,000 versions' states), and serves until its standard input ends.
import Foundation
import ReduxStore
import ReduxStoreInspector

struct Todo: Codable, Sendable { var title: String; var done = false }
struct TodoList: Codable, Sendable { var todos: [Todo] = [] }
struct AddTodo: Action, Codable { var title: String; var identifier: String { "todo.add" } }
struct ToggleTodo: Action, Codable { var index: Int; var identifier: String { "todo.toggle" } }

let reducer: Reducer<TodoList> = { state, action in
    if let add = action as? AddTodo {
        state.todos.append(Todo(title: add.title))
    } else if let toggle = action as? ToggleTodo, state.todos.indices.contains(toggle.index) {
        state.todos[toggle.index].done.toggle()
    }
}

let arguments = CommandLine.arguments
var actions = 1_000
if let index = arguments.firstIndex(of: "--actions"), index + 1 < arguments.count, let count = Int(arguments[index + 1]) {
    actions = count
}
var options = InspectorOptions()
options.allowsRestore = arguments.contains("--allow-restore")
options.allowsDispatch = arguments.contains("--allow-dispatch")
options.actions.register(AddTodo.self, for: "todo.add")
options.actions.register(ToggleTodo.self, for: "todo.toggle")

let store = Store(reducers: [reducer], state: TodoList())
// The states of the last 1,000 versions, so a page opened after the actions shows their patches
// and states too (a page sees the patches of what is applied while it is open without it).
store.keepHistory(1_000)
let inspector = try await StoreInspector(store, options: options)
for index in 0..<actions {
    if index % 3 == 2 {
        store.dispatchAction(ToggleTodo(index: index / 3))
    } else {
        store.dispatchAction(AddTodo(title: "todo \(index)"))
    }
}
// Written straight to the file descriptor: a pipe's reader sees it at once.
FileHandle.standardOutput.write(Data((inspector.url + "\n").utf8))
while readLine() != nil {}
await inspector.stop()
