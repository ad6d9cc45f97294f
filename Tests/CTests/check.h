/*
 * check.h — the tiny assertion kit of the C tests.
 *
 * CHECK(cond) counts a pass, or prints "file:line: [test] CHECK failed: cond" and counts a failure;
 * it never stops the program, so one run reports every failure. The counters are guarded by a
 * mutex, so CHECK may be used from any thread. TEST(name) names the test that follows in failure
 * messages. check_report() prints the final "N passed, N failed" line and gives the exit status.
 *
 * check_watchdog(seconds) turns a hang (a deadlock) into a failure: when the alarm goes off it
 * prints which test hung and the counts so far, and exits with status 2.
 *
 * Each test program includes this header once (it defines the counters), after defining
 * _POSIX_C_SOURCE 200809L.
 */
#ifndef REDUXSTORE_CTESTS_CHECK_H
#define REDUXSTORE_CTESTS_CHECK_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static long check_passed;
static long check_failed;
static char check_test[256] = "(no test)";

/* Counts one check; prints the failed ones. Returns the condition, so a test can stop early. */
static int check_record(int ok, const char *file, int line, const char *expression)
{
    pthread_mutex_lock(&check_lock);
    if (ok) {
        check_passed++;
    } else {
        check_failed++;
        fprintf(stderr, "%s:%d: [%s] CHECK failed: %s\n", file, line, check_test, expression);
        fflush(stderr);
    }
    pthread_mutex_unlock(&check_lock);
    return ok;
}

#define CHECK(cond) check_record((cond) ? 1 : 0, __FILE__, __LINE__, #cond)

/* Checks two integer values are equal, printing both when they are not. */
#define CHECK_EQ_INT(actual, expected)                                                         \
    do {                                                                                       \
        long long check_a_ = (long long)(actual);                                              \
        long long check_e_ = (long long)(expected);                                            \
        if (!check_record(check_a_ == check_e_, __FILE__, __LINE__, #actual " == " #expected)) \
            fprintf(stderr, "    %s is %lld, expected %lld\n", #actual, check_a_, check_e_);  \
    } while (0)

/* Checks an rdx_status, printing both names and rdx_last_error() when it is not the expected one. */
#define CHECK_STATUS(actual, expected)                                                         \
    do {                                                                                       \
        rdx_status check_s_ = (actual);                                                        \
        if (!check_record(check_s_ == (expected), __FILE__, __LINE__, #actual " == " #expected)) \
            fprintf(stderr, "    gave %d (%s); rdx_last_error: \"%s\"\n", (int)check_s_,      \
                    rdx_status_string(check_s_), rdx_last_error());                            \
    } while (0)

/* Checks two C strings are equal (neither NULL), printing both when they are not. */
#define CHECK_STR(actual, expected)                                                            \
    do {                                                                                       \
        const char *check_a_ = (actual);                                                       \
        const char *check_e_ = (expected);                                                     \
        if (!check_record(check_a_ != NULL && check_e_ != NULL && strcmp(check_a_, check_e_) == 0, \
                          __FILE__, __LINE__, #actual " equals " #expected))                   \
            fprintf(stderr, "    %s is \"%s\", expected \"%s\"\n", #actual,                    \
                    check_a_ ? check_a_ : "(NULL)", check_e_ ? check_e_ : "(NULL)");           \
    } while (0)

/* Prints the final line, "N passed, N failed", and returns the program's exit status. */
static int check_report(void)
{
    printf("%ld passed, %ld failed\n", check_passed, check_failed);
    fflush(stdout);
    return check_failed == 0 ? 0 : 1;
}

/* The alarm handler: reports the hung test and ends the program. */
static void check_timed_out(int signal_number)
{
    char line[512];
    int length;
    (void)signal_number;
    length = snprintf(line, sizeof line, "[%s] TIMEOUT: the test hung (a deadlock?)\n%ld passed, %ld failed\n",
                      check_test, check_passed, check_failed + 1);
    if (length > 0) {
        size_t count = (size_t)length < sizeof line ? (size_t)length : sizeof line - 1;
        if (write(STDOUT_FILENO, line, count) < 0) _exit(3);
    }
    _exit(2);
}

/* Arms (or re-arms) the watchdog: the program fails if it is still running `seconds` from now. */
static void check_watchdog(unsigned seconds)
{
    signal(SIGALRM, check_timed_out);
    alarm(seconds);
}

/*
 * Names the test that follows in failure messages (a copy: the name may be a local buffer; printed
 * when RDX_CTEST_VERBOSE is set),
 * and re-arms the watchdog: a test that runs past CHECK_TEST_SECONDS counts as hung.
 */
#define CHECK_TEST_SECONDS 90
#define TEST(name)                                                                             \
    do {                                                                                       \
        snprintf(check_test, sizeof check_test, "%s", (name));                                \
        check_watchdog(CHECK_TEST_SECONDS);                                                    \
        if (getenv("RDX_CTEST_VERBOSE") != NULL) fprintf(stderr, "-- %s\n", check_test);       \
    } while (0)

#endif /* REDUXSTORE_CTESTS_CHECK_H */
