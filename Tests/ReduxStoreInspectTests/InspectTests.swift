import Foundation
import ReduxStore
import ReduxStoreInspectKit
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
    try inspect(arguments)
}

private func inspect(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
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

    @Test("\"\u{E9}\" and \"e\u{301}\" are different strings and keys: diff reports them, show prints both")
    func codePoints() throws {
        let folder = temporaryFolder()
        let before = folder + "/before.json"
        let after = folder + "/after.json"
        let both = folder + "/both.json"
        try "{\"name\": \"\u{E9}\"}".write(toFile: before, atomically: true, encoding: .utf8)
        try "{\"name\": \"e\u{301}\"}".write(toFile: after, atomically: true, encoding: .utf8)
        try "{\"\u{E9}\": 1, \"e\u{301}\": 2}".write(toFile: both, atomically: true, encoding: .utf8)
        // Compared as bytes: String's == would call the look-alikes equal.
        let text = try inspect("diff", before, after)
        #expect(text.status == 0)
        #expect(Array(text.out.utf8) == Array("replace /name \"e\u{301}\"\n".utf8))
        let patch = try inspect("diff", before, after, "--json")
        #expect(Array(patch.out.utf8) == Array("[{\"op\":\"replace\",\"path\":\"/name\",\"value\":\"e\u{301}\"}]\n".utf8))
        let added = try inspect("diff", before, both, "--json")
        #expect(Array(added.out.utf8) == Array((
            "[{\"op\":\"remove\",\"path\":\"/name\"},{\"op\":\"add\",\"path\":\"/e\u{301}\",\"value\":2},"
                + "{\"op\":\"add\",\"path\":\"/\u{E9}\",\"value\":1}]\n").utf8))
        let shown = try inspect("show", both, "--json")
        #expect(shown.status == 0)
        #expect(Array(shown.out.utf8) == Array(
            "{\"file\":\"\(both)\",\"pointer\":\"\",\"value\":{\"e\u{301}\":2,\"\u{E9}\":1}}\n".utf8))
        let pretty = try inspect("show", both)
        #expect(Array(pretty.out.utf8) == Array("{\n  \"e\u{301}\" : 2,\n  \"\u{E9}\" : 1\n}\n".utf8))
        let member = try inspect("show", both, "--pointer", "/e\u{301}")
        #expect(member.out == "2\n")
    }

    @Test("show reads a saved state by the store's rules: a state 256 levels deep, other keys beside")
    func savedStateAsTheStoreReadsIt() throws {
        let folder = temporaryFolder()
        // Given a state nested as deep as a store saves and opens it.
        let deep = folder + "/deep.json"
        let nest = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
        try #"{"reduxstore":1,"version":3,"state":\#(nest)}"#.write(toFile: deep, atomically: true, encoding: .utf8)
        let store = try Store<JSONValue>(contentsOf: deep, reducers: [])
        #expect(store.version == 3)
        // When shown, then it is a saved state at version 3, as the store read it.
        let shown = try inspect("show", deep, "--pointer", "/0/0", "--json")
        #expect(shown.status == 0, "\(shown.err)")
        #expect(shown.out.hasPrefix(#"{"file":"\#(deep)","pointer":"/0/0","value":[[[["#))
        #expect(shown.out.hasSuffix(#"]]]],"version":3}"# + "\n"))
        // A key beside the three: the store opens it as a saved state, and so does show.
        let extra = folder + "/extra.json"
        try #"{"reduxstore":1,"version":4,"state":{"a":1},"note":"x"}"#.write(toFile: extra, atomically: true, encoding: .utf8)
        #expect(try Store<JSONValue>(contentsOf: extra, reducers: []).version == 4)
        let extraShown = try inspect("show", extra, "--json")
        #expect(extraShown.out == #"{"file":"\#(extra)","pointer":"","value":{"a":1},"version":4}"# + "\n")
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

    @Test("show, diff and state print each number of its kind: a whole double stays a double")
    func numberKinds() throws {
        let folder = temporaryFolder()
        let time = #""time":"2026-12-07T18:31:44.780Z""#
        try #"{"reduxstore":1,"version":0,"state":{"one":1,"z":0,"big":1}}"#
            .write(toFile: folder + "/base.json", atomically: true, encoding: .utf8)
        try #"{"reduxstore":1,"version":1,"state":{"one":1.0,"z":-0.0,"big":1e16}}"#
            .write(toFile: folder + "/after.json", atomically: true, encoding: .utf8)
        try (#"{"version":1,"identifier":"set",\#(time),"patch":[{"op":"replace","path":"/one","value":1.0},"#
            + #"{"op":"replace","path":"/z","value":-0.0},{"op":"replace","path":"/big","value":1e16}]}"# + "\n")
            .write(toFile: folder + "/kinds.journal", atomically: true, encoding: .utf8)
        let doubles = #"{"big":1e+16,"one":1.0,"z":-0.0}"#
        let shown = try inspect("show", folder + "/after.json", "--json")
        #expect(shown.out.contains(#""value":\#(doubles)"#), "\(shown.out)")
        let rebuilt = try inspect("state", folder + "/base.json", folder + "/kinds.journal", "--at", "1", "--json")
        #expect(rebuilt.out.contains(#""value":\#(doubles)"#), "\(rebuilt.out)")
        let patch = try inspect("diff", folder + "/base.json", folder + "/after.json", "--json")
        #expect(patch.out == #"[{"op":"replace","path":"/big","value":1e+16},{"op":"replace","path":"/one","value":1.0},"#
            + #"{"op":"replace","path":"/z","value":-0.0}]"# + "\n", "\(patch.out)")
        // Read back by this library, the printed patch turns the one state into the other, kinds included.
        let operations = try JSONCDecoder().decode([JSONPatch.Operation].self, fromJSONString: patch.out)
        let base = try JSONDocument(contentsOf: folder + "/base.json").value
        let after = try JSONDocument(contentsOf: folder + "/after.json").value
        #expect(try JSONPatch.apply(operations, to: base) == after)
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

    @Test("journal: actions per source, and with --by-source each source's identifiers")
    func journalBySource() throws {
        let folder = temporaryFolder()
        let store = Store(reducers: [reducer], state: AppState())
        try store.startJournal(at: folder + "/app.journal")
        for title in ["a", "b", "c"] { store.dispatchAction(AddTodo(title: title), file: "App/Feature.swift", line: 42) }
        store.dispatchAction(Toggle(index: 0), file: "App/Feature.swift", line: 42)
        store.dispatchAction(Toggle(index: 1), file: "App/Other.swift", line: 7)
        store.dispatch(batch: [Toggle(index: 2)], source: .unknown)
        store.stopJournal()
        let text = try inspect("journal", folder + "/app.journal")
        #expect(text.status == 0)
        #expect(text.out.contains("actions per source (1 recorded without one)\n  4  Feature.swift:42\n  1  Other.swift:7\n"), "\(text.out)")
        let grouped = try inspect("journal", folder + "/app.journal", "--by-source")
        #expect(grouped.out.contains("  4  Feature.swift:42\n      3  todo.add\n      1  todo.toggle\n  1  Other.swift:7\n      1  todo.toggle\n"), "\(grouped.out)")
        let result = try inspect("journal", folder + "/app.journal", "--json")
        let summary = try #require(try json(result.out) as? [String: Any])
        let sources = try #require(summary["sources"] as? [[String: Any]])
        #expect(sources.map { $0["source"] as? String } == ["Feature.swift:42", "Other.swift:7"])
        #expect(summary["withoutSource"] as? Int == 1)
    }

    @Test("journal, state: lines the journal wrote without their payload or patch are counted and named")
    func leftOutParts() throws {
        // Given a journal whose version 2 holds NaN in its state and in its payload.
        let folder = temporaryFolder()
        let path = folder + "/gauge.journal"
        let store = Store<JSONValue>(reducers: [{ state, action in
            if let action = action as? JSONAction, let payload = action.payload { state = ["reading": payload] }
        }], state: ["reading": 0])
        var options = JournalOptions()
        options.recordPatches = true
        try store.startJournal(at: path, options: options)
        store.dispatchAction(JSONAction(identifier: "read", payload: 1))
        store.dispatchAction(JSONAction(identifier: "read", payload: .double(.nan)))
        store.dispatchAction(JSONAction(identifier: "read", payload: 3))
        #expect(throws: StoreError.self) { try store.flushJournal() }
        store.stopJournal()
        // When summarised: the left-out parts are counted, the first named with its line.
        let summary = try inspect("journal", path)
        #expect(summary.status == 0)
        #expect(summary.out.contains(
            #"payload left out 1 (first: gauge.journal:2: its payload holds a number JSON cannot hold (NaN or an infinity) at "")"#))
        #expect(summary.out.contains(
            #"patch left out   1 (first: gauge.journal:2: the patch holds a number JSON cannot hold (NaN or an infinity) at "/reading")"#))
        // When the state is rebuilt past it: exit status 1, the line and the reason.
        let base = folder + "/base.json"
        try #"{"reading":0}"#.write(toFile: base, atomically: true, encoding: .utf8)
        #expect(try inspect("state", base, path, "--at", "1").out == "state at version 1\n{\n  \"reading\" : 1\n}\n")
        let rebuilt = try inspect("state", base, path, "--at", "3")
        #expect(rebuilt.status == 1)
        #expect(rebuilt.err == #"reduxstore-inspect: gauge.journal:2: the patch of version 2 was not recorded: the patch holds a number JSON cannot hold (NaN or an infinity) at "/reading""# + "\n")
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

    @Test("journal, state: versions past Int64.max are read and printed exactly")
    func wideVersions() throws {
        let folder = temporaryFolder()
        let time = #""time":"2026-11-23T10:00:00.000Z""#
        let journal = folder + "/wide.journal"
        try ([
            #"{"version":9223372036854775808,"identifier":"a","batch":9223372036854775808,\#(time),"patch":[{"op":"add","path":"/a","value":1}]}"#,
            #"{"version":9223372036854775809,"identifier":"a","batch":9223372036854775808,\#(time),"patch":[{"op":"add","path":"/b","value":2}]}"#,
        ].joined(separator: "\n") + "\n").write(toFile: journal, atomically: true, encoding: .utf8)
        let text = try inspect("journal", journal)
        #expect(text.status == 0, "\(text.err)")
        #expect(text.out.contains("versions         9,223,372,036,854,775,808 to 9,223,372,036,854,775,809\n"))
        #expect(text.out.contains("batches          1 (2 entries)\n"))
        let json = try inspect("journal", journal, "--json")
        #expect(json.out.contains(#""firstVersion":9223372036854775808,"#))
        #expect(json.out.contains(#""lastVersion":9223372036854775809,"#))
        let base = folder + "/base.json"
        try "{}".write(toFile: base, atomically: true, encoding: .utf8)
        let state = try inspect("state", base, journal, "--at", "9223372036854775809", "--json")
        #expect(state.status == 0, "\(state.err)")
        #expect(state.out == #"{"file":"\#(journal)","pointer":"","value":{"a":1,"b":2},"version":9223372036854775809}"# + "\n")
        // Before the journal: the plain base is the state at the version before its first entry.
        let before = try inspect("state", base, journal, "--at", "1")
        #expect(before.status == 1)
        #expect(before.err == "reduxstore-inspect: \(journal): version 1 is before the base state's version 9223372036854775807\n")
        let after = try inspect("state", base, journal, "--at", "9223372036854775810")
        #expect(after.err == "reduxstore-inspect: \(journal): version 9223372036854775810 is not in the journal (versions 9223372036854775808 to 9223372036854775809 after the base)\n")
        // The largest version a line holds, rebuilt.
        let last = folder + "/last.journal"
        try (#"{"version":18446744073709551615,"identifier":"a",\#(time),"patch":[]}"# + "\n")
            .write(toFile: last, atomically: true, encoding: .utf8)
        let top = try inspect("state", base, last, "--at", "18446744073709551615", "--json")
        #expect(top.status == 0, "\(top.err)")
        #expect(top.out.hasSuffix(#""version":18446744073709551615}"# + "\n"))
    }

    @Test("hostile journals and states: exit status 1 and one line naming the file, never a signal")
    func hostileInput() throws {
        let folder = temporaryFolder()
        let time = #""time":"2026-11-23T10:00:00.000Z""#
        func file(_ name: String, _ bytes: [UInt8]) throws -> String {
            let path = folder + "/" + name
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
        func file(_ name: String, _ text: String) throws -> String { try file(name, Array(text.utf8)) }
        let base = try file("base.json", "{}")
        let versionRange = #""version" is missing or not a whole number from 1 to 18446744073709551615"#
        // A nest of 250 arrays, added line after line one level below the last: 10,000 deep
        // after 40 lines, which no file could hold and whose walks overflowed the stack.
        let nest = String(repeating: "[", count: 250) + String(repeating: "]", count: 250)
        var deep = ""
        for line in 0..<40 {
            let path = String(repeating: "/0", count: 250 * line)
            deep += #"{"version":\#(line + 1),"identifier":"a",\#(time),"patch":[{"op":"add","path":"\#(path)","value":\#(nest)}]}"# + "\n"
        }
        let deepPath = String(repeating: "/0", count: 250)
        let cases: [(arguments: [String], error: String)] = [
            // Version 0 as the first line (the state before it would be version -1).
            (["state", base, try file("zero.journal", #"{"version":0,"identifier":"a",\#(time),"patch":[]}"# + "\n"), "--at", "1"],
             "zero.journal:1: \(versionRange)"),
            (["journal", try file("zero2.journal", #"{"version":0,"identifier":"a",\#(time)}"# + "\n")],
             "zero2.journal:1: \(versionRange)"),
            (["journal", try file("over.journal", #"{"version":18446744073709551616,"identifier":"a",\#(time)}"# + "\n")],
             "over.journal:1: \(versionRange)"),
            (["journal", try file("negative.journal", #"{"version":-9223372036854775808,"identifier":"a",\#(time)}"# + "\n")],
             "negative.journal:1: \(versionRange)"),
            (["journal", try file("float.journal", #"{"version":1e3,"identifier":"a",\#(time)}"# + "\n")],
             "float.journal:1: \(versionRange)"),
            // After UInt64.max nothing follows.
            (["journal", try file("past-max.journal",
                #"{"version":18446744073709551615,"identifier":"a",\#(time)}"# + "\n" + #"{"version":1,"identifier":"a",\#(time)}"# + "\n")],
             "past-max.journal:2: version 1 goes back (after 18446744073709551615)"),
            (["journal", try file("batch.journal", #"{"version":9223372036854775808,"identifier":"a","batch":9223372036854775809,\#(time)}"# + "\n")],
             #"batch.journal:1: "batch" is not a version from 1 to this line's "version""#),
            (["journal", try file("newlines.journal", "\n\n\n")],
             "newlines.journal:1: JSON text does not parse at byte 0: unexpected end of data"),
            (["journal", try file("nul.journal", Array(#"{"version":1,"identifier":"a",\#(time)}"#.utf8) + [0, 0x0A])],
             "nul.journal:1: JSON text does not parse at byte 64: unexpected text after the value"),
            (["journal", try file("utf8.journal", Array(#"{"version":1,"identifier":"a"#.utf8) + [0xFF] + Array(#"",\#(time)}"#.utf8) + [0x0A])],
             "utf8.journal:1: JSON text does not parse at byte 28: invalid UTF-8"),
            // A state's bytes are read as they are: invalid UTF-8 is an error, not U+FFFD.
            (["show", try file("utf8.json", Array(#"{"a":"x"#.utf8) + [0xFF] + Array(#"y"}"#.utf8))],
             "\(folder)/utf8.json: JSON text does not parse at byte 7: invalid UTF-8"),
            (["diff", base, try file("overlong.json", Array(#"{"a"#.utf8) + [0xC0, 0x80] + Array(#"":1}"#.utf8))],
             "\(folder)/overlong.json: JSON text does not parse at byte 3: invalid UTF-8"),
            (["state", base, try file("empty.journal", ""), "--at", "1"],
             "\(folder)/empty.journal: version 1 is not in the journal (no entries after the base)"),
            (["journal", folder], "open \(folder): not a regular file (a folder)"),
            // At the base's own version the journal is still read: it must be there.
            (["state", try file("v5.json", #"{"reduxstore":1,"version":5,"state":{}}"#), folder + "/none.journal", "--at", "5"],
             "journal \(folder)/none.journal: no such file"),
            (["state", folder, base, "--at", "1"], "open \(folder): not a regular file (a folder)"),
            (["state", try file("deep.json", String(repeating: "[", count: 257) + String(repeating: "]", count: 257)), base, "--at", "1"],
             "\(folder)/deep.json: \(String(repeating: "[0]", count: 256)): nesting deeper than 256 levels"),
            (["state", base, try file("deep.journal", deep), "--at", "40"],
             #"deep.journal:2: patch[0]: path "\#(deepPath)": the state would nest 500 containers deep, more than the limit of 256"#),
            // A saved state's version: at most 2^63 - 2, as the store reads it.
            (["show", try file("v63.json", #"{"reduxstore":1,"version":9223372036854775807,"state":{}}"#)],
             #"\#(folder)/v63.json: not a saved state: version: expected a whole number from 0 to 2^63 - 2"#),
            // A newline and an escape sequence quoted from the input stay escaped, on one line.
            (["state", base, try file("control.journal", #"{"version":1,"identifier":"a",\#(time),"patch":[{"op":"remove","path":"/a\nb\u001b[31m\u009b"}]}"# + "\n"), "--at", "1"],
             #"control.journal:1: patch[0]: path "/a\u000ab\u001b[31m\u009b": no such member: the document has no key "a\u000ab\u001b[31m\u009b""#),
        ]
        for (arguments, error) in cases {
            let result = try inspect(arguments)
            #expect(result.status == 1, "\(arguments)")
            #expect(result.err == "reduxstore-inspect: \(error)\n", "\(arguments)")
        }
        let fifo = folder + "/fifo.journal"
        #expect(mkfifo(fifo, 0o600) == 0)
        let fifoResult = try inspect(["journal", fifo])
        #expect(fifoResult.status == 1)
        #expect(fifoResult.err == "reduxstore-inspect: open \(fifo): not a regular file (a FIFO)\n")
        // A sparse file of 1 TiB (no newline in it): read a piece at a time and refused at the
        // limit on one line, not read whole into memory.
        let sparse = folder + "/sparse.journal"
        #expect(FileManager.default.createFile(atPath: sparse, contents: nil))
        defer { unlink(sparse) }
        #expect(truncate(sparse, 1 << 40) == 0)
        let sparseResult = try inspect(["journal", sparse])
        #expect(sparseResult.status == 1)
        #expect(sparseResult.err == "reduxstore-inspect: sparse.journal:1: a line longer than the limit of 67108864 bytes of JSON text\n")
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
