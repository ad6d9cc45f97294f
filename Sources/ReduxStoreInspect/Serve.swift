import ArgumentParser
import Foundation
import ReduxStore
import ReduxStoreInspectKit
#if canImport(ReduxStoreInspector)
import ReduxStoreInspector
#endif

// MARK: - serve

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Open a recorded journal in the live inspector's page.",
        discussion: """
            Example:
              reduxstore-inspect serve app.journal --state base.json
            serves the page of ReduxStoreInspector on loopback and prints its address (with its \
            token): the journal's actions as the log, each with its payload, source and patch; \
            with --state (the state before the journal's first entry, or a saved state at a \
            version the journal continues) also the state at every version and the diff between \
            any two, rebuilt from the patches (record the journal with patches). Nothing can be \
            restored or dispatched. Runs until interrupted (Ctrl-C).
            """)

    @Argument(help: "The journal file.")
    var journal: String

    @Option(help: "The state the journal starts from: a saved state or a JSON file.")
    var state: String?

    @Option(help: "The address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one.")
    var port = 0

    func run() throws {
        #if canImport(ReduxStoreInspector)
        // Blocked before any thread starts, so that every thread inherits the mask and the
        // signal waits for sigwait below instead of ending the process mid-answer.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        var inspector: StoreInspector?
        try reporting {
            let base = try state.map { (path) throws(StoreError) in try JSONDocument(contentsOf: path) }
            let access = try JournalAccess(journal: journal, base: base)
            var options = InspectorOptions()
            options.host = host
            options.port = port
            options.keptActions = access.recorded.count
            options.keptVersions = 0
            let chosen = options
            let started = blockingWait { try await StoreInspector(access: access, options: chosen) }
            switch started {
            case .success(let value): inspector = value
            case .failure(let error as StoreError): throw error
            case .failure(let error): throw StoreError(.io, "\(error)")
            }
            let known = access.keptVersions
            let states = known.isEmpty ? "no states (give --state)" : "states of versions \(known.first!)–\(known.last!)"
            // Unbuffered: a script reading the address gets it now.
            FileHandle.standardOutput.write(Data("""
                \(journal): \(access.recorded.count) actions, \(states)
                inspect at \(inspector!.url)

                """.utf8))
        }
        var received: Int32 = 0
        sigwait(&signals, &received)
        if let inspector { _ = blockingWait { await inspector.stop() } }
        #else
        throw ValidationError("this reduxstore-inspect was built without the live inspector (REDUXSTORE_CORE_ONLY)")
        #endif
    }
}

#if canImport(ReduxStoreInspector)
/// A recorded journal as the inspector's store: its lines are the log; with a base state, the
/// state at each version is rebuilt from the patches (from a checkpoint every
/// ``checkpointEvery`` versions, so that memory stays near the journal's size).
final class JournalAccess: StoreAccess {
    static let checkpointEvery: UInt64 = 256

    let name: String
    let recorded: [LoggedChange]
    /// The last version of the journal (or the base's, for an empty one).
    let version: UInt64
    /// The versions whose state can be rebuilt: from the base's to the last with a patch chain.
    let keptVersions: [UInt64]
    /// States at checkpoint versions, and each version's operations (by version).
    private let checkpoints: [UInt64: JSONValue]
    private let operations: [UInt64: [JSONPatch.Operation]]
    var isLive: Bool { false }

    init(journal path: String, base: JSONDocument?) throws(StoreError) {
        var changes: [PlainChange] = []
        var operations: [UInt64: [JSONPatch.Operation]] = [:]
        var batchLast: [UInt64: UInt64] = [:]
        try JournalReader.read(path) { (line) throws(StoreError) -> Bool in
            // The entry's own errors name its line; so does a patch nested too deep.
            let patch = try line.patch()
            if let patch {
                do throws(StoreError) {
                    try Inspector.checkNesting(patch)
                } catch {
                    throw StoreError(error.kind, "\(line.place): \(error.message)")
                }
                operations[line.version] = patch
            }
            changes.append(PlainChange(
                version: line.version, identifier: line.identifier, payload: try line.payload(),
                typed: line.isTyped, patch: try patch.map { (patch) throws(StoreError) in try JSONValue(encoding: patch) },
                source: line.source, batch: line.batch.map { $0...$0 }, time: line.time))
            if let first = line.batch { batchLast[first] = line.version }
            return true
        }
        // A batch's bounds: its first version (on each line) and its last (the last line of it).
        for index in changes.indices {
            if let first = changes[index].batch?.lowerBound, let last = batchLast[first] {
                changes[index].batch = first...last
            }
        }
        name = "journal \(path)"
        recorded = changes.map { .plain($0) }
        self.operations = operations

        // The states: from the base's version, as far as the patches go without a hole.
        var checkpoints: [UInt64: JSONValue] = [:]
        var kept: [UInt64] = []
        if let base {
            let start = base.version ?? (changes.first.map { $0.version - 1 } ?? 0)
            var document = base.value
            var at = start
            checkpoints[at] = document
            kept.append(at)
            for change in changes where change.version > at {
                guard change.version == at + 1, let patch = operations[change.version] else { break }
                do throws(StoreError) {
                    document = try JSONPatch.apply(patch, to: document)
                } catch {
                    throw StoreError(error.kind, "\(path): version \(change.version): \(error.message)")
                }
                at = change.version
                kept.append(at)
                if at % Self.checkpointEvery == 0 { checkpoints[at] = document }
            }
            if changes.contains(where: { $0.version > start }), kept.count == 1, changes.first!.version > start + 1 {
                throw StoreError(
                    .invalidArgument,
                    "\(path): the journal starts at version \(changes.first!.version), after the base state's version \(start)")
            }
        }
        self.checkpoints = checkpoints
        keptVersions = kept
        version = changes.last?.version ?? base?.version ?? 0
    }

    func state(at version: UInt64?) throws(StoreError) -> (version: UInt64, value: JSONValue) {
        guard let first = keptVersions.first, let last = keptVersions.last else {
            throw StoreError(.invalidArgument, "no states: serve the journal with --state BASE (the state it starts from)")
        }
        let version = version ?? last
        guard (first...last).contains(version) else { throw Self.notKept(version, kept: keptVersions) }
        var at = version
        while checkpoints[at] == nil { at -= 1 }
        var document = checkpoints[at]!
        while at < version {
            at += 1
            document = try JSONPatch.apply(operations[at]!, to: document)
        }
        return (version, document)
    }

    func restore(version: UInt64) throws(StoreError) -> UInt64 {
        throw StoreError(.invalidArgument, "a recorded journal cannot be restored")
    }

    func dispatch(identifier: String, payload: JSONValue?) throws(StoreError) -> UInt64 {
        throw StoreError(.invalidArgument, "a recorded journal takes no actions")
    }
}
#endif
