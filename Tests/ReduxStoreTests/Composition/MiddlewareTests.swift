import Dispatch
@_spi(Bindings) import ReduxStore
import ReduxStoreTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif


/// A `next` and its action, handed to another thread by a middleware that joins it.
private final class HandOver: @unchecked Sendable {
    // @unchecked: made before the other thread starts, used there only.
    let next: (any Action) -> Void
    let action: any Action
    init(_ next: @escaping (any Action) -> Void, _ action: any Action) {
        self.next = next
        self.action = action
    }
    func run() { next(action) }
}

/// A middleware that calls `next` on a thread of its own, which it joins (a sync call on a queue
/// would run on the calling thread).
private func nextOnAThreadOfItsOwn<State: Codable>() -> Middleware<State> {
    { _, action, next in
        withoutActuallyEscaping(next) { next in
            let call = Unmanaged.passRetained(HandOver(next, action)).toOpaque()
            var thread = pthread_t()
            pthread_create(&thread, nil, { raw in
                Unmanaged<HandOver>.fromOpaque(raw!).takeRetainedValue().run()
                return nil
            }, call)
            pthread_join(thread, nil)
        }
    }
}

@Suite("Middleware: pass, replace, drop, dispatch; order with nested dispatch")
struct MiddlewareTests {
    @Test("each middleware sees every action before the reducers, in the order given")
    func order() {
        let seen = Recorder<String>()
        let first: Middleware<CounterState> = { _, action, next in
            seen.append("first \(action.identifier)")
            next(action)
        }
        let second: Middleware<CounterState> = { store, action, next in
            seen.append("second \(action.identifier) at \(store.version)")
            next(action)
            seen.append("second after, at \(store.version)")
        }
        let reducer: Reducer<CounterState> = { state, action in
            seen.append("reducer \(action.identifier)")
            counterReducer(&state, action)
        }
        let store = Store(reducers: [reducer], state: CounterState(), middleware: [first, second])
        store.dispatchAction(CounterAction.increment)
        #expect(seen.all == [
            "first counter.increment", "second counter.increment at 0",
            "reducer counter.increment", "second after, at 1",
        ])
        #expect(store.currentState().count == 1)
    }

    @Test("a dropped action changes nothing: no reducer, no version, no notification")
    func drop() {
        let reducerCalls = Tally()
        let notifications = Tally()
        let dropAdds: Middleware<CounterState> = { _, action, next in
            if case .add? = action as? CounterAction { return }
            next(action)
        }
        let store = Store(
            reducers: [{ state, action in reducerCalls.increment(); counterReducer(&state, action) }],
            state: CounterState(), middleware: [dropAdds])
        store.addObserver { _ in notifications.increment() }
        store.dispatchAction(CounterAction.add(5))
        #expect(store.version == 0)
        #expect(reducerCalls.count == 0)
        #expect(notifications.count == 0)
        #expect(store.currentState().count == 0)
        store.dispatchAction(CounterAction.increment)
        #expect(store.version == 1)
        #expect(notifications.count == 1)
    }

    @Test("a middleware may replace the action; later middleware and observers see the new one")
    func replace() {
        let seen = Recorder<String>()
        let doubler: Middleware<CounterState> = { _, action, next in
            if case .add(let amount)? = action as? CounterAction {
                next(CounterAction.add(amount * 2))
            } else {
                next(action)
            }
        }
        let spy: Middleware<CounterState> = { _, action, next in
            if case .add(let amount)? = action as? CounterAction { seen.append("add \(amount)") }
            next(action)
        }
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [doubler, spy])
        store.addObserver { seen.append("notified \($0.version) \($0.actionIdentifier)") }
        store.dispatchAction(CounterAction.add(21))
        #expect(store.currentState().count == 42)
        #expect(seen.all == ["add 42", "notified 1 counter.add"])
    }

    @Test("calling next twice applies the action twice")
    func nextTwice() {
        let twice: Middleware<CounterState> = { _, action, next in
            next(action)
            next(action)
        }
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [twice])
        store.dispatchAction(CounterAction.increment)
        #expect(store.version == 2)
        #expect(store.currentState().count == 2)
    }

    @Test("an action dispatched from a middleware goes through the whole chain, and is applied first")
    func dispatchFromMiddleware() {
        let seen = Recorder<String>()
        let first: Middleware<CounterState> = { _, action, next in
            seen.append("first \(action.identifier)")
            next(action)
        }
        let expander: Middleware<CounterState> = { store, action, next in
            if case .add(let amount)? = action as? CounterAction {
                for _ in 0..<amount { store.dispatchAction(CounterAction.increment) }
                return
            }
            next(action)
        }
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [first, expander])
        store.dispatchAction(CounterAction.add(3))
        #expect(store.currentState().count == 3)
        #expect(store.version == 3)
        #expect(seen.all == [
            "first counter.add", "first counter.increment", "first counter.increment",
            "first counter.increment",
        ])
    }

    @Test("a middleware reads the state through currentState() and version, also for a struct state")
    func readsState() {
        let seen = Recorder<Int>()
        let reader: Middleware<CounterValue> = { store, action, next in
            seen.append(store.currentState().count)
            next(action)
            seen.append(store.currentState().count)
        }
        let store = Store(reducers: [counterValueReducer], state: CounterValue(), middleware: [reader])
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.increment)
        #expect(seen.all == [0, 1, 1, 2])
    }

    @Test("an action a reducer dispatches passes the chain after the current action, FIFO, before dispatch returns")
    func nestedThroughChain() {
        let seen = Recorder<String>()
        let box = WeakStore<CounterState>()
        let spy: Middleware<CounterState> = { _, action, next in
            seen.append("middleware \(action.identifier)")
            next(action)
        }
        let reducer: Reducer<CounterState> = { state, action in
            seen.append("reducer \(action.identifier)")
            if case .note("spawn")? = action as? CounterAction {
                box.store?.dispatchAction(CounterAction.increment)
                box.store?.dispatchAction(CounterAction.add(10))
            }
            counterReducer(&state, action)
        }
        let store = Store(reducers: [reducer], state: CounterState(), middleware: [spy])
        box.store = store
        let versions = Recorder<UInt64>()
        store.addObserver { versions.append($0.version) }
        store.dispatchAction(CounterAction.note("spawn"))
        #expect(store.version == 3)
        #expect(store.currentState().count == 11)
        #expect(seen.all == [
            "middleware counter.note", "reducer counter.note",
            "middleware counter.increment", "reducer counter.increment",
            "middleware counter.add", "reducer counter.add",
        ])
        #expect(versions.all == [1, 2, 3])
    }

    @Test("enqueued actions pass the middleware too")
    func enqueued() {
        let seen = Tally()
        let counter: Middleware<CounterState> = { _, action, next in
            seen.increment()
            next(action)
        }
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [counter])
        for _ in 0..<100 { store.enqueueAction(CounterAction.increment) }
        store.flush()
        #expect(seen.count == 100)
        #expect(store.currentState().count == 100)
    }

    @Test("4 threads through a middleware: none lost, one total order")
    func threads() {
        let passed = Tally()
        let counter: Middleware<CounterState> = { store, action, next in
            _ = store.version
            passed.increment()
            next(action)
        }
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [counter])
        onThreads(4) { _ in
            for _ in 0..<2_000 { store.dispatchAction(CounterAction.increment) }
        }
        #expect(passed.count == 8_000)
        #expect(store.version == 8_000)
        #expect(store.currentState().count == 8_000)
    }

    @Test("the chain holds no reference to its store: a store with middleware is freed")
    func noCycle() {
        weak var weakStore: Store<CounterState>?
        do {
            let pass: Middleware<CounterState> = { _, action, next in next(action) }
            let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [pass])
            store.dispatchAction(CounterAction.increment)
            weakStore = store
        }
        #expect(weakStore == nil)
    }

    @Test("a middleware may dispatch inside dispatches up to StoreLimits.maximumMiddlewareDepth levels")
    func depthAtTheLimit() {
        // .add(n) for n > 1 dispatches .add(n - 1) before passing itself on: .add(64) opens
        // 64 levels, the most allowed.
        let recursing: Middleware<CounterState> = { store, action, next in
            if case .add(let amount)? = action as? CounterAction, amount > 1 {
                store.dispatchAction(CounterAction.add(amount - 1))
            }
            next(action)
        }
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [recursing])
        #expect(StoreLimits.maximumMiddlewareDepth == 64)
        store.dispatchAction(CounterAction.add(64))
        #expect(store.version == 64)
        #expect(store.currentState().count == 2080)  // 1 + 2 + ... + 64
        // The depth is back to 0 afterwards.
        store.dispatchAction(CounterAction.add(64))
        #expect(store.version == 128)
    }

    @Test("a middleware that dispatches without end traps with words, before the stack overflows")
    func depthPastTheLimitTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let recursing: Middleware<CounterState> = { store, action, next in
                store.dispatchAction(action)
                next(action)
            }
            let store = Store(
                reducers: [counterReducer], state: CounterState(), middleware: [recursing])
            store.dispatchAction(CounterAction.increment)
        }
        let words = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(words.contains(
            "ReduxStore: dispatch refused: it would run 65 dispatches inside one another's "
                + "middleware on this thread, past the limit of 64"))
    }

    @Test("actions reducers keep dispatching pass the chain one after the other, not one inside another")
    func longReducerChain() {
        let box = WeakStore<CounterState>()
        let passed = Tally()
        let spy: Middleware<CounterState> = { _, action, next in
            passed.increment()
            next(action)
        }
        // .add(n) for n > 0 dispatches .add(n - 1) from the reducer: a chain of 10,001 actions,
        // far past the depth limit, each dispatched by the one before.
        let reducer: Reducer<CounterState> = { state, action in
            if case .add(let left)? = action as? CounterAction, left > 0 {
                box.store?.dispatchAction(CounterAction.add(left - 1))
            }
            state.count += 1
        }
        let store = Store(reducers: [reducer], state: CounterState(), middleware: [spy])
        box.store = store
        store.dispatchAction(CounterAction.add(10_000))
        #expect(store.version == 10_001)
        #expect(store.currentState().count == 10_001)
        #expect(passed.count == 10_001)
        // And as a batch: its reducers' actions follow it the same way.
        store.dispatchActions([CounterAction.add(3_000), CounterAction.add(0)])
        #expect(store.version == 10_001 + 3_002)
    }

    @Test("actions dispatched by reducers through middleware come FIFO, as without middleware")
    func reducerDispatchOrder() {
        for withMiddleware in [false, true] {
            let seen = Recorder<String>()
            let box = WeakStore<CounterState>()
            let reducer: Reducer<CounterState> = { state, action in
                guard case .note(let text)? = action as? CounterAction else { return }
                seen.append(text)
                if text == "a" {
                    box.store?.dispatchAction(CounterAction.note("b"))
                    box.store?.dispatchAction(CounterAction.note("c"))
                } else if text == "b" {
                    box.store?.dispatchAction(CounterAction.note("d"))
                }
            }
            let pass: Middleware<CounterState> = { _, action, next in next(action) }
            let store = Store(
                reducers: [reducer], state: CounterState(), middleware: withMiddleware ? [pass] : [])
            box.store = store
            store.dispatchAction(CounterAction.note("a"))
            #expect(seen.all == ["a", "b", "c", "d"], "with middleware: \(withMiddleware)")
        }
    }

    @Test("next called on another thread, from a call the middleware waits for: applied, and what its reducer dispatches too")
    func nextOnAnotherThread() {
        let box = WeakStore<CounterState>()
        let elsewhere: Middleware<CounterState> = nextOnAThreadOfItsOwn()
        let reducer: Reducer<CounterState> = { state, action in
            if case .note("spawn")? = action as? CounterAction {
                box.store?.dispatchAction(CounterAction.add(10))
            }
            counterReducer(&state, action)
        }
        let store = Store(reducers: [reducer], state: CounterState(), middleware: [elsewhere])
        box.store = store
        store.dispatchAction(CounterAction.note("spawn"))
        #expect(store.version == 2)
        #expect(store.currentState().count == 10)
    }

    @Test("next called on another thread: what the reducers dispatch is applied FIFO, as with next on the same thread")
    func nextOnAnotherThreadIsFIFO() {
        let box = WeakStore<CounterState>()
        let elsewhere: Middleware<CounterState> = nextOnAThreadOfItsOwn()
        let applied = Recorder<String>()
        let reducer: Reducer<CounterState> = { state, action in
            guard case .note(let note)? = action as? CounterAction else { return }
            applied.append(note)
            switch note {
            case "spawn":
                box.store?.dispatchAction(CounterAction.note("a"))
                box.store?.dispatchAction(CounterAction.note("b"))
            case "a":
                box.store?.dispatchAction(CounterAction.note("a-child"))
            default:
                break
            }
        }
        let store = Store(reducers: [reducer], state: CounterState(), middleware: [elsewhere])
        box.store = store
        store.dispatchAction(CounterAction.note("spawn"))
        #expect(applied.all == ["spawn", "a", "b", "a-child"])
    }

    @Test("what a change listener dispatches during a restore passes the chain FIFO, before restore returns")
    func restoreListenerDispatchesAreFIFO() throws {
        let box = WeakStore<CounterState>()
        let seen = Recorder<String>()
        let applied = Recorder<String>()
        let watch: Middleware<CounterState> = { _, action, next in
            if case .note(let note)? = action as? CounterAction { seen.append(note) }
            next(action)
        }
        let reducer: Reducer<CounterState> = { state, action in
            guard case .note(let note)? = action as? CounterAction else { return }
            applied.append(note)
            state.count += 1
            if note == "a" { box.store?.dispatchAction(CounterAction.note("a-child")) }
        }
        let store = Store(reducers: [reducer], state: CounterState(), middleware: [watch])
        box.store = store
        store.keepHistory(10)
        store.dispatchAction(CounterAction.note("first"))
        // A change feed consumer that dispatches when it sees the restore (as a C listener may).
        store.addChangeListener(key: 1, includingPatches: false) { record in
            guard record.action.identifier == "RDXRestore" else { return }
            box.store?.dispatchAction(CounterAction.note("a"))
            box.store?.dispatchAction(CounterAction.note("b"))
        }
        try store.restore(version: 1)
        #expect(seen.all == ["first", "a", "b", "a-child"])
        #expect(applied.all == ["first", "a", "b", "a-child"])
        #expect(store.version == 5)
        #expect(store.currentState().count == 4)
        store.removeChangeListener(key: 1)
    }

    @Test("a restore from inside the deepest middleware level is refused as a limit and changes nothing")
    func restorePastTheDepthLimit() throws {
        // .add(64) opens 64 levels; at the innermost the middleware asks for a restore.
        let refusal = Recorder<StoreError>()
        let recursing: Middleware<CounterState> = { store, action, next in
            if case .add(let amount)? = action as? CounterAction {
                if amount > 1 {
                    store.dispatchAction(CounterAction.add(amount - 1))
                } else {
                    do throws(StoreError) { try store.restore(version: 1) } catch { refusal.append(error) }
                }
            }
            next(action)
        }
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [recursing])
        store.keepHistory(100)
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.add(64))
        #expect(refusal.all.map(\.kind) == [.limit])
        #expect(refusal.all.first?.message.contains("past the limit of 64") == true)
        #expect(store.version == 65)
        #expect(store.currentState().count == 2081)
        // One level less, the restore runs.
        try store.restore(version: 1)
        #expect(store.version == 66)
        #expect(store.currentState().count == 1)
    }

    @Test("a store made with an empty middleware list behaves as one without")
    func emptyList() {
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [])
        store.dispatchAction(CounterAction.add(2))
        #expect(store.currentState().count == 2)
    }
}
