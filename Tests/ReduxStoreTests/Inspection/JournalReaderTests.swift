import Foundation
import ReduxStore
import ReduxStoreTestSupport
import Testing

/// A typed action, journaled with its properties.
private struct Deposit: Action, Codable, Equatable {
    var amount: Int
    var identifier: String { "deposit" }
}

/// An action the journal cannot record a payload of (not Encodable).
private struct Audit: Action {
    var identifier: String { "audit" }
}

private struct Account: Codable, Equatable, Sendable {
    var balance = 0
    var notes: [String] = []
}

private let accountReducer: Reducer<Account> = { state, action in
    switch action {
    case let deposit as Deposit: state.balance += deposit.amount
    case let note as JSONAction where note.identifier == "note":
        if case .string(let text)? = note.payload { state.notes.append(text) }
    default: break
    }
}

/// Reading journals and saved states from a program, as `reduxstore-inspect` does: what was
/// written is read back, field by field, and what is wrong is said with its place.
@Suite("Journal and document reading: the public reader")
struct JournalReaderTests {
    @Test("each entry reads back as it was recorded: payloads and patches decoded on demand, batches, sources")
    func entriesReadBack() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [accountReducer], state: Account())
        var options = JournalOptions()
        options.recordPatches = true
        try store.startJournal(at: path, options: options)
        store.dispatchAction(Deposit(amount: 5))
        store.dispatchAction(JSONAction(identifier: "note", payload: "é\u{301} 🧾"))
        store.dispatchActions([Deposit(amount: 1), Deposit(amount: 2)])
        store.dispatchAction(Audit())
        store.stopJournal()

        var entries: [JournalEntry] = []
        try JournalReader.read(path) { entry in
            entries.append(entry)
            return true
        }
        #expect(entries.map(\.version) == [1, 2, 3, 4, 5])
        #expect(entries.map(\.identifier) == ["deposit", "note", "deposit", "deposit", "audit"])
        #expect(entries.map(\.isTyped) == [true, false, true, true, false])
        #expect(entries.map(\.isReplayable) == [true, true, true, true, false])
        #expect(entries.map(\.batch) == [nil, nil, 3, 3, nil])
        #expect(entries.allSatisfy { $0.hasPatch && $0.payloadError == nil && $0.patchError == nil })
        #expect(entries.map(\.place) == (1...5).map { "journal.jsonl:\($0)" })
        #expect(entries[0].source?.hasPrefix("JournalReaderTests.swift:") == true)
        #expect(entries.allSatisfy { $0.time.hasSuffix("Z") && $0.time.count == 24 })

        // Kept past the read, and on another thread: the payloads and patches decode.
        let kept = entries
        let parts = Recorder<(JSONValue?, [JSONPatch.Operation]?)>()
        let failures = Recorder<String>()
        onThreads(1) { _ in
            for entry in kept {
                do throws(StoreError) {
                    parts.append((try entry.payload(), try entry.patch()))
                } catch {
                    failures.append(error.message)
                }
            }
        }
        #expect(failures.all.isEmpty)
        let decoded = parts.all
        try #require(decoded.count == 5)
        #expect(decoded[0].0 == ["amount": 5])
        #expect(decoded[1].0 == "é\u{301} 🧾")
        #expect(decoded[4].0 == nil)
        #expect(decoded[0].1 == [.replace(path: "/balance", value: 5)])
        #expect(decoded[1].1 == [.add(path: "/notes/0", value: "é\u{301} 🧾")])
        #expect(decoded[4].1 == [])

        // Replaying the patches rebuilds the store's state.
        var state = try JSONValue(encoding: Account())
        for patch in decoded { state = try JSONPatch.apply(patch.1 ?? [], to: state) }
        #expect(state == (try JSONValue(encoding: store.currentState())))
    }

    @Test("reading stops when the body says so, and an entry without a patch says it has none")
    func stopsWhenAsked() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [accountReducer], state: Account())
        try store.startJournal(at: path)
        for amount in 1...10 { store.dispatchAction(Deposit(amount: amount)) }
        store.stopJournal()
        var read: [UInt64] = []
        var patches: [[JSONPatch.Operation]?] = []
        try JournalReader.read(path) { (entry) throws(StoreError) in
            read.append(entry.version)
            #expect(!entry.hasPatch)
            patches.append(try entry.patch())
            return entry.version < 3
        }
        #expect(patches.count == 3 && patches.allSatisfy { $0 == nil })
        #expect(read == [1, 2, 3])
        #expect(JournalReader.files(of: path) == [path])
    }

    @Test("a line that breaks the rules is an error naming its place; a payload past the nesting limit too")
    func errorsNameThePlace() throws {
        let path = temporaryFolder() + "/journal.jsonl"
        let line = #"{"version":1,"identifier":"a","time":"2026-11-22T10:00:00.000Z""#
        writeText(line + "}\n" + #"{"version":3,"identifier":"b","time":"t"}"# + "\n", to: path)
        let gap = #expect(throws: StoreError.self) { try JournalReader.read(path) { _ in true } }
        #expect(gap?.kind == .corrupt)
        #expect(gap?.message == "journal.jsonl:2: version 3 follows 1: a gap of 1 entries")

        let deep = String(repeating: "[", count: StoreLimits.maximumNestingDepth + 1)
            + String(repeating: "]", count: StoreLimits.maximumNestingDepth + 1)
        writeText(line + #","payload":"# + deep + "}\n", to: path)
        let tooDeep = #expect(throws: StoreError.self) {
            try JournalReader.read(path) { (entry) throws(StoreError) in
                _ = try entry.payload()
                return true
            }
        }
        #expect(tooDeep?.kind == .limit)
        #expect(tooDeep?.message.hasPrefix("journal.jsonl:1: ") == true)

        let missing = #expect(throws: StoreError.self) {
            try JournalReader.read(temporaryFolder() + "/none.jsonl") { _ in true }
        }
        #expect(missing?.kind == .io)
    }

    @Test("a saved state reads as its state and version; plain JSON as itself; pointers walk into either")
    func documents() throws {
        let folder = temporaryFolder()
        let store = Store(reducers: [accountReducer], state: Account())
        store.dispatchAction(Deposit(amount: 7))
        store.dispatchAction(JSONAction(identifier: "note", payload: "a/b"))
        try store.save(to: folder + "/state.json")
        let saved = try JSONDocument(contentsOf: folder + "/state.json")
        #expect(saved.version == 2)
        #expect(saved.value == ["balance": 7, "notes": ["a/b"]])
        #expect(try saved.value.value(atPointer: "/notes/0") == "a/b")
        #expect(try saved.value.value(atPointer: "") == saved.value)

        writeText(#"{"a/b":{"~":[1,2]}}"#, to: folder + "/plain.json")
        let plain = try JSONDocument(contentsOf: folder + "/plain.json")
        #expect(plain.version == nil)
        #expect(try plain.value.value(atPointer: "/a~1b/~0/1") == 2)

        let past = #expect(throws: StoreError.self) { try plain.value.value(atPointer: "/a~1b/~0/2") }
        #expect(past?.kind == .invalidArgument)
        #expect(past?.message == #"pointer "/a~1b/~0/2": no element "2" at "/a~1b/~0/2": the array has 2 elements"#)
        let notPointer = #expect(throws: StoreError.self) { try plain.value.value(atPointer: "a") }
        #expect(notPointer?.kind == .decode)

        writeText("{\"a\": ", to: folder + "/torn.json")
        let torn = #expect(throws: StoreError.self) { try JSONDocument(contentsOf: folder + "/torn.json") }
        #expect(torn?.kind == .parse)
        #expect(torn?.message.hasPrefix(folder + "/torn.json: ") == true)
    }
}

@Suite("Action types: what a program can decode")
struct ActionTypesTests {
    @Test("the registered identifiers, sorted by code point; a replaced registration is listed once")
    func identifiers() {
        var actions = ActionTypes()
        #expect(actions.identifiers.isEmpty)
        actions.register(Deposit.self, for: "e\u{301}")
        actions.register(Deposit.self, for: "\u{E9}")
        actions.register(Deposit.self, for: "deposit")
        actions.register(Deposit.self, for: "deposit")
        // "e" + U+0301 sorts before U+00E9 by code point, though the two are equal Swift strings.
        #expect(actions.identifiers.map { Array($0.unicodeScalars) }
            == [Array("deposit".unicodeScalars), ["e", "\u{301}"], ["\u{E9}"]])
        #expect(actions.isRegistered("deposit") && !actions.isRegistered("withdraw"))
    }
}
