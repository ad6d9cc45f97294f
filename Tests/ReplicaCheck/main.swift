// A process of the replication tests (Tests/ReduxStorePostgresTests): it writes to or follows a
// stream and prints what it saw, so that the tests can race several of them, kill one, and
// compare every process's state with a replay of the stream.
//
//   reduxstore-replica-check write URL STREAM NAME COUNT INFLIGHT [TOTAL]
//       dispatch COUNT actions, INFLIGHT at a time, printing each acknowledged tag as it returns;
//       then wait until the stream holds TOTAL actions (by default COUNT)
//   reduxstore-replica-check follow URL STREAM VERSION              follow until VERSION
//   reduxstore-replica-check misuse URL STREAM                      dispatch to the replica's store
//   reduxstore-replica-check sets URL STREAM NAME COUNT TOTAL       write COUNT actions to a state of
//       sets and dictionaries with non-string keys, a snapshot every 10 versions; wait for TOTAL
//
// Each prints, last, `state {json}` with the state it ended with.
import Foundation
import ReduxStore
import ReduxStorePostgres

/// The shared shape: order-sensitive (the digest), so equal states mean the same order.
struct Tally: Codable, Equatable, Sendable {
    var count = 0
    var total = 0
    var digest: UInt64 = 14_695_981_039_346_656_037
}

struct Add: Action, Codable {
    var by: Int
    var tag: String
    var identifier: String { "add" }
}

let reducer: Reducer<Tally> = { state, action in
    guard let add = action as? Add else { return }
    state.count += 1
    state.total += add.by
    for byte in add.tag.utf8 { state.digest = (state.digest ^ UInt64(byte)) &* 1_099_511_628_211 }
}

var actions = ActionTypes()
actions.register(Add.self, for: "add")

/// A state whose natural encoding follows the process's hash seed: sets, and dictionaries whose
/// keys are neither strings nor integers.
struct Point: Codable, Hashable { var x: Int; var y: Int }
struct Sets: Codable, Equatable, Sendable {
    var tags: Set<String> = []
    var points: [Point: Set<Int>] = [:]
    var byName: [String: Set<String>] = [:]
}
let setsReducer: Reducer<Sets> = { state, action in
    guard let add = action as? Add else { return }
    state.tags.insert(add.tag)
    state.points[Point(x: add.by % 7, y: add.by % 5), default: []].insert(add.by)
    state.byName[String(add.tag.prefix(2)), default: []].insert(add.tag)
}

func printLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

func stateLine(_ state: Tally) -> String {
    let data = try! JSONEncoder().encode(state)
    return "state " + String(decoding: data, as: UTF8.self)
}

/// Waits until `replica` has applied `total` versions: what the other processes of a test write.
/// Bounded, so that a test whose other writer died fails in a minute with both processes' words
/// rather than waiting for ever.
func waitForStream<State>(_ replica: ReplicatedStore<State>, _ total: UInt64) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    var applied = try await replica.catchUp()
    while applied < total {
        guard ContinuousClock.now < deadline else {
            throw ReplicationError(.closed, "the stream holds \(applied) actions after a minute, not \(total): another writer stopped?")
        }
        try await Task.sleep(for: .milliseconds(20))
        applied = try await replica.catchUp()
    }
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: see Tests/ReplicaCheck/main.swift\n".utf8))
    exit(2)
}
let stream = try PostgresStream(connection: arguments[2], stream: arguments[3])
var options = ReplicationOptions()
options.snapshotEvery = 500

switch arguments[1] {
case "write":
    let name = arguments[4]
    let count = Int(arguments[5])!
    let inFlight = Int(arguments[6])!
    let replica = try await ReplicatedStore.open(
        stream, reducers: [reducer], initialState: Tally(), actions: actions, options: options)
    printLine("open \(replica.store.version)")
    try await withThrowingTaskGroup(of: Void.self) { group in
        for lane in 0..<inFlight {
            group.addTask {
                var index = lane
                while index < count {
                    let tag = "\(name)-\(index)"
                    let version = try await replica.dispatch(Add(by: 1, tag: tag))
                    printLine("ack \(tag) \(version)")
                    index += inFlight
                }
            }
        }
        try await group.waitForAll()
    }
    let total = arguments.count > 7 ? UInt64(arguments[7])! : UInt64(count)
    try await waitForStream(replica, total)
    printLine(stateLine(replica.store.currentState()))
    await replica.close()
case "follow":
    let target = UInt64(arguments[4])!
    let replica = try await ReplicatedStore.follow(
        stream, reducers: [reducer], initialState: Tally(), actions: actions, options: options)
    while replica.store.version < target {
        if let failure = await replica.failure { throw failure }
        try await Task.sleep(for: .milliseconds(10))
    }
    printLine(stateLine(replica.store.currentState()))
    await replica.close()
case "sets":
    let name = arguments[4]
    let count = Int(arguments[5])!
    let total = UInt64(arguments[6])!
    var setOptions = ReplicationOptions()
    setOptions.snapshotEvery = 10
    let replica = try await ReplicatedStore.open(
        stream, reducers: [setsReducer], initialState: Sets(), actions: actions, options: setOptions)
    for index in 0..<count {
        _ = try await replica.dispatch(Add(by: index, tag: "\(name)-\(index)"))
    }
    try await waitForStream(replica, total)
    if let failure = await replica.failure { throw failure }
    printLine("state " + (try JSONValue(canonicallyEncoding: replica.store.currentState()).description))
    await replica.close()
case "misuse":
    let replica = try await ReplicatedStore.open(
        stream, reducers: [reducer], initialState: Tally(), actions: actions, options: options)
    replica.store.dispatchAction(Add(by: 1, tag: "local"))
    printLine("dispatched locally")
default:
    exit(2)
}
