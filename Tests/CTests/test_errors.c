/*
 * test_errors.c — every bad input gets a status and words, and changes nothing.
 *
 * Every function with every NULL argument; action JSON that does not parse (RDX_EPARSE), of the
 * wrong shape (RDX_EDECODE), past a limit (RDX_ELIMIT); identifiers too long or not UTF-8. After
 * each failure: rdx_last_error() is non-empty and names the problem, and the store's version and
 * state are what they were. rdx_last_error() is "" (not NULL) in a thread before any failure, and
 * one thread's failures do not show in another's.
 */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
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

/* The store every failure is tried on, and its state and version before the failures. */
static rdx_store *store;
static char *state_before;
static uint64_t version_before;

/* Remembers the store's state and version as the ones every failure must leave alone. */
static void remember_store(void)
{
    free(state_before);
    state_before = util_state_text(store);
    version_before = rdx_store_version(store);
}

/* Whether `text` contains `word`, ignoring case. */
static int mentions(const char *text, const char *word)
{
    size_t length = strlen(word);
    for (; *text != '\0'; text++) {
        size_t i = 0;
        while (i < length && text[i] != '\0' &&
               tolower((unsigned char)text[i]) == tolower((unsigned char)word[i]))
            i++;
        if (i == length) return 1;
    }
    return 0;
}

/* This thread's last error, copied at once (it is valid only until the next rdx_ call). */
static char last_error[4096];
static void copy_last_error(void)
{
    const char *error = rdx_last_error();
    snprintf(last_error, sizeof last_error, "%s", error == NULL ? "(NULL)" : error);
}

/* Checks the last error is non-empty and, when `word` is not NULL, mentions it. */
#define CHECK_ERROR_NAMES(word)                                                                \
    do {                                                                                       \
        const char *check_word_ = (word);                                                      \
        CHECK(last_error[0] != '\0' && strcmp(last_error, "(NULL)") != 0);                    \
        if (check_word_ != NULL && !CHECK(mentions(last_error, check_word_)))                  \
            fprintf(stderr, "    rdx_last_error() is \"%s\", expected it to name \"%s\"\n",    \
                    last_error, check_word_);                                                  \
    } while (0)

/* Checks the store's version and state are still those remember_store() saw. */
#define CHECK_UNCHANGED()                                                                      \
    do {                                                                                       \
        char *check_now_ = util_state_text(store);                                             \
        CHECK_EQ_INT(rdx_store_version(store), version_before);                                \
        CHECK_STR(check_now_, state_before);                                                   \
        free(check_now_);                                                                      \
    } while (0)

/*
 * A call returning a status fails with `expected`, names `word`, and changes nothing. When it
 * changed the store after all, that is reported once and the new state becomes the baseline, so
 * one wrong acceptance does not fail every later check.
 */
#define EXPECT_FAILURE(call, expected, word)                                                   \
    do {                                                                                       \
        rdx_status expect_status_ = (call);                                                    \
        copy_last_error();                                                                     \
        if (!check_record(expect_status_ == (expected), __FILE__, __LINE__,                    \
                          #call " == " #expected))                                             \
            fprintf(stderr, "    gave %d (%s); rdx_last_error: \"%s\"\n", (int)expect_status_, \
                    rdx_status_string(expect_status_), last_error);                            \
        if (expect_status_ != RDX_OK) CHECK_ERROR_NAMES(word);                                 \
        CHECK_UNCHANGED();                                                                     \
        if (rdx_store_version(store) != version_before) remember_store();                      \
    } while (0)

/* A reducer that counts how often it ran: failures must never reach reducers. */
static int reducer_calls;
static void counting_reduce(json_object *state, const char *identifier, json_object *payload,
                            void *context)
{
    reducer_calls++;
    util_counter_reduce(state, identifier, payload, context);
}

/*
 * A json-c tree of `depth` arrays inside each other: around the number 1 ([[[1]]] is depth 3),
 * or, when `empty` is set, with an empty innermost array ([[[]]] is depth 3).
 */
static json_object *nested_arrays(int depth, int empty)
{
    json_object *inner = empty ? json_object_new_array() : json_object_new_int(1);
    int i;
    for (i = empty ? 1 : 0; i < depth; i++) {
        json_object *array = json_object_new_array();
        json_object_array_add(array, inner);
        inner = array;
    }
    return inner;
}

/* A json-c tree of `depth` objects inside each other ({"a":{"a":1}} is depth 2). */
static json_object *nested_objects(int depth)
{
    json_object *inner = json_object_new_int(1);
    int i;
    for (i = 0; i < depth; i++) {
        json_object *object = json_object_new_object();
        json_object_object_add(object, "a", inner);
        inner = object;
    }
    return inner;
}

/*
 * Action JSON whose payload is `depth` arrays inside each other, the innermost holding `inner`
 * ("" for an empty innermost array). A NEW malloc'ed string.
 */
static char *deep_action_json(int depth, const char *inner)
{
    static const char head[] = "{\"identifier\": \"inc\", \"payload\": ";
    size_t size = sizeof head + 2 * (size_t)depth + strlen(inner) + 2;
    char *text = (char *)malloc(size);
    char *cursor = text;
    int i;
    memcpy(cursor, head, sizeof head - 1);
    cursor += sizeof head - 1;
    for (i = 0; i < depth; i++) *cursor++ = '[';
    memcpy(cursor, inner, strlen(inner));
    cursor += strlen(inner);
    for (i = 0; i < depth; i++) *cursor++ = ']';
    *cursor++ = '}';
    *cursor = '\0';
    return text;
}

/* An identifier of `length` bytes ('a' repeated). A NEW malloc'ed string. */
static char *long_identifier(size_t length)
{
    char *identifier = (char *)malloc(length + 1);
    memset(identifier, 'a', length);
    identifier[length] = '\0';
    return identifier;
}

/* Every NULL argument of every function: RDX_EINVAL (or NULL / 0), naming the argument. */
static void test_null_arguments(void)
{
    rdx_reducer reducer = {counting_reduce, NULL, NULL};
    rdx_reducer null_reducers[2] = {{0}};
    rdx_status status;
    rdx_store *made;
    json_object *state;
    char path[] = "/tmp/reduxstore-ctest-errors-XXXXXX";
    int fd;

    TEST("null_arguments");
    null_reducers[0] = reducer;
    null_reducers[1].reduce = NULL;
    null_reducers[1].context = NULL;

    /* rdx_store_create: NULL reducers with a count, a reducer whose function is NULL. */
    status = RDX_OK;
    made = rdx_store_create(NULL, NULL, 1, &status);
    copy_last_error();
    CHECK(made == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK_ERROR_NAMES("reducers");
    status = RDX_OK;
    made = rdx_store_create(NULL, null_reducers, 2, &status);
    copy_last_error();
    CHECK(made == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK_ERROR_NAMES("reduce");
    /* A NULL status pointer is allowed: the failure is still a NULL store and words. */
    made = rdx_store_create(NULL, NULL, 3, NULL);
    copy_last_error();
    CHECK(made == NULL);
    CHECK_ERROR_NAMES("reducers");

    /* Functions taking a store. */
    EXPECT_FAILURE(rdx_store_dispatch_action(NULL, "inc", NULL), RDX_EINVAL, "store");
    EXPECT_FAILURE(rdx_store_dispatch_action(store, NULL, NULL), RDX_EINVAL, "identifier");
    EXPECT_FAILURE(rdx_store_dispatch_json(NULL, "{\"identifier\": \"inc\"}"), RDX_EINVAL, "store");
    EXPECT_FAILURE(rdx_store_dispatch_json(store, NULL), RDX_EINVAL, "action_json");
    EXPECT_FAILURE(rdx_store_enqueue_action(NULL, "inc", NULL), RDX_EINVAL, "store");
    EXPECT_FAILURE(rdx_store_enqueue_action(store, NULL, NULL), RDX_EINVAL, "identifier");
    EXPECT_FAILURE(rdx_store_flush(NULL), RDX_EINVAL, "store");
    EXPECT_FAILURE(rdx_store_remove_observer(NULL, 1), RDX_EINVAL, "store");
    EXPECT_FAILURE(rdx_store_save(NULL, "/tmp/reduxstore-ctest-never-written.json"), RDX_EINVAL,
                   "store");
    CHECK(access("/tmp/reduxstore-ctest-never-written.json", F_OK) != 0);
    EXPECT_FAILURE(rdx_store_save(store, NULL), RDX_EINVAL, "path");

    state = rdx_store_current_state(NULL);
    copy_last_error();
    CHECK(state == NULL);
    CHECK_ERROR_NAMES("store");
    json_object_put(state);

    CHECK_EQ_INT(rdx_store_version(NULL), 0);

    CHECK_EQ_INT(rdx_store_add_observer(NULL, NULL, NULL, NULL), 0);
    copy_last_error();
    CHECK_ERROR_NAMES("store");
    CHECK_EQ_INT(rdx_store_add_observer(store, NULL, NULL, NULL), 0);
    copy_last_error();
    CHECK_ERROR_NAMES("observer");
    CHECK_EQ_INT(rdx_store_add_observer(store, RDX_STATE_DID_CHANGE_NOTIFICATION, NULL, NULL), 0);
    copy_last_error();
    CHECK_ERROR_NAMES("observer");

    CHECK(rdx_store_retain(NULL) == NULL);
    rdx_store_release(NULL);

    /* rdx_store_open: a NULL path; a good file with NULL reducers or a NULL reducer function. */
    status = RDX_OK;
    made = rdx_store_open(NULL, &reducer, 1, &status);
    copy_last_error();
    CHECK(made == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK_ERROR_NAMES("path");
    CHECK(rdx_store_open(NULL, &reducer, 1, NULL) == NULL);

    fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) {
        close(fd);
        CHECK_STATUS(rdx_store_save(store, path), RDX_OK);
        status = RDX_OK;
        made = rdx_store_open(path, NULL, 1, &status);
        copy_last_error();
        CHECK(made == NULL);
        CHECK_STATUS(status, RDX_EINVAL);
        CHECK_ERROR_NAMES("reducers");
        status = RDX_OK;
        made = rdx_store_open(path, null_reducers, 2, &status);
        copy_last_error();
        CHECK(made == NULL);
        CHECK_STATUS(status, RDX_EINVAL);
        CHECK_ERROR_NAMES("reduce");
        rdx_store_release(made);
        unlink(path);
    }
    CHECK_UNCHANGED();
}

/* Replaces control characters in a test name, so that failure lines stay one line each. */
static void printable(char *text)
{
    for (; *text != '\0'; text++)
        if ((unsigned char)*text < 0x20) *text = '?';
}

/* Action JSON text that is not JSON: RDX_EPARSE. */
static void test_dispatch_json_parse_errors(void)
{
    static const char *const texts[] = {
        "",
        "   ",
        "{",
        "not json",
        "{\"identifier\": }",
        "{\"identifier\": \"inc\"",
        "{\"identifier\": \"inc\",}",           /* trailing comma */
        "{'identifier': 'inc'}",                /* single quotes */
        "{identifier: \"inc\"}",                /* bare key */
        "{\"identifier\": \"inc\"} trailing",   /* text after the value */
        "{\"identifier\": \"inc\"}{}",          /* two values */
        "{\"identifier\": \"inc\", \"payload\": NaN}",
        "{\"identifier\": \"inc\", \"payload\": [1, 2,]}",
        "{\"identifier\": \"in\nc\"}",          /* raw control character in a string */
        "{\"identifier\": \"inc\", \"payload\": 01}",
        "{\"identifier\": \"\\x41\"}",          /* not a JSON escape */
    };
    char name[160];
    size_t i;

    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        snprintf(name, sizeof name, "dispatch_json_parse_errors: %s", texts[i]);
        printable(name);
        TEST(name);
        EXPECT_FAILURE(rdx_store_dispatch_json(store, texts[i]), RDX_EPARSE, NULL);
    }
}

/* JSON that parses but is not {"identifier": "...", "payload": ...}: RDX_EDECODE. */
static void test_dispatch_json_wrong_shapes(void)
{
    static const struct {
        const char *text;
        const char *word; /* what the error must name, or NULL */
    } cases[] = {
        {"[1, 2]", NULL},
        {"[{\"identifier\": \"inc\"}]", NULL},
        {"42", NULL},
        {"\"inc\"", NULL},
        {"null", NULL},
        {"true", NULL},
        {"{}", "identifier"},
        {"{\"payload\": 1}", "identifier"},
        {"{\"identifier\": 1}", "identifier"},
        {"{\"identifier\": 1.5}", "identifier"},
        {"{\"identifier\": null}", "identifier"},
        {"{\"identifier\": true}", "identifier"},
        {"{\"identifier\": [\"inc\"]}", "identifier"},
        {"{\"identifier\": {\"name\": \"inc\"}}", "identifier"},
        {"{\"identifier\": \"inc\", \"extra\": 1}", "extra"},
        {"{\"extra\": 1, \"identifier\": \"inc\"}", "extra"},
        {"{\"identifier\": \"inc\", \"payload\": 1, \"Payload\": 2}", "Payload"},
        {"{\"identifier\": \"in\\u0000c\"}", "identifier"}, /* a NUL inside the identifier */
    };
    char name[160];
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(name, sizeof name, "dispatch_json_wrong_shapes: %s", cases[i].text);
        TEST(name);
        EXPECT_FAILURE(rdx_store_dispatch_json(store, cases[i].text), RDX_EDECODE, cases[i].word);
    }
}

/*
 * Nesting past RDX_MAX_NESTING_DEPTH (arrays and objects inside each other): RDX_ELIMIT, for
 * action JSON text (where the action object is one level), far too deep text (which must not
 * crash), a json-c payload (arrays or objects, innermost container empty or not), and an
 * enqueued payload. Depths at the limit are accepted, whether the innermost container is empty
 * or holds a value.
 */
/* Checks a call succeeds, counting it in ok_calls. */
#define EXPECT_OK(call)                                                                        \
    do {                                                                                       \
        rdx_status expect_ok_ = (call);                                                        \
        if (!check_record(expect_ok_ == RDX_OK, __FILE__, __LINE__, #call " == RDX_OK"))       \
            fprintf(stderr, "    gave %d (%s); rdx_last_error: \"%s\"\n", (int)expect_ok_,     \
                    rdx_status_string(expect_ok_), rdx_last_error());                          \
        if (expect_ok_ == RDX_OK) ok_calls++;                                                  \
    } while (0)

static void test_nesting_limit(void)
{
    char *text;
    json_object *payload;
    int limit = RDX_MAX_NESTING_DEPTH;
    int ok_calls = 0;

    /* Text: the action object plus `limit` arrays is limit + 1 levels. */
    TEST("nesting_limit: text, object + 256 arrays around 1");
    text = deep_action_json(limit, "1");
    EXPECT_FAILURE(rdx_store_dispatch_json(store, text), RDX_ELIMIT, "deep");
    free(text);
    TEST("nesting_limit: text, object + 256 arrays, innermost empty");
    text = deep_action_json(limit, "");
    EXPECT_FAILURE(rdx_store_dispatch_json(store, text), RDX_ELIMIT, "deep");
    free(text);
    TEST("nesting_limit: text, object + 257 arrays, innermost empty");
    text = deep_action_json(limit + 1, "");
    EXPECT_FAILURE(rdx_store_dispatch_json(store, text), RDX_ELIMIT, "deep");
    free(text);
    TEST("nesting_limit: text, object + 306 arrays");
    text = deep_action_json(limit + 50, "\"x\"");
    EXPECT_FAILURE(rdx_store_dispatch_json(store, text), RDX_ELIMIT, "deep");
    free(text);
    TEST("nesting_limit: text, object + 100000 arrays");
    text = deep_action_json(100000, "");
    EXPECT_FAILURE(rdx_store_dispatch_json(store, text), RDX_ELIMIT, NULL);
    free(text);

    /* json-c payloads of limit + 1 levels. */
    TEST("nesting_limit: json-c payload of 257 arrays around 1");
    payload = nested_arrays(limit + 1, 0);
    EXPECT_FAILURE(rdx_store_dispatch_action(store, "inc", payload), RDX_ELIMIT, "deep");
    EXPECT_FAILURE(rdx_store_enqueue_action(store, "inc", payload), RDX_ELIMIT, "deep");
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_UNCHANGED();
    json_object_put(payload);
    TEST("nesting_limit: json-c payload of 257 arrays, innermost empty");
    payload = nested_arrays(limit + 1, 1);
    EXPECT_FAILURE(rdx_store_dispatch_action(store, "inc", payload), RDX_ELIMIT, "deep");
    json_object_put(payload);
    TEST("nesting_limit: json-c payload of 257 objects");
    payload = nested_objects(limit + 1);
    EXPECT_FAILURE(rdx_store_dispatch_action(store, "inc", payload), RDX_ELIMIT, "deep");
    json_object_put(payload);

    /* At the limit: accepted. */
    TEST("nesting_limit: text, object + 255 arrays (at the limit)");
    text = deep_action_json(limit - 1, "1");
    EXPECT_OK(rdx_store_dispatch_json(store, text));
    free(text);
    text = deep_action_json(limit - 1, "");
    EXPECT_OK(rdx_store_dispatch_json(store, text));
    free(text);
    TEST("nesting_limit: json-c payload of 256 arrays, innermost empty (at the limit)");
    payload = nested_arrays(limit, 1);
    EXPECT_OK(rdx_store_dispatch_action(store, "deep-ok", payload));
    json_object_put(payload);
    TEST("nesting_limit: json-c payload of 256 arrays around 1 (at the limit)");
    payload = nested_arrays(limit, 0);
    EXPECT_OK(rdx_store_dispatch_action(store, "deep-ok", payload));
    EXPECT_OK(rdx_store_enqueue_action(store, "deep-ok", payload));
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    json_object_put(payload);
    TEST("nesting_limit: json-c payload of 256 objects around 1 (at the limit)");
    payload = nested_objects(limit);
    EXPECT_OK(rdx_store_dispatch_action(store, "deep-ok", payload));
    json_object_put(payload);
    /* Each accepted action was applied once. */
    TEST("nesting_limit");
    CHECK_EQ_INT(rdx_store_version(store), version_before + (uint64_t)ok_calls);
    remember_store();
}

/* Identifiers longer than RDX_MAX_IDENTIFIER_LENGTH bytes: RDX_ELIMIT; exactly that long: fine. */
static void test_identifier_limit(void)
{
    char *too_long = long_identifier(RDX_MAX_IDENTIFIER_LENGTH + 1);
    char *far_too_long = long_identifier(100000);
    char *at_limit = long_identifier(RDX_MAX_IDENTIFIER_LENGTH);
    char *text;
    size_t size;
    int calls_at_start = reducer_calls;

    TEST("identifier_limit");
    EXPECT_FAILURE(rdx_store_dispatch_action(store, too_long, NULL), RDX_ELIMIT, "identifier");
    EXPECT_FAILURE(rdx_store_dispatch_action(store, far_too_long, NULL), RDX_ELIMIT, "identifier");
    EXPECT_FAILURE(rdx_store_enqueue_action(store, too_long, NULL), RDX_ELIMIT, "identifier");
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_UNCHANGED();
    size = strlen(too_long) + 64;
    text = (char *)malloc(size);
    snprintf(text, size, "{\"identifier\": \"%s\"}", too_long);
    EXPECT_FAILURE(rdx_store_dispatch_json(store, text), RDX_ELIMIT, "identifier");
    free(text);
    CHECK_EQ_INT(reducer_calls, calls_at_start);

    CHECK_STATUS(rdx_store_dispatch_action(store, at_limit, NULL), RDX_OK);
    size = strlen(at_limit) + 64;
    text = (char *)malloc(size);
    snprintf(text, size, "{\"identifier\": \"%s\"}", at_limit);
    CHECK_STATUS(rdx_store_dispatch_json(store, text), RDX_OK);
    free(text);
    CHECK_EQ_INT(rdx_store_version(store), version_before + 2);
    remember_store();
    free(too_long);
    free(far_too_long);
    free(at_limit);
}

/* Action JSON text longer than RDX_MAX_JSON_TEXT_SIZE bytes: RDX_ELIMIT, before parsing. */
static void test_text_size_limit(void)
{
    static const char action[] = "{\"identifier\": \"inc\"}";
    size_t size = (size_t)RDX_MAX_JSON_TEXT_SIZE + 16;
    char *text = (char *)malloc(size + 1);

    TEST("text_size_limit");
    CHECK(text != NULL);
    if (text == NULL) return;
    /* White space then a valid action: it would parse, were it not too long. */
    memset(text, ' ', size - (sizeof action - 1));
    memcpy(text + size - (sizeof action - 1), action, sizeof action);
    EXPECT_FAILURE(rdx_store_dispatch_json(store, text), RDX_ELIMIT, NULL);
    free(text);
}

/* Identifiers that are not UTF-8 are refused (RDX_EINVAL or RDX_EDECODE) and change nothing. */
#define CHECK_REFUSED_UTF8(call)                                                               \
    do {                                                                                       \
        rdx_status refused_ = (call);                                                          \
        copy_last_error();                                                                     \
        if (!check_record(refused_ == RDX_EDECODE || refused_ == RDX_EINVAL ||                 \
                              refused_ == RDX_EPARSE,                                          \
                          __FILE__, __LINE__, #call " is refused"))                            \
            fprintf(stderr, "    %s gave %d (%s)\n", #call, (int)refused_,                     \
                    rdx_status_string(refused_));                                              \
        CHECK_ERROR_NAMES(NULL);                                                               \
        CHECK_UNCHANGED();                                                                     \
    } while (0)

static void test_invalid_utf8_identifier(void)
{
    static const char *const identifiers[] = {
        "\xff",
        "inc\xfe",
        "caf\xc3",          /* truncated two-byte sequence */
        "\xc0\x80",         /* overlong NUL */
        "\xc1\xbf",         /* overlong */
        "\xed\xa0\x80",     /* UTF-16 surrogate */
        "\xf4\x90\x80\x80", /* past U+10FFFF */
        "\x80",             /* lone continuation byte */
    };
    char text[128];
    char name[160];
    size_t i;
    int calls_at_start = reducer_calls;

    for (i = 0; i < sizeof identifiers / sizeof identifiers[0]; i++) {
        snprintf(name, sizeof name, "invalid_utf8_identifier #%u", (unsigned)i);
        TEST(name);
        CHECK_REFUSED_UTF8(rdx_store_dispatch_action(store, identifiers[i], NULL));
        CHECK_REFUSED_UTF8(rdx_store_enqueue_action(store, identifiers[i], NULL));
        snprintf(text, sizeof text, "{\"identifier\": \"%s\"}", identifiers[i]);
        CHECK_REFUSED_UTF8(rdx_store_dispatch_json(store, text));
    }
    TEST("invalid_utf8_identifier");
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_UNCHANGED();
    CHECK_EQ_INT(reducer_calls, calls_at_start); /* nothing reached the reducers */
}

/* rdx_last_error() is per thread: "" (not NULL) before a thread's first failure. */
struct thread_errors {
    int was_null;
    char before[256];
    char after[256];
};

static void *fresh_thread(void *argument)
{
    struct thread_errors *errors = (struct thread_errors *)argument;
    const char *error = rdx_last_error();
    errors->was_null = error == NULL;
    snprintf(errors->before, sizeof errors->before, "%s", error == NULL ? "(NULL)" : error);
    /* A failure here... */
    rdx_store_flush(NULL);
    error = rdx_last_error();
    snprintf(errors->after, sizeof errors->after, "%s", error == NULL ? "(NULL)" : error);
    return NULL;
}

static void test_last_error_per_thread(void)
{
    struct thread_errors errors;
    char main_error[256];
    pthread_t thread;

    TEST("last_error_per_thread");
    /* The main thread failed already: its own error names an identifier problem. */
    CHECK_STATUS(rdx_store_dispatch_action(store, NULL, NULL), RDX_EINVAL);
    snprintf(main_error, sizeof main_error, "%s", rdx_last_error());

    memset(&errors, 0, sizeof errors);
    CHECK(pthread_create(&thread, NULL, fresh_thread, &errors) == 0);
    pthread_join(thread, NULL);
    CHECK(!errors.was_null);
    CHECK_STR(errors.before, "");
    CHECK(errors.after[0] != '\0');
    CHECK(mentions(errors.after, "store"));
    /* ...does not change the main thread's. */
    CHECK_STR(rdx_last_error(), main_error);

    /* A second fresh thread starts clean again. */
    memset(&errors, 0, sizeof errors);
    CHECK(pthread_create(&thread, NULL, fresh_thread, &errors) == 0);
    pthread_join(thread, NULL);
    CHECK_STR(errors.before, "");
}

/* The words of a failure are this failure's, not a stale earlier one. */
static void test_last_error_is_current(void)
{
    TEST("last_error_is_current");
    EXPECT_FAILURE(rdx_store_dispatch_json(store, "{\"identifier\": \"inc\", \"surprise\": 1}"),
                   RDX_EDECODE, "surprise");
    EXPECT_FAILURE(rdx_store_save(store, NULL), RDX_EINVAL, "path");
    CHECK(!mentions(last_error, "surprise"));
    EXPECT_FAILURE(rdx_store_dispatch_json(store, "{\"identifier\": \"inc\", \"another\": 1}"),
                   RDX_EDECODE, "another");
    CHECK(!mentions(last_error, "path"));
}

/* A text that stops inside a surrogate pair's second escape fails, and leaves nothing behind
   for the next text the thread parses: its \u escapes read as written. */
static void record_identifier(json_object *state, const char *identifier, json_object *payload, void *context)
{
    (void)state;
    (void)payload;
    snprintf(context, 32, "%s", identifier);
}

static void test_failed_parse_leaves_nothing(void)
{
    char seen[32] = "";
    rdx_reducer reducer = {record_identifier, seen, NULL};
    json_object *initial = json_object_new_object();
    rdx_store *other = rdx_store_create(initial, &reducer, 1, NULL);
    TEST("failed_parse_leaves_nothing");
    json_object_put(initial);
    CHECK(other != NULL);
    if (other == NULL) return;
    CHECK_STATUS(rdx_store_dispatch_json(other, "{\"identifier\":\"a\\ud83d\\u"), RDX_EPARSE);
    CHECK_STATUS(rdx_store_dispatch_json(other, "{\"identifier\":\"b\\ud83d\\ud8"), RDX_EPARSE);
    CHECK_STATUS(rdx_store_dispatch_json(other, "{\"identifier\":\"x\\u0041\"}"), RDX_OK);
    CHECK_STR(seen, "xA");
    CHECK_STATUS(rdx_store_dispatch_batch_json(other, "[{\"identifier\":\"c\\ud83d\\u"), RDX_EPARSE);
    CHECK_STATUS(rdx_store_dispatch_batch_json(other, "[{\"identifier\":\"y\\u0042\"}]"), RDX_OK);
    CHECK_STR(seen, "yB");
    CHECK_EQ_INT(rdx_store_version(other), 2);
    rdx_store_release(other);
}

int main(void)
{
    rdx_reducer reducer = {counting_reduce, NULL, NULL};
    json_object *initial =
        json_tokener_parse("{\"count\": 7, \"items\": [{\"title\": \"milk\", \"done\": false}]}");

    /* Before any failure, the main thread's last error is "" too. */
    TEST("last_error_before_any_failure");
    CHECK(rdx_last_error() != NULL);
    CHECK_STR(rdx_last_error(), "");

    store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    CHECK(store != NULL);
    if (store == NULL) return check_report();
    remember_store();

    test_last_error_per_thread();
    test_null_arguments();
    test_dispatch_json_parse_errors();
    test_dispatch_json_wrong_shapes();
    test_nesting_limit();
    test_identifier_limit();
    test_text_size_limit();
    test_invalid_utf8_identifier();
    test_last_error_is_current();
    test_failed_parse_leaves_nothing();
    CHECK_EQ_INT(rdx_store_version(store), version_before);

    rdx_store_release(store);
    free(state_before);
    return check_report();
}
