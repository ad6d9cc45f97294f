import Foundation
import ReduxStore
import ReduxStorePostgres
import ReduxStoreTestSupport
import Testing

/// The throwaway PostgreSQL server the tests run against: `scripts/test` starts one
/// (`scripts/postgres start`) and names it in `REDUXSTORE_TEST_POSTGRES`. Without it the tests
/// fail, saying so: they never pass by skipping.
enum TestServer {
    struct Missing: Error, CustomStringConvertible {
        var description: String {
            "REDUXSTORE_TEST_POSTGRES (or _STANDBY) is not set: run the tests through scripts/test, or start a server and its standby with `eval \"$(bash scripts/postgres start-pair /tmp/pg)\"`"
        }
    }

    static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["REDUXSTORE_TEST_POSTGRES"], !url.isEmpty else {
            throw Missing()
        }
        return url
    }

    /// The cluster's folder, for `scripts/postgres restart`.
    static func folder() throws -> String {
        guard let folder = ProcessInfo.processInfo.environment["REDUXSTORE_TEST_POSTGRES_DIR"], !folder.isEmpty else {
            throw Missing()
        }
        return folder
    }

    /// How many times a test that repeats a race runs it: `thorough` under `scripts/test --all`
    /// (which sets `REDUXSTORE_TEST_THOROUGH`), `quick` under the contributor's `scripts/test`.
    static func rounds(quick: Int, thorough: Int) -> Int {
        ProcessInfo.processInfo.environment["REDUXSTORE_TEST_THOROUGH"] == "1" ? thorough : quick
    }

    /// A stream of its own for one test.
    static func stream(_ name: String, schema: String = "reduxstore") throws -> PostgresStream {
        try PostgresStream(connection: url(), stream: "\(name)-\(UInt32.random(in: 0...UInt32.max))", schema: schema)
    }

    /// The hot standby of the server (`scripts/postgres start-pair`), in
    /// `REDUXSTORE_TEST_POSTGRES_STANDBY`.
    static func standbyURL() throws -> String {
        guard let url = ProcessInfo.processInfo.environment["REDUXSTORE_TEST_POSTGRES_STANDBY"], !url.isEmpty else {
            throw Missing()
        }
        return url
    }

    /// Runs SQL through psql, on the server or on `server`; returns its unaligned rows, one line
    /// each, fields split by `|`.
    @discardableResult
    static func sql(_ text: String, on server: String? = nil) async throws -> [[String]] {
        let result = try await run("psql", [ try server ?? url(), "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", text])
        guard result.status == 0 else {
            throw ProcessFailure(description: "psql failed (\(result.status)): \(result.errors)")
        }
        return result.output.split(separator: "\n").map { $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init) }
    }

    /// A string literal for SQL text.
    static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }
}

struct ProcessFailure: Error, CustomStringConvertible { let description: String }

struct ProcessResult: Sendable {
    let status: Int32
    let output: String
    let errors: String
    /// Whether the process ended by a signal (`status` is then the signal).
    let signaled: Bool

    /// What a failed check shows of the standard error: its head, where a Swift trap says why
    /// (`Fatal error: …`), and its tail, past the backtrace's registers and images.
    var errorsToShow: String {
        errors.count <= 4_000 ? errors : "\(errors.prefix(2_500))\n…\n\(errors.suffix(1_500))"
    }
}

/// A started process whose output goes to files until it ends. (posix_spawn and waitpid:
/// Foundation's `Process.waitUntilExit` spins a core, and waits for as long as anything the
/// process started, such as a restarted server, holds its pipes.)
final class RunningProcess: Sendable {
    let pid: pid_t
    private let outputPath: String
    private let errorsPath: String

    init(_ executable: String, _ arguments: [String]) throws {
        let folder = temporaryFolder()
        outputPath = folder + "/stdout"
        errorsPath = folder + "/stderr"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errorsPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, executable, &actions, nil, argv, environ)
        guard status == 0 else {
            throw ProcessFailure(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        self.pid = pid
    }

    /// What it printed so far.
    var outputSoFar: String { readText(outputPath) ?? "" }

    func kill(_ signal: Int32 = SIGKILL) { _ = Glibc.kill(pid, signal) }

    /// Waits for the end on a thread of its own (a blocking wait on the cooperative pool would
    /// starve it: 2 threads on 2 cores).
    func finish() async -> ProcessResult {
        await withCheckedContinuation { continuation in
            Thread { [self] in
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                let signaled = (status & 0x7f) != 0 && (status & 0x7f) != 0x7f
                let result = ProcessResult(
                    status: signaled ? status & 0x7f : (status >> 8) & 0xff, output: readText(outputPath) ?? "",
                    errors: readText(errorsPath) ?? "", signaled: signaled)
                unlink(outputPath)
                unlink(errorsPath)
                rmdir(String(outputPath.dropLast("/stdout".count)))
                continuation.resume(returning: result)
            }.start()
        }
    }
}

func run(_ executable: String, _ arguments: [String]) async throws -> ProcessResult {
    try await RunningProcess(executable, arguments).finish()
}


// MARK: The shared shape (the same as Tests/ReplicaCheck's)

/// Order-sensitive (the digest): equal tallies mean the same actions in the same order.
struct Tally: Codable, Equatable, Sendable {
    var count = 0
    var total = 0
    var digest: UInt64 = 14_695_981_039_346_656_037
}

struct Add: Action, Codable, Equatable {
    var by: Int
    var tag: String
    var identifier: String { "add" }
}

let tallyReducer: Reducer<Tally> = { state, action in
    guard let add = action as? Add else { return }
    state.count += 1
    state.total += add.by
    for byte in add.tag.utf8 { state.digest = (state.digest ^ UInt64(byte)) &* 1_099_511_628_211 }
}

/// Another program's reducer: the same actions, another result (a divergence to find).
let offByOneReducer: Reducer<Tally> = { state, action in
    tallyReducer(&state, action)
    state.total += 1
}

/// What stopped `replica`, once it stopped (or nil after `limit`).
func stopped<State>(_ replica: ReplicatedStore<State>, within limit: Duration) async throws -> ReplicationError? {
    let deadline = ContinuousClock.now + limit
    var failure = await replica.failure
    while failure == nil, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(10))
        failure = await replica.failure
    }
    return failure
}

let tallyActions: ActionTypes = {
    var actions = ActionTypes()
    actions.register(Add.self, for: "add")
    return actions
}()

/// The stream's actions folded by one process from version 1 (through `version`, by default
/// all): what every replica must equal.
func replayed(_ stream: PostgresStream, through version: Int = .max) async throws -> (tally: Tally, tags: [String]) {
    let rows = try await TestServer.sql(
        "SELECT payload->>'by', payload->>'tag' FROM \(stream.schema).actions WHERE stream = \(TestServer.literal(stream.stream)) AND version <= \(version) ORDER BY version")
    var tally = Tally()
    var tags: [String] = []
    for row in rows {
        tallyReducer(&tally, Add(by: Int(row[0])!, tag: row[1]))
        tags.append(row[1])
    }
    return (tally, tags)
}

/// The state a replica-check process printed last (`state {json}`).
func printedState(_ output: String) throws -> Tally {
    guard let line = output.split(separator: "\n").last(where: { $0.hasPrefix("state ") }) else {
        throw ProcessFailure(description: "no state line in: \(output.suffix(2000))")
    }
    return try JSONDecoder().decode(Tally.self, from: Data(line.dropFirst(6).utf8))
}

/// The tags a replica-check writer printed as acknowledged.
func acknowledged(_ output: String) -> [String] {
    output.split(separator: "\n").filter { $0.hasPrefix("ack ") }.map { String($0.split(separator: " ")[1]) }
}

let replicaCheck = siblingExecutable("reduxstore-replica-check")

/// `lanes` tasks dispatching `count` actions each to `writer`, tagged `"\(prefix)\(lane)-\(index)"`,
/// each tag recorded in `acknowledged` once its dispatch returned.
func dispatchLoad(
    _ writer: ReplicatedStore<Tally>, lanes: Int, count: Int, prefix: String, into acknowledged: Recorder<String>
) -> Task<Void, any Error> {
    Task {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    for index in 0..<count {
                        let tag = "\(prefix)\(lane)-\(index)"
                        try await writer.dispatch(Add(by: 1, tag: tag))
                        acknowledged.append(tag)
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
