/*
 * test_persistence.c — rdx_store_save() and rdx_store_open(): a save restores state and version;
 * saves are atomic through a temporary in the same folder that never stays behind; a missing or
 * unreadable file is RDX_EIO; a file that is not a saved state is RDX_ECORRUPT and is left
 * byte-for-byte untouched; a folder that does not exist is RDX_EIO.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"
#include "files.h"

/* The folder every test writes in, made fresh by main(). */
static char folder[] = "/tmp/reduxstore-ctest-persistence-XXXXXX";

/* folder + "/" + name, in `buffer`. */
static const char *in_folder(char *buffer, size_t size, const char *name)
{
    snprintf(buffer, size, "%s/%s", folder, name);
    return buffer;
}

/* A NEW malloc'ed copy of a file's bytes and its size in *size, or NULL if it cannot be read. */
static char *read_bytes(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    char *bytes = NULL;
    size_t used = 0, capacity = 0, count;
    if (file == NULL) return NULL;
    do {
        if (used == capacity) {
            char *grown;
            capacity = capacity == 0 ? 4096 : capacity * 2;
            grown = (char *)realloc(bytes, capacity + 1);
            if (grown == NULL) {
                free(bytes);
                fclose(file);
                return NULL;
            }
            bytes = grown;
        }
        count = fread(bytes + used, 1, capacity - used, file);
        used += count;
    } while (count > 0);
    fclose(file);
    bytes[used] = '\0';
    *size = used;
    return bytes;
}

/* Writes `size` bytes to `path`, replacing it. */
static int write_bytes(const char *path, const char *bytes, size_t size)
{
    FILE *file = fopen(path, "wb");
    int ok;
    if (file == NULL) return 0;
    ok = fwrite(bytes, 1, size, file) == size;
    return fclose(file) == 0 && ok;
}


static int exists(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0;
}

/* A store with a state using every kind of JSON value, and the counter reducer. */
static const char rich_state[] =
    "{\"count\": 0, \"title\": \"caf\\u00e9 \\\"quoted\\\" \\\\ \\n tab\\t \\u2713 \\ud83d\\ude00\","
    " \"big\": 9007199254740993, \"negative\": -42, \"half\": 0.5, \"tenth\": 0.1,"
    " \"yes\": true, \"no\": false, \"nothing\": null, \"empty_object\": {}, \"empty_array\": [],"
    " \"items\": [{\"title\": \"milk\", \"done\": false, \"tags\": [\"a\", \"b\"]}, [1, [2, [3]]]]}";

static rdx_store *rich_store(void)
{
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    json_object *initial = json_tokener_parse(rich_state);
    rdx_store *store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    return store;
}

/*
 * Save, then open: the same state and version; the opened store uses the reducers it was opened
 * with and counts on from the saved version. The save changed nothing in the store, and only
 * the saved file is in the folder afterwards (no temporary left).
 */
static void test_save_then_open(void)
{
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    rdx_store *store = rich_store();
    rdx_store *opened;
    rdx_status status = RDX_EIO;
    json_object *saved_state, *opened_state;
    char path[256];
    char *before, *after;
    int i;

    TEST("save_then_open");
    CHECK(store != NULL);
    if (store == NULL) return;
    for (i = 0; i < 3; i++) CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    in_folder(path, sizeof path, "state.json");
    before = util_state_text(store);
    CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
    after = util_state_text(store);
    CHECK_STR(after, before);
    CHECK_EQ_INT(rdx_store_version(store), 3);
    CHECK(exists(path));
    CHECK_EQ_INT(entries_in(folder), 1); /* the file, and no temporary */

    opened = rdx_store_open(path, &reducer, 1, &status);
    CHECK_STATUS(status, RDX_OK);
    CHECK(opened != NULL);
    if (opened != NULL) {
        CHECK_EQ_INT(rdx_store_version(opened), 3);
        saved_state = rdx_store_current_state(store);
        opened_state = rdx_store_current_state(opened);
        if (!CHECK(json_object_equal(saved_state, opened_state)))
            fprintf(stderr, "    saved:  %s\n    opened: %s\n",
                    json_object_to_json_string(saved_state), json_object_to_json_string(opened_state));
        json_object_put(saved_state);
        json_object_put(opened_state);
        CHECK_STATUS(rdx_store_dispatch_action(opened, "inc", NULL), RDX_OK);
        CHECK_EQ_INT(rdx_store_version(opened), 4);
        CHECK_EQ_INT(util_count(opened), 4);
        /* The original store is independent of the opened one. */
        CHECK_EQ_INT(util_count(store), 3);
        rdx_store_release(opened);
    }
    /* A NULL status pointer is allowed. */
    opened = rdx_store_open(path, &reducer, 1, NULL);
    CHECK(opened != NULL);
    rdx_store_release(opened);
    /* Open with no reducers: the state and version are there all the same. */
    opened = rdx_store_open(path, &reducer, 0, &status);
    CHECK_STATUS(status, RDX_OK);
    CHECK_EQ_INT(rdx_store_version(opened), 3);
    rdx_store_release(opened);

    free(before);
    free(after);
    unlink(path);
    rdx_store_release(store);
}

/*
 * A second save replaces the first; a stray temporary (left by a process that died mid-save:
 * .NAME.<12 random characters>.tmp, locked by nobody) is gone after a successful save; a
 * relative path saves in the current folder.
 */
static void test_save_replaces_and_cleans_up(void)
{
    rdx_store *store = util_counter_store();
    rdx_store *opened;
    rdx_status status = RDX_EIO;
    char path[256], temporary[256], cwd[PATH_MAX];
    static const char stale[] = "{\"half\": \"a crash left this";

    TEST("save_replaces_and_cleans_up");
    CHECK(store != NULL);
    if (store == NULL) return;
    in_folder(path, sizeof path, "again.json");
    in_folder(temporary, sizeof temporary, ".again.json.crashedsaver.tmp");
    CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK(write_bytes(temporary, stale, sizeof stale - 1));
    CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
    CHECK(!exists(temporary));
    opened = rdx_store_open(path, NULL, 0, &status);
    CHECK_STATUS(status, RDX_OK);
    CHECK_EQ_INT(rdx_store_version(opened), 2);
    CHECK_EQ_INT(util_count(opened), 2);
    rdx_store_release(opened);
    unlink(path);

    /* A relative path: the file and its temporary live in the current folder. */
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK(chdir(folder) == 0);
    CHECK_STATUS(rdx_store_save(store, "relative.json"), RDX_OK);
    CHECK(exists("relative.json"));
    CHECK_EQ_INT(entries_in("."), 1);
    opened = rdx_store_open("relative.json", NULL, 0, &status);
    CHECK_STATUS(status, RDX_OK);
    CHECK_EQ_INT(rdx_store_version(opened), 2);
    rdx_store_release(opened);
    unlink("relative.json");
    CHECK(chdir(cwd) == 0);
    CHECK_EQ_INT(entries_in(folder), 0);
    rdx_store_release(store);
}

/* A saved file whose state is null does not open as a C store: its reducers could not mutate it. */
static void test_null_state_does_not_open(void)
{
    rdx_store *opened;
    rdx_status status = RDX_OK;
    char path[256];
    FILE *file;

    TEST("null_state_does_not_open");
    in_folder(path, sizeof path, "null.json");
    file = fopen(path, "w");
    CHECK(file != NULL);
    if (file == NULL) return;
    fputs("{\"reduxstore\":1,\"version\":3,\"state\":null}\n", file);
    fclose(file);
    opened = rdx_store_open(path, NULL, 0, &status);
    CHECK(opened == NULL);
    CHECK_STATUS(status, RDX_ECORRUPT);
    CHECK(strstr(rdx_last_error(), "state") != NULL);
    unlink(path);
}

/* Opening a file that is not there, or a folder: NULL, RDX_EIO, words naming the path. */
static void test_open_missing_or_unreadable(void)
{
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    rdx_status status = RDX_OK;
    rdx_store *opened;
    char path[256];

    TEST("open_missing_or_unreadable");
    in_folder(path, sizeof path, "missing.json");
    opened = rdx_store_open(path, &reducer, 1, &status);
    CHECK(opened == NULL);
    CHECK_STATUS(status, RDX_EIO);
    CHECK(strstr(rdx_last_error(), "missing.json") != NULL);
    CHECK(!exists(path)); /* opening did not create it */
    CHECK(rdx_store_open(path, &reducer, 1, NULL) == NULL);

    in_folder(path, sizeof path, "no-such-folder/missing.json");
    status = RDX_OK;
    CHECK(rdx_store_open(path, &reducer, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EIO);

    /* A folder is not a readable file. */
    status = RDX_OK;
    opened = rdx_store_open(folder, &reducer, 1, &status);
    CHECK(opened == NULL);
    CHECK_STATUS(status, RDX_EIO);
    CHECK(rdx_last_error()[0] != '\0');
    rdx_store_release(opened);
}

/*
 * Files that are not a saved state: NULL, RDX_ECORRUPT, words naming the file, and the file is
 * byte-for-byte as it was (and no temporary appears).
 */
static void check_corrupt(const char *label, const char *bytes, size_t size)
{
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    rdx_status status = RDX_OK;
    rdx_store *opened;
    char path[256], name[160];
    char *after;
    size_t after_size = 0;

    snprintf(name, sizeof name, "open_corrupt: %s", label);
    TEST(name);
    in_folder(path, sizeof path, "corrupt.json");
    CHECK(write_bytes(path, bytes, size));
    opened = rdx_store_open(path, &reducer, 1, &status);
    CHECK(opened == NULL);
    CHECK_STATUS(status, RDX_ECORRUPT);
    if (!CHECK(strstr(rdx_last_error(), "corrupt.json") != NULL))
        fprintf(stderr, "    rdx_last_error() is \"%s\"\n", rdx_last_error());
    rdx_store_release(opened);
    after = read_bytes(path, &after_size);
    CHECK(after != NULL);
    CHECK_EQ_INT(after_size, size);
    CHECK(after != NULL && after_size == size && memcmp(after, bytes, size) == 0);
    CHECK_EQ_INT(entries_in(folder), 1);
    free(after);
    unlink(path);
}

static void test_open_corrupt(void)
{
    static const char binary[] = {'\x00', '\x01', '\x02', 'b', 'i', 'n', '\xff', '\xfe', '\n'};
    static const char *const texts[] = {
        "",
        "\n",
        "garbage",
        "{",
        "[1, 2, 3]",
        "42",
        "null",
        "\"a saved state\"",
        "{}",
        "{\"state\": {\"count\": 1}}",
        "{\"count\": 1}",
    };
    rdx_store *store = rich_store();
    json_object *saved, *broken;
    char path[256];
    char *good, *half;
    size_t good_size = 0, i;

    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) check_corrupt(texts[i], texts[i], strlen(texts[i]));
    check_corrupt("binary", binary, sizeof binary);

    /* Files made from a real save: truncated, with text after it, or missing one of its parts. */
    TEST("open_corrupt");
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    in_folder(path, sizeof path, "good.json");
    CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
    good = read_bytes(path, &good_size);
    unlink(path);
    CHECK(good != NULL && good_size > 10);
    if (good == NULL) return;
    check_corrupt("truncated save", good, good_size / 2);
    check_corrupt("save missing its last byte but newline", good,
                  good[good_size - 1] == '\n' ? good_size - 2 : good_size - 1);
    half = (char *)malloc(good_size + 32);
    memcpy(half, good, good_size);
    memcpy(half + good_size, "{\"more\": 1}", 11);
    check_corrupt("save followed by more JSON", half, good_size + 11);
    free(half);

    saved = json_tokener_parse(good);
    CHECK(saved != NULL && json_object_is_type(saved, json_type_object));
    if (saved != NULL && json_object_is_type(saved, json_type_object)) {
        struct json_object_iterator it = json_object_iter_begin(saved);
        struct json_object_iterator end = json_object_iter_end(saved);
        char label[128];
        for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
            const char *key = json_object_iter_peek_name(&it);
            const char *text;
            broken = NULL;
            json_object_deep_copy(saved, &broken, NULL);
            json_object_object_del(broken, key);
            text = json_object_to_json_string_ext(broken, JSON_C_TO_STRING_PLAIN);
            snprintf(label, sizeof label, "save without its \"%s\"", key);
            check_corrupt(label, text, strlen(text));
            json_object_put(broken);
        }
        /* A version that is not a whole number from 0. */
        if (json_object_object_get_ex(saved, "version", NULL)) {
            static const char *const versions[] = {"-1", "\"1\"", "1.5", "null", "[1]"};
            for (i = 0; i < sizeof versions / sizeof versions[0]; i++) {
                const char *text;
                broken = NULL;
                json_object_deep_copy(saved, &broken, NULL);
                json_object_object_add(broken, "version", json_tokener_parse(versions[i]));
                text = json_object_to_json_string_ext(broken, JSON_C_TO_STRING_PLAIN);
                snprintf(label, sizeof label, "save with version %s", versions[i]);
                check_corrupt(label, text, strlen(text));
                json_object_put(broken);
            }
        }
    }
    json_object_put(saved);
    free(good);
    rdx_store_release(store);

    /* A saved state nested far past RDX_MAX_NESTING_DEPTH: refused, not a crash. */
    {
        static const char head[] = "{\"reduxstore\": 1, \"version\": 1, \"state\": ";
        size_t depth = 100000, length = sizeof head - 1 + 2 * depth + 2;
        char *deep = (char *)malloc(length + 1);
        memcpy(deep, head, sizeof head - 1);
        memset(deep + sizeof head - 1, '[', depth);
        memset(deep + sizeof head - 1 + depth, ']', depth);
        memcpy(deep + length - 2, "}\n", 3);
        check_corrupt("state nested 100000 deep", deep, length);
        free(deep);
    }
}

/*
 * Saving where no file can be written: a folder that does not exist, a path that is a folder, a
 * path ending in "/": RDX_EIO with words, nothing created, and the store unchanged.
 */
static void test_save_unwritable(void)
{
    rdx_store *store = util_counter_store();
    char path[256], sub[256];
    char *before, *after;
    rdx_status status;

    TEST("save_unwritable");
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    before = util_state_text(store);

    in_folder(path, sizeof path, "no-such-folder/state.json");
    CHECK_STATUS(rdx_store_save(store, path), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "no-such-folder") != NULL);
    in_folder(path, sizeof path, "no-such-folder");
    CHECK(!exists(path));

    /* The path is an existing folder. */
    in_folder(sub, sizeof sub, "a-folder");
    CHECK(mkdir(sub, 0755) == 0);
    CHECK_STATUS(rdx_store_save(store, sub), RDX_EIO);
    CHECK(rdx_last_error()[0] != '\0');
    CHECK_EQ_INT(entries_in(sub), 0);

    /* A path naming no file. */
    in_folder(path, sizeof path, "a-folder/");
    CHECK_STATUS(rdx_store_save(store, path), RDX_EIO);
    CHECK_EQ_INT(entries_in(sub), 0);
    status = rdx_store_save(store, "");
    CHECK(status == RDX_EIO || status == RDX_EINVAL);
    CHECK(rdx_last_error()[0] != '\0');
    rmdir(sub);

    CHECK_EQ_INT(entries_in(folder), 0);
    CHECK_EQ_INT(rdx_store_version(store), 1);
    after = util_state_text(store);
    CHECK_STR(after, before);
    free(before);
    free(after);
    rdx_store_release(store);
}

int main(void)
{
    if (mkdtemp(folder) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_save_then_open();
    test_save_replaces_and_cleans_up();
    test_null_state_does_not_open();
    test_open_missing_or_unreadable();
    test_open_corrupt();
    test_save_unwritable();
    TEST("cleanup");
    CHECK_EQ_INT(entries_in(folder), 0);
    CHECK(rmdir(folder) == 0);
    return check_report();
}
