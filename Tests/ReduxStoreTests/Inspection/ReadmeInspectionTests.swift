import ReduxStore
import ReduxStoreTestSupport
import Testing

// The examples of the DocC article "Inspecting a store"
// (Sources/ReduxStore/ReduxStore.docc/Inspection.md), which were the README's, as written there
// but for the journal's path (a temporary folder) and the replay's last version. Kept in step by
// hand: a change to the article's blocks is made here too.

private struct Todo: Codable, Equatable, Sendable { var title: String; var done = false }
private struct AppState: Codable, Equatable, Sendable { var todos: [Todo] = [] }
private struct AddTodo: Action, Codable { var identifier: String { "todo.add" }; var title: String }

private let reducer: Reducer<AppState> = { state, action in
    if let add = action as? AddTodo { state.todos.append(Todo(title: add.title)) }
}

@Suite("The Inspection article's examples (Inspection.md)")
struct ReadmeInspectionTests {
    @Test("journal, replay, time travel, what changed")
    func examples() throws {
        let path = temporaryFolder() + "/app.journal"
        let store = Store(reducers: [reducer], state: AppState())
        let operations = Recorder<String>()
        store.addObserver(includingPatch: true) { note, patch in
            for operation in patch { operations.append("\(operation.op) \(operation.path)") }
        }
        store.keepHistory(100)                             // the encoded snapshots of the last 100 versions

        var options = JournalOptions()
        options.recordPatches = true                       // optional: each line also carries its patch
        try store.startJournal(at: path, options: options)
        store.dispatchAction(AddTodo(title: "milk"))
        store.dispatchAction(AddTodo(title: "eggs"))
        store.stopJournal()                                // writes what is queued; the deinit does too
        let line = try #require(readText(path)?.split(separator: "\n").first)
        #expect(line.hasPrefix(#"{"version":1,"identifier":"todo.add","payload":{"title":"milk"},"typed":true,"time":""#))
        // (Object members keep no order: JSONValue objects are dictionaries.)
        #expect(line.contains(#","patch":[{"op":"add","path":"/todos/0","value":{"#))
        #expect(line.contains(#""title":"milk""#) && line.contains(#""done":false"#))

        // "Reading a journal", as written there but for the paths and what is printed.
        var read: [String] = []
        try JournalReader.read(path) { (entry) throws(StoreError) in
            read.append("\(entry.version) \(entry.identifier) \(entry.source ?? "") \(try entry.payload() ?? .null)")
            return true                                    // false stops reading
        }
        let statePath = temporaryFolder() + "/state.json"
        try store.save(to: statePath)
        let saved = try JSONDocument(contentsOf: statePath)
        let title = try saved.value.value(atPointer: "/todos/0/title")
        #expect(read.count == 2 && read[0].hasPrefix("1 todo.add ReadmeInspectionTests.swift:"))
        #expect(read[1].hasPrefix("2 todo.add ") && read[1].contains("eggs"))
        #expect(saved.version == 2 && title == "milk")

        var actions = ActionTypes()                        // the registry the C bridge uses too
        actions.register(AddTodo.self, for: "todo.add")
        let replayed = try Store(replaying: path, from: AppState(),
                                 reducers: [reducer], actions: actions, through: 1)
        #expect(replayed.currentState().todos.map(\.title) == ["milk"])

        try store.restore(version: store.historyVersions.first!)
        #expect(store.currentState().todos.isEmpty)
        #expect(store.version == 3)
        #expect(operations.all == ["add /todos/0", "add /todos/1", "remove /todos/1", "remove /todos/0"])
    }

    /// The block of the DocC article "JSON" (JSON.md), "JSON strings are code points".
    @Test("JSON strings are code points: two keys, and a replace")
    func codePoints() throws {
        let both: JSONValue = .object([JSONKey("\u{E9}"): 1, JSONKey("e\u{301}"): 2])  // two members
        let patch = JSONPatch.diff(from: ["name": "\u{E9}"], to: ["name": "e\u{301}"])
        // [{"op":"replace","path":"/name","value":"e\u{301}"}]
        guard case .object(let members) = both else { throw StoreError(.decode, "not an object") }
        #expect(members.count == 2)
        #expect(patch == [.replace(path: "/name", value: .string("e\u{301}"))])
        #expect(try JSONCEncoder().encodeToJSONString(patch).utf8.elementsEqual(
            #"[{"op":"replace","path":"/name","value":"e\#u{301}"}]"#.utf8))
    }
}
