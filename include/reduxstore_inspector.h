/*
 * reduxstore_inspector.h: the live inspector of a ReduxStore store, for C programs.
 *
 * A web page, served by the program on loopback by default, that shows a store live: its action
 * log (where each action was dispatched from, its payload, its patch), its state tree at the
 * newest version or any version the store keeps, the diff between two kept versions; and, when the
 * program allows it, restores a kept version or dispatches an action typed on the page.
 *
 *     #include <reduxstore_inspector.h>
 *
 *     rdx_inspector *inspector = rdx_inspector_start(store, NULL, &status);
 *     printf("inspect at %s\n", rdx_inspector_url(inspector));
 *     ...
 *     rdx_inspector_stop(inspector);
 *
 * Link with libreduxstore-inspector and libreduxstore:
 *     cc prog.c $(pkg-config --cflags --libs reduxstore-inspector)
 *
 * The library is a layer over the functions of reduxstore.h (it reads the store through its
 * action log, its state and its history: rdx_store_open_action_log(),
 * rdx_store_read_action_log(), rdx_store_current_state_version() and rdx_store_keep_history());
 * its web server (SwiftNIO) lives in this library alone: libreduxstore.so does not link it.
 *
 * Safety: every request to the page and its WebSocket carries the random 128-bit token in the
 * address (compared in constant time; without it or with a wrong one: 401); a WebSocket from a
 * page of another origin, or a request naming another host (DNS rebinding), is refused (403), and
 * a request with two Host headers (400), before its token or its path is looked at; at
 * most maximum_clients pages at once; a slow page is told it missed changes and never slows a
 * dispatch. The page loads nothing from any other address. The protocol between the page and the
 * program is described in the DocC article "The inspector's protocol" of ReduxStoreInspector.
 *
 * No client can wedge the program through it: a request head must arrive within 10 seconds of
 * the connection's opening (408, or closed when nothing came), a connection idle after an answer
 * is closed after 15 seconds, one that reads nothing while the inspector sends after 30; a
 * malformed request is answered 400 (414 for a request line past 8 KiB, 431 for header fields
 * past 16 KiB each, 32 KiB in all or 100 of them, 413 for a body) and closed at once, as is every
 * answer other than the page. The connections open at once are capped at half the descriptors the
 * process has left below RLIMIT_NOFILE when the inspector starts (at most 1024); past it a new
 * connection closes the oldest that has not sent a whole request head, so a flood of half-open
 * connections never keeps the page from being served. The section "Connections" of that article
 * lists these bounds.
 *
 * Thread safety: the three functions may be called from any thread, but not from inside a
 * reducer, observer, middleware or change listener of the inspected store (starting and stopping
 * wait for the server's threads, which may be waiting for the store).
 */
#ifndef REDUXSTORE_INSPECTOR_H
#define REDUXSTORE_INSPECTOR_H

#include "reduxstore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A running inspector. Opaque; rdx_inspector_stop() stops and frees it. */
typedef struct rdx_inspector rdx_inspector;

/*
 * How an inspector serves. All zeros (or NULL for the whole struct) gives the defaults.
 */
typedef struct rdx_inspector_options {
    const char *host;          /* the address to listen on; NULL: "127.0.0.1" (loopback) */
    unsigned port;             /* 0: a free port (rdx_inspector_url() names it); at most 65535 */
    int allows_restore;        /* nonzero: the page may restore a kept version (after a
                                  confirmation); 0: read-only */
    int allows_dispatch;       /* nonzero: the page may dispatch actions; 0: read-only */
    unsigned maximum_clients;  /* the most pages connected at once; 0: 8 */
    const char *const *dispatch_identifiers;
                               /* with allows_dispatch: the identifiers the page may dispatch, a
                                  NULL-terminated array (copied); an empty array (its first
                                  element NULL): none; NULL: any identifier (a payload must then
                                  be JSON the reducers accept) */
} rdx_inspector_options;

/*
 * Starts serving `store`'s inspector and returns once it listens, or NULL on failure with
 * `status` (may be NULL) set and rdx_last_error() saying why: RDX_EINVAL for a NULL store or an
 * option out of range (a port past 65535, an empty host), RDX_EIO when the address cannot be
 * bound. The inspector holds a reference to the store until it stops. With `allows_restore` it
 * makes the store keep its last 100 versions (rdx_store_keep_history()) to restore; otherwise the
 * store's history is left as it is (a history costs each dispatch a snapshot): a page then sees
 * the newest state and the patches of what is applied while it is open, and with a history
 * (rdx_store_keep_history() before or after starting) the kept versions' states and patches too.
 */
RDX_API rdx_inspector *rdx_inspector_start(rdx_store *store, const rdx_inspector_options *options,
                                           rdx_status *status);

/*
 * The page's address, token included: "http://127.0.0.1:PORT/?token=…". Owned by the inspector,
 * valid until rdx_inspector_stop(). NULL for a NULL inspector.
 */
RDX_API const char *rdx_inspector_url(const rdx_inspector *inspector);

/*
 * Stops serving: closes the pages' connections (WebSocket close code 1001, "the inspector
 * stopped"), every other connection and the listening socket, stops listening to the store,
 * releases the inspector's reference to it, and frees the inspector. Returns within 5 seconds
 * whatever the clients do (idle connections, half a request, a page that reads nothing), at once
 * when they do nothing wrong; no connection or descriptor of the inspector is left. NULL is a
 * no-op.
 */
RDX_API void rdx_inspector_stop(rdx_inspector *inspector);

#ifdef __cplusplus
}
#endif

#endif /* REDUXSTORE_INSPECTOR_H */
