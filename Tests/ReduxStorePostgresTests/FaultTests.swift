import Foundation
import PostgresNIO
import ReduxStore
@testable import ReduxStorePostgres
import ReduxStoreTestSupport
import Testing

/// Faults as a deployment meets them: a connection held, slowed or cut on its way (a TCP proxy,
/// Tests/FaultProxy), the server stopped as in a crash during slowed commits, a full connection
/// table, a writer stopped by SIGSTOP, a payload the server refuses, processes whose states hold
/// sets. After each: every acknowledged action in the stream exactly once, and every replica
/// equal to a replay of the stream.
extension ReplicationTests {
@Suite("Faults")
struct FaultTests {
    /// The stream's tags: every acknowledged one there, none twice; the replica equal to a replay.
    static func checkOnce(
        _ stream: PostgresStream, acknowledged: [String], replica: ReplicatedStore<Tally>? = nil,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) async throws {
        let replay = try await replayed(stream)
        #expect(Set(replay.tags).count == replay.tags.count, "an action was written twice", sourceLocation: sourceLocation)
        let missing = Set(acknowledged).subtracting(replay.tags)
        #expect(missing.isEmpty, "acknowledged but not in the stream: \(missing.sorted().prefix(5))", sourceLocation: sourceLocation)
        if let replica {
            try await replica.catchUp()
            #expect(replica.store.currentState() == replay.tally, sourceLocation: sourceLocation)
        }
    }

    // MARK: Appends

    @Test("an append repeated or delivered late stores nothing new and answers the version stored the first time")
    func idempotentAppend() async throws {
        let stream = try TestServer.stream("idempotent")
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        try await writer.dispatch(Add(by: 1, tag: "first"))
        let name = TestServer.literal(stream.stream)
        let call = """
            CALL \(stream.schema).append(\(name), ARRAY['add','add'], ARRAY['{"by":1,"tag":"x1"}','{"by":1,"tag":"x2"}'],
                ARRAY['',''], 'a-writer', 7, NULL)
            """
        let first = try await TestServer.sql(call)
        let again = try await TestServer.sql(call)
        #expect(first == [["3"]])
        #expect(again == [["3"]], "a repeated append answers the versions stored the first time")
        // A single dispatch of the group, asked again on its own, answers its own version.
        let single = try await TestServer.sql("""
            CALL \(stream.schema).append(\(name), ARRAY['add'], ARRAY['{"by":1,"tag":"x2"}'], ARRAY[''], 'a-writer', 8, NULL)
            """)
        #expect(single == [["3"]])
        let rows = try await TestServer.sql(
            "SELECT count(*), max(version) FROM \(stream.schema).actions WHERE stream = \(name)")
        #expect(rows == [["3", "3"]])
        let head = try await TestServer.sql("SELECT version FROM \(stream.schema).streams WHERE name = \(name)")
        #expect(head == [["3"]])
        // The evidence is the writer's row, which retention keeps: with the actions trimmed, the
        // same request still stores nothing and answers the version stored the first time.
        let evidence = try await TestServer.sql(
            "SELECT seq, version FROM \(stream.schema).writers WHERE stream = \(name) AND writer = 'a-writer'")
        #expect(evidence == [["8", "3"]])
        try await Self.checkOnce(stream, acknowledged: ["first", "x1", "x2"], replica: writer)
        try await TestServer.sql("DELETE FROM \(stream.schema).actions WHERE stream = \(name)")
        #expect(try await TestServer.sql(call) == [["3"]])
        #expect(try await TestServer.sql("SELECT count(*) FROM \(stream.schema).actions WHERE stream = \(name)") == [["0"]])
        #expect(try await TestServer.sql("SELECT version FROM \(stream.schema).streams WHERE name = \(name)") == [["3"]])
        // Older than the writer's newest and no longer in the stream: refused, nothing stored.
        let stale = try? await TestServer.sql("""
            CALL \(stream.schema).append(\(name), ARRAY['add'], ARRAY['{"by":1,"tag":"x0"}'], ARRAY[''], 'a-writer', 6, NULL)
            """)
        #expect(stale == nil)
        #expect(try await TestServer.sql("SELECT version FROM \(stream.schema).streams WHERE name = \(name)") == [["3"]])
        await writer.close()
    }

    @Test("one action the server refuses fails only its own dispatch, never its group")
    func poisonedGroup() async throws {
        let stream = try TestServer.stream("poison")
        let name = TestServer.literal(stream.stream)
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        // Refused on the server (a check only this stream's rows meet), and refused before sending
        // (U+0000, which jsonb cannot hold).
        let constraint = "poison_\(UInt32.random(in: 0...UInt32.max))"
        try await TestServer.sql("""
            ALTER TABLE \(stream.schema).actions ADD CONSTRAINT \(constraint)
            CHECK (stream <> \(name) OR payload->>'tag' NOT LIKE 'server-refused%') NOT VALID
            """)
        let acknowledged = Recorder<String>()
        let refused = Recorder<String>()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<16 {
                group.addTask {
                    for index in 0..<52 {
                        let tag: String
                        switch index % 26 {
                        case 7: tag = "server-refused-\(lane)-\(index)"
                        case 19: tag = "nul-\(lane)-\(index)-a\u{0}b"
                        default: tag = "ok-\(lane)-\(index)"
                        }
                        do {
                            try await writer.dispatch(Add(by: 1, tag: tag))
                            acknowledged.append(tag)
                        } catch let error as ReplicationError {
                            refused.append(tag)
                            if tag.hasPrefix("nul") {
                                #expect(error.kind == .invalidArgument)
                                #expect(error.message.contains("U+0000"), "\(error)")
                            } else {
                                #expect(error.kind == .server)
                                #expect(error.message.contains(constraint), "\(error)")
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await TestServer.sql("ALTER TABLE \(stream.schema).actions DROP CONSTRAINT \(constraint)")
        #expect(acknowledged.all.allSatisfy { $0.hasPrefix("ok-") })
        #expect(acknowledged.count == 16 * 48, "a valid dispatch failed with its group")
        #expect(refused.count == 16 * 4)
        #expect(await writer.failure == nil)
        try await Self.checkOnce(stream, acknowledged: acknowledged.all, replica: writer)
        #expect(try await replayed(stream).tags.count == 16 * 48)
        await writer.close()
    }

    // MARK: The connection

    /// A fault proxy in front of the test server; its URL, and a way to command it.
    final class FaultProxy: Sendable {
        let process: RunningProcess
        let url: String
        let controlPort: Int

        init() async throws {
            let target = try TestServer.url()
            guard let components = URLComponents(string: target), let port = components.port else {
                throw ProcessFailure(description: "not a URL: \(target)")
            }
            process = try RunningProcess("python3", ["Tests/FaultProxy/fault_proxy.py", "127.0.0.1", "\(port)", "600"])
            let deadline = ContinuousClock.now + .seconds(20)
            var line: [Substring] = []
            while ContinuousClock.now < deadline {
                line = process.outputSoFar.split(separator: "\n").first?.split(separator: " ") ?? []
                if line.count == 3 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            guard line.count == 3, line[0] == "listening", let proxyPort = Int(line[1]), let control = Int(line[2]) else {
                process.kill()
                throw ProcessFailure(description: "the fault proxy did not start: \(process.outputSoFar)")
            }
            controlPort = control
            url = target.replacingOccurrences(of: ":\(port)/", with: ":\(proxyPort)/")
        }

        @discardableResult
        func command(_ text: String) throws -> String {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socket >= 0 else { throw ProcessFailure(description: "socket failed") }
            defer { close(socket) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(controlPort).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw ProcessFailure(description: "the fault proxy's control port refused") }
            let line = Array((text + "\n").utf8)
            _ = line.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
            var answer = [UInt8](repeating: 0, count: 64)
            let count = recv(socket, &answer, answer.count, 0)
            return String(decoding: answer.prefix(max(count, 0)), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func stop() { process.kill() }
    }

    @Test("a request held by a partition past its timeout, then delivered: the dispatch answers once, the action is stored once")
    func heldThenDelivered() async throws {
        let proxy = try await FaultProxy()
        defer { proxy.stop() }
        let name = "held-\(UInt32.random(in: 0...UInt32.max))"
        let stream = try PostgresStream(connection: proxy.url, stream: name)
        var options = ReplicationOptions()
        options.reconnectTimeout = 60
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        var acknowledged: [String] = []
        for index in 0..<10 {
            try await writer.dispatch(Add(by: 1, tag: "before-\(index)"))
            acknowledged.append("before-\(index)")
        }
        try proxy.command("hold")
        let held = Task { try await writer.dispatch(Add(by: 1, tag: "held")) }
        // Past the statement's bound: the writer gives the request up, and tries again on a new
        // connection, which the partition holds too.
        try await Task.sleep(for: .seconds(12))
        try proxy.command("release")
        let version = try await held.value
        acknowledged.append("held")
        for index in 0..<10 {
            try await writer.dispatch(Add(by: 1, tag: "after-\(index)"))
            acknowledged.append("after-\(index)")
        }
        // The late request has reached the server by now (it was delivered on release).
        try await Task.sleep(for: .seconds(1))
        try await Self.checkOnce(stream, acknowledged: acknowledged, replica: writer)
        let replay = try await replayed(stream)
        #expect(replay.tags.count == 21)
        #expect(replay.tags.firstIndex(of: "held").map { UInt64($0 + 1) } == version)
        #expect(await writer.failure == nil)
        await writer.close()
    }

    @Test("a link slowed to 40 bytes a second, then cut again and again under load: every acknowledged action once")
    func slowedAndCut() async throws {
        let proxy = try await FaultProxy()
        defer { proxy.stop() }
        let stream = try PostgresStream(connection: proxy.url, stream: "slowcut-\(UInt32.random(in: 0...UInt32.max))")
        var options = ReplicationOptions()
        options.reconnectTimeout = 60
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions, options: options)
        try proxy.command("slow 40")
        let slowed = Task { try await writer.dispatch(Add(by: 1, tag: "slowed")) }
        try await Task.sleep(for: .seconds(14))
        try proxy.command("pass")
        _ = try await slowed.value
        let acknowledged = Recorder<String>()
        acknowledged.append("slowed")
        let load = dispatchLoad(writer, lanes: 8, count: 150, prefix: "c", into: acknowledged)
        var cuts = 0
        for _ in 0..<6 {
            try await Task.sleep(for: .milliseconds(150))
            try proxy.command("cut")
            cuts += 1
        }
        try await load.value
        #expect(cuts == 6)
        #expect(acknowledged.count == 1 + 8 * 150)
        try await Self.checkOnce(stream, acknowledged: acknowledged.all, replica: writer)
        #expect(try await replayed(stream).tags.count == 1 + 8 * 150)
        await writer.close()
    }

    // MARK: The server

    /// psql as the cluster's superuser, through its Unix socket (the test role cannot lift a
    /// connection limit it cannot connect past).
    static func superuserSQL(_ text: String) async throws {
        let folder = try TestServer.folder()
        let port = try String(contentsOfFile: folder + "/port", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let result = try await run(
            "psql", ["-X", "-q", "-h", folder, "-p", port, "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c", text])
        guard result.status == 0 else { throw ProcessFailure(description: "psql: \(result.errors)") }
    }

    @Test("a full connection table for a while: dispatches wait and succeed, the replica does not stop")
    func fullConnectionTable() async throws {
        let stream = try TestServer.stream("full")
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        let follower = try await ReplicatedStore.follow(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        try await writer.dispatch(Add(by: 1, tag: "before"))
        // No new session may start ("too many connections", 53300), and the open ones end.
        try await Self.superuserSQL("ALTER DATABASE reduxstore CONNECTION LIMIT 0")
        let unlimit = Task {
            try await Task.sleep(for: .seconds(3))
            try await Self.superuserSQL("ALTER DATABASE reduxstore CONNECTION LIMIT -1")
        }
        do {
            try await Self.superuserSQL(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'reduxstore' AND pid <> pg_backend_pid()")
            let started = ContinuousClock.now
            let version = try await writer.dispatch(Add(by: 1, tag: "during"))
            #expect(version == 2)
            #expect(started.duration(to: .now) > .seconds(1), "the table was full for a while")
            try await unlimit.value
        } catch {
            try? await Self.superuserSQL("ALTER DATABASE reduxstore CONNECTION LIMIT -1")
            throw error
        }
        for index in 0..<20 { try await writer.dispatch(Add(by: 1, tag: "after-\(index)")) }
        #expect(await writer.failure == nil)
        let deadline = ContinuousClock.now + .seconds(20)
        while follower.store.version < 22, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(await follower.failure == nil)
        #expect(follower.store.version == 22)
        try await Self.checkOnce(
            stream, acknowledged: ["before", "during"] + (0..<20).map { "after-\($0)" }, replica: writer)
        await writer.close()
        await follower.close()
    }

    @Test("opening and following while no session may start: they wait for the server, then succeed")
    func openDuringFullConnectionTable() async throws {
        let stream = try TestServer.stream("open-full")
        try await Self.superuserSQL("ALTER DATABASE reduxstore CONNECTION LIMIT 0")
        let unlimit = Task {
            try await Task.sleep(for: .seconds(2))
            try await Self.superuserSQL("ALTER DATABASE reduxstore CONNECTION LIMIT -1")
        }
        let started = ContinuousClock.now
        let writer: ReplicatedStore<Tally>
        let follower: ReplicatedStore<Tally>
        do {
            async let opening = ReplicatedStore.open(
                stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
            async let following = ReplicatedStore.follow(
                stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
            (writer, follower) = try await (opening, following)
            try await unlimit.value
        } catch {
            try? await Self.superuserSQL("ALTER DATABASE reduxstore CONNECTION LIMIT -1")
            throw error
        }
        #expect(started.duration(to: .now) > .seconds(1), "the table was full for a while")
        #expect(try await writer.dispatch(Add(by: 1, tag: "after")) == 1)
        try await Self.checkOnce(stream, acknowledged: ["after"], replica: writer)
        await writer.close()
        await follower.close()
    }

    @Test("every connection asks the server to bound its locks, statements and idle transactions")
    func serverBounds() async throws {
        let stream = try TestServer.stream("bounds")
        let connection = try await StreamConnection.connect(stream, logger: .init(label: "test"))
        var settings: [String] = []
        for name in ["lock_timeout", "statement_timeout", "idle_in_transaction_session_timeout"] {
            for row in try await connection.rows(PostgresQuery(unsafeSQL: "SHOW \(name)"), logger: .init(label: "test")) {
                settings.append(try row.decode(String.self))
            }
        }
        try await connection.close()
        #expect(settings == ["5s", "9s", "10s"])
        // The appending session: no statement timeout, which would cut off a commit's wait for
        // a synchronous standby and have it answered as done.
        let appending = try await StreamConnection.connect(stream, appends: true, logger: .init(label: "test"))
        var statementTimeout: [String] = []
        for row in try await appending.rows(PostgresQuery(unsafeSQL: "SHOW statement_timeout"), logger: .init(label: "test")) {
            statementTimeout.append(try row.decode(String.self))
        }
        try await appending.close()
        #expect(statementTimeout == ["0"])
    }

    @Test("a stranger holding the stream's row lock delays a dispatch by its hold, not for good")
    func lockHeldByAnother() async throws {
        let stream = try TestServer.stream("locked")
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        try await writer.dispatch(Add(by: 1, tag: "before"))
        let holder = try RunningProcess("psql", [
            try TestServer.url(), "-X", "-q", "-c",
            "BEGIN; SELECT version FROM \(stream.schema).streams WHERE name = \(TestServer.literal(stream.stream)) FOR UPDATE; SELECT pg_sleep(7); COMMIT;",
        ])
        try await Task.sleep(for: .milliseconds(500))
        let started = ContinuousClock.now
        let version = try await writer.dispatch(Add(by: 1, tag: "after"))
        let waited = started.duration(to: .now)
        let held = await holder.finish()
        #expect(held.status == 0, "\(held.errors)")
        #expect(version == 2)
        #expect(waited > .seconds(5) && waited < .seconds(20), "waited \(waited)")
        #expect(await writer.failure == nil)
        try await Self.checkOnce(stream, acknowledged: ["before", "after"], replica: writer)
        await writer.close()
    }

    @Test("a writer stopped with SIGSTOP in the middle of its commits holds nobody up")
    func stoppedWriter() async throws {
        let stream = try TestServer.stream("stopped")
        let url = try TestServer.url()
        let victim = try RunningProcess(replicaCheck, ["write", url, stream.stream, "victim", "3000", "16", "3400"])
        let deadline = ContinuousClock.now + .seconds(60)
        while acknowledged(victim.outputSoFar).count < 300, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(2))
        }
        victim.kill(SIGSTOP)
        let writer = try await ReplicatedStore.open(
            stream, reducers: [tallyReducer], initialState: Tally(), actions: tallyActions)
        var slowest = Duration.zero
        var mine: [String] = []
        let stoppedUntil = ContinuousClock.now + .seconds(8)
        var index = 0
        while ContinuousClock.now < stoppedUntil || index < 400 {
            let started = ContinuousClock.now
            try await writer.dispatch(Add(by: 1, tag: "other-\(index)"))
            slowest = max(slowest, started.duration(to: .now))
            mine.append("other-\(index)")
            index += 1
            if index >= 400 { try await Task.sleep(for: .milliseconds(20)) }
        }
        victim.kill(SIGCONT)
        let done = await victim.finish()
        #expect(done.status == 0, "\(done.errorsToShow)")
        // The bound is the server's lock timeout; a stopped writer holds no lock at all.
        #expect(slowest < .seconds(2), "a dispatch waited \(slowest) for the stopped writer")
        #expect(mine.count >= 400)
        let replay = try await replayed(stream)
        try await Self.checkOnce(stream, acknowledged: acknowledged(done.output) + mine, replica: writer)
        #expect(acknowledged(done.output).count == 3000)
        // It stopped at some version past 3,400: its state is the stream's through that version.
        let victimState = try printedState(done.output)
        #expect(victimState.count >= 3400)
        #expect(victimState == (try await replayed(stream, through: victimState.count).tally))
        #expect(replay.tags.count == 3000 + mine.count)
        await writer.close()
    }

    @Test("the server stopped as in a crash during slowed commits, with four writers racing, again and again (twenty times under scripts/test --all): what was acknowledged is there once, and every replica equals the replay")
    func crashDuringCommits() async throws {
        let folder = try TestServer.folder()
        let url = try TestServer.url()
        // Commits slowed at their end: a deferred trigger, for the streams of this test only.
        try await TestServer.sql("""
            CREATE OR REPLACE FUNCTION reduxstore.slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.stream LIKE 'crash-%' THEN PERFORM pg_sleep(0.002); END IF; RETURN NULL; END $$;
            DROP TRIGGER IF EXISTS slow_commit ON reduxstore.actions;
            CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON reduxstore.actions
                DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION reduxstore.slow_commit();
            """)
        defer {
            Task { try? await TestServer.sql("DROP TRIGGER IF EXISTS slow_commit ON reduxstore.actions") }
        }
        for round in 0..<TestServer.rounds(quick: 5, thorough: 20) {
            let stream = try TestServer.stream("crash-\(round)")
            let perWriter = 150
            let writers = try (0..<4).map { index in
                try RunningProcess(replicaCheck, ["write", url, stream.stream, "w\(index)", "\(perWriter)", "8", "\(4 * perWriter)"])
            }
            let deadline = ContinuousClock.now + .seconds(60)
            let wanted = 20 + (round * 37) % 200
            while writers.reduce(0, { $0 + acknowledged($1.outputSoFar).count }) < wanted, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(1))
            }
            let before = writers.reduce(0) { $0 + acknowledged($1.outputSoFar).count }
            let crash = try await run("bash", ["scripts/postgres", "crash", folder])
            let after = writers.reduce(0) { $0 + acknowledged($1.outputSoFar).count }
            #expect(before > 0 && after < 4 * perWriter, "run \(round): the crash fell outside the load")
            #expect(crash.status == 0, "\(crash.errors)")
            var results: [ProcessResult] = []
            for writer in writers { results.append(await writer.finish()) }
            let replay = try await replayed(stream)
            #expect(Set(replay.tags).count == replay.tags.count, "run \(round): an action was written twice")
            #expect(replay.tags.count == 4 * perWriter, "run \(round)")
            // Every writer's outcome is shown, a failed one's too (its state line is missing).
            for (index, result) in results.enumerated() {
                let writer = "run \(round), writer w\(index)"
                #expect(result.status == 0, "\(writer): \(result.errorsToShow)")
                let acked = acknowledged(result.output)
                #expect(acked.count == perWriter, "\(writer): \(acked.count) acknowledged")
                #expect(Set(acked).isSubset(of: Set(replay.tags)), "\(writer): acknowledged but not in the stream")
                if result.status == 0 {
                    #expect(try printedState(result.output) == replay.tally, "\(writer): a replica differs from the replay")
                }
            }
        }
        try await TestServer.sql("DROP TRIGGER IF EXISTS slow_commit ON reduxstore.actions")
    }

    // MARK: States

    @Test("two processes whose states hold sets and dictionaries with non-string keys agree at every snapshot")
    func setsAcrossProcesses() async throws {
        #expect(ProcessInfo.processInfo.environment["SWIFT_DETERMINISTIC_HASHING"] == nil,
                "with deterministic hashing this test would prove nothing")
        let stream = try TestServer.stream("sets")
        let url = try TestServer.url()
        let writers = try (0..<2).map { index in
            try RunningProcess(replicaCheck, ["sets", url, stream.stream, "s\(index)", "150", "300"])
        }
        var results: [ProcessResult] = []
        for writer in writers { results.append(await writer.finish()) }
        for result in results { #expect(result.status == 0, "\(result.errorsToShow)") }
        let states = results.map { $0.output.split(separator: "\n").last { $0.hasPrefix("state ") } }
        #expect(states[0] != nil)
        #expect(states[0] == states[1])
        let snapshots = try await TestServer.sql(
            "SELECT count(*) FROM \(stream.schema).snapshots WHERE stream = \(TestServer.literal(stream.stream))")
        #expect(Int(snapshots[0][0]) ?? 0 >= 3)
    }
}
}
