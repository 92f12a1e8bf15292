/* Statistics for the guarded rule, all distribution-free:
 *   - order statistics and the confidence interval of a median (the number of n samples below the
 *     true median is Binomial(n, 1/2) whatever the distribution), for the fast fallback on an
 *     arm's last 16 jobs;
 *   - histograms of job durations in 1 % bins over a base (guard_bins.h), and Mann-Whitney's rank
 *     test between two of them, for promotion: it compares every arm job with every stop job, so
 *     it needs far fewer jobs than two separate confidence intervals of medians (and no
 *     point estimate of a noisy median ever promotes an arm; the test's bound does). */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "guard_bins.h"
#include "guarded.h"

_Static_assert(sizeof gy_guard_bin_edges / sizeof gy_guard_bin_edges[0] == GY_GUARD_BINS - 1,
               "guard_bins.h is of another bin count: run python3 controller/guard_bins.py");

#define GY_GUARD_INSERTION_MAX 64 /* windows up to this many values are sorted by insertion */

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
    if (n > GY_GUARD_INSERTION_MAX) {
        qsort(scratch, n, sizeof *scratch, cmp_u32);
        return scratch[k - 1];
    }
    /* The rule's windows of 16 jobs, sorted at every job: insertion, in place, with no call per
     * comparison (glibc's qsort copied them into a buffer of its own: bench/results/
     * 2026-12-07-cpu-guarded-job-cost/). Sorted whole: callers read scratch's other ranks too. */
    for (uint32_t i = 1; i < n; i++) {
        uint32_t v = scratch[i], j = i;
        for (; j > 0 && scratch[j - 1] > v; j--)
            scratch[j] = scratch[j - 1];
        scratch[j] = v;
    }
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

unsigned gy_guard_bin(uint32_t us, uint32_t base_us)
{
    if (!base_us)
        return GY_GUARD_BIN_CENTRE;
    double r = (double)us / (double)base_us;
    unsigned lo = 0, hi = GY_GUARD_BINS - 1; /* the first edge above r: bin = its index */
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (r < gy_guard_bin_edges[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

double gy_guard_bin_us(unsigned bin, uint32_t base_us)
{
    if (bin == 0)
        return gy_guard_bin_edges[0] * base_us;
    if (bin >= GY_GUARD_BINS - 1)
        return gy_guard_bin_edges[GY_GUARD_BINS - 2] * base_us;
    return gy_guard_bin_edges[bin - 1] * 1.004987562112089 * base_us; /* the geometric centre: x sqrt(1.01) */
}

unsigned gy_guard_bin_quantile(const uint16_t *bins, uint32_t n, double q)
{
    if (!n)
        return 0;
    double want = q * n;
    uint32_t rank = (uint32_t)want < want ? (uint32_t)want + 1 : (uint32_t)want; /* nearest rank */
    if (rank < 1)
        rank = 1;
    uint32_t seen = 0;
    for (unsigned b = 0; b < GY_GUARD_BINS; b++) {
        seen += bins[b];
        if (seen >= rank)
            return b;
    }
    return GY_GUARD_BINS - 1;
}

int gy_guard_bins_for(double eps)
{
    double factor = 1.0 + eps, power = 1.0;
    int k = 0;
    while (k < GY_GUARD_BINS && power * GY_GUARD_BIN_STEP <= factor) /* the last power at or below */
        power *= GY_GUARD_BIN_STEP, k++;
    /* the nearer of 1.01^k and 1.01^(k+1) */
    return factor - power > power * GY_GUARD_BIN_STEP - factor ? k + 1 : k;
}

uint32_t gy_guard_bins_top(const uint16_t *bins, uint32_t n, double share, uint16_t *out)
{
    double want = share * n;
    uint32_t k = (uint32_t)want < want ? (uint32_t)want + 1 : (uint32_t)want, left = k; /* rounded up */
    for (int b = GY_GUARD_BINS - 1; b >= 0; b--) { /* from the slowest bin down */
        uint16_t take = bins[b] < left ? bins[b] : (uint16_t)left;
        out[b] = take;
        left -= take;
    }
    return k - left;
}

static double root(double x) /* Newton's square root: the controller library needs no libm */
{
    if (!(x > 0))
        return 0;
    double r = x > 1 ? x : 1;
    for (int i = 0; i < 200; i++) {
        double next = 0.5 * (r + x / r);
        if (next >= r)
            break;
        r = next;
    }
    return r;
}

double gy_guard_scale_z(const uint16_t *arm, uint32_t m, const uint16_t *stop, uint32_t n, int shift)
{
    if (!m || !n)
        return 0;
    /* below[b]: stop jobs in bins below b; a job of the arm in bin a is below a stop job in bin s
     * when a < s + shift, i.e. s > a - shift, and ties with s = a - shift. */
    double u = 0;
    uint32_t below = 0; /* stop jobs in bins < a - shift, kept as a moves up */
    int next = 0;       /* the next stop bin to add to below */
    for (int a = 0; a < GY_GUARD_BINS; a++) {
        int tie = a - shift;
        while (next < tie && next < GY_GUARD_BINS)
            below += stop[next++];
        if (!arm[a])
            continue;
        uint32_t at = tie >= 0 && tie < GY_GUARD_BINS ? stop[tie] : 0;
        uint32_t under = tie <= 0 ? 0 : below; /* stop bins < tie */
        u += (double)arm[a] * ((double)(n - under - at) + 0.5 * at);
    }
    double mn = (double)m * n;
    return (u - mn / 2) / root(mn * ((double)m + n + 1) / 12);
}

double gy_guard_median_z(const uint16_t *arm, uint32_t m, const uint16_t *stop, uint32_t n, int shift)
{
    if (!m || !n)
        return 0;
    int bound = (int)gy_guard_bin_quantile(stop, n, 0.5) + shift;
    double over = 0; /* the arm's jobs past stop's median times 1.01^shift, its bin's half */
    for (int a = bound < 0 ? 0 : bound; a < GY_GUARD_BINS; a++)
        over += a == bound ? 0.5 * arm[a] : arm[a];
    /* the binomial spread of the arm's share, and as much again for stop's median, whose rank's share
     * spreads the same */
    return (over / m - 0.5) / root(0.25 / m + 0.25 / n);
}

void gy_guard_block_u(const uint32_t *arm, uint32_t m, const uint32_t *stop, uint32_t k, uint32_t eps_ppm,
                      int32_t *u2, uint32_t *var12)
{
    /* twice U, so that a tie (half a pair) stays whole: a job of the arm against stop's job times
     * 1 + eps, compared as integers (microseconds x 10^6) */
    int64_t twice = 0;
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < k; j++) {
            uint64_t a = (uint64_t)arm[i] * 1000000u, s = (uint64_t)stop[j] * (1000000u + eps_ppm);
            twice += a < s ? 2 : a == s ? 1 : 0;
        }
    *u2 = (int32_t)(twice - (int64_t)m * k);
    *var12 = m * k * (m + k + 1);
}

double gy_guard_blocks_z(int64_t u2_sum, uint64_t var12_sum)
{
    /* z = sum(U - mk/2) / sqrt(sum mk(m+k+1)/12) = (u2_sum / 2) / sqrt(var12_sum / 12) */
    return var12_sum ? (double)u2_sum / 2 / root((double)var12_sum / 12) : 0;
}

double gy_guard_ratio_gain_z(const struct gy_guard_ratio_sums *tried, const struct gy_guard_ratio_sums *base,
                             double reference)
{
    const struct gy_guard_ratio_sums *side[2] = {tried, base};
    double rate[2], rel_var = 0; /* each side's rate, and the sum of their variances over rate^2 */
    for (int i = 0; i < 2; i++) {
        const struct gy_guard_ratio_sums *s = side[i];
        if (!(s->work > 0 && s->us > 0 && s->spread >= 0 && s->spread <= DBL_MAX)) /* NaN or infinite: no evidence */
            return 0;
        rate[i] = s->work / s->us;
        rel_var += (s->spread > 0 ? s->spread : 0) / (s->us * s->us) / (rate[i] * rate[i]);
    }
    double q = rate[0] / rate[1], se = q * root(rel_var), z;
    if (se > 0)
        z = (q - reference) / se;
    else
        z = q > reference ? GY_GUARD_GAIN_Z_MAX : q < reference ? -GY_GUARD_GAIN_Z_MAX : 0;
    return z > GY_GUARD_GAIN_Z_MAX ? GY_GUARD_GAIN_Z_MAX : z < -GY_GUARD_GAIN_Z_MAX ? -GY_GUARD_GAIN_Z_MAX : z == z ? z : 0;
}
