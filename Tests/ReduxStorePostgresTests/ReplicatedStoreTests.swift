import Foundation
import ReduxStore
import ReduxStorePostgres
import ReduxStoreTestSupport
import Testing

/// Every suite that talks to the server, one test at a time: some kill the server's sessions or
/// restart it.
@Suite("Replication on PostgreSQL", .serialized)
struct ReplicationTests {}

extension ReplicationTests {
@Suite("A replicated store")
struct ReplicatedStoreTests {
    @Test("a writer's dispatches are committed, applied in order, and reach a follower, observers and the change feed")
    func writerAndFollower() async throws {
        let stream = try TestServer.stream("writer-follower")
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        let heard = Recorder<UInt64>()
        let token = follower.store.addObserver { heard.append($0.version) }
        let changes = follower.store.changes()

        var versions: [UInt64] = []
        for index in 1...50 {
            versions.append(try await writer.dispatch(Add(by: index, tag: "t\(index)")))
        }
        #expect(versions == Array(1...50))
        #expect(writer.store.version == 50)
        #expect(writer.store.currentState().total == 1275)

        // The follower is woken by the notification (or the poll) without being asked.
        let deadline = ContinuousClock.now + .seconds(10)
        while follower.store.version < 50, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(follower.store.version == 50)
        #expect(follower.store.currentState() == writer.store.currentState())
        #expect(heard.all.last == 50)
        #expect(heard.all == heard.all.sorted())

        var iterator = changes.makeAsyncIterator()
        let first = await iterator.next()
        #expect(first?.version == 1)
        #expect(first?.identifier == "add")
        #expect(first?.payload == ["by": 1, "tag": "t1"])
        #expect(first?.source?.fileName == "ReplicatedStoreTests.swift")

        // A follower does not write; the local store's state changes only through the stream.
        await #expect(throws: ReplicationError.self) { try await follower.dispatch(Add(by: 1, tag: "no")) }
        do {
            try await follower.dispatch(Add(by: 1, tag: "no"))
        } catch let error as ReplicationError {
            #expect(error.kind == .readOnly)
        }
        follower.store.keepHistory(4)
        #expect(throws: StoreError.self) { try follower.store.restore(version: 50) }

        follower.store.removeObserver(token)
        await writer.close()
        await follower.close()
        await #expect(throws: ReplicationError.self) { try await writer.dispatch(Add(by: 1, tag: "closed")) }
        #expect(try await replayed(stream).tally == writer.store.currentState())
    }

    @Test("routed reducers: a writer and a follower route every stored action by its type, and equal a replay")
    func routedReducers() async throws {
        let stream = try TestServer.stream("routed")
        var reducers = Reducers<Tally>(actions: tallyActions)
        // Typed: no cast in the reducer; the stored payloads decode into Add for it.
        reducers.on(Add.self) { state, add in tallyReducer(&state, add) }
        let writer = try await ReplicatedStore.open(stream, reducers: reducers, initialState: Tally())
        let follower = try await ReplicatedStore.follow(stream, reducers: reducers, initialState: Tally())
        for index in 1...30 {
            #expect(try await writer.dispatch(Add(by: index, tag: "r\(index)")) == UInt64(index))
        }
        #expect(try await follower.catchUp() == 30)
        #expect(writer.store.currentState().total == 465)
        #expect(follower.store.currentState() == writer.store.currentState())
        // A process that starts later replays the stream through the same routing.
        let late = try await ReplicatedStore.follow(stream, reducers: reducers, initialState: Tally())
        #expect(late.store.version == 30)
        #expect(late.store.currentState() == writer.store.currentState())
        #expect(try await replayed(stream).tally == writer.store.currentState())
        await late.close()
        await writer.close()
        await follower.close()
    }

    @Test("a follower is woken by the writer's notification, long before its poll")
    func notified() async throws {
        let stream = try TestServer.stream("notified")
        var options = ReplicationOptions()
        options.pollInterval = 600
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        // The follower's listener connects in the background: wait for it to hear a first commit.
        var version: UInt64 = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while follower.store.version == 0, ContinuousClock.now < deadline {
            version = try await writer.dispatch(Add(by: 1, tag: "t\(version)"))
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(follower.store.version > 0, "no notification woke the follower")
        for index in 0..<20 {
            let committed = try await writer.dispatch(Add(by: 1, tag: "n\(index)"))
            let started = ContinuousClock.now
            while follower.store.version < committed, started.duration(to: .now) < .seconds(5) {
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(follower.store.version >= committed, "version \(committed) not heard within 5 s")
        }
        await writer.close()
        await follower.close()
    }

    @Test("concurrent dispatches of one process share commits, each acknowledged with its own version")
    func groupCommit() async throws {
        let stream = try TestServer.stream("group-commit")
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        let versions = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for index in 0..<400 {
                group.addTask { try await writer.dispatch(Add(by: 1, tag: "g\(index)")) }
            }
            return try await group.reduce(into: [UInt64]()) { $0.append($1) }
        }
        #expect(versions.sorted() == Array(1...400))
        #expect(writer.store.version == 400)
        // Fewer statements than actions: the writer's rows share transactions.
        let transactions = try await TestServer.sql(
            "SELECT count(DISTINCT xmin::text) FROM \(stream.schema).actions WHERE stream = \(TestServer.literal(stream.stream))")
        let count = Int(transactions[0][0])!
        #expect(count < 400)
        #expect(try await replayed(stream).tally == writer.store.currentState())
        await writer.close()
    }

    @Test("two writers in one order: both end with the state of a replay of the stream")
    func twoWritersOneOrder() async throws {
        let stream = try TestServer.stream("two-writers")
        let a = try await ReplicatedStore.open(stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        let b = try await ReplicatedStore.open(stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (name, replica) in [("a", a), ("b", b)] {
                for lane in 0..<4 {
                    group.addTask {
                        for index in 0..<50 { try await replica.dispatch(Add(by: 1, tag: "\(name)\(lane)-\(index)")) }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await a.catchUp()
        try await b.catchUp()
        #expect(a.store.version == 400)
        #expect(b.store.version == 400)
        let replay = try await replayed(stream)
        #expect(a.store.currentState() == replay.tally)
        #expect(b.store.currentState() == replay.tally)
        #expect(Set(replay.tags).count == 400)
        await a.close()
        await b.close()
    }

    @Test("a new process starts from the newest snapshot; trimmed actions are those below the oldest kept")
    func snapshotsAndRetention() async throws {
        let stream = try TestServer.stream("snapshots")
        var options = ReplicationOptions()
        options.snapshotEvery = 50
        options.snapshotsKept = 2
        options.trimsActions = true
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        for index in 1...230 { try await writer.dispatch(Add(by: index, tag: "s\(index)")) }
        let snapshots = try await TestServer.sql(
            "SELECT version, length(hash) FROM \(stream.schema).snapshots WHERE stream = \(TestServer.literal(stream.stream)) ORDER BY version")
        #expect(snapshots.map { $0[0] } == ["150", "200"])
        #expect(snapshots.allSatisfy { $0[1] == "64" })
        let oldest = try await TestServer.sql(
            "SELECT min(version), count(*) FROM \(stream.schema).actions WHERE stream = \(TestServer.literal(stream.stream))")
        #expect(oldest[0] == ["151", "80"])

        let late = try await ReplicatedStore.follow(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        #expect(late.store.version == 230)
        #expect(late.store.currentState() == writer.store.currentState())
        #expect(late.store.currentState().total == 230 * 231 / 2)
        await late.close()
        await writer.close()
    }

    @Test("processes opening while writers trim at every snapshot: each open starts again from the newer snapshot, none fails")
    func openingWhileTrimming() async throws {
        let stream = try TestServer.stream("open-trim")
        var options = ReplicationOptions()
        options.snapshotEvery = 5
        options.snapshotsKept = 1
        options.trimsActions = true
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        let writing = Task.detached {
            var index = 0
            while !Task.isCancelled {
                index += 1
                try await writer.dispatch(Add(by: 1, tag: "w\(index)"))
            }
        }
        for _ in 0..<12 {
            // Every open used to fail now and then with "trimmed": the actions after the
            // snapshot it started from went while it read them.
            let opened = try await ReplicatedStore.follow(
                stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
            #expect(opened.store.version > 0)
            await opened.close()
        }
        writing.cancel()
        _ = await writing.result
        #expect(await writer.failure == nil)
        await writer.close()
    }

    @Test("application_name in the connection string reaches the server: operators see who is connected")
    func applicationName() async throws {
        let name = "tally-app-\(UInt32.random(in: 0...UInt32.max))"
        let named = try PostgresStream(
            connection: try TestServer.url() + "?application_name=\(name)", stream: "named-\(name)")
        #expect(named.applicationName == name)
        let writer = try await ReplicatedStore.open(
            named, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        try await writer.dispatch(Add(by: 1, tag: "named"))
        let sessions = try await TestServer.sql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = \(TestServer.literal(name))")
        #expect((Int(sessions.first?.first ?? "") ?? 0) >= 1, "\(sessions)")
        await writer.close()
    }

    // Trimming deletes the actions at and below the oldest kept snapshot: with one snapshot kept,
    // at its version the stream holds no action at all, and a follower further behind reads an
    // empty tail. It must not take that for being caught up.
    @Test("a follower behind a trim that left no action after it stops with trimmed, its lag says how far")
    func followerBehindTrimToTheHead() async throws {
        let stream = try TestServer.stream("trim-head")
        var options = ReplicationOptions()
        options.snapshotEvery = 2
        options.snapshotsKept = 1
        options.trimsActions = true
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        var following = ReplicationOptions()
        following.notifies = false
        following.pollInterval = 3600  // it reads only when asked: catchUp below
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: following)
        for index in 1...6 { try await writer.dispatch(Add(by: index, tag: "t\(index)")) }
        let left = try await TestServer.sql(
            "SELECT count(*) FROM \(stream.schema).actions WHERE stream = \(TestServer.literal(stream.stream))")
        #expect(left == [["0"]])
        await #expect(throws: ReplicationError.self) { try await follower.catchUp() }
        let failure = await follower.failure
        #expect(failure?.kind == .trimmed && failure?.version == 1, "\(String(describing: failure))")
        #expect(follower.store.version == 0, "it keeps the state it had")
        #expect(await follower.lag.versions == 6)
        await follower.close()
        await writer.close()
    }

    @Test("reducers that are not deterministic are reported as divergence at the snapshot's version")
    func divergence() async throws {
        let stream = try TestServer.stream("divergence")
        var options = ReplicationOptions()
        options.snapshotEvery = 10
        options.pollInterval = 0.02
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [offByOneReducer], initialState: Tally(), actions: tallyActions, options: options)
        for index in 1...12 { try await writer.dispatch(Add(by: 1, tag: "d\(index)")) }
        let failure = try await stopped(follower, within: .seconds(10))
        #expect(failure?.kind == .divergence)
        #expect(failure?.version == 10)
        #expect(failure?.description.contains("version 10") == true)
        // The follower may have applied 10 before the writer stored its snapshot: it compares
        // when it next looks, a version or two on, and stops there.
        let stopped = follower.store.version
        #expect(stopped >= 10 && stopped <= 12)
        await #expect(throws: ReplicationError.self) { try await follower.catchUp() }
        #expect(follower.store.version == stopped, "a stopped replica applies nothing more")
        await follower.close()
        await writer.close()
    }

    @Test("a stored payload that no longer decodes stops the replica at its version, never skips it")
    func undecodablePayload() async throws {
        let stream = try TestServer.stream("bad-payload")
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        try await writer.dispatch(Add(by: 1, tag: "ok"))
        await writer.close()
        let name = TestServer.literal(stream.stream)
        try await TestServer.sql("""
            UPDATE \(stream.schema).streams SET version = 3 WHERE name = \(name);
            INSERT INTO \(stream.schema).actions (stream, version, identifier, payload, writer, seq)
            VALUES (\(name), 2, 'add', '{"by":"one","tag":"bad"}', 'test', 1),
                   (\(name), 3, 'add', '{"by":1,"tag":"after"}', 'test', 2)
            """)
        do {
            _ = try await ReplicatedStore.follow(
                stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
            Issue.record("a replica opened past a payload that does not decode")
        } catch let error as ReplicationError {
            #expect(error.kind == .decode)
            #expect(error.version == 2)
            #expect(error.stream == stream.stream)
            #expect(error.description.contains("by"))
        }
    }

    @Test("a stored snapshot that does not decode into the state type is a clear error")
    func snapshotOfAnotherType() async throws {
        let stream = try TestServer.stream("other-type")
        let name = TestServer.literal(stream.stream)
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        try await writer.dispatch(Add(by: 1, tag: "one"))
        await writer.close()
        // Confirmed by a second process, so a new process starts from it.
        try await TestServer.sql("""
            INSERT INTO \(stream.schema).snapshots (stream, version, state, hash, writer, confirmed_by)
            VALUES (\(name), 1, '{"todos":[]}', 'x', 'one', 'another')
            """)
        do {
            _ = try await ReplicatedStore.open(
                stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
            Issue.record("a snapshot of another shape was accepted")
        } catch let error as ReplicationError {
            #expect(error.kind == .decode)
            #expect(error.description.contains("Tally"))
        }
    }

    @Test("a wrong password and a missing server are clear errors that never show the password")
    func connectionErrors() async throws {
        let url = try TestServer.url()
        let wrong = url.replacingOccurrences(of: ":reduxstore@", with: ":not-the-Secret-42@")
        let stream = try PostgresStream(connection: wrong, stream: "auth")
        do {
            _ = try await ReplicatedStore.open(stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
            Issue.record("a wrong password was accepted")
        } catch let error as ReplicationError {
            #expect(error.kind == .authentication)
            #expect(!error.description.contains("not-the-Secret-42"))
            #expect(error.description.contains("reduxstore"))
        }
        #expect(!stream.description.contains("not-the-Secret-42"))

        let nowhere = try PostgresStream(
            connection: "postgres://someone:hidden-Word-7@127.0.0.1:1/db", stream: "missing")
        // A refused connection is retried until the bound: 3 s rather than the default's 30.
        var briefly = ReplicationOptions()
        briefly.reconnectTimeout = 3
        do {
            _ = try await ReplicatedStore.follow(
                nowhere, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: briefly)
            Issue.record("a missing server was reached")
        } catch let error as ReplicationError {
            #expect(error.kind == .connection)
            #expect(error.description.contains("127.0.0.1:1"))
            #expect(!error.description.contains("hidden-Word-7"))
        }
    }

    @Test("TLS the server does not offer, or trusted roots that cannot be read, fail at once: not tried again")
    func tlsRefusals() async throws {
        let url = try TestServer.url()  // the throwaway cluster offers no TLS
        // Tried again, either would take the whole bound (an hour) before it failed.
        var patient = ReplicationOptions()
        patient.reconnectTimeout = 3600
        for mode in ["require", "verify-ca", "verify-full"] {
            let stream = try PostgresStream(connection: url + "?sslmode=" + mode, stream: "tls")
            do {
                _ = try await ReplicatedStore.open(
                    stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: patient)
                Issue.record("sslmode=\(mode) connected without TLS")
            } catch let error as ReplicationError {
                #expect(error.kind == .connection)
                #expect(!error.isTransient)
                #expect(error.description.contains("does not offer TLS, which sslmode=\(mode) requires"))
            }
        }
        let missing = try PostgresStream(
            connection: url + "?sslmode=verify-full&sslrootcert=/nonexistent/root.crt", stream: "tls")
        #expect(missing.trustedRoots == "/nonexistent/root.crt")
        do {
            _ = try await ReplicatedStore.open(
                missing, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: patient)
            Issue.record("an unreadable sslrootcert was accepted")
        } catch let error as ReplicationError {
            #expect(error.kind == .invalidArgument)
            #expect(error.description.contains("sslrootcert /nonexistent/root.crt cannot be read"))
        }
    }

    @Test("the server's sessions killed in the middle of a load: nothing acknowledged is lost or applied twice")
    func sessionsKilled() async throws {
        let stream = try TestServer.stream("terminated")
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        let acknowledged = Recorder<String>()
        let load = dispatchLoad(writer, lanes: 8, count: 1000, prefix: "k", into: acknowledged)
        var killed = 0
        for _ in 0..<5 {
            try await Task.sleep(for: .milliseconds(150))
            let rows = try await TestServer.sql("""
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE usename = current_user AND pid <> pg_backend_pid() AND application_name <> 'psql'
                """)
            killed += Int(rows[0][0]) ?? 0
        }
        let acknowledgedWhileKilling = acknowledged.count
        try await load.value
        #expect(killed > 0)
        #expect(acknowledgedWhileKilling < 8000, "the sessions were killed after the load")
        try await writer.catchUp()
        let replay = try await replayed(stream)
        #expect(Set(replay.tags).count == replay.tags.count, "an action was written twice")
        #expect(Set(acknowledged.all).isSubset(of: Set(replay.tags)), "an acknowledged action is missing")
        #expect(acknowledged.all.count == 8000)
        #expect(writer.store.currentState() == replay.tally)
        await writer.close()
    }

    @Test("the server restarted in the middle of a load: nothing acknowledged is lost or applied twice")
    func serverRestarted() async throws {
        let stream = try TestServer.stream("restarted")
        let folder = try TestServer.folder()
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        let acknowledged = Recorder<String>()
        let load = dispatchLoad(writer, lanes: 4, count: 2000, prefix: "r", into: acknowledged)
        try await Task.sleep(for: .milliseconds(300))
        let before = acknowledged.count
        let restart = try await run("bash", ["scripts/postgres", "restart", folder])
        #expect(restart.status == 0, "\(restart.errors)")
        // The restart fell in the middle of the load.
        #expect(before > 0)
        #expect(acknowledged.count < 8000)
        try await load.value
        #expect(acknowledged.count == 8000)
        try await writer.catchUp()
        let replay = try await replayed(stream)
        #expect(Set(replay.tags).count == replay.tags.count, "an action was written twice")
        #expect(Set(acknowledged.all) == Set(replay.tags))
        #expect(writer.store.currentState() == replay.tally)
        let deadline = ContinuousClock.now + .seconds(20)
        while follower.store.version < writer.store.version, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(follower.store.currentState() == replay.tally)
        await writer.close()
        await follower.close()
    }
}
}
