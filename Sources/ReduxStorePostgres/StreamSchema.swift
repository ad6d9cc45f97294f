import PostgresNIO
import Logging

/// The library's tables in the schema a ``PostgresStream`` names, and the statements that read and
/// write them. Every name in SQL text is quoted here; every value travels as a bound parameter.
///
/// Schema version 3 (``migrations``):
/// - `streams (name text PRIMARY KEY, version bigint, created timestamptz)`: a stream's newest
///   version. An append updates its row, so writers of one stream take their turn on that row's
///   lock, for the length of one call on the server (never across a round trip to a client).
/// - `actions (stream, version, identifier, payload json, time, source, writer, seq, snapshot)`,
///   keyed by (stream, version): the append-only history. `payload` is `json`, which keeps the
///   text as the writer sent it (`jsonb` would rewrite its numbers: `1e16`, `-0.0`, `1E2`), so
///   every process applies the same text. `writer` and `seq` name the process and dispatch that
///   wrote a row; `snapshot` says that its writer stores a snapshot at its version, so that
///   every replica that applies it keeps its own hash there to compare, whenever it is stored.
/// - `writers (stream, writer, seq, version)`, keyed by (stream, writer): each writer's newest
///   stored dispatch and its version, the evidence that lets the procedure recognize a request
///   repeated or delivered late. Retention never deletes it, so it outlives the actions a trim
///   removes.
/// - `snapshots (stream, version, state json, hash, time, writer, confirmed_by)`, keyed by
///   (stream, version): `hash` is the SHA-256, in hex, of the state's canonical JSON text (no
///   spaces, object keys sorted by code point, unordered collections in a canonical order:
///   `ReduxStore.JSONValue(canonicallyEncoding:)`'s `description`), which every process computes
///   for itself at the versions snapshots are stored at and compares. `writer` stored it;
///   `confirmed_by` is the first other process whose own hash there was the same (`NULL`: none
///   yet). A new process starts only from a confirmed snapshot, where it can.
/// - `append(stream, identifiers, payloads, sources, writer, first_seq, INOUT last,
///   snapshot_every, snapshot_last)`: the procedure every append calls. It commits inside the call, so the
/// call's answer comes only
///   after the commit; see ``append(_:identifiers:payloads:sources:writer:firstSeq:)``.
/// - `migrations (version, applied)`: which of these steps ran.
///
/// Needs PostgreSQL 11 or later (procedures that commit).
package struct StreamSchema: Sendable {
    /// The newest schema version this library knows how to use.
    static let version = 3

    let name: String
    /// `"schema"`, quoted for SQL text.
    let quoted: String

    init(_ name: String) {
        self.name = name
        quoted = "\"" + name.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\""
    }

    /// The steps, in order; step `n` brings the schema to version `n`.
    var migrations: [[String]] {
        [
            [
                """
                CREATE TABLE IF NOT EXISTS \(quoted).streams (
                    name text PRIMARY KEY,
                    version bigint NOT NULL DEFAULT 0,
                    created timestamptz NOT NULL DEFAULT now())
                """,
                """
                CREATE TABLE IF NOT EXISTS \(quoted).actions (
                    stream text NOT NULL,
                    version bigint NOT NULL,
                    identifier text NOT NULL,
                    payload jsonb NOT NULL,
                    time timestamptz NOT NULL DEFAULT now(),
                    source text,
                    writer text NOT NULL,
                    seq bigint NOT NULL,
                    PRIMARY KEY (stream, version))
                """,
                """
                CREATE TABLE IF NOT EXISTS \(quoted).snapshots (
                    stream text NOT NULL,
                    version bigint NOT NULL,
                    state jsonb NOT NULL,
                    hash text NOT NULL,
                    time timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (stream, version))
                """,
            ],
            [
                // Fails, naming the index, if a stream already holds one dispatch twice.
                "CREATE UNIQUE INDEX IF NOT EXISTS actions_writer_seq ON \(quoted).actions (stream, writer, seq)",
                appendProcedure,
            ],
            [
                // The evidence of each writer's dispatches, kept apart from the actions that a
                // trim deletes, and filled from the actions still there.
                """
                CREATE TABLE IF NOT EXISTS \(quoted).writers (
                    stream text NOT NULL,
                    writer text NOT NULL,
                    seq bigint NOT NULL,
                    version bigint NOT NULL,
                    PRIMARY KEY (stream, writer))
                """,
                """
                INSERT INTO \(quoted).writers (stream, writer, seq, version)
                    SELECT DISTINCT ON (stream, writer) stream, writer, seq, version
                    FROM \(quoted).actions ORDER BY stream, writer, seq DESC
                    ON CONFLICT DO NOTHING
                """,
                // The procedure finds a writer's dispatches in `writers` now, under the stream
                // row's lock: the index on every action is no longer read.
                "DROP INDEX IF EXISTS \(quoted).actions_writer_seq",
                // Text as written: every process applies the same numbers.
                "ALTER TABLE \(quoted).actions ALTER COLUMN payload TYPE json USING payload::text::json",
                "ALTER TABLE \(quoted).snapshots ALTER COLUMN state TYPE json USING state::text::json",
                "ALTER TABLE \(quoted).actions ADD COLUMN IF NOT EXISTS snapshot boolean NOT NULL DEFAULT false",
                "ALTER TABLE \(quoted).snapshots ADD COLUMN IF NOT EXISTS writer text, ADD COLUMN IF NOT EXISTS confirmed_by text",
                // The procedure takes two more arguments: a new one, not an overload of the old.
                "DROP PROCEDURE IF EXISTS \(quoted).append(text, text[], text[], text[], text, bigint, bigint)",
                appendProcedure,
            ],
        ]
    }

    /// The append, on the server. Under the stream row's lock, it looks up the writer's newest
    /// stored dispatch in `writers`:
    /// - the request's dispatches are newer: they are written at the versions after the
    ///   stream's head, and the writer's row moves to the last of them;
    /// - its last dispatch is the writer's newest stored one (the same request again, or one
    ///   delivered late): nothing is written, the answer is the version stored the first time,
    ///   and the writer's row is touched, so that this answer too commits only after the first
    ///   one is flushed (and replicated, with synchronous standbys) — a first commit cut off in
    ///   its wait for a standby is visible, and must not be answered before it is safe;
    /// - it is older still: the actions table answers while it holds them; once a trim took
    ///   them, the request is refused (SQLSTATE `RX001`) and nothing is written. A writer sends
    ///   its groups one after another, so only a request it gave up on can be that old.
    ///
    /// The rows it writes are marked `snapshot` at the versions its writer will store snapshots
    /// at: the multiples of `p_snapshot_every` (the writer's ``ReplicationOptions/snapshotEvery``,
    /// 0 for none) and, with `p_snapshot_last`, the group's last (a snapshot due by time).
    ///
    /// It commits with `synchronous_commit` at least `on`, whatever the role's or database's
    /// setting (`remote_apply` is kept): the answer comes after the WAL flush, and after the
    /// synchronous standbys confirmed when there are some. The `CALL` is answered after the
    /// commit: an answer is a durable append. (Followers are woken apart from it:
    /// ``notify(_:version:)``.)
    private var appendProcedure: String {
        // The body's quotes: a tag the schema's name does not hold.
        var tag = "$append$"
        while quoted.contains(tag) { tag = "$x" + tag.dropFirst() }
        return """
        CREATE OR REPLACE PROCEDURE \(quoted).append(
            p_stream text, p_identifiers text[], p_payloads text[], p_sources text[],
            p_writer text, p_first_seq bigint, INOUT p_last bigint DEFAULT NULL,
            p_snapshot_every bigint DEFAULT 0, p_snapshot_last boolean DEFAULT false)
        LANGUAGE plpgsql AS \(tag)
        DECLARE
            v_head bigint;
            v_count bigint := cardinality(p_identifiers);
            v_seq bigint;
            v_version bigint;
        BEGIN
            IF current_setting('synchronous_commit') <> 'remote_apply' THEN
                PERFORM set_config('synchronous_commit', 'on', true);
            END IF;
            SELECT version INTO v_head FROM \(quoted).streams WHERE name = p_stream FOR UPDATE;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'the stream''s row is missing from the streams table'
                    USING ERRCODE = 'no_data_found';
            END IF;
            SELECT seq, version INTO v_seq, v_version FROM \(quoted).writers
                WHERE stream = p_stream AND writer = p_writer;
            IF v_seq IS NULL OR p_first_seq > v_seq THEN
                UPDATE \(quoted).streams SET version = v_head + v_count WHERE name = p_stream;
                INSERT INTO \(quoted).actions (stream, version, identifier, payload, source, writer, seq, snapshot)
                    SELECT p_stream, v_head + a.ord, a.identifier, a.payload::json, nullif(a.source, ''),
                           p_writer, p_first_seq + a.ord - 1,
                           (p_snapshot_every > 0 AND (v_head + a.ord) % p_snapshot_every = 0)
                               OR (p_snapshot_last AND a.ord = v_count)
                    FROM unnest(p_identifiers, p_payloads, p_sources) WITH ORDINALITY
                        AS a(identifier, payload, source, ord);
                p_last := v_head + v_count;
                IF v_seq IS NULL THEN
                    INSERT INTO \(quoted).writers (stream, writer, seq, version)
                        VALUES (p_stream, p_writer, p_first_seq + v_count - 1, p_last);
                ELSE
                    UPDATE \(quoted).writers SET seq = p_first_seq + v_count - 1, version = p_last
                        WHERE stream = p_stream AND writer = p_writer;
                END IF;
            ELSIF p_first_seq + v_count - 1 = v_seq THEN
                p_last := v_version;
                UPDATE \(quoted).writers SET seq = v_seq WHERE stream = p_stream AND writer = p_writer;
            ELSE
                SELECT max(version) INTO p_last FROM \(quoted).actions
                    WHERE stream = p_stream AND writer = p_writer
                      AND seq >= p_first_seq AND seq < p_first_seq + v_count;
                IF p_last IS NULL THEN
                    RAISE EXCEPTION 'dispatches % to % of writer % are older than its newest stored one (%), and are not in the stream: a request given up on, delivered late; nothing was stored',
                        p_first_seq, p_first_seq + v_count - 1, p_writer, v_seq
                        USING ERRCODE = 'RX001';
                END IF;
            END IF;
            COMMIT;
        END
        \(tag)
        """
    }

    /// Creates the schema and runs the steps it lacks, all in one statement
    /// (``migrationStatement``): one round trip, one transaction under an advisory lock (two
    /// processes starting at once take turns), and no lock held across a round trip to this
    /// process. Idempotent.
    ///
    /// - Throws: ``ReplicationError/Kind/schema`` when the tables are newer than this library.
    func migrate(_ connection: PostgresConnection, logger: Logger) async throws {
        do {
            // Rewriting a long history may take long: the server bounds its lock waits, and this
            // process waits for the answer far longer than for a statement.
            _ = try await connection.rows(
                PostgresQuery(unsafeSQL: migrationStatement), logger: logger, timeout: Self.migrationTimeout)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "RX002" {
            throw ReplicationError(.schema, error.serverInfo?[.message] ?? "the tables are newer than this library")
        }
    }

    /// How long opening a stream waits for its migration's answer.
    static let migrationTimeout = Duration.seconds(600)

    /// Checks, reading only, that the server holds the library's tables at this library's
    /// version: what a follower on a hot standby does instead of ``migrate(_:logger:)``, which a
    /// standby refuses (the writers on the primary migrate, and the standby replays it).
    ///
    /// - Throws: ``ReplicationError/Kind/schema`` when the tables are missing, older or newer.
    func checkVersion(_ connection: PostgresConnection, logger: Logger) async throws {
        var bindings = PostgresBindings()
        bindings.append("\(quoted).migrations")
        var present = false
        for row in try await connection.rows(
            PostgresQuery(unsafeSQL: "SELECT to_regclass($1) IS NOT NULL", binds: bindings), logger: logger)
        {
            present = try row.decode(Bool.self)
        }
        guard present else {
            throw ReplicationError(
                .schema,
                "the server has no tables of the library in schema \"\(name)\": a writer opening a stream on the primary makes them, and its standbys replay them")
        }
        var current = 0
        for row in try await connection.rows(
            PostgresQuery(unsafeSQL: "SELECT coalesce(max(version), 0)::bigint FROM \(quoted).migrations"), logger: logger)
        {
            current = Int(try row.decode(Int64.self))
        }
        if current > Self.version {
            throw ReplicationError(
                .schema,
                "the tables in schema \"\(name)\" are at version \(current), newer than this library's \(Self.version): use a newer ReduxStorePostgres")
        }
        if current < Self.version {
            throw ReplicationError(
                .schema,
                "the tables in schema \"\(name)\" are at version \(current), older than this library's \(Self.version): a writer of this library opening a stream on the primary migrates them")
        }
    }

    /// The migration as one `DO` block: each step's statements run as text (`EXECUTE`), so that
    /// the block can create what it then uses.
    var migrationStatement: String {
        var texts = ["reduxstore schema " + name, name]
        for step in migrations { texts += step }
        // Quotes for each text, and for the block, that no text holds.
        var number = 0
        func tag() -> String {
            while true {
                number += 1
                let candidate = "$m\(number)$"
                if !texts.contains(where: { $0.contains(candidate) }) { return candidate }
            }
        }
        func literal(_ text: String) -> String {
            let quote = tag()
            return quote + text + quote
        }
        let block = tag()
        var steps = ""
        for (index, step) in migrations.enumerated() {
            steps += "    IF v_current < \(index + 1) THEN\n"
            for statement in step { steps += "        EXECUTE \(literal(statement));\n" }
            steps += "        EXECUTE \(literal("INSERT INTO \(quoted).migrations (version) VALUES (\(index + 1))"));\n"
            steps += "    END IF;\n"
        }
        return """
            DO \(block)
            DECLARE
                v_current integer;
            BEGIN
                PERFORM pg_advisory_xact_lock(hashtextextended(\(literal(texts[0])), 0));
                EXECUTE \(literal("CREATE SCHEMA IF NOT EXISTS \(quoted)"));
                EXECUTE \(literal("CREATE TABLE IF NOT EXISTS \(quoted).migrations (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())"));
                EXECUTE \(literal("SELECT coalesce(max(version), 0) FROM \(quoted).migrations")) INTO v_current;
                IF v_current > \(Self.version) THEN
                    RAISE EXCEPTION 'the tables in schema "%" are at version %, newer than this library''s \(Self.version): use a newer ReduxStorePostgres',
                        \(literal(name)), v_current USING ERRCODE = 'RX002';
                END IF;
            \(steps)END
            \(block)
            """
    }

    // MARK: Statements

    /// Makes the stream's row if it is missing.
    func createStream(_ stream: String) -> PostgresQuery {
        query("INSERT INTO \(quoted).streams (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", naming: stream)
    }

    /// The stream's newest committed version.
    func head(_ stream: String) -> PostgresQuery {
        query("SELECT version FROM \(quoted).streams WHERE name = $1", naming: stream)
    }

    /// Appends actions through the `append` procedure: one call, one commit, under the stream
    /// row's lock for the length of the call on the server. The dispatches are this writer's
    /// `firstSeq`, `firstSeq + 1`, …; when they are stored already (a repeated request, or one
    /// delivered late), nothing is written and the answer is the version stored the first time.
    /// Answers the last version, after the commit.
    func append(
        _ stream: String, identifiers: [String], payloads: [String], sources: [String],
        writer: String, firstSeq: Int64, snapshotEvery: Int, snapshotLast: Bool
    ) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: 8)
        bindings.append(stream)
        bindings.append(identifiers)
        bindings.append(payloads)
        bindings.append(sources)
        bindings.append(writer)
        bindings.append(firstSeq)
        bindings.append(Int64(snapshotEvery))
        bindings.append(snapshotLast)
        return PostgresQuery(unsafeSQL: "CALL \(quoted).append($1, $2, $3, $4, $5, $6, NULL, $7, $8)", binds: bindings)
    }

    /// Tells the stream's listeners that it reached `version`: a wake-up hint, in a transaction
    /// of its own that does not wait for the disk (a notification needs no durability), apart
    /// from the append, so that the notify queue's cluster-wide lock is never held across an
    /// append's commit and flush.
    func notify(_ channel: String, version: UInt64) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(channel)
        bindings.append(String(version))
        return PostgresQuery(
            unsafeSQL: "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)", binds: bindings)
    }

    /// The stream's head, with the actions after `after` through `through`, at most `limit`, in
    /// order, each with its `snapshot` mark, and the hash, writer and confirmation of the snapshot
    /// stored at its version (`NULL`s: none is). One row with `NULL` action columns when there is
    /// no such action, none when the stream does not exist. Head and actions are read in one
    /// snapshot of the database: a head past `after` with no action after it means trimmed
    /// versions, not a commit half seen.
    func tail(_ stream: String, after: UInt64, through: UInt64, limit: Int) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(stream)
        bindings.append(Int64(bitPattern: after))
        bindings.append(Int64(bitPattern: min(through, UInt64(Int64.max))))
        bindings.append(Int64(limit))
        return PostgresQuery(
            unsafeSQL: """
                SELECT st.version, a.version, a.identifier, a.payload, a.source, a.writer, a.seq, a.snapshot,
                       a.hash, a.stored_by, a.confirmed
                FROM \(quoted).streams st
                LEFT JOIN LATERAL (
                    SELECT a.version, a.identifier, a.payload::text AS payload, coalesce(a.source, '') AS source,
                           a.writer, a.seq, a.snapshot, s.hash, s.writer AS stored_by,
                           s.confirmed_by IS NOT NULL AS confirmed
                    FROM \(quoted).actions a
                    LEFT JOIN \(quoted).snapshots s ON s.stream = a.stream AND s.version = a.version
                    WHERE a.stream = $1 AND a.version > $2 AND a.version <= $3
                    ORDER BY a.version LIMIT $4
                ) a ON true
                WHERE st.name = $1
                ORDER BY a.version
                """,
            binds: bindings)
    }

    /// The stream's head and its oldest action still stored (0: none), to tell which snapshots
    /// a new process can start from (every action after one must be there).
    func extent(_ stream: String) -> PostgresQuery {
        query(
            """
            SELECT coalesce((SELECT version FROM \(quoted).streams WHERE name = $1), 0),
                   coalesce((SELECT min(version) FROM \(quoted).actions WHERE stream = $1), 0)
            """,
            naming: stream)
    }

    /// The newest snapshots, newest first, at most 64: version, and whether a second process
    /// confirmed it.
    func snapshots(_ stream: String) -> PostgresQuery {
        query(
            """
            SELECT version, confirmed_by IS NOT NULL FROM \(quoted).snapshots WHERE stream = $1
            ORDER BY version DESC LIMIT 64
            """,
            naming: stream)
    }

    /// `sql`, whose one parameter, `$1`, is the stream's name.
    private func query(_ sql: String, naming stream: String) -> PostgresQuery {
        var bindings = PostgresBindings()
        bindings.append(stream)
        return PostgresQuery(unsafeSQL: sql, binds: bindings)
    }

    /// The state of the snapshot at `version`, as JSON text.
    func snapshotState(_ stream: String, version: UInt64) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(stream)
        bindings.append(Int64(bitPattern: version))
        return PostgresQuery(
            unsafeSQL: "SELECT state::text FROM \(quoted).snapshots WHERE stream = $1 AND version = $2",
            binds: bindings)
    }

    /// Stores a snapshot unless one is stored at that version already; either way answers the
    /// hash of the one stored.
    func storeSnapshot(_ stream: String, version: UInt64, state: String, hash: String, writer: String) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: 5)
        bindings.append(stream)
        bindings.append(Int64(bitPattern: version))
        bindings.append(state)
        bindings.append(hash)
        bindings.append(writer)
        return PostgresQuery(
            unsafeSQL: """
                WITH stored AS (
                    INSERT INTO \(quoted).snapshots (stream, version, state, hash, writer) VALUES ($1, $2, $3::json, $4, $5)
                    ON CONFLICT (stream, version) DO NOTHING RETURNING hash)
                SELECT coalesce((SELECT hash FROM stored),
                                (SELECT hash FROM \(quoted).snapshots WHERE stream = $1 AND version = $2))
                """,
            binds: bindings)
    }

    /// Records that `writer`, which did not store the snapshot at `version`, found its own hash
    /// there equal to the stored one (the first such process only).
    func confirmSnapshot(_ stream: String, version: UInt64, hash: String, writer: String) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: 4)
        bindings.append(stream)
        bindings.append(Int64(bitPattern: version))
        bindings.append(hash)
        bindings.append(writer)
        return PostgresQuery(
            unsafeSQL: """
                UPDATE \(quoted).snapshots SET confirmed_by = $4
                WHERE stream = $1 AND version = $2 AND hash = $3 AND confirmed_by IS NULL
                  AND writer IS DISTINCT FROM $4
                """,
            binds: bindings)
    }

    /// The hashes, writers and confirmations of the snapshots stored at `versions` (those that are).
    func snapshotHashes(_ stream: String, versions: [Int64]) -> PostgresQuery {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(stream)
        bindings.append(versions)
        return PostgresQuery(
            unsafeSQL: """
                SELECT version, hash, writer, confirmed_by IS NOT NULL FROM \(quoted).snapshots
                WHERE stream = $1 AND version = ANY($2::bigint[])
                """,
            binds: bindings)
    }

    /// Deletes snapshots older than the newest `kept`, and with `trimming`, the actions at and
    /// below the oldest snapshot kept (never newer ones).
    func retain(_ stream: String, kept: Int, trimming: Bool) -> [PostgresQuery] {
        var bindings = PostgresBindings(capacity: 2)
        bindings.append(stream)
        bindings.append(Int64(kept))
        var queries = [
            PostgresQuery(
                unsafeSQL: """
                    DELETE FROM \(quoted).snapshots WHERE stream = $1 AND version < (
                        SELECT min(version) FROM (
                            SELECT version FROM \(quoted).snapshots WHERE stream = $1
                            ORDER BY version DESC LIMIT $2) AS newest)
                    """,
                binds: bindings)
        ]
        if trimming {
            var trim = PostgresBindings()
            trim.append(stream)
            queries.append(
                PostgresQuery(
                    unsafeSQL: """
                        DELETE FROM \(quoted).actions WHERE stream = $1 AND version <= (
                            SELECT min(version) FROM \(quoted).snapshots WHERE stream = $1)
                        """,
                    binds: trim))
        }
        return queries
    }

    /// The channel a stream's commits notify: an identifier made of the schema's and stream's
    /// names (a hash, so that any name fits PostgreSQL's 63 bytes).
    func channel(_ stream: String) -> String {
        // FNV-1a, 64 bits: stable across processes and languages.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in (name + "\u{0}" + stream).utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return "reduxstore_" + String(repeating: "0", count: 16 - hex.count) + hex
    }
}
