// The states, actions and reducers every benchmark of this target shares, and the hand loop that
// is the limit of a dispatch.
import Foundation
import ReduxStore

// MARK: - States

/// The small state: a counter.
struct Counter: Codable, Sendable {
    var count = 0
}

/// One todo of the large state.
struct Todo: Codable, Sendable {
    var id: Int
    var title: String
    var done: Bool
}

/// The large state: a class holding `count` todos (10, 1,000 or 100,000 here).
final class TodoList: Codable, @unchecked Sendable {
    // @unchecked: a benchmark state, touched by one thread at a time (the store's lock, or the
    // benchmark's own thread).
    var todos: [Todo]

    init(todos: [Todo]) { self.todos = todos }

    convenience init(count: Int) {
        self.init(todos: (0..<count).map { Todo(id: $0, title: "todo \($0)", done: false) })
    }

    /// The "value copy" baseline: the todos array copied with its storage forced unique, in a
    /// new box. The limit of any deep copy of this state.
    func valueCopy() -> TodoList {
        var copy = todos
        copy.withUnsafeMutableBufferPointer { _ in }  // not unique (shared with self): copies now
        return TodoList(todos: copy)
    }
}

/// The todo list sizes snapshots and dispatches are measured at.
let todoSizes = [10, 1_000, 100_000]

// MARK: - Actions (value types of at most three words: dispatched without an allocation)

struct Increment: Action {
    var amount: Int
    var identifier: String { "counter.add" }
}

/// An action without stored properties, as a C program dispatches it with a NULL payload to a
/// Swift store that registered its type (`ActionTypes`).
struct Tick: Action, Codable {
    var identifier: String { "counter.tick" }
}

struct Toggle: Action {
    var index: Int
    var identifier: String { "todo.toggle" }
}

// MARK: - Reducers

/// `count` counter reducers: the first adds, the others handle actions of their own (as the
/// slices of a combined app reducer do) and so only look at the identifier.
func counterReducers(_ count: Int) -> [Reducer<Counter>] {
    (0..<count).map { index -> Reducer<Counter> in
        if index == 0 {
            return { state, action in
                if let add = action as? Increment { state.count &+= add.amount }
            }
        }
        let mine = "other.\(index)"
        return { state, action in
            if action.identifier == mine { state.count = 0 }
        }
    }
}

/// The counter reducer for ``Tick``, casting as the first of ``counterReducers(_:)`` does.
func tickReducers() -> [Reducer<Counter>] {
    [{ state, action in if action is Tick { state.count &+= 1 } }]
}

/// ``Tick`` registered for its identifier: what a Swift store handed to C decodes it with.
func tickActionTypes() -> ActionTypes {
    var types = ActionTypes()
    types.register(Tick.self, for: "counter.tick")
    return types
}

/// The counter reducers of ``counterReducers(_:)`` routed: the first registered for `Increment`
/// (it receives the action typed, no cast), the others each for an identifier of its own.
func routedCounterReducers(_ count: Int) -> Reducers<Counter> {
    var reducers = Reducers<Counter>()
    reducers.on(Increment.self) { state, add in state.count &+= add.amount }
    for index in 1..<max(count, 1) {
        reducers.on(identifier: "other.\(index)") { state, _ in state.count = 0 }
    }
    return reducers
}

/// `count` todo reducers: the first toggles one todo in place, the others look at the identifier.
func todoReducers(_ count: Int) -> [Reducer<TodoList>] {
    (0..<count).map { index -> Reducer<TodoList> in
        if index == 0 {
            return { state, action in
                if let toggle = action as? Toggle { state.todos[toggle.index].done.toggle() }
            }
        }
        let mine = "other.\(index)"
        return { state, action in
            if action.identifier == mine { state.todos.removeAll() }
        }
    }
}

// MARK: - The hand loop: the same reducers, no store, no lock

/// The state in a local class box, as the store keeps it behind a pointer.
final class StateBox<State> {
    var state: State
    init(_ state: State) { self.state = state }
}

/// One "dispatch" of the hand loop: the reducers called in order with the action as `any Action`.
@inline(never)
func handDispatch<State>(_ box: StateBox<State>, _ reducers: [Reducer<State>], _ action: any Action) {
    for reducer in reducers {
        reducer(&box.state, action)
    }
}

// MARK: - Foundation, the naive snapshot

@inline(never)
func foundationRoundTrip<State: Codable>(_ state: State) -> State {
    let data = try! JSONEncoder().encode(state)
    return try! JSONDecoder().decode(State.self, from: data)
}

/// The size in bytes of the state's JSON text (Foundation's compact encoding).
func jsonTextSize<State: Encodable>(_ state: State) -> Int {
    (try? JSONEncoder().encode(state).count) ?? 0
}
