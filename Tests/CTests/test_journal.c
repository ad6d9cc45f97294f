/*
 * test_journal.c — the journal from C: every applied action a line with its version, identifier
 * and payload (a C store's payload deep-copied when recorded, so the caller may free it at once),
 * batches marked, patches on request, bad arguments, and a journal running while the store is
 * released.
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

/* The lines of a file, parsed; *count set. The caller puts each and frees the array. */
static json_object **read_lines(const char *path, int *count)
{
    FILE *file = fopen(path, "r");
    char line[65536];
    json_object **lines = NULL;
    *count = 0;
    if (file == NULL) return NULL;
    while (fgets(line, sizeof line, file) != NULL) {
        lines = realloc(lines, sizeof *lines * (size_t)(*count + 1));
        lines[*count] = json_tokener_parse(line);
        (*count)++;
    }
    fclose(file);
    return lines;
}

static void free_lines(json_object **lines, int count)
{
    int i;
    for (i = 0; i < count; i++) json_object_put(lines[i]);
    free(lines);
}

static const char *string_at(json_object *object, const char *key)
{
    json_object *value = NULL;
    if (!json_object_object_get_ex(object, key, &value)) return "(missing)";
    return json_object_get_string(value);
}

static void test_journal_lines(void)
{
    char folder[] = "/tmp/rdx-journal-XXXXXX";
    char path[256];
    rdx_store *store = util_counter_store();
    json_object **lines;
    json_object *payload;
    int count = 0;

    TEST("journal_lines");
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/journal.jsonl", folder);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_start_journal(store, path, false), RDX_OK);
    payload = json_object_new_int64(5);
    CHECK_STATUS(rdx_store_dispatch_action(store, "add", payload), RDX_OK);
    json_object_put(payload); /* recorded as a copy: freeing it now is fine */
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store,
                     "[{\"identifier\":\"inc\"},{\"identifier\":\"add\",\"payload\":2}]"),
                 RDX_OK);
    CHECK_STATUS(rdx_store_enqueue_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_OK);
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_OK); /* idempotent */
    lines = read_lines(path, &count);
    CHECK_EQ_INT(count, 5);
    if (count == 5) {
        CHECK_STR(string_at(lines[0], "version"), "1");
        CHECK_STR(string_at(lines[0], "identifier"), "add");
        CHECK_STR(string_at(lines[0], "payload"), "5");
        CHECK_STR(string_at(lines[1], "payload"), "(missing)");
        CHECK_STR(string_at(lines[2], "batch"), "3");
        CHECK_STR(string_at(lines[3], "batch"), "3");
        CHECK_STR(string_at(lines[4], "version"), "5");
    }
    free_lines(lines, count);
    rdx_store_release(store);
    unlink(path);
    rmdir(folder);
}

static void test_journal_patches(void)
{
    char folder[] = "/tmp/rdx-journal-XXXXXX";
    char path[256];
    rdx_store *store = util_counter_store();
    json_object **lines;
    int count = 0;

    TEST("journal_patches");
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/journal.jsonl", folder);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_start_journal(store, path, true), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "noop", NULL), RDX_OK);
    rdx_store_release(store); /* the last release stops the journal, writing what it had */
    lines = read_lines(path, &count);
    CHECK_EQ_INT(count, 2);
    if (count == 2) {
        CHECK_STR(string_at(lines[0], "patch"),
                  "[ { \"op\": \"replace\", \"path\": \"\\/count\", \"value\": 1 } ]");
        CHECK_STR(string_at(lines[1], "patch"), "[ ]");
    }
    free_lines(lines, count);
    unlink(path);
    rmdir(folder);
}

/* rdx_store_flush_journal: the lines are in the file while the journal still runs. */
static void test_journal_flush(void)
{
    char folder[] = "/tmp/rdx-journal-XXXXXX";
    char path[256];
    rdx_store *store = util_counter_store();
    json_object **lines;
    int count = 0;
    int round;
    int index;

    TEST("journal_flush");
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/journal.jsonl", folder);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_flush_journal(store), RDX_OK); /* no journal: returns at once */
    CHECK_STATUS(rdx_store_start_journal(store, path, false), RDX_OK);
    for (round = 1; round <= 3; round++) {
        for (index = 0; index < 100; index++) {
            CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
        }
        CHECK_STATUS(rdx_store_flush_journal(store), RDX_OK);
        lines = read_lines(path, &count);
        CHECK_EQ_INT(count, 100 * round);
        free_lines(lines, count);
    }
    CHECK_STATUS(rdx_store_flush_journal(NULL), RDX_EINVAL);
    rdx_store_release(store);
    unlink(path);
    rmdir(folder);
}

static void test_journal_bad_input(void)
{
    rdx_store *store = util_counter_store();
    TEST("journal_bad_input");
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_start_journal(NULL, "/tmp/x", false), RDX_EINVAL);
    CHECK_STATUS(rdx_store_start_journal(store, NULL, false), RDX_EINVAL);
    CHECK_STATUS(rdx_store_start_journal(store, "/tmp", false), RDX_EIO);
    CHECK_STATUS(rdx_store_start_journal(store, "/nonexistent-folder/j", false), RDX_EIO);
    CHECK_STATUS(rdx_store_stop_journal(NULL), RDX_EINVAL);
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 0);
    rdx_store_release(store);
}

int main(void)
{
    check_watchdog(CHECK_TEST_SECONDS);
    test_journal_lines();
    test_journal_patches();
    test_journal_flush();
    test_journal_bad_input();
    return check_report();
}
