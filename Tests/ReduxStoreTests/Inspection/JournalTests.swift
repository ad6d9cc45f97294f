import Foundation
@_spi(Bindings) @testable import ReduxStore
import ReduxStoreInspectKit
import ReduxStoreTestSupport
import Testing

/// A typed, journaled action.
private struct Add: Action, Codable, Equatable {
    var amount: Int
    var identifier: String { "add" }
}

/// An ``Add`` that notifies no observer.
private struct QuietAdd: Action, Codable {
    var amount: Int
    var identifier: String { "add.quietly" }
    var notifiesObservers: Bool { false }
}

/// An action the journal cannot record (not Encodable, not a JSONAction).
private struct Opaque: Action {
    var identifier: String { "opaque" }
}

/// A state the random test drives: a list, a counter and a map.
private struct Model: Codable, Equatable, Sendable {
    var total = 0
    var items: [String] = []
    var tags: [String: Int] = [:]
}

private let modelReducer: Reducer<Model> = { state, action in
    if let add = action as? Add {
        state.total += add.amount
        return
    }
    if let add = action as? QuietAdd {
        state.total += add.amount
        return
    }
    guard let action = action as? JSONAction else { return }
    switch action.identifier {
    case "push":
        if case .string(let text)? = action.payload { state.items.append(text) }
    case "pop":
        if !state.items.isEmpty { state.items.removeLast() }
    case "tag":
        if case .object(let object)? = action.payload, case .string(let key)? = object["key"],
           case .int(let value)? = object["value"] {
            state.tags[key] = Int(value)
        }
    default: break
    }
}

private func lines(_ path: String) -> [[String: Any]] {
    guard let text = readText(path) else { return [] }
    return text.split(separator: "\n").compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
}

private var typedActions: ActionTypes {
    var actions = ActionTypes()
    actions.register(Add.self, for: "add")
    return actions
}

@Suite("Journal: JSON Lines of every applied action; replay; time travel")
struct JournalTests {
    @Test("each applied action is one line: version, identifier, payload, time; typed and batch marks")
    func lineFormat() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        try store.startJournal(at: path)
        store.dispatchAction(Add(amount: 2))
        store.dispatchAction(JSONAction(identifier: "push", payload: "milk"))
        store.dispatchAction(JSONAction(identifier: "pop"))
        store.dispatchActions([Add(amount: 1), Add(amount: 1)])
        store.dispatchAction(Opaque())
        store.stopJournal()
        store.stopJournal()  // idempotent
        let entries = lines(path)
        #expect(entries.count == 6)
        #expect(entries.map { $0["version"] as? Int } == [1, 2, 3, 4, 5, 6])
        #expect(entries.map { $0["identifier"] as? String } == ["add", "push", "pop", "add", "add", "opaque"])
        #expect((entries[0]["payload"] as? [String: Any])?["amount"] as? Int == 2)
        #expect(entries[0]["typed"] as? Bool == true)
        #expect(entries[1]["payload"] as? String == "milk")
        #expect(entries[1]["typed"] == nil)
        #expect(entries[2]["payload"] == nil)
        #expect(entries[3]["batch"] as? Int == 4)
        #expect(entries[4]["batch"] as? Int == 4)
        #expect(entries[5]["replayable"] as? Bool == false)
        let time = try #require(entries[0]["time"] as? String)
        #expect(time.count == 24 && time.hasSuffix("Z") && time.contains("T"))
        // Nothing is recorded after the journal stopped.
        store.dispatchAction(Add(amount: 1))
        #expect(lines(path).count == 6)
    }

    @Test("replaying a typed action whose payload does not decode: the line and the payload's coding path")
    func replayNamesThePayloadPath() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        try Data(#"""
            {"version":1,"identifier":"add","payload":{"amount":2},"typed":true,"time":"2026-11-29T10:00:00.000Z"}
            {"version":2,"identifier":"add","payload":{"amount":"three"},"typed":true,"time":"2026-11-29T10:00:00.001Z"}

            """#.utf8).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: StoreError.self) {
            try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions)
        }
        #expect(error.kind == .decode)
        #expect(error.message.hasPrefix("journal.jsonl:2: payload.amount: "), "\(error.message)")
    }

    @Test("replay rebuilds the state at any version, batches as batches")
    func replay() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        store.keepHistory(100)
        try store.startJournal(at: path)
        for index in 0..<30 {
            switch index % 3 {
            case 0: store.dispatchAction(Add(amount: index))
            case 1: store.dispatchAction(JSONAction(identifier: "push", payload: .string("item \(index)")))
            default: store.dispatchActions([
                JSONAction(identifier: "tag", payload: ["key": .string("k\(index % 5)"), "value": .int(Int64(index))]),
                JSONAction(identifier: "pop"),
            ])
            }
        }
        store.stopJournal()
        let replayed = try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions)
        #expect(replayed.version == store.version)
        #expect(replayed.currentState() == store.currentState())
        for version in [UInt64(0), 1, 5, 13, 20, store.version] {
            let partial = try Store(
                replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions,
                through: version)
            #expect(partial.version == version)
            if version > 0 {
                #expect(partial.currentState() == store.historyState(at: version))
            }
        }
        #expect(throws: StoreError.self) {
            try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions,
                      through: store.version + 1)
        }
    }

    @Test("10,000 random actions from 4 threads: the replayed state equals the live one at 20 versions")
    func randomFromThreads() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        store.keepHistory(20_000)
        try store.startJournal(at: path)
        onThreads(4) { thread in
            var generator = SystemRandomNumberGenerator()
            for index in 0..<2_500 {
                switch Int.random(in: 0..<5, using: &generator) {
                case 0: store.dispatchAction(Add(amount: Int.random(in: -5...5, using: &generator)))
                case 1: store.dispatchAction(JSONAction(identifier: "push", payload: .string("t\(thread)-\(index)")))
                case 2: store.dispatchAction(JSONAction(identifier: "pop"))
                case 3: store.dispatchAction(JSONAction(
                    identifier: "tag",
                    payload: ["key": .string("k\(index % 7)"), "value": .int(Int64(index))]))
                default: store.dispatchActions([Add(amount: 1), JSONAction(identifier: "pop")])
                }
            }
        }
        store.stopJournal()
        #expect(store.version >= 10_000)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let version = UInt64.random(in: 1...store.version, using: &generator)
            let replayed = try Store(
                replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions,
                through: version)
            #expect(replayed.currentState() == store.historyState(at: version), "version \(version)")
        }
    }

    @Test("a gap, a version going back, a torn last line, an action not replayable, a bad batch: errors naming the line")
    func badJournals() throws {
        let folder = temporaryFolder()
        func replay(_ text: String) -> StoreError? {
            let path = folder + "/bad-\(UUID().uuidString).jsonl"
            _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
            do {
                _ = try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions)
                return nil
            } catch {
                return error
            }
        }
        let time = #""time":"2026-11-22T10:00:00.000Z""#
        let good = #"{"version":1,"identifier":"pop",\#(time)}"# + "\n"
        #expect(replay(good) == nil)
        let gap = good + #"{"version":3,"identifier":"pop",\#(time)}"# + "\n"
        #expect(replay(gap)?.message.contains(":2: version 3 follows 1") == true)
        let back = good + #"{"version":1,"identifier":"pop",\#(time)}"# + "\n"
        #expect(replay(back)?.message.contains(":2: version 1 goes back") == true)
        let torn = good + #"{"version":2,"identifier":"po"#
        #expect(replay(torn)?.message.contains(":2: the last line is torn") == true)
        let opaque = good + #"{"version":2,"identifier":"opaque","replayable":false,\#(time)}"# + "\n"
        #expect(replay(opaque)?.message.contains(":2: action \"opaque\"") == true)
        let unregistered = good + #"{"version":2,"identifier":"mystery","payload":{},"typed":true,\#(time)}"# + "\n"
        #expect(replay(unregistered)?.message.contains("register its type") == true)
        let notJSON = good + "nonsense\n"
        #expect(replay(notJSON)?.message.contains(":2:") == true)
        let badPayload = good + #"{"version":2,"identifier":"add","payload":{"amount":"x"},"typed":true,\#(time)}"# + "\n"
        #expect(replay(badPayload)?.message.contains(":2:") == true)
        for batch in ["-1", "0", "3", "\"1\"", "1.5"] {
            let badBatch = good + #"{"version":2,"identifier":"pop","batch":\#(batch),\#(time)}"# + "\n"
            #expect(replay(badBatch)?.message.contains(#":2: "batch" is not a version"#) == true, "\(batch)")
        }
        let negativeVersion = #"{"version":-1,"identifier":"pop",\#(time)}"# + "\n"
        #expect(replay(negativeVersion)?.message.contains(#":1: "version" is missing"#) == true)
    }

    @Test("versions and batches past Int64.max read exactly; version 0 and past UInt64.max are refused")
    func versionsReadExactly() throws {
        let folder = temporaryFolder()
        let time = #""time":"2026-11-22T10:00:00.000Z""#
        func write(_ lines: [String]) -> String {
            let path = folder + "/journal-\(UUID().uuidString).jsonl"
            _ = FileManager.default.createFile(atPath: path, contents: Data(lines.map { $0 + "\n" }.joined().utf8))
            return path
        }
        // Given lines at versions 2^63 and 2^63 + 1, one batch from 2^63.
        let wide = write([
            #"{"version":9223372036854775808,"identifier":"pop","batch":9223372036854775808,\#(time)}"#,
            #"{"version":9223372036854775809,"identifier":"pop","batch":9223372036854775808,\#(time)}"#,
        ])
        // When replayed, then the store stands at the last version, read exactly.
        let replayed = try Store(replaying: wide, from: Model(), reducers: [modelReducer], actions: typedActions)
        #expect(replayed.version == 9_223_372_036_854_775_809)
        let summary = try Inspector.summarize(journal: wide)
        #expect(summary.firstVersion == 9_223_372_036_854_775_808)
        #expect(summary.lastVersion == 9_223_372_036_854_775_809)
        #expect(summary.batches == 1 && summary.entriesInBatches == 2)
        // The largest version a line holds.
        let last = write([#"{"version":18446744073709551615,"identifier":"pop",\#(time)}"#])
        #expect(try Inspector.summarize(journal: last).lastVersion == 18_446_744_073_709_551_615)
        #expect(try Store(replaying: last, from: Model(), reducers: [modelReducer], actions: typedActions).version
            == 18_446_744_073_709_551_615)
        // A batch past its line's version, read exactly (2^63 + 1 after 2^63).
        let batchAfter = write([#"{"version":9223372036854775808,"identifier":"pop","batch":9223372036854775809,\#(time)}"#])
        #expect(throws: StoreError.self) { try Inspector.summarize(journal: batchAfter) }
        // Version 0 (no entry has it: an entry's version is the store's after its action), one
        // past UInt64.max, and a float: refused with the line, not a trap.
        let base = write(["{}"])
        for version in ["0", "18446744073709551616", "1.0", "1e3", "-0"] {
            let path = write([#"{"version":\#(version),"identifier":"pop",\#(time)}"#])
            let expected = #":1: "version" is missing or not a whole number from 1 to 18446744073709551615"#
            do {
                _ = try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions)
                Issue.record("version \(version) replayed")
            } catch {
                #expect(error.message.hasSuffix(expected), "\(version): \(error.message)")
            }
            do {
                _ = try Inspector.state(at: 1, from: JSONDocument(contentsOf: base), journal: path)
                Issue.record("version \(version) rebuilt")
            } catch {
                #expect(error.message.hasSuffix(expected), "\(version): \(error.message)")
            }
        }
    }

    @Test("lines longer than the reader's piece of a file, across its edges, read whole")
    func longLines() throws {
        let folder = temporaryFolder()
        let path = folder + "/long.jsonl"
        // Given 10 lines of about 300 KB: 3 MB, read a megabyte at a time.
        var text = ""
        for version in 1...10 {
            let payload = String(repeating: Character(UnicodeScalar(UInt8(0x60 + version))), count: 300_000 + version)
            text += #"{"version":\#(version),"identifier":"push","payload":"\#(payload)","time":"2026-11-22T10:00:00.000Z"}"# + "\n"
        }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        // When summarised and replayed, then every line is read, whole and in order.
        let summary = try Inspector.summarize(journal: path)
        #expect(summary.entries == 10)
        #expect(summary.lastVersion == 10)
        let replayed = try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions)
        #expect(replayed.version == 10)
        #expect(replayed.currentState().items.map(\.count) == Array(300_001...300_010))
        #expect(replayed.currentState().items.map { $0.first } == Array("abcdefghij"))
    }

    @Test("files rotate by size; replay reads the rotated files in order")
    func rotation() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        var options = JournalOptions()
        options.maximumFileSize = 2_000
        options.maximumFiles = 50
        try store.startJournal(at: path, options: options)
        for index in 0..<300 {
            store.dispatchAction(JSONAction(identifier: "push", payload: .string("entry \(index)")))
            if index % 10 == 0 { Thread.sleep(forTimeInterval: 0.001) }
        }
        store.stopJournal()
        #expect(FileManager.default.fileExists(atPath: path + ".1"))
        let replayed = try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions)
        #expect(replayed.currentState() == store.currentState())

        // A rotated file taken away: the reader says which, instead of reading past the hole.
        #expect(FileManager.default.fileExists(atPath: path + ".3"))
        try FileManager.default.removeItem(atPath: path + ".2")
        do {
            try JournalReader.read(path) { (_) throws(StoreError) in true }
            Issue.record("a journal with a missing file was read")
        } catch {
            #expect(error.kind == .corrupt)
            #expect(error.message.contains("journal.jsonl.2 is missing though"))
        }
    }

    @Test("a full queue drops and counts with .drop; the replay then reports the gap")
    func overflowDrop() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        var options = JournalOptions()
        options.queueCapacity = 1
        options.overflow = .drop
        try store.startJournal(at: path, options: options)
        for _ in 0..<20_000 { store.dispatchAction(Add(amount: 1)) }
        let dropped = store.journalDroppedEntries
        store.stopJournal()
        let written = lines(path).count
        #expect(written + dropped == 20_000)
        if dropped > 0 {
            #expect(throws: StoreError.self) {
                try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions)
            }
        }
    }

    @Test("a full queue with .block loses nothing")
    func overflowBlock() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        var options = JournalOptions()
        options.queueCapacity = 2
        try store.startJournal(at: path, options: options)
        onThreads(4) { _ in
            for _ in 0..<2_000 { store.dispatchAction(Add(amount: 1)) }
        }
        store.stopJournal()
        #expect(lines(path).count == 8_000)
        #expect(store.journalDroppedEntries == 0)
    }

    @Test("the store's deinit writes what was recorded")
    func deinitFlushes() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        do {
            let store = Store(reducers: [modelReducer], state: Model())
            try store.startJournal(at: path)
            for _ in 0..<500 { store.dispatchAction(Add(amount: 1)) }
        }
        #expect(lines(path).count == 500)
    }

    @Test("flushJournal: every line recorded so far is in the file, the journal still running")
    func flush() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        try store.flushJournal()  // no journal: returns at once
        try store.startJournal(at: path)
        for round in 1...3 {
            for _ in 0..<100 { store.dispatchAction(Add(amount: 1)) }
            try store.flushJournal()
            #expect(lines(path).count == 100 * round)
        }
        store.stopJournal()
    }

    @Test("stopJournal and flushJournal inside a reducer neither deadlock nor lose a line")
    func insideReducer() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let holder = WeakStore<Model>()
        let store = Store(reducers: [modelReducer, { _, action in
            guard (action as? JSONAction)?.identifier == "stop" else { return }
            // Inside a reducer the flush returns at once: there is nothing it could report.
            #expect(throws: Never.self) { try holder.store?.flushJournal() }
            holder.store?.stopJournal()
        }], state: Model())
        holder.store = store
        try store.startJournal(at: path)
        for _ in 0..<50 { store.dispatchAction(Add(amount: 1)) }
        store.dispatchAction(JSONAction(identifier: "stop"))
        store.dispatchAction(Add(amount: 1))  // not recorded: the journal stopped
        // The file is finished on another thread: wait for the 50 lines.
        var waited = 0
        while lines(path).count < 50, waited < 5_000 {
            sleepBriefly()
            waited += 1
        }
        #expect(lines(path).count == 50)
    }

    @Test("typed payloads of every kind are written as JSON and replay to the same actions")
    func typedPayloads() throws {
        struct Odd: Action, Codable, Equatable {
            var text = "quote \" backslash \\ newline \n tab \t bell \u{07} é 🎉"
            var float: Float = 0.1
            var double = 2.5
            var whole = 3.0
            var negative: Int64 = .min
            var big: UInt64 = .max
            var nested: [[Int?]] = [[1, nil], [], [3]]
            var none: String? = nil
            var flags = [true, false]
            var identifier: String { "odd" }
        }
        struct Log: Codable, Equatable, Sendable { var seen: [Odd] = [] }
        let path = temporaryFolder() + "/journal.jsonl"
        let reducer: Reducer<Log> = { state, action in
            if let odd = action as? Odd { state.seen.append(odd) }
        }
        let store = Store(reducers: [reducer], state: Log())
        try store.startJournal(at: path)
        store.dispatchAction(Odd())
        var other = Odd()
        other.text = ""
        other.nested = []
        other.none = "some"
        store.dispatchAction(other)
        var notFinite = Odd()
        notFinite.double = .nan
        store.dispatchAction(notFinite)  // JSON cannot hold NaN: recorded as not replayable
        store.stopJournal()
        let entries = lines(path)
        #expect(entries.count == 3)
        #expect(entries[2]["replayable"] as? Bool == false)
        #expect(entries[2]["payload"] == nil)
        var actions = ActionTypes()
        actions.register(Odd.self, for: "odd")
        let replayed = try Store(
            replaying: path, from: Log(), reducers: [reducer], actions: actions, through: 2)
        #expect(replayed.currentState() == Log(seen: [Odd(), other]))
    }

    @Test("with recordPatches, the lines' patches rebuild every kept state from the first")
    func patchesRebuildStates() throws {
        struct Line: Decodable { let version: UInt64; let patch: [JSONPatch.Operation] }
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        store.keepHistory(1_000)
        var options = JournalOptions()
        options.recordPatches = true
        try store.startJournal(at: path, options: options)
        var random = SystemRandomNumberGenerator()
        for _ in 0..<400 {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: store.dispatchAction(Add(amount: Int.random(in: -5...5, using: &random)))
            case 1: store.dispatchAction(JSONAction(identifier: "push", payload: .string("a\"b/c~\(Int.random(in: 0..<9, using: &random))")))
            case 2: store.dispatchAction(JSONAction(identifier: "pop"))
            default:
                store.dispatchAction(JSONAction(identifier: "tag", payload: [
                    "key": .string(["x", "y/z", "~w"][Int.random(in: 0..<3, using: &random)]),
                    "value": .int(Int64.random(in: 0..<3, using: &random)),
                ]))
            }
        }
        store.stopJournal()
        let text = try #require(readText(path))
        var document = try JSONValue(encoding: Model())
        var checked = 0
        for row in text.split(separator: "\n") {
            let line = try JSONDecoder().decode(Line.self, from: Data(row.utf8))
            document = try JSONPatch.apply(line.patch, to: document)
            let kept = try #require(store.historyState(at: line.version))
            #expect(document == (try JSONValue(encoding: kept)), "version \(line.version)")
            checked += 1
        }
        #expect(checked == 400)
    }

    @Test("no line of at most a page crosses a 4 KiB page of the file")
    func linesStayInPages() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        try store.startJournal(at: path)
        var random = SystemRandomNumberGenerator()
        for index in 0..<3_000 {
            let length = Int.random(in: 0..<900, using: &random)
            store.dispatchAction(JSONAction(identifier: "push", payload: .string(String(repeating: "x", count: length))))
            if index % 500 == 0 { try store.flushJournal() }  // some lines start a new batch
        }
        store.stopJournal()
        let bytes = try #require(FileManager.default.contents(atPath: path))
        var start = 0
        var count = 0
        for (index, byte) in bytes.enumerated() where byte == 0x0A {
            #expect(start / 4096 == index / 4096, "line \(count + 1) crosses a page")
            start = index + 1
            count += 1
        }
        #expect(count == 3_000)
        #expect(try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions)
            .currentState().items.count == 3_000)
    }

    @Test("bad options and a folder are refused")
    func badStart() {
        let folder = temporaryFolder()
        let store = Store(reducers: [modelReducer], state: Model())
        #expect(throws: StoreError.self) { try store.startJournal(at: folder) }
        var options = JournalOptions()
        options.queueCapacity = 0
        #expect(throws: StoreError.self) { try store.startJournal(at: folder + "/j", options: options) }
        #expect(throws: StoreError.self) { try store.startJournal(at: folder + "/missing/j") }
    }

    @Test("SIGKILL while writing leaves only whole lines", arguments: 0..<4)
    func killed(_ round: Int) throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let program = siblingExecutable("reduxstore-journal-kill-check")
        var pid = pid_t()
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(program), strdup(path), nil]
        defer { for arg in argv { free(arg) } }
        #expect(posix_spawn(&pid, program, nil, nil, argv, environ) == 0)
        // Wait until it has written a good deal, then kill it without warning.
        var waited = 0
        while (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 < 200_000 * (round + 1),
              waited < 20_000 {
            sleepBriefly()
            waited += 1
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let bytes = try #require(FileManager.default.contents(atPath: path))
        #expect(bytes.count > 0)
        #expect(bytes.last == 0x0A, "the file ends mid-line")
        let text = String(decoding: bytes, as: UTF8.self)
        let all = text.split(separator: "\n")
        #expect(all.allSatisfy { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) != nil })
        // And it replays.
        let replayed = try Store(replaying: path, from: Model(), reducers: [modelReducer], actions: typedActions)
        #expect(replayed.version == UInt64(all.count))
    }

    @Test("keepHistory and restore: a new version equal to the old one, and its notification")
    func timeTravel() throws {
        let store = Store(reducers: [modelReducer], state: Model())
        store.keepHistory(3)
        for amount in 1...5 { store.dispatchAction(Add(amount: amount)) }  // totals 1 3 6 10 15
        #expect(store.historyVersions == [3, 4, 5])
        let restores = Recorder<StoreNotification>()
        let changes = Recorder<StoreNotification>()
        store.addObserver(forName: .stateDidRestore) { restores.append($0) }
        store.addObserver { changes.append($0) }
        try store.restore(version: 3)
        #expect(store.version == 6)
        #expect(store.currentState().total == 6)
        #expect(restores.all.map(\.restoredVersion) == [3])
        #expect(restores.all.first?.version == 6)
        #expect(restores.all.first?.name.rawValue == "RDXStateDidRestoreNotification")
        #expect(changes.all.map(\.actionIdentifier) == ["RDXRestore"])
        #expect(store.historyVersions == [4, 5, 6])
        #expect(throws: StoreError.self) { try store.restore(version: 1) }
        store.keepHistory(0)
        #expect(store.historyVersions.isEmpty)
        #expect(throws: StoreError.self) { try store.restore(version: 6) }
    }

    @Test("the history reads the action log: its snapshots are the records', its window the last count versions")
    func historyReadsTheLog() throws {
        let store = Store(reducers: [modelReducer], state: Model())
        #expect(store.readActionLog(after: 0) == nil)  // nobody reads: no ring
        store.dispatchAction(Add(amount: 1))
        store.keepHistory(3)
        // The history's claim keeps the ring on: the records are the log's.
        #expect(store.readActionLog(after: 0)?.records.isEmpty == true)
        #expect(store.historyVersions == [1])  // the state it was turned on at
        for amount in 2...6 { store.dispatchAction(Add(amount: amount)) }  // totals 3 6 10 15 21
        #expect(store.historyVersions == [4, 5, 6])
        #expect(store.readActionLog(after: 0)?.records.map(\.version) == [4, 5, 6])
        #expect((4...6).map { store.historyState(at: $0)?.total } == [10, 15, 21])
        #expect(store.historyState(at: 3) == nil && store.historyState(at: 7) == nil)

        // A larger claim beside it keeps more records; the history still keeps its last three.
        let inspector = store.openActionLog(10)
        for amount in 7...9 { store.dispatchAction(Add(amount: amount)) }
        #expect(store.readActionLog(after: 0)?.records.map(\.version) == [4, 5, 6, 7, 8, 9])
        #expect(store.historyVersions == [7, 8, 9])
        // A larger history: the last five versions, whose snapshots the ring still holds.
        store.keepHistory(5)
        #expect(store.historyVersions == [5, 6, 7, 8, 9])
        #expect(store.historyState(at: 5)?.total == 15)
        for amount in 10...12 { store.dispatchAction(Add(amount: amount)) }
        #expect(store.historyVersions == [8, 9, 10, 11, 12])
        let eight = try #require(store.historyState(at: 8))
        try store.restore(version: 8)
        #expect(store.historyVersions == [9, 10, 11, 12, 13])
        #expect(store.historyState(at: 13) == eight && store.currentState() == eight)
        // A smaller one drops the oldest.
        store.keepHistory(2)
        #expect(store.historyVersions == [12, 13])

        // Off: the ring stays for the inspector's claim, without snapshots; closed, it goes.
        store.keepHistory(0)
        #expect(store.historyVersions.isEmpty)
        store.closeActionLog(inspector)
        #expect(store.readActionLog(after: 0) == nil)
        // On again: from the state now, nothing older.
        store.keepHistory(4)
        #expect(store.historyVersions == [13])
        store.dispatchAction(Add(amount: 1))
        #expect(store.historyVersions == [13, 14])
        #expect(store.historyState(at: 14)?.total == store.currentState().total)
    }

    @Test("a restore inside a reducer is refused")
    func restoreInsideReducer() {
        let box = WeakStore<CounterState>()
        let failures = Tally()
        let store = Store(reducers: [{ state, action in
            counterReducer(&state, action)
            if case .note("restore")? = action as? CounterAction {
                do { try box.store?.restore(version: 1) } catch { failures.increment() }
            }
        }], state: CounterState())
        box.store = store
        store.keepHistory(10)
        store.dispatchAction(CounterAction.increment)
        store.dispatchAction(CounterAction.note("restore"))
        #expect(failures.count == 1)
        #expect(store.version == 2)
    }
}

@Suite("Observers that ask what changed")
struct PatchObserverTests {
    @Test("includingPatch: each notification carries the action's RFC 6902 operations")
    func patches() throws {
        let store = Store(reducers: [modelReducer], state: Model())
        let patches = Recorder<[JSONPatch.Operation]>()
        let versions = Recorder<UInt64>()
        store.addObserver(includingPatch: true) { note, patch in
            patches.append(patch)
            versions.append(note.version)
        }
        store.dispatchAction(Add(amount: 3))
        store.dispatchAction(JSONAction(identifier: "push", payload: "a"))
        store.dispatchAction(JSONAction(identifier: "nothing"))
        store.dispatchActions([Add(amount: 1), JSONAction(identifier: "pop")])
        let all = patches.all
        #expect(all.count == 4)
        #expect(all[0] == [.replace(path: "/total", value: 3)])
        #expect(all[1] == [.add(path: "/items/0", value: "a")])
        #expect(all[2].isEmpty)
        #expect(all[3] == [.replace(path: "/total", value: 4), .remove(path: "/items/0")])
        #expect(versions.all == [1, 2, 3, 5])
        // Applying the patches to the state before gives the state after.
        var value = JSONValue.object(["total": 0, "items": [], "tags": [:]])
        for patch in all { value = try JSONPatch.apply(patch, to: value) }
        #expect(try value.decode(as: Model.self) == store.currentState())
    }

    @Test("includingPatch false: an ordinary observer, handed an empty patch")
    func noPatch() {
        let store = Store(reducers: [modelReducer], state: Model())
        let seen = Recorder<Int>()
        store.addObserver(includingPatch: false) { _, patch in seen.append(patch.count) }
        store.dispatchAction(Add(amount: 1))
        #expect(seen.all == [0])
    }

    @Test("a journal without patches while a patch observer and a history come and go: every line, right patches")
    func journalWhilePatchObserversComeAndGo() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [modelReducer], state: Model())
        try store.startJournal(at: path)
        store.dispatchAction(Add(amount: 1))  // the journal alone
        let patches = Recorder<[JSONPatch.Operation]>()
        let token = store.addObserver(includingPatch: true) { _, patch in patches.append(patch) }
        store.dispatchAction(Add(amount: 2))  // a patch for the observer, a line for the journal
        #expect(store.removeObserver(token))
        store.dispatchAction(Add(amount: 3))  // the journal alone again
        store.keepHistory(2)
        store.dispatchAction(Add(amount: 4))  // journal and history
        #expect(store.historyVersions == [3, 4])
        store.keepHistory(0)
        store.dispatchAction(Add(amount: 5))  // the journal alone again
        store.stopJournal()
        store.dispatchAction(Add(amount: 6))  // nothing recorded
        #expect(patches.all == [[.replace(path: "/total", value: 3)]])
        let recorded = lines(path)
        #expect(recorded.map { $0["version"] as? Int } == [1, 2, 3, 4, 5])
        #expect(recorded.map { ($0["payload"] as? [String: Any])?["amount"] as? Int } == [1, 2, 3, 4, 5])
        #expect(recorded.allSatisfy { $0["patch"] == nil })
        #expect(store.currentState().total == 21)
    }

    @Test("the observers' patches are the action log's records' patches, let go at each round; a quiet action's joins the next round's")
    func patchesReadFromTheLog() throws {
        let store = Store(reducers: [modelReducer], state: Model())
        #expect(store.readActionLog(after: 0) == nil)
        let patches = Recorder<[JSONPatch.Operation]>()
        let token = store.addObserver(includingPatch: true) { _, patch in patches.append(patch) }
        store.dispatchAction(QuietAdd(amount: 2))  // no round: its record waits for the next
        #expect(try #require(store.readActionLog(after: 0)).records.map(\.version) == [1])
        store.dispatchAction(Add(amount: 3))
        #expect(patches.all == [[.replace(path: "/total", value: 2), .replace(path: "/total", value: 5)]])
        #expect(try #require(store.readActionLog(after: 0)).records.isEmpty)
        for _ in 0..<1000 { store.dispatchAction(QuietAdd(amount: 1)) }
        #expect(try #require(store.readActionLog(after: 0)).records.count == 1000)
        #expect(store.core.withLock { $0.actionLog.capacity } >= 1000)
        store.dispatchAction(Add(amount: 1))
        #expect(patches.all.last?.count == 1001)
        #expect(try #require(store.readActionLog(after: 0)).records.isEmpty)
        // The ring grown for the burst is small again once it is read.
        #expect(store.core.withLock { $0.actionLog.capacity } == 1)
        #expect(store.removeObserver(token))
        #expect(store.readActionLog(after: 0) == nil)
    }

    @Test("four threads dispatch while patch observers come and go: the patches, in version order, rebuild the state")
    func patchesWhileThreadsRace() throws {
        let store = Store(reducers: [modelReducer], state: Model())
        let rounds = Recorder<(version: UInt64, patch: [JSONPatch.Operation])>()
        store.addObserver(includingPatch: true) { note, patch in rounds.append((note.version, patch)) }
        let heard = Tally()
        DispatchQueue.concurrentPerform(iterations: 5) { thread in
            for step in 0..<400 {
                if thread == 4 {
                    // Another observer of patches, added and removed: the claim they share stays.
                    let token = store.addObserver(includingPatch: true) { _, _ in heard.increment() }
                    store.removeObserver(token)
                } else if step % 3 == 0 {
                    store.dispatchAction(QuietAdd(amount: thread + 1))  // joins the next round's patch
                } else if step % 3 == 1 {
                    store.dispatchAction(JSONAction(identifier: "push", payload: .string("\(thread).\(step)")))
                } else {
                    store.dispatchAction(Add(amount: 1))
                }
            }
        }
        store.dispatchAction(Add(amount: 0))  // a last round: every quiet action's patch is handed out
        let ordered = rounds.all.sorted { $0.version < $1.version }
        #expect(ordered.last?.version == store.version)
        var value = JSONValue.object(["total": 0, "items": [], "tags": [:]])
        for round in ordered { value = try JSONPatch.apply(round.patch, to: value) }
        #expect(try value.decode(as: Model.self) == store.currentState())
        #expect(try #require(store.readActionLog(after: 0)).records.isEmpty)
    }

    @Test("observers of patches by name: a restore's patch reaches both its stateDidChange and its stateDidRestore observers")
    func patchesOfARestore() throws {
        let store = Store(reducers: [modelReducer], state: Model())
        store.keepHistory(10)
        let changes = Recorder<(UInt64, [JSONPatch.Operation])>()
        let restores = Recorder<(UInt64, [JSONPatch.Operation])>()
        store.addObserver(includingPatch: true) { note, patch in changes.append((note.version, patch)) }
        store.addObserver(forName: .stateDidRestore, includingPatch: true) { note, patch in restores.append((note.version, patch)) }
        store.dispatchAction(Add(amount: 5))
        try store.restore(version: 0)
        store.dispatchAction(Add(amount: 2))
        let back: [JSONPatch.Operation] = [.replace(path: "/total", value: 0)]
        #expect(changes.all.map(\.0) == [1, 2, 3])
        #expect(changes.all.map(\.1) == [[.replace(path: "/total", value: 5)], back, [.replace(path: "/total", value: 2)]])
        #expect(restores.all.map(\.0) == [2])
        #expect(restores.all.map(\.1) == [back])
    }

    @Test("a patch observer added by a reducer hears from the next action on, its first patch that action's")
    func patchObserverAddedByAReducer() {
        let patches = Recorder<(UInt64, [JSONPatch.Operation])>()
        let added = Tally()
        let box = Recorder<Store<Model>>()
        let store = Store(reducers: [modelReducer, { _, action in
            guard (action as? Add)?.amount == 7, added.increment() == 1, let store = box.all.first else { return }
            store.addObserver(includingPatch: true) { note, patch in patches.append((note.version, patch)) }
        }], state: Model())
        box.append(store)
        store.dispatchAction(Add(amount: 7))
        store.dispatchAction(Add(amount: 1))
        #expect(patches.all.map(\.0) == [2])
        #expect(patches.all.map(\.1) == [[.replace(path: "/total", value: 8)]])
    }

    @Test("a patch observer removed: patches stop; added again: they start from the state then")
    func removeAndAddAgain() {
        let store = Store(reducers: [modelReducer], state: Model())
        let first = Recorder<[JSONPatch.Operation]>()
        let token = store.addObserver(includingPatch: true) { _, patch in first.append(patch) }
        store.dispatchAction(Add(amount: 1))
        #expect(store.removeObserver(token))
        store.dispatchAction(Add(amount: 1))
        store.dispatchAction(Add(amount: 1))
        let second = Recorder<[JSONPatch.Operation]>()
        store.addObserver(includingPatch: true) { _, patch in second.append(patch) }
        store.dispatchAction(Add(amount: 1))
        #expect(first.all == [[.replace(path: "/total", value: 1)]])
        #expect(second.all == [[.replace(path: "/total", value: 4)]])
    }
}
