/*
 * test_reducers.c — reducers routed by identifier (rdx_reducer.identifier): a reducer with an
 * identifier sees only the actions of exactly that identifier, one without sees every action,
 * those that apply run in array order, whatever the way an action arrives (dispatch, JSON text,
 * batch, enqueue, from inside a reducer, after rdx_store_open); the identifiers are the store's
 * own copies; a bad identifier creates no store.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

/* Appends "<context>:<identifier>" to state.log. */
static void tag_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    json_object *log = NULL;
    char entry[128];
    (void)payload;
    if (!json_object_object_get_ex(state, "log", &log)) {
        log = json_object_new_array();
        json_object_object_add(state, "log", log);
    }
    snprintf(entry, sizeof entry, "%s:%s", (const char *)context, identifier);
    json_object_array_add(log, json_object_new_string(entry));
}

/* state.log as compact JSON text in `buffer`, then cleared. */
static const char *take_log(rdx_store *store, char *buffer, size_t size)
{
    json_object *state = rdx_store_current_state(store);
    json_object *log = NULL;
    json_object_object_get_ex(state, "log", &log);
    snprintf(buffer, size, "%s", log == NULL ? "[]" : json_object_to_json_string_ext(log, JSON_C_TO_STRING_PLAIN));
    json_object_put(state);
    CHECK_STATUS(rdx_store_dispatch_action(store, "clear", NULL), RDX_OK);
    return buffer;
}

static void clear_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    (void)identifier; (void)payload; (void)context;
    json_object_object_del(state, "log");
}

/* A, every, B for "add"; every, D for "remove"; every alone for anything else. */
static rdx_store *tagged_store(char *add_identifier)
{
    static char a[] = "A", every[] = "every", b[] = "B", d[] = "D";
    rdx_reducer reducers[] = {
        {tag_reduce, a, NULL},
        {tag_reduce, every, NULL},
        {tag_reduce, b, NULL},
        {tag_reduce, d, "remove"},
        {clear_reduce, NULL, "clear"},
    };
    json_object *initial = json_object_new_object();
    rdx_status status = RDX_EIO;
    rdx_store *store;
    reducers[0].identifier = add_identifier;
    reducers[2].identifier = add_identifier;
    store = rdx_store_create(initial, reducers, sizeof reducers / sizeof reducers[0], &status);
    CHECK_STATUS(status, RDX_OK);
    json_object_put(initial);
    return store;
}

static void test_routing(void)
{
    char add[] = "add";
    char buffer[512];
    rdx_store *store;

    TEST("routing");
    store = tagged_store(add);
    CHECK(store != NULL);
    if (store == NULL) return;
    /* The store copied the identifier: the caller's buffer may change. */
    memcpy(add, "xyz", 4);

    CHECK_STATUS(rdx_store_dispatch_action(store, "add", NULL), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"A:add\",\"every:add\",\"B:add\"]");
    CHECK_STATUS(rdx_store_dispatch_action(store, "remove", NULL), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"every:remove\",\"D:remove\"]");
    CHECK_STATUS(rdx_store_dispatch_action(store, "xyz", NULL), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"every:xyz\"]");
    /* Exact bytes: neither a prefix nor a longer identifier, nor another case. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "ad", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "addd", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "Add", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "", NULL), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"every:ad\",\"every:addd\",\"every:Add\",\"every:\"]");

    /* Every way in routes the same. */
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\": \"add\", \"payload\": 1}"), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"A:add\",\"every:add\",\"B:add\"]");
    CHECK_STATUS(rdx_store_dispatch_batch_json(store, "[{\"identifier\": \"remove\"}, {\"identifier\": \"add\"}]"),
                 RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer),
              "[\"every:remove\",\"D:remove\",\"A:add\",\"every:add\",\"B:add\"]");
    CHECK_STATUS(rdx_store_enqueue_action(store, "remove", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"every:remove\",\"D:remove\"]");
    rdx_store_release(store);
}

/* A reducer for "first" dispatches "second" to its own store from inside: applied after it,
   through the reducers of "second" alone. */
static rdx_store *nested_store;

static void first_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    (void)identifier; (void)payload; (void)context;
    util_set_int(state, "first", util_int(state, "first") < 0 ? 1 : util_int(state, "first") + 1);
    CHECK_STATUS(rdx_store_dispatch_action(nested_store, "second", NULL), RDX_OK);
}

static void second_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    (void)payload; (void)context;
    CHECK_STR(identifier, "second");
    /* Runs after "first" was applied whole. */
    util_set_int(state, "second", util_int(state, "first") * 10);
}

static void test_nested_and_reopened(void)
{
    rdx_reducer reducers[] = {
        {first_reduce, NULL, "first"},
        {second_reduce, NULL, "second"},
    };
    char folder[] = "/tmp/rdx-reducers-XXXXXX";
    char path[64];
    json_object *initial = json_object_new_object();
    json_object *state;
    rdx_status status = RDX_EIO;
    rdx_store *reopened;

    TEST("nested_and_reopened");
    nested_store = rdx_store_create(initial, reducers, 2, &status);
    json_object_put(initial);
    CHECK(nested_store != NULL);
    if (nested_store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(nested_store, "first", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(nested_store), 2);
    state = rdx_store_current_state(nested_store);
    CHECK_EQ_INT(util_int(state, "first"), 1);
    CHECK_EQ_INT(util_int(state, "second"), 10);
    json_object_put(state);

    /* rdx_store_open routes the same: a saved store reopened with the same reducers. */
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/state.json", folder);
    CHECK_STATUS(rdx_store_save(nested_store, path), RDX_OK);
    rdx_store_release(nested_store);
    nested_store = reopened = rdx_store_open(path, reducers, 2, &status);
    CHECK_STATUS(status, RDX_OK);
    if (reopened != NULL) {
        CHECK_STATUS(rdx_store_dispatch_action(reopened, "first", NULL), RDX_OK);
        CHECK_STATUS(rdx_store_dispatch_action(reopened, "other", NULL), RDX_OK);
        CHECK_EQ_INT(rdx_store_version(reopened), 5);
        state = rdx_store_current_state(reopened);
        CHECK_EQ_INT(util_int(state, "first"), 2);
        CHECK_EQ_INT(util_int(state, "second"), 20);
        json_object_put(state);
        rdx_store_release(reopened);
    }
    nested_store = NULL;
    unlink(path);
    rmdir(folder);
}

/* Many identifiers (colliding in a small table): each reducer sees its own actions alone. */
static void counted_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    const char *expected = (const char *)context;
    (void)payload;
    CHECK_STR(identifier, expected);
    util_set_int(state, identifier, util_int(state, identifier) < 0 ? 1 : util_int(state, identifier) + 1);
}

/* A store of `count` counted reducers, the i-th for the identifier "<prefix>/<i>" (written into
   names[i], which must outlive the store's creation), each with its name as context. */
static rdx_store *counted_store(int count, char (*names)[24], const char *prefix)
{
    rdx_reducer *reducers = calloc((size_t)count, sizeof *reducers);
    json_object *initial = json_object_new_object();
    rdx_store *store;
    int i;
    for (i = 0; i < count; i++) {
        snprintf(names[i], sizeof names[i], "%s/%d", prefix, i);
        reducers[i].reduce = counted_reduce;
        reducers[i].context = names[i];
        reducers[i].identifier = names[i];
    }
    store = rdx_store_create(initial, reducers, (size_t)count, NULL);
    json_object_put(initial);
    free(reducers);
    return store;
}

static void test_many_identifiers(void)
{
    enum { COUNT = 300 };
    static char names[COUNT][24];
    json_object *state;
    rdx_store *store;
    int i, wrong = 0;

    TEST("many_identifiers");
    store = counted_store(COUNT, names, "action");
    CHECK(store != NULL);
    if (store == NULL) return;
    for (i = 0; i < COUNT; i++) {
        char identifier[16];
        int repeat;
        /* A buffer of the caller's own, not the pointer the reducer was registered with. */
        snprintf(identifier, sizeof identifier, "action/%d", i);
        for (repeat = 0; repeat <= i % 3; repeat++)
            CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    }
    CHECK_STATUS(rdx_store_dispatch_action(store, "action/300", NULL), RDX_OK);
    state = rdx_store_current_state(store);
    for (i = 0; i < COUNT; i++)
        if (util_int(state, names[i]) != i % 3 + 1) wrong++;
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(util_int(state, "action/300"), -1);
    CHECK_EQ_INT(json_object_object_length(state), COUNT);
    json_object_put(state);
    rdx_store_release(store);
}

/* A reducer identifier no action could carry: no store, a status and words. */
static void test_bad_identifiers(void)
{
    rdx_reducer reducers[] = {
        {tag_reduce, "F", "fine"},
        {tag_reduce, "C", NULL},
    };
    char *long_identifier = malloc(2000);
    json_object *initial = json_object_new_object();
    rdx_status status = RDX_OK;
    rdx_store *store;

    TEST("bad_identifiers");
    memset(long_identifier, 'x', 1999);
    long_identifier[1999] = '\0';
    reducers[1].identifier = long_identifier;
    store = rdx_store_create(initial, reducers, 2, &status);
    CHECK(store == NULL);
    CHECK_STATUS(status, RDX_ELIMIT);
    CHECK(strstr(rdx_last_error(), "reducers[1].identifier") != NULL);

    reducers[1].identifier = "caf\xc3";
    status = RDX_OK;
    store = rdx_store_create(initial, reducers, 2, &status);
    CHECK(store == NULL);
    CHECK_STATUS(status, RDX_EDECODE);
    CHECK(strstr(rdx_last_error(), "reducers[1].identifier") != NULL);

    /* At the limit, and in UTF-8 beyond ASCII: accepted. */
    long_identifier[RDX_MAX_IDENTIFIER_LENGTH] = '\0';
    reducers[1].identifier = long_identifier;
    store = rdx_store_create(initial, reducers, 2, &status);
    CHECK_STATUS(status, RDX_OK);
    rdx_store_release(store);
    reducers[1].identifier = "caf\xc3\xa9";
    store = rdx_store_create(initial, reducers, 2, &status);
    CHECK_STATUS(status, RDX_OK);
    if (store != NULL) {
        char buffer[256];
        CHECK_STATUS(rdx_store_dispatch_action(store, "caf\xc3\xa9", NULL), RDX_OK);
        CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"C:caf\xc3\xa9\"]");
        rdx_store_release(store);
    }
    free(long_identifier);
    json_object_put(initial);
}

/* A routed identifier is checked and routed once, then recognised by its bytes: the same address
   with other bytes (another routed identifier, one no reducer names, a bad one) is that other
   action, never the one dispatched from there before. */
/* Dispatches `kept` from `identifier` (a buffer of RDX_MAX_IDENTIFIER_LENGTH + 2 bytes or more),
   then at the same address bad UTF-8 (`kept`'s bytes but the last, then a lone lead byte) and an
   over-long identifier: each refused with its status, nothing applied. */
static void refuse_bad_bytes_after(rdx_store *store, char *identifier, const char *kept)
{
    size_t length = strlen(kept);
    strcpy(identifier, kept);
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    identifier[length - 1] = '\xc3';
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_EDECODE);
    memset(identifier, kept[0], RDX_MAX_IDENTIFIER_LENGTH + 1);
    identifier[RDX_MAX_IDENTIFIER_LENGTH + 1] = '\0';
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_ELIMIT);
}

static void test_routed_once(void)
{
    char buffer[512];
    char identifier[RDX_MAX_IDENTIFIER_LENGTH + 8];
    char add[] = "add", add_again[] = "add";
    rdx_store *store, *other;

    TEST("routed_once");
    store = tagged_store(add);
    other = tagged_store(add_again);
    CHECK(store != NULL && other != NULL);
    if (store == NULL || other == NULL) return;

    strcpy(identifier, "add");
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer),
              "[\"A:add\",\"every:add\",\"B:add\",\"A:add\",\"every:add\",\"B:add\"]");
    strcpy(identifier, "remove");
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"every:remove\",\"D:remove\"]");
    strcpy(identifier, "ad");
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    strcpy(identifier, "addd");
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"every:ad\",\"every:addd\"]");

    /* Bad bytes where a routed identifier was. */
    refuse_bad_bytes_after(store, identifier, "add");
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"A:add\",\"every:add\",\"B:add\"]");

    /* With a payload, and through the text path, after the identifier was routed once. */
    strcpy(identifier, "add");
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    {
        json_object *payload = json_object_new_int(1);
        CHECK_STATUS(rdx_store_dispatch_action(store, identifier, payload), RDX_OK);
        json_object_put(payload);
    }
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\": \"add\"}"), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer),
              "[\"A:add\",\"every:add\",\"B:add\",\"A:add\",\"every:add\",\"B:add\",\"A:add\",\"every:add\",\"B:add\"]");

    /* Another store of the same identifiers routes its own actions alike. */
    CHECK_STATUS(rdx_store_dispatch_action(other, identifier, NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(other, "remove", NULL), RDX_OK);
    CHECK_STR(take_log(other, buffer, sizeof buffer), "[\"A:add\",\"every:add\",\"B:add\",\"every:remove\",\"D:remove\"]");
    rdx_store_release(other);
    rdx_store_release(store);
}

/* Logs "every:<identifier>", or clears the log for "clear"; for "ping", dispatches "pong" to
   `context` (the store) from inside the reducer. */
static void every_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    static char every[] = "every";
    if (strcmp(identifier, "clear") == 0) {
        json_object_object_del(state, "log");
        return;
    }
    tag_reduce(state, identifier, payload, every);
    if (strcmp(identifier, "ping") == 0)
        CHECK_STATUS(rdx_store_dispatch_action(*(rdx_store **)context, "pong", NULL), RDX_OK);
}

/* A store whose reducers name no identifier keeps the first identifiers dispatched to it without
   a payload (one a slot, chosen by the caller's address): the bytes at each call still decide,
   whatever the caller's buffer holds next, and bad bytes are refused as before. */
static void test_unrouted_kept(void)
{
    enum { BUFFERS = 20 };
    static rdx_store *store;
    char buffer[2048];
    char identifier[RDX_MAX_IDENTIFIER_LENGTH + 8];
    char buffers[BUFFERS][16];
    char expected[2048];
    size_t used;
    rdx_reducer reducers[] = {{every_reduce, &store, NULL}};
    json_object *initial = json_object_new_object();
    rdx_status status = RDX_EIO;
    int i, round;

    TEST("unrouted_kept");
    store = rdx_store_create(initial, reducers, 1, &status);
    json_object_put(initial);
    CHECK_STATUS(status, RDX_OK);
    if (store == NULL) return;

    strcpy(identifier, "inc");
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    strcpy(identifier, "dec");
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    strcpy(identifier, "in");
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    strcpy(identifier, "incc");
    CHECK_STATUS(rdx_store_dispatch_action(store, identifier, NULL), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer),
              "[\"every:inc\",\"every:inc\",\"every:inc\",\"every:dec\",\"every:in\",\"every:incc\"]");

    /* Bad bytes where a kept identifier was. */
    refuse_bad_bytes_after(store, identifier, "inc");
    CHECK_STATUS(rdx_store_dispatch_action(store, NULL, NULL), RDX_EINVAL);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"every:inc\"]");

    /* More addresses than slots, each buffer's bytes changed between rounds; a payload; the
       text path; an enqueued action; a dispatch from inside a reducer. */
    for (round = 0; round < 3; round++) {
        used = (size_t)snprintf(expected, sizeof expected, "[");
        for (i = 0; i < BUFFERS; i++) {
            snprintf(buffers[i], sizeof buffers[i], "id.%d", i * 3 + round % 2);
            CHECK_STATUS(rdx_store_dispatch_action(store, buffers[i], NULL), RDX_OK);
            CHECK_STATUS(rdx_store_dispatch_action(store, buffers[i], NULL), RDX_OK);
            used += (size_t)snprintf(expected + used, sizeof expected - used, "%s\"every:%s\",\"every:%s\"",
                                     i == 0 ? "" : ",", buffers[i], buffers[i]);
        }
        snprintf(expected + used, sizeof expected - used, "]");
        CHECK_STR(take_log(store, buffer, sizeof buffer), expected);
    }
    {
        json_object *payload = json_object_new_int(1);
        CHECK_STATUS(rdx_store_dispatch_action(store, buffers[0], payload), RDX_OK);
        json_object_put(payload);
    }
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\": \"id.0\"}"), RDX_OK);
    CHECK_STATUS(rdx_store_enqueue_action(store, buffers[0], NULL), RDX_OK);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer), "[\"every:id.0\",\"every:id.0\",\"every:id.0\"]");
    for (i = 0; i < 3; i++) CHECK_STATUS(rdx_store_dispatch_action(store, "ping", NULL), RDX_OK);
    CHECK_STR(take_log(store, buffer, sizeof buffer),
              "[\"every:ping\",\"every:pong\",\"every:ping\",\"every:pong\",\"every:ping\",\"every:pong\"]");
    rdx_store_release(store);
}

/* More reducer identifiers than the process keeps (RDX_MAX_LOGGED_IDENTIFIERS): those past the
   limit are the store's own copies, routed by their bytes at each dispatch; every identifier
   still reaches its own reducer, the first time and the next. Last in this program: the kept
   names are the process's. */
static void test_past_the_kept_names(void)
{
    enum { COUNT = RDX_MAX_LOGGED_IDENTIFIERS + 100 };
    static char names[COUNT][24];
    json_object *state;
    rdx_store *store;
    int i, round, wrong = 0;

    TEST("past_the_kept_names");
    store = counted_store(COUNT, names, "kept");
    CHECK(store != NULL);
    if (store == NULL) return;
    for (round = 0; round < 2; round++) {
        for (i = 0; i < COUNT; i++) {
            char identifier[24];
            snprintf(identifier, sizeof identifier, "kept/%d", i);
            if (rdx_store_dispatch_action(store, identifier, NULL) != RDX_OK) wrong++;
            /* The same address again: the fast path where the identifier was kept. */
            if (rdx_store_dispatch_action(store, identifier, NULL) != RDX_OK) wrong++;
        }
    }
    CHECK_EQ_INT(wrong, 0);
    state = rdx_store_current_state(store);
    for (i = 0; i < COUNT; i++)
        if (util_int(state, names[i]) != 4) wrong++;
    CHECK_EQ_INT(wrong, 0);
    json_object_put(state);
    rdx_store_release(store);
}

int main(void)
{
    test_routing();
    test_routed_once();
    test_unrouted_kept();
    test_nested_and_reopened();
    test_many_identifiers();
    test_bad_identifiers();
    test_past_the_kept_names();
    return check_report();
}
