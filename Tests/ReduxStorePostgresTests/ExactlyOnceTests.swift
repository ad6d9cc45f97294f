import Foundation
import PostgresNIO
import ReduxStore
@testable import ReduxStorePostgres
import ReduxStoreTestSupport
import Testing

/// The paths an action takes where "stored once, the same state everywhere" is easiest to break:
/// an answer lost while another process trims, numbers PostgreSQL would rewrite, an action the
/// program's own decoder refuses, an error after an attempt that may have committed, a role whose
/// `synchronous_commit` is off.
extension ReplicationTests {
@Suite("Exactly once on every path")
struct ExactlyOnceTests {
    typealias FaultProxy = FaultTests.FaultProxy

    /// The stream's head, and how many rows hold `tag`.
    static func head(_ stream: PostgresStream, tag: String) async throws -> (head: Int, rows: Int) {
        let name = TestServer.literal(stream.stream)
        let head = try await TestServer.sql("SELECT version FROM \(stream.schema).streams WHERE name = \(name)")
        let rows = try await TestServer.sql(
            "SELECT count(*) FROM \(stream.schema).actions WHERE stream = \(name) AND payload->>'tag' = \(TestServer.literal(tag))")
        return (Int(head[0][0])!, Int(rows[0][0])!)
    }

    /// Waits until a row holds `tag` (a request that reached the server and committed).
    static func waitForRow(_ stream: PostgresStream, tag: String) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try await head(stream, tag: tag).rows == 0 {
            guard ContinuousClock.now < deadline else { throw ProcessFailure(description: "\(tag) never committed") }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// A writer behind a fault proxy that dispatched "first" (version 1), then a second dispatch
    /// tagged `tag` whose request committed and whose answer, and every other on the writer's
    /// connections, is lost. Returns the proxy, the stream reached directly, the writer and the
    /// second dispatch on its way.
    static func answerLost(
        _ prefix: String, tag: String
    ) async throws -> (FaultProxy, PostgresStream, ReplicatedStore<Tally>, Task<UInt64, any Error>) {
        let proxy = try await FaultProxy()
        let name = "\(prefix)-\(UInt32.random(in: 0...UInt32.max))"
        let direct = try PostgresStream(connection: try TestServer.url(), stream: name)
        var options = ReplicationOptions()
        options.reconnectTimeout = 60
        let writer = try await ReplicatedStore.open(
            try PostgresStream(connection: proxy.url, stream: name), reducers: [tallyReducer], initialState: Tally(),
            actions: tallyActions, options: options)
        #expect(try await writer.dispatch(Add(by: 1, tag: "first")) == 1)
        try proxy.command("mute")
        let lost = Task { try await writer.dispatch(Add(by: 1, tag: tag)) }
        try await waitForRow(direct, tag: tag)
        return (proxy, direct, writer, lost)
    }

    @Test("an answer lost while another process trims past it: the retry answers the first version, nothing is stored twice")
    func lostAnswerAcrossATrim() async throws {
        let (proxy, direct, writer, lost) = try await Self.answerLost("trim", tag: "lost-answer")
        defer { proxy.stop() }
        // Meanwhile another process commits, stores snapshots and trims every action up to 20:
        // the lost one's row is gone before the writer asks again.
        var trimming = ReplicationOptions()
        trimming.snapshotEvery = 5
        trimming.snapshotsKept = 1
        trimming.trimsActions = true
        let other = try await ReplicatedStore.open(
            direct, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: trimming)
        for index in 3...22 { try await other.dispatch(Add(by: 1, tag: "other-\(index)")) }
        #expect(try await Self.head(direct, tag: "lost-answer") == (22, 0), "the trim took the lost answer's row")
        // The writer gives up on the answer (10 s), connects anew and asks again: the answer is
        // the version stored the first time. (A poll of the writer's that was on its way when the
        // answers were lost reads the stream anew after the trim: the writer, behind the trim,
        // stops, and the dispatch's error says where its action is.)
        do {
            let version = try await lost.value
            #expect(version == 2, "the retry answers the version stored the first time")
        } catch let error as ReplicationError {
            #expect(error.kind == .trimmed && error.outcome == .stored(version: 2), "\(error)")
        }
        let after = try await Self.head(direct, tag: "lost-answer")
        #expect(after == (22, 0), "the retry stored the action a second time")
        await writer.close()
        await other.close()
    }

    /// A state that keeps each payload's value as given: the shape where a rewritten number shows.
    static let keepPayloads: Reducer<[JSONValue]> = { state, action in
        guard let action = action as? JSONAction, action.identifier == "keep" else { return }
        state.append(action.payload ?? .null)
    }

    /// Each "nest" puts the whole state one level deeper.
    static let nest: Reducer<[JSONValue]> = { state, action in
        guard let action = action as? JSONAction else { return }
        if action.identifier == "nest" { state = [.array(state)] }
        if action.identifier == "keep" { state.append(action.payload ?? .null) }
    }

    @Test("a state no process could start from is not stored as a snapshot: every replica goes on, a new one replays")
    func stateTooDeepForASnapshot() async throws {
        let stream = try TestServer.stream("too-deep")
        var options = ReplicationOptions()
        options.snapshotEvery = 100
        let writer = try await ReplicatedStore.open(
            stream, reducers: [Self.nest], initialState: [], actions: ActionTypes(), options: options)
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [Self.nest], initialState: [], actions: ActionTypes(), options: options)
        for _ in 0..<300 {
            try await writer.dispatch(JSONAction(identifier: "nest"))
        }
        // At 300 the state nests 301 levels: no snapshot there, and nobody stops for it.
        try await writer.dispatch(JSONAction(identifier: "keep", payload: "after"))
        try await follower.catchUp()
        #expect(await writer.failure == nil)
        #expect(await follower.failure == nil)
        #expect(follower.store.version == 301)
        let stored = try await TestServer.sql(
            "SELECT version FROM \(stream.schema).snapshots WHERE stream = \(TestServer.literal(stream.stream)) ORDER BY version")
        #expect(stored.map { $0[0] } == ["100", "200"])
        let late = try await ReplicatedStore.follow(
            stream, reducers: [Self.nest], initialState: [], actions: ActionTypes(), options: options)
        // Replayed from the snapshot at 200 (the state is too deep for currentState() to copy).
        #expect(late.store.version == 301)
        #expect(await late.failure == nil)
        await late.close()
        await follower.close()
        await writer.close()
    }

    @Test("numbers PostgreSQL's jsonb would rewrite reach every process as the writer sent them")
    func numbersAsWritten() async throws {
        let stream = try TestServer.stream("numbers")
        var options = ReplicationOptions()
        options.snapshotEvery = 3
        let writer = try await ReplicatedStore.open(
            stream, reducers: [Self.keepPayloads], initialState: [], actions: ActionTypes(), options: options)
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [Self.keepPayloads], initialState: [], actions: ActionTypes(), options: options)
        let values: [JSONValue] = [.double(1e16), .double(-0.0), .double(100), .double(1.5e300), .int(7), .uint(UInt64.max)]
        for value in values {
            try await writer.dispatch(JSONAction(identifier: "keep", payload: .object(["n": value])))
        }
        try await follower.catchUp()
        let late = try await ReplicatedStore.follow(
            stream, reducers: [Self.keepPayloads], initialState: [], actions: ActionTypes(), options: options)
        let texts = try [writer, follower, late].map { replica in
            try JSONValue(canonicallyEncoding: replica.store.currentState()).description
        }
        #expect(texts[1] == texts[0], "a follower applied other numbers than the writer")
        #expect(texts[2] == texts[0], "a new process (from the snapshot at 6) holds other numbers than the writer")
        #expect(late.store.currentState() == writer.store.currentState())
        // The stream holds the text as the writer sent it, which jsonb would have rewritten
        // (`-0.0` as `0.0`, `1.5e+300` as 301 digits).
        let stored = try await TestServer.sql(
            "SELECT payload::text FROM \(stream.schema).actions WHERE stream = \(TestServer.literal(stream.stream)) ORDER BY version")
        #expect(stored.map { $0[0] } == values.map { JSONValue.object(["n": $0]).description })
        #expect(await follower.failure == nil)
        #expect(await late.failure == nil)
        await late.close()
        await follower.close()
        await writer.close()
    }

    /// Appends half of each action's number as a double (whole for even numbers), then how many
    /// doubles the state holds: a reducer whose result depends on the kinds of what it made before.
    static let halves: Reducer<[JSONValue]> = { state, action in
        guard let action = action as? JSONAction, case .int(let n)? = action.payload else { return }
        state.append(.double(Double(n) / 2))
        let doubles = state.reduce(0) { count, value in
            if case .double = value { count + 1 } else { count }
        }
        state.append(.int(Int64(doubles)))
    }

    @Test("whole doubles a reducer makes: a process started from a snapshot holds the same kinds, and nobody diverges")
    func wholeDoublesThroughASnapshot() async throws {
        let stream = try TestServer.stream("halves")
        var options = ReplicationOptions()
        options.snapshotEvery = 5
        options.snapshotsKept = 1
        options.trimsActions = true
        let writer = try await ReplicatedStore.open(
            stream, reducers: [Self.halves], initialState: [], actions: ActionTypes(), options: options)
        for n in 1...10 { try await writer.dispatch(JSONAction(identifier: "half", payload: .int(Int64(n)))) }
        // Actions 1 to 9 are trimmed: the new process can only start from the snapshot at 10. It
        // keeps two snapshots, so that its own at 15 trims nothing the writer has yet to apply.
        var keepingTwo = options
        keepingTwo.snapshotsKept = 2
        let late = try await ReplicatedStore.open(
            stream, reducers: [Self.halves], initialState: [], actions: ActionTypes(), options: keepingTwo)
        #expect(late.store.currentState()[2] == .double(1))
        for n in 11...15 {
            try await late.dispatch(JSONAction(identifier: "half", payload: .int(Int64(n))))
            try await writer.catchUp()
        }
        #expect(await writer.failure == nil, "a kind lost through the snapshot made the replicas diverge")
        #expect(await late.failure == nil)
        #expect(late.store.currentState() == writer.store.currentState())
        #expect(writer.store.currentState().last == .int(15))
        await late.close()
        await writer.close()
    }

    /// An action whose decoding refuses what its encoding writes.
    struct OneWay: Action, Codable {
        var value: Int
        var identifier: String { "one-way" }
        init(value: Int) { self.value = value }
        init(from decoder: any Decoder) throws {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "one-way never decodes"))
        }
    }

    @Test("an action the program's own decoder refuses is refused before it is stored")
    func refusedBeforeStored() async throws {
        let stream = try TestServer.stream("one-way")
        var actions = tallyActions
        actions.register(OneWay.self, for: "one-way")
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: actions)
        try await writer.dispatch(Add(by: 1, tag: "before"))
        do {
            try await writer.dispatch(OneWay(value: 1))
            Issue.record("an action that does not decode was committed")
        } catch let error as ReplicationError {
            #expect(error.kind == .invalidArgument)
            #expect(error.message.contains("one-way never decodes"), "\(error)")
        }
        #expect(try await writer.dispatch(Add(by: 1, tag: "after")) == 2)
        let rows = try await TestServer.sql(
            "SELECT identifier FROM \(stream.schema).actions WHERE stream = \(TestServer.literal(stream.stream)) ORDER BY version")
        #expect(rows == [["add"], ["add"]])
        let late = try await ReplicatedStore.follow(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: actions)
        #expect(late.store.currentState() == writer.store.currentState())
        #expect(await writer.failure == nil)
        await late.close()
        await writer.close()
    }

    // MARK: Snapshots

    @Test("a snapshot due by time, stored after a follower applied its version, is compared by that follower")
    func timedSnapshotCompared() async throws {
        let stream = try TestServer.stream("timed")
        var options = ReplicationOptions()
        options.snapshotEvery = 0
        options.snapshotInterval = 0.001
        options.pollInterval = 0.02
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [offByOneReducer], initialState: Tally(), actions: tallyActions, options: options)
        // The snapshots table held for 3 s: the writer's snapshot waits while the follower applies
        // the version it is due at.
        let holder = try RunningProcess(
            "psql", [try TestServer.url(), "-X", "-q", "-c",
                     "BEGIN; LOCK TABLE \(stream.schema).snapshots IN SHARE MODE; SELECT pg_sleep(3); COMMIT"])
        try await Task.sleep(for: .milliseconds(500))
        try await writer.dispatch(Add(by: 1, tag: "timed"))
        #expect(await holder.finish().status == 0)
        let stored = try await TestServer.sql(
            "SELECT version FROM \(stream.schema).snapshots WHERE stream = \(TestServer.literal(stream.stream))")
        #expect(stored == [["1"]], "the writer stored no snapshot due by time")
        let failure = try await stopped(follower, within: .seconds(15))
        #expect(failure?.kind == .divergence, "\(String(describing: failure))")
        #expect(failure?.version == 1)
        await follower.close()
        await writer.close()
    }

    @Test("a new process does not start from a snapshot no second process confirmed")
    func unconfirmedSnapshotChecked() async throws {
        let stream = try TestServer.stream("unconfirmed")
        var options = ReplicationOptions()
        options.snapshotEvery = 10
        // A process whose reducer is wrong stores the snapshot at 10.
        let wrong = try await ReplicatedStore.open(
            stream, reducers: [offByOneReducer], initialState: Tally(), actions: tallyActions, options: options)
        for index in 1...12 { try await wrong.dispatch(Add(by: 1, tag: "u\(index)")) }
        await wrong.close()
        do {
            let opened = try await ReplicatedStore.open(
                stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
            Issue.record("a new process started from the wrong snapshot: \(opened.store.currentState())")
            await opened.close()
        } catch let error as ReplicationError {
            #expect(error.kind == .divergence, "\(error)")
            #expect(error.version == 10)
        }
    }

    @Test("a snapshot another process confirmed is where a new process starts, the actions before it gone")
    func confirmedSnapshotStarts() async throws {
        let stream = try TestServer.stream("confirmed")
        let name = TestServer.literal(stream.stream)
        var options = ReplicationOptions()
        options.snapshotEvery = 10
        options.pollInterval = 0.02
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        for index in 1...12 { try await writer.dispatch(Add(by: index, tag: "c\(index)")) }
        let deadline = ContinuousClock.now + .seconds(15)
        var confirmed: [[String]] = []
        while confirmed.isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            confirmed = try await TestServer.sql("""
                SELECT version FROM \(stream.schema).snapshots
                WHERE stream = \(name) AND confirmed_by IS NOT NULL AND confirmed_by <> writer
                """)
        }
        #expect(confirmed == [["10"]], "the follower did not confirm the writer's snapshot")
        // As a trim would: the actions through 10 gone. A new process starts from the snapshot.
        try await TestServer.sql("DELETE FROM \(stream.schema).actions WHERE stream = \(name) AND version <= 10")
        let late = try await ReplicatedStore.follow(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        #expect(late.store.version == 12)
        #expect(late.store.currentState() == writer.store.currentState())
        await late.close()
        await follower.close()
        await writer.close()
    }

    @Test("an answer lost, then a retry refused by a server gone read-only: the error says the outcome is unknown and names the dispatch")
    func errorAfterAMaybeCommit() async throws {
        let (proxy, direct, writer, lost) = try await Self.answerLost("maybe", tag: "maybe")
        defer { proxy.stop() }
        let name = direct.stream
        // As after a failover to a server that takes no writes: every new session is read-only.
        try await FaultTests.superuserSQL("ALTER ROLE reduxstore SET default_transaction_read_only = on")
        do {
            _ = try await lost.value
            Issue.record("a retry refused by a read-only server was answered as a success")
        } catch let error as ReplicationError {
            #expect(error.outcome == .unknown, "\(error)")
            #expect(error.writer != nil && error.sequence == 2, "\(error)")
            #expect(error.message.contains("outcome unknown"), "\(error)")
            #expect(error.message.contains("seq 2"), "\(error)")
            // What the error names is what the stream holds: the action, once.
            if let writerName = error.writer {
                let rows = try await TestServer.sql("""
                    SELECT version FROM \(direct.schema).actions WHERE stream = \(TestServer.literal(name))
                    AND writer = \(TestServer.literal(writerName)) AND seq = 2
                    """)
                #expect(rows == [["2"]])
            }
        }
        try await FaultTests.superuserSQL("ALTER ROLE reduxstore RESET default_transaction_read_only")
        #expect(try await writer.catchUp() == 2)
        #expect(writer.store.currentState().count == 2)
        await writer.close()
    }

    @Test("a role with synchronous_commit off and a synchronous standby that never answers: no dispatch is answered as a success")
    func durableWhateverTheRole() async throws {
        let stream = try TestServer.stream("sync")
        try await FaultTests.superuserSQL("ALTER ROLE reduxstore SET synchronous_commit = off")
        try await FaultTests.superuserSQL("ALTER SYSTEM SET synchronous_standby_names = 'nobody'")
        try await FaultTests.superuserSQL("SELECT pg_reload_conf()")
        var options = ReplicationOptions()
        options.reconnectTimeout = 2
        var writer: ReplicatedStore<Tally>?
        do {
            writer = try await ReplicatedStore.open(
                stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
            do {
                let version = try await writer!.dispatch(Add(by: 1, tag: "unreplicated"))
                Issue.record("answered version \(version) before the synchronous standby confirmed it")
            } catch let error as ReplicationError {
                #expect(error.outcome == .unknown, "\(error)")
            }
        } catch {
            Issue.record("\(error)")
        }
        try await FaultTests.superuserSQL("ALTER SYSTEM RESET synchronous_standby_names")
        try await FaultTests.superuserSQL("SELECT pg_reload_conf()")
        try await FaultTests.superuserSQL("ALTER ROLE reduxstore RESET synchronous_commit")
        // Released, the commit that waited completes: the action is there once.
        if let writer {
            let deadline = ContinuousClock.now + .seconds(20)
            while try await writer.catchUp() < 1, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(writer.store.currentState().count == 1)
            #expect(try await Self.head(stream, tag: "unreplicated") == (1, 1))
            await writer.close()
        }
    }
}
}

extension ReplicationTests {
@Suite("The schema's migration")
struct MigrationTests {
    @Test("tables of schema version 2 with a history: migrated in one statement, the writers' evidence kept")
    func fromVersion2() async throws {
        let schema = "migrate_\(UInt32.random(in: 0...UInt32.max))"
        // The tables as version 2 of the library made them, with two writers' actions.
        try await TestServer.sql("""
            CREATE SCHEMA \(schema);
            CREATE TABLE \(schema).migrations (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now());
            INSERT INTO \(schema).migrations (version) VALUES (1), (2);
            CREATE TABLE \(schema).streams (name text PRIMARY KEY, version bigint NOT NULL DEFAULT 0,
                created timestamptz NOT NULL DEFAULT now());
            CREATE TABLE \(schema).actions (stream text NOT NULL, version bigint NOT NULL, identifier text NOT NULL,
                payload jsonb NOT NULL, time timestamptz NOT NULL DEFAULT now(), source text, writer text NOT NULL,
                seq bigint NOT NULL, PRIMARY KEY (stream, version));
            CREATE TABLE \(schema).snapshots (stream text NOT NULL, version bigint NOT NULL, state jsonb NOT NULL,
                hash text NOT NULL, time timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (stream, version));
            CREATE UNIQUE INDEX actions_writer_seq ON \(schema).actions (stream, writer, seq);
            INSERT INTO \(schema).streams (name, version) VALUES ('old', 3);
            INSERT INTO \(schema).actions (stream, version, identifier, payload, writer, seq) VALUES
                ('old', 1, 'add', '{"by":1,"tag":"a"}', 'w1', 1),
                ('old', 2, 'add', '{"by":2,"tag":"b"}', 'w2', 1),
                ('old', 3, 'add', '{"by":3,"tag":"c"}', 'w1', 2);
            """)
        let stream = try PostgresStream(connection: try TestServer.url(), stream: "old", schema: schema)
        // Two processes opening at once take turns.
        async let first = ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        async let second = ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        let (a, b) = try await (first, second)
        #expect(a.store.version == 3 && b.store.version == 3)
        #expect(a.store.currentState() == b.store.currentState())
        #expect(try await TestServer.sql("SELECT max(version) FROM \(schema).migrations") == [["3"]])
        #expect(try await TestServer.sql("SELECT writer, seq, version FROM \(schema).writers ORDER BY writer")
            == [["w1", "2", "3"], ["w2", "1", "2"]])
        #expect(try await TestServer.sql("""
            SELECT data_type FROM information_schema.columns
            WHERE table_schema = '\(schema)' AND column_name IN ('payload', 'state') ORDER BY table_name
            """) == [["json"], ["json"]])
        // A request of version 2's writer, repeated after the migration and a trim: recognized.
        try await TestServer.sql("DELETE FROM \(schema).actions WHERE stream = 'old'")
        #expect(try await TestServer.sql("""
            CALL \(schema).append('old', ARRAY['add'], ARRAY['{"by":3,"tag":"c"}'], ARRAY[''], 'w1', 2, NULL)
            """) == [["3"]])
        #expect(try await TestServer.sql("SELECT version FROM \(schema).streams WHERE name = 'old'") == [["3"]])
        await a.close()
        await b.close()
        // Tables newer than the library are refused, naming the versions.
        try await TestServer.sql("INSERT INTO \(schema).migrations (version) VALUES (99)")
        do {
            _ = try await ReplicatedStore.open(stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
            Issue.record("tables of a newer library were used")
        } catch let error as ReplicationError {
            #expect(error.kind == .schema, "\(error)")
            #expect(error.message.contains("99"), "\(error)")
        }
        try await TestServer.sql("DROP SCHEMA \(schema) CASCADE")
    }
}
}
