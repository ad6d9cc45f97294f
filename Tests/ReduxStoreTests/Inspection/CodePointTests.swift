// JSON strings are sequences of code points. "\u{E9}" (é) and "e\u{301}" (e and a combining acute
// accent) are equal Swift `String`s (canonical equivalence) but different JSON strings and keys:
// values, diffs, patches, the journal, typed action lookup and the coders keep them apart.

import Foundation
import ReduxStore
import ReduxStoreTestSupport
import Testing

private let precomposed = "\u{E9}"
private let decomposed = "e\u{301}"

private struct Named: Codable, Equatable, Sendable {
    var name = "\u{E9}"
}

private struct Rename: Action {
    var to: String
    var identifier: String { "rename" }
}

private let renameReducer: Reducer<Named> = { state, action in
    if let rename = action as? Rename { state.name = rename.to }
}

/// For a state that is a JSON value: "set" puts the payload's "value" under its "key".
private let setReducer: Reducer<JSONValue> = { state, action in
    guard let action = action as? JSONAction, action.identifier == "set",
          case .object(let payload)? = action.payload, case .string(let key)? = payload["key"],
          let value = payload["value"], case .object(var members) = state
    else { return }
    members[JSONKey(key)] = value
    state = .object(members)
}

/// Whether `text` holds `part` byte for byte (`String.contains` would match look-alikes).
private func holds(_ text: some StringProtocol, _ part: String) -> Bool {
    let text = Array(text.utf8)
    let part = Array(part.utf8)
    guard part.count <= text.count else { return false }
    return (0...(text.count - part.count)).contains { text[$0..<($0 + part.count)].elementsEqual(part) }
}

private func set(_ key: String, _ value: JSONValue) -> JSONAction {
    JSONAction(identifier: "set", payload: ["key": .string(key), "value": value])
}

@Suite("JSON strings compare code point by code point")
struct CodePointTests {
    @Test("JSONValue: strings of other code points differ, hash apart, and are two keys")
    func values() {
        #expect(precomposed == decomposed)  // what Swift says, and JSON does not
        #expect(JSONValue.string(precomposed) != .string(decomposed))
        #expect(JSONValue.string(decomposed) == .string("e\u{301}"))
        #expect(Set<JSONValue>([.string(precomposed), .string(decomposed)]).count == 2)
        let both: JSONValue = .object([JSONKey(precomposed): 1, JSONKey(decomposed): 2])
        guard case .object(let members) = both else {
            Issue.record("not an object")
            return
        }
        #expect(members.count == 2)
        #expect(members[precomposed] == 1)
        #expect(members[decomposed] == 2)
        #expect(both != .object([JSONKey(precomposed): 1]))
        #expect(JSONKey(precomposed) != JSONKey(decomposed))
        #expect(Set([JSONKey(precomposed), JSONKey(decomposed), JSONKey("\u{E9}")]).count == 2)
        // Code point order: "e" (U+0065) sorts before "é" (U+00E9), "Z" before "a".
        #expect([JSONKey(precomposed), JSONKey(decomposed), "a", "Z"].sorted()
            == ["Z", "a", JSONKey(decomposed), JSONKey(precomposed)])
        #expect(JSONAction(identifier: precomposed) != JSONAction(identifier: decomposed))
        #expect(Set([JSONAction(identifier: precomposed), JSONAction(identifier: decomposed)]).count == 2)
        #expect(JSONPatch.Operation.remove(path: "/" + precomposed) != .remove(path: "/" + decomposed))
        #expect(JSONPatch.Operation.add(path: "/a", value: .string(precomposed))
            != .add(path: "/a", value: .string(decomposed)))
        #expect(StoreNotification(stateDidChangeAt: 1, actionIdentifier: precomposed)
            != StoreNotification(stateDidChangeAt: 1, actionIdentifier: decomposed))
    }

    @Test("a reducer changing \"\\u{E9}\" into \"e\\u{301}\": a replace for the observer and the journal")
    func reducerPatch() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [renameReducer], state: Named())
        var options = JournalOptions()
        options.recordPatches = true
        try store.startJournal(at: path, options: options)
        let patches = Recorder<[JSONPatch.Operation]>()
        store.addObserver(includingPatch: true) { _, patch in patches.append(patch) }
        store.dispatchAction(Rename(to: decomposed))
        store.dispatchAction(Rename(to: decomposed))  // no change
        store.dispatchAction(Rename(to: precomposed))
        store.stopJournal()
        #expect(patches.all == [
            [.replace(path: "/name", value: .string(decomposed))],
            [],
            [.replace(path: "/name", value: .string(precomposed))],
        ])
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)
        #expect(holds(lines[0], #""patch":[{"op":"replace","path":"/name","value":"e\#u{301}"}]"#))
        #expect(holds(lines[1], #""patch":[]"#))
        #expect(holds(lines[2], #""patch":[{"op":"replace","path":"/name","value":"\#u{E9}"}]"#))
    }

    @Test("a key \"e\\u{301}\" added beside \"\\u{E9}\" is an add, in a diff and in a JSON state's patch")
    func keyAddedBeside() {
        let before: JSONValue = .object([JSONKey(precomposed): 1])
        let after: JSONValue = .object([JSONKey(precomposed): 1, JSONKey(decomposed): 2])
        #expect(JSONPatch.diff(from: before, to: after) == [.add(path: "/" + decomposed, value: 2)])
        #expect(JSONPatch.diff(from: after, to: before) == [.remove(path: "/" + decomposed)])
        // A store whose state is a JSONValue: the snapshot of its state keeps both keys.
        let store = Store(reducers: [setReducer], state: JSONValue.object([:]))
        let patches = Recorder<[JSONPatch.Operation]>()
        store.addObserver(includingPatch: true) { _, patch in patches.append(patch) }
        store.dispatchAction(set(precomposed, 1))
        store.dispatchAction(set(decomposed, 2))
        store.dispatchAction(set(precomposed, 3))
        #expect(patches.all == [
            [.add(path: "/" + precomposed, value: 1)],
            [.add(path: "/" + decomposed, value: 2)],
            [.replace(path: "/" + precomposed, value: 3)],
        ])
        #expect(store.currentState() == .object([JSONKey(precomposed): 3, JSONKey(decomposed): 2]))
    }

    @Test("JSONPatch.apply: remove of \"/e\\u{301}\" with both keys present removes that one")
    func applyRemove() throws {
        let both: JSONValue = .object([JSONKey(precomposed): 1, JSONKey(decomposed): 2])
        #expect(try JSONPatch.apply([.remove(path: "/" + decomposed)], to: both)
            == .object([JSONKey(precomposed): 1]))
        #expect(try JSONPatch.apply([.replace(path: "/" + precomposed, value: 5)], to: both)
            == .object([JSONKey(precomposed): 5, JSONKey(decomposed): 2]))
        #expect(try JSONPatch.apply([.replace(path: "/s", value: .string(decomposed))], to: ["s": .string(precomposed)])
            == ["s": .string(decomposed)])
        #expect(throws: StoreError.self) {
            try JSONPatch.apply([.remove(path: "/" + decomposed)], to: .object([JSONKey(precomposed): 1]))
        }
    }

    @Test("the coders keep both keys of a JSONValue: snapshot tape, json-c text, decode")
    func coders() throws {
        let both: JSONValue = .object([JSONKey(precomposed): 1, JSONKey(decomposed): 2])
        #expect(try JSONValue(encoding: both) == both)
        let text = try JSONCEncoder().encodeToJSONString(both)
        #expect(holds(text, #""\#u{E9}":1"#) && holds(text, #""e\#u{301}":2"#))
        #expect(try JSONCDecoder().decode(JSONValue.self, fromJSONString: text) == both)
        #expect(try both.decode(as: JSONValue.self) == both)
        // Inside a typed value, the JSON value's object keeps its keys too.
        let wrapped = ["payload": both]
        #expect(try JSONValue(encoding: wrapped) == ["payload": both])
    }

    @Test("a typed decode reads the member of its key's own code points, beside a look-alike")
    func typedDecode() throws {
        struct Precomposed: Decodable { var value: Int; enum CodingKeys: String, CodingKey { case value = "\u{E9}" } }
        struct Decomposed: Decodable { var value: Int; enum CodingKeys: String, CodingKey { case value = "e\u{301}" } }
        // Both orders of the members: a Swift-string lookup would take whichever comes first.
        for both: JSONValue in [
            .object([JSONKey(precomposed): 1, JSONKey(decomposed): 2]),
            .object([JSONKey(decomposed): 2, JSONKey(precomposed): 1]),
        ] {
            #expect(try both.decode(as: Precomposed.self).value == 1)
            #expect(try both.decode(as: Decomposed.self).value == 2)
            let action = JSONAction(identifier: "x", payload: both)
            #expect(try action.decodePayload(as: Decomposed.self).value == 2)
        }
        for text in ["{\"\u{E9}\": 1, \"e\u{301}\": 2}", "{\"e\u{301}\": 2, \"\u{E9}\": 1}"] {
            #expect(try JSONCDecoder().decode(Precomposed.self, fromJSONString: text).value == 1)
            #expect(try JSONCDecoder().decode(Decomposed.self, fromJSONString: text).value == 2)
        }
        // Alone, a look-alike is still found, as Foundation finds it.
        #expect(try JSONValue.object([JSONKey(decomposed): 3]).decode(as: Precomposed.self).value == 3)
    }

    @Test("ActionTypes: a type registered for \"caf\\u{E9}\" does not decode an action named \"cafe\\u{301}\"")
    func actionTypes() throws {
        struct Order: Action, Codable { var size: Int; var identifier: String { "caf\u{E9}" } }
        var actions = ActionTypes()
        actions.register(Order.self, for: "caf\u{E9}")
        #expect(actions.isRegistered("caf\u{E9}"))
        #expect(!actions.isRegistered("cafe\u{301}"))

        let path = temporaryFolder() + "/journal.jsonl"
        let seen = Recorder<String>()
        let reducer: Reducer<Int> = { state, action in
            state += 1
            seen.append(action is Order ? "Order \(action.identifier)" : "JSONAction \(action.identifier)")
        }
        let store = Store(reducers: [reducer], state: 0)
        try store.startJournal(at: path)
        store.dispatchAction(Order(size: 2))
        store.dispatchAction(JSONAction(identifier: "cafe\u{301}", payload: ["size": 3]))
        store.stopJournal()
        // The journal records each identifier as it was.
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 2)
        #expect(holds(lines[1], #""identifier":"cafe\#u{301}""#))
        let replayed = try Store(replaying: path, from: 0, reducers: [reducer], actions: actions)
        #expect(replayed.currentState() == 2)
        #expect(seen.all.dropFirst(2).map { Array($0.unicodeScalars) } == [
            Array("Order caf\u{E9}".unicodeScalars), Array("JSONAction cafe\u{301}".unicodeScalars),
        ])
    }
}
