import Foundation
import Synchronization
@_spi(Bindings) import ReduxStore
import ReduxStoreInspectKit
import ReduxStoreTestSupport
import Testing

/// A state that can hold a number JSON cannot (NaN), and text of any length.
private struct Gauge: Codable, Equatable, Sendable {
    var reading = 0.0
    var notes: [String] = []
}

private let gaugeReducer: Reducer<Gauge> = { state, action in
    guard let action = action as? JSONAction else { return }
    switch (action.identifier, action.payload) {
    case ("read", .double(let value)?): state.reading = value
    case ("read", .int(let value)?): state.reading = Double(value)
    case ("broken", _): state.reading = .nan
    case ("note", .string(let text)?): state.notes.append(text)
    default: break
    }
}

/// A typed action whose payload JSON cannot hold.
private struct Calibrate: Action, Codable {
    var factor: Double
    var identifier: String { "calibrate" }
}

/// The threads of a race that are still at it.
private final class Racing: Sendable {
    let count = Mutex(3)
}

/// The journal at its edges, from Swift: what is in the file is whole and in order, and what is
/// not there as it was recorded is said (the C side: Tests/CTests/test_journal_edges.c).
@Suite("Journal at its edges: nothing recorded is lost in silence")
struct JournalEdgeTests {
    @Test("a file is never larger than maximumFileSize, padding counted; every line is in one of the files")
    func rotationLimitHolds() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [gaugeReducer], state: Gauge())
        var options = JournalOptions()
        options.maximumFileSize = 10_000
        options.maximumFiles = 1_000
        try store.startJournal(at: path, options: options)
        var random = SystemRandomNumberGenerator()
        for index in 0..<2_000 {
            // Lines of up to about 1,000 bytes, so that many are padded to the next page.
            let length = Int.random(in: 0..<900, using: &random)
            store.dispatchAction(JSONAction(identifier: "note", payload: .string(String(repeating: "n", count: length))))
            if index % 300 == 0 { try store.flushJournal() }  // batches of every size
        }
        try store.flushJournal()
        store.stopJournal()
        let folder = (path as NSString).deletingLastPathComponent
        let files = try FileManager.default.contentsOfDirectory(atPath: folder)
        #expect(files.count > 20)
        for file in files {
            let size = try FileManager.default.attributesOfItem(atPath: folder + "/" + file)[.size] as? Int ?? -1
            #expect(size <= 10_000, "\(file) is \(size) bytes")
        }
        let replayed = try Store(replaying: path, from: Gauge(), reducers: [gaugeReducer], actions: ActionTypes())
        #expect(replayed.version == 2_000)
        #expect(replayed.currentState() == store.currentState())
    }

    @Test("a line too long for the journal's reader is written without its payload, and the reader names why")
    func lineTooLong() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [gaugeReducer], state: Gauge())
        try store.startJournal(at: path)
        let huge = String(repeating: "h", count: StoreLimits.maximumJSONTextSize + 10)
        // The line: {"version":1,"identifier":"note","payload":"hhh…","time":"…","source":"Edge.swift:7"}
        store.dispatchAction(JSONAction(identifier: "note", payload: .string(huge)), file: "Edge.swift", line: 7)
        store.dispatchAction(JSONAction(identifier: "read", payload: 7))
        let error = #expect(throws: StoreError.self) { try store.flushJournal() }
        #expect(error?.kind == .limit)
        #expect(error?.message.contains("1 entry (version 1) was written without its payload or patch") == true)
        #expect(error?.message.contains("version 1: its line would be 67108978 bytes, more than the journal's limit of 67108864") == true, "\(error?.message ?? "")")
        try store.flushJournal()  // said once
        store.stopJournal()
        let replay = #expect(throws: StoreError.self) {
            try Store(replaying: path, from: Gauge(), reducers: [gaugeReducer], actions: ActionTypes())
        }
        #expect(replay?.message.contains("journal.jsonl:1: action \"note\" was recorded without its payload, which could not be written: its line would be") == true)
        // Up to the version before it, the journal replays.
        let summary = try Inspector.summarize(journal: path)
        #expect(summary.entries == 2)
    }

    @Test("a state JSON cannot hold: the line says the patch was left out and why; rebuilding from patches names it")
    func patchOfAStateNotJSON() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [gaugeReducer], state: Gauge())
        var options = JournalOptions()
        options.recordPatches = true
        try store.startJournal(at: path, options: options)
        store.dispatchAction(JSONAction(identifier: "read", payload: 1))
        store.dispatchAction(JSONAction(identifier: "broken"))
        store.dispatchAction(JSONAction(identifier: "read", payload: 2))
        store.dispatchAction(JSONAction(identifier: "read", payload: 3))
        let error = #expect(throws: StoreError.self) { try store.flushJournal() }
        #expect(error?.kind == .encode)
        #expect(error?.message.contains("1 entry (version 2) was written without its payload or patch") == true)
        store.stopJournal()
        let text = try #require(readText(path))
        let lines = text.split(separator: "\n").map(String.init)
        try #require(lines.count == 4)
        #expect(lines[0].contains(#""patch":[{"op":"replace","path":"/reading","value":1.0}]"#))
        #expect(lines[1].hasSuffix(
            #""patchError":"the patch holds a number JSON cannot hold (NaN or an infinity) at \"/reading\""}"#))
        #expect(!lines[1].contains(#""patch":"#))
        // The state before version 3 is known (NaN and all): its patch is whole.
        #expect(lines[2].contains(#""patch":[{"op":"replace","path":"/reading","value":2.0}]"#))
        #expect(lines[3].contains(#""patch":[{"op":"replace","path":"/reading","value":3.0}]"#))

        let basePath = temporaryFolder() + "/base.json"
        try #"{"reading":0.0,"notes":[]}"#.write(toFile: basePath, atomically: true, encoding: .utf8)
        let base = try JSONDocument(contentsOf: basePath)
        #expect(try Inspector.state(at: 1, from: base, journal: path) == ["reading": 1.0, "notes": []])
        let rebuild = #expect(throws: StoreError.self) { try Inspector.state(at: 4, from: base, journal: path) }
        #expect(rebuild?.message == #"journal.jsonl:2: the patch of version 2 was not recorded: the patch holds a number JSON cannot hold (NaN or an infinity) at "/reading""#)
    }

    @Test("a payload JSON cannot hold: recorded without it, the line and the replay saying why")
    func payloadNotJSON() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [gaugeReducer], state: Gauge())
        try store.startJournal(at: path)
        store.dispatchAction(Calibrate(factor: .infinity))
        store.dispatchAction(JSONAction(identifier: "read", payload: ["values": [1, .double(.nan)]]))
        let error = #expect(throws: StoreError.self) { try store.flushJournal() }
        #expect(error?.message.contains("2 entries (versions 1–2)") == true)
        store.stopJournal()
        let text = try #require(readText(path))
        #expect(text.contains(#""replayable":false,"payloadError":"its payload holds a number JSON cannot hold (NaN or an infinity) at \"/factor\"""#))
        #expect(text.contains(#""replayable":false,"payloadError":"its payload holds a number JSON cannot hold (NaN or an infinity) at \"/values/1\"""#))
        var actions = ActionTypes()
        actions.register(Calibrate.self, for: "calibrate")
        let replay = #expect(throws: StoreError.self) {
            try Store(replaying: path, from: Gauge(), reducers: [gaugeReducer], actions: actions)
        }
        #expect(replay?.message.contains("journal.jsonl:1: action \"calibrate\" was recorded without its payload, which could not be written: its payload holds a number") == true)
    }

    @Test("a payload nested past the limit: recorded without it, and every line stays readable; one at the limit is whole")
    func payloadTooDeep() throws {
        func nested(_ levels: Int) -> JSONValue {
            var value: JSONValue = .int(1)
            for _ in 0..<levels { value = .array([value]) }
            return value
        }
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [gaugeReducer], state: Gauge())
        var options = JournalOptions()
        options.recordPatches = true
        try store.startJournal(at: path, options: options)
        store.dispatchAction(JSONAction(identifier: "deep", payload: nested(StoreLimits.maximumNestingDepth)))
        store.dispatchAction(JSONAction(identifier: "deeper", payload: nested(StoreLimits.maximumNestingDepth + 44)))
        store.dispatchAction(JSONAction(identifier: "read", payload: 3))
        let error = #expect(throws: StoreError.self) { try store.flushJournal() }
        #expect(error?.message.contains("version 2") == true)
        store.stopJournal()
        let text = try #require(readText(path))
        #expect(text.contains(#""identifier":"deeper","replayable":false,"payloadError":"its payload nests deeper than 256 levels at \"/0/0/0"#))

        // Every line reads, the one at the limit with its whole payload.
        var entries: [JournalEntry] = []
        try JournalReader.read(path) { entry in
            entries.append(entry)
            return true
        }
        try #require(entries.count == 3)
        #expect(try entries[0].payload() == nested(StoreLimits.maximumNestingDepth))
        #expect(entries[1].payloadError?.hasPrefix("its payload nests deeper than 256 levels") == true)
        #expect(try entries[2].payload() == 3)
        let replay = #expect(throws: StoreError.self) {
            try Store(replaying: path, from: Gauge(), reducers: [gaugeReducer], actions: ActionTypes())
        }
        #expect(replay?.message.hasPrefix("journal.jsonl:2: action \"deeper\" was recorded without its payload") == true)
        let first = try Store(replaying: path, from: Gauge(), reducers: [gaugeReducer], actions: ActionTypes(), through: 1)
        #expect(first.version == 1)
    }

    @Test("U+0000: an identifier holding it reads back whole; a payload key holding it is left out, the line saying why")
    func nulInIdentifiersAndKeys() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [gaugeReducer], state: Gauge())
        try store.startJournal(at: path)
        store.dispatchAction(JSONAction(identifier: "read\u{0}twice", payload: ["v": "a\u{0}b"]))
        store.dispatchAction(JSONAction(identifier: "read", payload: ["k\u{0}": 1]))
        let error = #expect(throws: StoreError.self) { try store.flushJournal() }
        #expect(error?.message.contains("version 2") == true)
        store.stopJournal()

        var entries: [JournalEntry] = []
        try JournalReader.read(path) { entry in
            entries.append(entry)
            return true
        }
        try #require(entries.count == 2)
        #expect(entries[0].identifier == "read\u{0}twice")
        #expect(try entries[0].payload() == ["v": .string("a\u{0}b")])
        #expect(entries[1].payloadError == #"its payload holds an object key with U+0000, which the journal's reader (json-c) cannot hold in a key, at "/k\#u{0}""#)
        // Replay reaches the whole identifier: a reducer of "read" does not see the first action.
        let replay = #expect(throws: StoreError.self) {
            try Store(replaying: path, from: Gauge(), reducers: [gaugeReducer], actions: ActionTypes())
        }
        #expect(replay?.message.hasPrefix("journal.jsonl:2: action \"read\" was recorded without its payload") == true)
    }

    @Test("one journal per file: a second store is refused; the same store starting again appends")
    func oneJournalPerFile() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let first = Store(reducers: [gaugeReducer], state: Gauge())
        let second = Store(reducers: [gaugeReducer], state: Gauge())
        try first.startJournal(at: path)
        let refused = #expect(throws: StoreError.self) { try second.startJournal(at: path) }
        #expect(refused?.kind == .io)
        #expect(refused?.message.contains("in use by another journal") == true)
        for value in 1...5 {
            first.dispatchAction(JSONAction(identifier: "read", payload: .int(Int64(value))))
            second.dispatchAction(JSONAction(identifier: "read", payload: .int(Int64(value))))
        }
        try first.startJournal(at: path)  // stops the running one, then appends
        for value in 6...10 { first.dispatchAction(JSONAction(identifier: "read", payload: .int(Int64(value)))) }
        first.stopJournal()
        let replayed = try Store(replaying: path, from: Gauge(), reducers: [gaugeReducer], actions: ActionTypes())
        #expect(replayed.version == 10)
        #expect(replayed.currentState() == first.currentState())
        // Free again, but the second store's next action, version 6, would go back in the file.
        let behind = #expect(throws: StoreError.self) { try second.startJournal(at: path) }
        #expect(behind?.kind == .io)
        #expect(behind?.message.contains("would go back in versions") == true, "\(behind?.message ?? "")")
        #expect(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").count == 10)
        for value in 6...12 { second.dispatchAction(JSONAction(identifier: "read", payload: .int(Int64(value)))) }
        try second.startJournal(at: path)  // version 13 after 10: a gap, which replay reports
        second.dispatchAction(JSONAction(identifier: "read", payload: .int(13)))
        second.stopJournal()
        #expect(try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").last?.hasPrefix(#"{"version":13,"#) == true)
        // A file that is not a journal is not appended to.
        let notes = temporaryFolder() + "/notes.txt"
        try "a line of someone's notes\n".write(toFile: notes, atomically: true, encoding: .utf8)
        let other = #expect(throws: StoreError.self) { try first.startJournal(at: notes) }
        #expect(other?.message.contains("not a journal's") == true, "\(other?.message ?? "")")
        #expect(try String(contentsOfFile: notes, encoding: .utf8) == "a line of someone's notes\n")
    }

    @Test("starts and stops racing on three threads while a fourth dispatches: no hang, every line whole and in order")
    func startsAndStopsRacing() async throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [gaugeReducer], state: Gauge())
        let racing = Racing()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                var value: Int64 = 0
                while racing.count.withLock({ $0 }) > 0 {
                    value += 1
                    store.dispatchAction(JSONAction(identifier: "read", payload: .int(value)))
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<30 {  // each stop syncs the file: a few ms each
                        do { try store.startJournal(at: path) } catch { Issue.record("startJournal: \(error)") }
                    }
                    racing.count.withLock { $0 -= 1 }
                }
            }
            group.addTask {
                for _ in 0..<30 { store.stopJournal() }
                racing.count.withLock { $0 -= 1 }
            }
        }
        try store.startJournal(at: path)
        for _ in 0..<10 { store.dispatchAction(JSONAction(identifier: "read", payload: 1)) }
        store.stopJournal()
        let text = try #require(readText(path))
        #expect(text.hasSuffix("\n"))
        var last: UInt64 = 0
        for line in text.split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            let version = try #require(object?["version"] as? UInt64)
            #expect(version > last, "version \(version) after \(last)")
            last = version
        }
    }

    @Test("a FIFO, a device, a folder: refused at once, no journal runs")
    func onlyRegularFiles() throws {
        let folder = temporaryFolder()
        let fifo = folder + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let store = Store(reducers: [gaugeReducer], state: Gauge())
        for (path, words) in [(fifo, "not a regular file (a FIFO)"), ("/dev/null", "not a regular file (a character device)"),
                              (folder, "not a regular file (a folder)")] {
            let error = #expect(throws: StoreError.self) { try store.startJournal(at: path) }
            #expect(error?.kind == .io)
            #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
        }
        store.dispatchAction(JSONAction(identifier: "read", payload: 1))
        try store.flushJournal()
        #expect(store.journalError == nil)
    }
}
