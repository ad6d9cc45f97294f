/*
 * observe_pointer.c — what a pointer observer (rdx_store_observe_pointer) costs per dispatch.
 *
 * A C store whose state is {"todos": [N objects {"id", "title", "done"}]}; the reducer flips the
 * "done" of one element per action (a different one each time). Prints the time per dispatch
 * with no observer, with an observer on "" (the whole state), on "/todos" and on one element
 * that does not change, and (with a Swift store handed to C, when built with one) the same.
 *
 *   bin=$(swift build -c release --product reduxstore --show-bin-path)   # after a release build
 *   cc -O2 -Iinclude $(pkg-config --cflags json-c) Benchmarks/C/observe_pointer.c \
 *      -o /tmp/observe_pointer -L"$bin" -lreduxstore -Wl,-rpath,"$bin" $(pkg-config --libs json-c)
 *   /tmp/observe_pointer [N] [ACTIONS]     (defaults: 100000 elements, 200 actions)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "reduxstore.h"

static void toggle_reduce(json_object *state, const char *identifier, json_object *payload,
                          void *context)
{
    json_object *todos = NULL, *todo, *done = NULL;
    (void)context;
    if (strcmp(identifier, "toggle") != 0 || payload == NULL) return;
    if (!json_object_object_get_ex(state, "todos", &todos)) return;
    todo = json_object_array_get_idx(todos, (size_t)json_object_get_int64(payload));
    if (todo == NULL || !json_object_object_get_ex(todo, "done", &done)) return;
    json_object_object_add(todo, "done", json_object_new_boolean(!json_object_get_boolean(done)));
}

static void observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    (void)store;
    (void)name;
    (void)version;
    (*(long *)context)++;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Microseconds per dispatch of `actions` toggles, with an observer on `pointer` (NULL: none). */
static double measure(size_t count, int actions, const char *pointer, long *calls)
{
    json_object *state = json_object_new_object();
    json_object *todos = json_object_new_array_ext((int)count);
    rdx_reducer reducer = {toggle_reduce, NULL, NULL};
    rdx_store *store;
    double start, elapsed;
    size_t i;
    int a;
    for (i = 0; i < count; i++) {
        json_object *todo = json_object_new_object();
        char title[32];
        snprintf(title, sizeof title, "todo %zu", i);
        json_object_object_add(todo, "id", json_object_new_int64((int64_t)i));
        json_object_object_add(todo, "title", json_object_new_string(title));
        json_object_object_add(todo, "done", json_object_new_boolean(0));
        json_object_array_add(todos, todo);
    }
    json_object_object_add(state, "todos", todos);
    store = rdx_store_create(state, &reducer, 1, NULL);
    json_object_put(state);
    if (store == NULL) {
        fprintf(stderr, "rdx_store_create: %s\n", rdx_last_error());
        exit(1);
    }
    *calls = 0;
    if (pointer != NULL && rdx_store_observe_pointer(store, pointer, observer, calls) == 0) {
        fprintf(stderr, "rdx_store_observe_pointer: %s\n", rdx_last_error());
        exit(1);
    }
    start = now();
    for (a = 0; a < actions; a++) {
        json_object *index = json_object_new_int64((int64_t)((size_t)a * 7919 % count) + 1);
        rdx_store_dispatch_action(store, "toggle", index);
        json_object_put(index);
    }
    elapsed = now() - start;
    rdx_store_release(store);
    return elapsed / actions * 1e6;
}

int main(int argc, char **argv)
{
    size_t count = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : 100000;
    int actions = argc > 2 ? atoi(argv[2]) : 200;
    const char *pointers[] = {NULL, "", "/todos", "/todos/0"};
    size_t i;
    printf("%zu elements, %d actions each\n", count, actions);
    for (i = 0; i < sizeof pointers / sizeof pointers[0]; i++) {
        long calls;
        double micros = measure(count, actions, pointers[i], &calls);
        printf("  observer on %-10s %10.1f us per dispatch (%ld calls)\n",
               pointers[i] == NULL ? "(none)" : (pointers[i][0] ? pointers[i] : "\"\""), micros,
               calls);
    }
    return 0;
}
