/*
 * test_observers.c — observers: called once per action, after the store's lock was released,
 * with the store, the notification's name, the new version and their context; name filters;
 * order of calls; tokens; removal (by token, of itself inside the callback, inside a reducer,
 * from another thread while the observer runs); and observers calling rdx_ functions.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "check.h"
#include "util.h"

/* What an observer saw: how often it was called, with what. */
struct seen {
    int calls;
    rdx_store *store;
    char name[128];
    uint64_t versions[16];
    int64_t counts[16]; /* state.count read from inside the observer */
    void *context;
};

static void record_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct seen *seen = (struct seen *)context;
    if (seen->calls < 16) {
        seen->versions[seen->calls] = version;
        seen->counts[seen->calls] = util_count(store);
    }
    seen->calls++;
    seen->store = store;
    seen->context = context;
    snprintf(seen->name, sizeof seen->name, "%s", name == NULL ? "(NULL)" : name);
}

/* Sleeps for `milliseconds`. */
static void sleep_ms(long milliseconds)
{
    struct timespec pause;
    pause.tv_sec = milliseconds / 1000;
    pause.tv_nsec = (milliseconds % 1000) * 1000000L;
    nanosleep(&pause, NULL);
}

/*
 * An observer hears nothing when added, then once per action (dispatched, dispatched as JSON,
 * or enqueued), with this store, the state-did-change name, the new version and its context;
 * reading the state from inside it gives the state of that version.
 */
static void test_called_once_per_action(void)
{
    rdx_store *store = util_counter_store();
    struct seen seen;
    uint64_t token;
    int i;

    TEST("called_once_per_action");
    memset(&seen, 0, sizeof seen);
    CHECK(store != NULL);
    if (store == NULL) return;
    token = rdx_store_add_observer(store, NULL, record_observer, &seen);
    CHECK(token != 0);
    CHECK_EQ_INT(seen.calls, 0); /* not called at once */
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_json(store, "{\"identifier\": \"inc\"}"), RDX_OK);
    CHECK_STATUS(rdx_store_enqueue_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_EQ_INT(seen.calls, 4);
    for (i = 0; i < 4; i++) {
        CHECK_EQ_INT(seen.versions[i], i + 1);
        CHECK_EQ_INT(seen.counts[i], i + 1);
    }
    CHECK(seen.store == store);
    CHECK(seen.context == &seen);
    CHECK_STR(seen.name, RDX_STATE_DID_CHANGE_NOTIFICATION);
    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    rdx_store_release(store);
}

/*
 * The name filter: an observer of RDX_STATE_DID_CHANGE_NOTIFICATION hears every action, one of
 * another name hears none, one with NULL hears all. The name is borrowed: the caller's buffer
 * may change after the call.
 */
static void test_name_filter(void)
{
    rdx_store *store = util_counter_store();
    struct seen exact, other, all;
    char name[64];
    uint64_t tokens[3];
    int i;

    TEST("name_filter");
    memset(&exact, 0, sizeof exact);
    memset(&other, 0, sizeof other);
    memset(&all, 0, sizeof all);
    CHECK(store != NULL);
    if (store == NULL) return;
    snprintf(name, sizeof name, "%s", RDX_STATE_DID_CHANGE_NOTIFICATION);
    tokens[0] = rdx_store_add_observer(store, name, record_observer, &exact);
    snprintf(name, sizeof name, "%s", "garbage the store must not have kept");
    tokens[1] = rdx_store_add_observer(store, "SomeOtherNotification", record_observer, &other);
    tokens[2] = rdx_store_add_observer(store, NULL, record_observer, &all);
    for (i = 0; i < 3; i++) CHECK(tokens[i] != 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(exact.calls, 2);
    CHECK_EQ_INT(other.calls, 0);
    CHECK_EQ_INT(all.calls, 2);
    CHECK_STR(exact.name, RDX_STATE_DID_CHANGE_NOTIFICATION);
    CHECK_STR(all.name, RDX_STATE_DID_CHANGE_NOTIFICATION);
    for (i = 0; i < 3; i++) CHECK_STATUS(rdx_store_remove_observer(store, tokens[i]), RDX_OK);
    rdx_store_release(store);
}

/* Tokens are never 0 and all different; observers of one round are called in the order added. */
static char order_log[64];
static void order_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    size_t length = strlen(order_log);
    (void)store;
    (void)name;
    (void)version;
    if (length + 1 < sizeof order_log) {
        order_log[length] = *(const char *)context;
        order_log[length + 1] = '\0';
    }
}

static void test_tokens_and_order(void)
{
    static const char ids[] = "0123456789";
    rdx_store *store = util_counter_store();
    uint64_t tokens[10];
    int i, j;

    TEST("tokens_and_order");
    CHECK(store != NULL);
    if (store == NULL) return;
    for (i = 0; i < 10; i++) {
        tokens[i] = rdx_store_add_observer(store, NULL, order_observer, (void *)&ids[i]);
        CHECK(tokens[i] != 0);
        for (j = 0; j < i; j++) CHECK(tokens[i] != tokens[j]);
    }
    order_log[0] = '\0';
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STR(order_log, "0123456789");
    /* Removing one from the middle keeps the others' order. */
    CHECK_STATUS(rdx_store_remove_observer(store, tokens[4]), RDX_OK);
    order_log[0] = '\0';
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STR(order_log, "012356789");
    rdx_store_release(store); /* with nine observers still registered: nothing leaks */
}

/*
 * Removal by token: the observer is never called again. Removing it again, token 0, a token
 * never handed out, and another store's token are RDX_EINVAL with words, and change nothing.
 */
static void test_remove_by_token(void)
{
    rdx_store *store = util_counter_store();
    rdx_store *other_store = util_counter_store();
    struct seen seen, other_seen;
    uint64_t token, other_token;

    TEST("remove_by_token");
    memset(&seen, 0, sizeof seen);
    memset(&other_seen, 0, sizeof other_seen);
    CHECK(store != NULL && other_store != NULL);
    if (store == NULL || other_store == NULL) return;
    token = rdx_store_add_observer(store, NULL, record_observer, &seen);
    other_token = rdx_store_add_observer(other_store, NULL, record_observer, &other_seen);
    CHECK(token != 0 && other_token != 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(seen.calls, 1);

    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(seen.calls, 1);

    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_EINVAL);
    CHECK(rdx_last_error()[0] != '\0');
    CHECK_STATUS(rdx_store_remove_observer(store, 0), RDX_EINVAL);
    CHECK(rdx_last_error()[0] != '\0');
    CHECK_STATUS(rdx_store_remove_observer(store, token + 1000003), RDX_EINVAL);
    CHECK_STATUS(rdx_store_remove_observer(store, UINT64_MAX), RDX_EINVAL);
    if (other_token != token) {
        /* Another store's token is unknown here, and that observer stays registered there. */
        CHECK_STATUS(rdx_store_remove_observer(store, other_token), RDX_EINVAL);
    }
    CHECK_STATUS(rdx_store_dispatch_action(other_store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(other_seen.calls, 1);
    CHECK_EQ_INT(rdx_store_version(store), 2);
    CHECK_STATUS(rdx_store_remove_observer(other_store, other_token), RDX_OK);
    rdx_store_release(store);
    rdx_store_release(other_store);
}

/* An observer that removes itself inside its callback is called once; the round goes on. */
struct self_remover {
    uint64_t token;
    int calls;
    rdx_status removal;
};

static void self_removing_observer(rdx_store *store, const char *name, uint64_t version,
                                   void *context)
{
    struct self_remover *self = (struct self_remover *)context;
    (void)name;
    (void)version;
    self->calls++;
    self->removal = rdx_store_remove_observer(store, self->token);
}

static void test_remove_self_inside_callback(void)
{
    rdx_store *store = util_counter_store();
    struct self_remover self;
    struct seen after;
    uint64_t after_token;

    TEST("remove_self_inside_callback");
    memset(&self, 0, sizeof self);
    memset(&after, 0, sizeof after);
    self.removal = RDX_ENOMEM;
    CHECK(store != NULL);
    if (store == NULL) return;
    self.token = rdx_store_add_observer(store, NULL, self_removing_observer, &self);
    after_token = rdx_store_add_observer(store, NULL, record_observer, &after);
    CHECK(self.token != 0 && after_token != 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(self.calls, 1);
    CHECK_STATUS(self.removal, RDX_OK);
    CHECK_EQ_INT(after.calls, 3); /* the observer after it still heard every action */
    CHECK_STATUS(rdx_store_remove_observer(store, self.token), RDX_EINVAL);
    CHECK_STATUS(rdx_store_remove_observer(store, after_token), RDX_OK);
    rdx_store_release(store);
}

/*
 * An observer may call any rdx_ function. This one reads the state and the version, and on the
 * first action dispatches another one: that one is applied at once, but its notification comes
 * after the current round, so both observers see versions 1 then 2, and the outer dispatch
 * returns after both rounds.
 */
static char busy_log[128];
struct busy {
    char tag;
    int dispatch_on_first;
    rdx_status statuses[4];
    int status_count;
    int64_t counts[4];
    uint64_t read_versions[4];
    int calls;
};

static void busy_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct busy *busy = (struct busy *)context;
    size_t length = strlen(busy_log);
    (void)name;
    if (length + 3 < sizeof busy_log) {
        busy_log[length] = busy->tag;
        busy_log[length + 1] = (char)('0' + (int)version);
        busy_log[length + 2] = ' ';
        busy_log[length + 3] = '\0';
    }
    if (busy->calls < 4) {
        busy->counts[busy->calls] = util_count(store);
        busy->read_versions[busy->calls] = rdx_store_version(store);
    }
    busy->calls++;
    if (busy->dispatch_on_first && version == 1) {
        json_object *payload = json_object_new_int(10);
        busy->statuses[busy->status_count++] = rdx_store_dispatch_action(store, "add", payload);
        json_object_put(payload);
        busy->statuses[busy->status_count++] =
            rdx_store_dispatch_json(store, "{\"identifier\": \"add\", \"payload\": 100}");
    }
}

static void test_observer_calls_rdx_functions(void)
{
    rdx_store *store = util_counter_store();
    struct busy first, second;
    uint64_t first_token, second_token;
    int i;

    TEST("observer_calls_rdx_functions");
    memset(&first, 0, sizeof first);
    memset(&second, 0, sizeof second);
    first.tag = 'A';
    first.dispatch_on_first = 1;
    second.tag = 'B';
    busy_log[0] = '\0';
    CHECK(store != NULL);
    if (store == NULL) return;
    first_token = rdx_store_add_observer(store, NULL, busy_observer, &first);
    second_token = rdx_store_add_observer(store, NULL, busy_observer, &second);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    /* Everything happened before the outer dispatch returned. */
    CHECK_EQ_INT(rdx_store_version(store), 3);
    CHECK_EQ_INT(util_count(store), 111);
    CHECK_STR(busy_log, "A1 B1 A2 B2 A3 B3 ");
    CHECK_EQ_INT(first.status_count, 2);
    for (i = 0; i < first.status_count; i++) CHECK_STATUS(first.statuses[i], RDX_OK);
    /* Reads from inside the observer did not deadlock and saw a state at or after its version. */
    CHECK_EQ_INT(first.calls, 3);
    CHECK_EQ_INT(second.calls, 3);
    CHECK(second.read_versions[0] >= 1 && second.counts[0] >= 1);
    CHECK_EQ_INT(second.read_versions[2], 3);
    CHECK_EQ_INT(second.counts[2], 111);
    CHECK_STATUS(rdx_store_remove_observer(store, first_token), RDX_OK);
    CHECK_STATUS(rdx_store_remove_observer(store, second_token), RDX_OK);
    rdx_store_release(store);
}

/*
 * An observer runs after the store's lock was released: another thread can read the state and
 * the version, and dispatch, while the observer waits for it.
 */
struct helper_run {
    rdx_store *store;
    pthread_mutex_t lock;
    pthread_cond_t done_signal;
    int done;
    int64_t count;
    uint64_t version;
    rdx_status status;
};

static void *helper_thread(void *argument)
{
    struct helper_run *run = (struct helper_run *)argument;
    int64_t count = util_count(run->store);
    uint64_t version = rdx_store_version(run->store);
    rdx_status status = rdx_store_dispatch_action(run->store, "noop", NULL);
    pthread_mutex_lock(&run->lock);
    run->count = count;
    run->version = version;
    run->status = status;
    run->done = 1;
    pthread_cond_signal(&run->done_signal);
    pthread_mutex_unlock(&run->lock);
    return NULL;
}

struct unlocked_probe {
    int calls;
    int helper_finished; /* the helper thread finished within 10 s */
    int64_t helper_count;
    uint64_t helper_version;
    rdx_status helper_status;
};

static void lock_probe_observer(rdx_store *store, const char *name, uint64_t version,
                                void *context)
{
    struct unlocked_probe *probe = (struct unlocked_probe *)context;
    struct helper_run run;
    struct timespec deadline;
    pthread_t thread;
    (void)name;
    (void)version;
    if (probe->calls++ > 0) return; /* only the first notification probes */
    memset(&run, 0, sizeof run);
    run.store = store;
    pthread_mutex_init(&run.lock, NULL);
    pthread_cond_init(&run.done_signal, NULL);
    if (pthread_create(&thread, NULL, helper_thread, &run) != 0) return;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 10;
    pthread_mutex_lock(&run.lock);
    while (!run.done) {
        if (pthread_cond_timedwait(&run.done_signal, &run.lock, &deadline) != 0) break;
    }
    probe->helper_finished = run.done;
    probe->helper_count = run.count;
    probe->helper_version = run.version;
    probe->helper_status = run.status;
    pthread_mutex_unlock(&run.lock);
    if (!run.done) {
        /* The helper is blocked on the store's lock: the contract is broken; stop here. */
        CHECK(!"an observer ran while the store's lock was held (helper thread blocked)");
        exit(check_report());
    }
    pthread_join(thread, NULL);
    pthread_cond_destroy(&run.done_signal);
    pthread_mutex_destroy(&run.lock);
}

static void test_observer_runs_after_lock_released(void)
{
    rdx_store *store = util_counter_store();
    struct unlocked_probe probe;
    uint64_t token;

    TEST("observer_runs_after_lock_released");
    memset(&probe, 0, sizeof probe);
    CHECK(store != NULL);
    if (store == NULL) return;
    token = rdx_store_add_observer(store, NULL, lock_probe_observer, &probe);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK(probe.helper_finished);
    CHECK_EQ_INT(probe.helper_count, 1);
    CHECK_EQ_INT(probe.helper_version, 1);
    CHECK_STATUS(probe.helper_status, RDX_OK);
    CHECK_EQ_INT(probe.calls, 2); /* its own action, then the helper's */
    CHECK_EQ_INT(rdx_store_version(store), 2);
    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    rdx_store_release(store);
}

/* An observer added during a notification first hears the next action. */
struct adder {
    struct seen *late;
    uint64_t late_token;
};

static void adding_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct adder *adder = (struct adder *)context;
    (void)name;
    (void)version;
    if (adder->late_token == 0)
        adder->late_token = rdx_store_add_observer(store, NULL, record_observer, adder->late);
}

static void test_add_inside_observer(void)
{
    rdx_store *store = util_counter_store();
    struct seen late;
    struct adder adder;
    uint64_t token;

    TEST("add_inside_observer");
    memset(&late, 0, sizeof late);
    adder.late = &late;
    adder.late_token = 0;
    CHECK(store != NULL);
    if (store == NULL) return;
    token = rdx_store_add_observer(store, NULL, adding_observer, &adder);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK(adder.late_token != 0);
    CHECK_EQ_INT(late.calls, 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(late.calls, 1);
    CHECK_EQ_INT(late.versions[0], 2);
    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    CHECK_STATUS(rdx_store_remove_observer(store, adder.late_token), RDX_OK);
    rdx_store_release(store);
}

/*
 * Inside a reducer: an observer removed there is not told of that action; one added there first
 * hears the next action. Both calls succeed and nothing deadlocks.
 */
struct reducer_edit {
    rdx_store *store;
    uint64_t remove_token;
    rdx_status removal;
    struct seen *added;
    uint64_t added_token;
};

static void editing_reduce(json_object *state, const char *identifier, json_object *payload,
                           void *context)
{
    struct reducer_edit *edit = (struct reducer_edit *)context;
    (void)state;
    (void)payload;
    if (strcmp(identifier, "remove") == 0) {
        edit->removal = rdx_store_remove_observer(edit->store, edit->remove_token);
    } else if (strcmp(identifier, "add") == 0) {
        edit->added_token = rdx_store_add_observer(edit->store, NULL, record_observer, edit->added);
    }
}

static void test_observers_edited_inside_reducer(void)
{
    struct reducer_edit edit;
    struct seen removed, added;
    rdx_reducer reducer = {0};
    uint64_t token;

    TEST("observers_edited_inside_reducer");
    memset(&edit, 0, sizeof edit);
    memset(&removed, 0, sizeof removed);
    memset(&added, 0, sizeof added);
    edit.removal = RDX_ENOMEM;
    edit.added = &added;
    reducer.reduce = editing_reduce;
    reducer.context = &edit;
    edit.store = util_store(&reducer, 1);
    CHECK(edit.store != NULL);
    if (edit.store == NULL) return;
    token = rdx_store_add_observer(edit.store, NULL, record_observer, &removed);
    edit.remove_token = token;
    CHECK_STATUS(rdx_store_dispatch_action(edit.store, "other", NULL), RDX_OK);
    CHECK_EQ_INT(removed.calls, 1);
    CHECK_STATUS(rdx_store_dispatch_action(edit.store, "remove", NULL), RDX_OK);
    CHECK_STATUS(edit.removal, RDX_OK);
    CHECK_EQ_INT(removed.calls, 1); /* not told of the action that removed it */

    CHECK_STATUS(rdx_store_dispatch_action(edit.store, "add", NULL), RDX_OK);
    CHECK(edit.added_token != 0);
    CHECK_EQ_INT(added.calls, 0); /* not told of the action that added it */
    CHECK_STATUS(rdx_store_dispatch_action(edit.store, "other", NULL), RDX_OK);
    CHECK_EQ_INT(added.calls, 1);
    CHECK_EQ_INT(added.versions[0], 4);
    CHECK_STATUS(rdx_store_remove_observer(edit.store, edit.added_token), RDX_OK);
    rdx_store_release(edit.store);
}

/*
 * Actions dispatched from inside a reducer are notified right after the current one, in version
 * order, each once.
 */
struct chain {
    rdx_store *store;
};

static void chain_reduce(json_object *state, const char *identifier, json_object *payload,
                         void *context)
{
    struct chain *chain = (struct chain *)context;
    (void)state;
    (void)payload;
    if (strcmp(identifier, "start") == 0) {
        rdx_store_dispatch_action(chain->store, "second", NULL);
        rdx_store_dispatch_action(chain->store, "third", NULL);
    }
}

static void test_nested_dispatch_notifications(void)
{
    struct chain chain;
    struct seen seen;
    rdx_reducer reducer = {0};
    uint64_t token;
    int i;

    TEST("nested_dispatch_notifications");
    memset(&seen, 0, sizeof seen);
    reducer.reduce = chain_reduce;
    reducer.context = &chain;
    chain.store = util_store(&reducer, 1);
    CHECK(chain.store != NULL);
    if (chain.store == NULL) return;
    token = rdx_store_add_observer(chain.store, NULL, record_observer, &seen);
    CHECK_STATUS(rdx_store_dispatch_action(chain.store, "start", NULL), RDX_OK);
    CHECK_EQ_INT(seen.calls, 3);
    for (i = 0; i < 3; i++) CHECK_EQ_INT(seen.versions[i], i + 1);
    CHECK_STATUS(rdx_store_remove_observer(chain.store, token), RDX_OK);
    rdx_store_release(chain.store);
}

/*
 * Removal from another thread waits for a call of that observer that is running: once
 * rdx_store_remove_observer() returns, the call has finished, so the context may be freed at once
 * (valgrind would see a later call touch freed memory).
 */
struct slow {
    pthread_mutex_t lock;
    pthread_cond_t entered_signal;
    int entered;
    int finished;
    int calls;
};

static void slow_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct slow *slow = (struct slow *)context;
    (void)store;
    (void)name;
    (void)version;
    pthread_mutex_lock(&slow->lock);
    slow->calls++;
    slow->entered = 1;
    pthread_cond_signal(&slow->entered_signal);
    pthread_mutex_unlock(&slow->lock);
    sleep_ms(300);
    pthread_mutex_lock(&slow->lock);
    slow->finished = 1;
    pthread_mutex_unlock(&slow->lock);
}

static void *dispatch_once_thread(void *argument)
{
    rdx_store *store = (rdx_store *)argument;
    rdx_store_dispatch_action(store, "inc", NULL);
    return NULL;
}

static void test_remove_waits_for_running_call(void)
{
    rdx_store *store = util_counter_store();
    struct slow *slow = (struct slow *)calloc(1, sizeof *slow);
    pthread_t thread;
    uint64_t token;
    int finished;

    TEST("remove_waits_for_running_call");
    CHECK(store != NULL && slow != NULL);
    if (store == NULL || slow == NULL) return;
    pthread_mutex_init(&slow->lock, NULL);
    pthread_cond_init(&slow->entered_signal, NULL);
    token = rdx_store_add_observer(store, NULL, slow_observer, slow);
    CHECK(token != 0);
    CHECK(pthread_create(&thread, NULL, dispatch_once_thread, store) == 0);
    pthread_mutex_lock(&slow->lock);
    while (!slow->entered) pthread_cond_wait(&slow->entered_signal, &slow->lock);
    pthread_mutex_unlock(&slow->lock);

    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    pthread_mutex_lock(&slow->lock);
    finished = slow->finished;
    pthread_mutex_unlock(&slow->lock);
    CHECK(finished); /* the running call was waited for */
    CHECK_EQ_INT(slow->calls, 1);
    pthread_cond_destroy(&slow->entered_signal);
    pthread_mutex_destroy(&slow->lock);
    free(slow); /* allowed right after removal */

    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    pthread_join(thread, NULL);
    CHECK_EQ_INT(rdx_store_version(store), 2);
    rdx_store_release(store);
}

/*
 * An observer of an enqueued action runs on the store's queue and may call rdx_store_flush():
 * it does not deadlock waiting for itself, and the actions enqueued before its flush (those the
 * main thread had enqueued by then, and its own) are applied when it returns. And the main
 * thread's rdx_store_flush() still returns only once every action enqueued before it was applied
 * AND its observers ran. To pin that case down, the observer's first call waits until the main
 * thread enqueued all five and (50 ms later) called flush; its later calls are slow, so that a
 * too-early return of the main thread's flush shows.
 */
struct flusher {
    pthread_mutex_t lock;
    pthread_cond_t all_enqueued;
    int main_enqueued; /* how many actions the main thread had enqueued */
    int calls;
    int seen_main_enqueued;
    rdx_status flush_status;
    uint64_t version_after_flush;
    rdx_status enqueue_status;
};

static void flushing_observer(rdx_store *store, const char *name, uint64_t version, void *context)
{
    struct flusher *flusher = (struct flusher *)context;
    int first;
    (void)name;
    (void)version;
    pthread_mutex_lock(&flusher->lock);
    first = flusher->calls == 0;
    while (first && flusher->main_enqueued < 5) pthread_cond_wait(&flusher->all_enqueued, &flusher->lock);
    flusher->seen_main_enqueued = first ? flusher->main_enqueued : flusher->seen_main_enqueued;
    pthread_mutex_unlock(&flusher->lock);
    if (first) {
        sleep_ms(50); /* the main thread is in rdx_store_flush() by now */
        flusher->enqueue_status = rdx_store_enqueue_action(store, "inc", NULL);
        flusher->flush_status = rdx_store_flush(store);
        flusher->version_after_flush = rdx_store_version(store);
    } else {
        sleep_ms(30);
    }
    pthread_mutex_lock(&flusher->lock);
    flusher->calls++;
    pthread_mutex_unlock(&flusher->lock);
}

static void test_flush_inside_observer(void)
{
    rdx_store *store = util_counter_store();
    struct flusher flusher;
    uint64_t token;
    int i, calls;

    TEST("flush_inside_observer");
    memset(&flusher, 0, sizeof flusher);
    pthread_mutex_init(&flusher.lock, NULL);
    pthread_cond_init(&flusher.all_enqueued, NULL);
    CHECK(store != NULL);
    if (store == NULL) return;
    token = rdx_store_add_observer(store, NULL, flushing_observer, &flusher);
    for (i = 0; i < 5; i++) {
        CHECK_STATUS(rdx_store_enqueue_action(store, "inc", NULL), RDX_OK);
        pthread_mutex_lock(&flusher.lock);
        flusher.main_enqueued++;
        pthread_cond_broadcast(&flusher.all_enqueued);
        pthread_mutex_unlock(&flusher.lock);
    }
    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    /* The five enqueued before this flush were applied, and their observer calls ran. */
    pthread_mutex_lock(&flusher.lock);
    calls = flusher.calls;
    pthread_mutex_unlock(&flusher.lock);
    CHECK(rdx_store_version(store) >= 5);
    if (!CHECK(calls >= 5))
        fprintf(stderr, "    rdx_store_flush returned after %d observer calls, expected >= 5\n", calls);

    CHECK_STATUS(rdx_store_flush(store), RDX_OK);
    CHECK_STATUS(flusher.enqueue_status, RDX_OK);
    CHECK_STATUS(flusher.flush_status, RDX_OK);
    /* The observer's flush applied what was enqueued before it, its own action included. */
    CHECK_EQ_INT(flusher.seen_main_enqueued, 5);
    CHECK_EQ_INT(flusher.version_after_flush, 6);
    CHECK_EQ_INT(rdx_store_version(store), 6);
    CHECK_EQ_INT(util_count(store), 6);
    CHECK_EQ_INT(flusher.calls, 6);
    CHECK_STATUS(rdx_store_remove_observer(store, token), RDX_OK);
    rdx_store_release(store);
    pthread_cond_destroy(&flusher.all_enqueued);
    pthread_mutex_destroy(&flusher.lock);
}

/* A store released with observers still registered frees them; they are never called again. */
static void test_release_with_observers(void)
{
    rdx_store *store = util_counter_store();
    struct seen seen;
    int i;

    TEST("release_with_observers");
    memset(&seen, 0, sizeof seen);
    CHECK(store != NULL);
    if (store == NULL) return;
    for (i = 0; i < 5; i++) CHECK(rdx_store_add_observer(store, NULL, record_observer, &seen) != 0);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(seen.calls, 5);
    rdx_store_release(store);
}

int main(void)
{
    test_called_once_per_action();
    test_name_filter();
    test_tokens_and_order();
    test_remove_by_token();
    test_remove_self_inside_callback();
    test_observer_calls_rdx_functions();
    test_observer_runs_after_lock_released();
    test_add_inside_observer();
    test_observers_edited_inside_reducer();
    test_nested_dispatch_notifications();
    test_remove_waits_for_running_call();
    test_flush_inside_observer();
    test_release_with_observers();
    return check_report();
}
