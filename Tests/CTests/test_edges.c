/*
 * test_edges.c — the C face at its edges: middleware that dispatches without end (a depth limit,
 * RDX_ELIMIT, nothing applied), reducers that keep dispatching through middleware (a loop, not
 * a recursion), a `next` used after its call, on another thread or made up (RDX_EINVAL), JSON
 * Pointers with malformed escapes (refused everywhere the library takes one),
 * rdx_last_error() quoting text that holds a NUL or another control character (escaped, not
 * cut), and pointer observers: what counts as a change, on small values and a big one.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

/* What a recursing middleware saw. */
struct recursion {
    rdx_store *other;        /* NULL: dispatch to the same store */
    int calls;               /* middleware calls */
    int refused;             /* dispatches that returned RDX_ELIMIT */
    int other_status;        /* how many returned anything but RDX_OK or RDX_ELIMIT */
    uint64_t version_before; /* the store's version around the refused dispatch */
    uint64_t version_after;
    char error[512];
    int batch;               /* dispatch a batch instead of one action */
};

/* For "deep": dispatches "deep" again (to `other`, or its own store) before passing the action
 * on, so every dispatch opens one more level until the library refuses one. */
static void recursing_middleware(rdx_store *store, const char *identifier, json_object *payload,
                                 rdx_next *next, void *context)
{
    struct recursion *seen = (struct recursion *)context;
    rdx_store *target = seen->other != NULL ? seen->other : store;
    rdx_status status;
    if (strcmp(identifier, "deep") == 0) {
        uint64_t before = rdx_store_version(store);
        seen->calls++;
        status = seen->batch ? rdx_store_dispatch_batch_json(target, "[{\"identifier\":\"deep\"}]")
                             : rdx_store_dispatch_action(target, "deep", NULL);
        if (status == RDX_ELIMIT) {
            seen->refused++;
            seen->version_before = before;
            seen->version_after = rdx_store_version(store);
            snprintf(seen->error, sizeof seen->error, "%s", rdx_last_error());
        } else if (status != RDX_OK) {
            seen->other_status++;
        }
    }
    CHECK_STATUS(rdx_next_action(next, "inc", payload), RDX_OK);
}

static rdx_store *middleware_counter_store(rdx_middleware_fn handle, void *context)
{
    rdx_reducer reducer = {0};
    rdx_middleware middleware;
    json_object *initial = json_object_new_object();
    rdx_status status = RDX_EIO;
    rdx_store *store;
    reducer.reduce = util_counter_reduce;
    reducer.context = NULL;
    middleware.handle = handle;
    middleware.context = context;
    util_set_int(initial, "count", 0);
    store = rdx_store_create_with_middleware(initial, &reducer, 1, &middleware, 1, &status);
    json_object_put(initial);
    CHECK_STATUS(status, RDX_OK);
    return store;
}

/* A middleware that dispatches to its own store without end: the dispatch that would open level
 * RDX_MAX_MIDDLEWARE_DEPTH + 1 returns RDX_ELIMIT and applies nothing; the levels below finish. */
static void test_recursion_limit(void)
{
    struct recursion seen;
    rdx_store *store;

    TEST("recursion_limit");
    CHECK_EQ_INT(RDX_MAX_MIDDLEWARE_DEPTH, 64);
    memset(&seen, 0, sizeof seen);
    store = middleware_counter_store(recursing_middleware, &seen);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(store, "deep", NULL), RDX_OK);
    CHECK_EQ_INT(seen.calls, 64);
    CHECK_EQ_INT(seen.refused, 1);
    CHECK_EQ_INT(seen.other_status, 0);
    /* The refused dispatch changed nothing: the innermost level had applied nothing yet. */
    CHECK_EQ_INT(seen.version_before, 0);
    CHECK_EQ_INT(seen.version_after, 0);
    CHECK(strstr(seen.error, "past the limit of 64") != NULL);
    CHECK(strstr(seen.error, "not applied") != NULL);
    /* Every level that was let in passed its action on. */
    CHECK_EQ_INT(util_count(store), 64);
    CHECK_EQ_INT(rdx_store_version(store), 64);
    /* The thread's depth is back to 0: a new dispatch gets the same 64 levels. */
    memset(&seen, 0, sizeof seen);
    CHECK_STATUS(rdx_store_dispatch_action(store, "deep", NULL), RDX_OK);
    CHECK_EQ_INT(seen.calls, 64);
    CHECK_EQ_INT(seen.refused, 1);
    CHECK_EQ_INT(rdx_store_version(store), 128);
    rdx_store_release(store);

    /* The same through batches. */
    memset(&seen, 0, sizeof seen);
    seen.batch = 1;
    store = middleware_counter_store(recursing_middleware, &seen);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_batch_json(store, "[{\"identifier\":\"deep\"}]"), RDX_OK);
    CHECK_EQ_INT(seen.calls, 64);
    CHECK_EQ_INT(seen.refused, 1);
    CHECK_EQ_INT(seen.other_status, 0);
    CHECK_EQ_INT(rdx_store_version(store), 64);
    rdx_store_release(store);
}

/* Two stores whose middleware dispatch to each other: the levels count on the thread, whatever
 * the store. */
static void test_recursion_across_stores(void)
{
    struct recursion a_seen, b_seen;
    rdx_store *a, *b;

    TEST("recursion_across_stores");
    memset(&a_seen, 0, sizeof a_seen);
    memset(&b_seen, 0, sizeof b_seen);
    a = middleware_counter_store(recursing_middleware, &a_seen);
    b = middleware_counter_store(recursing_middleware, &b_seen);
    if (a == NULL || b == NULL) return;
    a_seen.other = b;
    b_seen.other = a;
    CHECK_STATUS(rdx_store_dispatch_action(a, "deep", NULL), RDX_OK);
    CHECK_EQ_INT(a_seen.calls, 32);
    CHECK_EQ_INT(b_seen.calls, 32);
    CHECK_EQ_INT(a_seen.refused + b_seen.refused, 1);
    CHECK_EQ_INT(b_seen.refused, 1); /* level 64 is b's; its dispatch to a is refused */
    CHECK_EQ_INT(rdx_store_version(a), 32);
    CHECK_EQ_INT(rdx_store_version(b), 32);
    rdx_store_release(a);
    rdx_store_release(b);
}

/* "chain" with payload n > 0 dispatches "chain" n - 1 from the reducer; "spawn" dispatches "b"
 * and "c", and "b" dispatches "d". Every action is noted in the state's "trace" string. */
static void chaining_reduce(json_object *state, const char *identifier, json_object *payload,
                            void *context)
{
    rdx_store **store = (rdx_store **)context;
    json_object *trace = NULL;
    char text[256];
    if (strcmp(identifier, "chain") == 0) {
        int64_t left = json_object_get_int64(payload);
        util_set_int(state, "count", util_int(state, "count") + 1);
        if (left > 0) {
            json_object *rest = json_object_new_int64(left - 1);
            CHECK_STATUS(rdx_store_dispatch_action(*store, "chain", rest), RDX_OK);
            json_object_put(rest);
        }
        return;
    }
    json_object_object_get_ex(state, "trace", &trace);
    snprintf(text, sizeof text, "%s%s", trace != NULL ? json_object_get_string(trace) : "",
             identifier);
    json_object_object_add(state, "trace", json_object_new_string(text));
    if (strcmp(identifier, "spawn") == 0) {
        CHECK_STATUS(rdx_store_dispatch_action(*store, "b", NULL), RDX_OK);
        CHECK_STATUS(rdx_store_dispatch_action(*store, "c", NULL), RDX_OK);
    } else if (strcmp(identifier, "b") == 0) {
        CHECK_STATUS(rdx_store_dispatch_action(*store, "d", NULL), RDX_OK);
    }
}

static void passing_middleware(rdx_store *store, const char *identifier, json_object *payload,
                               rdx_next *next, void *context)
{
    (void)store;
    (*(int *)context)++;
    CHECK_STATUS(rdx_next_action(next, identifier, payload), RDX_OK);
}

static rdx_store *chaining_store(rdx_store **self, int with_middleware, int *passed)
{
    rdx_reducer reducer = {0};
    rdx_middleware middleware;
    json_object *initial = json_object_new_object();
    rdx_status status = RDX_EIO;
    reducer.reduce = chaining_reduce;
    reducer.context = self;
    middleware.handle = passing_middleware;
    middleware.context = passed;
    util_set_int(initial, "count", 0);
    *self = rdx_store_create_with_middleware(initial, &reducer, 1, &middleware,
                                             with_middleware ? 1 : 0, &status);
    json_object_put(initial);
    CHECK_STATUS(status, RDX_OK);
    return *self;
}

/* Actions a reducer dispatches pass the middleware one after the other, not inside one another:
 * a chain far longer than the depth limit (and than a thread's stack would hold) is applied
 * whole, in the same order as in a store without middleware. */
static void test_reducer_chain_through_middleware(void)
{
    rdx_store *store = NULL;
    int passed = 0;
    int64_t length = util_small() ? 2000 : 100000;
    json_object *payload = json_object_new_int64(length);
    json_object *state, *trace = NULL;
    int with;

    TEST("reducer_chain_through_middleware");
    if (chaining_store(&store, 1, &passed) == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(store, "chain", payload), RDX_OK);
    CHECK_EQ_INT(util_count(store), length + 1);
    CHECK_EQ_INT(rdx_store_version(store), length + 1);
    CHECK_EQ_INT(passed, length + 1);
    rdx_store_release(store);
    json_object_put(payload);

    /* FIFO, as without middleware: spawn, b, c, then d (which b dispatched). */
    for (with = 0; with <= 1; with++) {
        if (chaining_store(&store, with, &passed) == NULL) return;
        CHECK_STATUS(rdx_store_dispatch_action(store, "spawn", NULL), RDX_OK);
        state = rdx_store_current_state(store);
        json_object_object_get_ex(state, "trace", &trace);
        CHECK_STR(trace != NULL ? json_object_get_string(trace) : "", "spawnbcd");
        json_object_put(state);
        CHECK_EQ_INT(rdx_store_version(store), 4);
        rdx_store_release(store);
    }
}

/* What the next-keeping middleware holds. */
struct kept {
    rdx_next *next;           /* the next of the previous call */
    int calls;
    rdx_status stale_inside;  /* the previous call's next, used during a later call */
    char stale_error[512];
    rdx_status other_thread;  /* this call's next, used on another thread during the call */
    char other_error[512];
    rdx_next *for_thread;
};

static void *next_on_other_thread(void *raw)
{
    struct kept *kept = (struct kept *)raw;
    kept->other_thread = rdx_next_action(kept->for_thread, "inc", NULL);
    snprintf(kept->other_error, sizeof kept->other_error, "%s", rdx_last_error());
    return NULL;
}

/* "keep": passes the action on twice and keeps `next`; "stale": first tries the kept next of an
 * earlier call; "thread": hands its next to another thread during the call. */
static void keeping_middleware(rdx_store *store, const char *identifier, json_object *payload,
                               rdx_next *next, void *context)
{
    struct kept *kept = (struct kept *)context;
    (void)store;
    kept->calls++;
    if (strcmp(identifier, "keep") == 0) {
        CHECK_STATUS(rdx_next_action(next, "inc", payload), RDX_OK);
        CHECK_STATUS(rdx_next_action(next, "inc", payload), RDX_OK); /* twice: allowed */
        kept->next = next;
        return;
    }
    if (strcmp(identifier, "stale") == 0) {
        kept->stale_inside = rdx_next_action(kept->next, "inc", NULL);
        snprintf(kept->stale_error, sizeof kept->stale_error, "%s", rdx_last_error());
        return;
    }
    if (strcmp(identifier, "thread") == 0) {
        pthread_t thread;
        kept->for_thread = next;
        pthread_create(&thread, NULL, next_on_other_thread, kept);
        pthread_join(thread, NULL);
        return;
    }
    CHECK_STATUS(rdx_next_action(next, identifier, payload), RDX_OK);
}

/* A `next` used after its middleware returned, during a later call, on another thread during its
 * call, or made up: RDX_EINVAL with words, and nothing applied. */
static void test_stale_next(void)
{
    struct kept kept;
    rdx_store *store;
    int made_up = 0;

    TEST("stale_next");
    memset(&kept, 0, sizeof kept);
    store = middleware_counter_store(keeping_middleware, &kept);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(store, "keep", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 2);
    CHECK(kept.next != NULL);

    /* After the call returned. */
    CHECK_STATUS(rdx_next_action(kept.next, "inc", NULL), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "kept after its middleware returned") != NULL);
    CHECK_EQ_INT(rdx_store_version(store), 2);
    CHECK_EQ_INT(util_count(store), 2);

    /* During a later call, whose own next may sit at the very same stack address. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "stale", NULL), RDX_OK);
    CHECK_STATUS(kept.stale_inside, RDX_EINVAL);
    CHECK(strstr(kept.stale_error, "next is not the next of a middleware call") != NULL);
    CHECK_EQ_INT(rdx_store_version(store), 2);

    /* On another thread, while the call runs. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "thread", NULL), RDX_OK);
    CHECK_STATUS(kept.other_thread, RDX_EINVAL);
    CHECK(strstr(kept.other_error, "another thread") != NULL);
    CHECK_EQ_INT(rdx_store_version(store), 2);

    /* Made up, and NULL. */
    CHECK_STATUS(rdx_next_action((rdx_next *)&made_up, "inc", NULL), RDX_EINVAL);
    CHECK_STATUS(rdx_next_action(NULL, "inc", NULL), RDX_EINVAL);
    CHECK_STR(rdx_last_error(), "next is NULL");
    CHECK_EQ_INT(rdx_store_version(store), 2);
    CHECK_EQ_INT(util_count(store), 2);
    CHECK_EQ_INT(kept.calls, 3);
    rdx_store_release(store);
}

static void count_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    (void)store;
    (void)name;
    (void)version;
    (*(int *)context)++;
}

/* RFC 6901: "~" is followed by "0" or "1". Malformed escapes are refused with words wherever the
 * library takes a pointer; well-formed ones are accepted. */
static void test_malformed_pointers(void)
{
    static const char *const malformed[] = {"/~2", "/a~", "/~", "/a~b/c", "/a/~x", "/~~0"};
    static const char *const wellformed[] = {"/~0", "/~1", "/a~01", "/~1~0/x", "/count"};
    rdx_store *store = util_counter_store();
    json_object *document, *patch;
    char text[256];
    int calls = 0;
    size_t i;

    TEST("malformed_pointers");
    if (store == NULL) return;
    for (i = 0; i < sizeof malformed / sizeof malformed[0]; i++) {
        CHECK(rdx_store_observe_pointer(store, malformed[i], count_observer, &calls) == 0);
        CHECK(strstr(rdx_last_error(), "is not a JSON Pointer") != NULL);
        CHECK(strstr(rdx_last_error(), "\"~0\" is \"~\" and \"~1\" is \"/\"") != NULL);
        CHECK(rdx_store_observe_pointer_full(store, malformed[i], count_observer, &calls, NULL)
              == 0);
        CHECK(rdx_store_current_value(store, malformed[i]) == NULL);
        CHECK(strstr(rdx_last_error(), "is not a JSON Pointer") != NULL);

        /* rdx_json_patch's paths: refused by the core's pointer parser. */
        document = json_tokener_parse("{\"a\":{\"b\":1}}");
        snprintf(text, sizeof text, "[{\"op\":\"add\",\"path\":\"%s\",\"value\":1}]", malformed[i]);
        patch = json_tokener_parse(text);
        CHECK_STATUS(rdx_json_patch(document, patch), RDX_EDECODE);
        CHECK(strstr(rdx_last_error(), "patch[0]") != NULL);
        CHECK_STR(json_object_to_json_string_ext(document, JSON_C_TO_STRING_PLAIN),
                  "{\"a\":{\"b\":1}}");
        json_object_put(patch);
        json_object_put(document);
    }
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(calls, 0); /* nothing was registered */
    rdx_store_observe_pointer(store, "/~2", count_observer, &calls);
    CHECK_STR(rdx_last_error(), "pointer \"/~2\" is not a JSON Pointer: \"~2\" is not an escape "
                                "(\"~0\" is \"~\" and \"~1\" is \"/\")");
    rdx_store_observe_pointer(store, "/a~", count_observer, &calls);
    CHECK_STR(rdx_last_error(), "pointer \"/a~\" is not a JSON Pointer: it ends in \"~\" "
                                "(\"~0\" is \"~\" and \"~1\" is \"/\")");
    for (i = 0; i < sizeof wellformed / sizeof wellformed[0]; i++) {
        uint64_t token = rdx_store_observe_pointer(store, wellformed[i], count_observer, &calls);
        CHECK(token != 0);
        CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    }
    rdx_store_release(store);
}

/* rdx_last_error() quoting text that holds a NUL or another control character: escaped as
 * \u00XX, never cut. A json-c key cannot hold a NUL (json-c keeps keys as C strings), a string
 * can: a patch's path, and a new key made from it. */
static void test_error_with_nul(void)
{
    json_object *document = json_tokener_parse("{\"a\":{}}");
    json_object *patch;
    const char *error;

    TEST("error_with_nul");
    patch = json_tokener_parse("[{\"op\":\"add\",\"path\":\"/a/x\\u0000y\",\"value\":1}]");
    CHECK(patch != NULL && document != NULL);
    CHECK_STATUS(rdx_json_patch(document, patch), RDX_EDECODE);
    error = rdx_last_error();
    CHECK(strstr(error, "key \"x\\u0000y\" contains a NUL character") != NULL);
    CHECK(strlen(error) > strlen("patch[0]: key \"x"));
    json_object_put(patch);

    patch = json_tokener_parse("[{\"op\":\"remove\",\"path\":\"/a/\\u0000\\n\\u001b[2J\"}]");
    CHECK_STATUS(rdx_json_patch(document, patch), RDX_EDECODE);
    error = rdx_last_error();
    CHECK(strstr(error, "/a/\\u0000\\u000a\\u001b[2J") != NULL);
    CHECK(strchr(error, '\n') == NULL && strchr(error, '\033') == NULL);
    CHECK_STR(json_object_to_json_string_ext(document, JSON_C_TO_STRING_PLAIN), "{\"a\":{}}");
    json_object_put(patch);
    json_object_put(document);
}

/* "put": replaces the whole state's members with those of the payload, in the payload's order. */
static void put_reduce(json_object *state, const char *identifier, json_object *payload,
                       void *context)
{
    (void)context;
    if (strcmp(identifier, "put") != 0 || payload == NULL) return;
    while (json_object_object_length(state) > 0) {
        struct json_object_iterator first = json_object_iter_begin(state);
        char *key = strdup(json_object_iter_peek_name(&first));
        json_object_object_del(state, key);
        free(key);
    }
    json_object_object_foreach(payload, key, value) {
        json_object_object_add(state, key, json_object_get(value));
    }
}

/* A pointer observer is called when the value changed as json_object_equal sees it: members in
 * another order are the same value; an integer and a double never are; strings compare whole,
 * past a NUL. */
static void test_pointer_changes(void)
{
    static const struct {
        const char *state;
        int changed; /* from the state before */
    } steps[] = {
        {"{\"a\":{\"x\":1,\"y\":[true,null,\"s\"]},\"b\":2}", 1},
        {"{\"b\":2,\"a\":{\"y\":[true,null,\"s\"],\"x\":1}}", 0}, /* reordered */
        {"{\"a\":{\"y\":[true,null,\"s\"],\"x\":1},\"b\":2}", 0},
        {"{\"a\":{\"y\":[true,null,\"s\"],\"x\":1.0},\"b\":2}", 1}, /* int -> double */
        {"{\"a\":{\"y\":[true,null,\"s\"],\"x\":1.0},\"b\":2}", 0},
        {"{\"a\":{\"y\":[true,null,\"s\"],\"x\":-0.0},\"b\":2}", 1},
        {"{\"a\":{\"y\":[true,null,\"s\"],\"x\":0.0},\"b\":2}", 0}, /* -0 == 0 */
        {"{\"a\":{\"y\":[true,null,\"s\\u0000a\"],\"x\":0.0},\"b\":2}", 1},
        {"{\"a\":{\"y\":[true,null,\"s\\u0000b\"],\"x\":0.0},\"b\":2}", 1}, /* after NUL */
        {"{\"a\":{\"y\":[true,null,\"s\\u0000b\"],\"z\":0.0},\"b\":2}", 1}, /* key */
        {"{\"a\":{\"y\":[true,null,\"s\\u0000b\"],\"z\":0.0,\"w\":{}},\"b\":2}", 1},
        {"{\"a\":{\"y\":[true,null,\"s\\u0000b\"],\"w\":[],\"z\":0.0},\"b\":2}", 1},
        {"{\"a\":{\"y\":[true,null,\"s\\u0000b\"],\"z\":0.0,\"w\":[]},\"b\":2}", 0},
        {"{\"a\":{\"y\":[null,true,\"s\\u0000b\"],\"z\":0.0,\"w\":[]},\"b\":2}", 1},
        {"{\"a\":{\"y\":[null,true,\"s\\u0000b\"],\"z\":18446744073709551615,\"w\":[]}}", 1},
        {"{\"a\":{\"y\":[null,true,\"s\\u0000b\"],\"z\":9223372036854775807,\"w\":[]}}", 1},
        {"{\"a\":{\"z\":9223372036854775807,\"w\":[],\"y\":[null,true,\"s\\u0000b\"]}}", 0},
        {"{\"b\":1}", 1}, /* "a" gone */
        {"{\"a\":null}", 1}, /* there, null */
        {"{\"a\":null,\"b\":3}", 0},
    };
    rdx_reducer reducer = {0};
    rdx_store *store;
    int calls = 0, expected = 0;
    size_t i;

    TEST("pointer_changes");
    reducer.reduce = put_reduce;
    reducer.context = NULL;
    store = util_store(&reducer, 1);
    if (store == NULL) return;
    CHECK(rdx_store_observe_pointer(store, "/a", count_observer, &calls) != 0);
    for (i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        char action[512];
        snprintf(action, sizeof action, "{\"identifier\":\"put\",\"payload\":%s}",
                 steps[i].state);
        CHECK_STATUS(rdx_store_dispatch_json(store, action), RDX_OK);
        expected += steps[i].changed;
        if (calls != expected) {
            fprintf(stderr, "    step %zu (%s): %d calls, expected %d\n", i, steps[i].state, calls,
                    expected);
            calls = expected;
            CHECK(0);
        }
    }
    CHECK_EQ_INT(expected, 13);
    rdx_store_release(store);
}

/* "flip": flips the "done" of todos[payload]. */
static void flip_reduce(json_object *state, const char *identifier, json_object *payload,
                        void *context)
{
    json_object *todos = NULL, *todo, *done = NULL;
    (void)context;
    if (strcmp(identifier, "flip") != 0 || !json_object_object_get_ex(state, "todos", &todos)) {
        return;
    }
    todo = json_object_array_get_idx(todos, (size_t)json_object_get_int64(payload));
    if (todo == NULL || !json_object_object_get_ex(todo, "done", &done)) return;
    json_object_object_add(todo, "done", json_object_new_boolean(!json_object_get_boolean(done)));
}

/* An observer on "" of a 20,000-element state hears every flip of one element, and only those.
 * (What it costs per dispatch is a benchmark's: Benchmarks/C/observe_pointer.c.) */
static void test_pointer_observer_big_state(void)
{
    json_object *initial = json_object_new_object();
    json_object *todos = json_object_new_array();
    rdx_reducer reducer = {0};
    rdx_store *store;
    int calls = 0, i, count = util_small() ? 2000 : 20000;

    TEST("pointer_observer_big_state");
    for (i = 0; i < count; i++) {
        json_object *todo = json_object_new_object();
        char title[32];
        snprintf(title, sizeof title, "todo %d", i);
        json_object_object_add(todo, "id", json_object_new_int64(i));
        json_object_object_add(todo, "title", json_object_new_string(title));
        json_object_object_add(todo, "done", json_object_new_boolean(0));
        json_object_array_add(todos, todo);
    }
    json_object_object_add(initial, "todos", todos);
    reducer.reduce = flip_reduce;
    reducer.context = NULL;
    store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    if (store == NULL) return;
    CHECK(rdx_store_observe_pointer(store, "", count_observer, &calls) != 0);
    for (i = 0; i < 35; i++) {
        json_object *index = json_object_new_int64((i * 7919) % count);
        CHECK_STATUS(rdx_store_dispatch_action(store, "flip", index), RDX_OK);
        json_object_put(index);
    }
    CHECK_STATUS(rdx_store_dispatch_action(store, "nothing", NULL), RDX_OK); /* no change: no call */
    CHECK_EQ_INT(calls, 35);
    rdx_store_release(store);
}

int main(void)
{
    check_watchdog(CHECK_TEST_SECONDS);
    test_recursion_limit();
    test_recursion_across_stores();
    test_reducer_chain_through_middleware();
    test_stale_next();
    test_malformed_pointers();
    test_error_with_nul();
    test_pointer_changes();
    test_pointer_observer_big_state();
    return check_report();
}
