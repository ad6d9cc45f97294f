import Dispatch
import ReduxStore
import ReduxStoreTestSupport
import Testing

/// Lets a reducer or observer reach the store it belongs to.
final class StoreBox: @unchecked Sendable {
    var store: Store<CounterState>?
    var tokens: [String: ObserverToken] = [:]
}

@Suite("Observers: NotificationCenter-style registry")
struct StoreObserverTests {
    @Test("the notification name is RDXStateDidChangeNotification")
    func name() {
        #expect(StoreNotification.Name.stateDidChange.rawValue == "RDXStateDidChangeNotification")
    }

    @Test("a synchronous observer hears each action once, in order, before dispatch returns")
    func synchronousOnce() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let heard = Recorder<String>()
        store.addObserver { heard.append("\($0.name.rawValue) \($0.version) \($0.actionIdentifier)") }
        store.dispatchAction(CounterAction.increment)
        #expect(heard.all == ["RDXStateDidChangeNotification 1 counter.increment"])
        store.dispatchAction(CounterAction.add(2))
        #expect(heard.all == [
            "RDXStateDidChangeNotification 1 counter.increment",
            "RDXStateDidChangeNotification 2 counter.add",
        ])
    }

    @Test("observers are called in the order they were added; a new one is not called at once")
    func order() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let heard = Recorder<String>()
        for name in ["a", "b", "c"] {
            store.addObserver { heard.append("\(name)\($0.version)") }
        }
        #expect(heard.all == [])
        store.dispatchAction(CounterAction.increment)
        #expect(heard.all == ["a1", "b1", "c1"])
    }

    @Test("an observer for another name never hears stateDidChange")
    func otherName() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let heard = Tally()
        store.addObserver(forName: StoreNotification.Name("Other")) { _ in heard.increment() }
        store.dispatchAction(CounterAction.increment)
        #expect(heard.count == 0)
    }

    @Test("observers run after the lock is released: they may read and dispatch")
    func observerReadsAndDispatches() {
        let box = StoreBox()
        let store = Store(reducers: [counterReducer], state: CounterState())
        box.store = store
        let heard = Recorder<String>()
        store.addObserver { note in
            let count = box.store!.currentState().count
            heard.append("v\(note.version) count \(count)")
            if note.version == 1 { box.store!.dispatchAction(CounterAction.add(10)) }
        }
        store.dispatchAction(CounterAction.increment)
        #expect(heard.all == ["v1 count 1", "v2 count 11"])
        #expect(store.version == 2)
        box.store = nil
    }

    @Test("an action dispatched from a notification is notified after the current round, in version order")
    func dispatchFromNotification() {
        let box = StoreBox()
        let store = Store(reducers: [counterReducer], state: CounterState())
        box.store = store
        let heard = Recorder<String>()
        store.addObserver { note in
            heard.append("A\(note.version)")
            if note.version == 1 { box.store!.dispatchAction(CounterAction.increment) }
        }
        store.addObserver { note in heard.append("B\(note.version)") }
        store.dispatchAction(CounterAction.increment)
        #expect(heard.all == ["A1", "B1", "A2", "B2"])
        box.store = nil
    }

    @Test("actions dispatched inside a reducer are notified right after, in version order")
    func nestedNotifications() {
        let box = StoreBox()
        let reducer: Reducer<CounterState> = { state, action in
            if case .note("parent")? = action as? CounterAction {
                box.store!.dispatchAction(CounterAction.note("child"))
            }
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        let heard = Recorder<String>()
        store.addObserver { heard.append("A\($0.version) \($0.actionIdentifier)") }
        store.addObserver { heard.append("B\($0.version)") }
        store.dispatchAction(CounterAction.note("parent"))
        #expect(heard.all == ["A1 counter.note", "B1", "A2 counter.note", "B2"])
        box.store = nil
    }

    @Test("an observer added during a notification first hears the next action")
    func addedDuringNotification() {
        let box = StoreBox()
        let store = Store(reducers: [counterReducer], state: CounterState())
        box.store = store
        let heard = Recorder<String>()
        store.addObserver { note in
            heard.append("first\(note.version)")
            if note.version == 1 {
                box.store!.addObserver { heard.append("late\($0.version)") }
            }
        }
        store.dispatchAction(CounterAction.increment)
        #expect(heard.all == ["first1"])
        store.dispatchAction(CounterAction.increment)
        #expect(heard.all == ["first1", "first2", "late2"])
        box.store = nil
    }

    @Test("an observer added inside a reducer first hears the next action")
    func addedInsideReducer() {
        let box = StoreBox()
        let heard = Recorder<String>()
        let reducer: Reducer<CounterState> = { _, action in
            if case .note("add")? = action as? CounterAction {
                box.store!.addObserver { heard.append("added\($0.version)") }
            }
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        store.dispatchAction(CounterAction.note("add"))
        #expect(heard.all == [])
        store.dispatchAction(CounterAction.increment)
        #expect(heard.all == ["added2"])
        box.store = nil
    }

    @Test("an observer removed inside a reducer is not told of that action")
    func removedInsideReducer() {
        let box = StoreBox()
        let heard = Recorder<String>()
        let reducer: Reducer<CounterState> = { _, action in
            if case .note("remove")? = action as? CounterAction {
                #expect(box.store!.removeObserver(box.tokens["x"]!) == true)
            }
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        box.tokens["x"] = store.addObserver { heard.append("x\($0.version)") }
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.note("remove"))
        store.dispatchAction(CounterAction.increment)
        #expect(heard.all == ["x1"])
        box.store = nil
    }

    @Test("an observer may remove itself, and others, during a notification")
    func removeDuringNotification() {
        let box = StoreBox()
        let store = Store(reducers: [counterReducer], state: CounterState())
        box.store = store
        let heard = Recorder<String>()
        box.tokens["a"] = store.addObserver { note in
            heard.append("a\(note.version)")
            #expect(box.store!.removeObserver(box.tokens["a"]!) == true)
            #expect(box.store!.removeObserver(box.tokens["b"]!) == true)
        }
        box.tokens["b"] = store.addObserver { heard.append("b\($0.version)") }
        store.addObserver { heard.append("c\($0.version)") }
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.increment)
        #expect(heard.all == ["a1", "c1", "c2"])
        #expect(store.observerCount == 1)
        box.store = nil
    }

    @Test("removing an unknown or already removed token returns false and changes nothing")
    func removeUnknown() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let other = Store(reducers: [counterReducer], state: CounterState())
        let heard = Tally()
        let token = store.addObserver { _ in heard.increment() }
        #expect(other.removeObserver(token) == false)
        store.dispatchAction(CounterAction.increment)
        #expect(store.removeObserver(token) == true)
        #expect(store.removeObserver(token) == false)
        store.dispatchAction(CounterAction.increment)
        #expect(heard.count == 1)
        #expect(store.version == 2)
    }

    @Test("dropping the token does not remove the observer; tokens are distinct and hashable")
    func tokens() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let heard = Tally()
        _ = store.addObserver { _ in heard.increment() }
        let second = store.addObserver { _ in }
        let third = store.addObserver { _ in }
        #expect(Set([second, third]).count == 2)
        store.dispatchAction(CounterAction.increment)
        #expect(heard.count == 1)
    }

    @Test("removal waits for a call running on another thread")
    func removalWaits() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let started = Flag()
        let finished = Flag()
        let token = store.addObserver { _ in
            started.raise()
            sleepBriefly(milliseconds: 200)
            finished.raise()
        }
        let dispatcher = Flag()
        DispatchQueue.global().async {
            store.dispatchAction(CounterAction.increment)
            dispatcher.raise()
        }
        #expect(started.wait())
        #expect(store.removeObserver(token) == true)
        #expect(finished.isRaised)
        #expect(dispatcher.wait())
    }

    @Test("a queued observer hears on its queue, coalesced, and always the newest version")
    func queuedCoalesced() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let queue = DispatchQueue(label: "test.observer")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let versions = Recorder<UInt64>()
        let onQueue = Recorder<Bool>()
        store.addObserver(queue: queue) { note in
            onQueue.append(DispatchQueue.getSpecific(key: key) == 7)
            versions.append(note.version)
        }
        queue.async { sleepBriefly(milliseconds: 50) }  // hold the queue so the burst coalesces
        for _ in 0..<1_000 { store.dispatchAction(CounterAction.increment) }
        queue.sync {}
        queue.sync {}
        let seen = versions.all
        #expect(seen.last == 1_000)
        #expect(seen.count >= 1)
        #expect(seen.count < 1_000)
        #expect(seen == seen.sorted())
        #expect(onQueue.all.allSatisfy { $0 })
    }

    @Test("a removed queued observer is not called for notifications still pending")
    func queuedRemoved() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let queue = DispatchQueue(label: "test.removed")
        let heard = Tally()
        let token = store.addObserver(queue: queue) { _ in heard.increment() }
        let gate = Flag()
        queue.async { _ = gate.wait() }
        store.dispatchAction(CounterAction.increment)
        #expect(store.removeObserver(token) == true)
        gate.raise()
        queue.sync {}
        #expect(heard.count == 0)
    }

    @Test("a queued notification still pending when the store is released is delivered, safely")
    func queuedAfterRelease() {
        let queue = DispatchQueue(label: "test.released")
        let gate = Flag()
        queue.async { _ = gate.wait() }
        let heard = Recorder<UInt64>()
        weak var released: Store<CounterState>?
        do {
            let store = Store(reducers: [counterReducer], state: CounterState())
            released = store
            store.addObserver(queue: queue) { heard.append($0.version) }
            store.dispatchAction(CounterAction.increment)
        }
        #expect(released == nil)
        gate.raise()
        queue.sync {}
        #expect(heard.all == [1])
    }

    @Test("notifications() is an async sequence of the store's notifications")
    func asyncSequence() async {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let stream = store.notifications(bufferingPolicy: .unbounded)
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.increment)
        var versions: [UInt64] = []
        for await note in stream {
            versions.append(note.version)
            if versions.count == 2 { break }
        }
        #expect(versions == [1, 2])
    }

    @Test("observers added and removed on many threads while others dispatch: no lost update")
    func churn() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let heard = Tally()
        onThreads(6) { index in
            if index < 4 {
                for _ in 0..<2_000 { store.dispatchAction(CounterAction.increment) }
            } else {
                for _ in 0..<300 {
                    let token = store.addObserver { _ in heard.increment() }
                    store.removeObserver(token)
                }
            }
        }
        #expect(store.currentState().count == 8_000)
        #expect(store.observerCount == 0)
    }
}
