/* Summary statistics of the per-model tables, defined once so that the tests can check them:
 * the median of an even count is the mean of the two middle values; p99 is the nearest-rank
 * percentile (the value at rank ceil(0.99 n) of the sorted values). */
#ifndef NP_STATS_H
#define NP_STATS_H

#include <stddef.h>
#include <stdint.h>

struct np_stats {
    size_t count;
    double median;
    int64_t p99;
    double mean;
    int64_t total; /* saturates at INT64_MAX/MIN instead of overflowing */
};

/* Sorts values in place. count 0 gives all zeros. */
struct np_stats np_stats_of(int64_t *values, size_t count);

#endif
