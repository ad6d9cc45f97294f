/*
 * test_store.c — creating a store, dispatching, versions, snapshots and their ownership,
 * reducers (order, arguments, in-place mutation), nested dispatch from a reducer, reads inside a
 * reducer, and reference counting of the store.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

/* Appends a string to state.log (an array the reducers keep, created on first use). */
static void log_append(json_object *state, const char *entry)
{
    json_object *log = NULL;
    if (!json_object_object_get_ex(state, "log", &log)) {
        log = json_object_new_array();
        json_object_object_add(state, "log", log);
    }
    json_object_array_add(log, json_object_new_string(entry));
}

/* state.log of the store now, as compact JSON text in `buffer`. */
static const char *log_text(rdx_store *store, char *buffer, size_t size)
{
    json_object *state = rdx_store_current_state(store);
    json_object *log = NULL;
    json_object_object_get_ex(state, "log", &log);
    snprintf(buffer, size, "%s", json_object_to_json_string_ext(log, JSON_C_TO_STRING_PLAIN));
    json_object_put(state);
    return buffer;
}

/* A reducer that appends its context (a C string) to state.log. */
static void tag_reduce(json_object *state, const char *identifier, json_object *payload,
                       void *context)
{
    (void)identifier;
    (void)payload;
    log_append(state, (const char *)context);
}

/* The store keeps a deep copy of the initial state, and every snapshot is a new, private tree. */
static void test_create_and_snapshots(void)
{
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    json_object *initial;
    json_object *expected;
    json_object *first;
    json_object *second;
    json_object *list = NULL;
    rdx_status status = RDX_EIO;
    rdx_store *store;

    TEST("create_and_snapshots");
    initial = json_tokener_parse("{\"count\": 0, \"list\": [1, 2], \"name\": \"x\"}");
    expected = json_tokener_parse("{\"count\": 0, \"list\": [1, 2], \"name\": \"x\"}");
    store = rdx_store_create(initial, &reducer, 1, &status);
    CHECK(store != NULL);
    CHECK_STATUS(status, RDX_OK);
    if (store == NULL) return;
    CHECK_EQ_INT(rdx_store_version(store), 0);

    /* The caller may change or free its tree right away: the store has its own copy. */
    json_object_object_get_ex(initial, "list", &list);
    json_object_array_add(list, json_object_new_int(3));
    util_set_int(initial, "count", 99);
    json_object_object_add(initial, "added", json_object_new_boolean(1));
    /* One put frees it: the store took no reference to the caller's tree. */
    CHECK(json_object_put(initial) == 1);

    first = rdx_store_current_state(store);
    CHECK(first != NULL);
    CHECK(json_object_equal(first, expected));

    /* A snapshot is the caller's to change: the store and later snapshots do not see it. */
    util_set_int(first, "count", 42);
    json_object_object_del(first, "list");
    second = rdx_store_current_state(store);
    CHECK(second != NULL && second != first);
    CHECK(json_object_equal(second, expected));

    /* No later action reaches a snapshot already handed out. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK(json_object_equal(second, expected));
    CHECK_EQ_INT(util_count(store), 1);

    /* Each snapshot has exactly one reference, the caller's. */
    CHECK(json_object_put(first) == 1);
    CHECK(json_object_put(second) == 1);
    json_object_put(expected);
    rdx_store_release(store);
}

/*
 * A NULL initial state is refused: NULL is how json-c's parsers say they failed (and json-c's
 * null), and C reducers could not mutate it.
 */
static void test_null_initial_state(void)
{
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    rdx_status status = RDX_OK;
    rdx_store *store;

    TEST("null_initial_state");
    store = rdx_store_create(NULL, &reducer, 1, &status);
    CHECK(store == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "initial_state") != NULL);
    /* What a failed parse hands over is refused the same way. */
    status = RDX_OK;
    store = rdx_store_create(json_tokener_parse("{not json"), &reducer, 1, &status);
    CHECK(store == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
}

/* The version counts applied actions, one per dispatch, whether or not a reducer changed anything. */
static void test_dispatch_and_version(void)
{
    rdx_store *store = util_counter_store();
    json_object *ten = json_object_new_int(10);
    int i;

    TEST("dispatch_and_version");
    CHECK(store != NULL);
    if (store == NULL) return;
    for (i = 0; i < 5; i++) CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 5);
    CHECK_EQ_INT(util_count(store), 5);
    CHECK_STATUS(rdx_store_dispatch_action(store, "add", ten), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 6);
    CHECK_EQ_INT(util_count(store), 15);
    /* An action no reducer knows is still applied: the version moves, the state does not. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "noop", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 7);
    CHECK_EQ_INT(util_count(store), 15);
    /* The same through dispatch_json. */
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\": \"add\", \"payload\": 5}"), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 8);
    CHECK_EQ_INT(util_count(store), 20);
    json_object_put(ten);
    rdx_store_release(store);
}

/* A store created with no reducers still applies actions (version moves, state stays). */
static void test_no_reducers(void)
{
    rdx_reducer unused = {util_counter_reduce, NULL, NULL};
    json_object *initial = json_tokener_parse("{\"count\": 3}");
    rdx_status status = RDX_EIO;
    rdx_store *store = rdx_store_create(initial, &unused, 0, &status);

    TEST("no_reducers");
    CHECK(store != NULL);
    CHECK_STATUS(status, RDX_OK);
    if (store != NULL) {
        CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
        CHECK_EQ_INT(rdx_store_version(store), 1);
        CHECK_EQ_INT(util_count(store), 3);
        rdx_store_release(store);
    }
    json_object_put(initial);
}

/*
 * Reducers mutate the stored tree in place: what one action leaves is what the next one gets,
 * and the tree handed to reducers is the same tree from action to action (no copy per dispatch).
 */
static json_object *in_place_seen[3];
static int in_place_calls;
static void in_place_reduce(json_object *state, const char *identifier, json_object *payload,
                            void *context)
{
    (void)identifier;
    (void)payload;
    (void)context;
    if (in_place_calls < 3) in_place_seen[in_place_calls] = state;
    in_place_calls++;
    log_append(state, "x");
}

static void test_in_place_mutation(void)
{
    rdx_reducer reducer = {in_place_reduce, NULL, NULL};
    json_object *initial = json_object_new_object();
    rdx_store *store = rdx_store_create(initial, &reducer, 1, NULL);
    char buffer[256];

    TEST("in_place_mutation");
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK(in_place_calls == 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "a", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "b", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "c", NULL), RDX_OK);
    CHECK_EQ_INT(in_place_calls, 3);
    CHECK(in_place_seen[0] != NULL && in_place_seen[0] != initial);
    CHECK(in_place_seen[0] == in_place_seen[1] && in_place_seen[1] == in_place_seen[2]);
    CHECK_STR(log_text(store, buffer, sizeof buffer), "[\"x\",\"x\",\"x\"]");
    json_object_put(initial);
    rdx_store_release(store);
}

/* Reducers run in array order, each with its own context; the store copied the array. */
static void test_reducer_order(void)
{
    static char a[] = "a", b[] = "b", c[] = "c", x[] = "X";
    rdx_reducer reducers[3] = {{0}};
    json_object *initial = json_object_new_object();
    rdx_store *store;
    char buffer[256];
    int i;

    TEST("reducer_order");
    reducers[0].reduce = tag_reduce;
    reducers[0].context = a;
    reducers[1].reduce = tag_reduce;
    reducers[1].context = b;
    reducers[2].reduce = tag_reduce;
    reducers[2].context = c;
    store = rdx_store_create(initial, reducers, 3, NULL);
    json_object_put(initial);
    CHECK(store != NULL);
    if (store == NULL) return;
    /* Changing the caller's array after create changes nothing. */
    for (i = 0; i < 3; i++) reducers[i].context = x;
    CHECK_STATUS(rdx_store_dispatch_action(store, "one", NULL), RDX_OK);
    CHECK_STR(log_text(store, buffer, sizeof buffer), "[\"a\",\"b\",\"c\"]");
    CHECK_STATUS(rdx_store_dispatch_action(store, "two", NULL), RDX_OK);
    CHECK_STR(log_text(store, buffer, sizeof buffer), "[\"a\",\"b\",\"c\",\"a\",\"b\",\"c\"]");
    rdx_store_release(store);
}

/* Reducers get the action's identifier, payload and their context. */
struct args_seen {
    char identifier[64];
    char payload[128];
    void *context;
    int calls;
};

static void args_reduce(json_object *state, const char *identifier, json_object *payload,
                        void *context)
{
    struct args_seen *seen = (struct args_seen *)context;
    (void)state;
    seen->calls++;
    seen->context = context;
    snprintf(seen->identifier, sizeof seen->identifier, "%s", identifier);
    snprintf(seen->payload, sizeof seen->payload, "%s",
             payload == NULL ? "(NULL)" : json_object_to_json_string_ext(payload, JSON_C_TO_STRING_PLAIN));
}

static void test_reducer_arguments(void)
{
    struct args_seen seen;
    rdx_reducer reducer = {0};
    json_object *payload = json_tokener_parse("{\"title\": \"milk\", \"done\": false, \"n\": [1, 2.5]}");
    rdx_store *store;

    TEST("reducer_arguments");
    memset(&seen, 0, sizeof seen);
    reducer.reduce = args_reduce;
    reducer.context = &seen;
    store = util_store(&reducer, 1);
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(store, "todo/add", payload), RDX_OK);
    CHECK_EQ_INT(seen.calls, 1);
    CHECK(seen.context == &seen);
    CHECK_STR(seen.identifier, "todo/add");
    CHECK_STR(seen.payload, json_object_to_json_string_ext(payload, JSON_C_TO_STRING_PLAIN));
    /* A UTF-8 identifier reaches the reducer byte for byte. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "caf\xc3\xa9/\xe2\x9c\x93", NULL), RDX_OK);
    CHECK_STR(seen.identifier, "caf\xc3\xa9/\xe2\x9c\x93");
    CHECK_STR(seen.payload, "(NULL)");
    /* The empty identifier is an identifier like any other. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "", NULL), RDX_OK);
    CHECK_STR(seen.identifier, "");
    CHECK_EQ_INT(seen.calls, 3);
    json_object_put(payload);
    rdx_store_release(store);
}

/*
 * Integers past 64 bits in action text: json_tokener_parse() would clamp them to a 64-bit bound;
 * the reducer gets a double node that keeps every digit.
 */
static void test_wide_integers_in_text(void)
{
    struct args_seen seen;
    rdx_reducer reducer = {0};
    rdx_store *store;
    json_object *n;
    json_object *payload;

    TEST("wide_integers_in_text");
    memset(&seen, 0, sizeof seen);
    reducer.reduce = args_reduce;
    reducer.context = &seen;
    store = util_store(&reducer, 1);
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_json(store,
        "{\"identifier\": \"wide\", \"payload\": {\"n\": 18446744073709551616,"
        " \"m\": [-170141183460469231731687303715884105728, 7]}}"), RDX_OK);
    CHECK_EQ_INT(seen.calls, 1);
    CHECK_STR(seen.payload,
              "{\"n\":18446744073709551616.0,\"m\":[-170141183460469231731687303715884105728.0,7]}");
    /* The parsed payload itself: a double, not INT64_MAX. */
    payload = json_tokener_parse(seen.payload);
    CHECK(payload != NULL && json_object_object_get_ex(payload, "n", &n));
    CHECK(payload != NULL && json_object_get_type(n) == json_type_double);
    json_object_put(payload);
    /* Integers within 64 bits stay integers. */
    CHECK_STATUS(rdx_store_dispatch_json(store,
        "{\"identifier\": \"edge\", \"payload\": [18446744073709551615, -9223372036854775808]}"), RDX_OK);
    CHECK_STR(seen.payload, "[18446744073709551615,-9223372036854775808]");
    rdx_store_release(store);
}

/*
 * Nested dispatch: an action dispatched from inside a reducer is not applied in the middle of the
 * current one; it is queued and applied right after it, in FIFO order, before the outermost
 * dispatch returns. Its payload is copied: the reducer frees its own right after the call.
 */
struct nest_context {
    rdx_store *store;
    rdx_status statuses[8];
    int status_count;
};

static void nest_dispatch(struct nest_context *nest, const char *identifier, json_object *payload)
{
    rdx_status status = rdx_store_dispatch_action(nest->store, identifier, payload);
    if (nest->status_count < 8) nest->statuses[nest->status_count++] = status;
}

static void nest_reduce(json_object *state, const char *identifier, json_object *payload,
                        void *context)
{
    struct nest_context *nest = (struct nest_context *)context;
    char entry[64];
    if (strcmp(identifier, "outer") == 0) {
        json_object *inner_payload = json_object_new_object();
        log_append(state, "outer:begin");
        util_set_int(inner_payload, "n", 7);
        nest_dispatch(nest, "inner1", NULL);
        nest_dispatch(nest, "inner2", inner_payload);
        json_object_put(inner_payload); /* freed at once: the queued action has its own copy */
        log_append(state, "outer:end");
    } else if (strcmp(identifier, "inner1") == 0) {
        log_append(state, "inner1");
        nest_dispatch(nest, "deep", NULL);
    } else if (strcmp(identifier, "inner2") == 0) {
        snprintf(entry, sizeof entry, "inner2:%d", (int)util_int(payload, "n"));
        log_append(state, entry);
    } else if (strcmp(identifier, "deep") == 0) {
        log_append(state, "deep");
    }
}

static void test_nested_dispatch(void)
{
    struct nest_context nest;
    rdx_reducer reducer = {0};
    json_object *initial = json_object_new_object();
    char buffer[256];
    int i;

    TEST("nested_dispatch");
    memset(&nest, 0, sizeof nest);
    reducer.reduce = nest_reduce;
    reducer.context = &nest;
    nest.store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    CHECK(nest.store != NULL);
    if (nest.store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(nest.store, "outer", NULL), RDX_OK);
    /* All four actions were applied before the outer dispatch returned, in FIFO order. */
    CHECK_EQ_INT(rdx_store_version(nest.store), 4);
    CHECK_STR(log_text(nest.store, buffer, sizeof buffer),
              "[\"outer:begin\",\"outer:end\",\"inner1\",\"inner2:7\",\"deep\"]");
    CHECK_EQ_INT(nest.status_count, 3);
    for (i = 0; i < nest.status_count; i++) CHECK_STATUS(nest.statuses[i], RDX_OK);
    rdx_store_release(nest.store);
}

/*
 * Bad dispatches from inside a reducer fail as they would outside (status and words), queue
 * nothing, and leave the current action alone; a good one after them is applied next.
 */
struct bad_nest {
    rdx_store *store;
    rdx_status statuses[5];
    int named[5]; /* rdx_last_error() was non-empty right after each */
};

static void bad_nest_reduce(json_object *state, const char *identifier, json_object *payload,
                            void *context)
{
    struct bad_nest *nest = (struct bad_nest *)context;
    char long_identifier[RDX_MAX_IDENTIFIER_LENGTH + 2];
    json_object *deep;
    int i;
    (void)payload;
    log_append(state, identifier);
    if (strcmp(identifier, "outer") != 0) return;
    memset(long_identifier, 'x', sizeof long_identifier - 1);
    long_identifier[sizeof long_identifier - 1] = '\0';
    deep = json_object_new_array();
    for (i = 1; i <= RDX_MAX_NESTING_DEPTH; i++) {
        json_object *outer = json_object_new_array();
        json_object_array_add(outer, deep);
        deep = outer;
    }
    nest->statuses[0] = rdx_store_dispatch_action(nest->store, NULL, NULL);
    nest->named[0] = rdx_last_error()[0] != '\0';
    nest->statuses[1] = rdx_store_dispatch_action(nest->store, long_identifier, NULL);
    nest->named[1] = rdx_last_error()[0] != '\0';
    nest->statuses[2] = rdx_store_dispatch_action(nest->store, "deep", deep);
    nest->named[2] = rdx_last_error()[0] != '\0';
    nest->statuses[3] = rdx_store_dispatch_json(nest->store, "{\"identifier\": ");
    nest->named[3] = rdx_last_error()[0] != '\0';
    nest->statuses[4] = rdx_store_dispatch_json(nest->store, "{\"identifier\": \"inner\"}");
    json_object_put(deep);
}

static void test_bad_dispatch_inside_reducer(void)
{
    struct bad_nest nest;
    rdx_reducer reducer = {0};
    json_object *initial = json_object_new_object();
    char buffer[256];
    int i;

    TEST("bad_dispatch_inside_reducer");
    memset(&nest, 0, sizeof nest);
    reducer.reduce = bad_nest_reduce;
    reducer.context = &nest;
    nest.store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    CHECK(nest.store != NULL);
    if (nest.store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(nest.store, "outer", NULL), RDX_OK);
    CHECK_STATUS(nest.statuses[0], RDX_EINVAL);
    CHECK_STATUS(nest.statuses[1], RDX_ELIMIT);
    CHECK_STATUS(nest.statuses[2], RDX_ELIMIT);
    CHECK_STATUS(nest.statuses[3], RDX_EPARSE);
    CHECK_STATUS(nest.statuses[4], RDX_OK);
    for (i = 0; i < 4; i++) CHECK(nest.named[i]);
    CHECK_EQ_INT(rdx_store_version(nest.store), 2);
    CHECK_STR(log_text(nest.store, buffer, sizeof buffer), "[\"outer\",\"inner\"]");
    rdx_store_release(nest.store);
}

/*
 * Reads inside a reducer: rdx_store_current_state() gives the state as the reducers left it so
 * far in this action (a copy: changing it does not change the store), and rdx_store_version()
 * is still that of the last completed action. Neither deadlocks.
 */
struct read_context {
    rdx_store *store;
    int64_t seen_x;
    uint64_t seen_version;
    int copy_was_state;
};

static void read_first_reduce(json_object *state, const char *identifier, json_object *payload,
                              void *context)
{
    (void)identifier;
    (void)payload;
    (void)context;
    util_set_int(state, "x", util_int(state, "x") + 1);
}

static void read_second_reduce(json_object *state, const char *identifier, json_object *payload,
                               void *context)
{
    struct read_context *read = (struct read_context *)context;
    json_object *snapshot = rdx_store_current_state(read->store);
    (void)identifier;
    (void)payload;
    read->seen_x = util_int(snapshot, "x");
    read->copy_was_state = snapshot == state;
    read->seen_version = rdx_store_version(read->store);
    if (snapshot != NULL && snapshot != state) util_set_int(snapshot, "x", 1000);
    json_object_put(snapshot);
}

static void test_reads_inside_reducer(void)
{
    struct read_context read;
    rdx_reducer reducers[2] = {{0}};
    json_object *initial = json_tokener_parse("{\"x\": 0}");

    TEST("reads_inside_reducer");
    memset(&read, 0, sizeof read);
    read.seen_x = -2;
    reducers[0].reduce = read_first_reduce;
    reducers[0].context = NULL;
    reducers[1].reduce = read_second_reduce;
    reducers[1].context = &read;
    read.store = rdx_store_create(initial, reducers, 2, NULL);
    json_object_put(initial);
    CHECK(read.store != NULL);
    if (read.store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(read.store, "step", NULL), RDX_OK);
    CHECK_EQ_INT(read.seen_x, 1);
    CHECK_EQ_INT(read.seen_version, 0);
    CHECK(!read.copy_was_state);
    CHECK_STATUS(rdx_store_dispatch_action(read.store, "step", NULL), RDX_OK);
    CHECK_EQ_INT(read.seen_x, 2);
    CHECK_EQ_INT(read.seen_version, 1);
    {
        json_object *state = rdx_store_current_state(read.store);
        CHECK_EQ_INT(util_int(state, "x"), 2); /* the reducer's change to its copy did not leak in */
        json_object_put(state);
    }
    rdx_store_release(read.store);
}

/* retain returns the same store and adds a reference; the last release frees it. */
static void test_retain_release(void)
{
    rdx_store *store = util_counter_store();
    rdx_store *again;
    int i;

    TEST("retain_release");
    CHECK(store != NULL);
    if (store == NULL) return;
    again = rdx_store_retain(store);
    CHECK(again == store);
    rdx_store_release(store); /* one reference left: the store lives on */
    CHECK_STATUS(rdx_store_dispatch_action(again, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(again), 1);
    for (i = 0; i < 100; i++) CHECK(rdx_store_retain(again) == again);
    for (i = 0; i < 100; i++) rdx_store_release(again);
    CHECK_EQ_INT(util_count(again), 1);
    rdx_store_release(again); /* the last reference: valgrind proves it is freed */

    CHECK(rdx_store_retain(NULL) == NULL);
    rdx_store_release(NULL); /* harmless */
    CHECK(1);
}

/* Releasing a store with enqueued actions and a payload-carrying queue leaks nothing. */
static void test_release_with_enqueued_actions(void)
{
    rdx_store *store = util_counter_store();
    json_object *payload = json_object_new_int(2);
    int i;

    TEST("release_with_enqueued_actions");
    CHECK(store != NULL);
    if (store == NULL) return;
    for (i = 0; i < 50; i++) CHECK_STATUS(rdx_store_enqueue_action(store, "add", payload), RDX_OK);
    json_object_put(payload);
    rdx_store_release(store);
}

int main(void)
{
    test_create_and_snapshots();
    test_null_initial_state();
    test_dispatch_and_version();
    test_no_reducers();
    test_in_place_mutation();
    test_reducer_order();
    test_reducer_arguments();
    test_wide_integers_in_text();
    test_nested_dispatch();
    test_bad_dispatch_inside_reducer();
    test_reads_inside_reducer();
    test_retain_release();
    test_release_with_enqueued_actions();
    return check_report();
}
