/*
 * test_code_points.c — JSON strings are sequences of code points: "\u00e9" (é, bytes C3 A9) and
 * "e\u0301" (e and a combining acute accent, bytes 65 CC 81) are different strings and
 * different keys, although Swift's String calls them equal. rdx_json_diff() reports a change
 * from one to the other, rdx_json_patch() makes it and removes one key without the other, a
 * journal recorded with patches records such a change, and a pointer observer of one key is
 * called when that key changes, never for the other. A \u escape of half a surrogate pair is
 * refused, not made U+FFFD.
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

#define PRECOMPOSED "\xc3\xa9"   /* U+00E9 */
#define DECOMPOSED "e\xcc\x81"    /* U+0065 U+0301 */

/* A NEW tree of JSON text (the test's own: the texts are valid). */
static json_object *parse(const char *text)
{
    json_object *tree = json_tokener_parse(text);
    CHECK(tree != NULL);
    return tree;
}

/* The compact text of a tree, '/' not escaped; valid until the tree changes. */
static const char *text_of(json_object *tree)
{
    return json_object_to_json_string_ext(tree, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* The diff of a string changed into its look-alike is one replace; of a look-alike key added
 * beside the other, one add. */
static void test_diff(void)
{
    json_object *from, *to, *patch;

    TEST("diff");
    from = parse("{\"s\":\"" PRECOMPOSED "\"}");
    to = parse("{\"s\":\"" DECOMPOSED "\"}");
    patch = rdx_json_diff(from, to);
    CHECK(patch != NULL);
    if (patch != NULL) {
        CHECK_STR(text_of(patch), "[{\"op\":\"replace\",\"path\":\"/s\",\"value\":\"" DECOMPOSED "\"}]");
    }
    json_object_put(patch);
    json_object_put(from);
    json_object_put(to);

    from = parse("{\"" PRECOMPOSED "\":1}");
    to = parse("{\"" PRECOMPOSED "\":1,\"" DECOMPOSED "\":2}");
    patch = rdx_json_diff(from, to);
    CHECK(patch != NULL);
    if (patch != NULL) {
        CHECK_STR(text_of(patch), "[{\"op\":\"add\",\"path\":\"/" DECOMPOSED "\",\"value\":2}]");
    }
    json_object_put(patch);
    json_object_put(from);
    json_object_put(to);
}

/* A replace by the look-alike changes the document; a remove of one key keeps the other. */
static void test_patch(void)
{
    json_object *document, *patch, *member = NULL;

    TEST("patch_replace");
    document = parse("{\"s\":\"" PRECOMPOSED "\"}");
    patch = parse("[{\"op\":\"replace\",\"path\":\"/s\",\"value\":\"" DECOMPOSED "\"}]");
    CHECK_STATUS(rdx_json_patch(document, patch), RDX_OK);
    CHECK_STR(text_of(document), "{\"s\":\"" DECOMPOSED "\"}");
    json_object_put(patch);
    json_object_put(document);

    TEST("patch_remove");
    document = parse("{\"" PRECOMPOSED "\":1,\"" DECOMPOSED "\":2}");
    patch = parse("[{\"op\":\"remove\",\"path\":\"/" DECOMPOSED "\"}]");
    CHECK_STATUS(rdx_json_patch(document, patch), RDX_OK);
    CHECK_STR(text_of(document), "{\"" PRECOMPOSED "\":1}");
    json_object_put(patch);

    /* And the other way: an add of the look-alike beside the key, then a replace of one. */
    TEST("patch_add");
    patch = parse("[{\"op\":\"add\",\"path\":\"/" DECOMPOSED "\",\"value\":3},"
                  "{\"op\":\"replace\",\"path\":\"/" PRECOMPOSED "\",\"value\":4}]");
    CHECK_STATUS(rdx_json_patch(document, patch), RDX_OK);
    CHECK_EQ_INT(json_object_object_length(document), 2);
    CHECK(json_object_object_get_ex(document, PRECOMPOSED, &member) && json_object_get_int64(member) == 4);
    CHECK(json_object_object_get_ex(document, DECOMPOSED, &member) && json_object_get_int64(member) == 3);
    json_object_put(patch);
    json_object_put(document);
}

struct pointer_seen {
    int calls;
    uint64_t versions[8];
};

static void pointer_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct pointer_seen *seen = context;
    (void)store;
    (void)name;
    if (seen->calls < 8) seen->versions[seen->calls] = version;
    seen->calls++;
}

/* An observer of "/e\u0301" hears of that key's changes only; one of "/\u00e9" of its own. */
static void test_pointer_observer(void)
{
    rdx_reducer reducer = {0};
    rdx_store *store;
    struct pointer_seen decomposed, precomposed;

    TEST("pointer_observer");
    memset(&decomposed, 0, sizeof decomposed);
    memset(&precomposed, 0, sizeof precomposed);
    reducer.reduce = util_keyed_reduce;
    reducer.context = NULL;
    store = util_store(&reducer, 1);
    if (store == NULL) return;
    CHECK(rdx_store_observe_pointer(store, "/" DECOMPOSED, pointer_observer, &decomposed) != 0);
    CHECK(rdx_store_observe_pointer(store, "/" PRECOMPOSED, pointer_observer, &precomposed) != 0);
    /* 1: "é" appears */
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"" PRECOMPOSED "\",\"value\":1}}"),
                 RDX_OK);
    /* 2: "e\u0301" appears */
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"" DECOMPOSED "\",\"value\":2}}"),
                 RDX_OK);
    /* 3: "é" changes */
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"" PRECOMPOSED "\",\"value\":3}}"),
                 RDX_OK);
    /* 4: "e\u0301" changes */
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"" DECOMPOSED "\",\"value\":4}}"),
                 RDX_OK);
    CHECK_EQ_INT(decomposed.calls, 2);
    CHECK_EQ_INT(decomposed.versions[0], 2);
    CHECK_EQ_INT(decomposed.versions[1], 4);
    CHECK_EQ_INT(precomposed.calls, 2);
    CHECK_EQ_INT(precomposed.versions[0], 1);
    CHECK_EQ_INT(precomposed.versions[1], 3);
    rdx_store_release(store);
}

/* A key that is not UTF-8 (json-c keeps any bytes) is an error with words, never repaired into
 * U+FFFD, which would make two keys one. */
static void test_key_not_utf8(void)
{
    json_object *from = json_object_new_object();
    json_object *to = json_object_new_object();
    json_object *patch;

    TEST("key_not_utf8");
    json_object_object_add(from, "\xff", json_object_new_int(1));
    json_object_object_add(to, "\xff", json_object_new_int(1));
    json_object_object_add(to, "\xfe", json_object_new_int(2));
    CHECK(rdx_json_diff(from, to) == NULL);
    CHECK(strstr(rdx_last_error(), "key is not valid UTF-8") != NULL);
    patch = parse("[{\"op\":\"remove\",\"path\":\"/\xef\xbf\xbd\"}]"); /* "/\ufffd" */
    CHECK_STATUS(rdx_json_patch(to, patch), RDX_EDECODE);
    CHECK(strstr(rdx_last_error(), "document.") == rdx_last_error());
    CHECK(strstr(rdx_last_error(), "key is not valid UTF-8") != NULL);
    CHECK_EQ_INT(json_object_object_length(to), 2);
    json_object_put(patch);
    json_object_put(from);
    json_object_put(to);
}

/* The patch of each journal line of a file, as compact text, into `patches` (NULL when a line has
 * none); returns the number of lines. */
static int journal_patches(const char *path, char patches[][256], int capacity)
{
    FILE *file = fopen(path, "r");
    char line[4096];
    int count = 0;
    if (file == NULL) return 0;
    while (fgets(line, sizeof line, file) != NULL && count < capacity) {
        json_object *entry = json_tokener_parse(line);
        json_object *patch = NULL;
        patches[count][0] = 0;
        if (entry != NULL && json_object_object_get_ex(entry, "patch", &patch)) {
            snprintf(patches[count], 256, "%s", text_of(patch));
        }
        json_object_put(entry);
        count++;
    }
    fclose(file);
    return count;
}

/* A C store's journal with patches records a string changed into its look-alike, and a key
 * added beside its look-alike, as JSON Patch operations. */
static void test_journal_patches(void)
{
    char folder[] = "/tmp/rdx-code-points-XXXXXX";
    char path[256];
    char patches[4][256];
    rdx_reducer reducer = {0};
    rdx_store *store;
    int count;

    TEST("journal_patches");
    CHECK(mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/journal.jsonl", folder);
    reducer.reduce = util_keyed_reduce;
    reducer.context = NULL;
    store = util_store(&reducer, 1);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_start_journal(store, path, true), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"" PRECOMPOSED "\",\"value\":\"" PRECOMPOSED "\"}}"),
                 RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"" PRECOMPOSED "\",\"value\":\"" DECOMPOSED "\"}}"),
                 RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"" DECOMPOSED "\",\"value\":1}}"),
                 RDX_OK);
    rdx_store_release(store); /* the last release stops the journal, writing what it had */
    count = journal_patches(path, patches, 4);
    CHECK_EQ_INT(count, 3);
    if (count == 3) {
        CHECK_STR(patches[0], "[{\"op\":\"add\",\"path\":\"/" PRECOMPOSED "\",\"value\":\"" PRECOMPOSED "\"}]");
        CHECK_STR(patches[1], "[{\"op\":\"replace\",\"path\":\"/" PRECOMPOSED "\",\"value\":\"" DECOMPOSED "\"}]");
        CHECK_STR(patches[2], "[{\"op\":\"add\",\"path\":\"/" DECOMPOSED "\",\"value\":1}]");
    }
    unlink(path);
    rmdir(folder);
}

/* A \u escape of half a surrogate pair is not a character: refused with words (json-c alone would
 * make it U+FFFD, two different texts one key), changing nothing; a whole pair is one character. */
static void test_lone_surrogate_escape(void)
{
    rdx_reducer reducer = {0};
    rdx_store *store;
    char *text;

    TEST("lone_surrogate_escape");
    reducer.reduce = util_keyed_reduce;
    reducer.context = NULL;
    store = util_store(&reducer, 1);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"\\ud800\",\"value\":1}}"),
                 RDX_EPARSE);
    CHECK(strstr(rdx_last_error(), "\\uD800 is half of a surrogate pair") != NULL);
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\":\"\\udfff\"}"), RDX_EPARSE);
    CHECK_STATUS(rdx_store_dispatch_batch_json(store,
                     "[{\"identifier\":\"set\",\"payload\":{\"key\":\"a\",\"value\":1}},"
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"\\ud83d\\u0041\",\"value\":2}}]"),
                 RDX_EPARSE);
    CHECK_EQ_INT((int)rdx_store_version(store), 0);
    CHECK_STATUS(rdx_store_dispatch_json(store,
                     "{\"identifier\":\"set\",\"payload\":{\"key\":\"\\ud83d\\ude00\",\"value\":3}}"),
                 RDX_OK);
    text = util_state_text(store);
    CHECK_STR(text, "{\"\xf0\x9f\x98\x80\":3}");
    free(text);
    rdx_store_release(store);
}

int main(void)
{
    check_watchdog(CHECK_TEST_SECONDS);
    test_diff();
    test_patch();
    test_pointer_observer();
    test_journal_patches();
    test_key_not_utf8();
    test_lone_surrogate_escape();
    return check_report();
}
