import Foundation
@_spi(Bindings) import ReduxStore
import ReduxStoreInspectKit
import ReduxStoreTestSupport
import Testing

private struct AddTodo: Action, Codable {
    var title: String
    var identifier: String { "addTodo" }
}

private struct Todos: Codable, Equatable {
    var titles: [String] = []
}

private let todosReducer: Reducer<Todos> = { state, action in
    if let add = action as? AddTodo { state.titles.append(add.title) }
    if let json = action as? JSONAction, json.identifier == "clear" { state.titles = [] }
}

/// The first `count` changes of `stream`.
private func first(_ count: Int, of stream: AsyncStream<StoreChange>) async -> [StoreChange] {
    var changes: [StoreChange] = []
    for await change in stream {
        changes.append(change)
        if changes.count == count { break }
    }
    return changes
}

@Suite("The change feed: one record of each applied action, and where it was dispatched from")
struct ChangeFeedTests {
    @Test("changes() tells each action once, in version order, with its payload and source")
    func recordsEachAction() async {
        let store = Store(reducers: [todosReducer], state: Todos())
        let feed = store.changes()
        let before = Date()
        let line = #line + 1
        store.dispatchAction(AddTodo(title: "milk"))
        store.dispatchAction(JSONAction(identifier: "clear", payload: ["why": "done"]))
        store.dispatchAction(CounterAction.increment)
        let changes = await first(3, of: feed)
        #expect(changes.map(\.version) == [1, 2, 3])
        #expect(changes.map(\.identifier) == ["addTodo", "clear", "counter.increment"])
        #expect(changes[0].payload == ["title": "milk"])
        #expect(changes[1].payload == ["why": "done"])
        #expect(changes[2].payload == nil, "an action that is not Encodable has no payload")
        #expect(changes.allSatisfy { $0.patch == nil }, "patches only when asked for")
        #expect(changes.allSatisfy { $0.batch == nil })
        #expect(changes[0].source == SourceLocation(fileID: #fileID, line: UInt(line)))
        #expect(changes[1].source?.line == UInt(line + 1))
        #expect(changes[0].source?.description == "ChangeFeedTests.swift:\(line)")
        #expect(changes[0].source?.fileID.hasSuffix("/ChangeFeedTests.swift") == true)
        #expect(changes[0].time.timeIntervalSince(before) > -1 && changes[0].time.timeIntervalSinceNow < 1)
    }

    @Test("a payload holding a NaN or an infinity is no payload: payloadError says where")
    func nonFinitePayloads() async {
        struct Scale: Action, Codable {
            var factor: Double
            var identifier: String { "scale" }
        }
        let store = Store(reducers: [todosReducer], state: Todos())
        let feed = store.changes()
        store.dispatchAction(Scale(factor: .nan))
        store.dispatchAction(JSONAction(identifier: "read", payload: ["values": [1, .double(-.infinity)]]))
        store.dispatchAction(Scale(factor: 2))
        let changes = await first(3, of: feed)
        #expect(changes[0].payload == nil)
        #expect(changes[0].payloadError == #"the payload holds a number JSON cannot hold (NaN or an infinity) at "/factor""#)
        #expect(changes[1].payload == nil)
        #expect(changes[1].payloadError?.hasSuffix(#"at "/values/1""#) == true)
        #expect(changes[2].payload == ["factor": 2.0])
        #expect(changes[2].payloadError == nil)
    }

    @Test("with patches, each change carries the RFC 6902 patch of its action")
    func patches() async throws {
        let store = Store(reducers: [todosReducer], state: Todos())
        let feed = store.changes(includingPatches: true)
        store.dispatchAction(AddTodo(title: "milk"))
        store.dispatchAction(AddTodo(title: "eggs"))
        store.dispatchAction(JSONAction(identifier: "clear"))
        let changes = await first(3, of: feed)
        #expect(changes[0].patch == [.add(path: "/titles/0", value: "milk")])
        #expect(changes[1].patch == [.add(path: "/titles/1", value: "eggs")])
        // Applying the patches in order rebuilds the state.
        var document: JSONValue = ["titles": []]
        for change in changes { document = try JSONPatch.apply(change.patch ?? [], to: document) }
        #expect(document == ["titles": []])
        #expect(changes[2].patch?.isEmpty == false)
    }

    @Test("enqueueAction, dispatchActions and dispatch(contentsOf:) record their caller's line; a batch its versions")
    func sources() async throws {
        let store = Store(reducers: [todosReducer], state: Todos())
        let feed = store.changes()
        let enqueueLine = #line + 1
        store.enqueueAction(AddTodo(title: "a"))
        store.flush()
        let batchLine = #line + 1
        store.dispatchActions([AddTodo(title: "b"), AddTodo(title: "c")])
        let sequenceLine = #line + 1
        let task = store.dispatch(contentsOf: AsyncStream { continuation in
            continuation.yield(AddTodo(title: "d"))
            continuation.finish()
        })
        try await task.value
        store.dispatchActions([AddTodo(title: "e")])
        let changes = await first(5, of: feed)
        #expect(changes.map(\.source?.line) == [enqueueLine, batchLine, batchLine, sequenceLine, #line - 2].map { UInt($0) })
        #expect(changes[1].batch == 2...3)
        #expect(changes[2].batch == 2...3)
        #expect(changes[3].batch == nil)
        #expect(changes[4].batch == nil, "a batch of one action is no batch")
    }

    @Test("an action a reducer dispatches is recorded with the reducer's line, after the current one")
    func nested() async {
        let box = WeakStore<Todos>()
        let reducerLine = #line + 3
        let reducer: Reducer<Todos> = { state, action in
            if let add = action as? AddTodo, add.title == "first" {
                box.store?.dispatchAction(AddTodo(title: "second"))
            }
            todosReducer(&state, action)
        }
        let store = Store(reducers: [reducer], state: Todos())
        box.store = store
        let feed = store.changes()
        store.dispatchAction(AddTodo(title: "first"))
        let changes = await first(2, of: feed)
        #expect(changes.map(\.payload) == [["title": "first"], ["title": "second"]])
        #expect(changes[1].source?.line == UInt(reducerLine))
    }

    @Test("a sequence made inside a reducer starts after the action in progress, with patches from there")
    func madeInsideAReducer() async {
        final class Feeds: @unchecked Sendable {
            weak var store: Store<Todos>?
            var feeds: [AsyncStream<StoreChange>] = []
        }
        let box = Feeds()
        let reducer: Reducer<Todos> = { state, action in
            if let add = action as? AddTodo, add.title == "subscribe" {
                box.feeds.append(box.store!.changes(includingPatches: true))
            }
            todosReducer(&state, action)
        }
        let store = Store(reducers: [reducer], state: Todos())
        box.store = store
        store.dispatchAction(AddTodo(title: "before"))
        store.dispatchAction(AddTodo(title: "subscribe"))
        store.dispatchAction(AddTodo(title: "after"))
        let changes = await first(1, of: box.feeds[0])
        #expect(changes.map(\.version) == [3])
        #expect(changes.first?.patch == [.add(path: "/titles/2", value: "after")])
    }

    @Test("through middleware: what next passes keeps the dispatch's source; what a middleware dispatches has its own")
    func middleware() async {
        let middlewareLine = #line + 3
        let echo: Middleware<Todos> = { store, action, next in
            if let add = action as? AddTodo, add.title == "ping" {
                store.dispatchAction(AddTodo(title: "pong"))
            }
            next(action)
        }
        let store = Store(reducers: [todosReducer], state: Todos(), middleware: [echo])
        let feed = store.changes()
        let line = #line + 1
        store.dispatchAction(AddTodo(title: "ping"))
        let changes = await first(2, of: feed)
        #expect(changes.map(\.payload) == [["title": "pong"], ["title": "ping"]])
        #expect(changes.map(\.source?.line) == [UInt(middlewareLine), UInt(line)])
    }

    @Test("a restore is a change without a source")
    func restore() async throws {
        let store = Store(reducers: [todosReducer], state: Todos())
        store.keepHistory(5)
        store.dispatchAction(AddTodo(title: "a"))
        let feed = store.changes()
        try store.restore(version: 0)
        let changes = await first(1, of: feed)
        #expect(changes[0].identifier == "RDXRestore")
        #expect(changes[0].version == 2)
        #expect(changes[0].source == nil)
    }

    @Test("the buffer keeps the newest changes, dropping the oldest first")
    func bounded() async {
        let store = Store(reducers: [todosReducer], state: Todos())
        let feed = store.changes(bufferingNewest: 2)
        for title in ["a", "b", "c", "d", "e"] { store.dispatchAction(AddTodo(title: title)) }
        let changes = await first(2, of: feed)
        #expect(changes.map(\.version) == [4, 5])
    }

    @Test("each sequence keeps its own newest `limit`, whatever the others ask for")
    func boundedEach() async {
        let store = Store(reducers: [todosReducer], state: Todos())
        let small = store.changes(bufferingNewest: 2)
        let large = store.changes(bufferingNewest: 100)
        for title in ["a", "b", "c", "d", "e"] { store.dispatchAction(AddTodo(title: title)) }
        #expect(await first(2, of: small).map(\.version) == [4, 5])
        #expect(await first(5, of: large).map(\.version) == [1, 2, 3, 4, 5])
        store.dispatchAction(AddTodo(title: "f"))
        #expect(await first(1, of: small).map(\.version) == [6], "read on from where it stopped")
    }

    @Test("a limit past what the store makes room for at first: the room grows as changes come")
    func unboundedLimit() async {
        struct Tally: Codable { var count = 0 }
        let store = Store(reducers: [{ (state: inout Tally, action: any Action) in
            if action is AddTodo { state.count += 1 }
        }], state: Tally())
        let everything = store.changes(bufferingNewest: .max)
        let patched = store.changes(includingPatches: true, bufferingNewest: 5_000)
        for item in 0..<5_000 { store.dispatchAction(AddTodo(title: "\(item)")) }
        #expect(await first(5_000, of: everything).map(\.version) == Array(1...5_000))
        let changes = await first(5_000, of: patched)
        #expect(changes.map(\.version) == Array(1...5_000))
        #expect(changes.first?.patch == [.replace(path: "/count", value: 1)])
        #expect(changes.last?.patch == [.replace(path: "/count", value: 5_000)])
    }

    @Test("a batch whose first action is the one the room grows for keeps its versions")
    func batchAtTheGrowth() async {
        let store = Store(reducers: [todosReducer], state: Todos())
        let feed = store.changes(bufferingNewest: .max)
        // The room made at first, filled, then a batch: its first record makes the room grow.
        for _ in 0..<4_096 { store.dispatchAction(CounterAction.increment) }
        store.dispatchActions([AddTodo(title: "a"), AddTodo(title: "b"), AddTodo(title: "c")])
        let changes = await first(4_099, of: feed).suffix(3)
        #expect(changes.map(\.version) == [4_097, 4_098, 4_099])
        #expect(changes.map(\.batch) == Array(repeating: 4_097...4_099, count: 3))
    }

    @Test("what the store kept for a sequence is read after the store is freed, at most `limit`")
    func keptPastTheStore() async {
        var store: Store<Todos>? = Store(reducers: [todosReducer], state: Todos())
        let feed = store!.changes(includingPatches: true, bufferingNewest: 2)
        for title in ["a", "b", "c", "d", "e"] { store!.dispatchAction(AddTodo(title: title)) }
        store = nil
        var changes: [StoreChange] = []
        for await change in feed { changes.append(change) }
        #expect(changes.map(\.version) == [4, 5])
        #expect(changes.map(\.patch) == [[.add(path: "/titles/3", value: "d")], [.add(path: "/titles/4", value: "e")]])
    }

    @Test("a consumer waiting for the next change when the store is freed hears the end")
    func waitingAtTheEnd() async {
        var store: Store<Todos>? = Store(reducers: [todosReducer], state: Todos())
        let feed = store!.changes()
        let consumer = Task {
            var versions: [UInt64] = []
            for await change in feed { versions.append(change.version) }
            return versions
        }
        store!.dispatchAction(AddTodo(title: "a"))
        // Let the consumer read the change and wait for the next.
        try? await Task.sleep(for: .milliseconds(50))
        store!.dispatchAction(AddTodo(title: "b"))
        store = nil
        #expect(await consumer.value == [1, 2])
    }

    @Test("freed while a consumer reads: gone when the last reference is dropped, the consumer ends after every change")
    func freedWhileRead() async {
        for _ in 0..<100 {
            var store: Store<Todos>? = Store(reducers: [todosReducer], state: Todos())
            weak let weakStore = store
            let feed = store!.changes()
            let consumer = Task.detached {
                var count = 0
                for await _ in feed { count += 1 }
                return count
            }
            // The consumer waits; each dispatch wakes it, and it reads while the store is dropped.
            try? await Task.sleep(for: .milliseconds(1))
            for item in 0..<20 { store!.dispatchAction(AddTodo(title: "\(item)")) }
            store = nil
            #expect(weakStore == nil, "a consumer's read does not hold the store")
            #expect(await consumer.value == 20)
        }
    }

    @Test("two tasks iterating one sequence at once: each change reaches one of them, and both hear the end")
    func twoIteratorsOfOneSequence() async {
        for _ in 0..<20 {
            var store: Store<Todos>? = Store(reducers: [todosReducer], state: Todos())
            let feed = store!.changes(bufferingNewest: 10_000)
            let seen = Locked<[UInt64]>([])
            let ended = Locked(0)
            for _ in 0..<2 {
                Task.detached {
                    for await change in feed { seen.withLock { $0.append(change.version) } }
                    ended.withLock { $0 += 1 }
                }
            }
            // Both wait for the first change; a dispatch wakes them both.
            try? await Task.sleep(for: .milliseconds(5))
            for item in 0..<500 { store!.dispatchAction(AddTodo(title: "\(item)")) }
            store = nil
            // A watchdog, not a speed goal: a task left waiting forever would hang the suite.
            for _ in 0..<3_000 where ended.withLock({ $0 }) < 2 { try? await Task.sleep(for: .milliseconds(10)) }
            #expect(ended.withLock { $0 } == 2, "a task iterating the sequence never heard its end")
            #expect(seen.withLock { $0.sorted() } == Array(1...500))
        }
    }

    @Test("dispatched from four threads while a consumer reads: every version once, in order")
    func manyThreads() async {
        let store = Store(reducers: [todosReducer], state: Todos())
        let feed = store.changes(bufferingNewest: 100_000)
        let consumer = Task {
            var versions: [UInt64] = []
            for await change in feed {
                versions.append(change.version)
                if versions.count == 8_000 { break }
            }
            return versions
        }
        let threads = (0..<4).map { index in
            Thread {
                for item in 0..<2_000 { store.dispatchAction(AddTodo(title: "\(index).\(item)")) }
            }
        }
        threads.forEach { $0.start() }
        let versions = await consumer.value
        #expect(versions == Array(1...8_000))
    }

    @Test("a sequence with patches dropped: the store keeps nothing for it any more")
    func patchesDropped() async {
        let store = Store(reducers: [todosReducer], state: Todos())
        do {
            let feed = store.changes(includingPatches: true)
            store.dispatchAction(AddTodo(title: "a"))
            #expect(await first(1, of: feed).first?.patch == [.add(path: "/titles/0", value: "a")])
            #expect(!store.recordsNothing)
            // The live inspectors' reading of the same log carries no patch.
            let token = store.openActionLog(10)
            store.dispatchAction(AddTodo(title: "b"))
            #expect(store.readActionLog(after: 1)?.records.map(\.patch) == [nil])
            store.closeActionLog(token)
            #expect(await first(1, of: feed).first?.patch == [.add(path: "/titles/1", value: "b")])
        }
        #expect(store.changeListenerCount == 0)
        #expect(store.recordsNothing)
    }

    @Test("the sequence ends when the store is freed; nothing keeps the store alive")
    func endsWithTheStore() async {
        var store: Store<Todos>? = Store(reducers: [todosReducer], state: Todos())
        weak let weakStore = store
        let feed = store!.changes()
        store!.dispatchAction(AddTodo(title: "a"))
        store = nil
        #expect(weakStore == nil)
        var versions: [UInt64] = []
        for await change in feed { versions.append(change.version) }
        #expect(versions == [1], "buffered changes are still read, then the sequence ends")
    }

    @Test("a consumer that stops listening is removed, and the store records nothing for it")
    func cancelling() async {
        let store = Store(reducers: [todosReducer], state: Todos())
        let task = Task {
            var count = 0
            for await _ in store.changes() { count += 1 }
            return count
        }
        while store.changeListenerCount == 0 { await Task.yield() }
        store.dispatchAction(AddTodo(title: "a"))
        task.cancel()
        _ = await task.value
        #expect(store.changeListenerCount == 0)
        do {
            let feed = store.changes()
            #expect(store.changeListenerCount == 1)
            withExtendedLifetime(feed) {}
        }
        // A sequence dropped without being read stops listening as it goes.
        #expect(store.changeListenerCount == 0)
    }

    @Test("two consumers read the same record; one with patches, one without")
    func twoConsumers() async {
        let store = Store(reducers: [todosReducer], state: Todos())
        let plain = store.changes()
        let withPatches = store.changes(includingPatches: true)
        store.dispatchAction(AddTodo(title: "a"))
        let a = await first(1, of: plain)
        let b = await first(1, of: withPatches)
        #expect(a[0].version == 1 && b[0].version == 1)
        #expect(a[0].patch == nil)
        #expect(b[0].patch == [.add(path: "/titles/0", value: "a")])
        #expect(a[0].time == b[0].time)
    }

    @Test("one record for a journal without patches and a consumer with them: the journal's lines carry none")
    func journalBesidePatchConsumer() async throws {
        let folder = temporaryFolder()
        let store = Store(reducers: [todosReducer], state: Todos())
        try store.startJournal(at: folder + "/plain.journal")
        let feed = store.changes(includingPatches: true)
        store.dispatchAction(AddTodo(title: "a"))
        store.dispatchAction(AddTodo(title: "b"))
        let changes = await first(2, of: feed)
        #expect(changes[1].patch == [.add(path: "/titles/1", value: "b")])
        try store.flushJournal()
        store.stopJournal()
        let plain = try String(contentsOfFile: folder + "/plain.journal", encoding: .utf8).split(separator: "\n")
        #expect(plain.count == 2)
        #expect(plain.allSatisfy { !$0.contains("\"patch") }, "\(plain)")

        // The same store's journal with patches carries them, the consumer still listening.
        var options = JournalOptions()
        options.recordPatches = true
        try store.startJournal(at: folder + "/patches.journal", options: options)
        store.dispatchAction(AddTodo(title: "c"))
        _ = await first(1, of: feed)
        try store.flushJournal()
        store.stopJournal()
        let lines = try String(contentsOfFile: folder + "/patches.journal", encoding: .utf8).split(separator: "\n")
        #expect(lines.last?.contains(#""patch":[{"op":"add","path":"/titles/2","value":"c"}]"#) == true, "\(lines)")
    }

    @Test("the journal's lines carry the source; reduxstore-inspect's summary groups by it")
    func journalSource() throws {
        let path = temporaryFolder() + "/app.journal"
        let store = Store(reducers: [todosReducer], state: Todos())
        try store.startJournal(at: path)
        let line = #line + 2
        for title in ["a", "b", "c"] {
            store.dispatchAction(AddTodo(title: title))
        }
        store.dispatchAction(JSONAction(identifier: "clear"), file: "Other/Place.swift", line: 9)
        try store.flushJournal()
        store.stopJournal()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines[0].contains("\"source\":\"ChangeFeedTests.swift:\(line)\""), "\(lines[0])")
        #expect(lines[3].contains("\"source\":\"Place.swift:9\""), "\(lines[3])")
        let summary = try Inspector.summarize(journal: path)
        #expect(summary.sources.map(\.source) == ["ChangeFeedTests.swift:\(line)", "Place.swift:9"])
        #expect(summary.sources.map(\.count) == [3, 1])
        #expect(summary.sources[0].identifiers.map(\.identifier) == ["addTodo"])
        #expect(summary.withoutSource == 0)
        // Replay reads such lines as before.
        let replayed = try Store(replaying: path, from: Todos(), reducers: [todosReducer], actions: {
            var types = ActionTypes()
            types.register(AddTodo.self, for: "addTodo")
            return types
        }())
        #expect(replayed.currentState() == store.currentState())
    }
}

@Suite("JSONValue prints as JSON text")
struct JSONValueTextTests {
    @Test("compact JSON, keys sorted by code point, strings escaped")
    func text() {
        let value: JSONValue = ["title": "a \"b\"\n", "done": false, "n": [1, -2, 2.5, .null], "é": .uint(18_446_744_073_709_551_615)]
        #expect(value.description == #"{"done":false,"n":[1,-2,2.5,null],"title":"a \"b\"\n","é":18446744073709551615}"#)
        #expect(JSONValue.string("\u{1}").description == #""\u0001""#)
    }
}
