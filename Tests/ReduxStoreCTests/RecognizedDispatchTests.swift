import CJSONC
import CReduxStoreAPI
import ReduxStore
import ReduxStoreC
import ReduxStoreTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A payload-less action of a registered type without stored properties.
private struct Ping: Action, Decodable {
    var identifier: String { "ping" }
}

/// Counts its calls by the context's slot: `counts[context]`.
private let counts = InlineArray<4, Atomic<Int>> { _ in Atomic(0) }

private let countingReduce: @convention(c) (
    OpaquePointer?, UnsafePointer<CChar>?, OpaquePointer?, UnsafeMutableRawPointer?
) -> Void = { _, _, _, context in
    counts[Int(bitPattern: context)].add(1, ordering: .relaxed)
}

/// Calls by identifier of the store whose reducer takes every action: "inc", "dec", other (its
/// own counters: the suite's tests run at once).
private let byIdentifier = InlineArray<3, Atomic<Int>> { _ in Atomic(0) }

/// `text` as a NUL-terminated buffer of its own, at an address no other thread writes.
private func buffer(_ text: String) -> UnsafeMutablePointer<CChar> {
    strdup(text)!
}

/// A C store of `reducers` over an empty object.
private func cStore(_ reducers: [rdx_reducer]) -> StoreHandle? {
    var reducers = reducers
    let initial = json_object_new_object()
    var status = RDX_EIO
    let store = rdx_store_create(initial, &reducers, reducers.count, &status)
    json_object_put(initial)
    #expect(status == RDX_OK)
    return store.map(StoreHandle.init)
}

/// Dispatches without a payload from 4 threads, `rounds` each: each thread writes
/// `identifier(thread, round)` into the next of its own `buffers` buffers and dispatches from it.
private func dispatchFromThreads(
    _ store: StoreHandle, rounds: Int, buffers: Int = 1, _ identifier: @escaping @Sendable (Int, Int) -> String
) {
    onThreads(4) { thread in
        let mine = (0..<buffers).map { _ in UnsafeMutablePointer<CChar>.allocate(capacity: 64) }
        defer { mine.forEach { $0.deallocate() } }
        for round in 0..<rounds {
            let target = mine[round % buffers]
            let text = identifier(thread, round)
            precondition(text.utf8.count < 64)
            strcpy(target, text)
            precondition(rdx_store_dispatch_action(store.pointer, target, nil) == RDX_OK)
        }
    }
}

@Suite("C dispatches recognized once, from many threads")
struct RecognizedDispatchTests {
    @Test("a C store's routed identifiers, dispatched from 4 threads whose buffers change bytes: each action reaches its own reducers")
    func routedFromThreads() {
        for slot in 0..<4 { counts[slot].store(0, ordering: .relaxed) }
        let names = ["add", "remove"].map(buffer)
        defer { names.forEach { free($0) } }
        guard let store = cStore([
            rdx_reducer(reduce: countingReduce, context: UnsafeMutableRawPointer(bitPattern: 1), identifier: names[0]),
            rdx_reducer(reduce: countingReduce, context: UnsafeMutableRawPointer(bitPattern: 2), identifier: names[1]),
            rdx_reducer(reduce: countingReduce, context: UnsafeMutableRawPointer(bitPattern: 3), identifier: nil),
        ]) else { return }
        defer { rdx_store_release(store.pointer) }
        let rounds = 2_000
        // Each thread's own buffer, its bytes turning from one identifier to another.
        dispatchFromThreads(store, rounds: rounds) { thread, round in
            round.isMultiple(of: 2) ? "add" : (thread == 0 ? "other" : "remove")
        }
        #expect(counts[1].load(ordering: .relaxed) == 4 * rounds / 2)
        #expect(counts[2].load(ordering: .relaxed) == 3 * rounds / 2)
        #expect(counts[3].load(ordering: .relaxed) == 4 * rounds)
        #expect(rdx_store_version(store.pointer) == UInt64(4 * rounds))
    }

    @Test("a C store whose reducer takes every action, dispatched from 4 threads whose buffers change bytes: the reducer sees each action's own identifier")
    func unroutedFromThreads() {
        for slot in 0..<3 { byIdentifier[slot].store(0, ordering: .relaxed) }
        let byName: @convention(c) (
            OpaquePointer?, UnsafePointer<CChar>?, OpaquePointer?, UnsafeMutableRawPointer?
        ) -> Void = { _, identifier, _, _ in
            let slot = strcmp(identifier!, "inc") == 0 ? 0 : strcmp(identifier!, "dec") == 0 ? 1 : 2
            byIdentifier[slot].add(1, ordering: .relaxed)
        }
        guard let store = cStore([rdx_reducer(reduce: byName, context: nil, identifier: nil)]) else { return }
        defer { rdx_store_release(store.pointer) }
        let rounds = 2_000
        // More buffers than the store keeps identifiers, their bytes turning.
        dispatchFromThreads(store, rounds: rounds, buffers: 3) { thread, round in
            round.isMultiple(of: 2) ? "inc" : (thread == 0 ? "other" : "dec")
        }
        #expect(byIdentifier[0].load(ordering: .relaxed) == 4 * rounds / 2)
        #expect(byIdentifier[1].load(ordering: .relaxed) == 3 * rounds / 2)
        #expect(byIdentifier[2].load(ordering: .relaxed) == rounds / 2)
        #expect(rdx_store_version(store.pointer) == UInt64(4 * rounds))
    }

    @Test("a Swift store's recognized action, dispatched from 4 threads beside unregistered ones: each applied as itself")
    func recognizedFromThreads() {
        let pings = Atomic<Int>(0), others = Atomic<Int>(0)
        let reducer: Reducer<CounterState> = { state, action in
            if action is Ping {
                pings.add(1, ordering: .relaxed)
            } else if action is JSONAction {
                others.add(1, ordering: .relaxed)
            }
            state.count += 1
        }
        let store = Store(reducers: [reducer], state: CounterState())
        var actions = ActionTypes()
        actions.register(Ping.self, for: "ping")
        let handle = StoreHandle(store.makeCStore(actions: actions))
        defer { rdx_store_release(handle.pointer) }
        let rounds = 2_000
        dispatchFromThreads(handle, rounds: rounds) { thread, round in
            thread == 0 && !round.isMultiple(of: 2) ? "pong" : "ping"
        }
        #expect(pings.load(ordering: .relaxed) == 4 * rounds - rounds / 2)
        #expect(others.load(ordering: .relaxed) == rounds / 2)
        #expect(store.version == UInt64(4 * rounds))
    }
}

/// An `rdx_store *` shared by the test's threads.
private struct StoreHandle: @unchecked Sendable {
    // @unchecked: the store's calls are thread-safe; the pointer is only passed to them.
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}
