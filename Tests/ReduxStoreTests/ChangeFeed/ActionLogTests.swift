import Foundation
@_spi(Bindings) import ReduxStore
import ReduxStoreTestSupport
import Synchronization
import Testing

private struct Counter: Codable, Equatable, Sendable { var count = 0 }
private struct Add: Action, Codable { var identifier: String { "counter.add" }; var amount: Int }
private let add: Reducer<Counter> = { state, action in
    if let add = action as? Add { state.count += add.amount }
}

/// Counts the calls of the wake-ups it makes.
private final class Wakes: Sendable {
    private let counts = Mutex([Int](repeating: 0, count: 4))
    func wake(_ index: Int) -> @Sendable () -> Void { { self.counts.withLock { $0[index] += 1 } } }
    var all: [Int] { counts.withLock { $0 } }
}

private func nanoseconds(_ time: timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }

@Suite("The store's action log (what the live inspector reads)")
struct ActionLogTests {
    @Test("off unless kept; keeps the newest records, in order, and counts what it no longer holds")
    func ring() throws {
        let store = Store(reducers: [add], state: Counter())
        #expect(store.readActionLog(after: 0) == nil)
        let claim = store.openActionLog(4)
        for amount in 1...6 { store.dispatchAction(Add(amount: amount)) }
        let read = try #require(store.readActionLog(after: 0))
        #expect(read.records.map(\.version) == [3, 4, 5, 6])
        #expect(read.records.map { ($0.action as? Add)?.amount } == [3, 4, 5, 6])
        #expect(read.dropped == 2)
        #expect(read.version == 6)
        // The oldest `limit` after a version.
        let some = try #require(store.readActionLog(after: 3, limit: 2))
        #expect(some.records.map(\.version) == [4, 5])
        #expect(some.dropped == 0)
        let rest = try #require(store.readActionLog(after: 5))
        #expect(rest.records.map(\.version) == [6])
        #expect(rest.version == 6)
        // The log keeps what the largest open claim asks for: shrinking keeps the newest; the
        // last claim closed stops it.
        let smaller = store.openActionLog(2)
        #expect(store.readActionLog(after: 0)?.records.map(\.version) == [3, 4, 5, 6])
        #expect(store.closeActionLog(claim))
        #expect(!store.closeActionLog(claim))
        #expect(store.readActionLog(after: 0)?.records.map(\.version) == [5, 6])
        #expect(store.closeActionLog(smaller))
        #expect(store.readActionLog(after: 0) == nil)
    }

    @Test("two readers' claims: closing one leaves the other's log as it was")
    func twoClaims() throws {
        let store = Store(reducers: [add], state: Counter())
        let first = store.openActionLog(10, ticked: true)
        let second = store.openActionLog(10, ticked: true)
        for amount in 1...3 { store.dispatchAction(Add(amount: amount)) }
        #expect(store.closeActionLog(first))
        store.dispatchAction(Add(amount: 4))
        let read = try #require(store.readActionLog(after: 0))
        #expect(read.records.map(\.version) == [1, 2, 3, 4])
        #expect(store.closeActionLog(second))
        #expect(store.readActionLog(after: 0) == nil)
    }

    @Test("a record keeps the batch's versions and where it was dispatched from")
    func fields() throws {
        let store = Store(reducers: [add], state: Counter())
        _ = store.openActionLog(10)
        let line = #line + 1
        store.dispatchAction(Add(amount: 1))
        store.dispatchActions([Add(amount: 2), Add(amount: 3)])
        let records = try #require(store.readActionLog(after: 0)).records
        #expect(records.map(\.batch) == [nil, 2...3, 2...3])
        #expect(records[0].source.line == UInt(line))
    }

    @Test("every reader waiting is woken once by the next record, and not again")
    func wakes() throws {
        let store = Store(reducers: [add], state: Counter())
        let claim = store.openActionLog(10)
        let wakes = Wakes()
        // A reader that finds records leaves no wake-up.
        store.dispatchAction(Add(amount: 1))
        _ = store.readActionLog(after: 0, wake: wakes.wake(3))
        _ = store.readActionLog(after: 1, wake: wakes.wake(0))
        _ = store.readActionLog(after: 1, wake: wakes.wake(1))
        #expect(wakes.all == [0, 0, 0, 0])
        store.dispatchAction(Add(amount: 1))
        #expect(wakes.all == [1, 1, 0, 0])
        store.dispatchAction(Add(amount: 1))
        #expect(wakes.all == [1, 1, 0, 0])
        // Stopping the log wakes whoever waits, so no reader waits for a log that is gone.
        _ = store.readActionLog(after: 3, wake: wakes.wake(2))
        store.closeActionLog(claim)
        #expect(wakes.all == [1, 1, 1, 0])
    }

    @Test("ticked, a record reads the clock only after a tick; otherwise each reads it")
    func ticked() throws {
        let store = Store(reducers: [add], state: Counter())
        _ = store.openActionLog(10, ticked: true)
        // The coarse clock moves every few milliseconds: 30 ms apart, two readings differ.
        store.dispatchAction(Add(amount: 1))
        Thread.sleep(forTimeInterval: 0.03)
        store.dispatchAction(Add(amount: 1))
        store.tickActionLog()
        Thread.sleep(forTimeInterval: 0.03)
        store.dispatchAction(Add(amount: 1))
        var times = try #require(store.readActionLog(after: 0)).records.map { nanoseconds($0.time) }
        #expect(times[0] == times[1], "no tick: the same time")
        #expect(times[2] > times[1], "after a tick: the clock again")
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        #expect(abs(now - times[2]) < 10_000_000_000, "the time is the wall clock's")

        // A claim that is not ticked: every record reads the clock again.
        _ = store.openActionLog(10)
        Thread.sleep(forTimeInterval: 0.03)
        store.dispatchAction(Add(amount: 1))
        Thread.sleep(forTimeInterval: 0.03)
        store.dispatchAction(Add(amount: 1))
        times = try #require(store.readActionLog(after: 3)).records.map { nanoseconds($0.time) }
        #expect(times.count == 2 && times[1] > times[0], "unticked: every record reads the clock")
    }
}

/// Counts the instances of ``LoggedReference`` alive.
private let aliveReferences = Mutex(0)
private final class LoggedReference: Sendable {
    init() { aliveReferences.withLock { $0 += 1 } }
    deinit { aliveReferences.withLock { $0 -= 1 } }
}
/// An action holding a reference: the ring must keep it alive while it holds the action, and let
/// it go when it drops it.
private struct Held: Action { var identifier: String { "counter.held" }; let tracked = LoggedReference() }
/// A trivial action larger than an existential's inline buffer (kept in a box of its own).
private struct Wide: Action { var identifier: String { "counter.wide" }; var a = 1, b = 2, c = 3, d = 4 }

extension ActionLogTests {
    @Test("actions of every kind, mixed around the ring, are kept whole and let go when dropped")
    func mixedActions() throws {
        let before = aliveReferences.withLock { $0 }
        do {
            let store = Store(reducers: [add], state: Counter())
            let claim = store.openActionLog(5)
            for round in 0..<40 {
                switch round % 4 {
                case 0: store.dispatchAction(Add(amount: round))
                case 1: store.dispatchAction(Held())
                case 2: store.dispatchAction(Wide(d: round))
                default: store.dispatchAction(JSONAction(identifier: "counter.json", payload: ["n": .int(Int64(round))]))
                }
            }
            #expect(aliveReferences.withLock { $0 } - before <= 2, "the ring holds at most the Held actions it keeps")
            do {
                let records = try #require(store.readActionLog(after: 0)).records
                #expect(records.map(\.version) == Array(36...40))
                #expect(records[0].action.identifier == "counter.json")
                #expect((records[1].action as? Add)?.amount == 36)
                #expect(records[2].action is Held)
                #expect((records[3].action as? Wide)?.d == 38)
                #expect((records[3].action as? Wide)?.a == 1)
                #expect((records[4].action as? JSONAction)?.payload == ["n": .int(39)])
            }
            _ = store.openActionLog(2)
            store.closeActionLog(claim)
            #expect(aliveReferences.withLock { $0 } - before == 0, "the Held action dropped by the shrink is let go")
            store.dispatchAction(Held())
            store.dispatchAction(Held())
            #expect(aliveReferences.withLock { $0 } - before == 2)
        }
        #expect(aliveReferences.withLock { $0 } == before, "the store freed, its log lets its actions go")
    }
}

/// Counts the values alive of one test's ``Counted`` actions (tests run in parallel: each has
/// its own count).
private final class Alive: Sendable {
    private let count = Mutex(0)
    var now: Int { count.withLock { $0 } }
    func change(by delta: Int) { count.withLock { $0 += delta } }
}
private final class Token: Sendable {
    let alive: Alive
    init(_ alive: Alive) { self.alive = alive; alive.change(by: 1) }
    deinit { alive.change(by: -1) }
}
/// An action holding a reference counted in `alive`.
private struct Counted: Action { var identifier: String { "counter.counted" }; let token: Token }

extension ActionLogTests {
    @Test("a reader from its own place lets go of what it read, though its claim would keep more")
    func readRecordsAreLetGo() async {
        let alive = Alive()
        let store = Store(reducers: [add], state: Counter())
        let feed = store.changes(bufferingNewest: 100)
        for _ in 0..<10 { store.dispatchAction(Counted(token: Token(alive))) }
        #expect(alive.now == 10, "kept until read")
        var read: [UInt64] = []
        for await change in feed {
            read.append(change.version)
            if read.count == 10 { break }
        }
        #expect(read == Array(1...10))
        #expect(alive.now == 0, "memory follows the reader's backlog")
        // An inspector's claim keeps the newest it asked for, read or not.
        let claim = store.openActionLog(3)
        for _ in 0..<5 { store.dispatchAction(Counted(token: Token(alive))) }
        #expect(store.readActionLog(after: 0)?.records.map(\.version).suffix(3) == [13, 14, 15])
        #expect(alive.now == 5, "the sequence has not read them")
        store.closeActionLog(claim)
        withExtendedLifetime(feed) {}
    }

    @Test("the journal reads the one record, and lets every action go")
    func journalReadsTheLog() throws {
        let alive = Alive()
        let path = temporaryFolder() + "/journal.jsonl"
        let store = Store(reducers: [add], state: Counter())
        try store.startJournal(at: path)
        for index in 0..<10 {
            if index % 2 == 0 { store.dispatchAction(Counted(token: Token(alive))) } else { store.dispatchAction(Add(amount: index)) }
        }
        try store.flushJournal()
        store.stopJournal()
        #expect(alive.now == 0, "the writer let go of what it wrote; the log keeps nothing for it")
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 10)
        #expect(lines[0].contains("\"identifier\":\"counter.counted\"") && lines[1].contains("\"amount\":1"))
    }
}
