/*
 * The ReduxStore C demo: the same todo list as the Swift demo, in a store C creates around a
 * json-c tree, changed by C reducers in place, observed, and inspected through deep copies.
 *
 * Build it inside the package:   swift run reduxstore-c-demo
 * or with a plain cc line:       see "From C" in the README.
 */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <reduxstore.h>

/* Reducer 1: the list itself. Mutates `state` in place. */
static void todos_reducer(json_object *state, const char *identifier, json_object *payload,
                          void *context)
{
    (void)context;
    json_object *todos = json_object_object_get(state, "todos");
    if (strcmp(identifier, "todo.add") == 0 && json_object_is_type(payload, json_type_string)) {
        json_object *next = json_object_object_get(state, "nextID");
        int64_t id = json_object_get_int64(next);
        json_object *todo = json_object_new_object();
        json_object_object_add(todo, "id", json_object_new_int64(id));
        json_object_object_add(todo, "title", json_object_new_string(json_object_get_string(payload)));
        json_object_object_add(todo, "done", json_object_new_boolean(0));
        json_object_array_add(todos, todo);
        json_object_set_int64(next, id + 1);
    } else if (strcmp(identifier, "todo.toggle") == 0) {
        int64_t id = json_object_get_int64(json_object_object_get(payload, "id"));
        for (size_t i = 0; i < json_object_array_length(todos); i++) {
            json_object *todo = json_object_array_get_idx(todos, i);
            if (json_object_get_int64(json_object_object_get(todo, "id")) == id) {
                json_object *done = json_object_object_get(todo, "done");
                json_object_set_boolean(done, !json_object_get_boolean(done));
            }
        }
    }
}

/* Reducer 2: statistics derived from the list, after reducer 1 ran. */
static void stats_reducer(json_object *state, const char *identifier, json_object *payload,
                          void *context)
{
    (void)identifier;
    (void)payload;
    int *actions_seen = context; /* a context of the program's own */
    json_object *todos = json_object_object_get(state, "todos");
    int64_t done = 0;
    for (size_t i = 0; i < json_object_array_length(todos); i++) {
        done += json_object_get_boolean(
            json_object_object_get(json_object_array_get_idx(todos, i), "done"));
    }
    json_object *stats = json_object_object_get(state, "stats");
    json_object_set_int64(json_object_object_get(stats, "done"), done);
    json_object_set_int64(json_object_object_get(stats, "open"),
                          (int64_t)json_object_array_length(todos) - done);
    (*actions_seen)++;
}

/* An observer: runs after each action, once the store's lock was released. */
static void print_version(rdx_store *store, const char *name, uint64_t version, void *context)
{
    (void)store;
    (void)context;
    printf("observer: %s version %llu\n", name, (unsigned long long)version);
}

int main(void)
{
    printf("libreduxstore %s (header %s)\n", rdx_version(), RDX_VERSION);

    json_object *initial = json_tokener_parse(
        "{\"todos\": [], \"nextID\": 1, \"stats\": {\"open\": 0, \"done\": 0}}");
    int actions_seen = 0;
    rdx_reducer reducers[] = {
        { todos_reducer, NULL, NULL },         /* every action */
        { stats_reducer, &actions_seen, NULL },
    };
    rdx_status status;
    rdx_store *store = rdx_store_create(initial, reducers, 2, &status);
    json_object_put(initial); /* the store keeps its own deep copy */
    if (store == NULL) {
        fprintf(stderr, "create: %s: %s\n", rdx_status_string(status), rdx_last_error());
        return 1;
    }

    uint64_t token = rdx_store_add_observer(store, RDX_STATE_DID_CHANGE_NOTIFICATION,
                                            print_version, NULL);

    json_object *title = json_object_new_string("Write the header");
    rdx_store_dispatch_action(store, "todo.add", title); /* borrowed: we still own title */
    json_object_put(title);
    rdx_store_dispatch_json(store, "{\"identifier\": \"todo.add\", \"payload\": \"Link libreduxstore.so\"}");
    rdx_store_dispatch_json(store, "{\"identifier\": \"todo.toggle\", \"payload\": {\"id\": 1}}");

    /* Bad input gets a status and words, and changes nothing. */
    status = rdx_store_dispatch_json(store, "{\"identifier\": 42}");
    printf("bad action: %s: %s (version still %llu)\n", rdx_status_string(status),
           rdx_last_error(), (unsigned long long)rdx_store_version(store));

    /* A snapshot is a new tree of our own. */
    json_object *snapshot = rdx_store_current_state(store);
    printf("snapshot at version %llu:\n%s\n", (unsigned long long)rdx_store_version(store),
           json_object_to_json_string_ext(snapshot, JSON_C_TO_STRING_PRETTY));
    json_object_put(snapshot);

    rdx_store_remove_observer(store, token);

    /* enqueue returns at once; flush waits until the queue ran. */
    for (int i = 0; i < 10; i++) {
        rdx_store_enqueue_action(store, "todo.add", NULL); /* no payload: the reducer ignores it */
    }
    rdx_store_flush(store);
    printf("after 10 enqueued actions: version %llu, reducer 2 saw %d actions\n",
           (unsigned long long)rdx_store_version(store), actions_seen);

    rdx_store_release(store);
    return 0;
}
