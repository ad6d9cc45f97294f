/*
 * test_inspector.c — the live inspector from C (include/reduxstore_inspector.h,
 * libreduxstore-inspector.so): it serves the page only with its token, refuses a foreign host and
 * origin, speaks the WebSocket protocol (hello with the log and its sources, live changes with
 * patches, state by pointer), is read-only unless allowed, restores and dispatches when allowed,
 * holds the store while it runs, refuses bad options without touching the store, and stops in
 * bounded time with idle clients connected. Also the history functions of reduxstore.h it is
 * built on.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <pthread.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "reduxstore.h"
#include "reduxstore_inspector.h"
#include "check.h"
#include "util.h"

/* ---- A small HTTP and WebSocket client, enough for the tests. */

typedef struct address {
    unsigned port;
    char token[64];
} address;

/* The port and token of an inspector's url. */
static int parse_url(const char *url, address *out)
{
    const char *token;
    if (url == NULL || sscanf(url, "http://127.0.0.1:%u/?token=", &out->port) != 1) return 0;
    token = strstr(url, "?token=");
    if (token == NULL || strlen(token + 7) >= sizeof out->token) return 0;
    strcpy(out->token, token + 7);
    return 1;
}

static int connect_to(unsigned port)
{
    struct sockaddr_in to;
    /* A watchdog on every read: 10 seconds, a minute where everything runs tens of times slower
       (valgrind, AddressSanitizer: RDX_CTEST_SMALL). No check below measures the server by it. */
    struct timeval timeout = {util_small() ? 60 : 10, 0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_port = htons((uint16_t)port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const void *bytes, size_t count)
{
    const char *at = bytes;
    while (count > 0) {
        ssize_t sent = send(fd, at, count, MSG_NOSIGNAL);
        if (sent <= 0) return 0;
        at += sent;
        count -= (size_t)sent;
    }
    return 1;
}

static int receive_all(int fd, void *bytes, size_t count)
{
    char *at = bytes;
    while (count > 0) {
        ssize_t got = recv(fd, at, count, 0);
        if (got <= 0) return 0;
        at += got;
        count -= (size_t)got;
    }
    return 1;
}

/* Reads a response's head (to the blank line) into `head`; returns its status code, or -1. */
static int read_head(int fd, char *head, size_t size)
{
    size_t used = 0;
    int status = -1;
    while (used + 1 < size) {
        if (recv(fd, head + used, 1, 0) != 1) break;
        used++;
        head[used] = '\0';
        if (used >= 4 && memcmp(head + used - 4, "\r\n\r\n", 4) == 0) break;
    }
    head[used] = '\0';
    if (sscanf(head, "HTTP/1.1 %d", &status) != 1) return -1;
    return status;
}

/*
 * Sends one request, `extra` headers included (each ending with \r\n), and returns the response's
 * status code; `body_out` (may be NULL) gets a NEW copy of the start of its body.
 */
static int http_request(unsigned port, const char *target, const char *host, const char *extra,
                        char **body_out)
{
    char request[2048], head[8192];
    int status;
    int fd = connect_to(port);
    if (fd < 0) return -1;
    snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n",
             target, host, extra);
    if (!send_all(fd, request, strlen(request))) {
        close(fd);
        return -1;
    }
    status = read_head(fd, head, sizeof head);
    if (body_out != NULL) {
        size_t capacity = 1 << 20, used = 0;
        char *body = malloc(capacity + 1);
        ssize_t got;
        while (used < capacity && (got = recv(fd, body + used, capacity - used, 0)) > 0) used += (size_t)got;
        body[used] = '\0';
        *body_out = body;
    }
    close(fd);
    return status;
}

/* Opens the WebSocket at /ws with `token` and `origin`; returns the socket (status 101) or -1,
 * with the status code in *status. */
static int ws_open(unsigned port, const char *token, const char *origin, int *status)
{
    char request[2048], head[8192], host[64];
    int fd = connect_to(port);
    *status = -1;
    if (fd < 0) return -1;
    snprintf(host, sizeof host, "127.0.0.1:%u", port);
    snprintf(request, sizeof request,
             "GET /ws?token=%s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
             "Origin: %s\r\n\r\n",
             token, host, origin);
    if (!send_all(fd, request, strlen(request))) {
        close(fd);
        return -1;
    }
    *status = read_head(fd, head, sizeof head);
    if (*status != 101) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends one final frame of `opcode` (0x1 text, 0xA pong) with `length` bytes, masked as a
   client's frames are. */
static int ws_send_frame(int fd, unsigned char opcode, const char *bytes, size_t length)
{
    unsigned char frame[14];
    unsigned char mask[4] = {0x12, 0x34, 0x56, 0x78};
    size_t header = 2, i;
    unsigned char *masked;
    int ok;
    frame[0] = (unsigned char)(0x80 | opcode);
    if (length < 126) {
        frame[1] = (unsigned char)(0x80 | length);
    } else {
        frame[1] = 0x80 | 126;
        frame[2] = (unsigned char)(length >> 8);
        frame[3] = (unsigned char)length;
        header = 4;
    }
    memcpy(frame + header, mask, 4);
    masked = malloc(length + 1); /* (+ 1: a pong may be empty) */
    for (i = 0; i < length; i++) masked[i] = (unsigned char)bytes[i] ^ mask[i % 4];
    ok = send_all(fd, frame, header + 4) && send_all(fd, masked, length);
    free(masked);
    return ok;
}

/* Sends `text` as one masked text frame. */
static int ws_send(int fd, const char *text)
{
    return ws_send_frame(fd, 0x1, text, strlen(text));
}

/* Reads the next text message as JSON (a NEW tree), skipping control frames and answering a
   ping with its pong, as a browser does (the inspector closes a page that leaves its pings
   unanswered); NULL on failure or a close frame. */
static json_object *ws_receive(int fd)
{
    for (;;) {
        unsigned char head[2], extended[8];
        uint64_t length;
        char *payload;
        json_object *message;
        int i;
        if (!receive_all(fd, head, 2)) return NULL;
        length = head[1] & 0x7F;
        if (length == 126) {
            if (!receive_all(fd, extended, 2)) return NULL;
            length = ((uint64_t)extended[0] << 8) | extended[1];
        } else if (length == 127) {
            if (!receive_all(fd, extended, 8)) return NULL;
            length = 0;
            for (i = 0; i < 8; i++) length = (length << 8) | extended[i];
        }
        if (length > (64u << 20)) return NULL;
        payload = malloc((size_t)length + 1);
        if (!receive_all(fd, payload, (size_t)length)) {
            free(payload);
            return NULL;
        }
        payload[length] = '\0';
        if ((head[0] & 0x0F) != 0x1) { /* not text: a ping, a pong, a close */
            int answered = (head[0] & 0x0F) != 0x9 || ws_send_frame(fd, 0xA, payload, (size_t)length);
            free(payload);
            if ((head[0] & 0x0F) == 0x8 || !answered) return NULL;
            continue;
        }
        message = json_tokener_parse(payload);
        free(payload);
        return message;
    }
}

/* The next message whose "type" is `type` (others skipped); NULL when none comes. */
static json_object *ws_receive_type(int fd, const char *type)
{
    int i;
    for (i = 0; i < 100; i++) {
        json_object *message = ws_receive(fd), *field = NULL;
        if (message == NULL) return NULL;
        if (json_object_object_get_ex(message, "type", &field) &&
            strcmp(json_object_get_string(field), type) == 0)
            return message;
        json_object_put(message);
    }
    return NULL;
}

static const char *string_of(json_object *object, const char *key)
{
    json_object *field = NULL;
    if (!json_object_object_get_ex(object, key, &field)) return "";
    return json_object_get_string(field);
}

static int64_t int_of(json_object *object, const char *key)
{
    json_object *field = NULL;
    if (!json_object_object_get_ex(object, key, &field)) return -1;
    return json_object_get_int64(field);
}

/* ---- The tests. */

static void test_history(void)
{
    rdx_store *store = util_counter_store();
    uint64_t versions[8];
    json_object *state;
    int i;
    TEST("history: keep, list, state at a version, restore");
    CHECK_EQ_INT(rdx_store_history_versions(store, NULL, 0), 0);
    CHECK_STATUS(rdx_store_keep_history(store, 3), RDX_OK);
    for (i = 0; i < 5; i++) CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_history_versions(store, NULL, 0), 3);
    CHECK_EQ_INT(rdx_store_history_versions(store, versions, 2), 3); /* copies 2, says 3 */
    CHECK_EQ_INT(versions[0], 3);
    CHECK_EQ_INT(versions[1], 4);
    CHECK_EQ_INT(rdx_store_history_versions(store, versions, 8), 3);
    CHECK_EQ_INT(versions[2], 5);

    state = rdx_store_state_at_version(store, 4);
    CHECK(state != NULL);
    CHECK_EQ_INT(util_int(state, "count"), 4);
    json_object_put(state);
    state = rdx_store_state_at_version(store, 5); /* the current one */
    CHECK_EQ_INT(util_int(state, "count"), 5);
    json_object_put(state);

    CHECK(rdx_store_state_at_version(store, 1) == NULL);
    CHECK(strstr(rdx_last_error(), "kept") != NULL);
    CHECK_STATUS(rdx_store_restore_version(store, 1), RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "3–5") != NULL);
    CHECK_EQ_INT(rdx_store_version(store), 5);

    CHECK_STATUS(rdx_store_restore_version(store, 3), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 6);
    CHECK_EQ_INT(util_count(store), 3);
    /* The reducers work on the restored tree (the one before it is freed). */
    for (i = 0; i < 2; i++) CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(rdx_store_version(store), 8);
    CHECK_EQ_INT(util_count(store), 5);
    CHECK_STATUS(rdx_store_restore_version(store, 7), RDX_OK);
    CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    CHECK_EQ_INT(util_count(store), 5);

    CHECK_STATUS(rdx_store_keep_history(store, 0), RDX_OK);
    CHECK_EQ_INT(rdx_store_history_versions(store, versions, 8), 0);
    CHECK_STATUS(rdx_store_keep_history(NULL, 3), RDX_EINVAL);
    CHECK(rdx_store_state_at_version(NULL, 0) == NULL);
    CHECK_STATUS(rdx_store_restore_version(NULL, 0), RDX_EINVAL);
    CHECK_EQ_INT(rdx_store_history_versions(NULL, versions, 8), 0);
    rdx_store_release(store);
}

static void test_bad_options(void)
{
    rdx_store *store = util_counter_store();
    rdx_inspector_options options;
    rdx_status status = RDX_OK;
    TEST("start: bad arguments are refused and change nothing");
    CHECK(rdx_inspector_start(NULL, NULL, &status) == NULL);
    CHECK_EQ_INT(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "store") != NULL);

    memset(&options, 0, sizeof options);
    options.port = 70000;
    status = RDX_OK;
    CHECK(rdx_inspector_start(store, &options, &status) == NULL);
    CHECK_EQ_INT(status, RDX_EINVAL);
    CHECK(strstr(rdx_last_error(), "70000") != NULL);

    memset(&options, 0, sizeof options);
    options.host = "";
    CHECK(rdx_inspector_start(store, &options, NULL) == NULL);

    memset(&options, 0, sizeof options);
    options.host = "203.0.113.1"; /* not an address of this host */
    CHECK(rdx_inspector_start(store, &options, &status) == NULL);
    CHECK_EQ_INT(status, RDX_EIO);
    CHECK(strstr(rdx_last_error(), "203.0.113.1") != NULL);

    CHECK_EQ_INT(rdx_store_version(store), 0);
    CHECK_EQ_INT(rdx_store_history_versions(store, NULL, 0), 0);
    rdx_inspector_stop(NULL); /* a no-op */
    CHECK(rdx_inspector_url(NULL) == NULL);
    rdx_store_release(store);
}

static double seconds_now(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

/* Whether the server closed `fd` (EOF or a reset) within the socket's receive timeout, what it
   sent before dropped. */
static int closed_by_server(int fd)
{
    char buffer[4096];
    for (;;) {
        ssize_t count = recv(fd, buffer, sizeof buffer, 0);
        if (count == 0) return 1;
        if (count < 0) return errno == ECONNRESET;
    }
}

/* Stops `inspector` while a client holds an idle connection and another half a request head:
   rdx_inspector_stop returns within its bound (5 seconds) and closes both. */
static void stop_with_idle_clients(rdx_inspector *inspector, const address *at)
{
    char half[256];
    double started;
    int idle = connect_to(at->port), partial = connect_to(at->port);
    CHECK(idle >= 0 && partial >= 0);
    snprintf(half, sizeof half, "GET /?token=%s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n", at->token, at->port);
    if (partial >= 0) CHECK(send_all(partial, half, strlen(half)));
    started = seconds_now();
    rdx_inspector_stop(inspector);
    /* Under valgrind (RDX_CTEST_SMALL) everything runs tens of times slower. */
    CHECK(seconds_now() - started < (getenv("RDX_CTEST_SMALL") != NULL ? 60.0 : 5.0));
    if (idle >= 0) {
        CHECK(closed_by_server(idle));
        close(idle);
    }
    if (partial >= 0) {
        CHECK(closed_by_server(partial));
        close(partial);
    }
}

static void test_read_only(void)
{
    rdx_store *store = util_counter_store();
    rdx_inspector *inspector, *second;
    rdx_inspector_options options;
    rdx_status status = RDX_EIO;
    address at;
    char target[256], host[64], auth[256], *body = NULL;
    int fd, ws_status, i;
    json_object *message, *log = NULL, *node, *payload;
    TEST("a read-only inspector: the page, its token, the protocol");

    for (i = 0; i < 3; i++) CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    inspector = rdx_inspector_start(store, NULL, &status);
    CHECK_EQ_INT(status, RDX_OK);
    if (!CHECK(inspector != NULL)) {
        fprintf(stderr, "    %s\n", rdx_last_error());
        rdx_store_release(store);
        return;
    }
    CHECK(parse_url(rdx_inspector_url(inspector), &at));
    CHECK_EQ_INT(strlen(at.token), 32);
    snprintf(host, sizeof host, "127.0.0.1:%u", at.port);
    /* A read-only inspector leaves the history as it is (none); the program keeps one for the
       page's states at earlier versions. */
    CHECK_EQ_INT(rdx_store_history_versions(store, NULL, 0), 0);
    CHECK_STATUS(rdx_store_keep_history(store, 100), RDX_OK);

    snprintf(target, sizeof target, "/?token=%s", at.token);
    CHECK_EQ_INT(http_request(at.port, target, host, "", &body), 200);
    CHECK(body != NULL && strstr(body, "<html") != NULL);
    free(body);
    CHECK_EQ_INT(http_request(at.port, "/", host, "", NULL), 401);
    CHECK_EQ_INT(http_request(at.port, "/?token=00000000000000000000000000000000", host, "", NULL), 401);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", at.token);
    CHECK_EQ_INT(http_request(at.port, "/", host, auth, NULL), 200);
    CHECK_EQ_INT(http_request(at.port, target, "evil.example", "", NULL), 403);

    /* Another port taken: the same port again cannot be bound. */
    memset(&options, 0, sizeof options);
    options.port = at.port;
    second = rdx_inspector_start(store, &options, &status);
    CHECK(second == NULL);
    CHECK_EQ_INT(status, RDX_EIO);
    rdx_inspector_stop(second);

    /* A page of another origin. */
    CHECK(ws_open(at.port, at.token, "http://evil.example", &ws_status) < 0);
    CHECK_EQ_INT(ws_status, 403);
    CHECK(ws_open(at.port, "nope", "null", &ws_status) < 0);
    CHECK_EQ_INT(ws_status, 401);

    /* The log holds what was applied since the inspector started. */
    for (i = 0; i < 2; i++) CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    snprintf(target, sizeof target, "http://127.0.0.1:%u", at.port);
    fd = ws_open(at.port, at.token, target, &ws_status);
    CHECK_EQ_INT(ws_status, 101);
    if (fd < 0) {
        rdx_inspector_stop(inspector);
        rdx_store_release(store);
        return;
    }
    message = ws_receive_type(fd, "hello");
    CHECK(message != NULL);
    CHECK_EQ_INT(int_of(message, "version"), 5);
    CHECK(json_object_object_get_ex(message, "log", &log) && json_object_array_length(log) == 2);
    if (log != NULL && json_object_array_length(log) == 2) {
        json_object *first = json_object_array_get_idx(log, 0);
        CHECK_EQ_INT(int_of(first, "version"), 4);
        CHECK(strcmp(string_of(first, "identifier"), "inc") == 0);
        CHECK(strncmp(string_of(first, "source"), "test_inspector.c:", 17) == 0);
    }
    CHECK(strcmp(string_of(message, "allowsRestore"), "false") == 0);
    json_object_put(message);

    /* A live change, with its patch. */
    payload = json_object_new_int(10);
    CHECK_STATUS(rdx_store_dispatch_action(store, "add", payload), RDX_OK);
    json_object_put(payload);
    message = ws_receive_type(fd, "change");
    CHECK(message != NULL);
    CHECK_EQ_INT(int_of(message, "version"), 6);
    CHECK(strcmp(string_of(message, "identifier"), "add") == 0);
    CHECK(strcmp(string_of(message, "payload"), "10") == 0);
    CHECK(strstr(string_of(message, "patch"), "/count") != NULL);
    json_object_put(message);

    /* The state at a pointer, now and at a kept version. */
    CHECK(ws_send(fd, "{\"type\":\"state\",\"id\":7,\"pointer\":\"/count\"}"));
    message = ws_receive_type(fd, "state");
    CHECK(message != NULL && int_of(message, "id") == 7);
    CHECK(json_object_object_get_ex(message, "node", &node) && int_of(node, "value") == 15);
    json_object_put(message);
    CHECK(ws_send(fd, "{\"type\":\"state\",\"id\":8,\"version\":3,\"pointer\":\"/count\"}"));
    message = ws_receive_type(fd, "state");
    CHECK(json_object_object_get_ex(message, "node", &node) && int_of(node, "value") == 3);
    json_object_put(message);

    /* What a read-only inspector refuses, and bad requests: an error each, nothing changed. */
    CHECK(ws_send(fd, "{\"type\":\"restore\",\"id\":9,\"version\":3}"));
    message = ws_receive_type(fd, "error");
    CHECK(strstr(string_of(message, "message"), "not allowed") != NULL);
    json_object_put(message);
    CHECK(ws_send(fd, "{\"type\":\"dispatch\",\"identifier\":\"inc\"}"));
    message = ws_receive_type(fd, "error");
    CHECK(strstr(string_of(message, "message"), "not allowed") != NULL);
    json_object_put(message);
    CHECK(ws_send(fd, "{\"type\":\"state\",\"pointer\":\"/nowhere\"}"));
    message = ws_receive_type(fd, "error");
    CHECK(message != NULL);
    json_object_put(message);
    CHECK(ws_send(fd, "{\"type\":\"state\",\"version\":1000}"));
    message = ws_receive_type(fd, "error");
    CHECK(strstr(string_of(message, "message"), "1000") != NULL);
    json_object_put(message);
    CHECK(ws_send(fd, "not json"));
    message = ws_receive_type(fd, "error");
    CHECK(message != NULL);
    json_object_put(message);
    CHECK_EQ_INT(rdx_store_version(store), 6);
    CHECK_EQ_INT(util_count(store), 15);

    /* The program's reference goes; the inspector's keeps the store until it stops. */
    rdx_store_release(store);
    close(fd);
    stop_with_idle_clients(inspector, &at);
    CHECK(connect_to(at.port) < 0);
}

static void test_allowed(void)
{
    rdx_store *store = util_counter_store();
    rdx_inspector_options options;
    rdx_inspector *inspector;
    const char *identifiers[] = {"inc", "add", NULL};
    address at;
    char origin[64];
    int fd, ws_status, i;
    json_object *message;
    TEST("restore and dispatch, when allowed");

    memset(&options, 0, sizeof options);
    options.allows_restore = 1;
    options.allows_dispatch = 1;
    options.maximum_clients = 1;
    options.dispatch_identifiers = identifiers;
    inspector = rdx_inspector_start(store, &options, NULL);
    if (!CHECK(inspector != NULL)) {
        rdx_store_release(store);
        return;
    }
    CHECK(parse_url(rdx_inspector_url(inspector), &at));
    CHECK(rdx_store_history_versions(store, NULL, 0) >= 1); /* restore allowed: a history kept */
    for (i = 0; i < 5; i++) CHECK_STATUS(rdx_store_dispatch_action(store, "inc", NULL), RDX_OK);
    snprintf(origin, sizeof origin, "http://127.0.0.1:%u", at.port);
    fd = ws_open(at.port, at.token, origin, &ws_status);
    CHECK_EQ_INT(ws_status, 101);
    if (fd >= 0) {
        int other;
        message = ws_receive_type(fd, "hello");
        CHECK(strcmp(string_of(message, "allowsRestore"), "true") == 0);
        CHECK(strstr(string_of(message, "actions"), "add") != NULL);
        json_object_put(message);

        other = ws_open(at.port, at.token, origin, &ws_status); /* one client at most */
        if (other >= 0) {
            json_object *refused = ws_receive(other); /* closed with a reason, no hello */
            CHECK(refused == NULL);
            json_object_put(refused);
            close(other);
        } else {
            CHECK_EQ_INT(ws_status, 429);
        }

        CHECK(ws_send(fd, "{\"type\":\"dispatch\",\"id\":1,\"identifier\":\"add\",\"payload\":100}"));
        message = ws_receive_type(fd, "dispatched");
        CHECK_EQ_INT(int_of(message, "version"), 6);
        json_object_put(message);
        CHECK_EQ_INT(util_count(store), 105);
        CHECK(ws_send(fd, "{\"type\":\"dispatch\",\"id\":2,\"identifier\":\"reset\"}"));
        message = ws_receive_type(fd, "error");
        CHECK(strstr(string_of(message, "message"), "reset") != NULL);
        json_object_put(message);

        CHECK(ws_send(fd, "{\"type\":\"restore\",\"id\":3,\"version\":2}"));
        message = ws_receive_type(fd, "restored");
        CHECK_EQ_INT(int_of(message, "version"), 7);
        json_object_put(message);
        CHECK_EQ_INT(util_count(store), 2);
        close(fd);
    }
    rdx_inspector_stop(inspector);
    rdx_store_release(store);
}

static void test_dispatch_none(void)
{
    rdx_store *store = util_counter_store();
    rdx_inspector_options options;
    rdx_inspector *inspector;
    const char *none[] = {NULL};
    rdx_status status = RDX_EINVAL;
    address at;
    char origin[64];
    int fd, ws_status;
    json_object *message;
    TEST("an empty dispatch_identifiers list is accepted and lets the page dispatch nothing");

    memset(&options, 0, sizeof options);
    options.allows_dispatch = 1;
    options.dispatch_identifiers = none;
    inspector = rdx_inspector_start(store, &options, &status);
    CHECK_EQ_INT(status, RDX_OK);
    if (!CHECK(inspector != NULL)) {
        rdx_store_release(store);
        return;
    }
    CHECK(parse_url(rdx_inspector_url(inspector), &at));
    snprintf(origin, sizeof origin, "http://127.0.0.1:%u", at.port);
    fd = ws_open(at.port, at.token, origin, &ws_status);
    CHECK_EQ_INT(ws_status, 101);
    if (fd >= 0) {
        message = ws_receive_type(fd, "hello");
        CHECK(strcmp(string_of(message, "allowsDispatch"), "true") == 0);
        CHECK(strcmp(string_of(message, "actions"), "[ ]") == 0 || strcmp(string_of(message, "actions"), "[]") == 0);
        json_object_put(message);
        CHECK(ws_send(fd, "{\"type\":\"dispatch\",\"id\":1,\"identifier\":\"inc\"}"));
        message = ws_receive_type(fd, "error");
        CHECK(strstr(string_of(message, "message"), "inc") != NULL);
        json_object_put(message);
        close(fd);
    }
    CHECK_EQ_INT(rdx_store_version(store), 0);
    rdx_inspector_stop(inspector);
    rdx_store_release(store);
}

/* ---- A burst while a page reads: every change once, in order, and patches that lead from the
   page's first state to the store's last. */

/* "put": member "k<payload>" = payload, and count + 1. */
static void put_reduce(json_object *state, const char *identifier, json_object *payload, void *context)
{
    char key[32];
    (void)context;
    if (strcmp(identifier, "put") != 0 || payload == NULL) return;
    snprintf(key, sizeof key, "k%d", json_object_get_int(payload));
    json_object_object_add(state, key, json_object_new_int(json_object_get_int(payload)));
    util_set_int(state, "count", util_int(state, "count") + 1);
}

/* 3,000 actions; 300 under valgrind and AddressSanitizer (RDX_CTEST_SMALL). */
/* Fewer actions than the inspector keeps (InspectorOptions.keptActions, 1,000; a page's read
   size, 1,024): however late the page's reads fall, the log still holds every version of the
   burst, so no gap is right. */
static int burst_size(void) { return util_small() ? 300 : 900; }

static void *burst_dispatch(void *argument)
{
    rdx_store *store = argument;
    struct timespec pause = {0, 2000000};
    int i;
    for (i = 0; i < burst_size(); i++) {
        json_object *payload = json_object_new_int(i % 700);
        rdx_store_dispatch_action(store, "put", payload);
        json_object_put(payload);
        if (i % 250 == 0) nanosleep(&pause, NULL);
    }
    return NULL;
}

/* Applies a change (or each of a "changes" message's) to `document`: checks its version is the
   next, applies its patch, which must start where the last ended. */
static void take_change(json_object *change, json_object *document, int64_t *next, int64_t *covered, int *bad)
{
    json_object *patch = NULL, *from = NULL;
    int64_t version = int_of(change, "version");
    if (version != *next) {
        if (*bad == 0) fprintf(stderr, "    version %lld where %lld was next\n", (long long)version, (long long)*next);
        (*bad)++;
    }
    *next = version + 1;
    if (!json_object_object_get_ex(change, "patch", &patch) || patch == NULL) return;
    if (json_object_object_get_ex(change, "patchFrom", &from)) {
        if (json_object_get_int64(from) != *covered) (*bad)++;
    } else if (version - 1 != *covered) {
        (*bad)++;
    }
    if (rdx_json_patch(document, patch) != RDX_OK) {
        fprintf(stderr, "    the patch of %lld does not apply: %s\n", (long long)version, rdx_last_error());
        (*bad)++;
    }
    *covered = version;
}

static void test_burst_patches(void)
{
    rdx_reducer reducer = {put_reduce, NULL, NULL};
    rdx_store *store = util_store(&reducer, 1);
    rdx_inspector *inspector;
    rdx_status status = RDX_EIO;
    json_object *document, *message, *now, *field = NULL;
    address at;
    char origin[64];
    int fd, ws_status, bad = 0, gaps = 0;
    const int64_t burst = burst_size();
    int64_t start, next, covered, first_count;
    pthread_t thread;
    TEST("a C store's burst while a page reads: every version once, in order; the patches lead to the state");

    inspector = rdx_inspector_start(store, NULL, &status);
    if (!CHECK(inspector != NULL)) {
        rdx_store_release(store);
        return;
    }
    CHECK(parse_url(rdx_inspector_url(inspector), &at));
    snprintf(origin, sizeof origin, "http://127.0.0.1:%u", at.port);
    json_object *payload = json_object_new_int(-1);
    CHECK_STATUS(rdx_store_dispatch_action(store, "put", payload), RDX_OK);
    json_object_put(payload);
    /* The page's first state: the state at the hello's version (nothing is dispatched until the
       hello came). */
    document = rdx_store_current_state(store);
    first_count = util_int(document, "count");
    fd = ws_open(at.port, at.token, origin, &ws_status);
    CHECK_EQ_INT(ws_status, 101);
    if (fd < 0) {
        json_object_put(document);
        rdx_inspector_stop(inspector);
        rdx_store_release(store);
        return;
    }
    message = ws_receive_type(fd, "hello");
    start = int_of(message, "version");
    CHECK_EQ_INT(start, 1);
    json_object_put(message);
    next = start + 1;
    covered = start;
    CHECK_EQ_INT(pthread_create(&thread, NULL, burst_dispatch, store), 0);
    while (covered < start + burst || next <= start + burst) {
        message = ws_receive(fd);
        if (message == NULL) break;
        json_object_object_get_ex(message, "type", &field);
        if (field != NULL && strcmp(json_object_get_string(field), "change") == 0) {
            take_change(message, document, &next, &covered, &bad);
        } else if (field != NULL && strcmp(json_object_get_string(field), "changes") == 0) {
            json_object *list = NULL;
            size_t i;
            json_object_object_get_ex(message, "changes", &list);
            for (i = 0; list != NULL && i < json_object_array_length(list); i++)
                take_change(json_object_array_get_idx(list, i), document, &next, &covered, &bad);
        } else if (field != NULL && strcmp(json_object_get_string(field), "gap") == 0) {
            gaps++;
        }
        json_object_put(message);
    }
    pthread_join(thread, NULL);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(gaps, 0);
    CHECK_EQ_INT(next, start + burst + 1);
    CHECK_EQ_INT(covered, start + burst);
    now = rdx_store_current_state(store);
    CHECK(json_object_equal(document, now));
    CHECK_EQ_INT(util_int(now, "count"), first_count + burst);
    json_object_put(now);
    json_object_put(document);
    close(fd);
    rdx_inspector_stop(inspector);
    rdx_store_release(store);
}

int main(void)
{
    test_history();
    test_bad_options();
    test_read_only();
    test_allowed();
    test_dispatch_none();
    test_burst_patches();
    return check_report();
}
