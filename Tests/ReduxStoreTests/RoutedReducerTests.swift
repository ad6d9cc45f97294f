import ReduxStore
import ReduxStoreTestSupport
import Testing

// Routed reducers (`Reducers`): which reducers an action reaches, in which order, with which
// value; and that a store made from them works as any other (replay, middleware, batches,
// enqueue, nested dispatch, the change feed, history).

/// A state that logs which reducer saw which action.
private struct Counter: Codable, Equatable {
    var count = 0
    var log: [String] = []
}

private struct Increment: Action, Codable, Equatable {
    var by = 1
    var identifier: String { "counter.increment" }
}

private struct Note: Action, Codable, Equatable {
    var text: String
    var identifier: String { "counter.note" }
}

/// Larger than an existential's inline buffer (three words): boxed on the heap inside `any Action`.
private struct Big: Action, Equatable {
    var a = 1, b = 2, c = 3, d = 4, e = 5
    var words = ["x", "y"]
    var identifier: String { "big" }
}

/// A class action: shared by reference.
private final class Shout: Action, @unchecked Sendable {
    let text: String
    init(_ text: String) { self.text = text }
    var identifier: String { "shout" }
}

/// One action type per nesting level (`Nest<Int>`, `Nest<Nest<Int>>`, …): as many types as a
/// test needs.
private struct Nest<Inner: Sendable>: Action {
    var level: Int
    var identifier: String { "nest" }
}

/// An action whose decodes are counted.
private struct CountedAdd: Action, Decodable {
    static let decodes = Tally()
    var amount: Int
    var identifier: String { "counted.add" }

    enum CodingKeys: CodingKey { case amount }

    init(amount: Int) { self.amount = amount }

    init(from decoder: any Decoder) throws {
        Self.decodes.increment()
        amount = try decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .amount)
    }
}

/// Reducers for `Counter`: Increment adds, Note logs, `counter.double` doubles, and `always`
/// logs every identifier.
private func counterReducers(actions: ActionTypes = ActionTypes()) -> Reducers<Counter> {
    var reducers = Reducers<Counter>(actions: actions)
    reducers.on(Increment.self) { state, increment in state.count += increment.by }
    reducers.on(Note.self) { state, note in state.log.append("note \(note.text)") }
    reducers.on(identifier: "counter.double") { state, _ in state.count *= 2 }
    reducers.always { state, action in state.log.append("always \(action.identifier)") }
    return reducers
}

/// The actions typed replay and decoding know.
private var counterActionTypes: ActionTypes {
    var actions = ActionTypes()
    actions.register(Increment.self, for: "counter.increment")
    actions.register(Note.self, for: "counter.note")
    return actions
}

@Suite("Routed reducers: each action reaches the reducers of its type and identifier, in order")
struct RoutedReducerTests {
    // MARK: Which reducers, in which order

    @Test("the reducers an action reaches run in the order they were added, on, on(identifier:) and always mixed")
    func mixedOrder() {
        var reducers = Reducers<Counter>()
        reducers.always { state, action in state.log.append("always 1 \(action.identifier)") }
        reducers.on(Increment.self) { state, _ in state.log.append("typed Increment") }
        reducers.on(identifier: "counter.increment") { state, _ in state.log.append("identifier counter.increment") }
        reducers.on(Note.self) { state, note in state.log.append("typed Note \(note.text)") }
        reducers.always { state, action in state.log.append("always 2 \(action.identifier)") }
        reducers.on(Increment.self) { state, _ in state.log.append("typed Increment again") }
        #expect(reducers.count == 6)
        let store = Store(reducers: reducers, state: Counter())

        store.dispatchAction(Increment())
        store.dispatchAction(Note(text: "hi"))
        store.dispatchAction(JSONAction(identifier: "counter.increment"))
        store.dispatchAction(JSONAction(identifier: "unknown"))

        #expect(store.version == 4)
        #expect(store.currentState().log == [
            "always 1 counter.increment", "typed Increment", "identifier counter.increment",
            "always 2 counter.increment", "typed Increment again",
            "always 1 counter.note", "typed Note hi", "always 2 counter.note",
            "always 1 counter.increment", "identifier counter.increment", "always 2 counter.increment",
            "always 1 unknown", "always 2 unknown",
        ])
    }

    @Test("101 reducers an action reaches, typed and always interleaved, run in the order added")
    func manyReducersInOrder() {
        var reducers = Reducers<Counter>()
        for index in 0..<101 {
            if index % 2 == 0 {
                reducers.always { state, _ in state.log.append("\(index)") }
            } else {
                reducers.on(Increment.self) { state, _ in state.log.append("\(index)") }
                reducers.on(Note.self) { state, _ in state.log.append("note \(index)") }
            }
        }
        let store = Store(reducers: reducers, state: Counter())
        store.dispatchAction(Increment())
        #expect(store.currentState().log == (0..<101).map(String.init))
        store.dispatchAction(JSONAction(identifier: "x"))
        #expect(store.currentState().log.suffix(51) == stride(from: 0, to: 101, by: 2).map(String.init))
    }

    @Test("an on(Type) reducer receives its action typed: values inline, boxed, enums and class instances alike")
    func typedDelivery() {
        var reducers = Reducers<Counter>()
        reducers.on(Increment.self) { state, increment in state.count += increment.by }
        reducers.on(Big.self) { state, big in
            state.count += big.a + big.b + big.c + big.d + big.e
            state.log.append(contentsOf: big.words)
        }
        reducers.on(CounterAction.self) { state, action in
            switch action {
            case .increment: state.count += 1
            case .add(let amount): state.count += amount
            case .note(let text): state.log.append(text)
            }
        }
        reducers.on(Shout.self) { state, shout in state.log.append(shout.text.uppercased()) }
        let store = Store(reducers: reducers, state: Counter())

        store.dispatchAction(Increment(by: 5))
        store.dispatchAction(Big(a: 10, words: ["p", "q", "r"]))
        store.dispatchAction(CounterAction.add(100))
        store.dispatchAction(CounterAction.note("enum"))
        store.dispatchAction(Shout("hey"))

        // 5, then 10 + 2 + 3 + 4 + 5 = 24, then 100.
        #expect(store.currentState() == Counter(count: 129, log: ["p", "q", "r", "enum", "HEY"]))
        #expect(store.version == 5)
    }

    @Test("a reducer of one type never sees another type's actions, nor a JSONAction of the same identifier")
    func onlyItsType() {
        let seen = Recorder<String>()
        var reducers = Reducers<Counter>()
        reducers.on(Increment.self) { _, increment in seen.append("Increment \(increment.by)") }
        let store = Store(reducers: reducers, state: Counter())
        store.dispatchAction(Note(text: "n"))
        store.dispatchAction(JSONAction(identifier: "counter.increment", payload: ["by": 3]))
        store.dispatchAction(Increment(by: 7))
        #expect(seen.all == ["Increment 7"])
        #expect(store.version == 3)
    }

    @Test("on(identifier:) handles JSONActions and typed actions of its identifier; others reach only always")
    func identifierRouting() {
        var reducers = Reducers<Counter>()
        reducers.on(identifier: "counter.double") { state, _ in state.count *= 2 }
        reducers.on(identifier: "counter.increment") { state, action in
            // A typed action of this identifier arrives as its type.
            if let increment = action as? Increment {
                state.count += increment.by
            } else if let json = action as? JSONAction, case .int(let by)? = json.payload {
                state.count += Int(by)
            }
        }
        reducers.on(identifier: "caf\u{E9}") { state, _ in state.log.append("café, composed") }
        reducers.always { state, action in state.log.append("always \(action.identifier)") }
        let store = Store(reducers: reducers, state: Counter())

        store.dispatchAction(Increment(by: 3))                                      // 3
        store.dispatchAction(JSONAction(identifier: "counter.double"))              // 6
        store.dispatchAction(JSONAction(identifier: "counter.increment", payload: 4))  // 10
        store.dispatchAction(JSONAction(identifier: "not.registered"))
        store.dispatchAction(JSONAction(identifier: "cafe\u{301}"))  // Swift calls it equal; code points differ
        store.dispatchAction(JSONAction(identifier: "caf\u{E9}"))

        #expect(store.currentState().count == 10)
        #expect(store.currentState().log == [
            "always counter.increment", "always counter.double", "always counter.increment",
            "always not.registered", "always cafe\u{301}", "café, composed", "always caf\u{E9}",
        ])
    }

    @Test("a typed action whose identifier changes from action to action reaches the reducers of each identifier")
    func identifiersOfOneType() {
        var reducers = Reducers<Counter>()
        reducers.on(identifier: "counter.add") { state, _ in state.log.append("add") }
        reducers.on(CounterAction.self) { state, action in state.log.append("typed \(action.identifier)") }
        reducers.on(identifier: "counter.note") { state, _ in state.log.append("note") }
        let store = Store(reducers: reducers, state: Counter())
        for action in [CounterAction.add(1), .note("a"), .increment, .add(2), .add(3), .note("b")] {
            store.dispatchAction(action)
        }
        #expect(store.currentState().log == [
            "add", "typed counter.add",
            "typed counter.note", "note",
            "typed counter.increment",
            "add", "typed counter.add",
            "add", "typed counter.add",
            "typed counter.note", "note",
        ])
    }

    @Test("a JSONAction of a registered identifier is decoded once and reaches the reducers of its type")
    func registeredJSONAction() {
        var actions = ActionTypes()
        actions.register(CountedAdd.self, for: "counted.add")
        var reducers = Reducers<Counter>(actions: actions)
        reducers.on(CountedAdd.self) { state, add in state.count += add.amount }
        reducers.on(identifier: "counted.add") { state, action in
            state.log.append("identifier sees \(type(of: action))")
        }
        reducers.on(CountedAdd.self) { state, add in state.log.append("second typed \(add.amount)") }
        reducers.always { state, action in state.log.append("always sees \(type(of: action))") }
        let store = Store(reducers: reducers, state: Counter())
        let before = CountedAdd.decodes.count

        store.dispatchAction(JSONAction(identifier: "counted.add", payload: ["amount": 7]))

        #expect(CountedAdd.decodes.count - before == 1, "one decode, however many reducers")
        #expect(store.currentState() == Counter(count: 7, log: [
            "identifier sees CountedAdd", "second typed 7", "always sees CountedAdd",
        ]))
        #expect(store.version == 1)
    }

    @Test("a registered JSONAction whose payload does not decode is routed as a JSONAction, by its identifier")
    func undecodableJSONAction() {
        var reducers = counterReducers(actions: counterActionTypes)
        reducers.on(identifier: "counter.increment") { state, action in
            state.log.append("identifier sees \(type(of: action))")
        }
        let store = Store(reducers: reducers, state: Counter())
        store.dispatchAction(JSONAction(identifier: "counter.increment", payload: ["by": "three"]))
        store.dispatchAction(JSONAction(identifier: "counter.increment", payload: ["by": 3]))
        #expect(store.currentState() == Counter(count: 3, log: [
            "always counter.increment", "identifier sees JSONAction",
            "always counter.increment", "identifier sees Increment",
        ]))
    }

    @Test("always reducers see every action: typed, JSON, unknown types, batch members, nested and enqueued ones")
    func alwaysSeesEverything() {
        let box = WeakStore<Counter>()
        var reducers = Reducers<Counter>()
        reducers.always { state, action in state.log.append(action.identifier) }
        reducers.on(Note.self) { _, note in
            if note.text == "nest" { box.store?.dispatchAction(JSONAction(identifier: "nested")) }
        }
        let store = Store(reducers: reducers, state: Counter())
        box.store = store
        store.dispatchAction(Increment())
        store.dispatchAction(JSONAction(identifier: "json"))
        store.dispatchAction(CounterAction.increment)
        store.dispatchActions([Note(text: "a"), JSONAction(identifier: "in.batch")])
        store.dispatchAction(Note(text: "nest"))
        store.enqueueAction(Big())
        store.flush()
        #expect(store.currentState().log == [
            "counter.increment", "json", "counter.increment", "counter.note", "in.batch",
            "counter.note", "nested", "big",
        ])
        #expect(store.version == 8)
    }

    @Test("an action no reducer handles is applied all the same: a version, a notification")
    func unhandled() {
        var reducers = Reducers<Counter>()
        reducers.on(Increment.self) { state, _ in state.count += 1 }
        let store = Store(reducers: reducers, state: Counter())
        let told = Recorder<String>()
        store.addObserver { told.append("\($0.version) \($0.actionIdentifier)") }
        store.dispatchAction(Note(text: "nobody"))
        store.dispatchAction(Increment())
        #expect(told.all == ["1 counter.note", "2 counter.increment"])
        #expect(store.currentState().count == 1)
    }

    @Test("40 action types, more than the table's first size: each reaches its own reducer")
    func manyTypes() {
        var reducers = Reducers<Counter>()
        var actions: [any Action] = []
        func add<T: Sendable>(_: T.Type, level: Int) {
            guard level < 40 else { return }
            reducers.on(Nest<T>.self) { state, nest in state.log.append("\(nest.level)") }
            actions.append(Nest<T>(level: level))
            add(Nest<T>.self, level: level + 1)
        }
        add(Int.self, level: 0)
        let store = Store(reducers: reducers, state: Counter())
        for action in actions.reversed() { store.dispatchAction(action) }
        for action in actions { store.dispatchAction(action) }
        let expected = (0..<40).map(String.init)
        #expect(store.currentState().log == expected.reversed() + expected)
    }

    @Test("a class state (ReduxObjC's shape): routed reducers mutate it in place and may read the store")
    func classState() {
        let box = WeakStore<CounterState>()
        let reads = Recorder<String>()
        var reducers = Reducers<CounterState>()
        reducers.on(CounterAction.self) { state, action in
            if case .add(let amount) = action { state.count += amount }
        }
        reducers.always { state, _ in
            guard let store = box.store else { return }
            reads.append("count \(state.count), read \(store.currentState().count), version \(store.version)")
        }
        let store = Store(reducers: reducers, state: CounterState())
        box.store = store
        store.dispatchAction(CounterAction.add(2))
        store.dispatchAction(CounterAction.add(3))
        #expect(store.currentState().count == 5)
        #expect(reads.all == ["count 2, read 2, version 0", "count 5, read 5, version 1"])
    }

    @Test("8 threads dispatching 6 action types, some for the first time at once: none lost")
    func threads() {
        var reducers = Reducers<Counter>()
        reducers.on(Increment.self) { state, increment in state.count += increment.by }
        reducers.on(CounterAction.self) { state, _ in state.count += 1 }
        reducers.on(Big.self) { state, big in state.count += big.a }
        reducers.on(identifier: "json.add") { state, _ in state.count += 1 }
        reducers.always { state, _ in state.log.append("") }
        let store = Store(reducers: reducers, state: Counter())
        onThreads(8) { index in
            for round in 0..<1_000 {
                switch (index + round) % 6 {
                case 0: store.dispatchAction(Increment())
                case 1: store.dispatchAction(CounterAction.increment)
                case 2: store.dispatchAction(Big())
                case 3: store.dispatchAction(JSONAction(identifier: "json.add"))
                case 4: store.dispatchAction(Note(text: "ignored"))
                default: store.dispatchAction(Nest<String>(level: 0))
                }
            }
        }
        // Four of the six kinds count 1 (Note and Nest reach only `always`).
        let counting = (0..<8).reduce(0) { total, index in
            total + (0..<1_000).filter { ($0 + index) % 6 < 4 }.count
        }
        #expect(counting == 5_335)
        #expect(store.currentState().count == 5_335)
        #expect(store.currentState().log.count == 8_000)
        #expect(store.version == 8_000)
    }

    @Test("Reducers is a value: reducers added after a store was made do not reach that store")
    func valueSemantics() {
        var reducers = Reducers<Counter>()
        reducers.on(Increment.self) { state, _ in state.count += 1 }
        let first = Store(reducers: reducers, state: Counter())
        reducers.on(Increment.self) { state, _ in state.count += 10 }
        let second = Store(reducers: reducers, state: Counter())
        first.dispatchAction(Increment())
        second.dispatchAction(Increment())
        #expect(first.currentState().count == 1)
        #expect(second.currentState().count == 11)
    }

    // MARK: The store's other features, with routed reducers

    @Test("a journal of a routed store replays into the same state, typed, JSON and batch entries alike")
    func replay() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: counterReducers(), state: Counter())
        try store.startJournal(at: path)
        store.dispatchAction(Increment(by: 2))
        store.dispatchAction(JSONAction(identifier: "counter.double"))
        store.dispatchActions([Note(text: "a"), Increment(by: 1)])
        store.dispatchAction(JSONAction(identifier: "other", payload: ["x": 1]))
        store.stopJournal()
        #expect(store.currentState() == Counter(count: 5, log: [
            "always counter.increment", "always counter.double", "note a", "always counter.note",
            "always counter.increment", "always other",
        ]))

        let replayed = try Store(
            replaying: path, from: Counter(), reducers: counterReducers(), actions: counterActionTypes)
        #expect(replayed.version == 5)
        #expect(replayed.currentState() == store.currentState())
        let partial = try Store(
            replaying: path, from: Counter(), reducers: counterReducers(), actions: counterActionTypes,
            through: 2)
        #expect(partial.currentState() == Counter(count: 4, log: ["always counter.increment", "always counter.double"]))
    }

    @Test("replay with types the routed reducers decode: entries that replay leaves as JSONActions are routed by type")
    func replayDecodedByReducers() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: counterReducers(), state: Counter())
        try store.startJournal(at: path)
        store.dispatchAction(JSONAction(identifier: "counter.increment", payload: ["by": 4]))
        store.stopJournal()
        #expect(store.currentState().count == 0, "no types registered: a JSONAction reaches no typed reducer")
        // Replay registers nothing; the reducers register Increment.
        let replayed = try Store(
            replaying: path, from: Counter(), reducers: counterReducers(actions: counterActionTypes),
            actions: ActionTypes())
        #expect(replayed.currentState() == Counter(count: 4, log: ["always counter.increment"]))
    }

    @Test("middleware sees every action first; the routed reducers see what it passes on")
    func middleware() {
        let seen = Recorder<String>()
        let middleware: Middleware<Counter> = { _, action, next in
            seen.append(action.identifier)
            if let note = action as? Note, note.text == "drop" { return }
            if let json = action as? JSONAction, json.identifier == "make.increment" {
                next(Increment(by: 10))
                return
            }
            next(action)
        }
        let store = Store(reducers: counterReducers(), state: Counter(), middleware: [middleware])
        store.dispatchAction(Note(text: "drop"))
        store.dispatchAction(JSONAction(identifier: "make.increment"))
        store.dispatchAction(Note(text: "kept"))
        #expect(seen.all == ["counter.note", "make.increment", "counter.note"])
        #expect(store.version == 2)
        #expect(store.currentState() == Counter(count: 10, log: [
            "always counter.increment", "note kept", "always counter.note",
        ]))
    }

    @Test("a batch is applied as one: each action routed, the version grown by its length, one notification")
    func batch() {
        let store = Store(reducers: counterReducers(), state: Counter())
        let told = Recorder<UInt64>()
        store.addObserver { told.append($0.version) }
        store.dispatchActions([Increment(by: 3), JSONAction(identifier: "counter.double"), Note(text: "b")])
        #expect(store.version == 3)
        #expect(told.all == [3])
        #expect(store.currentState() == Counter(count: 6, log: [
            "always counter.increment", "always counter.double", "note b", "always counter.note",
        ]))
    }

    @Test("enqueued actions from 4 threads are all applied, in each thread's order, by flush")
    func enqueue() {
        var reducers = Reducers<Counter>()
        reducers.on(Note.self) { state, note in state.log.append(note.text) }
        reducers.on(Increment.self) { state, increment in state.count += increment.by }
        let store = Store(reducers: reducers, state: Counter())
        onThreads(4) { index in
            for round in 0..<250 {
                store.enqueueAction(Increment(by: 1))
                if round % 50 == 0 { store.enqueueAction(Note(text: "\(index).\(round)")) }
            }
        }
        store.flush()
        let state = store.currentState()
        #expect(state.count == 1_000)
        #expect(store.version == 1_020)
        for index in 0..<4 {
            let mine = state.log.filter { $0.hasPrefix("\(index).") }
            #expect(mine == [0, 50, 100, 150, 200].map { "\(index).\($0)" })
        }
    }

    @Test("an action dispatched inside a routed reducer is applied right after the current one, FIFO")
    func nestedDispatch() {
        let box = WeakStore<Counter>()
        var reducers = Reducers<Counter>()
        reducers.on(Increment.self) { state, increment in
            state.log.append("increment \(increment.by)")
            if increment.by == 1 {
                box.store?.dispatchAction(Note(text: "first"))
                box.store?.dispatchAction(JSONAction(identifier: "counter.double"))
                state.log.append("increment done")
            }
        }
        reducers.on(Note.self) { state, note in state.log.append("note \(note.text)") }
        reducers.on(identifier: "counter.double") { state, _ in state.log.append("double") }
        let store = Store(reducers: reducers, state: Counter())
        box.store = store
        let told = Recorder<String>()
        store.addObserver { told.append("\($0.version) \($0.actionIdentifier)") }
        store.dispatchAction(Increment(by: 1))
        store.dispatchAction(Increment(by: 2))
        #expect(store.currentState().log == [
            "increment 1", "increment done", "note first", "double", "increment 2",
        ])
        #expect(told.all == ["1 counter.increment", "2 counter.note", "3 counter.double", "4 counter.increment"])
    }

    @Test("the change feed records each action of a routed store once, as dispatched, in version order")
    func changeFeed() async {
        let store = Store(reducers: counterReducers(actions: counterActionTypes), state: Counter())
        let feed = store.changes()
        store.dispatchAction(Increment(by: 2))
        store.dispatchAction(JSONAction(identifier: "counter.increment", payload: ["by": 5]))
        store.dispatchActions([Note(text: "n"), JSONAction(identifier: "counter.double")])
        var changes: [StoreChange] = []
        for await change in feed {
            changes.append(change)
            if changes.count == 4 { break }
        }
        #expect(changes.map(\.version) == [1, 2, 3, 4])
        #expect(changes.map(\.identifier) == [
            "counter.increment", "counter.increment", "counter.note", "counter.double",
        ])
        #expect(changes[0].payload == ["by": 2])
        #expect(changes[1].payload == ["by": 5], "the JSONAction as dispatched, not its decoded twin")
        #expect(changes[2].batch == 3...4)
        #expect(store.currentState().count == 14)
    }

    @Test("history and restore work on a routed store; routing goes on after a restore")
    func historyRestore() throws {
        let store = Store(reducers: counterReducers(), state: Counter())
        store.keepHistory(10)
        store.dispatchAction(Increment(by: 5))
        store.dispatchAction(Note(text: "kept"))
        store.dispatchAction(JSONAction(identifier: "counter.double"))
        #expect(store.currentState().count == 10)
        let told = Recorder<String>()
        store.addObserver { told.append("\($0.version) \($0.actionIdentifier)") }

        try store.restore(version: 1)
        #expect(store.version == 4)
        #expect(store.currentState() == Counter(count: 5, log: ["always counter.increment"]))
        store.dispatchAction(Increment(by: 1))
        #expect(store.currentState() == Counter(count: 6, log: ["always counter.increment", "always counter.increment"]))
        #expect(told.all == ["4 RDXRestore", "5 counter.increment"])
        #expect(store.historyVersions.last == 5)
    }

    @Test("a saved routed store opens with routed reducers, at its version")
    func saveAndOpen() throws {
        let path = temporaryFolder() + "/state.json"
        let store = Store(reducers: counterReducers(), state: Counter())
        store.dispatchAction(Increment(by: 3))
        try store.save(to: path)
        let opened = try Store(contentsOf: path, reducers: counterReducers())
        #expect(opened.version == 1)
        opened.dispatchAction(JSONAction(identifier: "counter.double"))
        #expect(opened.currentState() == Counter(count: 6, log: ["always counter.increment", "always counter.double"]))
    }
}
