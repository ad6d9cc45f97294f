/*
 * test_change_feed.c — the change feed from C: the dispatching macros record __FILE__ and
 * __LINE__ (the journal's "source", a listener's file and line), the plain functions record none,
 * a borrowed file name is copied, listeners hear every action once in version order with its
 * payload, patch and batch, may read, dispatch and remove themselves from inside, first hear the
 * next action when added while one is applied, are removed at the last release, and bad arguments
 * change nothing.
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

#define MAX_HEARD 64

/* What a listener heard: copies of each change's fields. */
typedef struct heard {
    pthread_mutex_t lock;
    int count;
    uint64_t versions[MAX_HEARD];
    char identifiers[MAX_HEARD][32];
    char payloads[MAX_HEARD][128];
    char patches[MAX_HEARD][256];
    char files[MAX_HEARD][128];
    unsigned lines[MAX_HEARD];
    uint64_t batch_first[MAX_HEARD], batch_last[MAX_HEARD];
    int64_t times[MAX_HEARD];
    int64_t counts_seen[MAX_HEARD]; /* state.count read from inside the listener */
} heard;

static void heard_init(heard *h)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->lock, NULL);
}

static void copy_text(char *into, size_t size, const char *text)
{
    snprintf(into, size, "%s", text == NULL ? "(null)" : text);
}

static void record_change(rdx_store *store, const rdx_change *change, void *context)
{
    heard *h = context;
    int i;
    pthread_mutex_lock(&h->lock);
    i = h->count;
    if (i < MAX_HEARD) {
        h->versions[i] = change->version;
        copy_text(h->identifiers[i], sizeof h->identifiers[i], change->identifier);
        copy_text(h->payloads[i], sizeof h->payloads[i],
                  change->payload == NULL ? NULL
                                          : json_object_to_json_string_ext(change->payload, JSON_C_TO_STRING_PLAIN));
        copy_text(h->patches[i], sizeof h->patches[i],
                  change->patch == NULL ? NULL
                                        : json_object_to_json_string_ext(change->patch, JSON_C_TO_STRING_PLAIN));
        copy_text(h->files[i], sizeof h->files[i], change->file);
        h->lines[i] = change->line;
        h->batch_first[i] = change->batch_first;
        h->batch_last[i] = change->batch_last;
        h->times[i] = change->time_ns;
        h->counts_seen[i] = util_count(store);
    }
    h->count++;
    pthread_mutex_unlock(&h->lock);
}

static int ends_with(const char *text, const char *end)
{
    size_t a = strlen(text), b = strlen(end);
    return a >= b && strcmp(text + a - b, end) == 0;
}

static void test_listener_hears_each_action(void)
{
    rdx_store *store = util_counter_store();
    heard h;
    uint64_t token;
    json_object *two = json_object_new_int(2);
    int line;
    TEST("a listener hears each action once, in version order, with payload, source and batch");
    heard_init(&h);
    token = rdx_store_add_change_listener(store, false, record_change, &h);
    CHECK(token != 0);
    line = __LINE__ + 1;
    CHECK_STATUS(rdx_store_dispatch_action(store, "add", two), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\":\"inc\"}"), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store, "[{\"identifier\":\"inc\"},{\"identifier\":\"add\",\"payload\":5}]"),
                 RDX_OK);
    CHECK_STATUS(rdx_store_enqueue_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_EQ_INT(h.count, 5);
    CHECK_EQ_INT(h.versions[0], 1);
    CHECK_EQ_INT(h.versions[4], 5);
    CHECK(strcmp(h.identifiers[0], "add") == 0);
    CHECK(strcmp(h.payloads[0], "2") == 0);
    CHECK(strcmp(h.payloads[1], "(null)") == 0);
    CHECK(strcmp(h.patches[0], "(null)") == 0);
    CHECK(ends_with(h.files[0], "test_change_feed.c"));
    CHECK_EQ_INT(h.lines[0], line);
    CHECK_EQ_INT(h.lines[1], line + 1);
    CHECK_EQ_INT(h.lines[2], line + 2);
    CHECK_EQ_INT(h.lines[3], line + 2); /* both actions of the batch */
    CHECK_EQ_INT(h.lines[4], line + 4);
    CHECK(ends_with(h.files[4], "test_change_feed.c"));
    CHECK_EQ_INT(h.batch_first[0], 0);
    CHECK_EQ_INT(h.batch_first[2], 3);
    CHECK_EQ_INT(h.batch_last[2], 4);
    CHECK_EQ_INT(h.batch_first[3], 3);
    CHECK_EQ_INT(h.batch_last[3], 4);
    CHECK(strcmp(h.payloads[3], "5") == 0);
    /* Called under the lock as a reducer is: the state read inside is the state after the action. */
    CHECK_EQ_INT(h.counts_seen[0], 2);
    CHECK_EQ_INT(h.counts_seen[4], 10);
    CHECK(h.times[0] > (int64_t)1700000000 * 1000000000);
    CHECK_STATUS(rdx_store_remove_change_listener(store, token), RDX_OK);
    CHECK_STATUS(rdx_store_remove_change_listener(store, token), RDX_EINVAL);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(h.count, 5);
    json_object_put(two);
    rdx_store_release(store);
}

static void test_plain_functions_record_no_source(void)
{
    rdx_store *store = util_counter_store();
    heard h;
    char *name = strdup("src/borrowed_name.c");
    TEST("the plain functions record no source; an _at form's file is copied, NULL is none");
    heard_init(&h);
    CHECK(rdx_store_add_change_listener(store, false, record_change, &h) != 0);
    CHECK_STATUS((rdx_store_dispatch_action)(store, "inc", NULL), RDX_OK);
    CHECK_STATUS((rdx_store_dispatch_json)(store, "{\"identifier\":\"inc\"}"), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action_at(store, "inc", NULL, NULL, 12), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action_at(store, "inc", NULL, "", 12), RDX_OK);
    /* Enqueued, then the name freed and overwritten before the action is applied. */
    CHECK_STATUS(rdx_store_enqueue_action_at(store, "inc", NULL, name, 77), RDX_OK);
    memset(name, 'x', strlen(name));
    free(name);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_EQ_INT(h.count, 5);
    CHECK(strcmp(h.files[0], "(null)") == 0);
    CHECK_EQ_INT(h.lines[0], 0);
    CHECK(strcmp(h.files[1], "(null)") == 0);
    CHECK(strcmp(h.files[2], "(null)") == 0);
    CHECK(strcmp(h.files[3], "(null)") == 0);
    CHECK(strcmp(h.files[4], "src/borrowed_name.c") == 0);
    CHECK_EQ_INT(h.lines[4], 77);
    rdx_store_release(store);
}

static void test_bad_arguments(void)
{
    rdx_store *store = util_counter_store();
    heard h;
    TEST("bad arguments: a status and words, and nothing changes");
    heard_init(&h);
    CHECK_EQ_INT(rdx_store_add_change_listener(NULL, false, record_change, &h), 0);
    CHECK(strstr(rdx_last_error(), "store is NULL") != NULL);
    CHECK_EQ_INT(rdx_store_add_change_listener(store, false, NULL, &h), 0);
    CHECK(strstr(rdx_last_error(), "listener is NULL") != NULL);
    CHECK_STATUS(rdx_store_remove_change_listener(NULL, 1), RDX_EINVAL);
    CHECK_STATUS(rdx_store_remove_change_listener(store, 0), RDX_EINVAL);
    CHECK_STATUS(rdx_store_remove_change_listener(store, 999999), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "not a change listener") != NULL);
    CHECK_STATUS(rdx_store_dispatch_action_at(store, "inc", NULL, "a.c", -1), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "line") != NULL);
    CHECK_STATUS(rdx_store_dispatch_json_at(store, "{\"identifier\":\"inc\"}", "a.c", -5), RDX_EINVAL);
    CHECK_STATUS(rdx_store_enqueue_action_at(store, "inc", NULL, "a.c", -5), RDX_EINVAL);
    CHECK_STATUS(rdx_store_dispatch_batch_json_at(store, "[]", "a.c", -5), RDX_EINVAL);
    CHECK_STATUS(rdx_store_dispatch_action_at(NULL, "inc", NULL, "a.c", 1), RDX_EINVAL);
    CHECK_STATUS(rdx_store_dispatch_json_at(store, "{", "a.c", 1), RDX_EPARSE);
    CHECK_EQ_INT(rdx_store_version(store), 0);
    rdx_store_release(store);
}

static void test_patches(void)
{
    rdx_store *store = util_counter_store();
    heard plain, patched;
    TEST("include_patches: each change carries its RFC 6902 patch; another listener none");
    heard_init(&plain);
    heard_init(&patched);
    CHECK(rdx_store_add_change_listener(store, false, record_change, &plain) != 0);
    CHECK(rdx_store_add_change_listener(store, true, record_change, &patched) != 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "noop", NULL), RDX_OK);
    CHECK_EQ_INT(patched.count, 2);
    CHECK(strcmp(patched.patches[0], "[{\"op\":\"replace\",\"path\":\"\\/count\",\"value\":1}]") == 0 ||
          strcmp(patched.patches[0], "[{\"op\":\"replace\",\"path\":\"/count\",\"value\":1}]") == 0);
    CHECK(strcmp(patched.patches[1], "[]") == 0);
    CHECK(strcmp(plain.patches[0], "(null)") == 0);
    CHECK_EQ_INT(plain.times[0], patched.times[0]);
    rdx_store_release(store);
}

/* A listener that dispatches "inc" from inside for each "spawn", and removes itself at "stop". */
typedef struct chatty {
    heard h;
    uint64_t token;
    int removed_status;
} chatty;

static void chatty_listener(rdx_store *store, const rdx_change *change, void *context)
{
    chatty *c = context;
    record_change(store, change, &c->h);
    if (strcmp(change->identifier, "spawn") == 0) {
        CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    } else if (strcmp(change->identifier, "stop") == 0) {
        c->removed_status = rdx_store_remove_change_listener(store, c->token);
    }
}

static void test_listener_inside(void)
{
    rdx_store *store = util_counter_store();
    chatty c;
    TEST("a listener dispatches (queued after the current action, heard in turn) and removes itself");
    memset(&c, 0, sizeof c);
    heard_init(&c.h);
    c.removed_status = -1;
    c.token = rdx_store_add_change_listener(store, false, chatty_listener, &c);
    CHECK(c.token != 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "spawn", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 2);
    CHECK_EQ_INT(c.h.count, 2);
    CHECK(strcmp(c.h.identifiers[1], "inc") == 0);
    CHECK_EQ_INT(c.h.versions[1], 2);
    CHECK_EQ_INT(c.h.counts_seen[1], 1);
    CHECK_STATUS(rdx_store_dispatch_action(store, "stop", NULL), RDX_OK);
    CHECK_EQ_INT(c.removed_status, RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "spawn", NULL), RDX_OK);
    CHECK_EQ_INT(c.h.count, 3);
    CHECK_EQ_INT(rdx_store_version(store), 4);
    rdx_store_release(store);
}

/* What a reducer or listener adds while an action is applied, and what it then heard. */
typedef struct joiner {
    rdx_store *store;
    heard from_reducer;       /* a listener added by the reducer of "join" */
    heard from_listener;      /* a listener added by another listener, at version 3 */
    uint64_t observed[MAX_HEARD]; /* versions an observer added by that listener heard */
    int observed_count;
    int added;
} joiner;

static joiner *the_joiner;

static void joiner_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    (void)state;
    (void)payload;
    (void)context;
    if (strcmp(identifier, "join") == 0) {
        CHECK(rdx_store_add_change_listener(the_joiner->store, false, record_change, &the_joiner->from_reducer) != 0);
    }
}

static void joiner_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    joiner *j = context;
    (void)store;
    (void)name;
    if (j->observed_count < MAX_HEARD) j->observed[j->observed_count++] = version;
}

static void joiner_listener(rdx_store *store, const rdx_change *change, void *context)
{
    joiner *j = context;
    if (change->version == 3 && !j->added) {
        j->added = 1;
        CHECK(rdx_store_add_change_listener(store, false, record_change, &j->from_listener) != 0);
        CHECK(rdx_store_add_observer(store, NULL, joiner_observer, j) != 0);
    }
}

static void test_added_while_applying(void)
{
    joiner j;
    rdx_reducer reducer = {joiner_reduce, NULL, NULL};
    json_object *initial = json_object_new_object();
    rdx_status status = RDX_EINVAL;
    TEST("a listener added by a reducer, or a listener or observer added by a listener, first hears the next action");
    memset(&j, 0, sizeof j);
    heard_init(&j.from_reducer);
    heard_init(&j.from_listener);
    the_joiner = &j;
    j.store = rdx_store_create(initial, &reducer, 1, &status);
    json_object_put(initial);
    CHECK_STATUS(status, RDX_OK);
    CHECK(rdx_store_add_change_listener(j.store, false, joiner_listener, &j) != 0);
    CHECK_STATUS(rdx_store_dispatch_action(j.store, "before", NULL), RDX_OK); /* 1 */
    CHECK_STATUS(rdx_store_dispatch_action(j.store, "join", NULL), RDX_OK);   /* 2 */
    CHECK_STATUS(rdx_store_dispatch_action(j.store, "third", NULL), RDX_OK);  /* 3 */
    CHECK_STATUS(rdx_store_dispatch_action(j.store, "fourth", NULL), RDX_OK); /* 4 */
    CHECK_EQ_INT(j.from_reducer.count, 2);
    CHECK_EQ_INT(j.from_reducer.versions[0], 3);
    CHECK_EQ_INT(j.from_reducer.versions[1], 4);
    CHECK_EQ_INT(j.from_listener.count, 1);
    CHECK_EQ_INT(j.from_listener.versions[0], 4);
    CHECK_EQ_INT(j.observed_count, 1);
    CHECK_EQ_INT(j.observed[0], 4);
    rdx_store_release(j.store);
    the_joiner = NULL;
}

/* Counts changes and checks each version follows the last. */
typedef struct sequence {
    uint64_t last;
    long count;
    long out_of_order;
} sequence;

static void sequence_listener(rdx_store *store, const rdx_change *change, void *context)
{
    sequence *s = context;
    (void)store;
    /* Under the store's lock: no other call of this listener runs meanwhile. */
    if (change->version != s->last + 1) s->out_of_order++;
    s->last = change->version;
    s->count++;
}

typedef struct worker {
    rdx_store *store;
    int actions;
} worker;

static void *dispatch_many(void *argument)
{
    worker *w = argument;
    int i;
    for (i = 0; i < w->actions; i++) {
        if (rdx_store_dispatch_action(w->store, "inc", NULL) != RDX_OK) break;
    }
    return NULL;
}

static void test_threads(void)
{
    rdx_store *store = util_counter_store();
    sequence s = {0, 0, 0};
    pthread_t threads[4];
    worker w;
    int i;
    TEST("four threads dispatch: the listener hears every version once, in order");
    w.store = store;
    w.actions = util_small() ? 200 : 5000;
    CHECK(rdx_store_add_change_listener(store, false, sequence_listener, &s) != 0);
    for (i = 0; i < 4; i++) pthread_create(&threads[i], NULL, dispatch_many, &w);
    for (i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    CHECK_EQ_INT(s.count, 4 * w.actions);
    CHECK_EQ_INT(s.out_of_order, 0);
    CHECK_EQ_INT(s.last, (uint64_t)(4 * w.actions));
    rdx_store_release(store);
}

static void test_journal_source(void)
{
    char folder[] = "/tmp/rdx-feed-XXXXXX";
    char path[256];
    char text[4096];
    char expected[128];
    rdx_store *store = util_counter_store();
    FILE *file;
    size_t size;
    int line;
    TEST("the journal's lines carry the source of the macros' calls, and none for the plain functions");
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/app.journal", folder);
    CHECK_STATUS(rdx_store_start_journal(store, path, false), RDX_OK);
    line = __LINE__ + 1;
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS((rdx_store_dispatch_action)(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action_at(store, "inc", NULL, "dir/q\"uote.c", 3), RDX_OK);
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_OK);
    file = fopen(path, "r");
    CHECK(file != NULL);
    if (file == NULL) return;
    size = fread(text, 1, sizeof text - 1, file);
    text[size] = 0;
    fclose(file);
    snprintf(expected, sizeof expected, "\"source\":\"test_change_feed.c:%d\"", line);
    CHECK(strstr(text, expected) != NULL);
    CHECK(strstr(text, "\"source\":\"q\\\"uote.c:3\"") != NULL);
    /* The second line (the plain function) has no source: exactly two lines do. */
    {
        int sources = 0;
        const char *at = text;
        while ((at = strstr(at, "\"source\"")) != NULL) {
            sources++;
            at++;
        }
        CHECK_EQ_INT(sources, 2);
    }
    unlink(path);
    rmdir(folder);
    rdx_store_release(store);
}

/* A listener whose context is freed when the store's last reference is released. */
static void counting_listener(rdx_store *store, const rdx_change *change, void *context)
{
    (void)store;
    (void)change;
    (*(long *)context)++;
}

static void test_release_removes(void)
{
    rdx_store *store = util_counter_store();
    long *calls = malloc(sizeof *calls);
    TEST("the last release removes the listeners; nothing calls them after");
    *calls = 0;
    CHECK(rdx_store_add_change_listener(store, true, counting_listener, calls) != 0);
    CHECK_STATUS(rdx_store_enqueue_action(store, "inc", NULL), RDX_OK);
    rdx_store_release(store); /* applies what was enqueued, then removes the listener */
    CHECK_EQ_INT(*calls, 1);
    free(calls);
}

/* ---- The action log (rdx_store_open_action_log and its readers). */

static void test_action_log(void)
{
    rdx_store *store = util_counter_store();
    heard h;
    char identifier[32], file[32];
    json_object *payload;
    size_t count = 99;
    uint64_t dropped = 99, version = 99, first, second;
    int i;
    TEST("the action log: claims, the newest changes in order, what the caller lent kept, bad arguments");
    heard_init(&h);

    /* No claim: no log. */
    CHECK_STATUS(rdx_store_read_action_log(store, 0, 10, record_change, &h, &count, &dropped, &version), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "no action log") != NULL);
    CHECK_EQ_INT(count, 99);
    CHECK_EQ_INT(rdx_store_open_action_log(NULL, 10, false), 0);
    CHECK(strstr(rdx_last_error(), "store is NULL") != NULL);
    CHECK_STATUS(rdx_store_close_action_log(store, 12345), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "not an open claim") != NULL);
    CHECK_STATUS(rdx_store_tick_action_log(NULL), RDX_EINVAL);

    first = rdx_store_open_action_log(store, 4, false);
    second = rdx_store_open_action_log(store, 2, true);
    CHECK(first != 0 && second != 0 && first != second);
    CHECK_STATUS(rdx_store_read_action_log(store, 0, 10, NULL, &h, NULL, NULL, NULL), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "each is NULL") != NULL);

    /* Identifiers and payloads from buffers the caller reuses and frees: the log keeps copies. */
    for (i = 1; i <= 6; i++) {
        snprintf(identifier, sizeof identifier, i % 2 ? "inc" : "add");
        snprintf(file, sizeof file, "file%d.c", i);
        payload = i % 2 ? NULL : json_object_new_int(i);
        CHECK_STATUS(rdx_store_dispatch_action_at(store, identifier, payload, file, 100 + i), RDX_OK);
        json_object_put(payload);
        memset(identifier, 'x', sizeof identifier - 1);
        memset(file, 'y', sizeof file - 1);
    }
    CHECK_STATUS(rdx_store_read_action_log(store, 0, 10, record_change, &h, &count, &dropped, &version), RDX_OK);
    /* The largest claim: the newest 4 of 6. */
    CHECK_EQ_INT(count, 4);
    CHECK_EQ_INT(dropped, 2);
    CHECK_EQ_INT(version, 6);
    CHECK_EQ_INT(h.count, 4);
    for (i = 0; i < h.count && i < 4; i++) {
        CHECK_EQ_INT(h.versions[i], 3 + i);
        CHECK(strcmp(h.identifiers[i], (3 + i) % 2 ? "inc" : "add") == 0);
        CHECK(strcmp(h.patches[i], "(null)") == 0);
        CHECK_EQ_INT(h.lines[i], 103 + i);
        CHECK(h.times[i] > 0);
    }
    CHECK(strcmp(h.payloads[0], "(null)") == 0);
    CHECK(strcmp(h.payloads[1], "4") == 0);
    CHECK(strcmp(h.files[1], "file4.c") == 0);
    CHECK_EQ_INT(h.counts_seen[0], util_count(store)); /* `each` may call the store */

    /* After a version, at most `limit`. */
    heard_init(&h);
    CHECK_STATUS(rdx_store_read_action_log(store, 4, 1, record_change, &h, &count, &dropped, NULL), RDX_OK);
    CHECK_EQ_INT(count, 1);
    CHECK_EQ_INT(dropped, 0);
    CHECK_EQ_INT(h.versions[0], 5);
    heard_init(&h);
    CHECK_STATUS(rdx_store_read_action_log(store, 6, 10, record_change, &h, &count, NULL, NULL), RDX_OK);
    CHECK_EQ_INT(count, 0);
    CHECK_EQ_INT(h.count, 0);

    /* Closing the larger claim leaves the smaller's: the newest 2. */
    CHECK_STATUS(rdx_store_close_action_log(store, first), RDX_OK);
    CHECK_STATUS(rdx_store_close_action_log(store, first), RDX_EINVAL);
    CHECK_STATUS(rdx_store_tick_action_log(store), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    heard_init(&h);
    CHECK_STATUS(rdx_store_read_action_log(store, 0, 10, record_change, &h, &count, &dropped, &version), RDX_OK);
    CHECK_EQ_INT(count, 2);
    CHECK_EQ_INT(h.versions[0], 6);
    CHECK_EQ_INT(h.versions[1], 7);
    CHECK_STATUS(rdx_store_close_action_log(store, second), RDX_OK);
    CHECK_STATUS(rdx_store_read_action_log(store, 0, 10, record_change, &h, NULL, NULL, NULL), RDX_EINVAL);
    CHECK_EQ_INT(rdx_store_version(store), 7);
    rdx_store_release(store);
}

/* A reducer that, for "nest", dispatches two actions from a buffer it then overwrites. */
static rdx_store *nesting_store;
static void nesting_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    char buffer[16];
    json_object *lent;
    (void)payload;
    (void)context;
    util_set_int(state, "count", util_int(state, "count") + 1);
    if (strcmp(identifier, "nest") != 0) return;
    strcpy(buffer, "inner");
    lent = json_object_new_string("from a reducer");
    CHECK_STATUS(rdx_store_dispatch_action(nesting_store, buffer, lent), RDX_OK);
    json_object_put(lent);
    CHECK_STATUS(rdx_store_dispatch_action(nesting_store, buffer, NULL), RDX_OK);
    memset(buffer, 'z', sizeof buffer - 1);
}

static void test_action_log_every_way(void)
{
    static const char *identifiers[] = {"enq0", "enq1", "enq2", "b1", "b2", "nest", "inner", "inner", "j"};
    static const char *payloads[] = {"(null)", "1", "(null)", "(null)", "{\"x\":[1,2]}", "(null)",
                                     "\"from a reducer\"", "(null)", "(null)"};
    rdx_reducer reducer = {nesting_reduce, NULL, NULL};
    json_object *initial = json_object_new_object();
    char identifier[32], *batch;
    json_object *payload;
    size_t count = 0;
    uint64_t claim;
    heard h;
    int i;
    TEST("the action log keeps what every way of dispatching lent: enqueued, batched, nested, JSON text");
    heard_init(&h);
    util_set_int(initial, "count", 0);
    nesting_store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    claim = rdx_store_open_action_log(nesting_store, 100, false);
    CHECK(claim != 0);
    for (i = 0; i < 3; i++) {
        snprintf(identifier, sizeof identifier, "enq%d", i);
        payload = i == 1 ? json_object_new_int(i) : NULL;
        CHECK_STATUS(rdx_store_enqueue_action(nesting_store, identifier, payload), RDX_OK);
        json_object_put(payload);
        memset(identifier, 'q', sizeof identifier - 1);
    }
    CHECK_STATUS(rdx_store_flush(nesting_store), RDX_OK);
    batch = malloc(128);
    snprintf(batch, 128, "[{\"identifier\":\"b1\"},{\"identifier\":\"b2\",\"payload\":{\"x\":[1,2]}},{\"identifier\":\"nest\"}]");
    CHECK_STATUS(rdx_store_dispatch_batch_json(nesting_store, batch), RDX_OK);
    memset(batch, ' ', strlen(batch));
    free(batch);
    CHECK_STATUS(rdx_store_dispatch_json(nesting_store, "{\"identifier\":\"j\",\"payload\":null}"), RDX_OK);
    CHECK_STATUS(rdx_store_read_action_log(nesting_store, 0, 100, record_change, &h, &count, NULL, NULL), RDX_OK);
    CHECK_EQ_INT(count, 9);
    for (i = 0; i < h.count && i < 9; i++) {
        CHECK_EQ_INT(h.versions[i], i + 1);
        CHECK(strcmp(h.identifiers[i], identifiers[i]) == 0);
        CHECK(strcmp(h.payloads[i], payloads[i]) == 0);
    }
    CHECK_STATUS(rdx_store_close_action_log(nesting_store, claim), RDX_OK);
    rdx_store_release(nesting_store);
}

/* Counts each identifier it is called with into the state ("seen": {identifier: n}); for "again"
 * dispatches "inner" from a buffer it then overwrites. */
static rdx_store *kept_store;
static void kept_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    json_object *seen = json_object_object_get(state, "seen");
    int64_t count = util_int(seen, identifier); /* -1: not seen yet */
    char buffer[16];
    (void)payload;
    (void)context;
    util_set_int(seen, identifier, count < 0 ? 1 : count + 1);
    if (strcmp(identifier, "again") != 0) return;
    strcpy(buffer, "inner");
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, buffer, NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, buffer, NULL), RDX_OK);
    memset(buffer, 'z', sizeof buffer - 1);
}

/* Dispatches per thread of the kept-identifier test: fewer under valgrind, which runs one thread
 * at a time and makes each hand-over of the store's lock a switch of threads. */
static int kept_dispatches(void)
{
    return util_small() ? 200 : 2000;
}

static void *kept_dispatcher(void *argument)
{
    char buffer[8];
    long thread = (long)argument;
    int i;
    for (i = 0; i < kept_dispatches(); i++) {
        /* One buffer, two identifiers in turn: the same address with other bytes. */
        snprintf(buffer, sizeof buffer, "t%ld%c", thread, i % 2 ? 'b' : 'a');
        if (rdx_store_dispatch_action(kept_store, buffer, NULL) != RDX_OK) return (void *)1;
    }
    return NULL;
}

static void test_kept_identifiers(void)
{
    static const char *expected[] = {"inc", "inc", "inc", "add", "inner", "again", "inner", "inner", "add"};
    rdx_reducer reducer = {kept_reduce, NULL, NULL};
    json_object *initial = json_tokener_parse("{\"seen\":{}}"), *state, *seen;
    char buffer[1200];
    pthread_t threads[4];
    void *failed;
    uint64_t claim;
    size_t count = 0;
    heard h;
    long t;
    int i;
    TEST("a store whose actions are kept: an identifier kept before is recognised by its bytes, never by its address");
    heard_init(&h);
    kept_store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    claim = rdx_store_open_action_log(kept_store, 100, false);
    CHECK(claim != 0);

    CHECK_STATUS(rdx_store_dispatch_action(kept_store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, "inc", NULL), RDX_OK);
    /* The address of a kept identifier, other bytes: those bytes are the action's. */
    strcpy(buffer, "inc");
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, buffer, NULL), RDX_OK);
    strcpy(buffer, "add");
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, buffer, NULL), RDX_OK);
    /* Nested: what a reducer dispatches from a buffer it overwrites ("inner", kept before) is
     * queued as it was. */
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, "inner", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, "again", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(kept_store), 8);
    /* Bad identifiers where a kept one was: refused, nothing changed. */
    strcpy(buffer, "add");
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, buffer, NULL), RDX_OK);
    strcpy(buffer, "ad\xff");
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, buffer, NULL), RDX_EDECODE);
    memset(buffer, 'a', sizeof buffer - 1);
    buffer[sizeof buffer - 1] = '\0';
    memcpy(buffer, "add", 3);
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, buffer, NULL), RDX_ELIMIT);
    buffer[3] = '\0';
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, NULL, NULL), RDX_EINVAL);
    CHECK_EQ_INT(rdx_store_version(kept_store), 9);

    CHECK_STATUS(rdx_store_read_action_log(kept_store, 0, 100, record_change, &h, &count, NULL, NULL), RDX_OK);
    CHECK_EQ_INT(count, 9);
    for (i = 0; i < h.count && i < 9; i++) {
        CHECK(strcmp(h.identifiers[i], expected[i]) == 0);
        CHECK(strcmp(h.payloads[i], "(null)") == 0);
    }

    /* Threads: each its own buffer, two identifiers in turn at the same address. */
    for (t = 0; t < 4; t++) pthread_create(&threads[t], NULL, kept_dispatcher, (void *)t);
    for (t = 0; t < 4; t++) {
        pthread_join(threads[t], &failed);
        CHECK(failed == NULL);
    }
    state = rdx_store_current_state(kept_store);
    seen = json_object_object_get(state, "seen");
    CHECK_EQ_INT(util_int(seen, "inc"), 3);
    CHECK_EQ_INT(util_int(seen, "add"), 2);
    CHECK_EQ_INT(util_int(seen, "inner"), 3);
    for (t = 0; t < 4; t++) {
        char name[8];
        snprintf(name, sizeof name, "t%lda", t);
        CHECK_EQ_INT(util_int(seen, name), kept_dispatches() / 2);
        snprintf(name, sizeof name, "t%ldb", t);
        CHECK_EQ_INT(util_int(seen, name), kept_dispatches() / 2);
    }
    json_object_put(state);
    CHECK_EQ_INT(rdx_store_version(kept_store), 9 + 4 * kept_dispatches());
    CHECK_STATUS(rdx_store_close_action_log(kept_store, claim), RDX_OK);
    /* With nothing kept any more, the identifiers kept before still work. */
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(kept_store, "ad\xff", NULL), RDX_EDECODE);
    CHECK_EQ_INT(rdx_store_version(kept_store), 10 + 4 * kept_dispatches());
    rdx_store_release(kept_store);
}

int main(void)
{
    check_watchdog(CHECK_TEST_SECONDS);
    test_listener_hears_each_action();
    test_plain_functions_record_no_source();
    test_bad_arguments();
    test_patches();
    test_listener_inside();
    test_added_while_applying();
    test_threads();
    test_journal_source();
    test_release_removes();
    test_action_log();
    test_action_log_every_way();
    test_kept_identifiers();
    return check_report();
}
