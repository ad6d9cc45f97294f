// libFuzzer harness: rdx_store_dispatch_json on two stores.
//
//  - a store created from C (rdx_store_create) whose C-style reducers read the payload: they
//    walk it whole, take numbers and strings out of it, copy parts of it into the state, and
//    dispatch nested actions from inside a reducer;
//  - a Swift `Store<Board>` handed to C through makeCStore(actions:), with typed Decodable
//    actions registered, so payloads are decoded by JSONCDecoder into typed actions.
//
// The input is action JSON text; NUL bytes split it into up to 8 actions dispatched in turn to
// both stores (fresh stores per input, so every input replays alone). After each dispatch the
// harness checks the contract: a failure leaves the version unchanged and says why; a success
// moves it on. At the end it takes C snapshots and a Swift snapshot of each store.
//
// Fuzzing build (scripts/fuzz): -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING; the binary
// takes libFuzzer's options. Plain build: `fuzz-dispatch-json FILE_OR_FOLDER...` runs the harness
// once per file (a folder: each file in it) and exits 0.
import CJSONC
import CReduxStoreAPI
import FuzzSupport
import ReduxStore
import ReduxStoreC
#if canImport(Glibc)
import Glibc
#endif

// MARK: - The C store and its C-style reducers

/// What the C reducers and the observer share with the harness (one input at a time).
enum CSide {
    /// The store being fuzzed: reducers dispatch nested actions on it.
    nonisolated(unsafe) static var store: OpaquePointer?
    /// The last version the observer heard.
    nonisolated(unsafe) static var heardVersion: UInt64 = 0
    /// A checksum of everything the reducers read, so reads are not optimized away.
    nonisolated(unsafe) static var checksum: UInt64 = 0
    /// Nested dispatches made while applying one input (bounded).
    nonisolated(unsafe) static var nestedCount = 0
}

/// Reads every node of a tree the way C code would: types, numbers, strings with their lengths,
/// array elements and object members.
func walk(_ object: OpaquePointer?, depth: Int = 0) -> UInt64 {
    guard let object else { return 1 }
    var sum: UInt64 = UInt64(json_object_get_type(object).rawValue) &* 31
    switch json_object_get_type(object) {
    case json_type_boolean:
        sum &+= UInt64(json_object_get_boolean(object))
    case json_type_int:
        sum &+= UInt64(bitPattern: json_object_get_int64(object)) &+ json_object_get_uint64(object)
    case json_type_double:
        sum &+= json_object_get_double(object).bitPattern
    case json_type_string:
        let length = Int(json_object_get_string_len(object))
        if let text = json_object_get_string(object) {
            let bytes = UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self)
            for index in 0..<length { sum = sum &* 131 &+ UInt64(bytes[index]) }
        }
    case json_type_array:
        let count = json_object_array_length(object)
        for index in 0..<count {
            sum &+= walk(json_object_array_get_idx(object, index), depth: depth + 1)
        }
    case json_type_object:
        var iterator = json_object_iter_begin(object)
        var end = json_object_iter_end(object)
        while json_object_iter_equal(&iterator, &end) == 0 {
            if let name = json_object_iter_peek_name(&iterator) {
                sum &+= UInt64(strlen(name))
            }
            sum &+= walk(json_object_iter_peek_value(&iterator), depth: depth + 1)
            json_object_iter_next(&iterator)
        }
    default:
        break
    }
    return sum
}

func member(_ object: OpaquePointer?, _ key: String) -> OpaquePointer? {
    guard let object, json_object_get_type(object) == json_type_object else { return nil }
    var value: OpaquePointer?
    return json_object_object_get_ex(object, key, &value) != 0 ? value : nil
}

func deepCopy(_ object: OpaquePointer?) -> OpaquePointer? {
    guard let object else { return nil }
    var copy: OpaquePointer?
    guard json_object_deep_copy(object, &copy, nil) == 0 else { fatalError("deep copy failed") }
    return copy
}

/// Reducer 1: reads the whole payload, and keeps a counter.
/// `counter.add` with an integer payload or `{"by": n}` adds n; `counter.reset` sets 0.
nonisolated(unsafe) let counterReducer: rdx_reduce_fn = { state, identifier, payload, _ in
    guard let state, let identifier else { fatalError("reducer called with NULL state or identifier") }
    CSide.checksum &+= walk(payload)
    let name = String(cString: identifier)
    var count: OpaquePointer?
    guard json_object_object_get_ex(state, "count", &count) != 0, let count else { return }
    switch name {
    case "counter.add":
        var amount: Int64 = 0
        if json_object_get_type(payload) == json_type_int {
            amount = json_object_get_int64(payload)
        } else if let by = member(payload, "by") {
            amount = json_object_get_int64(by)  // any type: json-c converts
        }
        json_object_set_int64(count, json_object_get_int64(count) &+ amount)
    case "counter.reset":
        json_object_set_int64(count, 0)
    default:
        break
    }
}

/// Reducer 2: todos and free-form values copied out of the payload.
/// `todo.add` {"title": s, "done": b}; `todo.toggle` index; `todo.remove` index;
/// `set` {"key": s, "value": v} (state.values[key] = v); `peek` reads the store from inside.
nonisolated(unsafe) let todoReducer: rdx_reduce_fn = { state, identifier, payload, _ in
    guard let state, let identifier else { fatalError("reducer called with NULL state or identifier") }
    let name = String(cString: identifier)
    guard let todos = member(state, "todos"), let values = member(state, "values") else { return }
    switch name {
    case "todo.add":
        guard let title = member(payload, "title"),
              json_object_get_type(title) == json_type_string else { return }
        let todo = json_object_new_object()
        json_object_object_add(
            todo, "title",
            json_object_new_string_len(json_object_get_string(title), json_object_get_string_len(title)))
        json_object_object_add(
            todo, "done", json_object_new_boolean(json_object_get_boolean(member(payload, "done"))))
        json_object_array_add(todos, todo)
        if json_object_array_length(todos) > 32 { json_object_array_del_idx(todos, 0, 1) }
    case "todo.toggle", "todo.remove":
        let index = Int(truncatingIfNeeded: json_object_get_int64(payload))
        guard index >= 0, index < json_object_array_length(todos) else { return }
        if name == "todo.remove" {
            json_object_array_del_idx(todos, index, 1)
        } else if let done = member(json_object_array_get_idx(todos, index), "done") {
            json_object_set_boolean(done, json_object_get_boolean(done) == 0 ? 1 : 0)
        }
    case "set":
        guard let key = member(payload, "key"), json_object_get_type(key) == json_type_string,
              let text = json_object_get_string(key) else { return }
        // The state may hold at most 16 keys; past that, `set` only replaces.
        if json_object_object_length(values) >= 16, member(values, String(cString: text)) == nil { return }
        json_object_object_add(values, text, deepCopy(member(payload, "value")))
    case "peek":
        // Reading a store from inside its own reducer must neither deadlock nor tear.
        let snapshot = rdx_store_current_state(CSide.store)
        CSide.checksum &+= walk(snapshot) &+ rdx_store_version(CSide.store)
        json_object_put(snapshot)
    default:
        break
    }
}

/// Reducer 3: `nested` with an array payload of actions {"identifier": s, "payload": v}
/// dispatches each from inside the reducer (queued, applied right after this one).
nonisolated(unsafe) let nestingReducer: rdx_reduce_fn = { state, identifier, payload, _ in
    guard let identifier, strcmp(identifier, "nested") == 0,
          json_object_get_type(payload) == json_type_array else { return }
    for index in 0..<json_object_array_length(payload) {
        guard CSide.nestedCount < 64 else { return }
        let element = json_object_array_get_idx(payload, index)
        guard let name = member(element, "identifier"),
              json_object_get_type(name) == json_type_string else { continue }
        CSide.nestedCount += 1
        // May fail (a NUL in the name, a name too long): that is a status, not a crash.
        _ = rdx_store_dispatch_action(CSide.store, json_object_get_string(name), member(element, "payload"))
    }
}

nonisolated(unsafe) let observer: rdx_observer_fn = { store, name, version, _ in
    guard let store, let name, store == CSide.store,
          strcmp(name, RDX_STATE_DID_CHANGE_NOTIFICATION) == 0 else {
        fatalError("observer called with a wrong store or name")
    }
    guard version > CSide.heardVersion else {
        fatalError("observer heard version \(version) after \(CSide.heardVersion)")
    }
    CSide.heardVersion = version
}

func makeCStore() -> OpaquePointer {
    let initial = json_object_new_object()
    defer { json_object_put(initial) }
    json_object_object_add(initial, "count", json_object_new_int64(0))
    json_object_object_add(initial, "todos", json_object_new_array())
    json_object_object_add(initial, "values", json_object_new_object())
    let reducers = [
        rdx_reducer(reduce: counterReducer, context: nil, identifier: nil),
        rdx_reducer(reduce: todoReducer, context: nil, identifier: nil),
        rdx_reducer(reduce: nestingReducer, context: nil, identifier: nil),
    ]
    var status = RDX_OK
    guard let store = rdx_store_create(initial, reducers, reducers.count, &status) else {
        fatalError("rdx_store_create failed: \(String(cString: rdx_last_error()))")
    }
    return store
}

// MARK: - The Swift store handed to C, with typed actions

enum Shape: Codable, Equatable, Sendable {
    case circle(radius: Double)
    case rect(width: Float, height: Float)
    case label(String, size: UInt8?)
    case none
}

struct Item: Codable, Equatable, Sendable {
    var title: String
    var count: Int32
    var tags: [String]
    var weight: Double?
    var shape: Shape?
}

struct Board: Codable, Equatable, Sendable {
    var items: [Item] = []
    var flags: [String: Bool] = [:]
    var total: Int64 = 0
    var small: UInt8 = 0
    var untyped: [JSONValue] = []
}

struct AddItem: Action, Decodable {
    var title: String
    var count: Int32
    var tags: [String]
    var weight: Double?
    var shape: Shape?
    var identifier: String { "item.add" }
}

struct SetFlags: Action, Decodable {
    var flags: [String: Bool]
    var total: Int64?
    var limit: UInt16
    var ratio: Float?
    var identifier: String { "flags.set" }
}

struct Bump: Action, Decodable {
    var by: Int8
    var times: [UInt32]?
    var identifier: String { "bump" }
}

/// A typed action whose payload is any JSON.
struct Raw: Action, Decodable {
    var value: JSONValue
    init(from decoder: any Decoder) throws { value = try JSONValue(from: decoder) }
    var identifier: String { "raw" }
}

let boardReducer: Reducer<Board> = { state, action in
    switch action {
    case let add as AddItem:
        state.items.append(Item(
            title: add.title, count: add.count, tags: add.tags, weight: add.weight, shape: add.shape))
        if state.items.count > 16 { state.items.removeFirst() }
    case let set as SetFlags:
        for (key, value) in set.flags.prefix(16) { state.flags[key] = value }
        if state.flags.count > 32 { state.flags.removeAll() }
        if let total = set.total { state.total = total }
    case let bump as Bump:
        state.small &+= UInt8(truncatingIfNeeded: bump.by)
        state.total &+= Int64(bump.times?.count ?? 0)
    case let raw as Raw:
        state.untyped.append(raw.value)
        if state.untyped.count > 4 { state.untyped.removeFirst() }
    case let json as JSONAction:
        if let payload = json.payload { state.untyped.append(payload) }
        if state.untyped.count > 4 { state.untyped.removeFirst() }
    default:
        break
    }
}

func makeSwiftStore() -> (Store<Board>, OpaquePointer) {
    let store = Store(reducers: [boardReducer], state: Board())
    var actions = ActionTypes()
    actions.register(AddItem.self, for: "item.add")
    actions.register(SetFlags.self, for: "flags.set")
    actions.register(Bump.self, for: "bump")
    actions.register(Raw.self, for: "raw")
    return (store, store.makeCStore(actions: actions))
}

// MARK: - The harness

/// Dispatches `text` and checks the contract: OK moves the version on, a failure leaves it.
func dispatch(_ text: UnsafePointer<CChar>, to store: OpaquePointer) {
    let before = rdx_store_version(store)
    let status = rdx_store_dispatch_json(store, text)
    let after = rdx_store_version(store)
    if status == RDX_OK {
        guard after > before else { fatalError("RDX_OK but the version stayed \(before)") }
    } else {
        guard status == RDX_EPARSE || status == RDX_EDECODE || status == RDX_ELIMIT else {
            fatalError("unexpected status \(status.rawValue): \(String(cString: rdx_last_error()))")
        }
        guard after == before else { fatalError("failed dispatch changed the version \(before) -> \(after)") }
        guard let error = rdx_last_error(), error.pointee != 0 else {
            fatalError("failed dispatch with an empty rdx_last_error()")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    // The input as NUL-terminated segments (a NUL ends one action and starts the next).
    let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: size + 1)
    defer { buffer.deallocate() }
    if let data, size > 0 { UnsafeMutableRawPointer(buffer).copyMemory(from: data, byteCount: size) }
    buffer[size] = 0
    var segments: [UnsafePointer<CChar>] = []
    var start = 0
    while start <= size, segments.count < 8 {
        segments.append(UnsafePointer(buffer + start))
        start += strlen(buffer + start) + 1
    }

    let cStore = makeCStore()
    CSide.store = cStore
    CSide.heardVersion = 0
    CSide.nestedCount = 0
    let token = rdx_store_add_observer(cStore, nil, observer, nil)
    guard token != 0 else { fatalError("rdx_store_add_observer failed") }
    let (swiftStore, swiftHandle) = makeSwiftStore()

    for segment in segments {
        dispatch(segment, to: cStore)
        dispatch(segment, to: swiftHandle)
    }

    // C snapshots of both stores, and a Swift snapshot.
    for store in [cStore, swiftHandle] {
        guard let snapshot = rdx_store_current_state(store) else {
            fatalError("rdx_store_current_state failed: \(String(cString: rdx_last_error()))")
        }
        CSide.checksum &+= walk(snapshot)
        json_object_put(snapshot)
    }
    let board = swiftStore.currentState()
    CSide.checksum &+= UInt64(board.items.count + board.untyped.count)
    guard CSide.heardVersion == rdx_store_version(cStore) else {
        fatalError("observer heard \(CSide.heardVersion), store is at \(rdx_store_version(cStore))")
    }

    guard rdx_store_remove_observer(cStore, token) == RDX_OK else { fatalError("remove_observer failed") }
    CSide.store = nil
    rdx_store_release(cStore)
    rdx_store_release(swiftHandle)
    return 0
}

// MARK: - Entry point

fuzzMain("fuzz-dispatch-json") { data, size in fuzz(data, size) }
