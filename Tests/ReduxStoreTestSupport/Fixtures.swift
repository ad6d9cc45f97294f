@_spi(Bindings) import ReduxStore
import Synchronization

/// A counter state held by reference, as ReduxObjC holds its state.
public final class CounterState: Codable, @unchecked Sendable {
    public var count: Int
    public var log: [String]
    public init(count: Int = 0, log: [String] = []) {
        self.count = count
        self.log = log
    }
}

/// A counter state as a value.
public struct CounterValue: Codable, Equatable, Sendable {
    public var count = 0
    public init(count: Int = 0) { self.count = count }
}

/// The actions the fixtures' reducers understand.
public enum CounterAction: Action, Equatable {
    case increment
    case add(Int)
    case note(String)

    public var identifier: String {
        switch self {
        case .increment: "counter.increment"
        case .add: "counter.add"
        case .note: "counter.note"
        }
    }
}

/// A reducer for ``CounterState``: increment and add change `count`; note appends to `log`.
public let counterReducer: Reducer<CounterState> = { state, action in
    switch action as? CounterAction {
    case .increment?: state.count += 1
    case .add(let amount)?: state.count += amount
    case .note(let text)?: state.log.append(text)
    case nil: break
    }
}

/// A reducer for ``CounterValue`` that counts ``CounterAction/increment``.
public let counterValueReducer: Reducer<CounterValue> = { state, action in
    if case .increment? = action as? CounterAction { state.count += 1 }
}

/// A todo item, as the demos and benchmarks use them.
public struct Todo: Codable, Equatable, Sendable {
    public var id: Int
    public var title: String
    public var done: Bool
    public init(id: Int, title: String, done: Bool = false) {
        self.id = id
        self.title = title
        self.done = done
    }
}

/// A list of todos held by reference.
public final class TodoList: Codable, @unchecked Sendable {
    public var todos: [Todo]
    public init(count: Int) {
        todos = (0..<count).map { Todo(id: $0, title: "todo \($0)") }
    }
}

/// A thread-safe list of what happened, for asserting orders across threads.
public final class Recorder<Element: Sendable>: Sendable {
    private let items = Locked<[Element]>([])
    public init() {}
    public func append(_ item: Element) { items.withLock { $0.append(item) } }
    public var all: [Element] { items.withLock { $0 } }
    public var count: Int { items.withLock { $0.count } }
}

/// A thread-safe counter of events.
public final class Tally: Sendable {
    private let value = Atomic<Int>(0)
    public init() {}
    @discardableResult public func increment() -> Int {
        value.wrappingAdd(1, ordering: .relaxed).newValue
    }
    public var count: Int { value.load(ordering: .relaxed) }
}

/// A one-shot flag a test can wait on with a timeout.
public final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)
    public init() {}
    public func raise() { raised.store(true, ordering: .releasing) }
    public var isRaised: Bool { raised.load(ordering: .acquiring) }
    /// Waits up to `seconds` for the flag; returns whether it was raised.
    public func wait(seconds: Double = 10) -> Bool {
        var waited = 0.0
        while !isRaised && waited < seconds {
            sleepBriefly()
            waited += 0.001
        }
        return isRaised
    }
}

/// Sleeps about a millisecond.
public func sleepBriefly(milliseconds: Int = 1) {
    var request = timespec(tv_sec: 0, tv_nsec: milliseconds * 1_000_000)
    nanosleep(&request, nil)
}

#if canImport(Glibc)
import Glibc
#endif

/// Runs `body(index)` on `count` threads at once and waits for all of them.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    final class Box: @unchecked Sendable {
        let body: @Sendable (Int) -> Void
        let index: Int
        init(_ body: @escaping @Sendable (Int) -> Void, _ index: Int) { self.body = body; self.index = index }
    }
    var threads: [pthread_t] = []
    for index in 0..<count {
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body, index)).toOpaque()
        let status = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body(box.index)
            return nil
        }, box)
        precondition(status == 0, "pthread_create failed")
        threads.append(thread)
    }
    for thread in threads { pthread_join(thread, nil) }
}

/// A weak reference to a store, for reducers, middleware and observers that reach the store
/// they belong to (a strong one would be a cycle). Set before the first dispatch.
public final class WeakStore<State: Codable>: @unchecked Sendable {
    public weak var store: Store<State>?
    public init() {}
}
