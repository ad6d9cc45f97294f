/*
 * test_journal_edges.c — the journal at its edges, from C: nothing recorded is lost in silence.
 * A FIFO or a device is refused at once (never a hang); a write that fails (here a file size
 * limit, as a full disk does) is reported by flush and stop, and what the file holds stays whole
 * and in order, never written over; one journal at a time holds a file (a second store, or a lock
 * another process holds, is refused; the same store starting again appends); a patch that JSON
 * cannot hold (NaN) is left out, the line saying why; a large torn last line is cut off; a line
 * too long for the journal's reader is written without its payload, saying why.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

/* A temporary folder and the journal's path in it. */
typedef struct journal_place {
    char folder[64];
    char path[128];
} journal_place;

static void place_make(journal_place *place)
{
    strcpy(place->folder, "/tmp/rdx-journal-edges-XXXXXX");
    CHECK(mkdtemp(place->folder) != NULL);
    snprintf(place->path, sizeof place->path, "%s/journal.jsonl", place->folder);
}

static void place_remove(journal_place *place)
{
    char command[160];
    snprintf(command, sizeof command, "rm -rf '%s'", place->folder);
    CHECK(system(command) == 0);
}

/* The whole file, NUL-terminated (malloc'ed; free it), and its length. */
static char *read_file(const char *path, size_t *length)
{
    FILE *file = fopen(path, "rb");
    char *bytes;
    long size;
    *length = 0;
    if (file == NULL) return NULL;
    fseek(file, 0, SEEK_END);
    size = ftell(file);
    fseek(file, 0, SEEK_SET);
    bytes = malloc((size_t)size + 1);
    if (bytes != NULL && fread(bytes, 1, (size_t)size, file) == (size_t)size) {
        bytes[size] = '\0';
        *length = (size_t)size;
    }
    fclose(file);
    return bytes;
}

/*
 * The number of lines of the journal if every one is whole JSON (newline-terminated) and the
 * versions run from `first` up by one; else -1.
 */
static int contiguous_lines(const char *path, int64_t first)
{
    size_t length;
    char *bytes = read_file(path, &length);
    char *line;
    int count = 0;
    if (bytes == NULL) return -1;
    if (length > 0 && bytes[length - 1] != '\n') count = -1;
    line = bytes;
    while (count >= 0 && *line != '\0') {
        char *end = strchr(line, '\n');
        json_object *parsed;
        *end = '\0';
        parsed = json_tokener_parse(line);
        count = parsed != NULL && util_int(parsed, "version") == first + count ? count + 1 : -1;
        json_object_put(parsed);
        line = end + 1;
    }
    free(bytes);
    return count;
}

/* The line of `version` (1 = the first line) parsed, or NULL; json_object_put() it. */
static json_object *line_at(const char *path, int number)
{
    size_t length;
    char *bytes = read_file(path, &length);
    char *line = bytes;
    json_object *parsed = NULL;
    int index;
    if (bytes == NULL) return NULL;
    for (index = 1; index < number && line != NULL; index++) {
        line = strchr(line, '\n');
        if (line != NULL) line++;
    }
    if (line != NULL && *line != '\0') {
        char *end = strchr(line, '\n');
        if (end != NULL) *end = '\0';
        parsed = json_tokener_parse(line);
    }
    free(bytes);
    return parsed;
}

static const char *string_member(json_object *object, const char *key)
{
    json_object *value = NULL;
    if (object == NULL || !json_object_object_get_ex(object, key, &value)) return "(missing)";
    return json_object_get_string(value);
}

/* A FIFO with no reader, a device, a folder: refused with words, at once (the watchdog would
 * catch a hang), the store unchanged. */
static void test_only_regular_files(void)
{
    journal_place place;
    char fifo[160];
    rdx_store *store = util_counter_store();

    TEST("journal_only_regular_files");
    place_make(&place);
    snprintf(fifo, sizeof fifo, "%s/fifo", place.folder);
    CHECK(mkfifo(fifo, 0600) == 0);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_start_journal(store, fifo, false), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "not a regular file (a FIFO)") != NULL);
    CHECK_STATUS(rdx_store_start_journal(store, "/dev/null", false), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "not a regular file (a character device)") != NULL);
    CHECK_STATUS(rdx_store_start_journal(store, place.folder, false), RDX_EIO);
    CHECK_STATUS(rdx_store_start_journal(store, "", false), RDX_EINVAL);
    /* No journal runs: a dispatch and a flush go on as ever. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_flush_journal(store), RDX_OK);
    CHECK_EQ_INT(util_count(store), 1);
    rdx_store_release(store);
    place_remove(&place);
}

/*
 * A write that fails: the file size limit (RLIMIT_FSIZE) fails the journal's writes the way a
 * full disk fails them with ENOSPC, with SIGXFSZ left as it is (its default ends the process: the
 * library asks for the limit before it writes). Flush and stop say so with words, the file holds
 * versions 1..k whole and in order, nothing is written after the failure, and a journal started
 * again appends after the last whole line: no line is ever written over another.
 */
static void test_failed_write(void)
{
    journal_place place;
    rdx_store *store = util_counter_store();
    struct rlimit saved;
    struct rlimit limited;
    json_object *payload = json_object_new_string(
        "a payload long enough that two thousand lines take more than the limit of 64 KiB");
    int index;
    int before;
    int after;
    json_object *last;

    TEST("journal_failed_write");
    place_make(&place);
    if (store == NULL) return;
    CHECK(signal(SIGXFSZ, SIG_DFL) != SIG_ERR);
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    CHECK_STATUS(rdx_store_start_journal(store, place.path, false), RDX_OK);
    limited = saved;
    limited.rlim_cur = 64 * 1024;
    CHECK(setrlimit(RLIMIT_FSIZE, &limited) == 0);
    for (index = 0; index < 2000; index++) {
        CHECK_STATUS(rdx_store_dispatch_action(store, "note", payload), RDX_OK);
    }
    CHECK_STATUS(rdx_store_flush_journal(store), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "file size limit") != NULL);
    CHECK(strstr(rdx_last_error(), "not written") != NULL);
    CHECK(strstr(rdx_last_error(), "versions") != NULL);
    CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0);

    before = contiguous_lines(place.path, 1);
    CHECK(before > 100 && before < 2000); /* the lines written whole before the limit stay */
    /* Space again: the journal still writes nothing, and keeps saying so. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "note", payload), RDX_OK);
    CHECK_STATUS(rdx_store_flush_journal(store), RDX_EIO);
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "2001") != NULL); /* the last version not written */
    CHECK_EQ_INT(contiguous_lines(place.path, 1), before);
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_OK); /* stopped: nothing more to say */

    /* Started again, it appends after the last whole line. */
    CHECK_STATUS(rdx_store_start_journal(store, place.path, false), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_OK);
    after = contiguous_lines(place.path, 1); /* fails: a gap, as replay would report */
    CHECK_EQ_INT(after, -1);
    last = line_at(place.path, before + 1);
    CHECK_EQ_INT(util_int(last, "version"), 2002);
    json_object_put(last);
    last = line_at(place.path, before);
    CHECK_EQ_INT(util_int(last, "version"), before);
    json_object_put(last);

    json_object_put(payload);
    rdx_store_release(store);
    place_remove(&place);
}

/* One journal at a time on a file. */
static void test_one_writer(void)
{
    journal_place place;
    rdx_store *first = util_counter_store();
    rdx_store *second = util_counter_store();
    json_object *line;
    int fd;
    int index;

    TEST("journal_one_writer");
    place_make(&place);
    if (first == NULL || second == NULL) return;
    CHECK_STATUS(rdx_store_start_journal(first, place.path, false), RDX_OK);
    /* A second store on the same path is refused, with words, and records nothing. */
    CHECK_STATUS(rdx_store_start_journal(second, place.path, false), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "in use by another journal") != NULL);
    /* So is another process: the file's lock is a flock(2) any process sees. */
    fd = open(place.path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK(flock(fd, LOCK_EX | LOCK_NB) == -1 && errno == EWOULDBLOCK);
    close(fd);
    for (index = 0; index < 3; index++) {
        CHECK_STATUS(rdx_store_dispatch_action(first, "inc", NULL), RDX_OK);
        CHECK_STATUS(rdx_store_dispatch_action(second, "inc", NULL), RDX_OK);
    }
    /* The same store starting again on its own path: the running journal stops, the new one
     * appends after its last line (nothing written over, nothing missed). */
    CHECK_STATUS(rdx_store_start_journal(first, place.path, false), RDX_OK);
    for (index = 0; index < 3; index++) CHECK_STATUS(rdx_store_dispatch_action(first, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_stop_journal(first), RDX_OK);
    CHECK_EQ_INT(contiguous_lines(place.path, 1), 6);

    /* A lock held by someone else (another process's journal) refuses the start. */
    fd = open(place.path, O_RDONLY);
    CHECK(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0);
    CHECK_STATUS(rdx_store_start_journal(second, place.path, false), RDX_EIO);
    close(fd);
    /* Free, but second's next action (version 4) would go back after first's 6: refused, with
     * words, and the file as it was. */
    CHECK_STATUS(rdx_store_start_journal(second, place.path, false), RDX_EIO);
    CHECK(strstr(rdx_last_error(), "would go back in versions") != NULL);
    CHECK_EQ_INT(contiguous_lines(place.path, 1), 6);
    /* Once second is past 6, it appends: version 7 follows 6. */
    for (index = 0; index < 3; index++) CHECK_STATUS(rdx_store_dispatch_action(second, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_start_journal(second, place.path, false), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(second, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_stop_journal(second), RDX_OK);
    CHECK_EQ_INT(contiguous_lines(place.path, 1), 7);
    line = line_at(place.path, 7);
    CHECK_EQ_INT(util_int(line, "version"), 7);
    json_object_put(line);

    rdx_store_release(first);
    rdx_store_release(second);
    place_remove(&place);
}

/* "x" := NaN, then "x" := 2: the patches JSON cannot hold are left out, each line saying why,
 * and the flush says so once. */
static void set_x(json_object *state, const char *identifier, json_object *payload, void *context)
{
    (void)payload;
    (void)context;
    if (strcmp(identifier, "nan") == 0) json_object_object_add(state, "x", json_object_new_double(NAN));
    if (strcmp(identifier, "two") == 0) json_object_object_add(state, "x", json_object_new_int(2));
}

static void test_patch_not_json(void)
{
    journal_place place;
    rdx_reducer reducer = {set_x, NULL, NULL};
    rdx_store *store = util_store(&reducer, 1);
    json_object *line;

    TEST("journal_patch_not_json");
    place_make(&place);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_start_journal(store, place.path, true), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "two", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "nan", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "two", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "two", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_flush_journal(store), RDX_EDECODE);
    CHECK(strstr(rdx_last_error(), "2 entries (versions 2–3) were written without their payload or patch") != NULL);
    CHECK(strstr(rdx_last_error(), "version 2: the state after this action is not JSON: x: non-finite number nan is not valid JSON") != NULL);
    CHECK_STATUS(rdx_store_flush_journal(store), RDX_OK); /* said once */
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_OK);
    CHECK_EQ_INT(contiguous_lines(place.path, 1), 4);

    line = line_at(place.path, 1);
    CHECK_STR(string_member(line, "patchError"), "(missing)");
    CHECK(strcmp(string_member(line, "patch"), "(missing)") != 0);
    json_object_put(line);
    line = line_at(place.path, 2);
    CHECK_STR(string_member(line, "patch"), "(missing)");
    CHECK(strstr(string_member(line, "patchError"), "the state after this action is not JSON: x: non-finite number nan is not valid JSON") != NULL);
    json_object_put(line);
    line = line_at(place.path, 3); /* no state before it to diff against */
    CHECK_STR(string_member(line, "patch"), "(missing)");
    CHECK(strstr(string_member(line, "patchError"), "the state at version 2 is not JSON") != NULL);
    json_object_put(line);
    line = line_at(place.path, 4);
    CHECK_STR(string_member(line, "patchError"), "(missing)");
    CHECK_STR(string_member(line, "patch"), "[ ]");
    json_object_put(line);

    rdx_store_release(store);
    place_remove(&place);
}

/* A file whose last line is torn (a crash mid-line) and long: cut back to its last whole line. */
static void test_long_torn_line(void)
{
    journal_place place;
    rdx_store *store = util_counter_store();
    FILE *file;
    size_t torn = util_small() ? (size_t)1 << 20 : (size_t)32 << 20;
    char *filler = malloc(torn);
    size_t length;
    char *bytes;

    TEST("journal_long_torn_line");
    place_make(&place);
    if (store == NULL || filler == NULL) return;
    file = fopen(place.path, "wb");
    CHECK(file != NULL);
    fputs("{\"version\":1,\"identifier\":\"inc\",\"time\":\"2026-11-22T10:00:00.000Z\"}\n", file);
    memset(filler, 'x', torn);
    fputs("{\"version\":2,\"identifier\":\"inc\",\"payload\":\"", file);
    CHECK(fwrite(filler, 1, torn, file) == torn);
    fclose(file);
    free(filler);

    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_start_journal(store, place.path, false), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_OK);
    CHECK_EQ_INT(contiguous_lines(place.path, 1), 2);
    bytes = read_file(place.path, &length);
    CHECK(length < 200);
    free(bytes);
    rdx_store_release(store);
    place_remove(&place);
}

/* A payload whose line would be longer than the journal's reader reads: written without it. */
static void test_line_too_long(void)
{
    journal_place place;
    rdx_store *store = util_counter_store();
    size_t size = (size_t)65 << 20;
    char *text = malloc(size + 1);
    json_object *payload;
    json_object *line;

    TEST("journal_line_too_long");
    place_make(&place);
    if (store == NULL || text == NULL) return;
    memset(text, 'y', size);
    text[size] = '\0';
    payload = json_object_new_string(text);
    free(text);
    CHECK_STATUS(rdx_store_start_journal(store, place.path, false), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "big", payload), RDX_OK);
    json_object_put(payload);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_flush_journal(store), RDX_ELIMIT);
    CHECK(strstr(rdx_last_error(), "version 1: its line would be") != NULL);
    CHECK_STATUS(rdx_store_stop_journal(store), RDX_OK);
    CHECK_EQ_INT(contiguous_lines(place.path, 1), 2);
    line = line_at(place.path, 1);
    CHECK_STR(string_member(line, "payload"), "(missing)");
    CHECK_STR(string_member(line, "replayable"), "false");
    CHECK(strstr(string_member(line, "payloadError"), "more than the journal's limit of 67108864") != NULL);
    json_object_put(line);
    rdx_store_release(store);
    place_remove(&place);
}

int main(void)
{
    check_watchdog(CHECK_TEST_SECONDS);
    test_only_regular_files();
    test_failed_write();
    test_one_writer();
    test_patch_not_json();
    test_long_torn_line();
    if (!util_small()) test_line_too_long(); /* 65 MiB: too slow under valgrind */
    return check_report();
}
