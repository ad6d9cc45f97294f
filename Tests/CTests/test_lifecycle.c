/*
 * test_lifecycle.c — what a skeptical C program does to a store's life: callbacks that retain,
 * release, enqueue and remove while the last release drains the queue; a reducer removing an
 * observer that runs on another thread and freeing its context through the release callback;
 * observers removing each other on two threads; removals racing flushes; a queue that never runs
 * empty; and fork(). Run normally, under valgrind and under AddressSanitizer by run.sh; every
 * test has a watchdog, so a deadlock fails instead of hanging.
 *
 * Sizes: RDX_CTEST_SMALL (set by run.sh under valgrind) makes every loop shorter.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

static void sleep_ms(long milliseconds)
{
    struct timespec pause;
    pause.tv_sec = milliseconds / 1000;
    pause.tv_nsec = (milliseconds % 1000) * 1000000L;
    nanosleep(&pause, NULL);
}

/* ---- 1. An observer of an enqueued action retains the store while the last release drains. */

struct retainer {
    rdx_store *kept;     /* the reference the observer took */
    int calls;
    rdx_status flush_after;
};

static volatile int releasing; /* the main thread is about to drop its last reference */

static void retaining_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct retainer *retainer = context;
    (void)name;
    (void)version;
    retainer->calls++;
    if (retainer->kept == NULL) {
        /* Retain only once the last release is under way (it drains the queue): wait for the
         * main thread to get there. */
        while (!releasing) sched_yield();
        sleep_ms(100);
        retainer->kept = rdx_store_retain(store);
    }
}

static void test_retain_while_last_release_drains(void)
{
    struct retainer retainer;
    rdx_store *store = util_counter_store();
    int i;

    TEST("retain_while_last_release_drains");
    memset(&retainer, 0, sizeof retainer);
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK(rdx_store_add_observer(store, NULL, retaining_observer, &retainer) != 0);
    for (i = 0; i < 20; i++) CHECK_STATUS(rdx_store_enqueue_action(store, "inc", NULL), RDX_OK);
    /* The last reference: the queue drains inside this call, and the observer retains. */
    releasing = 1;
    rdx_store_release(store);
    CHECK_EQ_INT(retainer.calls, 20);
    CHECK(retainer.kept == store);
    if (retainer.kept == NULL) return;
    /* The observer's reference keeps the store open and working. */
    CHECK_EQ_INT(rdx_store_version(retainer.kept), 20);
    CHECK_STATUS(rdx_store_dispatch_action(retainer.kept, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(util_count(retainer.kept), 21);
    CHECK_EQ_INT(retainer.calls, 21);
    rdx_store_release(retainer.kept);
}

/* ---- 2. An observer enqueues a follow-up while the last release drains. */

static int follow_up_reduced;        /* reducer calls for "follow" */
static int release_returned;         /* set once rdx_store_release returned */
static int reduced_after_release;    /* reducer calls seen after that */

static void follow_up_reduce(json_object *state, const char *identifier, json_object *payload,
                             void *context)
{
    (void)state;
    (void)payload;
    (void)context;
    if (strcmp(identifier, "follow") == 0) follow_up_reduced++;
    if (release_returned) reduced_after_release++;
}

struct follower {
    int remaining;
    rdx_status last;
};

static void following_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct follower *follower = context;
    (void)name;
    (void)version;
    if (follower->remaining > 0) {
        follower->remaining--;
        follower->last = rdx_store_enqueue_action(store, "follow", NULL);
    }
}

static void test_enqueue_while_last_release_drains(void)
{
    rdx_reducer reducer = {follow_up_reduce, NULL, NULL};
    struct follower follower;
    rdx_store *store = util_store(&reducer, 1);

    TEST("enqueue_while_last_release_drains");
    follow_up_reduced = release_returned = reduced_after_release = 0;
    follower.remaining = 50;
    follower.last = RDX_ENOMEM;
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK(rdx_store_add_observer(store, NULL, following_observer, &follower) != 0);
    CHECK_STATUS(rdx_store_enqueue_action(store, "start", NULL), RDX_OK);
    rdx_store_release(store);
    release_returned = 1;
    /* Every follow-up the observers enqueued was accepted and applied before release returned. */
    CHECK_STATUS(follower.last, RDX_OK);
    CHECK_EQ_INT(follower.remaining, 0);
    CHECK_EQ_INT(follow_up_reduced, 50);
    sleep_ms(50);
    CHECK_EQ_INT(reduced_after_release, 0);
}

/* ---- 3. A reducer removes an observer running on another thread, then its context is freed. */

struct slow_context {
    volatile int touched;
    char bytes[64];
};

static int released_contexts;
static pthread_mutex_t released_lock = PTHREAD_MUTEX_INITIALIZER;

static void free_slow_context(void *context)
{
    struct slow_context *slow = context;
    memset(slow->bytes, 0xAB, sizeof slow->bytes); /* a use after free would show */
    free(slow);
    pthread_mutex_lock(&released_lock);
    released_contexts++;
    pthread_mutex_unlock(&released_lock);
}

static volatile int slow_inside;

static void slow_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct slow_context *slow = context;
    (void)store;
    (void)name;
    (void)version;
    slow_inside = 1;
    sleep_ms(30);
    slow->touched++; /* after the removal on the other thread */
    memset(slow->bytes, (int)(version & 0x7f), sizeof slow->bytes);
}

struct remover {
    rdx_store *store;
    uint64_t token;
    rdx_status status;
};

static void removing_reduce(json_object *state, const char *identifier, json_object *payload,
                            void *context)
{
    struct remover *remover = context;
    (void)state;
    (void)payload;
    if (strcmp(identifier, "remove") == 0) {
        /* Inside a reducer: does not wait for the call on the other thread. */
        remover->status = rdx_store_remove_observer(remover->store, remover->token);
    }
}

static void *dispatch_once(void *argument)
{
    rdx_store_dispatch_action((rdx_store *)argument, "tick", NULL);
    return NULL;
}

static void test_reducer_removes_running_observer(void)
{
    struct remover remover;
    rdx_reducer reducer = {0};
    struct slow_context *slow = calloc(1, sizeof *slow);
    pthread_t thread;

    TEST("reducer_removes_running_observer");
    released_contexts = 0;
    slow_inside = 0;
    reducer.reduce = removing_reduce;
    reducer.context = &remover;
    remover.status = RDX_ENOMEM;
    remover.store = util_store(&reducer, 1);
    CHECK(remover.store != NULL && slow != NULL);
    if (remover.store == NULL || slow == NULL) return;
    remover.token = rdx_store_add_observer_full(remover.store, NULL, slow_observer, slow,
                                                free_slow_context);
    CHECK(remover.token != 0);
    pthread_create(&thread, NULL, dispatch_once, remover.store);
    while (!slow_inside) sched_yield();
    /* The observer is running on the other thread: remove it from inside a reducer. */
    CHECK_STATUS(rdx_store_dispatch_action(remover.store, "remove", NULL), RDX_OK);
    CHECK_STATUS(remover.status, RDX_OK);
    pthread_join(thread, NULL);
    /* The context was released once, after the running call ended. */
    CHECK_EQ_INT(released_contexts, 1);
    /* Never called again. */
    CHECK_STATUS(rdx_store_dispatch_action(remover.store, "tick", NULL), RDX_OK);
    CHECK_EQ_INT(released_contexts, 1);
    rdx_store_release(remover.store);
    CHECK_EQ_INT(released_contexts, 1);
}

/* Outside callbacks, removal waits for the running call and for the release callback. */
static void test_removal_outside_waits_for_release(void)
{
    rdx_store *store = util_counter_store();
    struct slow_context *slow = calloc(1, sizeof *slow);
    pthread_t thread;
    uint64_t token;

    TEST("removal_outside_waits_for_release");
    released_contexts = 0;
    slow_inside = 0;
    CHECK(store != NULL && slow != NULL);
    if (store == NULL || slow == NULL) return;
    token = rdx_store_add_observer_full(store, NULL, slow_observer, slow, free_slow_context);
    pthread_create(&thread, NULL, dispatch_once, store);
    while (!slow_inside) sched_yield();
    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    CHECK_EQ_INT(released_contexts, 1); /* already released when removal returned */
    pthread_join(thread, NULL);
    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_EINVAL);
    CHECK_EQ_INT(released_contexts, 1);
    rdx_store_release(store);
}

/* The store's last release releases the contexts of observers still registered, once each. */
static void count_release(void *context)
{
    (*(int *)context)++;
}

static void nothing_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    (void)store;
    (void)name;
    (void)version;
    (void)context;
}

static void test_last_release_releases_contexts(void)
{
    rdx_store *store = util_counter_store();
    int released[3] = {0, 0, 0};
    uint64_t removed;

    TEST("last_release_releases_contexts");
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK(rdx_store_add_observer_full(store, NULL, nothing_observer, &released[0], count_release) != 0);
    removed = rdx_store_add_observer_full(store, NULL, nothing_observer, &released[1], count_release);
    CHECK(rdx_store_add_observer_full(store, NULL, nothing_observer, &released[2], NULL) != 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_remove_observer(store, removed), RDX_OK);
    CHECK_EQ_INT(released[1], 1);
    CHECK_EQ_INT(released[0], 0);
    rdx_store_release(store);
    CHECK_EQ_INT(released[0], 1);
    CHECK_EQ_INT(released[1], 1);
    CHECK_EQ_INT(released[2], 0); /* no release function: nothing called */
}

/* An observer that releases the last reference to the store it was handed, during its call. */
static void releasing_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    int *calls = context;
    (void)name;
    (void)version;
    (*calls)++;
    rdx_store_release(store);
    /* The store pointer stays valid for the rest of the call. */
    (void)rdx_store_version(store);
}

static void test_observer_releases_last_reference(void)
{
    rdx_store *store = util_counter_store();
    int calls = 0;

    TEST("observer_releases_last_reference");
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK(rdx_store_add_observer(store, NULL, releasing_observer, &calls) != 0);
    /* The caller hands its reference to the observer: the dispatch holds its own for the call. */
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(calls, 1);
}

/* ---- 4. Two observers removing each other on two threads; removals racing flushes. */

struct pair {
    rdx_store *store;
    uint64_t tokens[2];
    pthread_t threads[2];
    pthread_barrier_t inside;  /* both observers are running, each on its own thread */
    int removals_ok;
    pthread_mutex_t lock;
};

/* Observer `me` acts only on thread `me`: thread 0 is inside observer 0 while thread 1 is inside
 * observer 1; then each removes the other. */
static void mutual_observer(void *context, int me)
{
    struct pair *pair = context;
    rdx_status status;
    if (!pthread_equal(pthread_self(), pair->threads[me])) return;
    pthread_barrier_wait(&pair->inside);
    status = rdx_store_remove_observer(pair->store, pair->tokens[1 - me]);
    pthread_mutex_lock(&pair->lock);
    if (status == RDX_OK) pair->removals_ok++;
    pthread_mutex_unlock(&pair->lock);
}

static void mutual_first(rdx_store *store, const char *name, uint64_t version, void *context)
{
    (void)store;
    (void)name;
    (void)version;
    mutual_observer(context, 0);
}

static void mutual_second(rdx_store *store, const char *name, uint64_t version, void *context)
{
    (void)store;
    (void)name;
    (void)version;
    mutual_observer(context, 1);
}

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;

static void *dispatch_tick(void *argument)
{
    struct pair *pair = argument;
    /* Wait until both thread ids are recorded. */
    pthread_mutex_lock(&start_lock);
    pthread_mutex_unlock(&start_lock);
    rdx_store_dispatch_action(pair->store, "inc", NULL);
    return NULL;
}

static void test_observers_remove_each_other(void)
{
    struct pair pair;
    int round;

    TEST("observers_remove_each_other");
    for (round = 0; round < (util_small() ? 5 : 50); round++) {
        memset(&pair, 0, sizeof pair);
        pthread_mutex_init(&pair.lock, NULL);
        pthread_barrier_init(&pair.inside, NULL, 2);
        pair.store = util_counter_store();
        CHECK(pair.store != NULL);
        if (pair.store == NULL) return;
        pair.tokens[0] = rdx_store_add_observer(pair.store, NULL, mutual_first, &pair);
        pair.tokens[1] = rdx_store_add_observer(pair.store, NULL, mutual_second, &pair);
        pthread_mutex_lock(&start_lock);
        pthread_create(&pair.threads[0], NULL, dispatch_tick, &pair);
        pthread_create(&pair.threads[1], NULL, dispatch_tick, &pair);
        pthread_mutex_unlock(&start_lock);
        pthread_join(pair.threads[0], NULL);
        pthread_join(pair.threads[1], NULL);
        /* Both removals returned (no deadlock), each removing the other's observer. */
        CHECK_EQ_INT(pair.removals_ok, 2);
        CHECK_EQ_INT(util_count(pair.store), 2);
        rdx_store_release(pair.store);
        pthread_barrier_destroy(&pair.inside);
        pthread_mutex_destroy(&pair.lock);
    }
}

struct churn {
    rdx_store *store;
    volatile int stop;
    int removed;
};

static void churn_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct churn *churn = context;
    uint64_t token;
    (void)name;
    (void)version;
    /* From an observer of an enqueued action (on the queue's thread): add one and remove it. */
    token = rdx_store_add_observer(store, NULL, nothing_observer, NULL);
    if (rdx_store_remove_observer(store, token) == RDX_OK) churn->removed++;
}

static void *churn_flusher(void *argument)
{
    struct churn *churn = argument;
    int i;
    for (i = 0; !churn->stop && i < 100000; i++) {
        rdx_store_enqueue_action(churn->store, "inc", NULL);
        rdx_store_flush(churn->store);
    }
    return NULL;
}

static void *churn_remover(void *argument)
{
    struct churn *churn = argument;
    int i;
    for (i = 0; !churn->stop && i < 100000; i++) {
        uint64_t token = rdx_store_add_observer(churn->store, NULL, churn_observer, churn);
        rdx_store_flush(churn->store);
        rdx_store_remove_observer(churn->store, token);
    }
    return NULL;
}

static void test_removals_race_flushes(void)
{
    struct churn churn;
    pthread_t threads[3];
    int rounds = util_small() ? 50 : 400;
    int i;

    TEST("removals_race_flushes");
    memset(&churn, 0, sizeof churn);
    churn.store = util_counter_store();
    CHECK(churn.store != NULL);
    if (churn.store == NULL) return;
    pthread_create(&threads[0], NULL, churn_flusher, &churn);
    pthread_create(&threads[1], NULL, churn_remover, &churn);
    pthread_create(&threads[2], NULL, churn_remover, &churn);
    for (i = 0; i < rounds; i++) sleep_ms(1);
    churn.stop = 1;
    for (i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    CHECK_STATUS(rdx_store_flush(churn.store), RDX_OK);
    CHECK(util_count(churn.store) >= 1);
    rdx_store_release(churn.store);
}

/* ---- 5. A queue that never runs empty: memory follows the backlog, not the history. */

static long resident_kib(void)
{
    long pages = 0, resident = 0;
    FILE *file = fopen("/proc/self/statm", "r");
    if (file == NULL) return -1;
    if (fscanf(file, "%ld %ld", &pages, &resident) != 2) resident = -1;
    fclose(file);
    return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

struct chain {
    json_object *payload;  /* 64 KiB of text, copied by every enqueue */
    int remaining;
    long peak_kib;
    long start_kib;
};

static void chain_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct chain *chain = context;
    long now;
    (void)name;
    (void)version;
    if (chain->remaining <= 0) return;
    chain->remaining--;
    rdx_store_enqueue_action(store, "chunk", chain->payload);
    now = resident_kib();
    if (now > chain->peak_kib) chain->peak_kib = now;
}

static void test_endless_queue_memory(void)
{
    struct chain chain;
    char *text = malloc(64 * 1024 + 1);
    rdx_store *store = util_counter_store();
    int actions = util_small() ? 600 : 6000; /* 37 MiB or 375 MiB of history */
    int i;

    TEST("endless_queue_memory");
    CHECK(store != NULL && text != NULL);
    if (store == NULL || text == NULL) return;
    memset(text, 'x', 64 * 1024);
    text[64 * 1024] = '\0';
    chain.payload = json_object_new_string(text);
    free(text);
    chain.remaining = actions;
    chain.start_kib = chain.peak_kib = resident_kib();
    CHECK(rdx_store_add_observer(store, NULL, chain_observer, &chain) != 0);
    /* Two chains, so the queue always has a backlog while the observer runs. */
    for (i = 0; i < 2; i++) CHECK_STATUS(rdx_store_enqueue_action(store, "chunk", chain.payload), RDX_OK);
    while (chain.remaining > 0) sleep_ms(5);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), actions + 2);
    /* The history was tens or hundreds of MiB; the backlog never more than a few actions. */
    if (!util_small()) CHECK(chain.peak_kib - chain.start_kib < 32 * 1024);
    rdx_store_release(store);
    json_object_put(chain.payload);
}

/* ---- fork(): a child may not enqueue or flush (libdispatch does not run there), and never hangs. */

static void test_fork_child(void)
{
    rdx_store *store = util_counter_store();
    pid_t child;
    int status = 0;
    int waited = 0;

    TEST("fork_child");
    CHECK(store != NULL);
    if (store == NULL) return;
    CHECK_STATUS(rdx_store_enqueue_action(store, "inc", NULL), RDX_OK);
    child = fork();
    if (child == 0) {
        int code = 0;
        rdx_store *own;
        json_object *state;
        alarm(10);
        if (rdx_store_enqueue_action(store, "inc", NULL) != RDX_EINVAL) code |= 1;
        if (strstr(rdx_last_error(), "fork") == NULL) code |= 2;
        if (rdx_store_flush(store) != RDX_EINVAL) code |= 4;
        /* A store the child makes itself dispatches, observes and snapshots; no queue. */
        own = util_counter_store();
        if (rdx_store_enqueue_action(own, "inc", NULL) != RDX_EINVAL) code |= 8;
        if (rdx_store_dispatch_action(own, "inc", NULL) != RDX_OK) code |= 16;
        state = rdx_store_current_state(own);
        if (util_int(state, "count") != 1) code |= 32;
        json_object_put(state);
        rdx_store_release(own);
        /* Report through exec, so that a leak checker watching this process does not count
         * what the child inherited and never frees. */
        {
            char command[32];
            snprintf(command, sizeof command, "exit %d", code);
            execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        }
        _exit(code);
    }
    CHECK(child > 0);
    while (waited < 200 && waitpid(child, &status, WNOHANG) == 0) {
        sleep_ms(50);
        waited++;
    }
    if (waited == 200) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
    }
    CHECK(WIFEXITED(status));
    CHECK_EQ_INT(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_EQ_INT(util_count(store), 1);
    rdx_store_release(store);
}

int main(void)
{
    test_retain_while_last_release_drains();
    test_enqueue_while_last_release_drains();
    test_reducer_removes_running_observer();
    test_removal_outside_waits_for_release();
    test_last_release_releases_contexts();
    test_observer_releases_last_reference();
    test_observers_remove_each_other();
    test_removals_race_flushes();
    test_endless_queue_memory();
    test_fork_child();
    return check_report();
}
