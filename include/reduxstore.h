/*
 * reduxstore.h — the C interface of ReduxStore.
 *
 * One store holds the whole state of a program as a json-c tree. The only way to change it is to
 * dispatch an action (an identifier and an optional json-c payload); every action runs through the
 * store's reducers, which mutate the state tree in place. After each action the store tells its
 * observers. rdx_store_current_state() hands out a deep copy that no later action can reach.
 *
 * Ownership follows json-c:
 *   - Arguments are BORROWED. The store deep-copies what it keeps past a call (the initial state,
 *     an enqueued payload); it never keeps a second reference to a caller's tree, because json-c's
 *     reference counts are not atomic.
 *   - Every json_object * returned is a NEW tree of the caller's own: release it with
 *     json_object_put().
 *   - Reducers get `state` and `payload` borrowed for the duration of the call.
 *
 * Errors: every function that can fail returns an rdx_status (or NULL / 0 for constructors and
 * tokens). Outputs are valid only when the call returned RDX_OK. After a failure,
 * rdx_last_error() says what went wrong and where, in words; the store's state and version are
 * as they were, and nothing leaks.
 *
 * Threads: every function may be called from any thread at once, on the same store. Actions are
 * applied one at a time, in one total order; none is lost. Observers run on the dispatching thread
 * after the store's lock was released. Each function holds its own reference to the store while
 * it runs callbacks, so a callback may retain, release or remove anything.
 *
 * Callbacks (reducers, observers, release functions) may call any rdx_ function, on any store,
 * with these effects (the "callback rules"):
 *   - inside a reducer, a dispatch on its own store is queued and applied right after the
 *     current action; an enqueue goes to the store's queue as from anywhere else, and is applied
 *     later on the queue's thread, after the current action (not necessarily before or after
 *     the actions the reducer dispatches); rdx_store_flush() on its own store returns at once;
 *   - inside any callback, rdx_store_remove_observer() does not wait for a call of that observer
 *     running on another thread (waiting there could deadlock): use rdx_store_add_observer_full()
 *     to learn when a context may be freed;
 *   - a callback must not block waiting for another thread that is itself waiting for this
 *     callback to return (for instance two stores' observers flushing each other's queue).
 * Which call waits for which is written once, beside the code that applies every action (the
 * apply transaction in Sources/ReduxStore/Store+Dispatch.swift). The last rdx_store_release()
 * flushes the store's queue and removes its observers and listeners: it waits as
 * rdx_store_flush() and rdx_store_remove_observer() do.
 *
 * fork(): in a child process made by fork() (until it calls exec), rdx_store_enqueue_action()
 * and rdx_store_flush() return RDX_EINVAL on every store: the store's queue runs on libdispatch,
 * which does not work in such a child. The other calls work on stores the child creates; on a
 * store inherited from the parent they are undefined if another thread of the parent was inside
 * it when fork() was called.
 *
 * Link with -lreduxstore (pkg-config --cflags --libs reduxstore), and json-c. Installed
 * (scripts/install), the library is libreduxstore.so.0, the binary interface of this header's
 * major version 0 and minor version 2 on, with libreduxstore.so linking to it.
 *
 * Changes of the binary interface:
 *   0.2.0  rdx_reducer gained `identifier`, its last field: a reducer sees only the actions of
 *          that identifier (NULL: every action). A program built against 0.1 must be built again
 *          (the struct grew); its `{reduce, context}` initializers still compile and mean what
 *          they meant (NULL identifier), but an rdx_reducer whose fields are assigned one by one
 *          must set `identifier` too. The libraries got versioned names (libreduxstore.so.0).
 */
#ifndef REDUXSTORE_H
#define REDUXSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define RDX_API __attribute__((visibility("default")))
#else
#define RDX_API
#endif

/* The version of this header. rdx_version() gives the library's, to compare at run time. */
#define RDX_VERSION_MAJOR 0
#define RDX_VERSION_MINOR 2
#define RDX_VERSION_PATCH 0
#define RDX_VERSION "0.2.0"
/* MAJOR * 1000000 + MINOR * 1000 + PATCH */
#define RDX_VERSION_NUMBER 2000

/* Limits on input; past any of them a call returns RDX_ELIMIT and changes nothing. */
#define RDX_MAX_NESTING_DEPTH 256          /* arrays and objects inside each other */
#define RDX_MAX_JSON_TEXT_SIZE (64 << 20)  /* bytes of JSON text parsed at once */
#define RDX_MAX_IDENTIFIER_LENGTH 1024     /* bytes of an action identifier */
#define RDX_MAX_MIDDLEWARE_DEPTH 64        /* dispatches inside one another's middleware on one
                                              thread, of any store (see rdx_middleware_fn) */

/* The name of the notification a store posts after each applied action. */
#define RDX_STATE_DID_CHANGE_NOTIFICATION "RDXStateDidChangeNotification"

/*
 * A store. Opaque and reference-counted: rdx_store_create() and rdx_store_open() return it with
 * one reference; rdx_store_retain() adds one, rdx_store_release() drops one and frees the store
 * with the last. A Swift program can hand C a store of its own (Store.makeCStore(actions:), in the
 * DocC article "Using the store from C").
 */
typedef struct rdx_store rdx_store;

/* What a call did. rdx_status_string() names each. */
typedef enum rdx_status {
    RDX_OK = 0,    /* done */
    RDX_EINVAL,    /* an argument was NULL or not acceptable (an unknown observer token) */
    RDX_EPARSE,    /* JSON text did not parse */
    RDX_EDECODE,   /* JSON was not of the expected shape, or a payload did not decode */
    RDX_ELIMIT,    /* input past one of the RDX_MAX_ limits */
    RDX_EIO,       /* a file could not be read or written */
    RDX_ECORRUPT,  /* a file does not hold a valid saved state */
    RDX_ENOMEM     /* memory ran out */
} rdx_status;

/*
 * A reducer: mutates `state` in place for one action. `identifier` is the action's; `payload`
 * may be NULL. All three are borrowed for the call: do not put them or keep them. A reducer may
 * call rdx_ functions (see the callback rules above): on its own store a dispatch is queued and
 * applied right after the current action, and rdx_store_current_state() returns the state as the
 * reducers left it so far.
 */
typedef void (*rdx_reduce_fn)(json_object *state, const char *identifier,
                              json_object *payload, void *context);

/*
 * A reducer, the context it is called with, and the identifier of the actions it handles.
 *
 * With an identifier, the reducer is called only for actions of exactly that identifier (its
 * bytes compared; copied by the store, so it need not outlive the call that creates the store).
 * NULL: for every action. For each action the store calls the reducers that apply, in the order
 * they are listed, finding them by one lookup of the action's identifier, however many reducers
 * there are. An identifier longer than RDX_MAX_IDENTIFIER_LENGTH is RDX_ELIMIT, one that is not
 * UTF-8 RDX_EDECODE, and the store is not created.
 *
 *     rdx_reducer reducers[] = {
 *         {count_added, NULL, "todo/add"},
 *         {count_removed, NULL, "todo/remove"},
 *         {log_every_action, log, NULL},
 *     };
 */
typedef struct rdx_reducer {
    rdx_reduce_fn reduce;
    void *context;
    const char *identifier;
} rdx_reducer;

/*
 * An observer: told after each action, once the store's lock was released, with the store
 * (borrowed: valid for the call, even if the observer releases it), the notification's name and
 * the store's new version. It runs on the dispatching thread (for an enqueued action: on the
 * store's queue) and may call any rdx_ function (see the callback rules above), including
 * removing itself.
 */
typedef void (*rdx_observer_fn)(rdx_store *store, const char *name, uint64_t version,
                                void *context);

/*
 * Releases an observer's context: called exactly once, when the observer can never be called
 * again — after it was removed and its last running call ended, or when its store was freed.
 * It runs on the thread that removed the observer, that ended its last call, or that released the
 * store. It may call rdx_ functions but must not remove observers it waits for.
 */
typedef void (*rdx_release_fn)(void *context);

/*
 * Creates a store holding a deep copy of `initial_state` (borrowed), with `reducer_count`
 * reducers run in array order, each for the actions of its identifier (the array and the
 * identifiers are copied; the contexts are kept).
 * Returns a NEW store with one reference, or NULL with *status (if status is not NULL) set:
 *   RDX_EINVAL  initial_state is NULL (how json-c's parsers say they failed, and how json-c
 *               holds JSON null: a C store's state is never null), reducers is NULL with a
 *               non-zero count, or a reducer's function is NULL;
 *   RDX_ELIMIT  initial_state nested deeper than RDX_MAX_NESTING_DEPTH, or a reducer's
 *               identifier longer than RDX_MAX_IDENTIFIER_LENGTH;
 *   RDX_EDECODE initial_state holds a non-finite number, or a reducer's identifier is not UTF-8;
 *   RDX_ENOMEM  memory ran out.
 */
RDX_API rdx_store *rdx_store_create(json_object *initial_state, const rdx_reducer *reducers,
                                    size_t reducer_count, rdx_status *status);

/*
 * Applies an action and returns once the reducers ran and the observers were told. Borrows
 * `identifier` and `payload` (NULL: no payload). Inside a reducer of this store the action is
 * queued (its payload deep-copied) and applied right after the current one.
 * A C store keeps a copy of the first identifiers dispatched to it without a payload (one for
 * each of eight slots chosen by the address of the caller's identifier; kept for the life of the
 * process, counted against RDX_MAX_LOGGED_IDENTIFIERS): a later NULL-payload dispatch with the
 * same bytes at an address of that slot needs no other check, and its reducers get the kept copy
 * as `identifier`.
 * Returns RDX_OK; RDX_EINVAL for a NULL store or identifier; RDX_ELIMIT for an identifier
 * longer than RDX_MAX_IDENTIFIER_LENGTH, a payload nested deeper than RDX_MAX_NESTING_DEPTH, or
 * a dispatch from inside middleware past RDX_MAX_MIDDLEWARE_DEPTH levels (rdx_middleware_fn);
 * RDX_EDECODE for an identifier that is not UTF-8, a payload with a non-finite number, or (a
 * Swift store) a payload that does not decode into the action type registered for the identifier;
 * RDX_ENOMEM.
 */
RDX_API rdx_status rdx_store_dispatch_action(rdx_store *store, const char *identifier,
                                             json_object *payload);

/*
 * Parses `action_json`, {"identifier": "...", "payload": ...}, and applies it as
 * rdx_store_dispatch_action() does. "payload" may be missing or null. Borrows the text.
 * Returns RDX_OK; RDX_EINVAL for a NULL store or text; RDX_EPARSE for text that does not parse
 * (or is not UTF-8, or escapes half a surrogate pair, "\ud800", which json-c alone would make
 * U+FFFD; or writes a number outside JSON's grammar, 1. or -.5 or 01, which json-c alone reads;
 * or an object key holding U+0000, which json-c would cut short); RDX_EDECODE for JSON of
 * another shape (not an object, no string "identifier", another key) or a payload that does not
 * decode; RDX_ELIMIT for text longer than RDX_MAX_JSON_TEXT_SIZE, nested deeper than
 * RDX_MAX_NESTING_DEPTH, an identifier past its limit, or a dispatch past
 * RDX_MAX_MIDDLEWARE_DEPTH; RDX_ENOMEM.
 * Numbers: an integer past 64 bits (which json_tokener_parse() would clamp to INT64_MAX or
 * INT64_MIN) reaches reducers as a double node that keeps every digit, printed with ".0" after
 * them; a Swift store's typed action reads it exactly into an Int128, UInt128 or Decimal field,
 * and refuses it (RDX_EDECODE) for a narrower one. rdx_store_open() reads saved files the same
 * way, and rdx_store_save() and the journal's "payload" write every digit back. What goes through
 * a JSONValue holds the nearest double instead: the journal's "patch", the history
 * (rdx_store_state_at_version(), and so a restore) and the inspector's page.
 */
RDX_API rdx_status rdx_store_dispatch_json(rdx_store *store, const char *action_json);

/*
 * Queues an action on the store's own serial queue and returns at once. Borrows `identifier`
 * and `payload`; the store keeps deep copies until the action was applied (memory follows the
 * backlog). Enqueued actions are applied in order, in the same total order as dispatched ones,
 * on the queue's thread. The last rdx_store_release() applies every action enqueued before it
 * returns.
 * Returns what rdx_store_dispatch_action() returns, and RDX_EINVAL for a store whose last
 * reference was released (an observer enqueueing while the last release drains the queue is
 * still accepted, and its action applied before that release returns), or in a child process
 * made by fork().
 */
RDX_API rdx_status rdx_store_enqueue_action(rdx_store *store, const char *identifier,
                                            json_object *payload);

/*
 * Returns once every action enqueued before the call was applied and its observers ran. Inside an
 * observer of an enqueued action it applies the rest itself; inside a reducer of this store it
 * returns at once. Returns RDX_OK; RDX_EINVAL for a NULL store, or in a child process made by
 * fork().
 */
RDX_API rdx_status rdx_store_flush(rdx_store *store);

/*
 * Returns a NEW deep copy of the state (release it with json_object_put()), equal to the state
 * at one version, or NULL on failure (rdx_last_error() says why): a NULL store (RDX_EINVAL's
 * words), memory (RDX_ENOMEM's), or, for a Swift store whose state is a struct, a call from
 * inside one of its reducers. Inside a reducer of a C store: the state as the reducers left it
 * so far.
 */
RDX_API json_object *rdx_store_current_state(rdx_store *store);

/*
 * As rdx_store_current_state(), and the version that copy is at, read under the same lock: a
 * version read by rdx_store_version() before or after rdx_store_current_state() may be another
 * action's. On success *version is set; on failure (and for a NULL `version`: RDX_EINVAL's
 * words) NULL is returned and *version is left as it was.
 */
RDX_API json_object *rdx_store_current_state_version(rdx_store *store, uint64_t *version);

/* The number of actions applied: 0 for a new store. 0 for NULL. */
RDX_API uint64_t rdx_store_version(rdx_store *store);

/*
 * Registers `observer`, called with `context` for notifications named `name` (borrowed; NULL:
 * every notification). It first hears the next action (added inside a reducer: the action after
 * the current one). Returns a token, never 0, or 0 on failure (a NULL store or observer).
 */
RDX_API uint64_t rdx_store_add_observer(rdx_store *store, const char *name,
                                        rdx_observer_fn observer, void *context);

/*
 * rdx_store_add_observer(), and `release_context` (may be NULL) is called with `context` exactly
 * once, when the observer can never be called again: after its removal and the end of its last
 * running call, or when the store is freed. The one safe way to free a context when the removal
 * happens inside a callback, where rdx_store_remove_observer() does not wait.
 */
RDX_API uint64_t rdx_store_add_observer_full(rdx_store *store, const char *name,
                                             rdx_observer_fn observer, void *context,
                                             rdx_release_fn release_context);

/*
 * Removes an observer. Once it returns, the observer is never called again, and no call of it
 * begins. Outside every callback it also waits for a call running on another thread (and for
 * its release function), so `context` may be freed right after. Inside a callback it does not
 * wait: a call on another thread may still be running; free the context from a release function
 * (rdx_store_add_observer_full()).
 * Returns RDX_OK; RDX_EINVAL for a NULL store or a token this store does not know or already
 * removed.
 */
RDX_API rdx_status rdx_store_remove_observer(rdx_store *store, uint64_t token);

/*
 * Writes the state and its version to `path` (borrowed) atomically: a temporary file of its own in
 * the same folder, fsync, rename over the target, fsync the folder. A crash at any instant leaves
 * the old file or the new one, whole. What it writes, rdx_store_open() reads; the replaced file's
 * mode is kept. Safe from many threads and processes at once on one path.
 * Returns RDX_OK; RDX_EINVAL for a NULL argument (or, for a Swift store whose state is a struct,
 * a call from inside one of its reducers); RDX_EIO when the folder cannot be written, the disk
 * is full, the file would pass the process's file size limit (RLIMIT_FSIZE, checked before
 * writing: SIGXFSZ never ends the process), or the target is not a regular file (a folder,
 * device, FIFO, socket or symbolic link: left as it is);
 * RDX_ELIMIT for a state past what a file holds (more than RDX_MAX_JSON_TEXT_SIZE of text, nested
 * deeper than RDX_MAX_NESTING_DEPTH, a version of 2^63 - 1 or more); RDX_EDECODE for a state
 * holding a non-finite number or a string that is not UTF-8; RDX_ENOMEM. On failure the old file
 * is left as it was.
 */
RDX_API rdx_status rdx_store_save(rdx_store *store, const char *path);

/*
 * Opens a store saved by rdx_store_save(), with its state and version, and these reducers. Reads
 * regular files only (following a symbolic link to one), at most RDX_MAX_JSON_TEXT_SIZE + 1
 * bytes, and never blocks. Returns a NEW store with one reference, or NULL with *status set:
 * RDX_EINVAL for a NULL path or bad reducers; RDX_EIO for a missing or unreadable file, or one
 * that is not a regular file (a FIFO, a device, a folder); RDX_ECORRUPT for a file that is not a
 * saved state, or is larger than RDX_MAX_JSON_TEXT_SIZE, or whose state is null; RDX_ENOMEM. The
 * file is never changed.
 */
RDX_API rdx_store *rdx_store_open(const char *path, const rdx_reducer *reducers,
                                  size_t reducer_count, rdx_status *status);

/* Adds a reference to `store` and returns it. NULL gives NULL. Never waits. */
RDX_API rdx_store *rdx_store_retain(rdx_store *store);

/*
 * Drops a reference. The last one applies every action enqueued before it (their reducers and
 * observers run before it returns), removes the store's observers (waiting for calls on other
 * threads unless called inside a callback) and frees the store once no call is using it: after it
 * returns, no reducer or observer of the store begins. If a callback retains the store meanwhile,
 * that reference keeps it alive. NULL is a harmless no-op.
 */
RDX_API void rdx_store_release(rdx_store *store);

/* The name of a status, such as "invalid argument". Static; never NULL. */
RDX_API const char *rdx_status_string(rdx_status status);

/*
 * What this thread's last failed call went wrong with, in words, naming the argument or coding
 * path ("payload.items[3].title: expected String, found number"). "" before any failure, never
 * NULL. Valid until this thread's next rdx_ call. Control characters in it (U+0000 to U+001F and
 * U+007F, in quoted keys, paths or values) are written as \u00XX: a NUL does not end it early.
 */
RDX_API const char *rdx_last_error(void);

/*
 * Sets this thread's rdx_last_error() to a copy of `message` (NULL: ""): for a library layered
 * over this one (such as libreduxstore-inspector) that reports its failures the same way.
 */
RDX_API void rdx_set_last_error(const char *message);

/* The library's version, "MAJOR.MINOR.PATCH". Static; compare with RDX_VERSION. */
RDX_API const char *rdx_version(void);

/* ---- Composition: middleware, batches, observing one value ------------------------------- */

/*
 * The rest of a middleware chain: handed to a middleware, valid only during that call and only on
 * its thread. Opaque, and not an address: never read through it. rdx_next_action() recognizes a
 * next kept past its call, used on another thread, or made up, and refuses it (RDX_EINVAL).
 */
typedef struct rdx_next rdx_next;

/*
 * A middleware: sees each action before the reducers, in the order the store was given them.
 * `store` is borrowed for the call; `identifier` and `payload` (may be NULL) are the action's,
 * borrowed for the call. It decides what reaches the reducers:
 *   - pass the action on: rdx_next_action(next, identifier, payload);
 *   - replace it: rdx_next_action(next, "other.identifier", other_payload);
 *   - drop it: return without calling rdx_next_action(): no reducer runs, the version stays,
 *     no observer is told;
 *   - dispatch other actions: rdx_store_dispatch_action(store, ...), which pass through the
 *     whole chain.
 * rdx_next_action() applies what it is given before it returns; it may be called more than once,
 * on the middleware's thread, and never after the middleware returned. A middleware runs outside
 * the store's lock, on the dispatching thread, and may read the store (rdx_store_current_state(),
 * rdx_store_version()); the callback rules above apply. An action a reducer dispatches passes the
 * chain once the current action was applied, before the outer dispatch returns; those the
 * reducers keep dispatching pass one after the other, in the order they were dispatched, however
 * many.
 * Depth: a dispatch (or batch) from inside a middleware runs inside the outer one, one more level
 * on the thread's stack. At most RDX_MAX_MIDDLEWARE_DEPTH (64) such levels run on one thread,
 * counting every store (a middleware of one store dispatching to another that dispatches back
 * counts as well): the dispatch that would open level 65 returns RDX_ELIMIT, with words, and
 * applies nothing, so a middleware that dispatches without end stops there instead of
 * overflowing the stack. Each level takes a few KiB of stack (2.2 KiB measured in a release build
 * with one middleware, x86-64 Linux).
 */
typedef void (*rdx_middleware_fn)(rdx_store *store, const char *identifier, json_object *payload,
                                  rdx_next *next, void *context);

/* A middleware and the context it is called with. */
typedef struct rdx_middleware {
    rdx_middleware_fn handle;
    void *context;
} rdx_middleware;

/*
 * rdx_store_create(), with `middleware_count` middleware run in array order before the reducers
 * for every action: dispatched, enqueued, in a batch, or from a reducer (the array is copied; the
 * contexts are kept). Returns what rdx_store_create() returns, and NULL with RDX_EINVAL for a
 * NULL middleware array with a non-zero count or a middleware whose function is NULL.
 */
RDX_API rdx_store *rdx_store_create_with_middleware(json_object *initial_state,
                                                    const rdx_reducer *reducers,
                                                    size_t reducer_count,
                                                    const rdx_middleware *middleware,
                                                    size_t middleware_count, rdx_status *status);

/*
 * From inside a middleware: passes an action (borrowed) to the rest of the chain, which applies
 * it before this returns. Passing the middleware's own `identifier` and `payload` pointers
 * passes the action as it came; anything else is a new action (copied).
 * Returns RDX_OK; RDX_EINVAL for a NULL identifier, or a next that is NULL or not the next of a
 * middleware call running on this thread (kept after its middleware returned, used on another
 * thread, or not a next at all: nothing is read through it, and nothing applied); RDX_ELIMIT and
 * RDX_EDECODE (an identifier that is not UTF-8 among them) as rdx_store_dispatch_action();
 * RDX_ENOMEM.
 */
RDX_API rdx_status rdx_next_action(rdx_next *next, const char *identifier, json_object *payload);

/*
 * Parses `actions_json`, a JSON array of actions [{"identifier": ..., "payload": ...}, ...], and
 * applies them as one: each passes the middleware first, then those that reach the reducers are
 * applied in order under one hold of the lock, so no reader, snapshot, save or observer sees the
 * state between two of them. The version grows by the number applied; observers are told once,
 * with the last version. What its reducers dispatch meanwhile is applied right after the whole
 * batch (not between two of its actions), each as its own action, in order. An empty array
 * applies nothing. Borrows the text.
 * One bad element refuses the whole batch and nothing is applied: rdx_last_error() names its
 * index ("[2].identifier: key not found"). Returns what rdx_store_dispatch_json() returns, with
 * RDX_EDECODE also for text that is not an array; the limits apply to the text as a whole and to
 * each payload as in rdx_store_dispatch_json(), and RDX_MAX_MIDDLEWARE_DEPTH to the batch as to
 * one dispatch.
 */
RDX_API rdx_status rdx_store_dispatch_batch_json(rdx_store *store, const char *actions_json);

/*
 * Observes one value of the state, named by a JSON Pointer (RFC 6901: "" for the whole state,
 * "/todos/3/title", "~1" for '/' and "~0" for '~' in a key): `observer` is called, as an
 * rdx_observer_fn with the pointer as its `name`, only after an action that changed that value
 * (its appearing or disappearing included), with the version of that action. The value is read
 * and compared under the store's lock after each notifying action, without a snapshot; the first
 * comparison is with the value when the observer was added. Values compare as json_object_equal()
 * compares them (members in any order; 1 and 1.0 differ). Calls follow the observer rules
 * (rdx_store_add_observer()); when two threads' changes are delivered out of order, the later
 * delivery does not call. Removed with rdx_store_remove_observer(). Keys and strings are
 * compared byte for byte (code points): an observer of "/e\u0301" is called when that member
 * changes (a string in it changed into a look-alike included), never for a change of the member
 * "\u00e9".
 * Cost, paid by every notifying dispatch while the observer is registered, under the store's
 * lock: one walk of the value, written into a flat buffer the observer keeps (two of them, each
 * about the size of the value's JSON text) and compared with the one before; nothing is allocated
 * per node. O(size of the value): an observer on "" of a large array costs each dispatch far
 * more than one on a small value, and far less than keeping a deep copy of the value would
 * (Benchmarks/README.md, "What composition costs", has the figures). On a Swift store handed to
 * C, each comparison first encodes the whole state to a json-c tree (an allocation per node),
 * whatever the pointer: O(size of the state) per dispatch, even for a pointer to one small
 * member.
 * Returns a token, never 0, or 0 on failure: RDX_EINVAL's words for a NULL store, pointer or
 * observer, or a pointer that is not a JSON Pointer: neither "" nor starting with '/', or with a
 * '~' not followed by '0' or '1' ("/~2", "/a~").
 */
RDX_API uint64_t rdx_store_observe_pointer(rdx_store *store, const char *pointer,
                                           rdx_observer_fn observer, void *context);

/* rdx_store_observe_pointer() with a release function, as rdx_store_add_observer_full(). */
RDX_API uint64_t rdx_store_observe_pointer_full(rdx_store *store, const char *pointer,
                                                rdx_observer_fn observer, void *context,
                                                rdx_release_fn release_context);

/*
 * Returns a NEW deep copy of the value at the JSON Pointer `pointer` in the state (release it
 * with json_object_put()), or NULL: when the value is JSON null or absent (rdx_last_error() is
 * then "" for null, and names the pointer for absent), or on failure as
 * rdx_store_current_state(), or for a NULL or malformed pointer (RDX_EINVAL's words, as
 * rdx_store_observe_pointer()).
 */
RDX_API json_object *rdx_store_current_value(rdx_store *store, const char *pointer);

/* ---- Inspection: the journal ------------------------------------------------------------- */

/*
 * Records every applied action of `store` in the journal file at `path` (borrowed), as JSON
 * Lines, off the dispatch path (the store records each action once; a writer thread of the
 * journal's own reads the records and writes them):
 *   {"version":N,"identifier":"...","payload":...,"time":"2026-11-22T10:00:00.000Z"}
 * ("time": when the action was applied, to within the kernel's clock tick, a few milliseconds)
 * with "batch":F on the actions of a batch (F: its first version), and, when `record_patches` is
 * true, "patch":[...], the action's RFC 6902 patch (a snapshot and a diff per action). Lines are
 * appended; a torn last line left by a crash is cut off first. The file rotates before it would
 * pass 64 MiB, padding counted (path.1, path.2, ... up to path.8): a file is larger only when one
 * line is. A full queue (65,536 entries) makes the dispatching thread wait, after the store's
 * lock is released.
 *
 * What the file holds is whole and in order:
 *   - Only a regular file is opened, and the call never blocks: a FIFO or a device is refused.
 *   - One journal holds a file at a time (an exclusive flock(2) on it): a path another journal is
 *     writing, of another store or another process, is refused with RDX_EIO. A journal already
 *     running on this store is stopped first (after the new one took over, so every action is in
 *     one of the two); on its own path, the new one appends after its last line.
 *   - A file is appended to only when it is a journal whose last line comes before the store's
 *     next version: a file whose last line is not a journal's, or records that version or a later
 *     one (another store's journal, or this store's from a later run), is refused with RDX_EIO
 *     and left as it was. A gap (actions applied while no journal ran) is allowed; replay reports
 *     it.
 *   - A write that fails (a full disk, a file size limit: RLIMIT_FSIZE is checked before each
 *     write, so the kernel's SIGXFSZ never ends the process) keeps the lines written whole and
 *     cuts the rest off; the journal then writes nothing more, and rdx_store_flush_journal() and
 *     rdx_store_stop_journal() return RDX_EIO naming the versions not written, until it is
 *     stopped. Start it again once the cause is fixed (replay reports the gap).
 *   - A payload or patch that cannot be written (a number JSON cannot hold, NaN; a line longer
 *     than the 64 MiB the journal's reader parses) is left out of its line, which says why:
 *     "payloadError":"..." (with "replayable":false), "patchError":"...". The next
 *     rdx_store_flush_journal() or rdx_store_stop_journal() says so once (RDX_EDECODE for a value
 *     JSON cannot hold, RDX_ELIMIT for a line too long).
 * Returns RDX_OK; RDX_EINVAL for a NULL store or path, an empty path, or a call from inside a
 * reducer; RDX_EIO when the file cannot be opened, is not a regular file, or is in use by
 * another journal. On failure no journal runs (one that ran before is stopped).
 */
RDX_API rdx_status rdx_store_start_journal(rdx_store *store, const char *path, bool record_patches);

/*
 * Stops the journal: every entry recorded so far is written, the file closed. Does nothing when
 * no journal runs. The last rdx_store_release() stops it too. From inside a reducer, recording
 * stops at once and the file is finished on another thread right after (the writer needs the
 * lock the reducer holds). Returns RDX_OK; RDX_EINVAL for a NULL store; and, the journal stopped
 * all the same, what rdx_store_flush_journal() would report: RDX_EIO when a write failed,
 * RDX_EDECODE or RDX_ELIMIT when lines were written without their payload or patch.
 */
RDX_API rdx_status rdx_store_stop_journal(rdx_store *store);

/*
 * Waits until every entry recorded so far is written to the journal file (handed to the system:
 * a crash of the process no longer loses it; no fsync). Returns at once when no journal runs,
 * and from inside a reducer. Returns RDX_OK when every entry recorded so far is in the file as
 * recorded; RDX_EINVAL for a NULL store; RDX_EIO when a write failed (rdx_last_error() names the
 * system's reason and the versions not written; said by every call until the journal is
 * stopped, as it writes nothing more); RDX_EDECODE or RDX_ELIMIT when lines were written without
 * their payload or patch since the last call (each line says why; said once).
 */
RDX_API rdx_status rdx_store_flush_journal(rdx_store *store);

/* ---- Inspection: diff and patch of json-c trees (RFC 6902) ------------------------------- */

/*
 * The JSON Patch (RFC 6902) that turns `from` into `to`, both borrowed and never changed: a NEW
 * json-c array (release it with json_object_put()) of operations
 * {"op": "add" | "remove" | "replace", "path": "<JSON Pointer>", "value": ...} ("value" is
 * absent for remove, and a JSON null value is "value": null), which rdx_json_patch() applies to
 * a tree equal to `from` to make it equal to `to`. Equal trees give an empty array.
 * Objects are compared by key (removes, then changes inside shared members, then adds, each in
 * code point order of the keys); arrays by index (changes inside shared elements, then the extra elements of
 * `to` added in increasing index order, or the extra elements of `from` removed from the end
 * backwards); values of different kinds, and unequal scalars, are replaced whole ("path": ""
 * when the roots differ so). Numbers are compared by kind and value, as json-c keeps them: an
 * int and a double differ (1 and 1.0 give a replace, so that the patched tree holds `to`'s
 * kinds, as json_object_equal() asks), and two doubles compare as doubles do, but for the sign
 * of zero (0.0 and -0.0 differ: they are written apart, and a state keeps -0.0). Strings and keys are compared code point by code point, as json-c keeps them, byte
 * for byte: "\u00e9" (é) and "e\u0301" (e and a combining accent) are different strings, and
 * two keys. One changed field of one element of a 100,000-element array is one operation,
 * {"op": "replace", "path": "/todos/12345/done", "value": true}.
 * Returns NULL on failure, and rdx_last_error() says why: `from` or `to` is NULL (RDX_EINVAL's
 * words: json-c holds JSON null as a NULL pointer, so a null document cannot be passed; trees
 * must be non-NULL), nested deeper than RDX_MAX_NESTING_DEPTH, or a patch that would be
 * (RDX_ELIMIT's: a patch is a json-c tree like any other, and its array and each operation
 * object count as two levels, so a value the patch carries that is nested 255 deep or more is
 * refused so: the whole `to` replacing a root of another kind, or a member or element added or
 * replaced that deep), a non-finite number in either
 * (RDX_EDECODE's), memory (RDX_ENOMEM's).
 * Cost: both trees are read whole; then elements and members are compared, and only unequal ones
 * looked into. Touches only the two trees: call it on trees no other thread changes meanwhile.
 */
RDX_API json_object *rdx_json_diff(json_object *from, json_object *to);

/*
 * Applies the JSON Patch `patch` (borrowed: an array of add, remove and replace operations, as
 * rdx_json_diff() makes; RFC 6902's semantics, "-" as an array index appends) to `document` in
 * place (a path's keys name members byte for byte: "/e\u0301" never names "\u00e9"). All or
 * nothing: the operations are applied in order to a copy, and the document is
 * changed only when every one of them applied, and then only where it differs: members and
 * elements whose value stays are the same json_object nodes as before, printed as before, so a
 * pointer into the document stays valid unless the patch removed or replaced its node (or one
 * of the containers around it).
 * Returns RDX_OK;
 *   RDX_EINVAL  a NULL document or patch, or a patch that would change the document into another
 *               kind (an object into an array or a number: a json_object cannot become another
 *               kind in place), or change a document that is not an object or an array;
 *   RDX_EDECODE a patch that is not an array of operations ("patch[1].op: \"move\" is not
 *               supported: only add, remove and replace"), or an operation that does not apply,
 *               named by its index and path ("patch[2]: path \"/todos/7\": no such element:
 *               the array at \"/todos\" has 5 elements"): a member or element that does not
 *               exist, an index past the end, a path that is not a JSON Pointer; a non-finite
 *               number in either tree; a new key with a NUL character;
 *   RDX_ELIMIT  the document or the patch nested deeper than RDX_MAX_NESTING_DEPTH, or a document
 *               the patch would make so;
 *   RDX_ENOMEM  memory ran out.
 * On every failure the document is unchanged, except when memory runs out while the changes are
 * written into it (after every operation applied): then part of them may be.
 * Cost: the document is read whole and compared with the patched value: O(size of the
 * document), however small the patch. Touches only the two trees: call it on trees no other
 * thread uses meanwhile.
 */
RDX_API rdx_status rdx_json_patch(json_object *document, json_object *patch);

/* ---- The change feed: where each action came from, and a listener of every change ----------
 *
 * The store records each applied action once, under its lock, for everyone who consumes the
 * record: the journal (rdx_store_start_journal(), whose lines then carry
 * "source":"main.c:42"), the listeners below, and in Swift Store.changes(). A store nobody
 * consumes from records nothing.
 *
 * Where an action was dispatched from: each dispatching function has an _at form that also takes
 * the caller's file and line. Unless RDX_NO_SOURCE_MACROS is defined before this header is
 * included, macros at its end make every call of the plain names (rdx_store_dispatch_action(),
 * rdx_store_dispatch_json(), rdx_store_enqueue_action(), rdx_store_dispatch_batch_json()) such a
 * call with __FILE__ and __LINE__; the functions themselves (called with the macros defined off,
 * through a function pointer, or as (rdx_store_dispatch_action)(...)) record no source. `file` is
 * borrowed: the store keeps a copy of each distinct name it records (at most
 * RDX_MAX_SOURCE_FILES of them in a process; past that, actions from further files are recorded
 * without a source). NULL or "" is no source. Returns what the plain function returns, and
 * RDX_EINVAL for a negative line.
 */
#define RDX_MAX_SOURCE_FILES 4096

RDX_API rdx_status rdx_store_dispatch_action_at(rdx_store *store, const char *identifier,
                                                json_object *payload, const char *file, int line);
RDX_API rdx_status rdx_store_dispatch_json_at(rdx_store *store, const char *action_json,
                                              const char *file, int line);
RDX_API rdx_status rdx_store_enqueue_action_at(rdx_store *store, const char *identifier,
                                               json_object *payload, const char *file, int line);
RDX_API rdx_status rdx_store_dispatch_batch_json_at(rdx_store *store, const char *actions_json,
                                                    const char *file, int line);

/*
 * One applied action, as a change listener hears it. Everything it points to is borrowed for the
 * call: copy what you keep (json_object_deep_copy(), strdup()).
 */
typedef struct rdx_change {
    uint64_t version;        /* the version this action made */
    const char *identifier;  /* the action's identifier */
    json_object *payload;    /* its payload (a Swift store's typed action: its properties); NULL
                                for none, or one that is not JSON */
    json_object *patch;      /* with include_patches: the RFC 6902 patch from the state before the
                                action to the state after it, an array; otherwise NULL (also when
                                the state is not JSON) */
    const char *file;        /* where it was dispatched from (__FILE__, or a Swift #fileID); NULL
                                when unknown */
    unsigned line;           /* the line of that call; 0 when unknown */
    uint64_t batch_first;    /* the versions of the batch it was applied in, when it was applied */
    uint64_t batch_last;     /* in a batch of more than one action; otherwise both 0 */
    int64_t time_ns;         /* when it was applied, in nanoseconds since 1970-01-01 UTC, to within
                                the kernel's clock tick (a few milliseconds) */
} rdx_change;

/* A change listener: `store` is the store it listens to, `context` what was registered with it. */
typedef void (*rdx_change_fn)(rdx_store *store, const rdx_change *change, void *context);

/*
 * Adds a listener of every action applied from now on (from inside a reducer or listener: after
 * the current action), whoever dispatched it (C, Swift, the store's queue). It is called once per
 * action, in version order, on the thread applying it, under the store's lock, before the
 * observers of that action are told: as a reducer is. It may call rdx_store_current_state(),
 * rdx_store_current_value() and rdx_store_version(), dispatch to the store (the action is queued
 * and applied right after the current one, and heard in turn), and add or remove observers and
 * listeners, itself included; it must not wait for another thread that dispatches to the store,
 * and it delays every dispatch while it runs. With include_patches each change carries its patch,
 * which costs each action an encoding of the state and a diff.
 * Returns a token (never 0) for rdx_store_remove_change_listener(); 0 for a NULL store or
 * listener (RDX_EINVAL, rdx_last_error() says which). The listener is removed when the store's
 * last reference is released.
 */
RDX_API uint64_t rdx_store_add_change_listener(rdx_store *store, bool include_patches,
                                               rdx_change_fn listener, void *context);

/*
 * Removes a change listener. Once it returns, the listener is never called again (a call running
 * on another thread holds the store's lock, which this waits for; from inside the listener itself
 * it returns at once), so its context may be freed.
 * Returns RDX_OK; RDX_EINVAL for a NULL store, or a token that is not one of this store's
 * listeners (unknown, or already removed).
 */
RDX_API rdx_status rdx_store_remove_change_listener(rdx_store *store, uint64_t token);

/*
 * The action log: the store keeps the changes of its last actions (without patches) for readers
 * that catch up when they like (the live inspector's pages do). Cheaper than a change listener:
 * each action costs the dispatch a copy of what it holds into a ring, under the lock the dispatch
 * holds anyway, and no call. A NULL-payload action's identifier is kept once per distinct
 * identifier (at most RDX_MAX_LOGGED_IDENTIFIERS in a process; past that, and for an action with
 * a payload, the identifier and payload are copied for the log). A NULL-payload dispatch of an
 * identifier the store keeps (rdx_store_dispatch_action) carries the kept copy, which the log
 * copies as it is: such a dispatch is about as cheap with a log (or a journal) as without one.
 *
 * rdx_store_open_action_log() opens a reader's claim: the log keeps the last `capacity` changes
 * (the most any open claim asks for) until every claim is closed. A change's time is the
 * kernel's coarse clock; when every open claim is `ticked`, a change reads it only after
 * rdx_store_tick_action_log() was called, and otherwise takes the time the last such change read:
 * a ticked reader calls it every few milliseconds while actions are applied (the inspector does
 * every 4 ms), which spares each dispatch the clock.
 * Returns the claim's token (never 0); 0 for a NULL store (RDX_EINVAL's words).
 */
#define RDX_MAX_LOGGED_IDENTIFIERS 4096

RDX_API uint64_t rdx_store_open_action_log(rdx_store *store, size_t capacity, bool ticked);

/*
 * Closes a claim; the last one closed, the log stops and frees what it kept.
 * Returns RDX_OK; RDX_EINVAL for a NULL store, or a token that is not an open claim of this store.
 */
RDX_API rdx_status rdx_store_close_action_log(rdx_store *store, uint64_t token);

/* Lets the action log's next change read the clock. RDX_OK; RDX_EINVAL for a NULL store. */
RDX_API rdx_status rdx_store_tick_action_log(rdx_store *store);

/*
 * Reads the action log at one instant: calls `each` (with `context`) for each change after version
 * `after`, oldest first, at most the oldest `limit` of them, outside the store's lock, with its
 * trees and strings borrowed for the call (patch NULL; the rdx_store * it is passed is `store`);
 * `each` may call the store's functions. Sets *count (when not NULL) to the number of changes
 * passed, *dropped (when not NULL) to how many versions after `after` are older than the log
 * keeps, and *version (when not NULL) to the store's version when read.
 * Returns RDX_OK; RDX_EINVAL for a NULL store or `each`, or a store with no open claim on its log.
 */
RDX_API rdx_status rdx_store_read_action_log(rdx_store *store, uint64_t after, size_t limit,
                                             rdx_change_fn each, void *context, size_t *count,
                                             uint64_t *dropped, uint64_t *version);

/*
 * History and time travel.
 *
 * A store can keep the snapshots of its last versions, to give a past state back or to make the
 * state that of a past version again (the live inspector's state at a version, diff and restore
 * use these).
 */

/*
 * Keeps the snapshots of the last `count` versions: the current version's from now on, and each
 * later version's as it is applied (each action then costs an encoding of the state). 0 turns it
 * off and frees them; a smaller count drops the oldest. Returns RDX_OK; RDX_EINVAL for a NULL
 * store.
 */
RDX_API rdx_status rdx_store_keep_history(rdx_store *store, size_t count);

/*
 * Copies the versions the history keeps, oldest first, into `versions` (at most `capacity` of
 * them; `versions` may be NULL when `capacity` is 0) and returns how many it keeps: call with 0
 * to learn the size. 0 for a NULL store or no history.
 */
RDX_API size_t rdx_store_history_versions(rdx_store *store, uint64_t *versions, size_t capacity);

/*
 * Returns a NEW tree of the state at `version` (release it with json_object_put()): the current
 * version's, or one the history keeps. NULL, with RDX_EINVAL's words in rdx_last_error() naming
 * the versions kept, for a version the store does not have; NULL for a NULL store.
 */
RDX_API json_object *rdx_store_state_at_version(rdx_store *store, uint64_t version);

/*
 * Makes the state equal to that of `version` (kept by rdx_store_keep_history()), as a new
 * version: versions only grow. Observers hear it as an action named "RDXRestore"; a journal
 * records it as such a line. In a store with middleware it counts as one more level of
 * dispatches through middleware (what a change listener dispatches meanwhile passes the chain
 * after it). Returns RDX_OK; RDX_EINVAL for a NULL store, a version the history does not keep
 * (rdx_last_error() names those it keeps) or a call from inside a reducer; RDX_ELIMIT past
 * RDX_MAX_MIDDLEWARE_DEPTH levels.
 */
RDX_API rdx_status rdx_store_restore_version(rdx_store *store, uint64_t version);

/*
 * Stores whose order another library decides.
 *
 * For a library layered on this one that decides the order of a store's actions itself, as
 * libreduxstore-postgres.so does for a store replicated through a PostgreSQL stream
 * (reduxstore_postgres.h). A program uses such a store like any other; it does not call these.
 */

/*
 * Receives an action dispatched to a forwarding store instead of the store: `identifier`,
 * `payload` (may be NULL) and `file` (may be NULL; with `line`, where it was dispatched) are
 * borrowed for the call. It returns once the action was applied (through
 * rdx_store_apply_forwarded(), on whatever thread), with RDX_OK, or with a failure status after
 * rdx_set_last_error(): the dispatching call returns that status.
 */
typedef rdx_status
    (*rdx_forward_fn)(rdx_store *store, const char *identifier, json_object *payload,
                      const char *file, int line, void *context);

/*
 * Creates a store holding a deep copy of `state` (borrowed) at `version`, whose dispatches are
 * handed to `forward` rather than applied: rdx_store_dispatch_action(), rdx_store_dispatch_json()
 * and their _at forms; rdx_store_dispatch_batch_json() checks every element first, then hands
 * them on one by one, in order, stopping at the first failure, whose words name its element
 * ("[k]") and, from the second on, say that the elements before it were handed on. Refused with RDX_EINVAL:
 * rdx_store_enqueue_action(), rdx_store_restore_version(), and a dispatch from the thread that
 * is applying one of its actions (from its reducers, listeners and observers, which run there:
 * it would wait for itself). `release_context` (may be NULL) is called with `context` once, when
 * the store's last reference is released, before the store is freed: the library stops
 * applying to it there. Returns what rdx_store_create() returns, and NULL with RDX_EINVAL for a
 * NULL `forward`.
 */
RDX_API rdx_store *rdx_store_create_forwarding(json_object *state, uint64_t version,
                                               const rdx_reducer *reducers, size_t reducer_count,
                                               rdx_forward_fn forward, void *context,
                                               rdx_release_fn release_context, rdx_status *status);

/*
 * Applies an action to a forwarding store as its next version, as rdx_store_dispatch_action()
 * applies one to another store: its reducers, listeners and observers run on the calling
 * thread. `context` must be the one given to rdx_store_create_forwarding(): only the library
 * that decides the store's order applies actions to it (a replicated store's stream would
 * otherwise miss the action). `source` (may be NULL) is where it was dispatched, "file:line".
 * Borrows its arguments. Returns what rdx_store_dispatch_action() returns, and RDX_EINVAL,
 * changing nothing, for a store that is not a forwarding one or another `context`.
 */
RDX_API rdx_status rdx_store_apply_forwarded(rdx_store *store, void *context, const char *identifier,
                                             json_object *payload, const char *source);

/* The dispatching functions' source macros (see "The change feed" above). */
#ifndef RDX_NO_SOURCE_MACROS
#define rdx_store_dispatch_action(store, identifier, payload) \
    rdx_store_dispatch_action_at((store), (identifier), (payload), __FILE__, __LINE__)
#define rdx_store_dispatch_json(store, action_json) \
    rdx_store_dispatch_json_at((store), (action_json), __FILE__, __LINE__)
#define rdx_store_enqueue_action(store, identifier, payload) \
    rdx_store_enqueue_action_at((store), (identifier), (payload), __FILE__, __LINE__)
#define rdx_store_dispatch_batch_json(store, actions_json) \
    rdx_store_dispatch_batch_json_at((store), (actions_json), __FILE__, __LINE__)
#endif

#ifdef __cplusplus
}
#endif

#endif /* REDUXSTORE_H */
