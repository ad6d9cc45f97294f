/*
 * test_replay.c — the journal from C, replayed: 4 threads apply 10,000 random actions to a C
 * store with the journal on and patches recorded; the reducer keeps deep copies of the state at
 * 20 random versions; the journal's patches, applied in order with rdx_json_patch() to the
 * initial state, give exactly those states.
 * Sizes: RDX_CTEST_SMALL (set by run.sh under valgrind and AddressSanitizer) makes it 100 actions.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

#define THREADS 4
static int per_thread = 2500;
#define CHOSEN 20

struct run {
    rdx_store *store;
    uint64_t chosen[CHOSEN];
    json_object *kept[CHOSEN];
};

/* "add": count += payload; "push": list += payload; "pop": list -= last; "tag": tags[key] = value. */
static void reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    struct run *run = (struct run *)context;
    json_object *list = json_object_object_get(state, "list");
    json_object *tags = json_object_object_get(state, "tags");
    uint64_t version;
    int i;
    if (strcmp(identifier, "add") == 0) {
        util_set_int(state, "count", util_int(state, "count") + json_object_get_int64(payload));
    } else if (strcmp(identifier, "push") == 0) {
        json_object_array_add(list, json_object_get(payload));
    } else if (strcmp(identifier, "pop") == 0) {
        size_t length = json_object_array_length(list);
        if (length > 0) json_object_array_del_idx(list, length - 1, 1);
    } else if (strcmp(identifier, "tag") == 0) {
        json_object *key = NULL, *value = NULL;
        json_object_object_get_ex(payload, "key", &key);
        json_object_object_get_ex(payload, "value", &value);
        json_object_object_add(tags, json_object_get_string(key), json_object_get(value));
    }
    /* This action's version: one past the last completed one (the store's lock is held). */
    version = rdx_store_version(run->store) + 1;
    for (i = 0; i < CHOSEN; i++) {
        if (run->chosen[i] == version) {
            json_object_put(run->kept[i]);
            run->kept[i] = NULL;
            json_object_deep_copy(state, &run->kept[i], NULL);
        }
    }
}

static void *drive(void *raw)
{
    struct run *run = (struct run *)raw;
    unsigned seed = (unsigned)(uintptr_t)pthread_self();
    char text[256];
    int i;
    for (i = 0; i < per_thread; i++) {
        switch (rand_r(&seed) % 4) {
        case 0:
            snprintf(text, sizeof text, "{\"identifier\":\"add\",\"payload\":%d}", rand_r(&seed) % 11 - 5);
            break;
        case 1:
            snprintf(text, sizeof text, "{\"identifier\":\"push\",\"payload\":\"item %d\"}", i);
            break;
        case 2:
            snprintf(text, sizeof text, "{\"identifier\":\"pop\"}");
            break;
        default:
            snprintf(text, sizeof text,
                     "{\"identifier\":\"tag\",\"payload\":{\"key\":\"k%d\",\"value\":%d}}", i % 7, i);
            break;
        }
        CHECK_STATUS(rdx_store_dispatch_json(run->store, text), RDX_OK);
    }
    return NULL;
}

static void test_replay_from_patches(void)
{
    char folder[] = "/tmp/rdx-replay-XXXXXX";
    char path[256];
    char line[65536];
    struct run run;
    rdx_reducer reducer = {0};
    json_object *initial = json_tokener_parse("{\"count\": 0, \"list\": [], \"tags\": {}}");
    json_object *rebuilt = NULL;
    pthread_t threads[THREADS];
    rdx_status status;
    FILE *file;
    uint64_t expected = 1;
    int i, matched = 0;
    unsigned seed = 12345;

    TEST("replay_from_patches");
    memset(&run, 0, sizeof run);
    for (i = 0; i < CHOSEN; i++) run.chosen[i] = 1 + (uint64_t)(rand_r(&seed) % (THREADS * per_thread));
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/journal.jsonl", folder);
    reducer.reduce = reduce;
    reducer.context = &run;
    run.store = rdx_store_create(initial, &reducer, 1, &status);
    CHECK_STATUS(status, RDX_OK);
    if (run.store == NULL) return;
    CHECK_STATUS(rdx_store_start_journal(run.store, path, true), RDX_OK);
    for (i = 0; i < THREADS; i++) pthread_create(&threads[i], NULL, drive, &run);
    for (i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    CHECK_STATUS(rdx_store_stop_journal(run.store), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(run.store), THREADS * per_thread);

    /* Rebuild from the initial state with the patches alone (no reducer). */
    json_object_deep_copy(initial, &rebuilt, NULL);
    file = fopen(path, "r");
    CHECK(file != NULL);
    while (file != NULL && fgets(line, sizeof line, file) != NULL) {
        json_object *entry = json_tokener_parse(line);
        json_object *patch = NULL;
        json_object *version = NULL;
        CHECK(entry != NULL);
        if (entry == NULL) break;
        CHECK(json_object_object_get_ex(entry, "version", &version));
        CHECK_EQ_INT(json_object_get_int64(version), expected);
        CHECK(json_object_object_get_ex(entry, "patch", &patch));
        CHECK_STATUS(rdx_json_patch(rebuilt, patch), RDX_OK);
        for (i = 0; i < CHOSEN; i++) {
            if (run.chosen[i] == expected && run.kept[i] != NULL) {
                if (!json_object_equal(rebuilt, run.kept[i])) {
                    fprintf(stderr, "    version %llu differs\n", (unsigned long long)expected);
                    CHECK(0);
                } else {
                    matched++;
                }
            }
        }
        expected++;
        json_object_put(entry);
    }
    if (file != NULL) fclose(file);
    CHECK_EQ_INT(expected - 1, THREADS * per_thread);
    CHECK_EQ_INT(matched, CHOSEN);
    {
        json_object *now = rdx_store_current_state(run.store);
        CHECK(json_object_equal(rebuilt, now));
        json_object_put(now);
    }
    for (i = 0; i < CHOSEN; i++) json_object_put(run.kept[i]);
    json_object_put(rebuilt);
    json_object_put(initial);
    rdx_store_release(run.store);
    unlink(path);
    rmdir(folder);
}

int main(void)
{
    check_watchdog(CHECK_TEST_SECONDS);
    if (getenv("RDX_CTEST_SMALL") != NULL) per_thread = 25;
    test_replay_from_patches();
    return check_report();
}
