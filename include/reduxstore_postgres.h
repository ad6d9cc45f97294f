/*
 * reduxstore_postgres.h — a C store replicated through a PostgreSQL stream.
 *
 * Any number of processes, in C or Swift, open the same stream with the same reducers; each
 * applies every action of the stream, in the one order PostgreSQL gives them, to a local store.
 * The store rdx_store_open_stream() returns is an ordinary rdx_store: read it, observe it, listen
 * to its changes, journal it, inspect it. Its dispatches go to the stream first:
 *
 *     #include <reduxstore_postgres.h>
 *
 *     rdx_status status;
 *     json_object *zero = json_tokener_parse("{\"count\":0}");
 *     rdx_reducer reducers[] = {{count_reducer, NULL, NULL}};
 *     rdx_store *store = rdx_store_open_stream("", "tally", zero, reducers, 1, &status);
 *     json_object_put(zero);
 *     if (!store) { fprintf(stderr, "%s\n", rdx_last_error()); return 1; }
 *     rdx_store_dispatch_json(store, "{\"identifier\":\"tally.add\",\"payload\":{\"by\":1}}");
 *     printf("version %llu\n", (unsigned long long)rdx_store_version(store));  // committed, applied
 *     rdx_store_release(store);                  // the last reference closes the connections
 *
 * Build: cc prog.c $(pkg-config --cflags --libs reduxstore-postgres) after scripts/install (the
 * library calls libreduxstore.so, which its .pc file links too).
 *
 * A C program and a Swift program (ReplicatedStore) share a stream when their states have one JSON
 * shape and their reducers do the same: actions are stored as identifier, payload (JSON) and
 * source; snapshots as the state's canonical JSON text and its SHA-256. The schema, the order,
 * snapshots, retention and faults are the Swift library's: the DocC article "Replication" of
 * ReduxStorePostgres.
 */
#ifndef REDUXSTORE_POSTGRES_H
#define REDUXSTORE_POSTGRES_H

#include "reduxstore.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Opens the stream named `stream` on the server `connection` names, to write to: creates the
 * library's tables (schema "reduxstore") and the stream when missing, starts from the stream's
 * newest snapshot a second process confirmed (or a deep copy of `initial_state`, borrowed, at
 * version 0; the DocC article "Replication" says which snapshots it trusts), applies the actions
 * after it, and keeps applying what other processes commit (woken by PostgreSQL's notifications,
 * and by a poll every 0.1 s should one be missed). Returns once caught up.
 *
 * `connection`: a libpq-style URL ("postgres://user:password@host:port/db?sslmode=require") or
 * key=value string ("host=/var/run/postgresql dbname=app"); "" or a missing setting takes the
 * usual PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE, PGSSLROOTCERT and PGAPPNAME
 * variables. TLS is postgres-nio's: sslmode "require" encrypts, "verify-ca" and "verify-full" also
 * check the server's certificate against the system's trusted roots or the PEM file sslrootcert
 * names; a server without that TLS, or whose certificate is refused, fails the call at once
 * (RDX_EIO, not tried again). An application_name (or PGAPPNAME) is
 * given to the server by every session, so that operators see who is connected in
 * pg_stat_activity. No error message ever shows the password.
 *
 * The store's version is the stream's version it applied. On it:
 *   - rdx_store_dispatch_action(), rdx_store_dispatch_json() (and their _at forms) return
 *     RDX_OK only once the server confirmed the commit (durable: the append commits on the
 *     server before it answers) and the action is applied here, with everything committed
 *     before it. Each dispatch is stored once: a request repeated or delivered late stores
 *     nothing new. Concurrent dispatches of one process share one append (group commit); an
 *     action the server refuses fails alone, never its group. Failures:
 *     RDX_EIO    the server failed the append; or a fault that may pass (a lost connection, a
 *                full connection table, a server shutting down, a lock timeout) outlasted 30 s
 *                of retries with back-off;
 *     RDX_EINVAL an action PostgreSQL cannot store (U+0000 in its source or in a string of its
 *                payload: nothing is sent; an identifier with U+0000 is refused by every store,
 *                RDX_EDECODE from JSON text), the store is being released, the dispatch came
 *                from the thread applying the stream (a reducer, listener or observer of this
 *                store: they run on the library's thread, one at a time, in the stream's
 *                order) — it would wait for itself — or from a child of the process that
 *                opened the stream (after fork(): it would append under its parent's name);
 *     RDX_EDECODE, RDX_ECORRUPT  the replica stopped (see below);
 *     and what rdx_store_dispatch_action() returns for bad input (nothing is then sent).
 *   An error never hides a commit: after a failure that answers a dispatch, rdx_last_error()
 *   says what became of it, in words a program can test with strstr():
 *     "nothing was stored"       no request reached the server, or the server refused each one;
 *     "outcome unknown"          a request reached the server and its answer was lost, whatever
 *                                error then ended the retries: the text names the dispatch as
 *                                "writer W, seq S" (the writer and seq columns of the actions
 *                                table); if it committed, this store applies it when it reads
 *                                the stream, like another process's action;
 *     "stored at version N"      committed at version N, and not applied here (the replica
 *                                stopped, or could not read the stream before the answer was
 *                                due: it applies it when it reads the stream again): every
 *                                other replica applies it.
 *   - rdx_store_dispatch_batch_json() checks every element as any store does (its text, its
 *     shape, the limits), then commits them one by one, in order, stopping at the first failure
 *     (what the stream refuses, such as U+0000 in a payload's string, is found element by
 *     element): another process's actions may fall between them. The
 *     failure's words name its element, "[k]", and speak of that element alone; from the second
 *     on they say first that the ones before it are stored: "[2] (elements [0] to [1] were
 *     stored before it): ...".
 *   - rdx_store_enqueue_action() and rdx_store_restore_version() are refused (RDX_EINVAL): the
 *     stream decides the order.
 *   - Durable whatever the role's settings: the append commits with synchronous_commit at
 *     least "on" (a role's "off" is raised; "remote_apply" is kept), so RDX_OK comes after the
 *     WAL flush and, with synchronous standbys, after they confirmed; a commit that PostgreSQL
 *     would report as "committed locally, not replicated" is never answered RDX_OK.
 *   - Faults that may pass never stop the replica: the next dispatch or poll tries again. Every
 *     connection is bounded by the server too (lock_timeout 5 s, idle_in_transaction_session_timeout
 *     10 s, and statement_timeout 9 s on every session but the appending one, whose commit may
 *     wait for a synchronous standby; this process gives up on its answer after 10 s and asks
 *     again), and no lock is held across a round trip to this process: a writer stopped
 *     anywhere delays the others by at most those bounds.
 *   - Every process applies the text the stream stores, the writer included: a payload is kept
 *     as written (PostgreSQL's json type), so a number parses to the same json-c int or double
 *     in every process; a snapshot's text writes each number of its kind (a double as a double
 *     even when whole: 2.0, -0.0, 1e+16), so a process that starts from one holds the same kinds
 *     and values (its double's text may differ: 1e16 is printed 1e+16). Text outside JSON's
 *     grammar is refused before anything is sent (RDX_EPARSE): numbers such as 1., -.5 or 01,
 *     which json-c reads and PostgreSQL does not, and an object key holding U+0000, which
 *     json-c cannot hold.
 *   - A stored action this store refuses (RDX_EDECODE), a state that differs from the snapshot
 *     another process stored at that version (reducers that are not deterministic), or versions
 *     trimmed before this replica applied them (RDX_ECORRUPT) stop the replica: every later
 *     dispatch fails with that status, rdx_last_error() naming the stream and the version where
 *     the fault lies (a replica that finds a differing snapshot after it was stored may have
 *     applied later versions already). It never skips an action.
 *   - A state no process could start from is not stored as a snapshot, in any process: its
 *     canonical text longer than RDX_MAX_JSON_TEXT_SIZE, nesting past RDX_MAX_NESTING_DEPTH, or a
 *     NaN or infinity a reducer put in. A warning is logged, every replica goes on (none compares
 *     a snapshot there), and a new process starts from an older snapshot or the first action.
 *   - The last rdx_store_release() waits for the dispatches on their way, stops following and
 *     closes the connections. Do not release the last reference from one of the store's own
 *     callbacks.
 *
 * fork(): a child made by fork() of a process that opened a stream has none of the threads the
 * library waits on (only the calling thread is copied), so in it rdx_store_open_stream(),
 * rdx_store_follow_stream() and rdx_store_stream_lag() are refused (RDX_EINVAL) rather than
 * waiting forever, as a dispatch to an inherited store is; exec() first, or fork() before the
 * first stream is opened. rdx_store_release() of an inherited store lets it go without a word
 * to the server (the connections are the parent's).
 *
 * Returns a NEW store with one reference, or NULL with *status (if status is not NULL) set and
 * rdx_last_error() saying why:
 *   RDX_EINVAL  a NULL argument, a connection string or stream name that is not acceptable (the
 *               name: 1 to 200 bytes of UTF-8; either string not UTF-8 is refused, never
 *               repaired), a reducer list rdx_store_create() refuses (checked before anything
 *               is sent), an sslrootcert file that cannot be read, or a child made by fork() of
 *               a process that opened a stream (above);
 *   RDX_EIO     the server cannot be reached (a fault that may pass, such as a server starting up
 *               or restarting, is tried again for 30 s with back-off first), lacks the TLS sslmode
 *               requires or shows a certificate it refuses, refuses the user or the password,
 *               fails a statement, or holds the library's tables in a newer format;
 *   RDX_EDECODE the snapshot it starts from is not JSON a C store can hold, or an action after
 *               it does not apply (naming the version);
 *   RDX_ECORRUPT the state differs from a stored snapshot's, or versions were trimmed;
 *   and what rdx_store_create() returns for the state.
 */
RDX_API rdx_store *rdx_store_open_stream(const char *connection, const char *stream,
                                         json_object *initial_state, const rdx_reducer *reducers,
                                         size_t reducer_count, rdx_status *status);

/*
 * How a replicated store writes snapshots, keeps history and waits for new actions: the options
 * of the Swift library's ReplicationOptions, with the same defaults and ranges. Fill one with
 * rdx_stream_options_init(), then change the fields you want (a later version may add fields,
 * which init sets):
 *
 *     rdx_stream_options options;
 *     rdx_stream_options_init(&options);
 *     options.snapshot_every = 10000;
 *     options.trims_actions = 1;          // actions older than the oldest kept snapshot may go
 *     store = rdx_store_open_stream_with_options(url, "tally", zero, reducers, 1, &options, &status);
 *
 * A value out of range is refused (RDX_EINVAL, rdx_last_error() naming the field); nothing is
 * opened.
 */
typedef struct rdx_stream_options {
    /* Where the library keeps its tables, a PostgreSQL schema (created when missing; 1 to 63
     * bytes, not beginning with "pg_"). NULL: "reduxstore". Processes sharing a stream name the
     * same schema. Borrowed for the call. */
    const char *schema;
    /* A writer stores the state as a snapshot at every version that is a multiple of this (the
     * writer that committed that version stores it). 0: never by count. Default 1000. */
    int64_t snapshot_every;
    /* A writer also stores a snapshot when it commits and the newest one it stored (or started
     * from) is older than this many seconds. 0: never by time. Default 300. */
    double snapshot_interval;
    /* How many of the newest snapshots to keep (older ones are deleted when a writer stores a
     * new one). At least 1. Default 3. */
    int64_t snapshots_kept;
    /* Nonzero: a writer deletes the actions at and below the oldest snapshot it keeps. A process
     * starts from a snapshot, so nothing a new process needs is lost (an open whose actions are
     * trimmed while it catches up starts again from the newer snapshot, within
     * reconnect_timeout); a running replica, writer or follower, further behind than the oldest
     * kept snapshot stops (RDX_ECORRUPT, "trimmed"): keep snapshot_every * (snapshots_kept - 1)
     * versions well above the most any replica falls behind. Default 0: every action is
     * kept. */
    int trims_actions;
    /* Nonzero: a writer wakes the other processes with PostgreSQL's NOTIFY after its commits and
     * a replica listens for it; without it they find new actions by polling. Default 1. */
    int notifies;
    /* How often, in seconds, a replica looks for new actions when no notification came: the
     * longest a missed notification delays it. More than 0, at most 3600. Default 0.1. */
    double poll_interval;
    /* How many actions one commit writes at most (group commit). 1 to 10000. Default 1000. */
    int64_t maximum_batch;
    /* How many actions one read of the stream's tail fetches. 1 to 1000000. Default 10000. */
    int64_t read_batch;
    /* How long, in seconds, a dispatch, and opening or following a stream, wait for a lost
     * connection to come back (a server starting, a full connection table) before they fail with
     * RDX_EIO. 0 or more. Default 30. */
    double reconnect_timeout;
    /* A hot standby of the stream's server to read the stream from (a connection string as
     * rdx_store_open_stream() takes), or NULL to read from the server written to. For
     * rdx_store_follow_stream() only (a writer is refused with RDX_EINVAL): the follower runs
     * every query on the standby and keeps one session on the primary that only LISTENs for
     * wake-ups (none when notifies is 0); it never applies a version the standby has not
     * replayed. The standby must stream from the primary and hold the library's tables (a writer
     * on the primary makes them). Borrowed for the call. Default NULL. */
    const char *standby;
} rdx_stream_options;

/* Sets every field of `options` to its default (above). NULL is a no-op. */
RDX_API void rdx_stream_options_init(rdx_stream_options *options);

/*
 * rdx_store_open_stream() with `options` (borrowed for the call; NULL: the defaults, as
 * rdx_store_open_stream() has them). Returns and fails as rdx_store_open_stream() does, and with
 * RDX_EINVAL for an option out of range or a schema name PostgreSQL cannot take (empty, longer
 * than 63 bytes, or beginning with "pg_", which PostgreSQL keeps for its own schemas).
 */
RDX_API rdx_store *rdx_store_open_stream_with_options(const char *connection, const char *stream,
                                                      json_object *initial_state,
                                                      const rdx_reducer *reducers, size_t reducer_count,
                                                      const rdx_stream_options *options,
                                                      rdx_status *status);

/*
 * Follows the stream read-only: starts as rdx_store_open_stream_with_options() does (the
 * library's tables are created when missing; the snapshots it compares are confirmed, its only
 * writes; with options->standby it writes nothing and reads everything from the standby), then
 * applies new versions as they are committed, woken by notifications and by a poll every
 * options->poll_interval seconds. It never appends an action: every dispatch to the store
 * (rdx_store_dispatch_action(), rdx_store_dispatch_json(), a batch, their _at forms) is refused
 * with RDX_EINVAL, rdx_last_error() saying the store follows the stream read-only; so are
 * rdx_store_enqueue_action() and rdx_store_restore_version(). Read, observe and journal it as any
 * store. Returns a NEW store with one reference, or NULL with *status set, as rdx_store_open_stream().
 */
RDX_API rdx_store *rdx_store_follow_stream(const char *connection, const char *stream,
                                           json_object *initial_state, const rdx_reducer *reducers,
                                           size_t reducer_count, const rdx_stream_options *options,
                                           rdx_status *status);

/*
 * How far a replicated store (opened or followed) is behind its stream, as far as this process
 * knows: *versions_behind is the newest version of the stream it has heard of less the version
 * it applied, *seconds_behind how long the oldest version it knows of and has not applied has
 * been known (0 when caught up). Either pointer may be NULL. Thread-safe.
 *
 * Returns RDX_OK while the replica runs. When it has stopped, the lag is still written and the
 * status says why, rdx_last_error() naming the stream and the version: RDX_EDECODE (a stored
 * action this store refuses), RDX_ECORRUPT (a state that differs from a stored snapshot, or
 * versions trimmed before it applied them), RDX_EIO (a fault that could not heal). RDX_EINVAL: a
 * NULL store, one that is not replicated (not from rdx_store_open_stream*() or
 * rdx_store_follow_stream()), or a call from one of the store's own callbacks (its reducers,
 * listeners and observers run on the thread applying the stream, which the answer waits for).
 */
RDX_API rdx_status rdx_store_stream_lag(rdx_store *store, double *seconds_behind, uint64_t *versions_behind);

/*
 * For a follower on a hot standby (options->standby): *standby_versions is how many of the
 * versions the primary announced the standby had not replayed yet at the follower's last read,
 * the part of rdx_store_stream_lag()'s versions that is the standby's own delay (0 without
 * notifications). When the follower's last read failed (the standby stopped or unreachable), the
 * status is still RDX_OK and rdx_last_error() holds that read's error, which the follower tries
 * again at every poll; else rdx_last_error() is left as it was. Returns and fails as
 * rdx_store_stream_lag() does, and with RDX_EINVAL for a store that does not read from a standby.
 */
RDX_API rdx_status rdx_store_stream_standby_lag(rdx_store *store, uint64_t *standby_versions);

#ifdef __cplusplus
}
#endif

#endif /* REDUXSTORE_POSTGRES_H */
