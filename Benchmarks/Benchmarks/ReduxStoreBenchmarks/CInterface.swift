import Benchmark
#if canImport(Glibc)
import Glibc
#endif
import CJSONC
import CReduxStoreAPI
import ReduxStore
import ReduxStoreC

/// The C interface, called from Swift exactly as a C program calls it (the functions of
/// include/reduxstore.h). A C store of `{"count": 0}` with one C reducer that adds the payload
/// (1 without one) to "count" in place, as the Swift counter reducer does.
func registerCBenchmarks() {
    let configuration = Benchmark.Configuration(scalingFactor: .kilo)

    // The C hand loop: the C reducer called directly on a json-c tree, no store.
    Benchmark("c.hand.counter", configuration: configuration) { benchmark, tree in
        for _ in benchmark.scaledIterations {
            counterReduce(tree.object, "counter.add", nil, nil)
        }
    } setup: {
        JSONTree(parsing: #"{"count": 0}"#)
    }

    Benchmark("c.dispatch.null", configuration: configuration) { benchmark, store in
        for _ in benchmark.scaledIterations {
            precondition(rdx_store_dispatch_action(store.pointer, "counter.add", nil) == RDX_OK)
        }
    } setup: {
        CStore.counter()
    }

    // Routed by identifier: the counter reducer registered for "counter.add" among 10 reducers,
    // the others each for an identifier of its own.
    Benchmark("c.dispatch.routed.null", configuration: configuration) { benchmark, store in
        for _ in benchmark.scaledIterations {
            precondition(rdx_store_dispatch_action(store.pointer, "counter.add", nil) == RDX_OK)
        }
    } setup: {
        CStore(state: json_tokener_parse(#"{"count": 0}"#), routedAmong: 10)
    }

    Benchmark("c.dispatch.payload", configuration: configuration) { benchmark, fixture in
        let (store, payload) = fixture
        for _ in benchmark.scaledIterations {
            precondition(rdx_store_dispatch_action(store.pointer, "counter.add", payload.object) == RDX_OK)
        }
    } setup: {
        (CStore.counter(), JSONTree(parsing: #"{"amount": 1, "note": "a small payload"}"#))
    }

    // The C text path, a single action and a batch of 10, each beside its floor: json-c
    // parsing and freeing the same text, nothing else.
    let actionText = #"{"identifier": "counter.add", "payload": {"amount": 1, "note": "a small payload"}}"#
    let batchText = "[" + Array(repeating: actionText, count: 10).joined(separator: ",") + "]"
    for (suffix, text, dispatch) in [
        ("", actionText, rdx_store_dispatch_json),
        (".batch", batchText, rdx_store_dispatch_batch_json),
    ] as [(String, String, (OpaquePointer?, UnsafePointer<CChar>?) -> rdx_status)] {
        Benchmark("c.dispatch\(suffix).json", configuration: configuration) { benchmark, store in
            text.withCString { text in
                for _ in benchmark.scaledIterations {
                    precondition(dispatch(store.pointer, text) == RDX_OK)
                }
            }
        } setup: {
            CStore.counter()
        }

        Benchmark("c.jsonc.parse\(suffix)", configuration: configuration) { benchmark in
            text.withCString { text in
                for _ in benchmark.scaledIterations {
                    let parsed = json_tokener_parse(text)
                    precondition(parsed != nil)
                    json_object_put(parsed)
                }
            }
        }
    }

    Benchmark("c.current_state.counter", configuration: configuration) { benchmark, store in
        for _ in benchmark.scaledIterations {
            json_object_put(rdx_store_current_state(store.pointer))
        }
    } setup: {
        CStore.counter()
    }

    Benchmark("c.current_state.todos1000") { benchmark, store in
        for _ in benchmark.scaledIterations {
            json_object_put(rdx_store_current_state(store.pointer))
        }
    } setup: {
        // The state as JSON text, parsed by json-c (the tree form of the encoder is the library's own).
        CStore(state: json_tokener_parse(try! JSONCEncoder().encodeToJSONString(TodoList(count: 1_000))))
    }

    // A Swift Store<Counter> handed to C: identifiers not registered reach reducers as JSONAction.
    Benchmark("c.swiftstore.dispatch.null", configuration: configuration) { benchmark, fixture in
        for _ in benchmark.scaledIterations {
            precondition(rdx_store_dispatch_action(fixture.handle.pointer, "counter.add", nil) == RDX_OK)
        }
    } setup: {
        SwiftStoreHandle(Store(reducers: counterReducers(1), state: Counter()))
    }

    // The same store, an identifier registered for a type without stored properties: decoded
    // into a `Tick` that reaches the reducers typed.
    Benchmark("c.swiftstore.dispatch.registered", configuration: configuration) { benchmark, fixture in
        for _ in benchmark.scaledIterations {
            precondition(rdx_store_dispatch_action(fixture.handle.pointer, "counter.tick", nil) == RDX_OK)
        }
    } setup: {
        SwiftStoreHandle(Store(reducers: tickReducers(), state: Counter()), actions: tickActionTypes())
    }
}

/// The C reducer: adds the payload's "amount" (1 when there is no payload) to "count", in place.
let counterReduce: @convention(c) (
    OpaquePointer?, UnsafePointer<CChar>?, OpaquePointer?, UnsafeMutableRawPointer?
) -> Void = { state, identifier, payload, _ in
    guard let identifier, strcmp(identifier, "counter.add") == 0 else { return }
    addAmount(state, payload)
}

/// The C reducer registered for "counter.add" (`rdx_reducer.identifier`): the store calls it
/// for that identifier only, so, as a C program's routed reducer would, it does not compare
/// the identifier; otherwise the counter reducer's work.
let routedCounterReduce: @convention(c) (
    OpaquePointer?, UnsafePointer<CChar>?, OpaquePointer?, UnsafeMutableRawPointer?
) -> Void = { state, _, payload, _ in
    addAmount(state, payload)
}

/// The counter reducers' work: the payload's "amount" (1 without a payload) added to "count".
@inline(__always)
private func addAmount(_ state: OpaquePointer?, _ payload: OpaquePointer?) {
    var amount: Int64 = 1
    if let payload {
        var value: OpaquePointer?
        if json_object_object_get_ex(payload, "amount", &value) != 0 { amount = json_object_get_int64(value) }
    }
    let count = json_object_object_get(state, "count")
    json_object_set_int64(count, json_object_get_int64(count) &+ amount)
}

/// A json-c tree owned by a benchmark.
final class JSONTree: @unchecked Sendable {
    let object: OpaquePointer?
    init(parsing text: String) { object = json_tokener_parse(text) }
    deinit { json_object_put(object) }
}

/// An `rdx_store *` made by `rdx_store_create`, released with the benchmark.
final class CStore: @unchecked Sendable {
    let pointer: OpaquePointer?

    /// A store of `state` (borrowed, and put here) with the counter reducer.
    init(state: OpaquePointer?) {
        var reducers = [rdx_reducer(reduce: counterReduce, context: nil, identifier: nil)]
        var status = RDX_OK
        pointer = rdx_store_create(state, &reducers, 1, &status)
        json_object_put(state)
        precondition(pointer != nil, "rdx_store_create: \(String(cString: rdx_last_error()))")
    }

    /// A store of `state` (put here) whose reducers are routed by identifier: the routed
    /// counter reducer for "counter.add", and `count - 1` others for identifiers of their own.
    init(state: OpaquePointer?, routedAmong count: Int) {
        // Copies that live until the store is created (it copies them in turn).
        let names = (0..<count).map { strdup($0 == 0 ? "counter.add" : "other.\($0)")! }
        defer { names.forEach { free($0) } }
        var reducers = names.map { rdx_reducer(reduce: routedCounterReduce, context: nil, identifier: $0) }
        var status = RDX_OK
        pointer = rdx_store_create(state, &reducers, reducers.count, &status)
        json_object_put(state)
        precondition(pointer != nil, "rdx_store_create: \(String(cString: rdx_last_error()))")
    }

    static func counter() -> CStore { CStore(state: json_tokener_parse(#"{"count": 0}"#)) }

    deinit { rdx_store_release(pointer) }
}

/// A Swift store's C handle, released with the benchmark.
final class SwiftStoreHandle: @unchecked Sendable {
    let store: Store<Counter>
    let handle: CStore.Handle

    init(_ store: Store<Counter>, actions: ActionTypes = ActionTypes()) {
        self.store = store
        handle = CStore.Handle(pointer: store.makeCStore(actions: actions))
    }
}

extension CStore {
    struct Handle: @unchecked Sendable {
        let pointer: OpaquePointer
    }
}
