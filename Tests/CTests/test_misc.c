/*
 * test_misc.c — versions and status names; how payloads reach reducers ("payload": null and no
 * payload are both NULL; every other JSON value arrives as itself); payload and identifier
 * ownership (dispatch borrows, enqueue copies); states that are not objects; flush and enqueue
 * from inside a reducer; a forwarding store takes actions back only from its own library.
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

/* rdx_version() is the header's RDX_VERSION; the version macros agree with each other. */
static void test_version(void)
{
    char expected[64];

    TEST("version");
    CHECK(rdx_version() != NULL);
    CHECK_STR(rdx_version(), RDX_VERSION);
    CHECK(rdx_version() == rdx_version()); /* static */
    snprintf(expected, sizeof expected, "%d.%d.%d", RDX_VERSION_MAJOR, RDX_VERSION_MINOR,
             RDX_VERSION_PATCH);
    CHECK_STR(RDX_VERSION, expected);
    CHECK_EQ_INT(RDX_VERSION_NUMBER,
                 RDX_VERSION_MAJOR * 1000000 + RDX_VERSION_MINOR * 1000 + RDX_VERSION_PATCH);
    CHECK_STR(RDX_STATE_DID_CHANGE_NOTIFICATION, "RDXStateDidChangeNotification");
}

/* Every status has a name: not NULL, not empty, static, and different from every other. */
static void test_status_strings(void)
{
    static const rdx_status statuses[] = {RDX_OK,    RDX_EINVAL, RDX_EPARSE,   RDX_EDECODE,
                                          RDX_ELIMIT, RDX_EIO,   RDX_ECORRUPT, RDX_ENOMEM};
    size_t count = sizeof statuses / sizeof statuses[0];
    size_t i, j;

    TEST("status_strings");
    CHECK_EQ_INT(RDX_OK, 0);
    for (i = 0; i < count; i++) {
        const char *name = rdx_status_string(statuses[i]);
        CHECK_EQ_INT(statuses[i], (int)i); /* the enum counts up from RDX_OK */
        CHECK(name != NULL);
        if (name == NULL) continue;
        CHECK(name[0] != '\0');
        CHECK(rdx_status_string(statuses[i]) == name);
        for (j = 0; j < i; j++) {
            const char *other = rdx_status_string(statuses[j]);
            if (!CHECK(other != NULL && strcmp(name, other) != 0))
                fprintf(stderr, "    statuses %u and %u are both \"%s\"\n", (unsigned)i,
                        (unsigned)j, name);
        }
    }
    CHECK_STR(rdx_status_string(RDX_EINVAL), "invalid argument");
    /* A value outside the enum still gets a string, never NULL. */
    CHECK(rdx_status_string((rdx_status)99) != NULL);
    CHECK(rdx_status_string((rdx_status)-1) != NULL);
}

/* What a reducer saw of the last action. */
struct payload_seen {
    int calls;
    int was_null;
    json_type type;
    char text[256];
    char identifier[64];
};

static void payload_reduce(json_object *state, const char *identifier, json_object *payload,
                           void *context)
{
    struct payload_seen *seen = (struct payload_seen *)context;
    (void)state;
    seen->calls++;
    seen->was_null = payload == NULL;
    seen->type = json_object_get_type(payload);
    snprintf(seen->text, sizeof seen->text, "%s",
             json_object_to_json_string_ext(payload, JSON_C_TO_STRING_PLAIN));
    snprintf(seen->identifier, sizeof seen->identifier, "%s", identifier);
}

static rdx_store *payload_store(struct payload_seen *seen)
{
    rdx_reducer reducer = {0};
    reducer.reduce = payload_reduce;
    reducer.context = seen;
    memset(seen, 0, sizeof *seen);
    return util_store(&reducer, 1);
}

/*
 * "payload": null, no "payload", a NULL payload to dispatch_action and to enqueue_action: all
 * reach reducers as NULL.
 */
static void test_null_payloads(void)
{
    struct payload_seen seen;
    rdx_store *store = payload_store(&seen);

    TEST("null_payloads");
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\": \"a\", \"payload\": null}"), RDX_OK);
    CHECK_EQ_INT(seen.calls, 1);
    CHECK(seen.was_null);
    CHECK_STR(seen.identifier, "a");
    seen.was_null = 0;
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\": \"b\"}"), RDX_OK);
    CHECK_EQ_INT(seen.calls, 2);
    CHECK(seen.was_null);
    CHECK_STR(seen.identifier, "b");
    seen.was_null = 0;
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"payload\": null, \"identifier\": \"c\"}"), RDX_OK);
    CHECK(seen.was_null);
    seen.was_null = 0;
    CHECK_STATUS(rdx_store_dispatch_action(store, "d", NULL), RDX_OK);
    CHECK(seen.was_null);
    seen.was_null = 0;
    CHECK_STATUS(rdx_store_enqueue_action(store, "e", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_EQ_INT(seen.calls, 5);
    CHECK(seen.was_null);
    CHECK_STR(seen.identifier, "e");
    rdx_store_release(store);
}

/* Every other JSON value arrives as itself: false and 0 and "" are not NULL. */
static void test_payload_values(void)
{
    static const struct {
        const char *payload;
        json_type type;
    } cases[] = {
        {"false", json_type_boolean},
        {"true", json_type_boolean},
        {"0", json_type_int},
        {"-17", json_type_int},
        {"2.5", json_type_double},
        {"\"\"", json_type_string},
        {"\"caf\\u00e9\"", json_type_string},
        {"[]", json_type_array},
        {"[1, \"two\", null, {\"three\": 3}]", json_type_array},
        {"{}", json_type_object},
        {"{\"title\": \"milk\", \"done\": false, \"tags\": [\"a\"]}", json_type_object},
    };
    struct payload_seen seen;
    rdx_store *store = payload_store(&seen);
    char text[512], name[128];
    size_t i;

    CHECK(store != NULL);
    if (store == NULL) return;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_object *expected = json_tokener_parse(cases[i].payload);
        snprintf(name, sizeof name, "payload_values: %s", cases[i].payload);
        TEST(name);
        snprintf(text, sizeof text, "{\"identifier\": \"value\", \"payload\": %s}", cases[i].payload);
        seen.was_null = 1;
        CHECK_STATUS(rdx_store_dispatch_json(store, text), RDX_OK);
        CHECK(!seen.was_null);
        CHECK_EQ_INT(seen.type, cases[i].type);
        CHECK_STR(seen.text, json_object_to_json_string_ext(expected, JSON_C_TO_STRING_PLAIN));
        /* The same value as a json-c payload, dispatched and enqueued. */
        seen.was_null = 1;
        CHECK_STATUS(rdx_store_dispatch_action(store, "value", expected), RDX_OK);
        CHECK(!seen.was_null);
        CHECK_STR(seen.text, json_object_to_json_string_ext(expected, JSON_C_TO_STRING_PLAIN));
        seen.was_null = 1;
        CHECK_STATUS(rdx_store_enqueue_action(store, "value", expected), RDX_OK);
        CHECK_STATUS(rdx_store_flush(store), RDX_OK);
        CHECK(!seen.was_null);
        CHECK_STR(seen.text, json_object_to_json_string_ext(expected, JSON_C_TO_STRING_PLAIN));
        json_object_put(expected);
    }
    /* Escapes in a JSON identifier arrive decoded, as UTF-8. */
    TEST("payload_values: identifier escapes");
    CHECK_STATUS(rdx_store_dispatch_json(store, "  {\"identifier\": \"caf\\u00e9/\\\"q\\\"\"}\n"), RDX_OK);
    CHECK_STR(seen.identifier, "caf\xc3\xa9/\"q\"");
    rdx_store_release(store);
}

/*
 * dispatch_action borrows the payload: the store takes no reference (one put frees it after the
 * call) and does not change it; the caller may put it right after the call.
 */
static void test_dispatch_borrows_payload(void)
{
    struct payload_seen seen;
    rdx_store *store = payload_store(&seen);
    json_object *payload = json_tokener_parse("{\"items\": [1, 2, 3], \"name\": \"x\"}");
    json_object *copy = NULL;

    TEST("dispatch_borrows_payload");
    CHECK(store != NULL);
    if (store == NULL) return;
    json_object_deep_copy(payload, &copy, NULL);
    CHECK_STATUS(rdx_store_dispatch_action(store, "borrow", payload), RDX_OK);
    CHECK_STR(seen.text, "{\"items\":[1,2,3],\"name\":\"x\"}");
    CHECK(json_object_equal(payload, copy)); /* unchanged */
    CHECK(json_object_put(payload) == 1);    /* refcount unchanged: this put frees it */
    /* The store is fine without it. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "after", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 2);
    json_object_put(copy);
    rdx_store_release(store);
}

/*
 * enqueue_action copies the payload and the identifier: the caller changes and frees both right
 * after the call, and the reducer still sees what was enqueued (valgrind would catch a read of
 * the freed tree). The store takes no reference to the caller's tree.
 */
static void test_enqueue_copies(void)
{
    struct payload_seen seen;
    rdx_store *store = payload_store(&seen);
    json_object *payload = json_tokener_parse("{\"items\": [1, 2, 3], \"name\": \"x\"}");
    json_object *items = NULL;
    char *identifier = (char *)malloc(32);

    TEST("enqueue_copies");
    CHECK(store != NULL);
    if (store == NULL) return;
    strcpy(identifier, "enqueued");
    CHECK_STATUS(rdx_store_enqueue_action(store, identifier, payload), RDX_OK);
    /* Changed at once... */
    json_object_object_get_ex(payload, "items", &items);
    json_object_array_put_idx(items, 0, json_object_new_string("changed"));
    json_object_object_add(payload, "name", json_object_new_string("changed"));
    strcpy(identifier, "WRONG");
    /* ...and freed: one put frees it, so the store kept no reference. */
    CHECK(json_object_put(payload) == 1);
    free(identifier);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_EQ_INT(seen.calls, 1);
    CHECK_STR(seen.identifier, "enqueued");
    CHECK_STR(seen.text, "{\"items\":[1,2,3],\"name\":\"x\"}");
    rdx_store_release(store);
}

/* States need not be objects: a number, a string, an array are states like any other. */
static void append_reduce(json_object *state, const char *identifier, json_object *payload,
                          void *context)
{
    (void)context;
    (void)identifier;
    if (json_object_is_type(state, json_type_array) && payload != NULL)
        json_object_array_add(state, json_object_get(payload));
}

static void test_non_object_states(void)
{
    rdx_reducer reducer = {append_reduce, NULL, NULL};
    json_object *number = json_object_new_int(5);
    json_object *text = json_object_new_string("hello");
    json_object *list = json_object_new_array();
    json_object *payload = json_object_new_string("item");
    json_object *state;
    rdx_store *store;

    TEST("non_object_states");
    store = rdx_store_create(number, &reducer, 1, NULL);
    state = rdx_store_current_state(store);
    CHECK(json_object_is_type(state, json_type_int) && json_object_get_int(state) == 5);
    json_object_put(state);
    rdx_store_release(store);

    store = rdx_store_create(text, &reducer, 1, NULL);
    state = rdx_store_current_state(store);
    CHECK(json_object_is_type(state, json_type_string) && strcmp(json_object_get_string(state), "hello") == 0);
    json_object_put(state);
    rdx_store_release(store);

    /* The reducer appends the payload to the array state (taking its own reference to it). */
    store = rdx_store_create(list, &reducer, 1, NULL);
    CHECK_STATUS(rdx_store_dispatch_action(store, "append", payload), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "append", payload), RDX_OK);
    state = rdx_store_current_state(store);
    CHECK_STR(json_object_to_json_string_ext(state, JSON_C_TO_STRING_PLAIN), "[\"item\",\"item\"]");
    json_object_put(state);
    rdx_store_release(store);

    json_object_put(number);
    json_object_put(text);
    json_object_put(list);
    json_object_put(payload);
}

/*
 * From inside a reducer: enqueue works (the action runs later), and flush returns at once
 * without deadlocking (no enqueued action can run while a reducer runs).
 */
struct inside {
    rdx_store *store;
    rdx_status enqueue_status;
    rdx_status flush_status;
    int follow_ups;
};

static void inside_reduce(json_object *state, const char *identifier, json_object *payload,
                          void *context)
{
    struct inside *inside = (struct inside *)context;
    (void)state;
    (void)payload;
    if (strcmp(identifier, "start") == 0) {
        inside->enqueue_status = rdx_store_enqueue_action(inside->store, "follow-up", NULL);
        inside->flush_status = rdx_store_flush(inside->store);
    } else if (strcmp(identifier, "follow-up") == 0) {
        inside->follow_ups++;
    }
}

static void test_enqueue_and_flush_inside_reducer(void)
{
    struct inside inside;
    rdx_reducer reducer = {0};

    TEST("enqueue_and_flush_inside_reducer");
    memset(&inside, 0, sizeof inside);
    inside.enqueue_status = inside.flush_status = RDX_ENOMEM;
    reducer.reduce = inside_reduce;
    reducer.context = &inside;
    inside.store = util_store(&reducer, 1);
    CHECK(inside.store != NULL);
    if (inside.store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(inside.store, "start", NULL), RDX_OK);
    CHECK_STATUS(inside.enqueue_status, RDX_OK);
    CHECK_STATUS(inside.flush_status, RDX_OK);
    CHECK_STATUS(rdx_store_flush(inside.store), RDX_OK);
    CHECK_EQ_INT(inside.follow_ups, 1);
    CHECK_EQ_INT(rdx_store_version(inside.store), 2);
    rdx_store_release(inside.store);
}

/* A large state: its snapshot is whole and equal, and dispatch stays correct. */
static void test_large_state_snapshot(void)
{
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    json_object *initial = json_object_new_object();
    json_object *items = json_object_new_array();
    json_object *state;
    rdx_store *store;
    int i;

    TEST("large_state_snapshot");
    for (i = 0; i < 5000; i++) {
        json_object *item = json_object_new_object();
        util_set_int(item, "id", i);
        json_object_object_add(item, "title", json_object_new_string("a todo item"));
        json_object_object_add(item, "done", json_object_new_boolean(i % 2));
        json_object_array_add(items, item);
    }
    json_object_object_add(initial, "items", items);
    util_set_int(initial, "count", 0);
    store = rdx_store_create(initial, &reducer, 1, NULL);
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    state = rdx_store_current_state(store);
    util_set_int(initial, "count", 1);
    CHECK(json_object_equal(state, initial));
    json_object_put(state);
    json_object_put(initial);
    rdx_store_release(store);
}

/* A forwarding store's library: it applies each forwarded action back with its own context. */
struct forwarder {
    int forwarded;
};

static rdx_status forward_back(rdx_store *store, const char *identifier, json_object *payload,
                               const char *file, int line, void *context)
{
    struct forwarder *forwarder = context;
    (void)file;
    (void)line;
    forwarder->forwarded++;
    return rdx_store_apply_forwarded(store, context, identifier, payload, NULL);
}

/* Only the library that decides a forwarding store's order applies actions to it: another
 * context, or a store that is not a forwarding one, is refused and nothing changes. */
static void test_apply_forwarded_takes_the_context(void)
{
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    struct forwarder forwarder = {0};
    int other = 0;
    json_object *initial = json_tokener_parse("{\"count\":0}");
    rdx_store *store;
    rdx_store *plain;

    TEST("apply_forwarded_takes_the_context");
    store = rdx_store_create_forwarding(initial, 0, &reducer, 1, forward_back, &forwarder, NULL, NULL);
    plain = rdx_store_create(initial, &reducer, 1, NULL);
    CHECK(store != NULL && plain != NULL);
    if (store == NULL || plain == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(forwarder.forwarded, 1);
    CHECK_EQ_INT((int)rdx_store_version(store), 1);

    CHECK_STATUS(rdx_store_apply_forwarded(store, &other, "inc", NULL, NULL), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "not the one the store was created with") != NULL);
    CHECK_STATUS(rdx_store_apply_forwarded(store, NULL, "inc", NULL, NULL), RDX_EINVAL);
    CHECK_STATUS(rdx_store_apply_forwarded(plain, NULL, "inc", NULL, NULL), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "not a forwarding one") != NULL);
    CHECK_EQ_INT((int)rdx_store_version(store), 1);
    CHECK_EQ_INT((int)rdx_store_version(plain), 0);

    CHECK_STATUS(rdx_store_apply_forwarded(store, &forwarder, "inc", NULL, "lib.c:7"), RDX_OK);
    CHECK_EQ_INT((int)rdx_store_version(store), 2);
    json_object_put(initial);
    rdx_store_release(plain);
    rdx_store_release(store);
}

int main(void)
{
    test_version();
    test_status_strings();
    test_null_payloads();
    test_payload_values();
    test_dispatch_borrows_payload();
    test_enqueue_copies();
    test_non_object_states();
    test_enqueue_and_flush_inside_reducer();
    test_large_state_snapshot();
    test_apply_forwarded_takes_the_context();
    return check_report();
}
