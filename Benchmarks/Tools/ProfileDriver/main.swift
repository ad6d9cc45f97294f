// ProfileDriver: one benchmark workload in a plain loop, to profile under
// `valgrind --tool=callgrind` (perf has no hardware counters on swift-packages-b,
// the 2-core x86_64 VM the figures of Benchmarks/README.md come from).
//   ProfileDriver dispatch-o0|dispatch-o1|plain-o1|hand|c-null|c-payload|c-json|c-json-payload|c-batch
//                 |jsonc-parse|jsonc-parse-batch|swiftstore-null|swiftstore-registered|snapshot10|snapshot1000
//                 |gauge-o0|keypath-unchanged|middleware-pass|journal|journal-patches|journal-burst
//                 |journal-timing|jsonvalue-todos|inspector-idle|actionlog-o0|c-actionlog|todos-o1|hand-todos
//                 |routed-o1|routed50-o1|c-routed|changes-o0|changes-read [count]
//   ProfileDriver plain-paired|contention-paired [rounds]   (not for callgrind: wall-clock ratios,
//                 paired as the benchmarks pair them; contention-paired reads THREADS, 4 by default)
// (inspector-idle: a counter store with a live inspector, no page connected)
// (journal-timing is not for callgrind: it prints wall-clock medians, with and without a journal;
// the journal workloads write in JOURNAL_DIR, /tmp by default)
// (plain-o1: the benchmarks' plain baseline store, Benchmarks/ReduxStoreBenchmarks/PlainStore.swift)
import CJSONC
import CReduxStoreAPI
import ReduxStore
import ReduxStoreC
import ReduxStoreInspector
import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

struct Counter: Codable, Sendable { var count = 0 }
struct Increment: Action {
    var amount: Int
    var identifier: String { "counter.add" }
}
struct Todo: Codable, Sendable { var id: Int; var title: String; var done: Bool }
final class TodoList: Codable, @unchecked Sendable {
    var todos: [Todo]
    init(count: Int) { todos = (0..<count).map { Todo(id: $0, title: "todo \($0)", done: false) } }
}
let add: Reducer<Counter> = { state, action in
    if let add = action as? Increment { state.count &+= add.amount }
}
final class Box { var state = Counter() }
@inline(never) func hand(_ box: Box, _ reducers: [Reducer<Counter>], _ action: any Action) {
    for reducer in reducers { reducer(&box.state, action) }
}
@inline(never) func sink<T>(_ value: T) { withExtendedLifetime(value) {} }

let cReduce: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void = {
    state, identifier, payload, _ in
    guard let identifier, strcmp(identifier, "counter.add") == 0 else { return }
    let count = json_object_object_get(state, "count")
    json_object_set_int64(count, json_object_get_int64(count) &+ 1)
}
/// `cReduce` registered for "counter.add": the store calls it for that identifier only.
let cRoutedReduce: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, OpaquePointer?, UnsafeMutableRawPointer?) -> Void = {
    state, _, _, _ in
    let count = json_object_object_get(state, "count")
    json_object_set_int64(count, json_object_get_int64(count) &+ 1)
}
/// A C store of `{"count": 0}` with `cReduce` for every action.
@MainActor func cCounterStore() -> OpaquePointer? {
    var reducers = [rdx_reducer(reduce: cReduce, context: nil, identifier: nil)]
    var status = RDX_OK
    return rdx_store_create(json_tokener_parse(#"{"count": 0}"#), &reducers, 1, &status)
}

/// The benchmarks' plain baseline store (a copy of Benchmarks/ReduxStoreBenchmarks/PlainStore.swift).
final class PlainStore<State: Sendable>: Sendable {
    private struct Guarded {
        var state: State
        var version: UInt64 = 0
        var observers: [@Sendable (StoreNotification) -> Void] = []
    }
    private let reducers: [Reducer<State>]
    private let guarded: Mutex<Guarded>
    init(reducers: [Reducer<State>], state: State) {
        self.reducers = reducers
        guarded = Mutex(Guarded(state: state))
    }
    func addObserver(_ observer: @escaping @Sendable (StoreNotification) -> Void) {
        guarded.withLock { $0.observers.append(observer) }
    }
    func dispatchAction(_ action: some Action) {
        let (version, observers) = guarded.withLock { guarded in
            for reducer in reducers { reducer(&guarded.state, action) }
            guarded.version &+= 1
            return (guarded.version, guarded.observers)
        }
        if observers.isEmpty { return }
        let notification = StoreNotification(
            stateDidChangeAt: version, actionIdentifier: action.identifier)
        for observer in observers { observer(notification) }
    }
}

/// Where the journal workloads write: in JOURNAL_DIR, or /tmp.
let journalPath = (getenv("JOURNAL_DIR").map { String(cString: $0) } ?? "/tmp")
    + "/profile-journal-\(getpid()).jsonl"
/// Deletes the journal and the files it rotated to (`.1` … `.8`, JournalOptions' default).
func removeJournal() {
    unlink(journalPath)
    for index in 1...8 { unlink("\(journalPath).\(index)") }
}
let arguments = CommandLine.arguments
let workload = arguments.count > 1 ? arguments[1] : "dispatch-o1"
let count = arguments.count > 2 ? Int(arguments[2])! : 1_000_000

switch workload {
case "hand":
    let box = Box()
    for _ in 0..<count { hand(box, [add], Increment(amount: 1)) }
    sink(box.state.count)
case "dispatch-o0", "dispatch-o1":
    let store = Store(reducers: [add], state: Counter())
    if workload == "dispatch-o1" { store.addObserver { note in sink(note.version) } }
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
case "keypath-unchanged", "gauge-o0":
    struct Gauge: Codable, Sendable { var count = 0; var limit = 100 }
    let store = Store(reducers: [{ state, action in
        if let add = action as? Increment { state.count &+= add.amount }
    }], state: Gauge())
    if workload == "keypath-unchanged" { store.observe(\.limit) { sink($0) } }
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
case "inspector-idle":
    let store = Store(reducers: [add], state: Counter())
    var options = InspectorOptions()
    if let kept = getenv("KEPT_ACTIONS") { options.keptActions = Int(atoi(kept)) }
    let inspector = try! await StoreInspector(store, options: options)
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
    await inspector.stop()
case "inspector-paired":
    // Not for callgrind: like the paired benchmark, bursts of 1,000 dispatches on a store without
    // an inspector, one with an idle inspector (KEPT_ACTIONS), one with keptActions 0, in
    // rotating order, 4 MiB of memory written between bursts (as a program does between them);
    // prints the medians of the bursts' ratios. `count`: samples.
    let off = Store(reducers: [add], state: Counter())
    let idle = Store(reducers: [add], state: Counter())
    let quiet = Store(reducers: [add], state: Counter())
    var options = InspectorOptions()
    if let kept = getenv("KEPT_ACTIONS") { options.keptActions = Int(atoi(kept)) }
    let idleInspector = try! await StoreInspector(idle, options: options)
    options.keptActions = 0
    let quietInspector = try! await StoreInspector(quiet, options: options)
    var junk = [UInt8](repeating: 0, count: 4 << 20)
    var ratios: [[Double]] = [[], []]
    for sample in 0..<count {
        var times = [UInt64](repeating: 0, count: 3)
        for turn in 0..<3 {
            let kind = (turn + sample) % 3
            let store = [off, idle, quiet][kind]
            for index in stride(from: 0, to: junk.count, by: 64) { junk[index] &+= 1 }
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<1_000 { store.dispatchAction(Increment(amount: 1)) }
            times[kind] = DispatchTime.now().uptimeNanoseconds - start
        }
        ratios[0].append(Double(times[1]) / Double(times[0]))
        ratios[1].append(Double(times[2]) / Double(times[0]))
    }
    sink(junk)
    let medians = ratios.map { $0.sorted()[$0.count / 2] }
    print("idle/off \(medians[0])  quiet/off \(medians[1])")
    await idleInspector.stop()
    await quietInspector.stop()
case "plain-paired":
    // Not for callgrind: bursts of 1,000 dispatches on the plain store, the routed store, the
    // broadcast store (counter, 1 reducer, 1 observer each) and the routed store among 49 other
    // reducers, in rotating order; prints the medians of the bursts' ratios. `count`: samples.
    let plain = PlainStore(reducers: [add], state: Counter())
    plain.addObserver { note in sink(note.version) }
    func routed(_ others: Int) -> Store<Counter> {
        var reducers = Reducers<Counter>()
        reducers.on(Increment.self) { state, add in state.count &+= add.amount }
        for index in 0..<others { reducers.on(identifier: "other.\(index)") { state, _ in state.count = 0 } }
        let store = Store(reducers: reducers, state: Counter())
        store.addObserver { note in sink(note.version) }
        return store
    }
    let broadcast = Store(reducers: [add], state: Counter())
    broadcast.addObserver { note in sink(note.version) }
    let stores: [(String, () -> Void)] = [
        ("plain", { plain.dispatchAction(Increment(amount: 1)) }),
        ("routed", { [routed1 = routed(0)] in routed1.dispatchAction(Increment(amount: 1)) }),
        ("broadcast", { broadcast.dispatchAction(Increment(amount: 1)) }),
        ("routed50", { [routed50 = routed(49)] in routed50.dispatchAction(Increment(amount: 1)) }),
    ]
    var times = [[Double]](repeating: [], count: stores.count)
    for sample in 0..<count {
        var round = [Double](repeating: 0, count: stores.count)
        for turn in stores.indices {
            let kind = (turn + sample) % stores.count
            let body = stores[kind].1
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<1_000 { body() }
            round[kind] = Double(DispatchTime.now().uptimeNanoseconds - start)
        }
        for kind in stores.indices { times[kind].append(round[kind] / round[0]) }
    }
    for kind in stores.indices.dropFirst() {
        print("\(stores[kind].0)/plain \(times[kind].sorted()[count / 2])")
    }
case "contention-paired":
    // Not for callgrind: THREADS threads (4 by default) dispatching 1,000,000 actions in all to
    // the plain store and to the broadcast store (counter, 1 reducer, 1 observer each), in
    // alternating order; prints each round's times and the median of the rounds' ratios.
    // `count`: rounds.
    let threads = getenv("THREADS").map { Int(atoi($0)) } ?? 4
    let plain = PlainStore(reducers: [add], state: Counter())
    plain.addObserver { note in sink(note.version) }
    let store = Store(reducers: [add], state: Counter())
    store.addObserver { note in sink(note.version) }
    func timed(_ body: @escaping @Sendable () -> Void) -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        let group = DispatchGroup()
        for _ in 0..<threads {
            group.enter()
            let thread = Thread {
                for _ in 0..<(1_000_000 / threads) { body() }
                group.leave()
            }
            thread.start()
        }
        group.wait()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000
    }
    var ratios: [Double] = []
    for round in 0..<count {
        let a: Double, b: Double
        if round.isMultiple(of: 2) {
            a = timed { plain.dispatchAction(Increment(amount: 1)) }
            b = timed { store.dispatchAction(Increment(amount: 1)) }
        } else {
            b = timed { store.dispatchAction(Increment(amount: 1)) }
            a = timed { plain.dispatchAction(Increment(amount: 1)) }
        }
        print("plain \(a) ns, store \(b) ns an action")
        ratios.append(b / a)
    }
    print("store/plain, \(threads) threads: \(ratios.sorted()[count / 2])")
case "journal":
    let store = Store(reducers: [add], state: Counter())
    try! store.startJournal(at: journalPath)
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
    store.stopJournal()
    removeJournal()
case "journal-patches":
    let store = Store(reducers: [add], state: Counter())
    var options = JournalOptions()
    options.recordPatches = true
    try! store.startJournal(at: journalPath, options: options)
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
    store.stopJournal()
    removeJournal()
case "patch-observer":
    // dispatch-o0 with one observer that asks for each action's patch.
    let store = Store(reducers: [add], state: Counter())
    store.addObserver(includingPatch: true) { note, patch in sink(patch.count) }
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
case "jsonvalue-todos":
    // A state of COUNT todos as a JSONValue (what a patch observer or a journal with patches
    // makes of the state after each action).
    let list = TodoList(count: count)
    let started = DispatchTime.now().uptimeNanoseconds
    sink(try! JSONValue(encoding: list))
    print("JSONValue(encoding:) of \(count) todos: \((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000) ms")
case "journal-burst":
    // The dispatching side of the journal: 1,000 dispatches, then the writer catches up.
    let store = Store(reducers: [add], state: Counter())
    try! store.startJournal(at: journalPath)
    for _ in 0..<count / 1_000 {
        for _ in 0..<1_000 { store.dispatchAction(Increment(amount: 1)) }
        try! store.flushJournal()
    }
    store.stopJournal()
    removeJournal()
case "journal-timing":
    // Wall time per dispatch in bursts of 1,000, the store with a journal and the same store
    // without, side by side in alternating order (as inspection.journal.paired.counter): the
    // medians over COUNT / 1,000 pairs, and their ratio. Not for callgrind.
    func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
    let plain = Store(reducers: [add], state: Counter())
    let journaled = Store(reducers: [add], state: Counter())
    try! journaled.startJournal(at: journalPath)
    func burst(_ store: Store<Counter>) -> UInt64 {
        let start = now()
        for _ in 0..<1_000 { store.dispatchAction(Increment(amount: 1)) }
        return now() - start
    }
    var plainTimes: [UInt64] = [], journalTimes: [UInt64] = []
    for pair in 0..<max(count / 1_000, 1) {
        if pair.isMultiple(of: 2) {
            journalTimes.append(burst(journaled))
            plainTimes.append(burst(plain))
        } else {
            plainTimes.append(burst(plain))
            journalTimes.append(burst(journaled))
        }
        try! journaled.flushJournal()
    }
    journaled.stopJournal()
    removeJournal()
    // Per dispatch, in ns: a burst's time / 1,000.
    func percentile(_ times: [UInt64], _ fraction: Double) -> Double {
        Double(times.sorted()[Int(Double(times.count - 1) * fraction)]) / 1_000
    }
    let without = percentile(plainTimes, 0.5), with = percentile(journalTimes, 0.5)
    print("ns per dispatch, median (p10): without journal \(without) (\(percentile(plainTimes, 0.1))),"
          + " with \(with) (\(percentile(journalTimes, 0.1))); ratio \(with / without)")
case "middleware-pass":
    let store = Store(reducers: [add], state: Counter(), middleware: [{ _, action, next in next(action) }])
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
case "routed-o1", "routed50-o1":
    var reducers = Reducers<Counter>()
    reducers.on(Increment.self) { state, add in state.count &+= add.amount }
    if workload == "routed50-o1" {
        for index in 1..<50 { reducers.on(identifier: "other.\(index)") { state, _ in state.count = 0 } }
    }
    let store = Store(reducers: reducers, state: Counter())
    store.addObserver { note in sink(note.version) }
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
case "c-routed":
    // The counter reducer for "counter.add" among 10 reducers, each for an identifier of its own.
    let names = (0..<10).map { strdup($0 == 0 ? "counter.add" : "other.\($0)")! }
    var reducers = names.map { rdx_reducer(reduce: cRoutedReduce, context: nil, identifier: $0) }
    var status = RDX_OK
    let state = json_tokener_parse(#"{"count": 0}"#)
    let store = rdx_store_create(state, &reducers, reducers.count, &status)
    names.forEach { free($0) }
    for _ in 0..<count { _ = rdx_store_dispatch_action(store, "counter.add", nil) }
    rdx_store_release(store)
case "plain-o1":
    let store = PlainStore(reducers: [add], state: Counter())
    store.addObserver { note in sink(note.version) }
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
case "c-null", "c-payload", "c-json", "c-json-payload", "c-batch", "jsonc-parse", "jsonc-parse-batch":
    let store = cCounterStore()
    let payloadText = #"{"amount": 1, "note": "a small payload"}"#
    switch workload {
    case "c-null", "c-payload":
        let payload = workload == "c-payload" ? json_tokener_parse(payloadText) : nil
        for _ in 0..<count { _ = rdx_store_dispatch_action(store, "counter.add", payload) }
    case "c-json":
        // The text path's plainest case: an action without a payload.
        for _ in 0..<count { _ = rdx_store_dispatch_json(store, #"{"identifier": "counter.add"}"#) }
    default:
        // The text path as the benchmarks time it (CInterface.swift), and its floor: json-c
        // parsing and freeing the same text. "-batch": 10 such actions in one array (count:
        // batches).
        let action = #"{"identifier": "counter.add", "payload": \#(payloadText)}"#
        let batch = workload.hasSuffix("batch")
        let text = batch ? "[" + Array(repeating: action, count: 10).joined(separator: ",") + "]" : action
        text.withCString { text in
            for _ in 0..<count {
                if workload.hasPrefix("jsonc") {
                    json_object_put(json_tokener_parse(text))
                } else {
                    _ = batch ? rdx_store_dispatch_batch_json(store, text) : rdx_store_dispatch_json(store, text)
                }
            }
        }
    }
    rdx_store_release(store)
case "swiftstore-null":
    let store = Store(reducers: [add], state: Counter())
    let handle = store.makeCStore()
    for _ in 0..<count { _ = rdx_store_dispatch_action(handle, "counter.add", nil) }
    rdx_store_release(handle)
case "swiftstore-registered":
    // A Swift store handed to C, its identifier registered: a payload-less type decoded from
    // the NULL payload, which the reducer casts to as `add` casts to Increment.
    struct Tick: Action, Codable { var identifier: String { "counter.add" } }
    let tick: Reducer<Counter> = { state, action in
        if action is Tick { state.count &+= 1 }
    }
    var types = ActionTypes()
    types.register(Tick.self, for: "counter.add")
    let store = Store(reducers: [tick], state: Counter())
    let handle = store.makeCStore(actions: types)
    for _ in 0..<count { _ = rdx_store_dispatch_action(handle, "counter.add", nil) }
    rdx_store_release(handle)
case "actionlog-o0":
    // dispatch-o0 with the action log on, as a live inspector keeps it (its default 1,000
    // records, ticked), without the inspector's server: what the log costs a dispatch.
    let store = Store(reducers: [add], state: Counter())
    let handle = store.makeCStore()
    let claim = rdx_store_open_action_log(handle, 1_000, true)
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
    _ = rdx_store_close_action_log(handle, claim)
    rdx_store_release(handle)
case "history":
    // dispatch-o0 with the last 100 versions kept for restore (as an inspector that allows
    // restore keeps them): a snapshot encode of the counter and its record per dispatch.
    let store = Store(reducers: [add], state: Counter())
    store.keepHistory(100)
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
case "changes-o0", "changes-read":
    // dispatch-o0 with a `changes()` sequence open: not read (what it costs the dispatching
    // thread), or read to the end after the dispatches (all it costs, the reading included).
    let store = Store(reducers: [add], state: Counter())
    let feed = store.changes(bufferingNewest: workload == "changes-read" ? count : 4096)
    for _ in 0..<count { store.dispatchAction(Increment(amount: 1)) }
    if workload == "changes-read" {
        let done = DispatchSemaphore(value: 0)
        // Detached: the top level runs on the main actor, which the semaphore holds.
        Task.detached {
            var read = 0
            for await change in feed {
                sink(change.version)
                read += 1
                if read == count { break }
            }
            done.signal()
        }
        done.wait()
    }
    withExtendedLifetime(feed) {}
case "c-actionlog":
    // c-null with the action log on, as the C inspector keeps it.
    let store = cCounterStore()
    let claim = rdx_store_open_action_log(store, 1_000, true)
    for _ in 0..<count { _ = rdx_store_dispatch_action(store, "counter.add", nil) }
    _ = rdx_store_close_action_log(store, claim)
    rdx_store_release(store)
case "c-journal-listener":
    // c-null with a journal (no patches) and a C change listener: the C dispatch with the
    // change feed's two C-visible consumers.
    let store = cCounterStore()
    let path = "/tmp/profiledriver-\(getpid()).journal"
    _ = rdx_store_start_journal(store, path, false)
    let listen: @convention(c) (OpaquePointer?, UnsafePointer<rdx_change>?, UnsafeMutableRawPointer?) -> Void = { _, _, _ in }
    let token = rdx_store_add_change_listener(store, false, listen, nil)
    for _ in 0..<count { _ = rdx_store_dispatch_action(store, "counter.add", nil) }
    _ = rdx_store_remove_change_listener(store, token)
    _ = rdx_store_stop_journal(store)
    rdx_store_release(store)
    unlink(path)
case "todos-o1", "hand-todos":
    // The benchmarks' 100,000-todo dispatch (dispatch.store.todos100000.r1.o1) and its hand
    // loop: a Toggle of the next todo in turn, its reducer casting.
    struct Toggle: Action {
        var index: Int
        var identifier: String { "todo.toggle" }
    }
    let toggle: Reducer<TodoList> = { state, action in
        if let toggle = action as? Toggle { state.todos[toggle.index].done.toggle() }
    }
    let size = 100_000
    var index = 0
    if workload == "hand-todos" {
        final class TodoBox { var state = TodoList(count: 100_000) }
        @inline(never) func handTodos(_ box: TodoBox, _ reducers: [Reducer<TodoList>], _ action: any Action) {
            for reducer in reducers { reducer(&box.state, action) }
        }
        let box = TodoBox()
        for _ in 0..<count {
            handTodos(box, [toggle], Toggle(index: index))
            index = index + 1 == size ? 0 : index + 1
        }
        sink(box.state.todos[0].done)
    } else {
        let store = Store(reducers: [toggle], state: TodoList(count: size))
        store.addObserver { note in sink(note.version) }
        for _ in 0..<count {
            store.dispatchAction(Toggle(index: index))
            index = index + 1 == size ? 0 : index + 1
        }
    }
case "snapshot10", "snapshot1000":
    // One action (the kept snapshot goes stale), then one snapshot: the benchmarks'
    // snapshot.store.todos<n>.readers1 at 10 or 1,000 todos.
    let store = Store(reducers: [], state: TodoList(count: workload == "snapshot10" ? 10 : 1_000))
    for _ in 0..<count {
        store.dispatchAction(Increment(amount: 1))
        sink(store.currentState())
    }
default:
    fatalError("unknown workload \(workload)")
}
