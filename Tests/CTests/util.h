/*
 * util.h — small helpers shared by the C tests: a counter store, state snapshots as text, and
 * reading integers out of json-c trees. Everything here goes through the public header only.
 */
#ifndef REDUXSTORE_CTESTS_UTIL_H
#define REDUXSTORE_CTESTS_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "reduxstore.h"

/* The integer at `key` of an object, or -1 when the key is missing. */
static inline int64_t util_int(json_object *object, const char *key)
{
    json_object *value = NULL;
    if (object == NULL || !json_object_object_get_ex(object, key, &value)) return -1;
    return json_object_get_int64(value);
}

/* Sets `key` of an object to an integer. */
static inline void util_set_int(json_object *object, const char *key, int64_t value)
{
    json_object_object_add(object, key, json_object_new_int64(value));
}

/*
 * The counter reducer: "inc" adds 1 to state.count, "add" adds the payload's integer. Any other
 * action leaves the state alone.
 */
static inline void util_counter_reduce(json_object *state, const char *identifier,
                                       json_object *payload, void *context)
{
    (void)context;
    if (strcmp(identifier, "inc") == 0) {
        util_set_int(state, "count", util_int(state, "count") + 1);
    } else if (strcmp(identifier, "add") == 0 && payload != NULL) {
        util_set_int(state, "count", util_int(state, "count") + json_object_get_int64(payload));
    }
}

/* "set": sets state[payload.key] = payload.value; "del": removes state[payload]. */
static inline void util_keyed_reduce(json_object *state, const char *identifier,
                                     json_object *payload, void *context)
{
    json_object *key = NULL, *value = NULL;
    (void)context;
    if (strcmp(identifier, "set") == 0 && payload != NULL &&
        json_object_object_get_ex(payload, "key", &key) &&
        json_object_object_get_ex(payload, "value", &value)) {
        json_object_object_add(state, json_object_get_string(key), json_object_get(value));
    } else if (strcmp(identifier, "del") == 0 && payload != NULL) {
        json_object_object_del(state, json_object_get_string(payload));
    }
}

/* A store whose state is {"count": 0}, with the counter reducer. */
static inline rdx_store *util_counter_store(void)
{
    rdx_reducer reducer = {0};
    json_object *initial = json_object_new_object();
    rdx_store *store;
    reducer.reduce = util_counter_reduce;
    reducer.context = NULL;
    util_set_int(initial, "count", 0);
    store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    return store;
}

/* A store whose state is {}, with these reducers. */
static inline rdx_store *util_store(const rdx_reducer *reducers, size_t count)
{
    json_object *initial = json_object_new_object();
    rdx_store *store = rdx_store_create(initial, reducers, count, NULL);
    json_object_put(initial);
    return store;
}

/* state.count of the store now, or -1 when the state cannot be read. */
static inline int64_t util_count(rdx_store *store)
{
    json_object *state = rdx_store_current_state(store);
    int64_t count = util_int(state, "count");
    json_object_put(state);
    return count;
}

/* A NEW malloc'ed text of the store's state now ("null" for a NULL state); free() it. */
static inline char *util_state_text(rdx_store *store)
{
    json_object *state = rdx_store_current_state(store);
    char *text = strdup(json_object_to_json_string_ext(state, JSON_C_TO_STRING_PLAIN));
    json_object_put(state);
    return text;
}

/* Whether the environment asks for small sizes (set by run.sh under valgrind). */
static inline int util_small(void)
{
    const char *small = getenv("RDX_CTEST_SMALL");
    return small != NULL && small[0] != '\0' && strcmp(small, "0") != 0;
}

#endif /* REDUXSTORE_CTESTS_UTIL_H */
