/*
 * test_concurrent_save.c — two processes saving one path at once, while a third opens it.
 *
 * Two children (this program again, fork + exec of argv[0] with --saver, so each starts fresh and,
 * under valgrind, runs natively) each dispatch and save their own growing state to the same path
 * in a loop; every one of their saves must return RDX_OK. Meanwhile this process opens the path
 * again and again: every open must succeed and find one whole state that one writer saved (its
 * items are 0, 1, 2, ... and as many as its version), never a torn mix, never RDX_EIO. Once both
 * are done, a last save leaves the folder holding the file alone: no temporary stays behind.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"
#include "files.h"

/* "grow" appends {"n": N} to state.items, N its position. */
static void grow(json_object *state, const char *identifier, json_object *payload, void *context)
{
    json_object *items, *item;
    (void)payload;
    (void)context;
    if (strcmp(identifier, "grow") != 0) return;
    items = json_object_object_get(state, "items");
    item = json_object_new_object();
    json_object_object_add(item, "n", json_object_new_int64((int64_t)json_object_array_length(items)));
    json_object_array_add(items, item);
}

/* A writer: `rounds` times, one action and one save. Exit status 0 when every save was RDX_OK. */
static int saver(const char *path, int writer, int rounds)
{
    rdx_reducer reducer = {grow, NULL, NULL};
    json_object *initial = json_object_new_object();
    rdx_store *store;
    rdx_status status;
    int round, failures = 0;

    json_object_object_add(initial, "writer", json_object_new_int(writer));
    json_object_object_add(initial, "items", json_object_new_array());
    store = rdx_store_create(initial, &reducer, 1, &status);
    json_object_put(initial);
    if (store == NULL) return 2;
    for (round = 0; round < rounds; round++) {
        if (rdx_store_dispatch_action(store, "grow", NULL) != RDX_OK) failures++;
        status = rdx_store_save(store, path);
        if (status != RDX_OK) {
            fprintf(stderr, "writer %d, save %d: %s: %s\n", writer, round, rdx_status_string(status),
                    rdx_last_error());
            failures++;
        }
    }
    rdx_store_release(store);
    return failures == 0 ? 0 : 1;
}

/* Opens `path`: 1 when it holds one whole state of writer 1 or 2, else 0 (and says why). */
static int open_whole(const char *path)
{
    rdx_reducer reducer = {grow, NULL, NULL};
    rdx_status status = RDX_OK;
    rdx_store *store = rdx_store_open(path, &reducer, 1, &status);
    json_object *state, *items;
    uint64_t version;
    int64_t writer;
    size_t i, count;
    int ok;

    if (store == NULL) {
        fprintf(stderr, "open: %s: %s\n", rdx_status_string(status), rdx_last_error());
        return 0;
    }
    version = rdx_store_version(store);
    state = rdx_store_current_state(store);
    items = json_object_object_get(state, "items");
    writer = util_int(state, "writer");
    count = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
    ok = (writer == 1 || writer == 2) && (uint64_t)count == version && version > 0;
    for (i = 0; ok && i < count; i++) ok = util_int(json_object_array_get_idx(items, i), "n") == (int64_t)i;
    if (!ok) fprintf(stderr, "open: not a whole state: writer %lld, version %llu, %zu items\n",
                     (long long)writer, (unsigned long long)version, count);
    json_object_put(state);
    rdx_store_release(store);
    return ok;
}


int main(int argc, char **argv)
{
    char folder[] = "/tmp/reduxstore-concurrent-XXXXXX";
    char path[256], rounds_text[16];
    pid_t writers[2];
    int rounds = util_small() ? 100 : 300;
    int writer, running, opens = 0, whole = 0, status;

    if (argc == 5 && strcmp(argv[1], "--saver") == 0) return saver(argv[2], atoi(argv[3]), atoi(argv[4]));

    TEST("two processes save one path while a third opens it");
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/state.json", folder);
    snprintf(rounds_text, sizeof rounds_text, "%d", rounds);
    /* A first whole state, so that every open below has one to find. */
    CHECK_EQ_INT(saver(path, 1, 1), 0);

    for (writer = 0; writer < 2; writer++) {
        char id[4];
        snprintf(id, sizeof id, "%d", writer + 1);
        writers[writer] = fork();
        if (writers[writer] == 0) {
            execl(argv[0], argv[0], "--saver", path, id, rounds_text, (char *)NULL);
            _exit(127);
        }
        CHECK(writers[writer] > 0);
    }
    running = 2;
    while (running > 0 || opens == 0) {
        opens++;
        whole += open_whole(path);
        for (writer = 0; writer < 2; writer++) {
            if (writers[writer] > 0 && waitpid(writers[writer], &status, WNOHANG) == writers[writer]) {
                if (!CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0))
                    fprintf(stderr, "    writer %d ended with status %d\n", writer + 1, status);
                writers[writer] = 0;
                running--;
            }
        }
    }
    printf("concurrent saves: 2 writers x %d saves, %d opens while they saved, %d whole\n",
           rounds, opens, whole);
    CHECK_EQ_INT(whole, opens);

    TEST("after the writers, one more save leaves no temporary behind");
    CHECK_EQ_INT(saver(path, 2, 1), 0);
    CHECK_EQ_INT(entries_in(folder), 1);
    CHECK(open_whole(path));
    unlink(path);
    CHECK(rmdir(folder) == 0);
    return check_report();
}
