/*
 * test_composition.c — middleware (pass, replace, drop, dispatch from a middleware, order),
 * batches as JSON (one notification, atomic, one bad element refuses all), observing a JSON
 * Pointer (called only when that value changed), rdx_store_current_value(), and the bad inputs
 * of each.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

/* A trace of what middleware saw, as text. */
struct trace {
    char text[1024];
};

static void trace_add(struct trace *trace, const char *what)
{
    size_t used = strlen(trace->text);
    snprintf(trace->text + used, sizeof trace->text - used, "%s%s", used ? " " : "", what);
}

/* Passes every action on, noting "<tag>:<identifier>". */
static void passing_middleware(rdx_store *store, const char *identifier, json_object *payload,
                               rdx_next *next, void *context)
{
    char note[128];
    (void)store;
    snprintf(note, sizeof note, "pass:%s", identifier);
    trace_add((struct trace *)context, note);
    CHECK_STATUS(rdx_next_action(next, identifier, payload), RDX_OK);
}

/* Drops "secret"; turns "double" into "add" with twice its payload; dispatches two "inc" for
 * "two"; passes the rest. */
static void shaping_middleware(rdx_store *store, const char *identifier, json_object *payload,
                               rdx_next *next, void *context)
{
    (void)context;
    if (strcmp(identifier, "secret") == 0) return;
    if (strcmp(identifier, "double") == 0) {
        json_object *doubled = json_object_new_int64(2 * json_object_get_int64(payload));
        CHECK_STATUS(rdx_next_action(next, "add", doubled), RDX_OK);
        json_object_put(doubled);
        return;
    }
    if (strcmp(identifier, "two") == 0) {
        CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
        CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
        return;
    }
    CHECK_STATUS(rdx_next_action(next, identifier, payload), RDX_OK);
}

static void count_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    (void)store;
    (void)name;
    (void)version;
    (*(int *)context)++;
}

static rdx_store *middleware_store(struct trace *trace)
{
    rdx_reducer reducer = {0};
    rdx_middleware middleware[2];
    json_object *initial = json_object_new_object();
    rdx_status status = RDX_EIO;
    rdx_store *store;
    reducer.reduce = util_counter_reduce;
    reducer.context = NULL;
    middleware[0].handle = passing_middleware;
    middleware[0].context = trace;
    middleware[1].handle = shaping_middleware;
    middleware[1].context = NULL;
    util_set_int(initial, "count", 0);
    store = rdx_store_create_with_middleware(initial, &reducer, 1, middleware, 2, &status);
    json_object_put(initial);
    CHECK_STATUS(status, RDX_OK);
    return store;
}

/* Middleware run in order before the reducers; pass, replace, drop and dispatch all work, and a
 * dropped action changes nothing. */
static void test_middleware(void)
{
    struct trace trace;
    rdx_store *store;
    int notified = 0;
    json_object *three = json_object_new_int64(3);

    TEST("middleware");
    memset(&trace, 0, sizeof trace);
    store = middleware_store(&trace);
    if (store == NULL) return;
    CHECK(rdx_store_add_observer(store, NULL, count_observer, &notified) != 0);

    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(util_count(store), 1);
    CHECK_STATUS(rdx_store_dispatch_action(store, "secret", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 1); /* dropped: no version */
    CHECK_EQ_INT(notified, 1);                 /* and no notification */
    CHECK_STATUS(rdx_store_dispatch_action(store, "double", three), RDX_OK);
    CHECK_EQ_INT(util_count(store), 7);
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\":\"two\"}"), RDX_OK);
    CHECK_EQ_INT(util_count(store), 9);
    CHECK_EQ_INT(rdx_store_version(store), 4);
    CHECK_EQ_INT(notified, 4);
    /* Actions dispatched from a middleware went through the whole chain. */
    CHECK_STR(trace.text, "pass:inc pass:secret pass:double pass:two pass:inc pass:inc");

    CHECK_STATUS(rdx_store_enqueue_action(store, "double", three), RDX_OK);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_EQ_INT(util_count(store), 15);

    json_object_put(three);
    rdx_store_release(store);
}

/* Bad arguments to the middleware constructor and to rdx_next_action(). */
static void bad_next_middleware(rdx_store *store, const char *identifier, json_object *payload,
                                rdx_next *next, void *context)
{
    (void)store;
    (void)context;
    CHECK_STATUS(rdx_next_action(NULL, identifier, payload), RDX_EINVAL);
    CHECK_STATUS(rdx_next_action(next, NULL, payload), RDX_EINVAL);
    CHECK_STATUS(rdx_next_action(next, "bad\xff", payload), RDX_EDECODE);
    CHECK_STATUS(rdx_next_action(next, identifier, payload), RDX_OK);
}

static void test_middleware_bad_input(void)
{
    rdx_reducer reducer = {0};
    rdx_middleware middleware;
    json_object *initial = json_object_new_object();
    rdx_status status = RDX_OK;
    rdx_store *store;

    TEST("middleware_bad_input");
    reducer.reduce = util_counter_reduce;
    reducer.context = NULL;
    middleware.handle = NULL;
    middleware.context = NULL;
    store = rdx_store_create_with_middleware(initial, &reducer, 1, &middleware, 1, &status);
    CHECK(store == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "middleware[0]") != NULL);
    store = rdx_store_create_with_middleware(initial, &reducer, 1, NULL, 2, &status);
    CHECK(store == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    store = rdx_store_create_with_middleware(NULL, &reducer, 1, NULL, 0, &status);
    CHECK(store == NULL);
    CHECK_STATUS(status, RDX_EINVAL);

    middleware.handle = bad_next_middleware;
    util_set_int(initial, "count", 0);
    store = rdx_store_create_with_middleware(initial, &reducer, 1, &middleware, 1, &status);
    CHECK_STATUS(status, RDX_OK);
    if (store != NULL) {
        CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
        CHECK_EQ_INT(util_count(store), 1);
        CHECK_EQ_INT(rdx_store_version(store), 1);
        rdx_store_release(store);
    }
    json_object_put(initial);
}

/* A batch applies as one: one notification with the last version; "[]" does nothing. */
static void test_batch(void)
{
    rdx_store *store = util_counter_store();
    int notified = 0;

    TEST("batch");
    if (store == NULL) return;
    CHECK(rdx_store_add_observer(store, NULL, count_observer, &notified) != 0);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store,
                     "[{\"identifier\":\"inc\"},{\"identifier\":\"add\",\"payload\":10},"
                     "{\"identifier\":\"inc\",\"payload\":null}]"),
                 RDX_OK);
    CHECK_EQ_INT(util_count(store), 12);
    CHECK_EQ_INT(rdx_store_version(store), 3);
    CHECK_EQ_INT(notified, 1);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store, "[]"), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 3);
    CHECK_EQ_INT(notified, 1);
    rdx_store_release(store);
}

/* One bad element refuses the whole batch, naming its index; nothing is applied. */
static void test_batch_bad_input(void)
{
    rdx_store *store = util_counter_store();
    char *before;
    char *after;

    TEST("batch_bad_input");
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_batch_json(NULL, "[]"), RDX_EINVAL);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store, NULL), RDX_EINVAL);
    before = util_state_text(store);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store, "[{\"identifier\":\"inc\"},"),
                 RDX_EPARSE);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store, "{\"identifier\":\"inc\"}"), RDX_EDECODE);
    CHECK(strstr(rdx_last_error(), "expected array") != NULL);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store,
                     "[{\"identifier\":\"inc\"},{\"identifier\":\"inc\"},{\"payload\":1}]"),
                 RDX_EDECODE);
    CHECK(strstr(rdx_last_error(), "[2].identifier") != NULL);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store,
                     "[{\"identifier\":\"inc\"},{\"identifier\":7}]"),
                 RDX_EDECODE);
    CHECK(strstr(rdx_last_error(), "[1].identifier") != NULL);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store,
                     "[{\"identifier\":\"inc\"},{\"identifier\":\"inc\",\"extra\":1}]"),
                 RDX_EDECODE);
    CHECK(strstr(rdx_last_error(), "[1]") != NULL);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store, "[1]"), RDX_EDECODE);
    CHECK(strstr(rdx_last_error(), "[0]") != NULL);
    after = util_state_text(store);
    CHECK_STR(after, before);
    CHECK_EQ_INT(rdx_store_version(store), 0);
    free(before);
    free(after);
    rdx_store_release(store);
}

/* Readers on other threads never see the middle of a batch: the count stays a multiple of 3. */
struct batch_run {
    rdx_store *store;
    volatile int done;
    int torn;
};

static void *batch_writer(void *raw)
{
    struct batch_run *run = (struct batch_run *)raw;
    int i;
    for (i = 0; i < 500; i++) {
        CHECK_STATUS(rdx_store_dispatch_batch_json(run->store,
                         "[{\"identifier\":\"add\",\"payload\":1},"
                         "{\"identifier\":\"add\",\"payload\":2}]"),
                     RDX_OK);
    }
    __atomic_store_n(&run->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *batch_reader(void *raw)
{
    struct batch_run *run = (struct batch_run *)raw;
    while (!__atomic_load_n(&run->done, __ATOMIC_ACQUIRE)) {
        int64_t count = util_count(run->store);
        if (count % 3 != 0) __atomic_add_fetch(&run->torn, 1, __ATOMIC_RELAXED);
        if (rdx_store_version(run->store) % 2 != 0) __atomic_add_fetch(&run->torn, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void test_batch_atomic(void)
{
    struct batch_run run;
    pthread_t writer, reader;

    TEST("batch_atomic");
    memset(&run, 0, sizeof run);
    run.store = util_counter_store();
    if (run.store == NULL) return;
    pthread_create(&writer, NULL, batch_writer, &run);
    pthread_create(&reader, NULL, batch_reader, &run);
    pthread_join(writer, NULL);
    pthread_join(reader, NULL);
    CHECK_EQ_INT(run.torn, 0);
    CHECK_EQ_INT(util_count(run.store), 1500);
    CHECK_EQ_INT(rdx_store_version(run.store), 1000);
    rdx_store_release(run.store);
}

/* What a pointer observer was told. */
struct pointer_seen {
    int calls;
    char name[64];
    uint64_t versions[8];
};

static void pointer_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct pointer_seen *seen = (struct pointer_seen *)context;
    (void)store;
    if (seen->calls < 8) seen->versions[seen->calls] = version;
    seen->calls++;
    snprintf(seen->name, sizeof seen->name, "%s", name);
}

/* Called only when the value at the pointer changed (appearing and disappearing included). */
static void test_observe_pointer(void)
{
    rdx_reducer reducer = {0};
    rdx_store *store;
    struct pointer_seen a, whole;
    json_object *value;

    TEST("observe_pointer");
    memset(&a, 0, sizeof a);
    memset(&whole, 0, sizeof whole);
    reducer.reduce = util_keyed_reduce;
    reducer.context = NULL;
    store = util_store(&reducer, 1);
    if (store == NULL) return;
    CHECK(rdx_store_observe_pointer(store, "/a/b", pointer_observer, &a) != 0);
    CHECK(rdx_store_observe_pointer(store, "", pointer_observer, &whole) != 0);
    /* 1: "a" appears with b = 1 */
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"a\",\"value\":{\"b\":1}}}"),
                 RDX_OK);
    /* 2: another key: /a/b unchanged */
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"x\",\"value\":5}}"),
                 RDX_OK);
    /* 3: the same value again */
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"a\",\"value\":{\"b\":1}}}"),
                 RDX_OK);
    /* 4: b changes */
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"a\",\"value\":{\"b\":[2]}}}"),
                 RDX_OK);
    /* 5: b becomes null; 6: "a" disappears */
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"a\",\"value\":{\"b\":null}}}"),
                 RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\":\"del\",\"payload\":\"a\"}"),
                 RDX_OK);
    /* 7: nothing at all changes */
    CHECK_STATUS(rdx_store_dispatch_action(store, "noop", NULL), RDX_OK);
    CHECK_EQ_INT(a.calls, 4);
    CHECK_EQ_INT(a.versions[0], 1);
    CHECK_EQ_INT(a.versions[1], 4);
    CHECK_EQ_INT(a.versions[2], 5);
    CHECK_EQ_INT(a.versions[3], 6);
    CHECK_STR(a.name, "/a/b");
    CHECK_EQ_INT(whole.calls, 5); /* 1, 2, 4, 5, 6 */

    value = rdx_store_current_value(store, "/x");
    CHECK(value != NULL && json_object_get_int64(value) == 5);
    json_object_put(value);
    CHECK(rdx_store_current_value(store, "/a") == NULL);
    CHECK(strstr(rdx_last_error(), "/a") != NULL);
    CHECK(rdx_store_current_value(store, "nope") == NULL);
    CHECK(strstr(rdx_last_error(), "JSON Pointer") != NULL);
    rdx_store_release(store);
}

/* Bad arguments; removal; the release function of the _full form. */
static void release_seen(void *context)
{
    snprintf(((struct pointer_seen *)context)->name, sizeof ((struct pointer_seen *)context)->name,
             "released");
}

static void test_observe_pointer_bad_input(void)
{
    rdx_store *store = util_counter_store();
    struct pointer_seen seen;
    uint64_t token;

    TEST("observe_pointer_bad_input");
    memset(&seen, 0, sizeof seen);
    if (store == NULL) return;
    CHECK(rdx_store_observe_pointer(NULL, "/count", pointer_observer, &seen) == 0);
    CHECK(rdx_store_observe_pointer(store, NULL, pointer_observer, &seen) == 0);
    CHECK(rdx_store_observe_pointer(store, "/count", NULL, &seen) == 0);
    CHECK(rdx_store_observe_pointer(store, "count", pointer_observer, &seen) == 0);
    CHECK(strstr(rdx_last_error(), "JSON Pointer") != NULL);
    token = rdx_store_observe_pointer_full(store, "/count", pointer_observer, &seen,
                                           release_seen);
    CHECK(token != 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(seen.calls, 1);
    CHECK_STR(seen.name, "/count");
    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    CHECK_STR(seen.name, "released"); /* removal outside callbacks waited for the release */
    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_EINVAL);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(seen.calls, 1);
    CHECK_EQ_INT(rdx_store_version(store), 2);
    rdx_store_release(store);
}

int main(void)
{
    check_watchdog(CHECK_TEST_SECONDS);
    test_middleware();
    test_middleware_bad_input();
    test_batch();
    test_batch_bad_input();
    test_batch_atomic();
    test_observe_pointer();
    test_observe_pointer_bad_input();
    return check_report();
}
