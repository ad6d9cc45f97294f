/*
 * test_inspection.c — rdx_json_diff() and rdx_json_patch(): a diff applied with a patch gives
 * the target tree; patches change the document in place and only where it differs; bad inputs
 * (NULL, a patch that is not an array of operations, an operation that does not apply, a change
 * of the root's kind, nesting past the limit) get a status and words and leave the document as
 * it was.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

/* A NEW tree of JSON text (the test's own: the texts are valid). */
static json_object *parse(const char *text)
{
    json_object *tree = json_tokener_parse(text);
    CHECK(tree != NULL);
    return tree;
}

/* A NEW malloc'ed text of a tree, compact, '/' not escaped; free() it. */
static char *text_of(json_object *tree)
{
    return strdup(json_object_to_json_string_ext(
        tree, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Checks that the diff of two trees, applied to a copy of the first, gives the second. */
static void check_round_trip(const char *from_text, const char *to_text)
{
    json_object *from = parse(from_text);
    json_object *to = parse(to_text);
    json_object *copy = NULL;
    json_object *patch = rdx_json_diff(from, to);
    char *from_after;

    CHECK(patch != NULL);
    CHECK(json_object_is_type(patch, json_type_array));
    CHECK(json_object_deep_copy(from, &copy, NULL) == 0);
    CHECK_STATUS(rdx_json_patch(copy, patch), RDX_OK);
    if (!check_record(json_object_equal(copy, to), __FILE__, __LINE__, "patched copy equals to")) {
        char *patch_text = text_of(patch);
        char *copy_text = text_of(copy);
        fprintf(stderr, "    %s -> %s by %s gave %s\n", from_text, to_text, patch_text, copy_text);
        free(patch_text);
        free(copy_text);
    }
    /* The diff changed neither tree. */
    from_after = text_of(from);
    {
        json_object *again = parse(from_text);
        char *original = text_of(again);
        CHECK_STR(from_after, original);
        free(original);
        json_object_put(again);
    }
    free(from_after);
    json_object_put(patch);
    json_object_put(copy);
    json_object_put(from);
    json_object_put(to);
}

/* Diff then patch gives the target, for objects, arrays, escapes, nulls and kind changes. */
static void test_round_trip(void)
{
    TEST("round_trip");
    check_round_trip("{\"a\":1,\"b\":[1,2,3],\"c\":{\"d\":\"x\"}}",
                     "{\"a\":2,\"b\":[1,3],\"c\":{\"d\":\"x\",\"e\":null},\"f\":[true]}");
    check_round_trip("[1,2,3]", "[1,2,3,4,5]");
    check_round_trip("[1,2,3,4,5]", "[1]");
    check_round_trip("[{\"id\":1,\"done\":false},{\"id\":2,\"done\":false}]",
                     "[{\"id\":1,\"done\":true}]");
    check_round_trip("{\"a/b\":1,\"m~n\":2,\"~1\":3}", "{\"a/b\":3,\"m~n\":{\"x\":[]},\"~1\":4}");
    check_round_trip("{}", "{\"x\":null}");
    check_round_trip("{\"x\":null}", "{}");
    check_round_trip("{\"x\":null,\"y\":[null,1]}", "{\"x\":1,\"y\":[1,null]}");
    check_round_trip("{\"deep\":{\"er\":{\"est\":[[1],[2,{\"k\":\"v\"}]]}}}",
                     "{\"deep\":{\"er\":{\"est\":[[1],[2,{\"k\":\"w\",\"l\":[]}]]}}}");
    check_round_trip("{\"kind\":[1,2]}", "{\"kind\":{\"1\":2}}");
    /* Numbers keep their json-c kind through the patch: an int and a double differ. */
    check_round_trip("{\"n\":1,\"m\":[2]}", "{\"n\":1.0,\"m\":[2.0]}");
    check_round_trip("{\"n\":1.0,\"m\":[-0.0]}", "{\"n\":1,\"m\":[0]}");
}

/* The printed patch is RFC 6902's shape; equal trees give an empty array; one toggled todo of
 * many is one operation. */
static void test_diff_shape(void)
{
    json_object *from = parse("{\"todos\":[{\"done\":false},{\"done\":false}],\"n\":null}");
    json_object *to = parse("{\"todos\":[{\"done\":false},{\"done\":true}]}");
    json_object *patch;
    char *text;
    json_object *big_from;
    json_object *big_to = NULL;
    json_object *todos;
    int count = util_small() ? 2000 : 100000;
    int i;

    TEST("diff_shape");
    patch = rdx_json_diff(from, to);
    text = text_of(patch);
    CHECK_STR(text, "[{\"op\":\"remove\",\"path\":\"/n\"},"
                    "{\"op\":\"replace\",\"path\":\"/todos/1/done\",\"value\":true}]");
    free(text);
    json_object_put(patch);

    patch = rdx_json_diff(from, from);
    CHECK(patch != NULL && json_object_is_type(patch, json_type_array));
    CHECK_EQ_INT(json_object_array_length(patch), 0);
    json_object_put(patch);

    /* A null value is written as "value": null. */
    patch = rdx_json_diff(to, from);
    text = text_of(patch);
    CHECK_STR(text, "[{\"op\":\"replace\",\"path\":\"/todos/1/done\",\"value\":false},"
                    "{\"op\":\"add\",\"path\":\"/n\",\"value\":null}]");
    free(text);
    json_object_put(patch);

    /* Numbers by kind and value: 1 and 1.0 differ; two doubles compare as doubles do, but
       0.0 and -0.0 differ. */
    {
        json_object *ints = parse("{\"a\":1,\"b\":[2],\"c\":0.0,\"d\":1.5}");
        json_object *doubles = parse("{\"a\":1.0,\"b\":[2.0],\"c\":-0.0,\"d\":1.5}");
        patch = rdx_json_diff(ints, doubles);
        text = text_of(patch);
        CHECK_STR(text, "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":1.0},"
                        "{\"op\":\"replace\",\"path\":\"/b/0\",\"value\":2.0},"
                        "{\"op\":\"replace\",\"path\":\"/c\",\"value\":-0.0}]");
        free(text);
        json_object_put(patch);
        json_object_put(ints);
        json_object_put(doubles);
    }

    /* The roots differ in kind: one replace of "". */
    json_object_put(to);
    to = parse("[1]");
    patch = rdx_json_diff(from, to);
    text = text_of(patch);
    CHECK_STR(text, "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]");
    free(text);
    json_object_put(patch);

    big_from = json_object_new_object();
    todos = json_object_new_array();
    for (i = 0; i < count; i++) {
        json_object *todo = json_object_new_object();
        json_object_object_add(todo, "id", json_object_new_int(i));
        json_object_object_add(todo, "done", json_object_new_boolean(0));
        json_object_array_add(todos, todo);
    }
    json_object_object_add(big_from, "todos", todos);
    CHECK(json_object_deep_copy(big_from, &big_to, NULL) == 0);
    json_object_object_add(
        json_object_array_get_idx(json_object_object_get(big_to, "todos"), 1234), "done",
        json_object_new_boolean(1));
    patch = rdx_json_diff(big_from, big_to);
    text = text_of(patch);
    CHECK_STR(text, "[{\"op\":\"replace\",\"path\":\"/todos/1234/done\",\"value\":true}]");
    CHECK_STATUS(rdx_json_patch(big_from, patch), RDX_OK);
    CHECK(json_object_equal(big_from, big_to));
    free(text);
    json_object_put(patch);
    json_object_put(big_from);
    json_object_put(big_to);
    json_object_put(from);
    json_object_put(to);
}

/* A patch changes the document in place and only where it differs: other nodes are the same
 * pointers and print as before. */
static void test_patch_in_place(void)
{
    json_object *document = parse("{\"keep\":{\"x\":[1,2]},\"price\":1.50,\"n\":1,\"list\":[1,2,3]}");
    json_object *keep = json_object_object_get(document, "keep");
    json_object *list = json_object_object_get(document, "list");
    json_object *first = json_object_array_get_idx(list, 0);
    json_object *patch = parse("[{\"op\":\"replace\",\"path\":\"/n\",\"value\":2},"
                               "{\"op\":\"add\",\"path\":\"/list/-\",\"value\":{\"t\":\"x\"}},"
                               "{\"op\":\"remove\",\"path\":\"/list/1\"},"
                               "{\"op\":\"add\",\"path\":\"/new\",\"value\":null}]");
    json_object *array = parse("[1,2,3]");
    json_object *array_patch = parse("[{\"op\":\"add\",\"path\":\"/0\",\"value\":0},"
                                     "{\"op\":\"remove\",\"path\":\"/3\"}]");
    char *text;

    TEST("patch_in_place");
    CHECK_STATUS(rdx_json_patch(document, patch), RDX_OK);
    text = text_of(document);
    CHECK_STR(text, "{\"keep\":{\"x\":[1,2]},\"price\":1.50,\"n\":2,\"list\":[1,3,{\"t\":\"x\"}],"
                    "\"new\":null}");
    free(text);
    CHECK(json_object_object_get(document, "keep") == keep);
    CHECK(json_object_object_get(document, "list") == list);
    CHECK(json_object_array_get_idx(list, 0) == first);

    CHECK_STATUS(rdx_json_patch(array, array_patch), RDX_OK);
    text = text_of(array);
    CHECK_STR(text, "[0,1,2]");
    free(text);

    json_object_put(patch);
    json_object_put(document);
    json_object_put(array_patch);
    json_object_put(array);
}

/* Checks that `patch_text` applied to `document` fails with `status`, `rdx_last_error()`
 * holding `words`, and leaves the document's printed text as it was. */
static void check_refused(json_object *document, const char *patch_text, rdx_status status,
                          const char *words)
{
    json_object *patch = parse(patch_text);
    char *before = text_of(document);
    char *after;
    CHECK_STATUS(rdx_json_patch(document, patch), status);
    if (!check_record(strstr(rdx_last_error(), words) != NULL, __FILE__, __LINE__,
                      "rdx_last_error() holds the words"))
        fprintf(stderr, "    \"%s\" does not hold \"%s\"\n", rdx_last_error(), words);
    after = text_of(document);
    CHECK_STR(after, before);
    free(before);
    free(after);
    json_object_put(patch);
}

/* Bad inputs: a status, words, and the document unchanged. */
static void test_bad_input(void)
{
    json_object *document = parse("{\"a\":0,\"todos\":[{\"done\":false},{\"done\":false}]}");
    json_object *number = json_object_new_int(3);
    json_object *empty = parse("[]");
    json_object *infinite = json_object_new_object();

    TEST("bad_input");
    CHECK(rdx_json_diff(NULL, document) == NULL);
    CHECK_STR(rdx_last_error(), "from is NULL");
    CHECK(rdx_json_diff(document, NULL) == NULL);
    CHECK_STR(rdx_last_error(), "to is NULL");
    CHECK_STATUS(rdx_json_patch(NULL, empty), RDX_EINVAL);
    CHECK_STR(rdx_last_error(), "document is NULL");
    CHECK_STATUS(rdx_json_patch(document, NULL), RDX_EINVAL);
    CHECK_STR(rdx_last_error(), "patch is NULL");

    check_refused(document, "{\"op\":\"remove\",\"path\":\"/a\"}", RDX_EDECODE, "patch");
    check_refused(document, "{\"op\":\"remove\",\"path\":\"/a\"}", RDX_EDECODE, "expected array");
    check_refused(document, "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/b\"}]", RDX_EDECODE,
                  "patch[0].op: \"move\" is not supported");
    check_refused(document, "[{\"op\":\"add\",\"path\":\"/b\"}]", RDX_EDECODE,
                  "patch[0].value: add needs a \"value\"");
    check_refused(document, "[1]", RDX_EDECODE, "patch[0]");
    /* The first operation would apply; the second does not: nothing is applied. */
    check_refused(document,
                  "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":1},"
                  "{\"op\":\"remove\",\"path\":\"/todos/7\"}]",
                  RDX_EDECODE,
                  "patch[1]: path \"/todos/7\": no such element: the array at \"/todos\" has 2 "
                  "elements");
    check_refused(document, "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":1}]", RDX_EDECODE,
                  "patch[0]: path \"/b\": no such member");
    check_refused(document, "[{\"op\":\"add\",\"path\":\"/todos/3\",\"value\":1}]", RDX_EDECODE,
                  "index 3 is past the end");
    check_refused(document, "[{\"op\":\"add\",\"path\":\"todos\",\"value\":1}]", RDX_EDECODE,
                  "not a JSON Pointer");
    check_refused(document, "[{\"op\":\"remove\",\"path\":\"\"}]", RDX_EDECODE,
                  "the whole document cannot be removed");
    /* A json_object cannot become another kind in place. */
    check_refused(document, "[{\"op\":\"replace\",\"path\":\"\",\"value\":[1]}]", RDX_EINVAL,
                  "the patch makes the document an array");
    check_refused(number, "[{\"op\":\"replace\",\"path\":\"\",\"value\":4}]", RDX_EINVAL,
                  "only an object or an array can be changed in place");
    CHECK_STATUS(rdx_json_patch(number, empty), RDX_OK);

    /* A non-finite number in either tree. */
    json_object_object_add(infinite, "x", json_object_new_double(HUGE_VAL));
    CHECK(rdx_json_diff(document, infinite) == NULL);
    CHECK(strstr(rdx_last_error(), "to.x: non-finite number") != NULL);
    check_refused(infinite, "[]", RDX_EDECODE, "document.x: non-finite number");

    json_object_put(infinite);
    json_object_put(empty);
    json_object_put(number);
    json_object_put(document);
}

/* Nesting: input past RDX_MAX_NESTING_DEPTH is refused, and so is a patch that would make the
 * document deeper than that (the document unchanged); a diff whose patch would be too deep too. */
static void test_nesting_limit(void)
{
    json_object *document = json_object_new_object();
    json_object *inner = json_object_new_array();
    json_object *deeper = json_object_new_array();
    json_object *one = json_object_new_int(1);
    json_object *empty = parse("[]");
    json_object *patch;
    char *path = malloc(2 + 2 * (RDX_MAX_NESTING_DEPTH - 2) + 3);
    char text[1200];
    int level;

    TEST("nesting_limit");
    /* The document is level 1, "a" level 2, ..., the innermost array level 256. */
    for (level = 3; level <= RDX_MAX_NESTING_DEPTH; level++) {
        json_object *outer = json_object_new_array();
        json_object_array_add(outer, inner);
        inner = outer;
    }
    json_object_object_add(document, "a", inner);
    strcpy(path, "/a");
    for (level = 3; level <= RDX_MAX_NESTING_DEPTH; level++) strcat(path, "/0");
    strcat(path, "/-");

    snprintf(text, sizeof text, "[{\"op\":\"add\",\"path\":\"%s\",\"value\":[]}]", path);
    check_refused(document, text, RDX_ELIMIT, "nested deeper than 256 levels");
    snprintf(text, sizeof text, "[{\"op\":\"add\",\"path\":\"%s\",\"value\":7}]", path);
    patch = parse(text);
    CHECK_STATUS(rdx_json_patch(document, patch), RDX_OK);
    json_object_put(patch);

    /* One level more than the limit, as input. */
    json_object_array_add(deeper, json_object_get(document));
    CHECK_STATUS(rdx_json_patch(deeper, empty), RDX_ELIMIT);
    CHECK(strstr(rdx_last_error(), "document is nested deeper") != NULL);
    CHECK(rdx_json_diff(deeper, document) == NULL);
    CHECK(strstr(rdx_last_error(), "from is nested deeper") != NULL);
    CHECK_STATUS(rdx_json_patch(document, deeper), RDX_ELIMIT);
    CHECK(strstr(rdx_last_error(), "patch is nested deeper") != NULL);

    /* The whole document as the value of a root replace: two levels deeper in the patch. */
    CHECK(rdx_json_diff(one, document) == NULL);
    CHECK(strstr(rdx_last_error(), "deeper") != NULL);

    /* So is a member or an element 255 deep that the patch adds (the array and the operation
     * object count as two levels); one level less makes a patch that applies. */
    {
        json_object *none = json_object_new_object();
        json_object *no_elements = json_object_new_array();
        json_object *elements = json_object_new_array();
        json_object *shallower = json_object_new_object();
        json_object *made;

        json_object_array_add(elements, json_object_get(inner));
        CHECK(rdx_json_diff(none, document) == NULL);
        CHECK(strstr(rdx_last_error(), "nested deeper than 256 levels") != NULL);
        CHECK(rdx_json_diff(no_elements, elements) == NULL);
        CHECK(strstr(rdx_last_error(), "nested deeper than 256 levels") != NULL);

        json_object_object_add(shallower, "a", json_object_get(json_object_array_get_idx(inner, 0)));
        made = rdx_json_diff(none, shallower);
        CHECK(made != NULL);
        if (made != NULL) {
            CHECK_STATUS(rdx_json_patch(none, made), RDX_OK);
            CHECK(json_object_equal(none, shallower));
            json_object_put(made);
        }
        json_object_put(shallower);
        json_object_put(elements);
        json_object_put(no_elements);
        json_object_put(none);
    }

    free(path);
    json_object_put(empty);
    json_object_put(one);
    json_object_put(deeper);
    json_object_put(document);
}

int main(void)
{
    check_watchdog(CHECK_TEST_SECONDS);
    test_round_trip();
    test_diff_shape();
    test_patch_in_place();
    test_bad_input();
    test_nesting_limit();
    return check_report();
}
