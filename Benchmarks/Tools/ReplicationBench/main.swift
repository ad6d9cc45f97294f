// ReplicationBench: what replication on PostgreSQL costs, against PostgreSQL's own rate for the
// same rows, measured side by side in one run on one server (the goals of `ReduxStorePostgres`).
//
//   bash Benchmarks/replication.sh [seconds]     # from the repository root: a throwaway cluster
//   ReplicationBench all URL [seconds]           # against the server at URL (a scratch database)
//   ReplicationBench standby URL seconds STANDBY # followers on URL's hot standby STANDBY
//   ReplicationBench writer URL                  # one writer and the plain loop only (5 s each);
//                                                # BENCH_NO_NOTIFY=1: the writer without NOTIFY
//   ReplicationBench lag URL [seconds] [STANDBY]  # the followers' lags alone
//   ReplicationBench order URL                  # the order's two designs at 1, 4 and 16 clients
//   ReplicationBench hops URL                    # the plain loop's INSERT awaited through a task and
//                                                # a continuation, as the library bounds a statement
//
// Figures, each over `seconds` (5 by default):
// - insert: a plain loop of single-row INSERTs over postgres-nio (each its own transaction), of
//   rows shaped as the library's (stream, version, identifier, payload json, time, source,
//   writer, seq), into a table of its own. The limit a replicated dispatch is measured against.
// - pgbench: the same INSERT as a pgbench custom script, 1 client (and 4 clients), prepared.
// - writer: one ReplicatedStore, one dispatch at a time (each waits for its commit).
// - writers: 4 processes (this program, `writer-child`), 16 dispatches in flight each, one stream:
//   the group commit's rate.
// - lag: a writer dispatching 2,000 actions a second, a follower in the same process; each
//   version's lag is the time from its dispatch returning (committed) to the follower applying it.
// - standby: the same writer, a follower on the primary and one (then eight) on the hot standby;
//   the first standby follower's lag, and the primary follower's beside eight on the standby.
// - catch-up: a stream with a snapshot and 100,000 actions after it; a new follower's time from
//   `follow` to the newest version.
// The server's durability settings (fsync, synchronous_commit, wal_sync_method) are printed with
// the figures: every figure is under the same ones.
import Foundation
import Logging
import PostgresNIO
import ReduxStore
import ReduxStorePostgres
import Synchronization

struct Counter: Codable, Sendable { var count = 0 }
struct Add: Action, Codable { var amount: Int; var identifier: String { "counter.add" } }
let reducers: [Reducer<Counter>] = [{ state, action in
    if let add = action as? Add { state.count &+= add.amount }
}]
let actionTypes: ActionTypes = {
    var types = ActionTypes()
    types.register(Add.self, for: "counter.add")
    return types
}()

/// A count several tasks add to.
final class Count: Sendable {
    let value = Atomic<Int>(0)
}

/// A value several tasks change, behind a lock.
final class Locked<Value: Sendable>: Sendable {
    let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("ReplicationBench: \(message)\n".utf8))
    exit(1)
}

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// A connection to `url` (`postgres://user:password@host:port/database`) with postgres-nio.
func connect(_ url: String) async throws -> PostgresConnection {
    guard let parts = URLComponents(string: url), let host = parts.host else { fail("not a postgres:// URL: \(url)") }
    let configuration = PostgresConnection.Configuration(
        host: host, port: parts.port ?? 5432, username: parts.user ?? "postgres", password: parts.password,
        database: String(parts.path.dropFirst()), tls: .disable)
    return try await PostgresConnection.connect(
        configuration: configuration, id: 1, logger: Logger(label: "ReplicationBench"))
}

func stream(_ url: String, _ name: String) -> PostgresStream {
    do { return try PostgresStream(connection: url, stream: name, schema: "bench") } catch { fail("\(error)") }
}

// MARK: - The limit: PostgreSQL's own rate for the same rows

/// A fresh table shaped as the library's `actions`, in `schema` (made if missing).
func createActionsTable(in schema: String, on connection: PostgresConnection) async throws {
    let logger = Logger(label: "ReplicationBench")
    try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(schema)"), logger: logger)
    try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \(schema).actions"), logger: logger)
    try await connection.query(PostgresQuery(unsafeSQL: """
        CREATE TABLE \(schema).actions (
            stream text NOT NULL, version bigint NOT NULL, identifier text NOT NULL,
            payload json NOT NULL, time timestamptz NOT NULL DEFAULT now(), source text,
            writer text NOT NULL, seq bigint NOT NULL, PRIMARY KEY (stream, version))
        """), logger: logger)
}

/// Single-row INSERTs, one after the other, for `seconds`: rows a second.
func plainInserts(_ url: String, seconds: Double) async throws -> Double {
    let connection = try await connect(url)
    let logger = Logger(label: "ReplicationBench")
    try await createActionsTable(in: "bench_plain", on: connection)
    var version: Int64 = 0
    let start = now()
    while now() - start < seconds {
        version += 1
        try await connection.query("""
            INSERT INTO bench_plain.actions (stream, version, identifier, payload, source, writer, seq)
            VALUES (\("plain"), \(version), \("counter.add"), \(#"{"amount":1}"#)::json, \("main.swift:1"), \("bench"), \(version))
            """, logger: logger)
    }
    let elapsed = now() - start
    try await connection.close()
    return Double(version) / elapsed
}

/// The same INSERT as a pgbench custom script with `clients` clients, `transactions` each:
/// transactions a second.
func pgbench(_ url: String, clients: Int, transactions: Int) throws -> Double {
    let setup = """
        CREATE SCHEMA IF NOT EXISTS bench_pgbench;
        DROP TABLE IF EXISTS bench_pgbench.actions;
        DROP SEQUENCE IF EXISTS bench_pgbench.versions;
        CREATE SEQUENCE bench_pgbench.versions;
        CREATE TABLE bench_pgbench.actions (
            stream text NOT NULL, version bigint NOT NULL, identifier text NOT NULL,
            payload json NOT NULL, time timestamptz NOT NULL DEFAULT now(), source text,
            writer text NOT NULL, seq bigint NOT NULL, PRIMARY KEY (stream, version));
        """
    _ = try run("psql", ["-q", "-v", "ON_ERROR_STOP=1", "-c", setup, url])
    return try pgbench(url, clients: clients, transactions: transactions, script: """
        INSERT INTO bench_pgbench.actions (stream, version, identifier, payload, source, writer, seq) \
        VALUES ('pgbench', nextval('bench_pgbench.versions'), 'counter.add', '{"amount":1}', 'main.swift:1', 'pgbench', 0);

        """)
}

/// The library's own append, as a pgbench custom script: `CALL append(…)` with `rows` actions a
/// call (each call a writer name of its own), on a stream the library made. Calls a second.
/// (A writer also wakes the followers with a `NOTIFY` of its own, coalesced, on another
/// connection: the writers' figures include it, this one does not.)
func pgbenchAppend(_ url: String, clients: Int, transactions: Int, rows: Int) async throws -> Double {
    let name = "pgbench-\(getpid())-\(rows)"
    let replica = try await ReplicatedStore.open(
        stream(url, name), reducers: reducers, initialState: Counter(), actions: actionTypes)
    await replica.close()
    return try pgbench(url, clients: clients, transactions: transactions, script: """
        \\set w random(1, 1000000000000000)
        CALL bench.append('\(name)', array_fill('counter.add'::text, ARRAY[\(rows)]), \
        array_fill('{"amount":1}'::text, ARRAY[\(rows)]), array_fill('main.swift:1'::text, ARRAY[\(rows)]), \
        :w::text, 1, NULL);

        """)
}

/// The floor of any append that keeps one order, as pgbench runs it: the stream row's `UPDATE`
/// and the row's `INSERT` as one statement with constant values (no idempotency check, no
/// procedure, no unique index), 1 client. Transactions a second.
func pgbenchBareAppend(_ url: String, transactions: Int) throws -> Double {
    let setup = """
        CREATE SCHEMA IF NOT EXISTS bench_bare;
        DROP TABLE IF EXISTS bench_bare.actions;
        DROP TABLE IF EXISTS bench_bare.streams;
        CREATE TABLE bench_bare.streams (name text PRIMARY KEY, version bigint NOT NULL DEFAULT 0);
        INSERT INTO bench_bare.streams VALUES ('bare', 0);
        CREATE TABLE bench_bare.actions (
            stream text NOT NULL, version bigint NOT NULL, identifier text NOT NULL,
            payload json NOT NULL, time timestamptz NOT NULL DEFAULT now(), source text,
            writer text NOT NULL, seq bigint NOT NULL, PRIMARY KEY (stream, version));
        """
    _ = try run("psql", ["-q", "-v", "ON_ERROR_STOP=1", "-c", setup, url])
    return try pgbench(url, clients: 1, transactions: transactions, script: """
        WITH head AS (UPDATE bench_bare.streams SET version = version + 1 WHERE name = 'bare' RETURNING version) \
        INSERT INTO bench_bare.actions (stream, version, identifier, payload, source, writer, seq) \
        SELECT 'bare', head.version, 'counter.add', '{"amount":1}', 'main.swift:1', 'pgbench', 0 FROM head;

        """)
}

/// The library's append called in a loop over postgres-nio, one connection, 1 action a call, as
/// the library's writer sends it (an unnamed statement each time): postgres-nio's own rate for
/// the library's statement, without the replica. Calls a second.
func nioAppends(_ url: String, seconds: Double) async throws -> Double {
    let name = "nio-\(getpid())"
    let replica = try await ReplicatedStore.open(
        stream(url, name), reducers: reducers, initialState: Counter(), actions: actionTypes)
    await replica.close()
    let connection = try await connect(url)
    let logger = Logger(label: "ReplicationBench")
    var seq: Int64 = 0
    let start = now()
    while now() - start < seconds {
        seq += 1
        _ = try await connection.query("""
            CALL bench.append(\(name), \(["counter.add"]), \([#"{"amount":1}"#]), \(["main.swift:1"]), \("nio"), \(seq), NULL)
            """, logger: logger).collect()
    }
    let elapsed = now() - start
    try await connection.close()
    return Double(seq) / elapsed
}

/// A pgbench custom script with `clients` clients, `transactions` each: transactions a second.
/// (A count, not `-T`: pgbench ends a timed run on SIGALRM, which a process started from this
/// one's threads may have blocked, and then it never ends.)
func pgbench(_ url: String, clients: Int, transactions: Int, script text: String) throws -> Double {
    let script = FileManager.default.temporaryDirectory.appendingPathComponent("reduxstore-pgbench-\(getpid()).sql")
    try text.write(to: script, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: script) }
    let output = try run(
        "pgbench", ["-n", "-M", "prepared", "-c", "\(clients)", "-j", "\(min(clients, 2))", "-t", "\(transactions)",
                    "-f", script.path, url])
    guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
          let tps = Double(line.dropFirst(6).prefix { $0 == "." || $0.isNumber })
    else { fail("pgbench printed no tps:\n\(output)") }
    return tps
}

/// Runs a program found on the PATH; its standard output (and error), or a failure.
func run(_ program: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [program] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self)
    guard process.terminationStatus == 0 else { fail("\(program) failed:\n\(text)") }
    return text
}

// MARK: - How to order the appends: the stream row's lock, or an optimistic version check

/// `clients` connections appending one row per transaction to one stream for `seconds`, either
/// under the stream row's lock (as the library's statement: `UPDATE` the stream's row, `INSERT` at
/// the version it returns) or optimistically (`INSERT` at the newest version + 1, `ON CONFLICT
/// DO NOTHING`: a loser inserts nothing and tries again). Rows a second, and the tries that lost.
func ordering(_ url: String, clients: Int, seconds: Double, optimistic: Bool) async throws -> (rate: Double, lost: Int) {
    let logger = Logger(label: "ReplicationBench")
    let setup = try await connect(url)
    try await createActionsTable(in: "bench_order", on: setup)
    try await setup.query("DROP TABLE IF EXISTS bench_order.streams", logger: logger)
    try await setup.query("CREATE TABLE bench_order.streams (name text PRIMARY KEY, version bigint NOT NULL DEFAULT 0)", logger: logger)
    try await setup.query("INSERT INTO bench_order.streams (name) VALUES ('s')", logger: logger)
    try await setup.close()
    let written = Count()
    let lost = Count()
    let deadline = now() + seconds
    try await withThrowingTaskGroup(of: Void.self) { group in
        for client in 0..<clients {
            group.addTask {
                let connection = try await connect(url)
                let writer = "w\(client)"
                var seq: Int64 = 0
                while now() < deadline {
                    seq += 1
                    let query: PostgresQuery = optimistic
                        ? """
                            INSERT INTO bench_order.actions (stream, version, identifier, payload, source, writer, seq)
                            SELECT 's', coalesce(max(version), 0) + 1, 'counter.add', '{"amount":1}', 'main.swift:1', \(writer), \(seq)
                            FROM bench_order.actions WHERE stream = 's'
                            ON CONFLICT DO NOTHING RETURNING version
                            """
                        : """
                            WITH head AS (UPDATE bench_order.streams SET version = version + 1 WHERE name = 's' RETURNING version)
                            INSERT INTO bench_order.actions (stream, version, identifier, payload, source, writer, seq)
                            SELECT 's', head.version, 'counter.add', '{"amount":1}', 'main.swift:1', \(writer), \(seq)
                            FROM head RETURNING version
                            """
                    let rows = try await connection.query(query, logger: logger).collect()
                    if rows.isEmpty { lost.value.add(1, ordering: .relaxed) } else { written.value.add(1, ordering: .relaxed) }
                }
                try await connection.close()
            }
        }
        try await group.waitForAll()
    }
    return (Double(written.value.load(ordering: .relaxed)) / seconds, lost.value.load(ordering: .relaxed))
}

// MARK: - Replication

/// One writer, one dispatch at a time: actions a second.
func oneWriter(_ url: String, seconds: Double) async throws -> Double {
    var options = ReplicationOptions()
    if getenv("BENCH_NO_NOTIFY") != nil { options.notifies = false }
    let replica = try await ReplicatedStore.open(
        stream(url, "writer-\(getpid())"), reducers: reducers, initialState: Counter(), actions: actionTypes,
        options: options)
    var count = 0
    let start = now()
    while now() - start < seconds {
        try await replica.dispatch(Add(amount: 1))
        count += 1
    }
    let elapsed = now() - start
    await replica.close()
    return Double(count) / elapsed
}

/// This process as one of several writers: `inFlight` tasks dispatching until `deadline` (a
/// wall-clock time, shared by the processes); prints the number of actions it committed.
func writerChild(_ url: String, streamName: String, inFlight: Int, deadline: Double) async throws {
    let replica = try await ReplicatedStore.open(
        stream(url, streamName), reducers: reducers, initialState: Counter(), actions: actionTypes)
    let count = Count()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<inFlight {
            group.addTask {
                while Date().timeIntervalSince1970 < deadline {
                    try await replica.dispatch(Add(amount: 1))
                    count.value.add(1, ordering: .relaxed)
                }
            }
        }
        try await group.waitForAll()
    }
    await replica.close()
    print(count.value.load(ordering: .relaxed))
}

/// `processes` writer processes with `inFlight` dispatches in flight each, on one stream:
/// actions a second, all together, and the mean number of actions a commit wrote.
/// The mean group size: actions per commit (the rows one transaction wrote share its `xmin`).
func manyWriters(_ url: String, processes: Int, inFlight: Int, seconds: Double) throws -> (rate: Double, group: Double) {
    let name = "writers-\(getpid())"
    // Each process connects and catches up first; the deadline leaves them time to.
    let startAt = Date().timeIntervalSince1970 + 2
    let deadline = startAt + seconds
    var children: [(Process, Pipe)] = []
    for _ in 0..<processes {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["writer-child", url, name, "\(inFlight)", "\(startAt)", "\(deadline)"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        children.append((process, pipe))
    }
    var total = 0
    for (process, pipe) in children {
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0, let count = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            fail("a writer process failed (status \(process.terminationStatus)): \(text)")
        }
        total += count
    }
    let group = try run("psql", ["-X", "-A", "-t", "-c",
        "SELECT count(*)::float8 / count(DISTINCT xmin::text) FROM bench.actions WHERE stream = '\(name)'", url])
    return (Double(total) / seconds, Double(group.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan)
}

/// The lags of one run of ``followerLag(_:standby:onStandby:rate:seconds:)``, in seconds.
struct Lags {
    var primary: [Double] = []
    var standby: [Double] = []
}

/// A writer at `rate` actions a second, a follower on the primary and `onStandby` followers on
/// the hot standby at `standby`, all in this process: each version's lag, in seconds, from its
/// dispatch returning to the primary's follower and to the first standby follower applying it.
func followerLag(
    _ url: String, standby: String? = nil, onStandby: Int = 0, rate: Double, seconds: Double
) async throws -> Lags {
    let name = "lag-\(getpid())-\(onStandby)"
    let writer = try await ReplicatedStore.open(
        stream(url, name), reducers: reducers, initialState: Counter(), actions: actionTypes)
    let follower = try await ReplicatedStore.follow(
        stream(url, name), reducers: reducers, initialState: Counter(), actions: actionTypes)
    var standbyFollowers: [ReplicatedStore<Counter>] = []
    if let standby, onStandby > 0 {
        var options = ReplicationOptions()
        options.standbyConnection = standby
        // The standby has the stream's tables once it replayed the writer's opening.
        try await Task.sleep(for: .milliseconds(500))
        for _ in 0..<onStandby {
            standbyFollowers.append(try await ReplicatedStore.follow(
                stream(url, name), reducers: reducers, initialState: Counter(), actions: actionTypes, options: options))
        }
    }
    let committed = Locked<[UInt64: Double]>([:])
    let applied = Locked<[UInt64: Double]>([:])
    let appliedOnStandby = Locked<[UInt64: Double]>([:])
    let token = follower.store.addObserver { note in
        let time = now()
        applied.mutex.withLock { $0[note.version] = time }
    }
    let standbyToken = standbyFollowers.first?.store.addObserver { note in
        let time = now()
        appliedOnStandby.mutex.withLock { $0[note.version] = time }
    }
    let count = Int(rate * seconds)
    let start = now()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<count {
            // Paced: action `index` leaves at start + index / rate.
            let due = start + Double(index) / rate
            let wait = due - now()
            if wait > 0 { try await Task.sleep(for: .nanoseconds(Int64(wait * 1e9))) }
            group.addTask {
                let version = try await writer.dispatch(Add(amount: 1))
                let time = now()
                committed.mutex.withLock { $0[version] = time }
            }
        }
        try await group.waitForAll()
    }
    _ = try await follower.catchUp()
    follower.store.removeObserver(token)
    if let first = standbyFollowers.first, let standbyToken {
        // Until the first standby follower has every version (its standby replays them).
        let deadline = now() + 10
        while first.store.version < writer.store.version, now() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        first.store.removeObserver(standbyToken)
    }
    for other in standbyFollowers { await other.close() }
    await follower.close()
    await writer.close()
    let commits = committed.mutex.withLock { $0 }
    func lags(_ applies: [UInt64: Double]) -> [Double] {
        commits.compactMap { version, time in applies[version].map { max(0, $0 - time) } }
    }
    return Lags(primary: lags(applied.mutex.withLock { $0 }), standby: lags(appliedOnStandby.mutex.withLock { $0 }))
}

/// A stream with a snapshot and `actions` actions after it; the time a new follower takes from
/// `follow` to the newest version, in seconds.
func catchUp(_ url: String, actions: Int) async throws -> (seconds: Double, snapshot: UInt64) {
    let name = "catchup-\(getpid())"
    var options = ReplicationOptions()
    options.snapshotEvery = 1_000
    let first = try await ReplicatedStore.open(
        stream(url, name), reducers: reducers, initialState: Counter(), actions: actionTypes, options: options)
    try await fill(first, 1_000)
    await first.close()
    options.snapshotEvery = 10_000_000
    let second = try await ReplicatedStore.open(
        stream(url, name), reducers: reducers, initialState: Counter(), actions: actionTypes, options: options)
    try await fill(second, actions)
    let newest = second.store.version
    await second.close()
    let start = now()
    let follower = try await ReplicatedStore.follow(
        stream(url, name), reducers: reducers, initialState: Counter(), actions: actionTypes)
    let version = try await follower.catchUp()
    let elapsed = now() - start
    guard version == newest, follower.store.currentState().count == Int(newest) else {
        fail("the follower caught up to \(version), count \(follower.store.currentState().count); expected \(newest)")
    }
    await follower.close()
    return (elapsed, 1_000)
}

/// Dispatches `count` actions to `replica`, 64 in flight.
func fill(_ replica: ReplicatedStore<Counter>, _ count: Int) async throws {
    let next = Count()
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<64 {
            group.addTask {
                while next.value.add(1, ordering: .relaxed).newValue <= count {
                    try await replica.dispatch(Add(amount: 1))
                }
            }
        }
        try await group.waitForAll()
    }
}

/// The server's durability settings.
func durability(_ url: String) throws -> String {
    let text = try run("psql", ["-X", "-A", "-t", "-c",
        "SELECT 'fsync=' || current_setting('fsync') || ', synchronous_commit=' || current_setting('synchronous_commit') || ', wal_sync_method=' || current_setting('wal_sync_method') || ', full_page_writes=' || current_setting('full_page_writes')",
        url])
    return text.trimmingCharacters(in: .whitespacesAndNewlines)
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func format(_ value: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", value) }

// MARK: - Main

let arguments = CommandLine.arguments
guard arguments.count >= 3 else {
    fail("usage: ReplicationBench all URL [seconds] | writer-child URL STREAM IN_FLIGHT START DEADLINE")
}
let url = arguments[2]
switch arguments[1] {
case "writer-child":
    guard arguments.count == 7, let inFlight = Int(arguments[4]), let startAt = Double(arguments[5]),
          let deadline = Double(arguments[6]) else { fail("writer-child URL STREAM IN_FLIGHT START DEADLINE") }
    // Opens the store now (catching up), then starts dispatching at `startAt` with the others.
    let replica = try await ReplicatedStore.open(
        stream(url, arguments[3]), reducers: reducers, initialState: Counter(), actions: actionTypes)
    await replica.close()
    let wait = startAt - Date().timeIntervalSince1970
    if wait > 0 { try await Task.sleep(for: .nanoseconds(Int64(wait * 1e9))) }
    try await writerChild(url, streamName: arguments[3], inFlight: inFlight, deadline: deadline)
case "hops":
    let connection = try await connect(url)
    let logger = Logger(label: "x")
    _ = try await plainInserts(url, seconds: 1)
    var n = 0
    let t0 = now()
    while now() - t0 < 5 {
        n += 1
        let q: PostgresQuery = "INSERT INTO bench_plain.actions (stream, version, identifier, payload, source, writer, seq) VALUES (\("hops"), \(Int64(n)), \("counter.add"), \(#"{"amount":1}"#)::json, \("main.swift:1"), \("bench"), \(Int64(n)))"
        _ = try await withCheckedThrowingContinuation { (c: CheckedContinuation<Int, any Error>) in
            Task {
                do { _ = try await connection.query(q, logger: logger).collect(); c.resume(returning: 1) } catch { c.resume(throwing: error) }
            }
        }
    }
    print("through a task:", Double(n) / (now() - t0))
case "order":
    for clients in [1, 4, 16] {
        let locked = try await ordering(url, clients: clients, seconds: 5, optimistic: false)
        let optimistic = try await ordering(url, clients: clients, seconds: 5, optimistic: true)
        print("\(clients) clients: the stream row's lock \(format(locked.rate)) rows/s; optimistic \(format(optimistic.rate)) rows/s, \(optimistic.lost) tries lost")
    }
case "standby":
    // On a primary with a streaming hot standby (STANDBY, the fourth argument): the follower on
    // the primary alone, beside one on the standby, and beside eight on the standby.
    let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 5 : 5
    guard arguments.count > 4 else { fail("standby URL [seconds] STANDBY: the standby's URL is missing") }
    let standby = arguments[4]
    func met(_ ok: Bool) -> String { ok ? "yes" : "**no**" }
    func ms(_ values: [Double], _ q: Double) -> Double { percentile(values, q) * 1_000 }
    let alone = try await followerLag(url, rate: 2_000, seconds: seconds)
    let paired = try await followerLag(url, standby: standby, onStandby: 1, rate: 2_000, seconds: seconds)
    let eight = try await followerLag(url, standby: standby, onStandby: 8, rate: 2_000, seconds: seconds)
    let none = ms(alone.primary, 0.99)
    let onStandby = ms(paired.standby, 0.99)
    let withEight = ms(eight.primary, 0.99)
    print("""

        | figure (a writer at 2,000 actions/s; a primary with a hot standby) | measured | ratio | goal | met |
        |---|---|---|---|---|
        | follower on the primary, none on the standby, p99 (F) | \(format(none, 2)) ms | | | |
        | follower on the standby, beside one on the primary (p99 \(format(ms(paired.primary, 0.99), 2)) ms), p50 (\(paired.standby.count) versions) | \(format(ms(paired.standby, 0.5), 2)) ms | | | |
        | follower on the standby, beside one on the primary, p99 | \(format(onStandby, 2)) ms | | ≤ 10 ms | \(met(onStandby <= 10)) |
        | follower on the primary beside 8 on the standby (one of them p99 \(format(ms(eight.standby, 0.99), 2)) ms), p99 | \(format(withEight, 2)) ms | \(format(withEight / none, 2))× F | no worse than F (≤ 1.25×, the runs' spread) | \(met(withEight / none <= 1.25)) |
        """)
case "lag":
    // The followers' lags alone: on the primary, and with STANDBY one and eight on the standby.
    let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 5 : 5
    let standby = arguments.count > 4 ? arguments[4] : nil
    func p(_ values: [Double], _ q: Double) -> String { format(percentile(values, q) * 1_000, 2) + " ms" }
    let alone = try await followerLag(url, rate: 2_000, seconds: seconds)
    print("primary follower alone: p50 \(p(alone.primary, 0.5)), p99 \(p(alone.primary, 0.99))")
    for count in standby == nil ? [] : [1, 8] {
        let lags = try await followerLag(url, standby: standby, onStandby: count, rate: 2_000, seconds: seconds)
        print("\(count) on the standby: primary follower p99 \(p(lags.primary, 0.99)); standby follower p50 \(p(lags.standby, 0.5)), p99 \(p(lags.standby, 0.99))")
    }
case "writer":
    print(try await oneWriter(url, seconds: 5), "actions/s;", try await plainInserts(url, seconds: 5), "inserts/s")
case "all":
    let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 5 : 5
    print("durability: \(try durability(url))")
    let insert = try await plainInserts(url, seconds: seconds)
    // About `seconds` each, at the plain loop's rate.
    let transactions = max(100, Int(insert * seconds))
    let bench1 = try pgbench(url, clients: 1, transactions: transactions)
    let bare = try pgbenchBareAppend(url, transactions: transactions)
    let append1 = try await pgbenchAppend(url, clients: 1, transactions: transactions, rows: 1)
    let append16x4 = try await pgbenchAppend(url, clients: 4, transactions: max(50, transactions / 4), rows: 16) * 16
    let nio = try await nioAppends(url, seconds: seconds)
    let one = try await oneWriter(url, seconds: seconds)
    let (many, group) = try manyWriters(url, processes: 4, inFlight: 16, seconds: seconds)
    let lags = try await followerLag(url, rate: 2_000, seconds: seconds).primary
    let (catchUpSeconds, _) = try await catchUp(url, actions: 100_000)
    let p50 = percentile(lags, 0.5) * 1_000
    let p99 = percentile(lags, 0.99) * 1_000
    func met(_ ok: Bool) -> String { ok ? "yes" : "**no**" }
    print("""

        | figure | measured | ratio | goal | met |
        |---|---|---|---|---|
        | plain single-row INSERT loop (postgres-nio, 1 connection) | \(format(insert)) rows/s | \(format(insert / bench1, 2))× A | | |
        | pgbench, a plain single-row INSERT, 1 client (A) | \(format(bench1)) tps | | | |
        | pgbench, the stream row's UPDATE and the INSERT as one statement, constant values, 1 client | \(format(bare)) tps | \(format(bare / bench1, 2))× A | | |
        | pgbench, the library's append (`CALL append`, 1 action), 1 client (B) | \(format(append1)) tps | \(format(append1 / bench1, 2))× A | ≥ 0.65× A | \(met(append1 / bench1 >= 0.65)) |
        | pgbench, the library's append with 16 actions a call, 4 clients (C) | \(format(append16x4)) actions/s | | | |
        | the library's append in a loop over postgres-nio, 1 connection (E) | \(format(nio)) calls/s | \(format(nio / append1, 2))× B | | |
        | 1 writer, one dispatch at a time (D) | \(format(one)) actions/s | \(format(one / nio, 2))× E, \(format(one / append1, 2))× B | ≥ 0.9× E | \(met(one / nio >= 0.9)) |
        | 4 writer processes, 16 in flight each (mean group \(format(group, 1)) actions) | \(format(many)) actions/s | \(format(many / one, 1))× D, \(format(many / append16x4, 2))× C | ≥ 5× D | \(met(many / one >= 5)) |
        | follower lag at 2,000 actions/s, p50 (\(lags.count) versions) | \(format(p50, 2)) ms | | | |
        | follower lag at 2,000 actions/s, p99 | \(format(p99, 2)) ms | | ≤ 5 ms | \(met(p99 <= 5)) |
        | a new process from a snapshot plus 100,000 actions | \(format(catchUpSeconds, 2)) s | | ≤ 1 s | \(met(catchUpSeconds <= 1)) |
        """)
default:
    fail("unknown mode \(arguments[1])")
}
