/* Order statistics for the guarded rule, and the distribution-free confidence interval of a
 * median: with n samples the number below the true median is Binomial(n, 1/2) whatever the
 * distribution, so the ranks of the interval come from that binomial alone. No point estimate of
 * a noisy median ever promotes an arm; its bound does (guarded.c). */
#include <stdlib.h>
#include <string.h>

#include "guarded.h"

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

uint32_t gy_guard_order_stat(const uint32_t *values, uint32_t n, uint32_t k, uint32_t *scratch)
{
    if (n == 0)
        return 0;
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    memcpy(scratch, values, n * sizeof *values);
    qsort(scratch, n, sizeof *scratch, cmp_u32);
    return scratch[k - 1];
}

void gy_guard_median_ranks(uint32_t n, double conf, uint32_t *lower, uint32_t *upper)
{
    *lower = 1, *upper = n;
    if (n == 0) {
        *lower = *upper = 0;
        return;
    }
    /* X(u) >= median iff at most u-1 samples lie below it: the smallest u with CDF(u-1) >= conf. */
    double pmf = 1.0;
    for (uint32_t i = 0; i < n; i++)
        pmf *= 0.5; /* P(B = 0) = 2^-n, exact in a double for n <= 1000 */
    double cdf = 0.0;
    for (uint32_t j = 0; j < n; j++) {
        cdf += pmf; /* CDF(j) */
        if (cdf >= conf) {
            *upper = j + 1;
            *lower = n - j; /* by symmetry: n + 1 - u */
            return;
        }
        pmf = pmf * (double)(n - j) / (double)(j + 1);
    }
}
