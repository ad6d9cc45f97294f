import Foundation
import ReduxStore
import ReduxStoreTestSupport
import Testing

private struct Todo: Codable, Equatable, Sendable {
    var title: String
    var done = false
}

private struct AppState: Codable, Equatable, Sendable {
    var todos: [Todo] = []
}

private struct AddTodo: Action, Codable {
    var title: String
    var identifier: String { "todo.add" }
}

private struct Toggle: Action, Codable {
    var index: Int
    var identifier: String { "todo.toggle" }
}

private let reducer: Reducer<AppState> = { state, action in
    if let add = action as? AddTodo { state.todos.append(Todo(title: add.title)) }
    if let toggle = action as? Toggle, state.todos.indices.contains(toggle.index) {
        state.todos[toggle.index].done.toggle()
    }
}

/// Runs reduxstore-inspect with `arguments`: its exit status, standard output and error.
private func inspect(_ arguments: String...) throws -> (status: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: siblingExecutable("reduxstore-inspect"))
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["NO_COLOR"] = "1"
    process.environment = environment
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
}

private func json(_ text: String) throws -> Any {
    try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
}

/// A journal recorded with patches: 6 actions, 2 of them a batch; and the saved states at
/// versions 0 and 6.
private func recorded() throws -> (folder: String, journal: String, base: String, last: String, store: Store<AppState>) {
    let folder = temporaryFolder()
    let store = Store(reducers: [reducer], state: AppState())
    try store.save(to: folder + "/base.json")
    var options = JournalOptions()
    options.recordPatches = true
    try store.startJournal(at: folder + "/app.journal", options: options)
    store.dispatchAction(AddTodo(title: "milk"))
    store.dispatchAction(AddTodo(title: "eggs"))
    store.dispatchAction(Toggle(index: 0))
    store.dispatchActions([AddTodo(title: "tea"), Toggle(index: 2)])
    store.dispatchAction(JSONAction(identifier: "todo.toggle", payload: ["index": 1]))
    store.stopJournal()
    try store.save(to: folder + "/last.json")
    return (folder, folder + "/app.journal", folder + "/base.json", folder + "/last.json", store)
}

@Suite("reduxstore-inspect")
struct InspectTests {
    @Test("show: a saved state, a part at a JSON Pointer, --json; a bad pointer names it")
    func show() throws {
        let files = try recorded()
        let whole = try inspect("show", files.last)
        #expect(whole.status == 0)
        #expect(whole.out.hasPrefix("saved state, version 6\n"))
        #expect(whole.out.contains(#""title" : "milk""#))
        let part = try inspect("show", files.last, "--pointer", "/todos/2/title", "--json")
        #expect(part.status == 0)
        let object = try #require(try json(part.out) as? [String: Any])
        #expect(object["value"] as? String == "tea")
        #expect(object["version"] as? Int == 6)
        let bad = try inspect("show", files.last, "--pointer", "/todos/9")
        #expect(bad.status == 1)
        #expect(bad.err == "reduxstore-inspect: pointer \"/todos/9\": no element \"9\" at \"/todos/9\": the array has 3 elements\n")
        // Control characters in what it quotes are escaped: one line, nothing for the terminal.
        let hostile = try inspect("show", files.last, "--pointer", "/x\u{1B}[2J\ny")
        #expect(hostile.status == 1)
        #expect(hostile.err.contains(#"/x\u001b[2J\u000ay"#))
        #expect(hostile.err.filter { $0 == "\n" }.count == 1)
        #expect(!hostile.err.contains("\u{1B}"))
        // A plain JSON file.
        let plain = files.folder + "/plain.json"
        try #"{"a": [1, 2.5, "x"]}"#.write(toFile: plain, atomically: true, encoding: .utf8)
        #expect(try inspect("show", plain, "--pointer", "/a/1").out == "2.5\n")
    }

    @Test("bad files: exit status 1 and one line naming the file and the byte")
    func badFiles() throws {
        let folder = temporaryFolder()
        let broken = folder + "/broken.json"
        try #"{"a": [1, 2,, 3]}"#.write(toFile: broken, atomically: true, encoding: .utf8)
        let result = try inspect("show", broken)
        #expect(result.status == 1)
        #expect(result.err.hasPrefix("reduxstore-inspect: \(broken): "))
        #expect(result.err.contains("at byte"))
        #expect(result.err.filter { $0 == "\n" }.count == 1)
        let missing = try inspect("diff", folder + "/none.json", broken)
        #expect(missing.status == 1 && missing.err.contains("none.json"))
    }

    @Test("diff: the RFC 6902 patch between two saved states; --json applies back")
    func diff() throws {
        let files = try recorded()
        let text = try inspect("diff", files.base, files.last)
        #expect(text.status == 0)
        #expect(text.out.hasPrefix("add     /todos/0 {\"done\":true,\"title\":\"milk\"}\n"))
        #expect(text.out.split(separator: "\n").count == 3)
        let same = try inspect("diff", files.last, files.last)
        #expect(same.out == "no difference\n")
        let patch = try inspect("diff", files.last, files.base, "--json")
        let operations = try JSONDecoder().decode([JSONPatch.Operation].self, from: Data(patch.out.utf8))
        let after = try JSONValue(encoding: files.store.currentState())
        #expect(try JSONPatch.apply(operations, to: after) == (try JSONValue(encoding: AppState())))
    }

    @Test("journal: entries, versions, identifiers, batches, patches; --json")
    func journal() throws {
        let files = try recorded()
        let text = try inspect("journal", files.journal)
        #expect(text.status == 0)
        #expect(text.out.contains("entries          6\n"))
        #expect(text.out.contains("versions         1 to 6\n"))
        #expect(text.out.contains("batches          1 (2 entries)\n"))
        #expect(text.out.contains("with a patch     6\n"))
        #expect(text.out.contains("3  todo.add\n") && text.out.contains("3  todo.toggle\n"))
        let result = try inspect("journal", files.journal, "--json")
        let summary = try #require(try json(result.out) as? [String: Any])
        #expect(summary["entries"] as? Int == 6)
        #expect(summary["lastVersion"] as? Int == 6)
        #expect((summary["identifiers"] as? [[String: Any]])?.count == 2)
        #expect((summary["seconds"] as? Double).map { $0 >= 0 && $0 < 60 } == true)
    }

    @Test("journal: a gap, a torn line, not a journal: the file and line")
    func badJournals() throws {
        let folder = temporaryFolder()
        let time = #""time":"2026-11-23T10:00:00.000Z""#
        let gap = folder + "/gap.journal"
        try (#"{"version":1,"identifier":"a",\#(time)}"# + "\n" + #"{"version":3,"identifier":"a",\#(time)}"# + "\n")
            .write(toFile: gap, atomically: true, encoding: .utf8)
        let gapResult = try inspect("journal", gap)
        #expect(gapResult.status == 1)
        #expect(gapResult.err == "reduxstore-inspect: gap.journal:2: version 3 follows 1: a gap of 1 entries\n")
        let torn = folder + "/torn.journal"
        try (#"{"version":1,"identifier":"a",\#(time)}"# + "\n" + #"{"version":2,"ident"#)
            .write(toFile: torn, atomically: true, encoding: .utf8)
        #expect(try inspect("journal", torn).err.hasPrefix("reduxstore-inspect: torn.journal:2: the last line is torn"))
        let notJSON = folder + "/not.journal"
        try "hello\n".write(toFile: notJSON, atomically: true, encoding: .utf8)
        #expect(try inspect("journal", notJSON).err.hasPrefix("reduxstore-inspect: not.journal:1: "))
    }

    @Test("state: the state at each version, rebuilt from the patches, equals the store's")
    func state() throws {
        let files = try recorded()
        var replayed = AppState()
        let steps: [(UInt64, (inout AppState) -> Void)] = [
            (1, { $0.todos.append(Todo(title: "milk")) }),
            (2, { $0.todos.append(Todo(title: "eggs")) }),
            (3, { $0.todos[0].done = true }),
            (4, { $0.todos.append(Todo(title: "tea")) }),
            (5, { $0.todos[2].done = true }),
            (6, { _ in }),  // a JSONAction the reducer does not handle: an empty patch
        ]
        #expect(try inspect("state", files.base, files.journal, "--at", "0", "--json").status == 0)
        for (version, change) in steps {
            change(&replayed)
            let result = try inspect("state", files.base, files.journal, "--at", "\(version)", "--json")
            #expect(result.status == 0, "\(result.err)")
            let object = try #require(try json(result.out) as? [String: Any])
            let value = try JSONSerialization.data(withJSONObject: object["value"] as Any)
            #expect(try JSONDecoder().decode(AppState.self, from: value) == replayed, "version \(version)")
        }
        let outside = try inspect("state", files.base, files.journal, "--at", "7")
        #expect(outside.status == 1)
        #expect(outside.err.contains("version 7 is not in the journal"))
        // A journal without patches: the line that has none is named.
        let plain = files.folder + "/plain.journal"
        let store = Store(reducers: [reducer], state: AppState())
        try store.startJournal(at: plain)
        store.dispatchAction(AddTodo(title: "milk"))
        store.stopJournal()
        let noPatch = try inspect("state", files.base, plain, "--at", "1")
        #expect(noPatch.err == "reduxstore-inspect: plain.journal:1: no \"patch\" (record the journal with recordPatches)\n")
    }

    @Test("--help explains every command with an example")
    func help() throws {
        let top = try inspect("--help")
        #expect(top.status == 0)
        for command in ["show", "diff", "journal", "state"] {
            #expect(top.out.contains(command))
            let help = try inspect(command, "--help")
            #expect(help.status == 0)
            #expect(help.out.contains("Example:") && help.out.contains("reduxstore-inspect \(command)"))
        }
    }

    @Test("Inspector.seconds reads the journal's times")
    func seconds() {
        #expect(Inspector.seconds(of: "1970-01-01T00:00:01.500Z") == 1.5)
        #expect(Inspector.seconds(of: "2026-11-23T00:00:00.000Z") == 1_795_392_000)
        #expect(Inspector.seconds(of: "yesterday") == nil)
    }
}
