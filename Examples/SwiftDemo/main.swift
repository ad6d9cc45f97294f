// The ReduxStore demo: a todo list in one store, held by reference as ReduxObjC held its state,
// changed only through actions, observed, and inspected through deep-copy snapshots.
import Dispatch
import ReduxStore

/// The whole state of the app. A `final class`: reducers mutate it in place.
final class AppState: Codable {
    var todos: [Todo] = []
    var nextID = 1
    var stats = Stats()
}

struct Todo: Codable {
    var id: Int
    var title: String
    var done = false
}

struct Stats: Codable {
    var actions = 0
    var open = 0
    var done = 0
}

enum TodoAction: Action {
    case add(String)
    case toggle(id: Int)
    case clearDone

    var identifier: String {
        switch self {
        case .add: "todo.add"
        case .toggle: "todo.toggle"
        case .clearDone: "todo.clearDone"
        }
    }
}

/// Reducer 1: the list itself.
let todosReducer: Reducer<AppState> = { state, action in
    switch action as? TodoAction {
    case .add(let title)?:
        state.todos.append(Todo(id: state.nextID, title: title))
        state.nextID += 1
    case .toggle(let id)?:
        if let index = state.todos.firstIndex(where: { $0.id == id }) {
            state.todos[index].done.toggle()
        }
    case .clearDone?:
        state.todos.removeAll { $0.done }
    case nil:
        // Untyped actions, as C programs send them: {"identifier": "todo.add", "payload": {...}}.
        if let json = action as? JSONAction, json.identifier == "todo.add",
           let title = try? json.decodePayload(as: String.self) {
            state.todos.append(Todo(id: state.nextID, title: title))
            state.nextID += 1
        }
    }
}

/// Reducer 2: statistics derived from the list, kept up to date after reducer 1 ran.
let statsReducer: Reducer<AppState> = { state, _ in
    state.stats.actions += 1
    state.stats.done = state.todos.filter(\.done).count
    state.stats.open = state.todos.count - state.stats.done
}

let store = Store(reducers: [todosReducer, statsReducer], state: AppState())

// An observer with no queue runs on the dispatching thread, once per action.
let token = store.addObserver { note in
    print("observer: \(note.name) version \(note.version) after \(note.actionIdentifier)")
}

store.dispatchAction(TodoAction.add("Write the header"))
store.dispatchAction(TodoAction.add("Link libreduxstore.so"))
store.dispatchAction(JSONAction(identifier: "todo.add", payload: "Read the snapshot"))
store.dispatchAction(TodoAction.toggle(id: 1))

// A snapshot is a deep copy: printing it, or changing it, never touches the store.
let snapshot = store.currentState()
print("snapshot at version \(store.version):")
print(try JSONCEncoder().encodeToJSONString(snapshot, pretty: true))
snapshot.todos.removeAll()
print("the store still holds \(store.currentState().todos.count) todos")

// Any thread may dispatch; enqueueAction returns at once, flush waits for the queue.
store.removeObserver(token)
DispatchQueue.concurrentPerform(iterations: 4) { worker in
    for index in 0..<25 {
        store.enqueueAction(TodoAction.add("task \(worker).\(index)"))
    }
}
store.flush()
store.dispatchAction(TodoAction.clearDone)
let final = store.currentState()
print("""
    100 actions enqueued from 4 threads, then todo.clearDone: version \(store.version), \
    \(final.todos.count) todos; stats: \(final.stats.actions) actions, \(final.stats.open) open, \
    \(final.stats.done) done
    """)
