/*
 * reduxstore-c-inspector-demo: a C todo store with its live inspector, for a person to look at
 * and for the browser test (Tests/InspectorBrowser/run.sh), built with a plain cc line:
 *
 *   cc Examples/CInspectorDemo/main.c -o c-inspector-demo \
 *       $(pkg-config --cflags --libs reduxstore-inspector)
 *   ./c-inspector-demo [--actions N] [--allow-restore] [--allow-dispatch] [--journal PATH]
 *
 * Applies N actions (1,000 by default: a todo added, and every third action one toggled; with
 * --journal, recorded with patches in PATH), prints the inspector's address on one line, and
 * serves until its standard input ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <reduxstore.h>
#include <reduxstore_inspector.h>

/* "todo.add" appends {"title": payload.title, "done": false}; "todo.toggle" flips todos[index]. */
static void reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    json_object *todos = NULL, *field = NULL;
    (void)context;
    if (!json_object_object_get_ex(state, "todos", &todos) || payload == NULL) return;
    if (strcmp(identifier, "todo.add") == 0 && json_object_object_get_ex(payload, "title", &field)) {
        json_object *todo = json_object_new_object();
        json_object_object_add(todo, "title", json_object_new_string(json_object_get_string(field)));
        json_object_object_add(todo, "done", json_object_new_boolean(0));
        json_object_array_add(todos, todo);
    } else if (strcmp(identifier, "todo.toggle") == 0 &&
               json_object_object_get_ex(payload, "index", &field)) {
        int64_t index = json_object_get_int64(field);
        json_object *todo, *done = NULL;
        if (index < 0 || (size_t)index >= json_object_array_length(todos)) return;
        todo = json_object_array_get_idx(todos, (size_t)index);
        if (json_object_object_get_ex(todo, "done", &done))
            json_object_object_add(todo, "done", json_object_new_boolean(!json_object_get_boolean(done)));
    }
}

int main(int argc, char **argv)
{
    rdx_reducer reducer = {reduce, NULL, NULL};
    rdx_inspector_options options;
    const char *identifiers[] = {"todo.add", "todo.toggle", NULL};
    const char *journal = NULL;
    json_object *initial = json_object_new_object();
    rdx_store *store;
    rdx_inspector *inspector;
    rdx_status status;
    long actions = 1000, index;
    int i, c;

    memset(&options, 0, sizeof options);
    options.dispatch_identifiers = identifiers;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--actions") == 0 && i + 1 < argc) actions = atol(argv[++i]);
        else if (strcmp(argv[i], "--allow-restore") == 0) options.allows_restore = 1;
        else if (strcmp(argv[i], "--allow-dispatch") == 0) options.allows_dispatch = 1;
        else if (strcmp(argv[i], "--journal") == 0 && i + 1 < argc) journal = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--actions N] [--allow-restore] [--allow-dispatch] [--journal PATH]\n", argv[0]);
            return 2;
        }
    }

    json_object_object_add(initial, "todos", json_object_new_array());
    store = rdx_store_create(initial, &reducer, 1, &status);
    json_object_put(initial);
    if (store == NULL) {
        fprintf(stderr, "rdx_store_create: %s\n", rdx_last_error());
        return 1;
    }
    if (journal != NULL && rdx_store_start_journal(store, journal, true) != RDX_OK) {
        fprintf(stderr, "rdx_store_start_journal: %s\n", rdx_last_error());
        return 1;
    }
    /* The states of the last 1,000 versions, so a page opened after the actions shows their
       patches and states too (a page sees the patches of what is applied while it is open
       without it). */
    rdx_store_keep_history(store, 1000);
    inspector = rdx_inspector_start(store, &options, &status);
    if (inspector == NULL) {
        fprintf(stderr, "rdx_inspector_start: %s: %s\n", rdx_status_string(status), rdx_last_error());
        return 1;
    }
    for (index = 0; index < actions; index++) {
        char text[128];
        if (index % 3 == 2) {
            snprintf(text, sizeof text, "{\"identifier\":\"todo.toggle\",\"payload\":{\"index\":%ld}}", index / 3);
        } else {
            snprintf(text, sizeof text, "{\"identifier\":\"todo.add\",\"payload\":{\"title\":\"todo %ld\"}}", index);
        }
        if (rdx_store_dispatch_json(store, text) != RDX_OK) {
            fprintf(stderr, "rdx_store_dispatch_json: %s\n", rdx_last_error());
            return 1;
        }
    }
    if (journal != NULL) rdx_store_flush_journal(store);
    printf("%s\n", rdx_inspector_url(inspector));
    fflush(stdout);
    while ((c = getchar()) != EOF) {}
    rdx_inspector_stop(inspector);
    if (journal != NULL) rdx_store_stop_journal(store);
    rdx_store_release(store);
    return 0;
}
