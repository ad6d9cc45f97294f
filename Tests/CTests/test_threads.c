/*
 * test_threads.c — one store used from many threads at once: no action is lost, actions are
 * applied one at a time in one total order, each observer call on a dispatching thread sees
 * versions in increasing order, enqueued actions stay in FIFO order per thread, snapshots are
 * never torn, observers can be added and removed while others dispatch (and are never called
 * after their removal returned), saves run alongside dispatches, last errors are per thread, and
 * references can be dropped from any thread.
 *
 * Sizes: RDX_CTEST_SMALL (set by run.sh under valgrind) makes every loop much shorter.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

#define DISPATCH_THREADS 8

/* Actions per thread: 10,000 normally, fewer under valgrind. */
static int per_thread(void)
{
    return util_small() ? 1000 : 10000;
}

/* Starts `count` threads running `body` with args[i] (each `size` bytes apart) and joins them. */
static void run_threads(int count, void *(*body)(void *), void *args, size_t size)
{
    pthread_t threads[16];
    int i;
    for (i = 0; i < count; i++)
        CHECK(pthread_create(&threads[i], NULL, body, (char *)args + (size_t)i * size) == 0);
    for (i = 0; i < count; i++) pthread_join(threads[i], NULL);
}

/* ---- Concurrent dispatch: an exact count, every version notified once, in order per thread. */

struct version_audit {
    pthread_mutex_t lock;
    unsigned char *seen;   /* seen[v]: how many times version v was notified */
    uint64_t limit;
    long out_of_order;     /* a thread's observer saw a version not above its previous one */
    long out_of_range;
    long wrong_name;
};

static pthread_key_t last_version_key;

static void auditing_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct version_audit *audit = (struct version_audit *)context;
    uint64_t *last = (uint64_t *)pthread_getspecific(last_version_key);
    (void)store;
    pthread_mutex_lock(&audit->lock);
    if (last != NULL) {
        if (version <= *last) audit->out_of_order++;
        *last = version;
    }
    if (version == 0 || version > audit->limit) audit->out_of_range++;
    else if (audit->seen[version] < 255) audit->seen[version]++;
    if (name == NULL || strcmp(name, RDX_STATE_DID_CHANGE_NOTIFICATION) != 0) audit->wrong_name++;
    pthread_mutex_unlock(&audit->lock);
}

struct dispatcher {
    rdx_store *store;
    int count;
    long failures;
    uint64_t last_version;
};

static void *dispatch_body(void *argument)
{
    struct dispatcher *dispatcher = (struct dispatcher *)argument;
    int i;
    pthread_setspecific(last_version_key, &dispatcher->last_version);
    for (i = 0; i < dispatcher->count; i++)
        if (rdx_store_dispatch_action(dispatcher->store, "inc", NULL) != RDX_OK)
            dispatcher->failures++;
    pthread_setspecific(last_version_key, NULL);
    return NULL;
}

static void test_concurrent_dispatch(void)
{
    struct dispatcher dispatchers[DISPATCH_THREADS];
    struct version_audit audit;
    rdx_store *store = util_counter_store();
    uint64_t total = (uint64_t)DISPATCH_THREADS * (uint64_t)per_thread();
    uint64_t token, v;
    long missing = 0, twice = 0;
    int i;

    TEST("concurrent_dispatch");
    CHECK(store != NULL);
    if (store == NULL) return;
    memset(&audit, 0, sizeof audit);
    pthread_mutex_init(&audit.lock, NULL);
    audit.limit = total;
    audit.seen = (unsigned char *)calloc((size_t)total + 1, 1);
    token = rdx_store_add_observer(store, NULL, auditing_observer, &audit);
    CHECK(token != 0);
    for (i = 0; i < DISPATCH_THREADS; i++) {
        dispatchers[i].store = store;
        dispatchers[i].count = per_thread();
        dispatchers[i].failures = 0;
        dispatchers[i].last_version = 0;
    }
    run_threads(DISPATCH_THREADS, dispatch_body, dispatchers, sizeof dispatchers[0]);
    for (i = 0; i < DISPATCH_THREADS; i++) CHECK_EQ_INT(dispatchers[i].failures, 0);
    /* No update lost. */
    CHECK_EQ_INT(rdx_store_version(store), total);
    CHECK_EQ_INT(util_count(store), (int64_t)total);
    /* Every version notified exactly once; each thread saw its versions increase. */
    for (v = 1; v <= total; v++) {
        if (audit.seen[v] == 0) missing++;
        if (audit.seen[v] > 1) twice++;
    }
    CHECK_EQ_INT(missing, 0);
    CHECK_EQ_INT(twice, 0);
    CHECK_EQ_INT(audit.out_of_order, 0);
    CHECK_EQ_INT(audit.out_of_range, 0);
    CHECK_EQ_INT(audit.wrong_name, 0);
    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    rdx_store_release(store);
    free(audit.seen);
    pthread_mutex_destroy(&audit.lock);
}

/* ---- Enqueue from several threads, then flush: an exact count and FIFO order per thread. */

#define ENQUEUE_THREADS 4

/* state.last[t] is the last sequence number applied for thread t; out-of-order ones are counted. */
static void sequence_reduce(json_object *state, const char *identifier, json_object *payload,
                            void *context)
{
    json_object *last = NULL;
    json_object *previous = NULL;
    char key[16];
    int64_t sequence;
    (void)context;
    if (strcmp(identifier, "step") != 0 || payload == NULL) return;
    json_object_object_get_ex(state, "last", &last);
    snprintf(key, sizeof key, "%d", (int)util_int(payload, "thread"));
    sequence = util_int(payload, "sequence");
    if (!json_object_object_get_ex(last, key, &previous)) {
        if (sequence != 0) util_set_int(state, "disorder", util_int(state, "disorder") + 1);
    } else if (json_object_get_int64(previous) + 1 != sequence) {
        util_set_int(state, "disorder", util_int(state, "disorder") + 1);
    }
    util_set_int(last, key, sequence);
    util_set_int(state, "count", util_int(state, "count") + 1);
}

struct enqueuer {
    rdx_store *store;
    int thread;
    int count;
    long failures;
};

static void *enqueue_body(void *argument)
{
    struct enqueuer *enqueuer = (struct enqueuer *)argument;
    json_object *payload = json_object_new_object();
    int i;
    util_set_int(payload, "thread", enqueuer->thread);
    for (i = 0; i < enqueuer->count; i++) {
        util_set_int(payload, "sequence", i); /* the same tree, changed after each enqueue */
        if (rdx_store_enqueue_action(enqueuer->store, "step", payload) != RDX_OK)
            enqueuer->failures++;
    }
    json_object_put(payload);
    /* Each thread may flush too: its own actions are applied when it returns. */
    if (rdx_store_flush(enqueuer->store) != RDX_OK) enqueuer->failures++;
    return NULL;
}

static void test_concurrent_enqueue_fifo(void)
{
    struct enqueuer enqueuers[ENQUEUE_THREADS];
    rdx_reducer reducer = {sequence_reduce, NULL, NULL};
    json_object *initial = json_tokener_parse("{\"count\": 0, \"disorder\": 0, \"last\": {}}");
    rdx_store *store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object *state, *last = NULL, *value = NULL;
    int i;
    char key[16];

    TEST("concurrent_enqueue_fifo");
    json_object_put(initial);
    CHECK(store != NULL);
    if (store == NULL) return;
    for (i = 0; i < ENQUEUE_THREADS; i++) {
        enqueuers[i].store = store;
        enqueuers[i].thread = i;
        enqueuers[i].count = per_thread();
        enqueuers[i].failures = 0;
    }
    run_threads(ENQUEUE_THREADS, enqueue_body, enqueuers, sizeof enqueuers[0]);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    for (i = 0; i < ENQUEUE_THREADS; i++) CHECK_EQ_INT(enqueuers[i].failures, 0);
    CHECK_EQ_INT(rdx_store_version(store), ENQUEUE_THREADS * per_thread());
    state = rdx_store_current_state(store);
    CHECK_EQ_INT(util_int(state, "count"), ENQUEUE_THREADS * per_thread());
    CHECK_EQ_INT(util_int(state, "disorder"), 0);
    json_object_object_get_ex(state, "last", &last);
    for (i = 0; i < ENQUEUE_THREADS; i++) {
        snprintf(key, sizeof key, "%d", i);
        CHECK(json_object_object_get_ex(last, key, &value));
        CHECK_EQ_INT(json_object_get_int64(value), per_thread() - 1);
    }
    json_object_put(state);
    rdx_store_release(store);
}

/* ---- Observers added and removed from threads while other threads dispatch. */

struct churn_context {
    pthread_mutex_t lock;
    int removed;
    long calls_after_removal;
};

static void churn_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct churn_context *churn = (struct churn_context *)context;
    (void)store;
    (void)name;
    (void)version;
    pthread_mutex_lock(&churn->lock);
    if (churn->removed) churn->calls_after_removal++;
    pthread_mutex_unlock(&churn->lock);
}

struct churner {
    rdx_store *store;
    int rounds;
    long add_failures;
    long remove_failures;
    long calls_after_removal;
};

static void *churn_body(void *argument)
{
    struct churner *churner = (struct churner *)argument;
    struct churn_context *kept[64];
    int kept_count = 0;
    int i;
    for (i = 0; i < churner->rounds; i++) {
        struct churn_context *churn = (struct churn_context *)calloc(1, sizeof *churn);
        uint64_t token;
        pthread_mutex_init(&churn->lock, NULL);
        token = rdx_store_add_observer(churner->store, (i % 2) ? NULL : RDX_STATE_DID_CHANGE_NOTIFICATION,
                                       churn_observer, churn);
        if (token == 0) churner->add_failures++;
        sched_yield();
        if (rdx_store_remove_observer(churner->store, token) != RDX_OK) churner->remove_failures++;
        if (i % 2 == 0 || kept_count == 64) {
            /* Freed right after removal: a later call would touch freed memory (valgrind). */
            pthread_mutex_destroy(&churn->lock);
            free(churn);
        } else {
            /* Kept and marked: a later call is counted. */
            pthread_mutex_lock(&churn->lock);
            churn->removed = 1;
            pthread_mutex_unlock(&churn->lock);
            kept[kept_count++] = churn;
        }
        if (kept_count == 64 || i == churner->rounds - 1) {
            int k;
            /* Give dispatchers time to call a wrongly kept observer, then audit and free. */
            sched_yield();
            for (k = 0; k < kept_count; k++) {
                pthread_mutex_lock(&kept[k]->lock);
                churner->calls_after_removal += kept[k]->calls_after_removal;
                pthread_mutex_unlock(&kept[k]->lock);
                pthread_mutex_destroy(&kept[k]->lock);
                free(kept[k]);
            }
            kept_count = 0;
        }
    }
    return NULL;
}

struct churn_thread {
    int is_churner;
    struct dispatcher dispatcher;
    struct churner churner;
};

static void *churn_or_dispatch_body(void *argument)
{
    struct churn_thread *thread = (struct churn_thread *)argument;
    return thread->is_churner ? churn_body(&thread->churner) : dispatch_body(&thread->dispatcher);
}

static void test_observer_churn(void)
{
    struct churn_thread threads[6];
    rdx_store *store = util_counter_store();
    int dispatches = per_thread() / 2;
    int rounds = util_small() ? 100 : 2000;
    int i;

    TEST("observer_churn");
    CHECK(store != NULL);
    if (store == NULL) return;
    memset(threads, 0, sizeof threads);
    for (i = 0; i < 6; i++) {
        threads[i].is_churner = i >= 4;
        threads[i].dispatcher.store = store;
        threads[i].dispatcher.count = dispatches;
        threads[i].churner.store = store;
        threads[i].churner.rounds = rounds;
    }
    run_threads(6, churn_or_dispatch_body, threads, sizeof threads[0]);
    for (i = 0; i < 6; i++) {
        CHECK_EQ_INT(threads[i].dispatcher.failures, 0);
        CHECK_EQ_INT(threads[i].churner.add_failures, 0);
        CHECK_EQ_INT(threads[i].churner.remove_failures, 0);
        CHECK_EQ_INT(threads[i].churner.calls_after_removal, 0);
    }
    CHECK_EQ_INT(rdx_store_version(store), 4 * dispatches);
    CHECK_EQ_INT(util_count(store), 4 * dispatches);
    rdx_store_release(store);
}

/* ---- Snapshots are never torn: a reducer sets a then b; readers always see a == b. */

static void pair_reduce(json_object *state, const char *identifier, json_object *payload,
                        void *context)
{
    int64_t next = util_int(state, "a") + 1;
    (void)identifier;
    (void)payload;
    (void)context;
    util_set_int(state, "a", next);
    json_object_object_add(state, "filler", json_object_new_string("some work between a and b"));
    util_set_int(state, "b", next);
}

struct reader {
    rdx_store *store;
    volatile int *stop;
    pthread_mutex_t *stop_lock;
    long reads;
    long torn;
    long went_back;
    long null_snapshots;
};

static void *read_body(void *argument)
{
    struct reader *reader = (struct reader *)argument;
    int64_t previous = -1;
    for (;;) {
        json_object *state;
        int stop;
        pthread_mutex_lock(reader->stop_lock);
        stop = *reader->stop;
        pthread_mutex_unlock(reader->stop_lock);
        if (stop && reader->reads > 0) break;
        state = rdx_store_current_state(reader->store);
        if (state == NULL) {
            reader->null_snapshots++;
        } else {
            int64_t a = util_int(state, "a"), b = util_int(state, "b");
            if (a != b) reader->torn++;
            if (a < previous) reader->went_back++;
            previous = a;
        }
        json_object_put(state);
        reader->reads++;
        /* Neither mutex is fair: a reader that takes the store's lock and the stop lock again at
         * once can keep the writers and the coordinator waiting for ever where threads take
         * turns (valgrind runs one at a time). Reads still overlap the writes. */
        sched_yield();
    }
    return NULL;
}

struct pair_thread {
    int is_reader;
    struct dispatcher dispatcher;
    struct reader reader;
};

static void *pair_body(void *argument)
{
    struct pair_thread *thread = (struct pair_thread *)argument;
    return thread->is_reader ? read_body(&thread->reader) : dispatch_body(&thread->dispatcher);
}

static volatile int readers_stop;
static pthread_mutex_t readers_stop_lock = PTHREAD_MUTEX_INITIALIZER;

static void *writers_then_stop(void *argument)
{
    struct pair_thread *threads = (struct pair_thread *)argument;
    pthread_t writers[2];
    int i;
    for (i = 0; i < 2; i++) pthread_create(&writers[i], NULL, pair_body, &threads[i]);
    for (i = 0; i < 2; i++) pthread_join(writers[i], NULL);
    pthread_mutex_lock(&readers_stop_lock);
    readers_stop = 1;
    pthread_mutex_unlock(&readers_stop_lock);
    return NULL;
}

static void test_snapshots_not_torn(void)
{
    struct pair_thread threads[4];
    rdx_reducer reducer = {pair_reduce, NULL, NULL};
    json_object *initial = json_tokener_parse("{\"a\": 0, \"b\": 0}");
    rdx_store *store = rdx_store_create(initial, &reducer, 1, NULL);
    pthread_t coordinator, readers[2];
    int writes = per_thread() / 2;
    int i;

    TEST("snapshots_not_torn");
    json_object_put(initial);
    CHECK(store != NULL);
    if (store == NULL) return;
    memset(threads, 0, sizeof threads);
    readers_stop = 0;
    for (i = 0; i < 4; i++) {
        threads[i].is_reader = i >= 2;
        threads[i].dispatcher.store = store;
        threads[i].dispatcher.count = writes;
        threads[i].reader.store = store;
        threads[i].reader.stop = &readers_stop;
        threads[i].reader.stop_lock = &readers_stop_lock;
    }
    for (i = 0; i < 2; i++) CHECK(pthread_create(&readers[i], NULL, pair_body, &threads[2 + i]) == 0);
    CHECK(pthread_create(&coordinator, NULL, writers_then_stop, threads) == 0);
    pthread_join(coordinator, NULL);
    for (i = 0; i < 2; i++) pthread_join(readers[i], NULL);
    for (i = 2; i < 4; i++) {
        CHECK(threads[i].reader.reads > 0);
        CHECK_EQ_INT(threads[i].reader.torn, 0);
        CHECK_EQ_INT(threads[i].reader.went_back, 0);
        CHECK_EQ_INT(threads[i].reader.null_snapshots, 0);
    }
    {
        json_object *state = rdx_store_current_state(store);
        CHECK_EQ_INT(util_int(state, "a"), 2 * writes);
        CHECK_EQ_INT(util_int(state, "b"), 2 * writes);
        json_object_put(state);
    }
    rdx_store_release(store);
}

/* ---- Saves alongside dispatches: every save succeeds and holds a consistent state. */

struct saver {
    rdx_store *store;
    const char *path;
    int saves;
    long failures;
};

static void *save_body(void *argument)
{
    struct saver *saver = (struct saver *)argument;
    int i;
    for (i = 0; i < saver->saves; i++)
        if (rdx_store_save(saver->store, saver->path) != RDX_OK) saver->failures++;
    return NULL;
}

struct save_thread {
    int is_saver;
    struct dispatcher dispatcher;
    struct saver saver;
};

static void *save_or_dispatch_body(void *argument)
{
    struct save_thread *thread = (struct save_thread *)argument;
    return thread->is_saver ? save_body(&thread->saver) : dispatch_body(&thread->dispatcher);
}

static void test_saves_alongside_dispatches(void)
{
    struct save_thread threads[4];
    rdx_store *store = util_counter_store();
    rdx_reducer reducer = {util_counter_reduce, NULL, NULL};
    char folder[] = "/tmp/reduxstore-ctest-threads-XXXXXX";
    char path[128];
    char temporary[160];
    rdx_status status = RDX_EIO;
    rdx_store *opened;
    int dispatches = per_thread() / 5;
    int i;

    TEST("saves_alongside_dispatches");
    CHECK(store != NULL && mkdtemp(folder) != NULL);
    if (store == NULL) return;
    snprintf(path, sizeof path, "%s/state.json", folder);
    snprintf(temporary, sizeof temporary, "%s/.state.json.tmp", folder);
    memset(threads, 0, sizeof threads);
    for (i = 0; i < 4; i++) {
        threads[i].is_saver = i >= 2;
        threads[i].dispatcher.store = store;
        threads[i].dispatcher.count = dispatches;
        threads[i].saver.store = store;
        threads[i].saver.path = path;
        threads[i].saver.saves = util_small() ? 5 : 25;
    }
    run_threads(4, save_or_dispatch_body, threads, sizeof threads[0]);
    for (i = 0; i < 4; i++) {
        CHECK_EQ_INT(threads[i].dispatcher.failures, 0);
        CHECK_EQ_INT(threads[i].saver.failures, 0);
    }
    /* The file holds one whole state: count equals version (each action added 1). */
    opened = rdx_store_open(path, &reducer, 1, &status);
    CHECK_STATUS(status, RDX_OK);
    CHECK(opened != NULL);
    if (opened != NULL) {
        uint64_t version = rdx_store_version(opened);
        CHECK(version <= (uint64_t)(2 * dispatches));
        CHECK_EQ_INT(util_count(opened), (int64_t)version);
        rdx_store_release(opened);
    }
    CHECK(access(temporary, F_OK) != 0); /* no temporary left behind */
    unlink(path);
    rmdir(folder);
    rdx_store_release(store);
}

/* ---- Last errors are per thread, under concurrency. */

struct failer {
    rdx_store *store;
    int thread;
    int rounds;
    long wrong_message;
    long wrong_status;
};

static void *fail_body(void *argument)
{
    struct failer *failer = (struct failer *)argument;
    char text[128], key[32];
    int i;
    snprintf(key, sizeof key, "key_of_thread_%d", failer->thread);
    snprintf(text, sizeof text, "{\"identifier\": \"inc\", \"%s\": 1}", key);
    for (i = 0; i < failer->rounds; i++) {
        if (rdx_store_dispatch_json(failer->store, text) != RDX_EDECODE) failer->wrong_status++;
        if (strstr(rdx_last_error(), key) == NULL) failer->wrong_message++;
    }
    return NULL;
}

static void test_last_error_per_thread_concurrently(void)
{
    struct failer failers[4];
    rdx_store *store = util_counter_store();
    int i;

    TEST("last_error_per_thread_concurrently");
    CHECK(store != NULL);
    if (store == NULL) return;
    for (i = 0; i < 4; i++) {
        failers[i].store = store;
        failers[i].thread = i;
        failers[i].rounds = util_small() ? 100 : 2000;
        failers[i].wrong_message = 0;
        failers[i].wrong_status = 0;
    }
    run_threads(4, fail_body, failers, sizeof failers[0]);
    for (i = 0; i < 4; i++) {
        CHECK_EQ_INT(failers[i].wrong_status, 0);
        CHECK_EQ_INT(failers[i].wrong_message, 0);
    }
    CHECK_EQ_INT(rdx_store_version(store), 0);
    rdx_store_release(store);
}

/* ---- References dropped from several threads: the last release, whichever it is, frees. */

static pthread_mutex_t applied_lock = PTHREAD_MUTEX_INITIALIZER;
static long applied_total;

static void counting_reduce(json_object *state, const char *identifier, json_object *payload,
                            void *context)
{
    (void)state;
    (void)identifier;
    (void)payload;
    (void)context;
    pthread_mutex_lock(&applied_lock);
    applied_total++;
    pthread_mutex_unlock(&applied_lock);
}

static void *dispatch_then_release_body(void *argument)
{
    struct dispatcher *dispatcher = (struct dispatcher *)argument;
    dispatch_body(dispatcher);
    if (rdx_store_enqueue_action(dispatcher->store, "last", NULL) != RDX_OK) dispatcher->failures++;
    rdx_store_release(dispatcher->store); /* this thread's last use of its reference */
    return NULL;
}

static void test_release_from_threads(void)
{
    struct dispatcher dispatchers[DISPATCH_THREADS];
    rdx_reducer reducer = {counting_reduce, NULL, NULL};
    rdx_store *store = util_store(&reducer, 1);
    int count = per_thread() / 10;
    int i;

    TEST("release_from_threads");
    CHECK(store != NULL);
    if (store == NULL) return;
    applied_total = 0;
    for (i = 0; i < DISPATCH_THREADS; i++) {
        dispatchers[i].store = rdx_store_retain(store);
        dispatchers[i].count = count;
        dispatchers[i].failures = 0;
        dispatchers[i].last_version = 0;
    }
    rdx_store_release(store); /* the threads hold the only references now */
    run_threads(DISPATCH_THREADS, dispatch_then_release_body, dispatchers, sizeof dispatchers[0]);
    for (i = 0; i < DISPATCH_THREADS; i++) CHECK_EQ_INT(dispatchers[i].failures, 0);
    /* Every dispatched action was applied; valgrind checks the store was freed. */
    pthread_mutex_lock(&applied_lock);
    CHECK(applied_total >= (long)DISPATCH_THREADS * count);
    pthread_mutex_unlock(&applied_lock);
}

int main(void)
{
    CHECK(pthread_key_create(&last_version_key, NULL) == 0);
    test_concurrent_dispatch();
    test_concurrent_enqueue_fifo();
    test_observer_churn();
    test_snapshots_not_torn();
    test_saves_alongside_dispatches();
    test_last_error_per_thread_concurrently();
    test_release_from_threads();
    pthread_key_delete(last_version_key);
    return check_report();
}
