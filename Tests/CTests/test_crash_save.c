/*
 * Crash test of rdx_store_save: a child process opens the saved store (or creates it), then
 * dispatches and saves growing states in a loop, as fast as it can; the parent kills it with
 * SIGKILL at a random instant, then opens the file. The file must always hold one whole state that
 * was saved: it opens, its item count matches its version, and its items are 0, 1, 2, ... — never
 * a mix of two saves, never garbage. Each save writes its own temporary (.state.json.XXXXXXXXXXXX.tmp);
 * a kill mid-save leaves it behind, unlocked, and a later successful save removes it: once one
 * succeeded, no temporary file is left.
 *
 * The child is this program again (fork + exec of argv[0] with --child), so it starts as a fresh
 * process (and, under valgrind, runs natively).
 * KILLS kills are made (RDX_CTEST_KILLS overrides; fewer under valgrind).
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "util.h"

/* Items one action appends: each save is about 2.5 KB longer than the one before, and slower. */
#define ITEMS_PER_ACTION 20

/* Each action appends ITEMS_PER_ACTION items {"n": N, "text": "..."}. */
static void grow(json_object *state, const char *identifier, json_object *payload, void *context)
{
    (void)payload;
    (void)context;
    if (strcmp(identifier, "grow") != 0) return;
    json_object *items = json_object_object_get(state, "items");
    for (int i = 0; i < ITEMS_PER_ACTION; i++) {
        int64_t n = (int64_t)json_object_array_length(items);
        json_object *item = json_object_new_object();
        json_object_object_add(item, "n", json_object_new_int64(n));
        json_object_object_add(item, "text", json_object_new_string(
            "a line of text that makes each saved state longer than the one before it"));
        json_object_array_add(items, item);
    }
}

/* The child: dispatches and saves until it is killed. It writes a byte to `ready` once its store
 * exists, so that the parent's random pause starts when the child is at work, however slowly the
 * process started (a loaded machine, AddressSanitizer). */
static int child(const char *path, int ready)
{
    rdx_reducer reducer = { grow, NULL, NULL };
    rdx_status status;
    rdx_store *store = rdx_store_open(path, &reducer, 1, &status);
    if (store == NULL) {
        json_object *initial = json_tokener_parse("{\"items\": []}");
        store = rdx_store_create(initial, &reducer, 1, &status);
        json_object_put(initial);
    }
    if (store == NULL) return 2;
    if (write(ready, "r", 1) != 1) return 5;
    for (;;) {
        if (rdx_store_dispatch_action(store, "grow", NULL) != RDX_OK) return 3;
        if (rdx_store_save(store, path) != RDX_OK) return 4;
    }
}

/* Whether the saved state at `path` is whole: items[i].n == i, ITEMS_PER_ACTION per version. */
static int whole(const char *path, uint64_t *version_out)
{
    rdx_reducer reducer = { grow, NULL, NULL };
    rdx_status status;
    rdx_store *store = rdx_store_open(path, &reducer, 1, &status);
    if (store == NULL) {
        fprintf(stderr, "open after kill: %s: %s\n", rdx_status_string(status), rdx_last_error());
        return 0;
    }
    uint64_t version = rdx_store_version(store);
    json_object *state = rdx_store_current_state(store);
    json_object *items = json_object_object_get(state, "items");
    int ok = json_object_is_type(items, json_type_array) &&
             (uint64_t)json_object_array_length(items) == version * ITEMS_PER_ACTION;
    for (size_t i = 0; ok && i < json_object_array_length(items); i++) {
        ok = util_int(json_object_array_get_idx(items, i), "n") == (int64_t)i;
    }
    json_object_put(state);
    rdx_store_release(store);
    *version_out = version;
    return ok;
}

/* Files in `folder` other than `keep`. */
static int strays(const char *folder, const char *keep)
{
    int count = 0;
    DIR *directory = opendir(folder);
    struct dirent *entry;
    if (directory == NULL) return -1;
    while ((entry = readdir(directory)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        if (strcmp(entry->d_name, keep) != 0) count++;
    }
    closedir(directory);
    return count;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0) return child(argv[2], atoi(argv[3]));

    char folder[] = "/tmp/reduxstore-crash-XXXXXX";
    char path[256];
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/state.json", folder);

    int kills = util_small() ? 20 : 120;
    if (getenv("RDX_CTEST_KILLS") != NULL) kills = atoi(getenv("RDX_CTEST_KILLS"));
    srand((unsigned)time(NULL));

    TEST("SIGKILL at random instants while saving: the file is always one whole saved state");
    int killed = 0, opened_whole = 0, before_first_save = 0, mid_save = 0;
    uint64_t last_version = 0, version = 0;
    for (int round = 0; round < kills; round++) {
        check_watchdog(CHECK_TEST_SECONDS);
        int ready[2];
        char fd_text[16];
        char byte;
        CHECK(pipe(ready) == 0);
        snprintf(fd_text, sizeof fd_text, "%d", ready[1]);
        pid_t pid = fork();
        if (pid == 0) {
            close(ready[0]);
            execl(argv[0], argv[0], "--child", path, fd_text, (char *)NULL);
            _exit(127);
        }
        CHECK(pid > 0);
        close(ready[1]);
        CHECK(read(ready[0], &byte, 1) == 1); /* the child's store exists: it is at work */
        close(ready[0]);
        /* 5 to 80 ms: the child is in the middle of some dispatch or save by then. */
        struct timespec pause = { 0, (5 + rand() % 76) * 1000000L };
        nanosleep(&pause, NULL);
        CHECK(kill(pid, SIGKILL) == 0);
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
            killed++;
        } else {
            fprintf(stderr, "child ended otherwise (status %d) in round %d\n", status, round);
            CHECK(0);
        }
        /* A temporary file left behind: this kill landed in the middle of a save. */
        if (strays(folder, "state.json") > 0) mid_save++;
        if (access(path, F_OK) != 0) {
            /* Killed before its first save ever finished: only possible before any save. */
            CHECK(last_version == 0);
            before_first_save++;
            continue;
        }
        int ok = whole(path, &version);
        CHECK(ok);
        CHECK(version >= last_version); /* the state only grows */
        opened_whole += ok;
        last_version = version;
    }
    printf("crash test: %d kills (%d in the middle of a save), %d opens after a kill found one "
           "whole saved state, %d before the first save; last version %llu\n",
           killed, mid_save, opened_whole, before_first_save, (unsigned long long)last_version);
    CHECK(killed == kills);
    CHECK(opened_whole + before_first_save == kills);
    CHECK(last_version > 0);

    TEST("a successful save after the crashes leaves no temporary file behind");
    {
        rdx_reducer reducer = { grow, NULL, NULL };
        rdx_status status;
        rdx_store *store = rdx_store_open(path, &reducer, 1, &status);
        CHECK(store != NULL);
        CHECK_STATUS(rdx_store_dispatch_action(store, "grow", NULL), RDX_OK);
        CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
        rdx_store_release(store);
        CHECK_EQ_INT(strays(folder, "state.json"), 0);
    }
    unlink(path);
    rmdir(folder);
    return check_report();
}
