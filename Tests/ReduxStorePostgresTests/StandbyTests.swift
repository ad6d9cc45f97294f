import Foundation
import ReduxStore
import ReduxStorePostgres
import ReduxStoreTestSupport
import Testing

extension ReplicationTests {
/// Followers that read from a hot standby (`ReplicationOptions.standbyConnection`) while the
/// writers use the primary: the pair `scripts/postgres start-pair` starts.
@Suite("Followers on a hot standby")
struct StandbyTests {
    /// `url` with an `application_name`, by which the server's statistics find its sessions.
    static func named(_ url: String, _ name: String) -> String { url + "?application_name=" + name }

    /// Waits until the standby `standby` has replayed everything the primary `primary` wrote so far.
    static func standbyReplayed(on standby: String, from primary: String) async throws {
        let position = try await TestServer.sql("SELECT pg_current_wal_lsn()", on: primary)[0][0]
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let done = try await TestServer.sql("SELECT pg_last_wal_replay_lsn() >= '\(position)'::pg_lsn", on: standby)
            if done.first?.first == "t" { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ProcessFailure(description: "the standby did not replay the primary's WAL within 30 s")
    }

    /// Waits until `replica` has applied `version` (or `limit` passed).
    static func applied(_ replica: ReplicatedStore<Tally>, _ version: UInt64, within limit: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + limit
        while replica.store.version < version, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// A writer on the primary and, once the standby has its tables, a follower on the standby
    /// whose sessions are named `application` on both servers.
    static func writerAndStandbyFollower(
        _ name: String, application: String = "standby-follower", options: ReplicationOptions = .init(),
        writerOptions: ReplicationOptions = .init()
    ) async throws -> (ReplicatedStore<Tally>, ReplicatedStore<Tally>, PostgresStream) {
        let primary = try TestServer.url()
        let standby = try TestServer.standbyURL()
        let stream = try TestServer.stream(name)
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: writerOptions)
        try await standbyReplayed(on: standby, from: primary)
        var followerOptions = options
        followerOptions.standbyConnection = named(standby, application)
        let follower = try await ReplicatedStore.follow(
            PostgresStream(connection: named(primary, application), stream: stream.stream),
            reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: followerOptions)
        return (writer, follower, stream)
    }

    @Test("a follower on the standby applies every version once and in order, and runs nothing on the primary but LISTEN")
    func followsFromTheStandby() async throws {
        let application = "standby-follower-\(UInt32.random(in: 0...UInt32.max))"
        let (writer, follower, stream) = try await Self.writerAndStandbyFollower("standby", application: application)
        let heard = Recorder<UInt64>()
        let token = follower.store.addObserver { heard.append($0.version) }
        let acknowledged = Recorder<String>()
        try await dispatchLoad(writer, lanes: 4, count: 50, prefix: "s", into: acknowledged).value
        #expect(writer.store.version == 200)

        try await Self.applied(follower, 200)
        #expect(follower.store.version == 200)
        #expect(follower.store.currentState() == (try await replayed(stream)).tally)
        #expect(heard.all == Array(1...200), "every version once, in order")
        let lag = await follower.lag
        #expect(lag.versions == 0)
        #expect(lag.standbyVersions == 0)
        #expect(lag.lastError == nil)
        #expect(await writer.lag.standbyVersions == nil)

        // The follower's sessions: on the primary one, whose only statement is its LISTEN
        // (the server keeps each session's last); on the standby the ones that read.
        let onPrimary = try await TestServer.sql(
            "SELECT query FROM pg_stat_activity WHERE application_name = \(TestServer.literal(application))")
        #expect(onPrimary.count == 1 && onPrimary.allSatisfy { $0[0].hasPrefix("LISTEN") }, "\(onPrimary)")
        let onStandby = try await TestServer.sql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = \(TestServer.literal(application))",
            on: try TestServer.standbyURL())
        #expect(Int(onStandby[0][0]) ?? 0 >= 1)

        // Read-only, as every follower.
        await #expect(throws: ReplicationError.self) { try await follower.dispatch(Add(by: 1, tag: "no")) }
        follower.store.removeObserver(token)
        await follower.close()
        await writer.close()
    }

    @Test("a standby given to a writer, a standby string that does not parse, a failover list and a server without the tables are refused with words")
    func refusals() async throws {
        let stream = try TestServer.stream("standby-refusals")
        var options = ReplicationOptions()
        options.standbyConnection = try TestServer.standbyURL()
        do {
            _ = try await ReplicatedStore.open(
                stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
            Issue.record("a writer took a standby")
        } catch let error as ReplicationError {
            #expect(error.kind == .invalidArgument)
            #expect(error.message.contains("ReplicationOptions.standbyConnection is for followers"))
        }
        options.standbyConnection = "host=127.0.0.1 port=seventy"
        do {
            _ = try await ReplicatedStore.follow(
                stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
            Issue.record("a standby string that does not parse was taken")
        } catch let error as ReplicationError {
            #expect(error.kind == .invalidArgument)
            #expect(error.message.contains("ReplicationOptions.standbyConnection: connection string: the port"))
        }
        for failoverList in ["host=db1,db2 port=5432", "postgres://app@db1,db2/app"] {
            do {
                _ = try PostgresStream(connection: failoverList, stream: "s")
                Issue.record("a failover list was taken")
            } catch {
                #expect(error.message.contains("several hosts"))
            }
        }
        // A schema no writer made: nothing to check against, and a standby cannot make it.
        let elsewhere = try PostgresStream(connection: TestServer.url(), stream: stream.stream, schema: "nothing_here")
        options.standbyConnection = try TestServer.standbyURL()
        do {
            _ = try await ReplicatedStore.follow(
                elsewhere, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
            Issue.record("a follower started on a standby without the library's tables")
        } catch let error as ReplicationError {
            #expect(error.kind == .schema)
            #expect(error.message.contains("no tables of the library in schema \"nothing_here\""))
        }
    }

    @Test("the standby stopped: the follower keeps its state, says why and how far it is behind, and resumes when it is back")
    func standbyStopped() async throws {
        let (writer, follower, stream) = try await Self.writerAndStandbyFollower("standby-stopped")
        for index in 1...20 { try await writer.dispatch(Add(by: index, tag: "a\(index)")) }
        try await Self.applied(follower, 20)
        #expect(follower.store.version == 20)
        let folder = try TestServer.folder()
        let stop = try await run("bash", ["scripts/postgres", "standby-stop", folder])
        #expect(stop.status == 0, "\(stop.errors)")
        var restarted = false
        defer {
            // Whatever failed above, the standby runs again for the tests after this one.
            if !restarted { _ = try? Self.runBlocking(["scripts/postgres", "standby-start", folder]) }
        }
        for index in 21...50 { try await writer.dispatch(Add(by: index, tag: "b\(index)")) }
        // The primary's notifications say how far behind it is; its reads fail, and it says why.
        let deadline = ContinuousClock.now + .seconds(20)
        var lag = await follower.lag
        while (lag.versions < 30 || lag.lastError == nil), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            lag = await follower.lag
        }
        #expect(lag.versions == 30)
        #expect(lag.standbyVersions == 30)
        #expect(lag.seconds > 0)
        #expect(lag.lastError?.kind == .connection, "\(String(describing: lag.lastError))")
        #expect(follower.store.version == 20)
        #expect(follower.store.currentState() == (try await replayed(stream, through: 20)).tally)
        #expect(await follower.failure == nil)

        let start = try await run("bash", ["scripts/postgres", "standby-start", folder])
        restarted = true
        #expect(start.status == 0, "\(start.errors)")
        try await Self.applied(follower, 50, within: .seconds(40))
        #expect(follower.store.version == 50)
        #expect(follower.store.currentState() == (try await replayed(stream)).tally)
        let after = await follower.lag
        #expect(after.versions == 0 && after.lastError == nil)
        await follower.close()
        await writer.close()
    }

    /// A writer and a follower on the standby; 10 versions applied, then the standby held back by
    /// `hold` (a `scripts/postgres` command, undone by `release`) while the writer commits
    /// `behind` more: the follower applies nothing the standby has not replayed, keeps its
    /// state and says how far the standby is behind (with no error: the standby answers); once
    /// released, it catches up.
    func followerWhileStandbyHeldBack(_ name: String, hold: String, release: String, behind: Int) async throws {
        let (writer, follower, stream) = try await Self.writerAndStandbyFollower(name)
        for index in 1...10 { try await writer.dispatch(Add(by: index, tag: "a\(index)")) }
        try await Self.applied(follower, 10)
        let folder = try TestServer.folder()
        let held = try await run("bash", ["scripts/postgres", hold, folder])
        #expect(held.status == 0, "\(held.errors)")
        var released = false
        defer { if !released { _ = try? Self.runBlocking(["scripts/postgres", release, folder]) } }
        for index in 11...(10 + behind) { try await writer.dispatch(Add(by: index, tag: "b\(index)")) }
        let deadline = ContinuousClock.now + .seconds(20)
        var lag = await follower.lag
        while lag.standbyVersions != UInt64(behind), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            lag = await follower.lag
        }
        // Several polls later: still nothing the standby has not replayed.
        try await Task.sleep(for: .milliseconds(500))
        lag = await follower.lag
        #expect(lag.versions == UInt64(behind) && lag.standbyVersions == UInt64(behind), "\(lag)")
        #expect(lag.seconds > 0)
        #expect(lag.lastError == nil, "the standby answers; it is only behind")
        #expect(follower.store.version == 10)
        #expect(follower.store.currentState() == (try await replayed(stream, through: 10)).tally)
        #expect(await follower.failure == nil)

        let back = try await run("bash", ["scripts/postgres", release, folder])
        released = true
        #expect(back.status == 0, "\(back.errors)")
        try await Self.applied(follower, UInt64(10 + behind), within: .seconds(40))
        #expect(follower.store.version == UInt64(10 + behind))
        #expect(follower.store.currentState() == (try await replayed(stream)).tally)
        let after = await follower.lag
        #expect(after.versions == 0 && after.standbyVersions == 0)
        await follower.close()
        await writer.close()
    }

    @Test("the standby not replaying: the follower applies nothing it has not replayed, says the standby is behind, and catches up when it replays again")
    func standbyBehind() async throws {
        try await followerWhileStandbyHeldBack("standby-behind", hold: "standby-pause", release: "standby-resume", behind: 30)
    }

    @Test("the standby cut off from its primary: the follower keeps its state, the primary's notifications say how far behind the standby is, and it catches up once the standby streams again")
    func standbyDisconnected() async throws {
        try await followerWhileStandbyHeldBack(
            "standby-cut-off", hold: "standby-disconnect", release: "standby-reconnect", behind: 20)
    }

    @Test("a stream trimmed on the primary while a follower on the standby is behind: it stops with trimmed, as on the primary")
    func trimmedWhileBehind() async throws {
        var quiet = ReplicationOptions()
        quiet.notifies = false
        quiet.pollInterval = 3600
        var trimming = ReplicationOptions()
        trimming.snapshotEvery = 10
        trimming.snapshotsKept = 1
        trimming.trimsActions = true
        let (writer, follower, _) = try await Self.writerAndStandbyFollower(
            "standby-trimmed", options: quiet, writerOptions: trimming)
        for index in 1...35 { try await writer.dispatch(Add(by: index, tag: "t\(index)")) }
        try await Self.standbyReplayed(on: try TestServer.standbyURL(), from: try TestServer.url())
        do {
            try await follower.catchUp()
            Issue.record("a follower behind a trim caught up")
        } catch let error as ReplicationError {
            #expect(error.kind == .trimmed, "\(error)")
        }
        #expect(follower.store.version == 0)
        #expect(await follower.failure?.kind == .trimmed)
        await follower.close()
        await writer.close()
    }

    @Test("the primary stopped with -m immediate under load and the standby promoted, replication synchronous: every acknowledged action is on the new primary once; a writer opened anew there and the standby's follower go on")
    func failover() async throws {
        // A pair of its own: the promotion ends it.
        let folder = try TestServer.folder() + "-failover-\(UInt32.random(in: 0...UInt32.max))"
        let started = try await run("bash", ["scripts/postgres", "start-pair", folder])
        #expect(started.status == 0, "\(started.errors)")
        defer { _ = try? Self.runBlocking(["scripts/postgres", "stop", folder]) }
        func exported(_ name: String) throws -> String {
            guard let line = started.output.split(separator: "\n").first(where: { $0.hasPrefix("export \(name)=") }) else {
                throw ProcessFailure(description: "start-pair printed no \(name): \(started.output)")
            }
            return String(line.dropFirst("export \(name)=".count))
        }
        let primary = try exported("REDUXSTORE_TEST_POSTGRES")
        let standby = try exported("REDUXSTORE_TEST_POSTGRES_STANDBY")
        let synchronous = try await run("bash", ["scripts/postgres", "synchronous", folder])
        #expect(synchronous.status == 0, "\(synchronous.errors)")
        // (It returns once the primary counts the standby as synchronous.)
        #expect(try await TestServer.sql("SHOW synchronous_standby_names", on: primary) == [["*"]])

        let name = "failover-\(UInt32.random(in: 0...UInt32.max))"
        var writerOptions = ReplicationOptions()
        writerOptions.reconnectTimeout = 2
        let writer = try await ReplicatedStore.open(
            PostgresStream(connection: primary, stream: name), reducers: [tallyReducer], initialState: Tally(),
            actions: tallyActions, options: writerOptions)
        try await Self.standbyReplayed(on: standby, from: primary)
        var followerOptions = ReplicationOptions()
        followerOptions.standbyConnection = standby
        let follower = try await ReplicatedStore.follow(
            PostgresStream(connection: primary, stream: name), reducers: [tallyReducer], initialState: Tally(),
            actions: tallyActions, options: followerOptions)

        let acknowledged = Recorder<String>()
        let load = dispatchLoad(writer, lanes: 4, count: 10_000, prefix: "f", into: acknowledged)
        while acknowledged.all.count < 200 { try await Task.sleep(for: .milliseconds(5)) }
        let failover = try await run("bash", ["scripts/postgres", "failover", folder])
        #expect(failover.status == 0, "\(failover.errors)")
        // The writer's dispatches fail once its reconnect bound passes: the old primary is gone.
        await #expect(throws: ReplicationError.self) { try await load.value }
        let acked = acknowledged.all
        #expect(acked.count >= 200 && acked.count < 40_000)

        // Every acknowledged action once on the promoted server.
        let stored = try await TestServer.sql(
            "SELECT payload->>'tag', count(*) FROM reduxstore.actions WHERE stream = \(TestServer.literal(name)) GROUP BY 1",
            on: standby)
        var counts: [String: Int] = [:]
        for row in stored { counts[row[0]] = Int(row[1]) }
        let missing = acked.filter { counts[$0] == nil }
        #expect(missing.isEmpty, "acknowledged, not on the new primary: \(missing.prefix(10))")
        #expect(counts.values.allSatisfy { $0 == 1 }, "an action stored twice")
        let head = UInt64(try await TestServer.sql(
            "SELECT version FROM reduxstore.streams WHERE name = \(TestServer.literal(name))", on: standby)[0][0])!
        #expect(head == UInt64(counts.count))

        // The documented way on: a writer opened anew on the promoted server. The follower reads
        // from that server already, and is woken by its poll (its listener's primary is gone).
        let promoted = try await ReplicatedStore.open(
            PostgresStream(connection: standby, stream: name), reducers: [tallyReducer], initialState: Tally(),
            actions: tallyActions)
        #expect(promoted.store.version == head)
        let next = try await promoted.dispatch(Add(by: 1, tag: "after"))
        #expect(next == head + 1)
        try await Self.applied(follower, next)
        #expect(follower.store.version == next)
        #expect(follower.store.currentState() == promoted.store.currentState())
        #expect(await follower.failure == nil)
        await follower.close()
        await promoted.close()
        await writer.close()
    }

    /// Runs a program to its end, from a `defer`.
    static func runBlocking(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
    }
}
}
