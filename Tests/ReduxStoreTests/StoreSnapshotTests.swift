import ReduxStore
import ReduxStoreTestSupport
import Synchronization
import Testing

/// Counts how often the state is encoded and decoded.
private let encodeCount = Atomic<Int>(0)
private let decodeCount = Atomic<Int>(0)

private struct CountingState: Codable {
    var value: Int
    init(value: Int) { self.value = value }
    init(from decoder: any Decoder) throws {
        decodeCount.wrappingAdd(1, ordering: .relaxed)
        value = try decoder.singleValueContainer().decode(Int.self)
    }
    func encode(to encoder: any Encoder) throws {
        encodeCount.wrappingAdd(1, ordering: .relaxed)
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// A state whose two halves the reducer always keeps equal: a torn copy would differ.
private final class Pair: Codable, @unchecked Sendable {
    var left: [Int] = []
    var right: [Int] = []
}

private struct Failing: Codable {
    init() {}
    init(from decoder: any Decoder) throws {}
    func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(0, .init(codingPath: [], debugDescription: "refused"))
    }
}

@Suite("Snapshots: deep copies by Codable round trip", .serialized)
struct StoreSnapshotTests {
    @Test("currentState() is a deep copy: changing it never reaches the store")
    func deepCopy() {
        let store = Store(reducers: [counterReducer], state: CounterState(count: 1, log: ["a"]))
        let copy = store.currentState()
        copy.count = 100
        copy.log.append("mine")
        let again = store.currentState()
        #expect(again.count == 1)
        #expect(again.log == ["a"])
        #expect(copy !== again)
    }

    @Test("a copy is not reached by later actions")
    func laterActions() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        store.dispatchAction(CounterAction.increment)
        let copy = store.currentState()
        store.dispatchAction(CounterAction.add(5))
        #expect(copy.count == 1)
        #expect(store.currentState().count == 6)
    }

    @Test("N readers after one action cost one encode and N decodes")
    func encodeOncePerVersion() {
        let store = Store(reducers: [{ state, _ in state.value += 1 }], state: CountingState(value: 0))
        store.dispatchAction(CounterAction.increment)
        let encodesBefore = encodeCount.load(ordering: .relaxed)
        let decodesBefore = decodeCount.load(ordering: .relaxed)
        for _ in 0..<10 { #expect(store.currentState().value == 1) }
        #expect(encodeCount.load(ordering: .relaxed) - encodesBefore == 1)
        #expect(decodeCount.load(ordering: .relaxed) - decodesBefore == 10)

        store.dispatchAction(CounterAction.increment)
        #expect(store.currentState().value == 2)
        #expect(encodeCount.load(ordering: .relaxed) - encodesBefore == 2)
        #expect(decodeCount.load(ordering: .relaxed) - decodesBefore == 11)
    }

    @Test("snapshots taken while 4 threads dispatch are never torn; a JSON snapshot is the state at its version")
    func neverTorn() throws {
        let reducer: Reducer<Pair> = { state, _ in
            state.left.append(state.left.count)
            state.right.append(state.right.count)
        }
        let store = Store(reducers: [reducer], state: Pair())
        let torn = Tally()
        let taken = Tally()
        onThreads(6) { index in
            if index < 4 {
                for _ in 0..<500 { store.dispatchAction(CounterAction.increment) }
            } else if index == 4 {
                for _ in 0..<200 {
                    let copy = store.currentState()
                    if copy.left != copy.right { torn.increment() }
                    taken.increment()
                }
            } else {
                // jsonSnapshot(): the value and the version it comes with are read at one instant.
                for _ in 0..<200 {
                    guard let (version, value) = try? store.jsonSnapshot(),
                          case .object(let members) = value, case .array(let left)? = members["left"],
                          case .array(let right)? = members["right"], left == right, left.count == Int(version)
                    else {
                        torn.increment()
                        continue
                    }
                    taken.increment()
                }
            }
        }
        #expect(torn.count == 0)
        #expect(taken.count == 400)
        #expect(store.currentState().left.count == 2_000)
        let (version, value) = try store.jsonSnapshot()
        let expected = try JSONValue(encoding: store.currentState())
        #expect(version == 2_000 && value == expected)
    }

    @Test("a state whose Codable fails: snapshot() throws a StoreError")
    func failingState() {
        let store = Store(reducers: [], state: Failing())
        let error = #expect(throws: StoreError.self) { try store.snapshot() }
        #expect(error?.kind == .encode)
        #expect(error?.message == "refused")
    }
}

@Suite("Enqueue: non-blocking dispatch in the same total order")
struct StoreEnqueueTests {
    @Test("enqueueAction returns at once; flush waits until it was applied")
    func returnsAtOnce() {
        let gate = Flag()
        let reducer: Reducer<CounterState> = { state, _ in
            _ = gate.wait()
            state.count += 1
        }
        let store = Store(reducers: [reducer], state: CounterState())
        store.enqueueAction(CounterAction.increment)
        #expect(store.version == 0)
        gate.raise()
        store.flush()
        #expect(store.version == 1)
        #expect(store.currentState().count == 1)
    }

    @Test("enqueued actions are applied in order, with their observers, before flush returns")
    func order() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        let heard = Tally()
        store.addObserver { _ in heard.increment() }
        for index in 0..<500 { store.enqueueAction(CounterAction.note("\(index)")) }
        store.flush()
        #expect(store.currentState().log == (0..<500).map { "\($0)" })
        #expect(heard.count == 500)
        #expect(store.version == 500)
    }

    @Test("enqueue and dispatch from several threads: one total order, none lost")
    func mixed() {
        let store = Store(reducers: [counterReducer], state: CounterState())
        onThreads(4) { index in
            for _ in 0..<1_000 {
                if index % 2 == 0 {
                    store.enqueueAction(CounterAction.increment)
                } else {
                    store.dispatchAction(CounterAction.increment)
                }
            }
        }
        store.flush()
        #expect(store.currentState().count == 4_000)
        #expect(store.version == 4_000)
    }

    @Test("flush from an observer of an enqueued action applies the rest instead of deadlocking")
    func flushFromObserver() {
        let box = StoreBox()
        let allEnqueued = Flag()
        // The first action waits until all three are enqueued, so the observer's flush has two
        // more to apply.
        let reducer: Reducer<CounterState> = { state, _ in
            if state.count == 0 { _ = allEnqueued.wait() }
            state.count += 1
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        let seenAfterFlush = Recorder<UInt64>()
        store.addObserver { note in
            if note.version == 1 {
                box.store!.flush()
                seenAfterFlush.append(box.store!.version)
            }
        }
        for _ in 0..<3 { store.enqueueAction(CounterAction.increment) }
        allEnqueued.raise()
        store.flush()
        #expect(seenAfterFlush.all == [3])
        #expect(store.version == 3)
        box.store = nil
    }

    @Test("flush inside a reducer returns at once")
    func flushInsideReducer() {
        let box = StoreBox()
        let reducer: Reducer<CounterState> = { state, _ in
            box.store!.flush()
            state.count += 1
        }
        let store = Store(reducers: [reducer], state: CounterState())
        box.store = store
        store.enqueueAction(CounterAction.increment)
        store.dispatchAction(CounterAction.increment)
        store.flush()
        #expect(store.currentState().count == 2)
        box.store = nil
    }
}
