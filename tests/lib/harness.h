/* A tiny test harness for the C suites: each TEST runs in the test binary's own process, in
 * order; CHECK records a failure and goes on; SKIP ends a test that cannot run here; the binary
 * prints one line per test and ends with "N passed, N failed" (exit status 1 on any failure). Use fork() inside a test for crashes. */
#ifndef GY_TEST_HARNESS_H
#define GY_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gy_test {
    const char *name;
    void (*fn)(void);
};

extern int gy_test_failures_in_current;
const char *gy_test_skipped_because;

#define CHECK(cond, ...)                                                                             \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            gy_test_failures_in_current++;                                                           \
            fprintf(stderr, "  %s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, " " __VA_ARGS__);                                                        \
            fputc('\n', stderr);                                                                     \
        }                                                                                            \
    } while (0)

/* Abort the current test (not the suite) when a precondition fails. */
#define REQUIRE(cond, ...)                                                                           \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            gy_test_failures_in_current++;                                                           \
            fprintf(stderr, "  %s:%d: REQUIRE(%s) failed: ", __FILE__, __LINE__, #cond);             \
            fprintf(stderr, " " __VA_ARGS__);                                                        \
            fputc('\n', stderr);                                                                     \
            return;                                                                                  \
        }                                                                                            \
    } while (0)

/* End the current test as skipped (neither passed nor failed): "skip NAME: why" is printed. */
extern const char *gy_test_skipped_because;
#define SKIP(why)                                                                                    \
    do {                                                                                             \
        gy_test_skipped_because = (why);                                                             \
        return;                                                                                      \
    } while (0)

#define TEST(name)                                                                                   \
    static void name(void);                                                                          \
    static const struct gy_test gy_test_##name __attribute__((used, section("gy_tests"))) = {#name, name}; \
    static void name(void)

int gy_test_main(int argc, char **argv);

#ifdef GY_TEST_MAIN
int gy_test_failures_in_current;
extern const struct gy_test __start_gy_tests[], __stop_gy_tests[];
/* Optional argument: run only tests whose name contains it. */
int gy_test_main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (const struct gy_test *t = __stop_gy_tests - 1; t >= __start_gy_tests; t--) {
        if (argc > 1 && !strstr(t->name, argv[1]))
            continue;
        gy_test_failures_in_current = 0;
        gy_test_skipped_because = NULL;
        t->fn();
        if (gy_test_skipped_because && !gy_test_failures_in_current) {
            printf("skip %s: %s\n", t->name, gy_test_skipped_because);
        } else if (gy_test_failures_in_current) {
            failed++;
            printf("FAIL %s\n", t->name);
        } else {
            passed++;
            printf("ok   %s\n", t->name);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
int main(int argc, char **argv) { return gy_test_main(argc, argv); }
#endif

#endif
