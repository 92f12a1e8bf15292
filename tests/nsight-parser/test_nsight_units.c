/* Unit tests of nsight-parser's building blocks: the statistics definitions (even-count median,
 * nearest-rank p99), the int64 hash map of the launch join, the string table. The parser as a
 * whole is tested on real-schema reports by tests/python/test_nsight_parser.py. */
#define GY_TEST_MAIN
#include "harness.h"

#include <stdint.h>

#include "int_map.h"
#include "stats.h"
#include "string_table.h"

TEST(median_of_odd_and_even_counts)
{
    int64_t odd[] = {5, 1, 3};
    struct np_stats s = np_stats_of(odd, 3);
    CHECK(s.median == 3.0, "median %f", s.median);
    int64_t even[] = {7, 1, 4, 2};
    s = np_stats_of(even, 4);
    CHECK(s.median == 3.0, "median of 1 2 4 7 is (2+4)/2, got %f", s.median);
    int64_t two[] = {1, 2};
    s = np_stats_of(two, 2);
    CHECK(s.median == 1.5, "median %f", s.median);
}

TEST(p99_is_the_nearest_rank)
{
    /* n values 1..n: p99 is the value at rank ceil(0.99 n). */
    static int64_t v[1000];
    const size_t sizes[] = {1, 2, 99, 100, 101, 199, 200, 1000};
    const int64_t want[] = {1, 2, 99, 99, 100, 198, 198, 990};
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        for (size_t i = 0; i < sizes[t]; i++)
            v[i] = (int64_t)(sizes[t] - i); /* descending: the function must sort */
        struct np_stats s = np_stats_of(v, sizes[t]);
        CHECK(s.p99 == want[t], "n=%zu: p99 %lld, want %lld", sizes[t], (long long)s.p99, (long long)want[t]);
    }
}

TEST(mean_total_and_empty)
{
    int64_t v[] = {10, 20, 40};
    struct np_stats s = np_stats_of(v, 3);
    CHECK(s.total == 70 && s.count == 3);
    CHECK(s.mean > 23.333333 && s.mean < 23.333334, "mean %f", s.mean);
    s = np_stats_of(v, 0);
    CHECK(s.count == 0 && s.total == 0 && s.median == 0.0 && s.p99 == 0);
}

TEST(median_does_not_overflow_near_int64_max)
{
    int64_t v[] = {INT64_MAX - 1, INT64_MAX - 3};
    struct np_stats s = np_stats_of(v, 2);
    CHECK(s.median > 9.2e18, "median %f", s.median);
    CHECK(s.total == INT64_MAX, "the total saturates");
    CHECK(s.mean > 9.2e18, "mean %f", s.mean);
}

TEST(int_map_put_get_overwrite_and_growth)
{
    struct np_int_map m;
    np_int_map_init(&m);
    CHECK(np_int_map_get(&m, 42) == NULL, "empty map finds nothing");
    for (int64_t k = 0; k < 100000; k++)
        REQUIRE(np_int_map_put(&m, (k << 32) | (k * 7), (uint32_t)k));
    CHECK(m.count == 100000, "count %zu", m.count);
    for (int64_t k = 0; k < 100000; k += 997) {
        uint32_t *v = np_int_map_get(&m, (k << 32) | (k * 7));
        CHECK(v && *v == (uint32_t)k, "key %lld", (long long)k);
    }
    CHECK(np_int_map_get(&m, -1) == NULL);
    REQUIRE(np_int_map_put(&m, 0, 5));
    CHECK(*np_int_map_get(&m, 0) == 5 && m.count == 100000, "overwriting keeps the count");
    np_int_map_free(&m);
}

TEST(string_table_interns)
{
    struct np_string_table t;
    np_strings_init(&t);
    int64_t a = np_strings_intern(&t, "kernel_a", 8);
    int64_t b = np_strings_intern(&t, "kernel_b and more", 8); /* only the first 8 bytes */
    int64_t a2 = np_strings_intern(&t, "kernel_a", 8);
    CHECK(a == 0 && b == 1 && a2 == a, "a=%lld b=%lld a2=%lld", (long long)a, (long long)b, (long long)a2);
    CHECK(strcmp(np_strings_get(&t, (uint32_t)b), "kernel_b") == 0);
    char name[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(name, sizeof name, "k%d", i);
        REQUIRE(np_strings_intern(&t, name, strlen(name)) == i + 2);
    }
    CHECK(np_strings_intern(&t, "k4999", 5) == 5001);
    CHECK(np_strings_intern(&t, "", 0) == 5002, "the empty name is a name too");
    np_strings_free(&t);
}
