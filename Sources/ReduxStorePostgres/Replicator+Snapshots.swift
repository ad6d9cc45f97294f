internal import CJSONC
import Logging
import PostgresNIO
import ReduxStore
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Replicator {
    // MARK: Snapshots

    /// The state's canonical JSON text (compact, object keys sorted by code point) and its
    /// SHA-256 in hex: what snapshots store and compare. `nil`, logged, for a state no process
    /// could start from: one that does not encode as JSON (nested deeper than
    /// `StoreLimits.maximumNestingDepth`, a NaN a C reducer put in) or whose text is longer
    /// than `StoreLimits.maximumJSONTextSize`. Every replica holds that same state at that
    /// version, so none stores or compares a snapshot there, and every one goes on; a new
    /// process starts from an older snapshot, or from the first action.
    func snapshotState(at version: UInt64) -> (text: String, hash: String)? {
        let text: String
        do {
            text = try target.canonicalState()
        } catch {
            skipSnapshot(at: version, "the state does not encode as JSON: \(error.message)")
            return nil
        }
        guard text.utf8.count <= StoreLimits.maximumJSONTextSize else {
            skipSnapshot(
                at: version,
                "the state's JSON text of \(text.utf8.count) bytes is longer than the limit of \(StoreLimits.maximumJSONTextSize) bytes a process can start from")
            return nil
        }
        let digest = SHA256.hash(data: Array(text.utf8))
        return (text, digest.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined())
    }

    private func skipSnapshot(at version: UInt64, _ reason: String) {
        logger.warning(
            "ReduxStorePostgres: no snapshot at version \(version): \(reason); none is stored or compared there",
            metadata: ["stream": .string(stream.stream)])
    }

    /// Stores `state` as the snapshot at `version`, or compares it with the one stored there
    /// already; then applies the retention policy.
    func storeSnapshot(_ state: (text: String, hash: String), at version: UInt64) async throws(ReplicationError) {
        let stored = try await withConnection(.write) { (connection) async throws -> String? in
            var stored: String?
            for row in try await connection.rows(
                schema.storeSnapshot(stream.stream, version: version, state: state.text, hash: state.hash, writer: writer),
                logger: logger)
            {
                stored = try row.decode(String?.self)
            }
            for statement in schema.retain(stream.stream, kept: options.snapshotsKept, trimming: options.trimsActions) {
                _ = try await connection.rows(statement, logger: logger)
            }
            return stored
        }
        lastSnapshotTime = .now
        if let stored, stored != state.hash { throw divergence(at: version) }
    }

    /// Records that this process's hash at `version` is the stored snapshot's: a second process
    /// confirmed it, and a new process may start from it. Best effort: a confirmation lost only
    /// makes a new process start further back. A follower on a hot standby confirms nothing: it
    /// writes nothing, and puts no statement on the primary.
    func confirm(_ version: UInt64, hash: String) async {
        guard standby == nil else { return }
        _ = try? await withConnection(.write) { connection in
            try await connection.rows(
                schema.confirmSnapshot(stream.stream, version: version, hash: hash, writer: writer), logger: logger)
        }
    }

    /// How many such hashes are kept, waiting for their snapshots (about 100 bytes each).
    static let unverifiedLimit = 4_096

    /// Compares the hashes kept in ``unverified`` with the snapshots stored since.
    func checkSnapshots() async throws(ReplicationError) {
        guard !unverified.isEmpty else { return }
        let versions = unverified.keys.map { Int64(bitPattern: $0) }
        let stored = try await withConnection(.read) { (connection) async throws -> [(Int64, String, String?, Bool)] in
            var stored: [(Int64, String, String?, Bool)] = []
            for row in try await connection.rows(schema.snapshotHashes(stream.stream, versions: versions), logger: logger) {
                stored.append(try row.decode((Int64, String, String?, Bool).self))
            }
            return stored
        }
        for (version, hash, storedBy, confirmed) in stored {
            let version = UInt64(version)
            guard let mine = unverified.removeValue(forKey: version) else { continue }
            if mine != hash { throw divergence(at: version) }
            if !confirmed, storedBy != writer { await confirm(version, hash: hash) }
        }
    }

    func divergence(at version: UInt64) -> ReplicationError {
        fail(ReplicationError(
            .divergence, stream: stream.stream, version: version,
            "this replica's state differs from the snapshot stored at this version by another process: the reducers are not deterministic, or the processes run different reducers"))
    }

    /// Whether a snapshot is due by time: the newest this process stored (or started from) is
    /// older than ``ReplicationOptions/snapshotInterval``. The next group's last action is then
    /// marked for one, so that every replica compares it.
    func snapshotDueByTime() -> Bool {
        options.snapshotInterval > 0 && lastSnapshotTime.duration(to: .now).seconds >= options.snapshotInterval
    }
}
