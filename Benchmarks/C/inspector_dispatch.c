/*
 * inspector_dispatch.c — what the live inspector (include/reduxstore_inspector.h) costs a C
 * store's dispatch: with no page, with one page and with 8 pages connected, against the same
 * store without an inspector. The goals: one page ≤ 1.1×, 8 pages ≤ 1.2×.
 *
 * Two states: a counter ({"count"}), and an object of 2,000 members (each action changes one of
 * them and "count"). Each page is a WebSocket client on a thread of its own that reads every
 * message (and notes the newest version it names), as a browser's page would.
 *
 * Each round times a burst of dispatches on every store, in an order that rotates from round to
 * round; after each burst on a store with pages, the pages are left to catch up (not timed) until
 * each has the store's last version, so the next burst does not run beside their sending. The
 * figure is the median over the rounds of each store's time over the time of the store without
 * an inspector, measured in the same round.
 *
 *   bin=$(swift build -c release --product reduxstore-inspector --show-bin-path)
 *   cc -O2 -Iinclude $(pkg-config --cflags json-c) Benchmarks/C/inspector_dispatch.c \
 *      -o /tmp/inspector_dispatch -L"$bin" -lreduxstore-inspector -lreduxstore \
 *      -Wl,-rpath,"$bin" $(pkg-config --libs json-c) -lpthread
 *   /tmp/inspector_dispatch [ROUNDS] [BURST] [JSON]   (defaults: 60 rounds, bursts of 2,000)
 *
 * With JSON, the medians are also written to that file, for BenchmarkReport (scripts/bench runs
 * it so, and puts the goals' rows beside the Swift figures):
 *   {"counter":{"idle":1.01,"page":0.97,"pages8":1.02,"ns":85.2},"members2000":{...}}
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "reduxstore_inspector.h"

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "inspector_dispatch: %s\n", what);
    exit(1);
}

/* ---- The stores. */

enum { MEMBERS = 2000 };

/* "inc": count + 1; in a state with members, member "m<count % 2000>" = count. */
static void inc_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    json_object *count = NULL;
    int64_t value;
    char key[16];
    (void)payload;
    (void)context;
    if (strcmp(identifier, "inc") != 0 || !json_object_object_get_ex(state, "count", &count)) return;
    value = json_object_get_int64(count) + 1;
    json_object_set_int64(count, value);
    if (json_object_object_length(state) > 1) {
        snprintf(key, sizeof key, "m%d", (int)(value % MEMBERS));
        json_object *member = NULL;
        if (json_object_object_get_ex(state, key, &member)) json_object_set_int64(member, value);
    }
}

static rdx_store *make_store(int members)
{
    rdx_reducer reducer = {inc_reduce, NULL, NULL};
    json_object *state = json_object_new_object();
    rdx_status status;
    char key[16];
    int i;
    json_object_object_add(state, "count", json_object_new_int64(0));
    for (i = 0; i < members; i++) {
        snprintf(key, sizeof key, "m%d", i);
        json_object_object_add(state, key, json_object_new_int64(0));
    }
    rdx_store *store = rdx_store_create(state, &reducer, 1, &status);
    json_object_put(state);
    if (store == NULL) die("rdx_store_create failed");
    return store;
}

/* ---- A page: a WebSocket client that reads every message. */

typedef struct page {
    int fd;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    uint64_t version; /* the newest version any message named */
    int messages;
    int ended;
} page;

static int send_all(int fd, const char *bytes, size_t count)
{
    while (count > 0) {
        ssize_t sent = send(fd, bytes, count, 0);
        if (sent <= 0) return 0;
        bytes += sent;
        count -= (size_t)sent;
    }
    return 1;
}

static int receive_all(int fd, unsigned char *bytes, size_t count)
{
    while (count > 0) {
        ssize_t got = recv(fd, bytes, count, 0);
        if (got <= 0) return 0;
        bytes += got;
        count -= (size_t)got;
    }
    return 1;
}

/* The largest number after a "version": in `text`. */
static uint64_t newest_version(const char *text)
{
    static const char key[] = "\"version\":";
    uint64_t newest = 0;
    const char *at = text;
    while ((at = strstr(at, key)) != NULL) {
        uint64_t value = strtoull(at + sizeof key - 1, NULL, 10);
        if (value > newest) newest = value;
        at += sizeof key - 1;
    }
    return newest;
}

static void *page_read(void *argument)
{
    page *p = argument;
    size_t capacity = 1 << 16;
    char *message = malloc(capacity);
    size_t length = 0;
    for (;;) {
        unsigned char head[2], extended[8];
        uint64_t size;
        int i;
        if (!receive_all(p->fd, head, 2)) break;
        size = head[1] & 0x7F;
        if (size == 126) {
            if (!receive_all(p->fd, extended, 2)) break;
            size = ((uint64_t)extended[0] << 8) | extended[1];
        } else if (size == 127) {
            if (!receive_all(p->fd, extended, 8)) break;
            for (size = 0, i = 0; i < 8; i++) size = (size << 8) | extended[i];
        }
        if ((head[0] & 0x0F) == 0x8) break;
        while (length + size + 1 > capacity) message = realloc(message, capacity *= 2);
        if (!receive_all(p->fd, (unsigned char *)message + length, (size_t)size)) break;
        if ((head[0] & 0x0F) == 0x9 || (head[0] & 0x0F) == 0xA) continue; /* ping, pong */
        length += (size_t)size;
        if (!(head[0] & 0x80)) continue; /* a fragment: the rest follows */
        message[length] = '\0';
        uint64_t version = newest_version(message);
        length = 0;
        pthread_mutex_lock(&p->lock);
        if (version > p->version) p->version = version;
        p->messages++;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
    }
    free(message);
    pthread_mutex_lock(&p->lock);
    p->ended = 1;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static page *page_open(rdx_inspector *inspector)
{
    const char *url = rdx_inspector_url(inspector);
    unsigned port;
    char token[64], request[512], head[4096];
    struct sockaddr_in address;
    size_t used = 0;
    page *p = calloc(1, sizeof *p);
    if (sscanf(url, "http://127.0.0.1:%u/?token=%63s", &port, token) != 2) die("the inspector's url");
    p->fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(p->fd, (struct sockaddr *)&address, sizeof address) != 0) die("connect to the inspector");
    snprintf(request, sizeof request,
             "GET /ws?token=%s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nOrigin: http://127.0.0.1:%u\r\n"
             "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
             "Sec-WebSocket-Version: 13\r\n\r\n",
             token, port, port);
    if (!send_all(p->fd, request, strlen(request))) die("send the upgrade");
    /* The answer's head, a byte at a time (the frames follow it). */
    while (used + 1 < sizeof head) {
        if (!receive_all(p->fd, (unsigned char *)head + used, 1)) die("the upgrade's answer");
        used++;
        if (used >= 4 && memcmp(head + used - 4, "\r\n\r\n", 4) == 0) break;
    }
    head[used] = '\0';
    if (strncmp(head, "HTTP/1.1 101", 12) != 0) die("the upgrade was refused");
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    pthread_create(&p->thread, NULL, page_read, p);
    return p;
}

/* Waits until the page has heard of `version` (or the connection ended). */
static void page_wait(page *p, uint64_t version)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 30;
    pthread_mutex_lock(&p->lock);
    while ((p->version < version || p->messages == 0) && !p->ended) {
        if (pthread_cond_timedwait(&p->changed, &p->lock, &deadline) != 0) break;
    }
    if (p->version < version) fprintf(stderr, "inspector_dispatch: a page did not hear of version %llu\n", (unsigned long long)version);
    pthread_mutex_unlock(&p->lock);
}

static void page_close(page *p)
{
    shutdown(p->fd, SHUT_RDWR);
    pthread_join(p->thread, NULL);
    close(p->fd);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->changed);
    free(p);
}

/* ---- A store under test: without an inspector, or with one and its pages. */

enum { MAX_PAGES = 8 };

typedef struct subject {
    const char *name;
    rdx_store *store;
    rdx_inspector *inspector;
    int inspected;
    int page_count;
    page *pages[MAX_PAGES];
    double *ratios;
} subject;

static void subject_start(subject *s, int members, int inspected, int pages, int rounds)
{
    int i;
    rdx_status status;
    s->store = make_store(members);
    s->inspected = inspected;
    s->page_count = pages;
    s->ratios = calloc((size_t)rounds, sizeof *s->ratios);
    if (inspected) {
        rdx_inspector_options options;
        memset(&options, 0, sizeof options);
        options.maximum_clients = MAX_PAGES;
        s->inspector = rdx_inspector_start(s->store, &options, &status);
        if (s->inspector == NULL) die(rdx_last_error());
    }
    for (i = 0; i < pages; i++) s->pages[i] = page_open(s->inspector);
    /* Every page has its hello (its first message). */
    for (i = 0; i < pages; i++) page_wait(s->pages[i], 0);
}

static uint64_t subject_burst(subject *s, int count)
{
    uint64_t start = now_ns();
    int i;
    for (i = 0; i < count; i++) rdx_store_dispatch_action(s->store, "inc", NULL);
    uint64_t took = now_ns() - start;
    for (i = 0; i < s->page_count; i++) page_wait(s->pages[i], rdx_store_version(s->store));
    return took;
}

static void subject_stop(subject *s)
{
    int i;
    for (i = 0; i < s->page_count; i++) page_close(s->pages[i]);
    rdx_inspector_stop(s->inspector);
    rdx_store_release(s->store);
    free(s->ratios);
}

static int compare(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare);
    return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

/* Measures one state; writes its medians as a JSON member `key` to `json` if not NULL. */
static void measure(const char *state, const char *key, int members, int rounds, int burst, FILE *json)
{
    enum { KINDS = 4 };
    subject subjects[KINDS] = {
        {.name = "no inspector"}, {.name = "inspector, no page"}, {.name = "one page"}, {.name = "8 pages"}};
    static const double goals[KINDS] = {0, 0, 1.1, 1.2};
    uint64_t times[KINDS], off_ns = 0;
    int round, k;
    subject_start(&subjects[0], members, 0, 0, rounds);
    subject_start(&subjects[1], members, 1, 0, rounds);
    subject_start(&subjects[2], members, 1, 1, rounds);
    subject_start(&subjects[3], members, 1, 8, rounds);
    /* Warm up: two rounds not counted. */
    for (round = -2; round < rounds; round++) {
        for (k = 0; k < KINDS; k++) {
            int kind = (k + (round < 0 ? 0 : round)) % KINDS;
            times[kind] = subject_burst(&subjects[kind], burst);
        }
        if (round < 0) continue;
        off_ns += times[0];
        for (k = 0; k < KINDS; k++) subjects[k].ratios[round] = (double)times[k] / (double)times[0];
    }
    printf("%s (%d rounds of %d dispatches; no inspector: %.0f ns a dispatch)\n", state, rounds, burst,
           (double)off_ns / rounds / burst);
    if (json != NULL) fprintf(json, "\"%s\":{\"ns\":%.1f", key, (double)off_ns / rounds / burst);
    for (k = 0; k < KINDS; k++) {
        static const char *const names[KINDS] = {"off", "idle", "page", "pages8"};
        double spread_low, spread_high, figure;
        figure = median(subjects[k].ratios, rounds);
        if (json != NULL && k > 0) fprintf(json, ",\"%s\":%.4f", names[k], figure);
        spread_low = subjects[k].ratios[rounds / 10];
        spread_high = subjects[k].ratios[rounds - 1 - rounds / 10];
        printf("  %-20s %.3fx  (10th-90th percentile %.3f-%.3f)", subjects[k].name, figure, spread_low, spread_high);
        if (goals[k] > 0) printf("  goal <= %.1fx: %s", goals[k], figure <= goals[k] ? "met" : "NOT MET");
        printf("\n");
    }
    if (json != NULL) fprintf(json, "}");
    for (k = 0; k < KINDS; k++) subject_stop(&subjects[k]);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 60;
    int burst = argc > 2 ? atoi(argv[2]) : 2000;
    FILE *json = NULL;
    if (rounds < 1 || burst < 1) die("usage: inspector_dispatch [ROUNDS] [BURST] [JSON]");
    if (argc > 3 && (json = fopen(argv[3], "w")) == NULL) die("cannot write the JSON file");
    if (json != NULL) fprintf(json, "{");
    measure("a counter", "counter", 0, rounds, burst, json);
    if (json != NULL) fprintf(json, ",");
    measure("an object of 2,000 members", "members2000", MEMBERS, rounds, burst, json);
    if (json != NULL) {
        fprintf(json, "}\n");
        if (fclose(json) != 0) die("cannot write the JSON file");
    }
    return 0;
}
