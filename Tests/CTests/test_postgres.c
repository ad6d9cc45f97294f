/*
 * test_postgres.c — a C store replicated through a PostgreSQL stream (include/reduxstore_postgres.h,
 * libreduxstore-postgres.so), against the server REDUXSTORE_TEST_POSTGRES names (scripts/postgres
 * starts a throwaway one; without it the test fails, it never passes by skipping).
 *
 * C threads and a Swift process (reduxstore-replica-check, RDX_REPLICA_CHECK) write to one
 * stream at once with the same reducer; every replica ends with the same state, equal to the
 * Swift process's. Dispatches return once applied here; observers hear every version in order;
 * what would reorder the stream is refused; bad arguments and a missing server are clear errors
 * that never show the password.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "reduxstore_postgres.h"
#include "check.h"

/* The tally of Tests/ReplicaCheck/main.swift: count, total of "by", and an FNV-1a digest of the
 * tags in order (equal digests mean the same order). */
static void tally_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    json_object *value = NULL;
    const char *tag;
    uint64_t digest;
    (void)context;
    if (strcmp(identifier, "add") != 0 || payload == NULL) return;
    json_object_object_get_ex(state, "count", &value);
    json_object_set_int64(value, json_object_get_int64(value) + 1);
    json_object_object_get_ex(state, "total", &value);
    {
        json_object *by = NULL;
        json_object_object_get_ex(payload, "by", &by);
        json_object_set_int64(value, json_object_get_int64(value) + json_object_get_int64(by));
    }
    json_object_object_get_ex(state, "digest", &value);
    digest = json_object_get_uint64(value);
    {
        json_object *tag_node = NULL;
        json_object_object_get_ex(payload, "tag", &tag_node);
        tag = json_object_get_string(tag_node);
    }
    for (; tag != NULL && *tag != '\0'; tag++) digest = (digest ^ (unsigned char)*tag) * 1099511628211ULL;
    json_object_object_add(state, "digest", json_object_new_uint64(digest));
}

/* Keeps each payload's "n" as given: the state where a number rewritten on its way would show. */
static void keep_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    json_object *kept = NULL, *n = NULL, *copy = NULL;
    (void)context;
    if (strcmp(identifier, "keep") != 0 || payload == NULL) return;
    if (!json_object_object_get_ex(state, "kept", &kept) || !json_object_object_get_ex(payload, "n", &n)) return;
    if (json_object_deep_copy(n, &copy, NULL) == 0) json_object_array_add(kept, copy);
}

static json_object *zero_tally(void)
{
    json_object *state = json_object_new_object();
    json_object_object_add(state, "count", json_object_new_int64(0));
    json_object_object_add(state, "total", json_object_new_int64(0));
    json_object_object_add(state, "digest", json_object_new_uint64(14695981039346656037ULL));
    return state;
}

static const rdx_reducer reducers[] = {{tally_reduce, NULL, NULL}};
static const char *url;
static char stream[128];

/* ---- Observers: every version once, in order; a dispatch from one is refused. */

typedef struct heard {
    pthread_mutex_t lock;
    uint64_t last;
    long count;
    int out_of_order;
    rdx_status inside;
    int tried_inside;
} heard;

static void observe(rdx_store *store, const char *name, uint64_t version, void *context)
{
    heard *h = context;
    (void)name;
    pthread_mutex_lock(&h->lock);
    if (version != h->last + 1) h->out_of_order = 1;
    h->last = version;
    h->count++;
    if (!h->tried_inside) {
        h->tried_inside = 1;
        pthread_mutex_unlock(&h->lock);
        h->inside = rdx_store_dispatch_json(store, "{\"identifier\":\"add\",\"payload\":{\"by\":1,\"tag\":\"inside\"}}");
        return;
    }
    pthread_mutex_unlock(&h->lock);
}

/* An observer that asks for the lag: refused on the thread applying the stream, never a hang. */
typedef struct asked_lag {
    pthread_mutex_t lock;
    rdx_status status;
    int said_why;
} asked_lag;

static void ask_lag(rdx_store *store, const char *name, uint64_t version, void *context)
{
    asked_lag *asked = context;
    uint64_t versions = 0;
    rdx_status status = rdx_store_stream_lag(store, NULL, &versions);
    (void)name;
    (void)version;
    pthread_mutex_lock(&asked->lock);
    asked->status = status;
    asked->said_why = strstr(rdx_last_error(), "callbacks") != NULL;
    pthread_mutex_unlock(&asked->lock);
}

/* ---- Writers. */

typedef struct writer {
    rdx_store *store;
    int lane;
    int count;
    int by;
    int failures;
} writer;

static void *write_lane(void *argument)
{
    writer *w = argument;
    char action[160];
    int index;
    for (index = 0; index < w->count; index++) {
        uint64_t before = rdx_store_version(w->store);
        snprintf(action, sizeof action, "{\"identifier\":\"add\",\"payload\":{\"by\":%d,\"tag\":\"c%d-%d\"}}",
                 w->by, w->lane, index);
        if (rdx_store_dispatch_json(w->store, action) != RDX_OK) {
            fprintf(stderr, "lane %d: %s\n", w->lane, rdx_last_error());
            w->failures++;
        } else if (rdx_store_version(w->store) <= before) {
            w->failures++;   /* returned before its action was applied here */
        }
    }
    return NULL;
}

/* The state's three fields. */
typedef struct tally {
    int64_t count;
    int64_t total;
    uint64_t digest;
} tally;

static tally read_tally(json_object *state)
{
    tally t = {-1, -1, 0};
    json_object *value = NULL;
    if (state == NULL) return t;
    if (json_object_object_get_ex(state, "count", &value)) t.count = json_object_get_int64(value);
    if (json_object_object_get_ex(state, "total", &value)) t.total = json_object_get_int64(value);
    if (json_object_object_get_ex(state, "digest", &value)) t.digest = json_object_get_uint64(value);
    return t;
}

static tally store_tally(rdx_store *store)
{
    json_object *state = rdx_store_current_state(store);
    tally t = read_tally(state);
    json_object_put(state);
    return t;
}

/* Waits up to 30 s for `store` to reach `version`. */
static int wait_for(rdx_store *store, uint64_t version)
{
    int tries;
    for (tries = 0; tries < 3000; tries++) {
        if (rdx_store_version(store) >= version) return 1;
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    }
    return 0;
}

/* Starts `reduxstore-replica-check write URL STREAM swift COUNT 8 TOTAL`; its output goes to
 * `out`. Returns the child's pid, or -1. */
static pid_t start_swift_writer(const char *check, int count, int total, const char *out)
{
    char count_text[16], total_text[16];
    pid_t pid;
    snprintf(count_text, sizeof count_text, "%d", count);
    snprintf(total_text, sizeof total_text, "%d", total);
    pid = fork();
    if (pid == 0) {
        FILE *file = freopen(out, "w", stdout);
        if (file == NULL) _exit(126);
        execl(check, check, "write", url, stream, "swift", count_text, "8", total_text, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* The Swift process's last line, `state {...}`, as a tally. */
static tally swift_tally(const char *out)
{
    tally t = {-1, -1, 0};
    char line[4096];
    FILE *file = fopen(out, "r");
    if (file == NULL) return t;
    while (fgets(line, sizeof line, file) != NULL) {
        if (strncmp(line, "state ", 6) == 0) {
            json_object *state = json_tokener_parse(line + 6);
            t = read_tally(state);
            json_object_put(state);
        }
    }
    fclose(file);
    return t;
}

/* Whether `x` and `y` are numbers of one json-c kind and one value (a zero's sign included). */
static int same_number(json_object *x, json_object *y)
{
    if (json_object_get_type(x) != json_object_get_type(y)) return 0;
    if (json_object_is_type(x, json_type_double)) {
        double a = json_object_get_double(x), b = json_object_get_double(y);
        return a == b && signbit(a) == signbit(b);
    }
    return json_object_get_int64(x) == json_object_get_int64(y);
}

/* Dispatches {"n": text} for each text to a new stream. A follower that applied them holds the
 * same json-c kinds and texts as the writer. Then one more action, after which the writer stores a
 * snapshot and trims the actions before it: a process opened afterwards, which can only start
 * from the snapshot, holds the same kinds and values (the snapshot's text writes a double as a
 * double: 1.0 stays 1.0, -0.0 keeps its sign). */
static void check_numbers(void)
{
    static const rdx_reducer keepers[] = {{keep_reduce, NULL, NULL}};
    static const char *const numbers[] = {"1e16", "-0.0", "1E2", "1.5e300", "7", "0.1", "2.0", "-3.0e0",
                                          "18446744073709551615", "123456789012345678901234"};
    const size_t count = sizeof numbers / sizeof numbers[0];
    json_object *empty = json_tokener_parse("{\"kept\":[]}");
    json_object *followed = NULL;
    char name[160], action[128];
    rdx_stream_options options;
    rdx_status status = RDX_OK;
    rdx_store *writer_store, *follower, *reader;
    size_t i;
    int waited;
    snprintf(name, sizeof name, "%s-numbers", stream);
    rdx_stream_options_init(&options);
    options.snapshot_every = (int64_t)count + 1;
    options.snapshots_kept = 1;
    options.trims_actions = 1;
    writer_store = rdx_store_open_stream_with_options(url, name, empty, keepers, 1, &options, &status);
    CHECK_STATUS(status, RDX_OK);
    if (writer_store == NULL) {
        json_object_put(empty);
        return;
    }
    follower = rdx_store_follow_stream(url, name, empty, keepers, 1, NULL, &status);
    CHECK_STATUS(status, RDX_OK);
    for (i = 0; i < count; i++) {
        snprintf(action, sizeof action, "{\"identifier\":\"keep\",\"payload\":{\"n\":%s}}", numbers[i]);
        CHECK_STATUS(rdx_store_dispatch_json(writer_store, action), RDX_OK);
    }
    /* Nothing is trimmed yet: the follower reaches every version. */
    for (waited = 0; follower != NULL && rdx_store_version(follower) < count && waited < 3000; waited++) {
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    }
    if (follower != NULL) {
        CHECK_EQ_INT(rdx_store_version(follower), count);
        followed = rdx_store_current_state(follower);
        rdx_store_release(follower);
    }
    CHECK_STATUS(rdx_store_dispatch_json(writer_store, "{\"identifier\":\"keep\",\"payload\":{\"n\":0}}"), RDX_OK);
    reader = rdx_store_open_stream(url, name, empty, keepers, 1, &status);
    CHECK_STATUS(status, RDX_OK);
    if (reader != NULL && followed != NULL) {
        json_object *mine = rdx_store_current_state(writer_store), *theirs = rdx_store_current_state(reader);
        json_object *a = NULL, *b = NULL, *c = NULL;
        json_object_object_get_ex(mine, "kept", &a);
        json_object_object_get_ex(followed, "kept", &b);
        json_object_object_get_ex(theirs, "kept", &c);
        CHECK_EQ_INT(json_object_array_length(a), count + 1);
        CHECK_EQ_INT(json_object_array_length(b), count);
        CHECK_EQ_INT(json_object_array_length(c), count + 1);
        for (i = 0; i < count && i < json_object_array_length(a) && i < json_object_array_length(b)
                    && i < json_object_array_length(c); i++) {
            json_object *x = json_object_array_get_idx(a, i), *y = json_object_array_get_idx(b, i);
            json_object *z = json_object_array_get_idx(c, i);
            if (!CHECK(json_object_get_type(x) == json_object_get_type(y)) ||
                !CHECK(strcmp(json_object_to_json_string(x), json_object_to_json_string(y)) == 0)) {
                fprintf(stderr, "    %s: the writer holds %s, a follower %s\n", numbers[i],
                        json_object_to_json_string(x), json_object_to_json_string(y));
            }
            if (!CHECK(same_number(x, z))) {
                fprintf(stderr, "    %s: the writer holds %s, a process started from the snapshot %s\n", numbers[i],
                        json_object_to_json_string(x), json_object_to_json_string(z));
            }
        }
        /* A double stays a double, whole or not. */
        CHECK(json_object_get_type(json_object_array_get_idx(c, 0)) == json_type_double);
        CHECK(json_object_get_type(json_object_array_get_idx(c, 6)) == json_type_double);
        json_object_put(mine);
        json_object_put(theirs);
    }
    json_object_put(followed);
    if (reader != NULL) rdx_store_release(reader);
    rdx_store_release(writer_store);
    json_object_put(empty);
}

/* A batch whose third element PostgreSQL cannot store: the first two are committed, and the
 * failure's words say so before they say why the third was not. */
static void check_batch_failure(void)
{
    static const rdx_reducer keepers[] = {{keep_reduce, NULL, NULL}};
    static const char stored_two[] = "[2] (elements [0] to [1] were stored before it): ";
    json_object *empty = json_tokener_parse("{\"kept\":[]}");
    char name[160];
    rdx_status status = RDX_OK;
    rdx_store *store;
    snprintf(name, sizeof name, "%s-batch", stream);
    store = rdx_store_open_stream(url, name, empty, keepers, 1, &status);
    json_object_put(empty);
    if (!CHECK(store != NULL)) return;
    CHECK_STATUS(rdx_store_dispatch_batch_json(store,
        "[{\"identifier\":\"keep\",\"payload\":{\"n\":1}},{\"identifier\":\"keep\",\"payload\":{\"n\":2}},"
        "{\"identifier\":\"keep\",\"payload\":{\"n\":\"a\\u0000b\"}}]"), RDX_EINVAL);
    CHECK_EQ_INT(rdx_store_version(store), 2);
    if (!CHECK(strncmp(rdx_last_error(), stored_two, strlen(stored_two)) == 0)) {
        fprintf(stderr, "    %s\n", rdx_last_error());
    }
    CHECK(strstr(rdx_last_error(), "U+0000") != NULL);
    /* The first element refused: nothing of the batch is stored. */
    CHECK_STATUS(rdx_store_dispatch_batch_json(store,
        "[{\"identifier\":\"keep\",\"payload\":{\"n\":\"a\\u0000b\"}},{\"identifier\":\"keep\",\"payload\":{\"n\":3}}]"),
        RDX_EINVAL);
    CHECK_EQ_INT(rdx_store_version(store), 2);
    CHECK(strncmp(rdx_last_error(), "[0]: ", 5) == 0);
    CHECK(strstr(rdx_last_error(), "nothing was stored") != NULL);
    rdx_store_release(store);
}

/* The options: their defaults, and a value out of range refused by the C field's name. */
static void check_options(json_object *zero)
{
    rdx_stream_options options;
    rdx_status status = RDX_OK;
    rdx_stream_options_init(NULL);
    memset(&options, 0xff, sizeof options);
    rdx_stream_options_init(&options);
    CHECK(options.schema == NULL);
    CHECK_EQ_INT(options.snapshot_every, 1000);
    CHECK(options.snapshot_interval == 300.0);
    CHECK_EQ_INT(options.snapshots_kept, 3);
    CHECK_EQ_INT(options.trims_actions, 0);
    CHECK_EQ_INT(options.notifies, 1);
    CHECK(options.poll_interval == 0.1);
    CHECK_EQ_INT(options.maximum_batch, 1000);
    CHECK_EQ_INT(options.read_batch, 10000);
    CHECK(options.reconnect_timeout == 30.0);
    CHECK(options.standby == NULL);
    options.snapshots_kept = 0;
    CHECK(rdx_store_open_stream_with_options(url, stream, zero, reducers, 1, &options, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "snapshots_kept") != NULL);
    rdx_stream_options_init(&options);
    options.poll_interval = 0;
    CHECK(rdx_store_follow_stream(url, stream, zero, reducers, 1, &options, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "poll_interval") != NULL);
    rdx_stream_options_init(&options);
    options.maximum_batch = 10001;
    CHECK(rdx_store_open_stream_with_options(url, stream, zero, reducers, 1, &options, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "maximum_batch") != NULL);
    rdx_stream_options_init(&options);
    options.schema = "no such\xff";
    CHECK(rdx_store_open_stream_with_options(url, stream, zero, reducers, 1, &options, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    options.schema = "pg_mine";
    CHECK(rdx_store_open_stream_with_options(url, stream, zero, reducers, 1, &options, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "pg_") != NULL);
    /* A standby is for followers; one that does not parse is refused by its C name. */
    rdx_stream_options_init(&options);
    options.standby = url;
    CHECK(rdx_store_open_stream_with_options(url, stream, zero, reducers, 1, &options, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "options->standby is for followers") != NULL);
    options.standby = "host=127.0.0.1 port=seventy";
    CHECK(rdx_store_follow_stream(url, stream, zero, reducers, 1, &options, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "options->standby: connection string: the port") != NULL);
}

/* A follower on the hot standby REDUXSTORE_TEST_POSTGRES_STANDBY names (scripts/postgres
 * start-pair): applies what the writer `store` commits on the primary, in order, and says how far
 * the standby is behind. */
static void check_standby_follower(rdx_store *store, json_object *zero)
{
    const char *standby = getenv("REDUXSTORE_TEST_POSTGRES_STANDBY");
    rdx_stream_options options;
    rdx_status status = RDX_OK;
    rdx_store *follower = NULL, *primary_follower;
    uint64_t behind = 99, before;
    int i;
    if (!CHECK(standby != NULL && standby[0] != '\0')) {
        fprintf(stderr, "    REDUXSTORE_TEST_POSTGRES_STANDBY is not set: start a pair with scripts/postgres start-pair\n");
        return;
    }
    rdx_stream_options_init(&options);
    options.standby = standby;
    options.poll_interval = 0.05;
    /* The standby has the library's tables once it replayed the writer's opening (at once, but
     * a follower that comes first is told so). */
    for (i = 0; i < 100 && follower == NULL; i++) {
        struct timespec pause = {0, 100000000};
        follower = rdx_store_follow_stream(url, stream, zero, reducers, 1, &options, &status);
        if (follower == NULL) nanosleep(&pause, NULL);
    }
    CHECK_STATUS(status, RDX_OK);
    if (!CHECK(follower != NULL)) {
        fprintf(stderr, "    %s\n", rdx_last_error());
        return;
    }
    before = rdx_store_version(store);
    for (i = 0; i < 5; i++) {
        CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\":\"add\",\"payload\":{\"by\":3,\"tag\":\"to-standby\"}}"),
                     RDX_OK);
    }
    CHECK(wait_for(follower, before + 5));
    CHECK_EQ_INT(rdx_store_version(follower), before + 5);
    CHECK(store_tally(follower).digest == store_tally(store).digest);
    CHECK_STATUS(rdx_store_dispatch_json(follower, "{\"identifier\":\"add\",\"payload\":{\"by\":1,\"tag\":\"f\"}}"),
                 RDX_EINVAL);
    CHECK_STATUS(rdx_store_stream_standby_lag(follower, &behind), RDX_OK);
    CHECK_EQ_INT(behind, 0);
    CHECK_STATUS(rdx_store_stream_standby_lag(follower, NULL), RDX_OK);
    /* A replica that reads from the primary has no standby lag. */
    CHECK_STATUS(rdx_store_stream_standby_lag(store, &behind), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "does not read from a standby") != NULL);
    CHECK_STATUS(rdx_store_stream_standby_lag(NULL, &behind), RDX_EINVAL);
    rdx_stream_options_init(&options);
    primary_follower = rdx_store_follow_stream(url, stream, zero, reducers, 1, &options, &status);
    if (CHECK(primary_follower != NULL)) {
        CHECK_STATUS(rdx_store_stream_standby_lag(primary_follower, &behind), RDX_EINVAL);
        rdx_store_release(primary_follower);
    }
    rdx_store_release(follower);
}

/* A follower on `store`'s stream: applies every version the writer commits, in order; never
 * writes; says how far behind it is. */
static void check_follower(rdx_store *store, json_object *zero)
{
    rdx_stream_options options;
    rdx_status status = RDX_OK;
    rdx_store *follower, *plain;
    asked_lag asked;
    double seconds = -1;
    uint64_t versions = 99, before;
    int i;
    memset(&asked, 0, sizeof asked);
    pthread_mutex_init(&asked.lock, NULL);
    rdx_stream_options_init(&options);
    options.poll_interval = 0.05;
    follower = rdx_store_follow_stream(url, stream, zero, reducers, 1, &options, &status);
    CHECK_STATUS(status, RDX_OK);
    if (!CHECK(follower != NULL)) {
        fprintf(stderr, "    %s\n", rdx_last_error());
        return;
    }
    before = rdx_store_version(store);
    CHECK(wait_for(follower, before));
    CHECK(rdx_store_add_observer(follower, NULL, ask_lag, &asked) != 0);
    CHECK(store_tally(follower).digest == store_tally(store).digest);
    /* It never writes: every dispatch is refused, and nothing changes. */
    CHECK_STATUS(rdx_store_dispatch_json(follower, "{\"identifier\":\"add\",\"payload\":{\"by\":1,\"tag\":\"f\"}}"),
                 RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "read-only") != NULL);
    CHECK_STATUS(rdx_store_dispatch_action(follower, "add", NULL), RDX_EINVAL);
    CHECK_STATUS(rdx_store_enqueue_action(follower, "add", NULL), RDX_EINVAL);
    CHECK_EQ_INT(rdx_store_version(follower), before);
    CHECK_EQ_INT(rdx_store_version(store), before);
    /* What the writer commits reaches it. */
    for (i = 0; i < 5; i++) {
        CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\":\"add\",\"payload\":{\"by\":7,\"tag\":\"to-follower\"}}"),
                     RDX_OK);
    }
    CHECK(wait_for(follower, before + 5));
    CHECK_EQ_INT(rdx_store_version(follower), before + 5);
    pthread_mutex_lock(&asked.lock);
    CHECK_STATUS(asked.status, RDX_EINVAL);
    CHECK(asked.said_why);
    pthread_mutex_unlock(&asked.lock);
    CHECK(store_tally(follower).digest == store_tally(store).digest);
    /* Its lag: nothing behind once caught up; either pointer may be NULL. */
    CHECK_STATUS(rdx_store_stream_lag(follower, &seconds, &versions), RDX_OK);
    CHECK_EQ_INT(versions, 0);
    CHECK(seconds == 0.0);
    CHECK_STATUS(rdx_store_stream_lag(follower, NULL, NULL), RDX_OK);
    CHECK_STATUS(rdx_store_stream_lag(store, NULL, &versions), RDX_OK);
    /* A store that is not replicated has no lag. */
    CHECK_STATUS(rdx_store_stream_lag(NULL, &seconds, &versions), RDX_EINVAL);
    plain = rdx_store_create(zero, reducers, 1, &status);
    if (CHECK(plain != NULL)) {
        CHECK_STATUS(rdx_store_stream_lag(plain, &seconds, &versions), RDX_EINVAL);
        CHECK(strstr(rdx_last_error(), "not replicated") != NULL);
        rdx_store_release(plain);
    }
    rdx_store_release(follower);
    pthread_mutex_destroy(&asked.lock);
}

/* A follower further behind than the oldest kept snapshot, on a stream a writer trims: it stops
 * (RDX_ECORRUPT, "trimmed"), which its lag says, and keeps the state it had. */
static void check_trimmed_follower(json_object *zero)
{
    rdx_stream_options options;
    rdx_status status = RDX_OK;
    rdx_store *writer, *follower;
    char name[160];
    double seconds = -1;
    uint64_t versions = 0;
    int i, stopped = 0;
    snprintf(name, sizeof name, "%s-trim", stream);
    rdx_stream_options_init(&options);
    options.snapshot_every = 2;
    options.snapshots_kept = 1;
    options.trims_actions = 1;
    writer = rdx_store_open_stream_with_options(url, name, zero, reducers, 1, &options, &status);
    if (!CHECK(writer != NULL)) {
        fprintf(stderr, "    %s\n", rdx_last_error());
        return;
    }
    /* Woken by nothing but a poll every 3 s: it reads nothing while the writer commits six
     * actions, snapshots at 2, 4 and 6, and trims every action up to the one snapshot kept. */
    rdx_stream_options_init(&options);
    options.notifies = 0;
    options.poll_interval = 3;
    follower = rdx_store_follow_stream(url, name, zero, reducers, 1, &options, &status);
    CHECK_STATUS(status, RDX_OK);
    if (follower != NULL) {
        for (i = 0; i < 6; i++) {
            CHECK_STATUS(rdx_store_dispatch_json(writer, "{\"identifier\":\"add\",\"payload\":{\"by\":1,\"tag\":\"t\"}}"),
                         RDX_OK);
        }
        for (i = 0; i < 1000 && !stopped; i++) {
            struct timespec pause = {0, 10000000};
            stopped = rdx_store_stream_lag(follower, &seconds, &versions) != RDX_OK;
            if (!stopped) nanosleep(&pause, NULL);
        }
        CHECK(stopped);
        CHECK_STATUS(rdx_store_stream_lag(follower, &seconds, &versions), RDX_ECORRUPT);
        CHECK(strstr(rdx_last_error(), "trimmed") != NULL);
        /* Its state is the one it had (version 0, or 1 had its poll come between the first
         * commit and the trim of the second, under valgrind's pace); the lag counts the rest. */
        CHECK(rdx_store_version(follower) <= 1);
        CHECK_EQ_INT(versions, 6 - rdx_store_version(follower));
        rdx_store_release(follower);
    }
    rdx_store_release(writer);
}

int main(void)
{
    const char *check = getenv("RDX_REPLICA_CHECK");
    rdx_status status = RDX_OK;
    json_object *zero = zero_tally();
    rdx_store *store, *later;
    heard h;
    enum { lanes = 4, per_lane = 60, swift_count = 150, batch = 3 };
    const int total = lanes * per_lane + swift_count + batch;
    writer writers[lanes + 1];
    pthread_t threads[lanes + 1];
    /* Without the Swift process (RDX_CTEST_WITHOUT_SWIFT=1, where no Swift program can run: the
     * install test hides the toolchain), a C thread writes its share. */
    const int without_swift = getenv("RDX_CTEST_WITHOUT_SWIFT") != NULL;
    const int lanes_run = without_swift ? lanes + 1 : lanes;
    char swift_out[256];
    pid_t swift = -1;
    int lane, exit_status = 0;
    tally mine, theirs, other;

    TEST("a server to test against");
    url = getenv("REDUXSTORE_TEST_POSTGRES");
    if (!CHECK(url != NULL && url[0] != '\0')) {
        fprintf(stderr, "    REDUXSTORE_TEST_POSTGRES is not set: start a server with scripts/postgres\n");
        json_object_put(zero);
        return check_report();
    }
    if (without_swift) {
        printf("NOT RUN  the Swift process sharing the stream (RDX_CTEST_WITHOUT_SWIFT): a C thread writes its share\n");
    } else if (!CHECK(check != NULL)) {
        fprintf(stderr, "    RDX_REPLICA_CHECK is not set: the path of reduxstore-replica-check (Tests/CTests/run.sh sets it)\n");
    }
    snprintf(stream, sizeof stream, "c-tally-%ld-%ld", (long)getpid(), (long)time(NULL));
    snprintf(swift_out, sizeof swift_out, "/tmp/reduxstore-c-replica-%ld.out", (long)getpid());

    TEST("bad arguments and a missing server are clear errors, without the password");
    CHECK(rdx_store_open_stream(NULL, stream, zero, reducers, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(rdx_store_open_stream(url, "", zero, reducers, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "name") != NULL);
    CHECK(rdx_store_open_stream(url, stream, NULL, reducers, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(rdx_store_open_stream("postgres://tester:hunter2@127.0.0.1:1/none", stream, zero, reducers, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EIO);
    CHECK(strstr(rdx_last_error(), "hunter2") == NULL);
    CHECK(strlen(rdx_last_error()) > 0);
    CHECK(rdx_store_open_stream("port=notanumber", stream, zero, reducers, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    /* Names that are not UTF-8 are refused, never repaired into one shared name. */
    CHECK(rdx_store_open_stream(url, "s\xff", zero, reducers, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "UTF-8") != NULL);
    CHECK(rdx_store_open_stream(url, "s\xc3", zero, reducers, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(rdx_store_open_stream("host=127.0.0.1 password=\xfe\xff", stream, zero, reducers, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    /* A malformed string puts pieces of the password where other parts go: none is quoted. */
    CHECK(rdx_store_open_stream("postgres://tester:Zq7w/x9@127.0.0.1/db", stream, zero, reducers, 1, &status) == NULL);
    CHECK_STATUS(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "Zq7w") == NULL);

    TEST("open a stream: an ordinary store at version 0");
    store = rdx_store_open_stream(url, stream, zero, reducers, 1, &status);
    CHECK_STATUS(status, RDX_OK);
    if (!CHECK(store != NULL)) {
        fprintf(stderr, "    %s\n", rdx_last_error());
        json_object_put(zero);
        return check_report();
    }
    CHECK_EQ_INT(rdx_store_version(store), 0);
    memset(&h, 0, sizeof h);
    pthread_mutex_init(&h.lock, NULL);
    CHECK(rdx_store_add_observer(store, NULL, observe, &h) != 0);

    TEST("what would reorder the stream is refused and changes nothing");
    CHECK_STATUS(rdx_store_enqueue_action(store, "add", NULL), RDX_EINVAL);
    CHECK_STATUS(rdx_store_restore_version(store, 0), RDX_EINVAL);
    CHECK_EQ_INT(rdx_store_version(store), 0);

    TEST("a child after fork never appends under its parent's name, and cannot open a stream: refused, and the parent goes on");
    {
        /* The child's verdict comes through a pipe, not its exit status: under valgrind a child
         * that leaves without freeing its parent's threads' memory exits with valgrind's code. */
        pid_t child;
        int child_status = 0, verdict[2];
        char answer = 0;
        CHECK(pipe(verdict) == 0);
        fflush(NULL);
        child = fork();
        if (child == 0) {
            /* Each answered at once (a wait for the parent's threads would never end): the alarm
             * ends a child that hangs, whose verdict then never comes. */
            rdx_status refused = rdx_store_dispatch_json(store, "{\"identifier\":\"add\",\"payload\":{\"by\":1,\"tag\":\"child\"}}");
            char ok = refused == RDX_EINVAL && strstr(rdx_last_error(), "child") != NULL ? 'y' : 'n';
            double seconds = 0;
            uint64_t versions = 0;
            rdx_status opened = RDX_OK;
            ssize_t written;
            alarm(60);
            if (rdx_store_stream_lag(store, &seconds, &versions) != RDX_EINVAL) ok = 'n';
            if (rdx_store_open_stream(url, stream, zero, reducers, 1, &opened) != NULL || opened != RDX_EINVAL
                || strstr(rdx_last_error(), "fork()") == NULL) {
                ok = 'n';
            }
            written = write(verdict[1], &ok, 1);
            _exit(written == 1 ? 0 : 1);
        }
        close(verdict[1]);
        CHECK(read(verdict[0], &answer, 1) == 1 && answer == 'y');
        close(verdict[0]);
        CHECK(child > 0 && waitpid(child, &child_status, 0) == child);
        CHECK_EQ_INT(rdx_store_version(store), 0);
    }

    TEST("a payload PostgreSQL cannot store (U+0000) is refused before it is sent");
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\":\"add\",\"payload\":{\"by\":1,\"tag\":\"a\\u0000b\"}}"),
                 RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "U+0000") != NULL);
    CHECK_EQ_INT(rdx_store_version(store), 0);

    TEST("C threads and a Swift process write at once; each dispatch returns once applied here");
    if (!without_swift && check != NULL) swift = start_swift_writer(check, swift_count, total, swift_out);
    for (lane = 0; lane < lanes_run; lane++) {
        writers[lane].store = store;
        writers[lane].lane = lane;
        writers[lane].count = lane < lanes ? per_lane : swift_count;
        writers[lane].by = lane < lanes ? 2 : 1;
        writers[lane].failures = 0;
        pthread_create(&threads[lane], NULL, write_lane, &writers[lane]);
    }
    for (lane = 0; lane < lanes_run; lane++) {
        pthread_join(threads[lane], NULL);
        CHECK_EQ_INT(writers[lane].failures, 0);
    }
    {
        uint64_t before = rdx_store_version(store);
        CHECK_STATUS(rdx_store_dispatch_batch_json(store,
            "[{\"identifier\":\"add\",\"payload\":{\"by\":3,\"tag\":\"b0\"}},"
            "{\"identifier\":\"add\",\"payload\":{\"by\":3,\"tag\":\"b1\"}},"
            "{\"identifier\":\"add\",\"payload\":{\"by\":3,\"tag\":\"b2\"}}]"), RDX_OK);
        CHECK(rdx_store_version(store) >= before + 3);
        /* A bad element refuses the whole batch: nothing is sent. */
        before = rdx_store_version(store);
        CHECK_STATUS(rdx_store_dispatch_batch_json(store,
            "[{\"identifier\":\"add\",\"payload\":{\"by\":3,\"tag\":\"b3\"}},{\"nope\":1}]"), RDX_EDECODE);
        CHECK(rdx_store_version(store) >= before);
    }
    if (swift > 0) {
        int waited = waitpid(swift, &exit_status, 0) == swift;
        CHECK(waited && WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0);
    }

    TEST("every replica ends with the Swift process's state");
    pthread_mutex_lock(&h.lock);
    CHECK_STATUS(h.inside, RDX_EINVAL);
    pthread_mutex_unlock(&h.lock);
    CHECK(wait_for(store, (uint64_t)total));
    CHECK_EQ_INT(rdx_store_version(store), total);
    mine = store_tally(store);
    CHECK_EQ_INT(mine.count, total);
    CHECK_EQ_INT(mine.total, lanes * per_lane * 2 + swift_count + batch * 3);
    if (!without_swift) {
        theirs = swift_tally(swift_out);
        CHECK_EQ_INT(theirs.count, mine.count);
        CHECK_EQ_INT(theirs.total, mine.total);
        CHECK(theirs.digest == mine.digest);
    }
    pthread_mutex_lock(&h.lock);
    CHECK_EQ_INT(h.count, total);
    CHECK(!h.out_of_order);
    pthread_mutex_unlock(&h.lock);

    TEST("a process that opens the stream later applies it to the same state");
    later = rdx_store_open_stream(url, stream, zero, reducers, 1, &status);
    CHECK_STATUS(status, RDX_OK);
    if (later != NULL) {
        CHECK_EQ_INT(rdx_store_version(later), total);
        other = store_tally(later);
        CHECK(other.digest == mine.digest);
        CHECK_EQ_INT(other.total, mine.total);
        /* Its dispatch reaches the first replica too. */
        CHECK_STATUS(rdx_store_dispatch_json(later, "{\"identifier\":\"add\",\"payload\":{\"by\":5,\"tag\":\"late\"}}"), RDX_OK);
        CHECK_EQ_INT(rdx_store_version(later), total + 1);
        CHECK(wait_for(store, (uint64_t)total + 1));
        CHECK(store_tally(store).digest == store_tally(later).digest);
        rdx_store_release(later);
    }

    TEST("options: the defaults; a value out of range is refused by its C name, and nothing opens");
    check_options(zero);

    TEST("a follower applies what is committed, never writes, and says how far behind it is");
    check_follower(store, zero);

    TEST("a follower on a hot standby applies what the primary commits, never writes, and says how far the standby is behind");
    check_standby_follower(store, zero);

    TEST("a follower behind a writer that trims stops with trimmed, which its lag says");
    check_trimmed_follower(zero);

    TEST("numbers reach every replica as written: json-c's int and double alike");
    check_numbers();

    TEST("a batch that fails part-way says which of its elements were stored");
    check_batch_failure();

    TEST("the last release closes the stream");
    rdx_store_release(store);
    pthread_mutex_destroy(&h.lock);
    json_object_put(zero);
    unlink(swift_out);
    return check_report();
}
