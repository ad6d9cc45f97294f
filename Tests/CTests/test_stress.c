/*
 * Stress test through the C interface: 8 threads dispatching, 2 threads taking snapshots, 2
 * threads adding and removing observers, all on one store, for RDX_CTEST_STRESS_SECONDS seconds
 * (5 by default, 1 under valgrind). Afterwards the totals are exact; every snapshot taken along
 * the way was whole (the reducer keeps "left" and "right" equal and "count" equal to the sum of
 * the per-thread counts); an observer that stays registered heard every action once, in
 * increasing versions on each thread; and nothing deadlocked (the watchdog would fire).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "util.h"

#define DISPATCHERS 8
#define READERS 2
#define CHURNERS 2

static double stress_seconds;
static struct timespec deadline;

static int before_deadline(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec < deadline.tv_sec ||
           (now.tv_sec == deadline.tv_sec && now.tv_nsec < deadline.tv_nsec);
}

/* "deposit" with payload {"thread": T, "amount": A}: count += 1, left += A, right += A,
 * threads[T] += 1. */
static void ledger(json_object *state, const char *identifier, json_object *payload, void *context)
{
    (void)context;
    if (strcmp(identifier, "deposit") != 0 || payload == NULL) return;
    int64_t thread = util_int(payload, "thread");
    int64_t amount = util_int(payload, "amount");
    util_set_int(state, "count", util_int(state, "count") + 1);
    util_set_int(state, "left", util_int(state, "left") + amount);
    json_object *threads = json_object_object_get(state, "threads");
    json_object *slot = json_object_array_get_idx(threads, (size_t)thread);
    json_object_set_int64(slot, json_object_get_int64(slot) + 1);
    util_set_int(state, "right", util_int(state, "right") + amount);
}

struct worker {
    rdx_store *store;
    int index;
    long count;     /* actions dispatched, snapshots taken or observers churned */
    long problems;  /* torn snapshots, failed calls */
};

static void *dispatcher(void *argument)
{
    struct worker *worker = argument;
    json_object *payload = json_object_new_object();
    util_set_int(payload, "thread", worker->index);
    util_set_int(payload, "amount", worker->index + 1);
    while (before_deadline()) {
        for (int i = 0; i < 32; i++) {
            if (rdx_store_dispatch_action(worker->store, "deposit", payload) == RDX_OK) {
                worker->count++;
            } else {
                worker->problems++;
            }
        }
    }
    json_object_put(payload);
    return NULL;
}

static void *reader(void *argument)
{
    struct worker *worker = argument;
    do { /* at least once: under valgrind a thread may start after the deadline */
        json_object *state = rdx_store_current_state(worker->store);
        int64_t sum = 0;
        json_object *threads = json_object_object_get(state, "threads");
        for (size_t i = 0; i < json_object_array_length(threads); i++) {
            sum += json_object_get_int64(json_object_array_get_idx(threads, i));
        }
        if (state == NULL || util_int(state, "left") != util_int(state, "right") ||
            util_int(state, "count") != sum) {
            worker->problems++;
        }
        json_object_put(state);
        worker->count++;
    } while (before_deadline());
    return NULL;
}

static void ignore(rdx_store *store, const char *name, uint64_t version, void *context)
{
    (void)store;
    (void)name;
    (void)version;
    (void)context;
}

static void *churner(void *argument)
{
    struct worker *worker = argument;
    do { /* at least once: under valgrind a thread may start after the deadline */
        uint64_t token = rdx_store_add_observer(worker->store, NULL, ignore, NULL);
        if (token == 0 || rdx_store_remove_observer(worker->store, token) != RDX_OK) {
            worker->problems++;
        }
        worker->count++;
    } while (before_deadline());
    return NULL;
}

/* The standing observer: counts notifications, and checks versions increase per thread. */
static pthread_mutex_t heard_lock = PTHREAD_MUTEX_INITIALIZER;
static long heard;
static long out_of_order;
static pthread_key_t last_version_key;

static void standing(rdx_store *store, const char *name, uint64_t version, void *context)
{
    (void)store;
    (void)name;
    (void)context;
    uint64_t *last = pthread_getspecific(last_version_key);
    if (last == NULL) {
        last = calloc(1, sizeof *last);
        pthread_setspecific(last_version_key, last);
    }
    pthread_mutex_lock(&heard_lock);
    heard++;
    if (version <= *last) out_of_order++;
    pthread_mutex_unlock(&heard_lock);
    *last = version;
}

int main(void)
{
    const char *seconds = getenv("RDX_CTEST_STRESS_SECONDS");
    stress_seconds = seconds != NULL ? atof(seconds) : (util_small() ? 1.0 : 5.0);
    pthread_key_create(&last_version_key, free);

    TEST("8 dispatchers, 2 readers, 2 observer churners on one store");
    check_watchdog((unsigned)stress_seconds + 120);
    rdx_reducer reducer = { ledger, NULL, NULL };
    json_object *initial = json_tokener_parse(
        "{\"count\": 0, \"left\": 0, \"right\": 0, \"threads\": [0, 0, 0, 0, 0, 0, 0, 0]}");
    rdx_store *store = rdx_store_create(initial, &reducer, 1, NULL);
    json_object_put(initial);
    CHECK(store != NULL);
    uint64_t token = rdx_store_add_observer(store, RDX_STATE_DID_CHANGE_NOTIFICATION, standing, NULL);
    CHECK(token != 0);

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)stress_seconds;
    deadline.tv_nsec += (long)((stress_seconds - (double)(time_t)stress_seconds) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }

    pthread_t threads[DISPATCHERS + READERS + CHURNERS];
    struct worker workers[DISPATCHERS + READERS + CHURNERS];
    for (int i = 0; i < DISPATCHERS + READERS + CHURNERS; i++) {
        workers[i].store = store;
        workers[i].index = i;
        workers[i].count = 0;
        workers[i].problems = 0;
        void *(*body)(void *) = i < DISPATCHERS ? dispatcher
                               : i < DISPATCHERS + READERS ? reader : churner;
        CHECK(pthread_create(&threads[i], NULL, body, &workers[i]) == 0);
    }
    for (int i = 0; i < DISPATCHERS + READERS + CHURNERS; i++) pthread_join(threads[i], NULL);

    long dispatched = 0, snapshots = 0, churned = 0, expected_left = 0, problems = 0;
    json_object *state = rdx_store_current_state(store);
    json_object *per_thread = json_object_object_get(state, "threads");
    for (int i = 0; i < DISPATCHERS + READERS + CHURNERS; i++) {
        problems += workers[i].problems;
        if (i < DISPATCHERS) {
            dispatched += workers[i].count;
            expected_left += workers[i].count * (i + 1);
            CHECK_EQ_INT(json_object_get_int64(json_object_array_get_idx(per_thread, (size_t)i)),
                         workers[i].count);
        } else if (i < DISPATCHERS + READERS) {
            snapshots += workers[i].count;
        } else {
            churned += workers[i].count;
        }
    }
    printf("stress: %.1f s, %ld actions, %ld snapshots, %ld observers added and removed\n",
           stress_seconds, dispatched, snapshots, churned);
    CHECK_EQ_INT(problems, 0);
    CHECK_EQ_INT(util_int(state, "count"), dispatched);
    CHECK_EQ_INT(util_int(state, "left"), expected_left);
    CHECK_EQ_INT(util_int(state, "right"), expected_left);
    CHECK_EQ_INT(rdx_store_version(store), dispatched);
    CHECK_EQ_INT(heard, dispatched);
    CHECK_EQ_INT(out_of_order, 0);
    CHECK(snapshots > 0);
    CHECK(churned > 0);
    json_object_put(state);

    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    rdx_store_release(store);
    return check_report();
}
