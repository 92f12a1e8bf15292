#include "stats.h"

#include <stdbool.h>
#include <stdlib.h>

static int ascending(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

struct np_stats np_stats_of(int64_t *values, size_t count)
{
    struct np_stats s = {.count = count};
    if (count == 0)
        return s;
    qsort(values, count, sizeof *values, ascending);
    long double sum = 0; /* the mean stays right even where the total saturates */
    bool saturated = false;
    for (size_t i = 0; i < count; i++) {
        sum += values[i];
        if (!saturated && __builtin_add_overflow(s.total, values[i], &s.total))
            saturated = true;
    }
    if (saturated)
        s.total = sum > 0 ? INT64_MAX : INT64_MIN;
    s.mean = (double)(sum / (long double)count);
    if (count % 2)
        s.median = (double)values[count / 2];
    else /* halve each before adding: no overflow near INT64_MAX */
        s.median = (double)values[count / 2 - 1] / 2.0 + (double)values[count / 2] / 2.0;
    size_t rank = (99 * count + 99) / 100; /* ceil(0.99 n) in integers: no rounding surprises */
    s.p99 = values[rank - 1];
    return s;
}
