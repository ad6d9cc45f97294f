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

/// `text` as a NUL-terminated buffer of its own, at an address no other thread writes.
private func buffer(_ text: String) -> UnsafeMutablePointer<CChar> {
    strdup(text)!
}

@Suite("C dispatches recognized once, from many threads")
struct RecognizedDispatchTests {
    @Test("a C store's routed identifiers, dispatched from 4 threads whose buffers change bytes: each action reaches its own reducers")
    func routedFromThreads() {
        for slot in 0..<4 { counts[slot].store(0, ordering: .relaxed) }
        let names = ["add", "remove"].map(buffer)
        defer { names.forEach { free($0) } }
        var reducers = [
            rdx_reducer(reduce: countingReduce, context: UnsafeMutableRawPointer(bitPattern: 1), identifier: names[0]),
            rdx_reducer(reduce: countingReduce, context: UnsafeMutableRawPointer(bitPattern: 2), identifier: names[1]),
            rdx_reducer(reduce: countingReduce, context: UnsafeMutableRawPointer(bitPattern: 3), identifier: nil),
        ]
        let initial = json_object_new_object()
        var status = RDX_EIO
        let store = rdx_store_create(initial, &reducers, reducers.count, &status)
        json_object_put(initial)
        #expect(status == RDX_OK)
        let handle = StoreHandle(store!)
        defer { rdx_store_release(store) }
        let rounds = 2_000
        onThreads(4) { thread in
            // Each thread's own buffer, its bytes turning from one identifier to another.
            let mine = buffer("remove")
            defer { free(mine) }
            for round in 0..<rounds {
                strcpy(mine, round.isMultiple(of: 2) ? "add" : (thread == 0 ? "other" : "remove"))
                precondition(rdx_store_dispatch_action(handle.pointer, mine, nil) == RDX_OK)
            }
        }
        #expect(counts[1].load(ordering: .relaxed) == 4 * rounds / 2)
        #expect(counts[2].load(ordering: .relaxed) == 3 * rounds / 2)
        #expect(counts[3].load(ordering: .relaxed) == 4 * rounds)
        #expect(rdx_store_version(store) == UInt64(4 * rounds))
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
        var actions = CActionTypes()
        actions.register(Ping.self, for: "ping")
        let handle = StoreHandle(store.makeCStore(actions: actions))
        defer { rdx_store_release(handle.pointer) }
        let rounds = 2_000
        onThreads(4) { thread in
            let mine = buffer("ping")
            defer { free(mine) }
            for round in 0..<rounds {
                strcpy(mine, thread == 0 && !round.isMultiple(of: 2) ? "pong" : "ping")
                precondition(rdx_store_dispatch_action(handle.pointer, mine, nil) == RDX_OK)
            }
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
