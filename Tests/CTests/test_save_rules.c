/*
 * test_save_rules.c — what rdx_store_save writes, rdx_store_open reads; what it cannot write, it
 * refuses with a status and words, leaving the old file byte for byte as it was and no temporary
 * behind: a state over RDX_MAX_JSON_TEXT_SIZE of text, nesting past RDX_MAX_NESTING_DEPTH made by
 * a reducer, a NaN or an infinity a reducer put in the tree, a string that is not UTF-8, version
 * 2^63 - 1. rdx_store_open reads regular files only and never blocks (/dev/zero, a FIFO);
 * rdx_store_save replaces regular files only (a FIFO, a device, a symbolic link are refused and
 * stay) and keeps the mode of the file it replaces.
 */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"
#include "files.h"

static char folder[] = "/tmp/reduxstore-ctest-rules-XXXXXX";

static const char *in_folder(char *buffer, size_t size, const char *name)
{
    snprintf(buffer, size, "%s/%s", folder, name);
    return buffer;
}

/* A NEW malloc'ed copy of a file's bytes (NUL-terminated), or NULL. */
static char *read_text(const char *path)
{
    FILE *file = fopen(path, "rb");
    char *bytes = NULL;
    size_t used = 0, capacity = 0, count;
    if (file == NULL) return NULL;
    do {
        if (used == capacity) {
            capacity = capacity == 0 ? 4096 : capacity * 2;
            bytes = (char *)realloc(bytes, capacity + 1);
        }
        count = fread(bytes + used, 1, capacity - used, file);
        used += count;
    } while (count > 0);
    fclose(file);
    bytes[used] = '\0';
    return bytes;
}


/*
 * "nan" and "inf" put a non-finite number at state.x; "wrap" wraps state.deep in one more array;
 * "bad-utf8" puts the bytes C0 93 (an overlong form) in state.s; "big" puts a string of
 * `payload` bytes in state.s.
 */
static void rules_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    (void)context;
    if (strcmp(identifier, "nan") == 0) {
        json_object_object_add(state, "x", json_object_new_double(NAN));
    } else if (strcmp(identifier, "inf") == 0) {
        json_object_object_add(state, "x", json_object_new_double(-INFINITY));
    } else if (strcmp(identifier, "wrap") == 0) {
        json_object *deep = NULL, *array = json_object_new_array();
        json_object_object_get_ex(state, "deep", &deep);
        json_object_array_add(array, json_object_get(deep));
        json_object_object_add(state, "deep", array);
    } else if (strcmp(identifier, "bad-utf8") == 0) {
        json_object_object_add(state, "s", json_object_new_string_len("\xC0\x93", 2));
    } else if (strcmp(identifier, "big") == 0) {
        size_t size = (size_t)json_object_get_int64(payload);
        char *text = (char *)malloc(size + 1);
        memset(text, 'a', size);
        text[size] = '\0';
        json_object_object_add(state, "s", json_object_new_string_len(text, (int)size));
        free(text);
    }
}

/* A store with state {"count": 0, "deep": 0} and rules_reduce. */
static rdx_store *rules_store(void)
{
    rdx_reducer reducer = {rules_reduce, NULL, NULL};
    json_object *initial = json_tokener_parse("{\"count\": 0, \"deep\": 0}");
    rdx_store *store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    return store;
}

/*
 * Saves a fresh store, applies `count` actions `identifier` (payload `size` when not 0), then
 * saves again: the second save gives `expected` with `words` in rdx_last_error(), the file is
 * as the first save left it, and the folder holds that file only.
 */
static void check_refused(const char *identifier, int count, int64_t size, rdx_status expected,
                          const char *words)
{
    rdx_store *store = rules_store();
    json_object *payload = size != 0 ? json_object_new_int64(size) : NULL;
    char path[256], name[128];
    char *before, *after;
    int i;

    snprintf(name, sizeof name, "save refuses %d x %s", count, identifier);
    TEST(name);
    in_folder(path, sizeof path, "state.json");
    CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
    before = read_text(path);
    for (i = 0; i < count; i++) CHECK_STATUS(rdx_store_dispatch_action(store, identifier, payload), RDX_OK);
    CHECK_STATUS(rdx_store_save(store, path), expected);
    if (!CHECK(strstr(rdx_last_error(), words) != NULL))
        fprintf(stderr, "    rdx_last_error() is \"%.300s\"\n", rdx_last_error());
    CHECK(strstr(rdx_last_error(), path) != NULL);
    after = read_text(path);
    CHECK_STR(after, before);
    CHECK_EQ_INT(entries_in(folder), 1);
    free(before);
    free(after);
    json_object_put(payload);
    unlink(path);
    rdx_store_release(store);
}

static void test_save_refuses_what_open_refuses(void)
{
    check_refused("nan", 1, 0, RDX_EDECODE, "state.x: non-finite number is not valid JSON");
    check_refused("inf", 1, 0, RDX_EDECODE, "state.x: non-finite number is not valid JSON");
    /* The state object and 256 arrays: 257 levels. */
    check_refused("wrap", 256, 0, RDX_ELIMIT, "state is nested deeper than 256 levels");
    check_refused("wrap", 300, 0, RDX_ELIMIT, "state is nested deeper than 256 levels");
    check_refused("bad-utf8", 1, 0, RDX_EDECODE, "the state would not read back");
    check_refused("big", 1, (int64_t)RDX_MAX_JSON_TEXT_SIZE, RDX_ELIMIT,
                  "more than the limit of 67108864 bytes a saved state is read with");
}

/* The state object and 255 arrays (256 levels): saved, and opened with the same tree. */
static void test_deepest_state_round_trips(void)
{
    rdx_reducer reducer = {rules_reduce, NULL, NULL};
    rdx_store *store = rules_store(), *opened;
    rdx_status status = RDX_EIO;
    json_object *saved, *restored;
    char path[256];
    int i;

    TEST("the deepest state saves and opens");
    in_folder(path, sizeof path, "deep.json");
    for (i = 0; i < 255; i++) CHECK_STATUS(rdx_store_dispatch_action(store, "wrap", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
    opened = rdx_store_open(path, &reducer, 1, &status);
    CHECK_STATUS(status, RDX_OK);
    CHECK_EQ_INT(rdx_store_version(opened), 255);
    saved = rdx_store_current_state(store);
    restored = rdx_store_current_state(opened);
    CHECK(json_object_equal(saved, restored));
    json_object_put(saved);
    json_object_put(restored);
    rdx_store_release(opened);
    rdx_store_release(store);
    unlink(path);
}

/* Version 2^63 - 2 opens; one more action makes 2^63 - 1, which no file holds: refused. */
static void test_largest_version(void)
{
    static const char text[] = "{\"reduxstore\":1,\"version\":9223372036854775806,\"state\":{\"count\":1}}\n";
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    rdx_status status = RDX_EIO;
    rdx_store *store;
    char path[256];
    char *after;
    FILE *file;

    TEST("version 2^63 - 1 is refused by save");
    in_folder(path, sizeof path, "version.json");
    file = fopen(path, "wb");
    fputs(text, file);
    fclose(file);
    store = rdx_store_open(path, &reducer, 1, &status);
    CHECK_STATUS(status, RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK(rdx_store_version(store) == UINT64_C(9223372036854775807));
    CHECK_STATUS(rdx_store_save(store, path), RDX_ELIMIT);
    CHECK(strstr(rdx_last_error(), "version 9223372036854775807 cannot be saved") != NULL);
    after = read_text(path);
    CHECK_STR(after, text);
    CHECK_EQ_INT(entries_in(folder), 1);
    free(after);
    rdx_store_release(store);
    unlink(path);
}

/* /dev/zero and a FIFO: RDX_EIO at once (the watchdog turns a block into a failure). */
static void test_open_regular_files_only(void)
{
    rdx_status status = RDX_OK;
    char fifo[256];

    TEST("open /dev/zero");
    CHECK(rdx_store_open("/dev/zero", NULL, 0, &status) == NULL);
    CHECK_STATUS(status, RDX_EIO);
    CHECK_STR(rdx_last_error(), "open /dev/zero: not a regular file (a character device)");

    TEST("open a FIFO");
    in_folder(fifo, sizeof fifo, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    status = RDX_OK;
    CHECK(rdx_store_open(fifo, NULL, 0, &status) == NULL);
    CHECK_STATUS(status, RDX_EIO);
    CHECK(strstr(rdx_last_error(), "not a regular file (a FIFO)") != NULL);
    unlink(fifo);
}

/* The type of `path` (lstat), or 0. */
static mode_t type_of(const char *path)
{
    struct stat info;
    return lstat(path, &info) == 0 ? (info.st_mode & S_IFMT) : 0;
}

static void test_save_regular_files_only(void)
{
    rdx_store *store = util_counter_store();
    char fifo[256], device[256], link[256], real[256], dangling[256];
    char *after;
    int made_device;

    TEST("save over a FIFO");
    in_folder(fifo, sizeof fifo, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_STATUS(rdx_store_save(store, fifo), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "the target is a FIFO, not a regular file") != NULL);
    CHECK(type_of(fifo) == S_IFIFO);
    unlink(fifo);

    TEST("save over a character device");
    in_folder(device, sizeof device, "null");
    /* The device of /dev/null, made in the test's folder (allowed to root only). */
    made_device = mknod(device, S_IFCHR | 0666, makedev(1, 3)) == 0;
    if (!made_device) snprintf(device, sizeof device, "/dev/null");
    CHECK_STATUS(rdx_store_save(store, device), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "the target is a character device, not a regular file") != NULL);
    CHECK(type_of(device) == S_IFCHR);
    if (made_device) unlink(device);

    TEST("save over a symbolic link");
    in_folder(real, sizeof real, "real.json");
    in_folder(link, sizeof link, "link.json");
    in_folder(dangling, sizeof dangling, "dangling.json");
    CHECK_STATUS(rdx_store_save(store, real), RDX_OK);
    CHECK(symlink("real.json", link) == 0);
    CHECK(symlink("nothing.json", dangling) == 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_save(store, link), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "the target is a symbolic link to a regular file") != NULL);
    CHECK_STATUS(rdx_store_save(store, dangling), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "the target is a symbolic link to nothing") != NULL);
    CHECK(type_of(link) == S_IFLNK);
    CHECK(type_of(dangling) == S_IFLNK);
    after = read_text(real);
    CHECK_STR(after, "{\"reduxstore\":1,\"version\":0,\"state\":{\"count\":0}}\n");
    free(after);
    CHECK_EQ_INT(entries_in(folder), 3);
    unlink(link);
    unlink(dangling);
    unlink(real);
    rdx_store_release(store);
}

static void test_save_keeps_mode(void)
{
    rdx_store *store = util_counter_store();
    char path[256];
    struct stat info;

    TEST("save keeps the mode of the file it replaces");
    in_folder(path, sizeof path, "private.json");
    CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
    CHECK(chmod(path, 0600) == 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
    CHECK(stat(path, &info) == 0);
    CHECK_EQ_INT(info.st_mode & 07777, 0600);
    CHECK_EQ_INT(util_count(store), 1);
    unlink(path);
    rdx_store_release(store);
}

/* A save that would pass the process's file size limit (RLIMIT_FSIZE) is RDX_EIO with words,
 * the process not ended by SIGXFSZ (left at its default), the old file as it was. */
static void test_save_within_file_size_limit(void)
{
    json_object *state = json_object_new_object();
    rdx_store *store;
    char path[256];
    struct rlimit saved;
    struct rlimit limited;
    struct stat before;
    struct stat after;

    TEST("a save past the file size limit is RDX_EIO, and the old file stays");
    json_object_object_add(state, "text", json_object_new_string_len(
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 64));
    store = rdx_store_create(state, NULL, 0, NULL);
    in_folder(path, sizeof path, "limited.json");
    CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
    CHECK(stat(path, &before) == 0);
    json_object_object_add(state, "big", json_object_new_string(
        "a string of more than a hundred bytes, so that the state no longer fits in the limit "
        "of one hundred and fifty bytes set below for this process"));
    rdx_store_release(store);
    store = rdx_store_create(state, NULL, 0, NULL);
    CHECK(signal(SIGXFSZ, SIG_DFL) != SIG_ERR);
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    limited = saved;
    limited.rlim_cur = 150;
    CHECK(setrlimit(RLIMIT_FSIZE, &limited) == 0);
    CHECK_STATUS(rdx_store_save(store, path), RDX_EIO);
    CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0);
    CHECK(strstr(rdx_last_error(), "file size limit") != NULL);
    CHECK(stat(path, &after) == 0);
    CHECK_EQ_INT(after.st_size, before.st_size);
    CHECK_EQ_INT(entries_in(folder), 1); /* no temporary left */
    unlink(path);
    json_object_put(state);
    rdx_store_release(store);
}

int main(void)
{
    check_watchdog(CHECK_TEST_SECONDS);
    if (mkdtemp(folder) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    test_save_refuses_what_open_refuses();
    test_deepest_state_round_trips();
    test_largest_version();
    test_open_regular_files_only();
    test_save_regular_files_only();
    test_save_keeps_mode();
    test_save_within_file_size_limit();
    TEST("cleanup");
    CHECK_EQ_INT(entries_in(folder), 0);
    CHECK(rmdir(folder) == 0);
    return check_report();
}
