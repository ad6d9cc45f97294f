import CJSONC
import CReduxStoreAPI
import ReduxStore
import ReduxStoreC
import ReduxStoreTestSupport
import Testing

/// A typed action C can send: its payload holds the properties.
private struct AddTodo: Action, Decodable, Equatable {
    var title: String
    var tags: [String]
    var identifier: String { "todo.add" }
}

private final class Board: Codable, @unchecked Sendable {
    var titles: [String] = []
    var untyped: [String] = []
}

private let boardReducer: Reducer<Board> = { state, action in
    if let add = action as? AddTodo {
        state.titles.append("\(add.title) \(add.tags.joined(separator: ","))")
    } else if let json = action as? JSONAction {
        state.untyped.append("\(json.identifier) \(String(describing: json.payload))")
    }
}

private func makeBoard() -> (Store<Board>, OpaquePointer) {
    let store = Store(reducers: [boardReducer], state: Board())
    var actions = ActionTypes()
    actions.register(AddTodo.self, for: "todo.add")
    return (store, store.makeCStore(actions: actions))
}

private func lastError() -> String { String(cString: rdx_last_error()) }

/// The `rdx_store *` of a Swift store, for its own middleware to dispatch through.
private final class CHandleBox: @unchecked Sendable {
    // @unchecked: set once before the first dispatch.
    var handle: OpaquePointer?
}

/// How many times each type's `init(from:)` ran.
private let decodes = Recorder<String>()

/// A registered type without stored properties: every value is the same.
private struct Reset: Action, Decodable {
    var identifier: String { "board.reset" }
    init(from decoder: any Decoder) throws { decodes.append("reset") }
}

/// A registered type with stored properties: it needs a payload.
private struct Mark: Action, Decodable {
    var note: String
    var identifier: String { "board.mark" }
    init(from decoder: any Decoder) throws {
        decodes.append("mark")
        note = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .note)
    }
    enum CodingKeys: String, CodingKey { case note }
}

/// A registered type with a stored property that decodes from no payload: each decode is its
/// own value.
private struct Stamp: Action, Decodable {
    var serial: Int
    var identifier: String { "board.stamp" }
    init(from decoder: any Decoder) throws {
        decodes.append("stamp")
        serial = decodes.all.count
    }
}

@Suite("A Swift store handed to C")
struct SwiftStoreInCTests {
    @Test("an action of a type without stored properties, NULL payload: decoded once, then recognized by its bytes")
    func valuelessDecodedOnce() {
        let seen = Recorder<String>()
        let reducer: Reducer<CounterState> = { state, action in
            if let stamp = action as? Stamp {
                seen.append("Stamp \(stamp.serial)")
            } else {
                seen.append(action is Reset ? "Reset" : action is Mark ? "Mark" : "\(type(of: action)):\(action.identifier)")
            }
            state.count += 1
        }
        let store = Store(reducers: [reducer], state: CounterState())
        var actions = ActionTypes()
        actions.register(Reset.self, for: "board.reset")
        actions.register(Mark.self, for: "board.mark")
        actions.register(Stamp.self, for: "board.stamp")
        let handle = store.makeCStore(actions: actions)
        defer { rdx_store_release(handle) }

        var identifier = Array("board.reset".utf8CString) + Array(repeating: 0, count: 8)
        identifier.withUnsafeBufferPointer { buffer in
            for _ in 0..<3 { #expect(rdx_store_dispatch_action(handle, buffer.baseAddress, nil) == RDX_OK) }
        }
        // Other bytes at the same address: those are the action's.
        for (text, expected) in [("board.mark", RDX_EDECODE), ("board.other", RDX_OK), ("board.reset", RDX_OK)] {
            for (index, byte) in text.utf8CString.enumerated() { identifier[index] = byte }
            identifier.withUnsafeBufferPointer { #expect(rdx_store_dispatch_action(handle, $0.baseAddress, nil) == expected) }
        }
        identifier[0] = CChar(bitPattern: 0xC3)
        identifier[1] = 0
        identifier.withUnsafeBufferPointer { #expect(rdx_store_dispatch_action(handle, $0.baseAddress, nil) == RDX_EDECODE) }
        // With a payload it is decoded each time; a failed decode is not kept.
        let empty = json_tokener_parse("{}"), note = json_tokener_parse(#"{"note": "x"}"#)
        defer {
            json_object_put(empty)
            json_object_put(note)
        }
        #expect(rdx_store_dispatch_action(handle, "board.reset", empty) == RDX_OK)
        #expect(rdx_store_dispatch_action(handle, "board.mark", nil) == RDX_EDECODE)
        #expect(rdx_store_dispatch_action(handle, "board.mark", note) == RDX_OK)
        // A type with stored properties is decoded at each dispatch, even from no payload.
        #expect(rdx_store_dispatch_action(handle, "board.stamp", nil) == RDX_OK)
        #expect(rdx_store_dispatch_action(handle, "board.stamp", nil) == RDX_OK)

        #expect(seen.all == ["Reset", "Reset", "Reset", "JSONAction:board.other", "Reset", "Reset", "Mark", "Stamp 6", "Stamp 7"])
        #expect(decodes.all == ["reset", "mark", "reset", "mark", "mark", "stamp", "stamp"])
        #expect(store.version == 9)
    }

    @Test("a middleware dispatching through C without end gets RDX_ELIMIT at the depth limit")
    func middlewareDepthThroughC() {
        #expect(RDX_MAX_MIDDLEWARE_DEPTH == StoreLimits.maximumMiddlewareDepth)
        let box = CHandleBox()
        let statuses = Recorder<rdx_status>()
        let errors = Recorder<String>()
        let recursing: Middleware<CounterState> = { _, action, next in
            let status = rdx_store_dispatch_action(box.handle, "deep", nil)
            statuses.append(status)
            if status != RDX_OK { errors.append(lastError()) }
            next(CounterAction.increment)
        }
        let store = Store(reducers: [counterReducer], state: CounterState(), middleware: [recursing])
        box.handle = store.makeCStore()
        defer { rdx_store_release(box.handle) }
        #expect(rdx_store_dispatch_action(box.handle, "deep", nil) == RDX_OK)
        #expect(statuses.count == 64)
        #expect(statuses.all.filter { $0 == RDX_ELIMIT }.count == 1)
        #expect(errors.all.first?.hasPrefix("dispatch refused: it would run 65 dispatches") == true)
        #expect(store.version == 64)
        #expect(store.currentState().count == 64)
    }

    @Test("a registered identifier's payload is decoded straight into the typed action")
    func typedAction() {
        let (store, handle) = makeBoard()
        defer { rdx_store_release(handle) }
        let status = rdx_store_dispatch_json(
            handle, #"{"identifier": "todo.add", "payload": {"title": "Ship", "tags": ["a", "b"]}}"#)
        #expect(status == RDX_OK)
        #expect(store.currentState().titles == ["Ship a,b"])
        #expect(store.version == 1)
        #expect(rdx_store_version(handle) == 1)
    }

    @Test("other identifiers reach the reducers as JSONAction")
    func untypedAction() {
        let (store, handle) = makeBoard()
        defer { rdx_store_release(handle) }
        #expect(rdx_store_dispatch_json(handle, #"{"identifier": "misc", "payload": [1, true]}"#) == RDX_OK)
        #expect(rdx_store_dispatch_action(handle, "bare", nil) == RDX_OK)
        #expect(store.currentState().untyped == [
            "misc Optional([1,true])",
            "bare nil",
        ])
    }

    @Test("a payload that does not decode: RDX_EDECODE naming the path, nothing applied")
    func decodeFailure() {
        let (store, handle) = makeBoard()
        defer { rdx_store_release(handle) }
        let status = rdx_store_dispatch_json(
            handle, #"{"identifier": "todo.add", "payload": {"title": "x", "tags": ["a", 7]}}"#)
        #expect(status == RDX_EDECODE)
        #expect(lastError() == "payload.tags[1]: expected String, found number")
        #expect(store.version == 0)
        #expect(store.currentState().titles == [])

        #expect(rdx_store_dispatch_action(handle, "todo.add", nil) == RDX_EDECODE)
        #expect(lastError() == "payload: expected object, found null")
        #expect(store.version == 0)
    }

    @Test("a C snapshot is the state encoded to a new json-c tree")
    func snapshot() {
        let (store, handle) = makeBoard()
        defer { rdx_store_release(handle) }
        store.dispatchAction(AddTodo(title: "From Swift", tags: []))
        let tree = rdx_store_current_state(handle)
        defer { json_object_put(tree) }
        let text = String(cString: json_object_to_json_string_ext(tree, JSON_C_TO_STRING_PLAIN))
        #expect(text == #"{"titles":["From Swift "],"untyped":[]}"#)
    }

    @Test("C observers hear actions dispatched from Swift; releasing the handle removes them")
    func observers() {
        let (store, handle) = makeBoard()
        let heard = Tally()
        let context = Unmanaged.passRetained(heard).toOpaque()
        let token = rdx_store_add_observer(handle, nil, { _, name, version, context in
            let heard = Unmanaged<Tally>.fromOpaque(context!).takeUnretainedValue()
            if String(cString: name!) == "RDXStateDidChangeNotification" && version > 0 {
                heard.increment()
            }
        }, context)
        #expect(token != 0)
        store.dispatchAction(AddTodo(title: "a", tags: []))
        #expect(heard.count == 1)
        rdx_store_release(handle)
        store.dispatchAction(AddTodo(title: "b", tags: []))
        #expect(heard.count == 1)
        #expect(store.observerCount == 0)
        Unmanaged<Tally>.fromOpaque(context).release()
    }

    @Test("enqueue from C, flush, and the handle keeps the store alive")
    func enqueue() {
        var handle: OpaquePointer?
        do {
            let (_, made) = makeBoard()
            handle = made
        }
        for index in 0..<10 {
            let payload = json_object_new_object()
            json_object_object_add(payload, "title", json_object_new_string("t\(index)"))
            json_object_object_add(payload, "tags", json_object_new_array())
            #expect(rdx_store_enqueue_action(handle, "todo.add", payload) == RDX_OK)
            json_object_put(payload)
        }
        #expect(rdx_store_flush(handle) == RDX_OK)
        #expect(rdx_store_version(handle) == 10)
        rdx_store_release(handle)
    }

    @Test("a C pointer observer of \"/e\\u{301}\" on a JSON-valued Swift store: that key's changes only")
    func pointerObserverOfLookAlikeKey() {
        // "set": the payload's "value" under its "key", in a state that is a JSON object.
        let reducer: Reducer<JSONValue> = { state, action in
            guard let action = action as? JSONAction, case .object(let payload)? = action.payload,
                  case .string(let key)? = payload["key"], let value = payload["value"],
                  case .object(var members) = state
            else { return }
            members[JSONKey(key)] = value
            state = .object(members)
        }
        let store = Store(reducers: [reducer], state: JSONValue.object([:]))
        let handle = store.makeCStore()
        defer { rdx_store_release(handle) }
        let decomposed = Recorder<UInt64>()
        let precomposed = Recorder<UInt64>()
        let observe: rdx_observer_fn = { _, _, version, context in
            Unmanaged<Recorder<UInt64>>.fromOpaque(context!).takeUnretainedValue().append(version)
        }
        #expect(rdx_store_observe_pointer(
            handle, "/e\u{301}", observe, Unmanaged.passUnretained(decomposed).toOpaque()) != 0)
        #expect(rdx_store_observe_pointer(
            handle, "/\u{E9}", observe, Unmanaged.passUnretained(precomposed).toOpaque()) != 0)
        for (key, value) in [("\u{E9}", 1), ("e\u{301}", 2), ("\u{E9}", 3), ("e\u{301}", 4)] {
            store.dispatchAction(JSONAction(identifier: "set", payload: ["key": .string(key), "value": .int(Int64(value))]))
        }
        #expect(decomposed.all == [2, 4])
        #expect(precomposed.all == [1, 3])
        let value = rdx_store_current_value(handle, "/e\u{301}")
        #expect(json_object_get_int64(value) == 4)
        json_object_put(value)
    }
}
