import Foundation
import ReduxStore
import ReduxStorePostgres
import ReduxStoreTestSupport
import Testing

extension ReplicationTests {
@Suite("The README's replication example")
struct ReadmeExampleTests {
    /// The README's program, as written there (its types local to this function), run as one of
    /// two processes would run it; what it prints, without printing.
    static func readmeProgram() async throws -> String {
        var printed = ""
        func print(_ items: Any...) { printed = items.map { "\($0)" }.joined(separator: " ") }

        struct Tally: Codable, Sendable { var count = 0 }
        struct Add: Action, Codable { var amount: Int; var identifier: String { "tally.add" } }
        let add: Reducer<Tally> = { state, action in
            if let add = action as? Add { state.count += add.amount }
        }
        var types = ActionTypes()
        types.register(Add.self, for: "tally.add")   // how the other processes' payloads decode

        // The server: PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE (or a URL instead of "").
        let stream = try PostgresStream(connection: "", stream: "tally")
        let tally = try await ReplicatedStore.open(stream, reducers: [add], initialState: Tally(), actions: types)
        for _ in 0..<1_000 {
            try await tally.dispatch(Add(amount: 1))   // returns once committed and applied here
        }
        try await tally.catchUp()                      // and what the other process committed meanwhile
        print("tally:", tally.store.currentState().count)
        await tally.close()
        return printed
    }

    /// The README's follower on a standby, as written there after the program's types and
    /// stream; `CommandLine.arguments[1]` is the standby's URL.
    static func readmeStandbyProgram(standby url: String) async throws -> String {
        var printed = ""
        func print(_ items: Any...) { printed = items.map { "\($0)" }.joined(separator: " ") }
        let CommandLine = (arguments: ["readme-standby", url], ())

        struct Tally: Codable, Sendable { var count = 0 }
        struct Add: Action, Codable { var amount: Int; var identifier: String { "tally.add" } }
        let add: Reducer<Tally> = { state, action in
            if let add = action as? Add { state.count += add.amount }
        }
        var types = ActionTypes()
        types.register(Add.self, for: "tally.add")
        let stream = try PostgresStream(connection: "", stream: "tally")

        // (With the tally's types and stream above.)
        var options = ReplicationOptions()
        options.standbyConnection = CommandLine.arguments[1]   // the standby's URL; writes go to the primary
        let watcher = try await ReplicatedStore.follow(stream, reducers: [add], initialState: Tally(),
                                                       actions: types, options: options)
        try await watcher.catchUp()                            // as far as the standby has replayed
        let lag = await watcher.lag     // versions behind, of them the standby's own, why while reads fail
        print("tally:", watcher.store.currentState().count, "standby behind by", lag.standbyVersions ?? 0)
        await watcher.close()
        return printed
    }

    @Test("two copies of the README's program at once: each adds 1,000 to one tally, none lost")
    func twoAtOnce() async throws {
        // The README's program finds the server in the PG* variables; this suite's server is
        // the one the test command started.
        let url = try #require(URLComponents(string: try TestServer.url()))
        let variables = [
            "PGHOST": url.host ?? "", "PGPORT": "\(url.port ?? 5432)", "PGUSER": url.user ?? "",
            "PGPASSWORD": url.password ?? "", "PGDATABASE": String(url.path.dropFirst()),
        ]
        for (name, value) in variables { setenv(name, value, 1) }
        defer { for name in variables.keys { unsetenv(name) } }

        struct Count: Codable, Sendable { var count = 0 }
        struct AddToCount: Action, Codable { var amount: Int; var identifier: String { "tally.add" } }
        var countTypes = ActionTypes()
        countTypes.register(AddToCount.self, for: "tally.add")
        let counting: Reducer<Count> = { state, action in
            if let add = action as? AddToCount { state.count += add.amount }
        }
        let stream = try PostgresStream(connection: TestServer.url(), stream: "tally")
        let before = try await ReplicatedStore.follow(
            stream, reducers: [counting], initialState: Count(), actions: countTypes)
        let start = (version: before.store.version, count: before.store.currentState().count)
        await before.close()

        async let first = Self.readmeProgram()
        async let second = Self.readmeProgram()
        let printed = try await [first, second]
        for line in printed {
            #expect(line.hasPrefix("tally: "), "printed \(line)")
            let count = Int(line.dropFirst("tally: ".count)) ?? -1
            #expect(count >= start.count + 1_000 && count <= start.count + 2_000, "printed \(line)")
        }

        // A third process reading the stream: both programs' actions, each once.
        let after = try await ReplicatedStore.follow(
            stream, reducers: [counting], initialState: Count(), actions: countTypes)
        #expect(after.store.version == start.version + 2_000)
        #expect(after.store.currentState().count == start.count + 2_000)
        await after.close()
        let replayed = try await TestServer.sql(
            "SELECT count(*), count(DISTINCT (writer, seq)) FROM reduxstore.actions WHERE stream = 'tally'")
        #expect(replayed.first?.first == replayed.first?.last, "no action written twice")

        // The README's follower on the standby, once the standby replayed both programs.
        let standby = try TestServer.standbyURL()
        try await StandbyTests.standbyReplayed(on: standby, from: TestServer.url())
        let watched = try await Self.readmeStandbyProgram(standby: standby)
        #expect(watched == "tally: \(start.count + 2_000) standby behind by 0")
    }

    @Test("the README's Swift blocks for replication are this suite's programs, line for line")
    func readmeBlock() throws {
        let missing = try #require(
            readmeLinesMissing(fromTest: #filePath, blockImporting: "ReduxStorePostgres", orMentioning: "ReplicatedStore"))
        #expect(missing.isEmpty, "the README's lines not in \(#fileID): \(missing)")
    }
}
}
