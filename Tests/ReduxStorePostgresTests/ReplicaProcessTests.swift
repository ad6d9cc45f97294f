import Foundation
import ReduxStore
import ReduxStorePostgres
import ReduxStoreTestSupport
import Testing

/// Several processes on one stream (Tests/ReplicaCheck): racing writers, a writer killed in the
/// middle of its commits, a program that dispatches to a replica's store.
extension ReplicationTests {
@Suite("Processes sharing a stream")
struct ReplicaProcessTests {
    @Test("writer processes racing: every one ends with the state of a replay of the stream", arguments: [2, 4])
    func racingWriters(processes: Int) async throws {
        let stream = try TestServer.stream("race-\(processes)")
        let url = try TestServer.url()
        // 20,000 actions in all, 16 in flight per process: enough for the writers to collide on
        // the stream's head thousands of times, and for the group commits to interleave.
        let total = 20_000
        let perProcess = total / processes
        let writers = try (0..<processes).map { index in
            try RunningProcess(replicaCheck, ["write", url, stream.stream, "p\(index)", "\(perProcess)", "16", "\(total)"])
        }
        var results: [ProcessResult] = []
        for writer in writers { results.append(await writer.finish()) }
        for result in results { #expect(result.status == 0, "\(result.errorsToShow)") }
        let replay = try await replayed(stream)
        #expect(replay.tags.count == total)
        #expect(Set(replay.tags).count == total, "an action was written twice")
        for result in results {
            #expect(acknowledged(result.output).count == perProcess)
            #expect(try printedState(result.output) == replay.tally)
        }
    }

    @Test("a writer killed in the middle of its group commits: what it acknowledged is there once, and the others go on")
    func writerKilled() async throws {
        let stream = try TestServer.stream("killed")
        let url = try TestServer.url()
        let victim = try RunningProcess(replicaCheck, ["write", url, stream.stream, "victim", "1000000", "16"])
        let survivor = try RunningProcess(replicaCheck, ["write", url, stream.stream, "survivor", "3000", "16"])
        // Kill it once it has committed a good many.
        let deadline = ContinuousClock.now + .seconds(60)
        while acknowledged(victim.outputSoFar).count < 1000, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        victim.kill(SIGKILL)
        let killed = await victim.finish()
        #expect(killed.signaled)
        let done = await survivor.finish()
        #expect(done.status == 0, "\(done.errorsToShow)")
        let replay = try await replayed(stream)
        #expect(Set(replay.tags).count == replay.tags.count, "an action was written twice")
        let stored = Set(replay.tags)
        #expect(Set(acknowledged(killed.output)).isSubset(of: stored), "an acknowledged action is missing")
        #expect(Set(acknowledged(done.output)).isSubset(of: stored))
        // The survivor stopped at some version: its state is the stream's through that version.
        let survivorState = try printedState(done.output)
        #expect(try await replayed(stream, through: survivorState.count).tally == survivorState)

        let follower = try await run(replicaCheck, ["follow", url, stream.stream, "\(replay.tags.count)"])
        #expect(try printedState(follower.output) == replay.tally)
    }

    @Test("dispatching to a replica's store stops the program with a message that says why")
    func localDispatchTraps() async throws {
        let stream = try TestServer.stream("misuse")
        let result = try await run(replicaCheck, ["misuse", try TestServer.url(), stream.stream])
        #expect(result.signaled)
        #expect(!result.output.contains("dispatched locally"))
        #expect(result.errors.contains("ReplicatedStore.dispatch"))
        #expect(try await TestServer.sql(
            "SELECT count(*) FROM \(stream.schema).actions WHERE stream = \(TestServer.literal(stream.stream))") == [["0"]])
    }
}
}
