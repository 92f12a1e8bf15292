/* The guarded rule (controller/guarded.c) replayed on an HP's measured job times: a trace of stop
 * jobs from the GPU, in the order they ran, stands for the HP under every arm, each partition arm's
 * jobs multiplied by COST. So a COST of 1 is an arm that costs the HP nothing, with the HP's real
 * noise (its drift between stretches of jobs included, which synthetic noise lacks); 1.03 one that
 * costs 3 %. COST may also give each size its own factor, SMS=F pairs joined by '/' (16=1/64=1.5:
 * 16 SMs free, 64 SMs 1.5x, every size not named 1; a disjoint arm goes by its SMs), as a GPU-bound
 * HP that needs what a larger partition takes. Each run starts at another point of the trace
 * (wrapping round) with another seed.
 * The LP launches at 340 per ms in the gaps, and during the HP's jobs at the rate the test fixtures
 * give each arm (none under stop), so that an arm within the bound is worth promoting; in a gap at a
 * depth 4 % more a step of the ladder (DEPTH_GAP_GAIN_STEP), so that a depth within it is too.
 *   guard-replay TRACE COST JOBS RUNS [in-force]
 * TRACE: one job time in microseconds a line. With `in-force` the cost falls only on the jobs of an
 * arm in force (its trial ran costless): how long the rule takes to drop an arm that costs more
 * once promoted than its learning showed. Prints one line: runs in which a partition arm was
 * promoted, in force at the end, the median job of the first promotion, the share of jobs on arms,
 * the HP's time over the trace's (what the arms' costs added to its jobs, all runs together), the
 * LP's launches over what it would have launched with stop on every job (what the arms gave it), and
 * the runs in which the promoted arm was dropped again, the median jobs from promotion to drop, the
 * sizes in force at the end, and how the trials ended (all runs together, by outcome).
 * With `depth=F` the rule also learns the queue depth (--guard-depth) and every job after a gap at a
 * depth costs F (1: a depth that costs the HP nothing, as a static 2 ms bound beside the launch-bound
 * HP on the H200, bench/results/2026-12-02-h200-wave-limit); the line then also says in how many runs
 * a depth was in force at the end, which, and the median job of the first depth promotion; with
 * `depth-in-force` too, only the jobs after a gap at the depth in force cost F (its trial ran
 * costless): does the rule drop a depth that costs more once promoted than its trial showed. With
 * `gap-spread=S` the LP's launches in each gap spread by S (relative SD, normal, none below 0; 0.25-0.61
 * a cycle on the H200, bench/results/2026-12-04-h200-depth-gain-rule): does the rule promote a depth
 * by its gaps' noise. With `depth-trace=US:FILE` (each depth at most once) a job after a gap at depth US
 * takes the next of FILE's job times instead of the trace's x F: the times a learning recorded at
 * that depth, in order, so that a cost that falls on some jobs only (on the H100 the GEMM HP's
 * 2000 us cost its jobs after a gap of 8 ms or more 8 %, the others nothing,
 * bench/results/2026-12-07-h100-depth-gross-mixed) is replayed as it was; the trace's jobs then go
 * to the stop and arm jobs in turn, not by job number. With `tail=Q` only the trace's slow jobs, at
 * or past its Q-quantile, cost COST
 * under an arm (a server whose long requests need the SMs its short ones leave): the line then says
 * the share of those jobs that ran on a partition arm and the HP's p99 over the trace's (each run's
 * jobs as they ran against the same jobs traced; the median run and the largest). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guarded.h"

#define MAX_TRACE 1000000
#define DEPTH_US(us) us,
static const uint32_t ladder_us[GY_GUARD_DEPTH_COUNT] = {GY_GUARD_DEPTHS(DEPTH_US)}; /* 1000, 2000, 4000 */
static int ladder_index(long us) /* of a depth of the ladder, -1 for any other (0: the own bound) */
{
    for (int i = 0; i < GY_GUARD_DEPTH_COUNT; i++)
        if (ladder_us[i] == us)
            return i;
    return -1;
}
#define GAP_LAUNCHES_PER_MS 340.0
static const double job_launches_per_ms[GY_GUARD_ARM_COUNT] = {0, 100, 180, 240, 240, 300, 340, 340};
/* The LP launches more in a gap at a depth (the rule promotes a depth by that, guarded.c): 4 % more
 * a step of the ladder (1000, 2000, 4000 us), about what the depths gave training and eager GEMM LPs
 * on the H200 (bench/results/2026-12-03-h200-matrix-coverage-2); the replay is of the HP's side. */
#define DEPTH_GAP_GAIN_STEP 0.04
static double depth_gain_step = DEPTH_GAP_GAIN_STEP; /* depth-gain=S: another step (0: an LP the depth gives nothing) */
static double gap_gain(const struct gy_guard *g)
{
    int i = ladder_index(atomic_load_explicit(&g->queue_us, memory_order_relaxed)); /* the gap after this job */
    return i < 0 ? 1.0 : 1.0 + depth_gain_step * (i + 1);
}

/* The gaps' spread (gap-spread=S): its own xorshift64* stream a run, so the HP's side is the same
 * with and without it. */
static double gap_spread;
static uint64_t spread_state;
static double spread_uniform(void)
{
    spread_state ^= spread_state >> 12, spread_state ^= spread_state << 25, spread_state ^= spread_state >> 27;
    return (double)((spread_state * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}
/* depth-trace=US:FILE: job times recorded at a depth of the ladder (NULL: the trace's x F) */
static uint32_t *depth_trace[GY_GUARD_DEPTH_COUNT];
static long depth_trace_n[GY_GUARD_DEPTH_COUNT];

/* Job times in whole microseconds, one a line, into a new array of *n (at most MAX_TRACE); NULL and
 * a reason in *why if the file cannot be read or holds fewer than 2 x GY_GUARD_RECENT times. */
static uint32_t *read_times(const char *path, long *n, const char **why);

static double spread_factor(void) /* 1 + S x a standard normal (Irwin-Hall of 12: no libm), at least 0 */
{
    if (gap_spread <= 0)
        return 1.0;
    double sum = 0;
    for (int i = 0; i < 12; i++)
        sum += spread_uniform();
    double f = 1.0 + gap_spread * (sum - 6.0);
    return f > 0 ? f : 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

static long median(long *v, long n) /* of the first n (sorted in place), -1 for none */
{
    qsort(v, n, sizeof *v, cmp_long);
    return n ? v[(n - 1) / 2] : -1;
}

static int usage(const char *why)
{
    fprintf(stderr, "guard-replay: %s\nusage: guard-replay TRACE COST JOBS RUNS [in-force] [tail=Q] [depth=F] (TRACE: a job time "
                    "in us a line; COST: the arms' factor, 1 to 4, or SMS=F pairs joined by '/' (16=1/64=1.5); JOBS, "
                    "RUNS: 1 to 10000000; in-force: the cost only once in force; tail=Q: only on the jobs past the trace's Q-quantile; depth=F: the queue depth learnt too, "
                    "F from 1 to 4 the cost of a job after a gap at a depth; depth-gain=S: the LP launches 1 + S x k "
                    "as much in a gap at the k-th depth, default 0.04; gap-spread=S: the LP's launches in a gap spread "
                    "by S, 0 to 1)\n", why);
    return 2;
}

static uint32_t *read_times(const char *path, long *n, const char **why)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        *why = strerror(errno);
        return NULL;
    }
    uint32_t *out = malloc(MAX_TRACE * sizeof *out);
    unsigned long v;
    *n = 0;
    while (out && *n < MAX_TRACE && fscanf(f, "%lu", &v) == 1)
        out[(*n)++] = v > 0 && v < UINT32_MAX ? (uint32_t)v : 1;
    int bad = !out || (!feof(f) && *n < MAX_TRACE);
    fclose(f);
    if (bad || *n < 2 * GY_GUARD_RECENT) {
        *why = !out ? "out of memory" : bad ? "not a job time (whole microseconds) on every line" : "fewer than 32 job times";
        free(out);
        return NULL;
    }
    return out;
}

static int parse_count(const char *text, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(text, &end, 10);
    return errno || *end || *out < 1 || *out > 10000000 ? -1 : 0;
}

/* COST: one factor for every arm, or SMS=F pairs joined by '/' (sizes not named: 1). -1 if bad. */
static int parse_costs(const char *text, double cost[GY_GUARD_ARM_COUNT])
{
    char *end;
    for (int a = 0; a < GY_GUARD_ARM_COUNT; a++)
        cost[a] = 1.0;
    if (!strchr(text, '=')) {
        double all = strtod(text, &end);
        if (*end || end == text || !(all >= 1 && all <= 4))
            return -1;
        for (int a = GY_ARM_STOP + 1; a < GY_GUARD_ARM_COUNT; a++)
            cost[a] = all;
        return 0;
    }
    for (const char *p = text; *p;) {
        errno = 0;
        long sms = strtol(p, &end, 10);
        if (errno || end == p || *end != '=')
            return -1;
        double f = strtod(end + 1, &end);
        if (!(f >= 1 && f <= 4) || (*end && *end != '/'))
            return -1;
        bool named = false;
        for (int a = GY_ARM_STOP + 1; a < GY_GUARD_ARM_COUNT; a++)
            if ((long)gy_guard_arm_sms((enum gy_guard_arm)a) == sms)
                cost[a] = f, named = true;
        if (!named)
            return -1;
        p = *end ? end + 1 : end;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 14)
        return usage("four arguments, then `in-force`, `tail=Q`, `depth=F` (and `depth-in-force`, `depth-gain=S`, "
                     "`gap-spread=S`, `depth-trace=US:FILE`), or nothing");
    bool in_force_only = false, depth_on = false, depth_in_force_only = false, depth_gain_set = false,
         spread_set = false, depth_traced = false;
    double depth_cost = 1.0, tail_q = 0;
    for (int i = 5; i < argc; i++) {
        char *end;
        if (strncmp(argv[i], "tail=", 5) == 0 && !tail_q) {
            tail_q = strtod(argv[i] + 5, &end);
            if (*end || end == argv[i] + 5 || !(tail_q > 0 && tail_q < 1))
                return usage("tail=Q: Q a quantile between 0 and 1 (0.9: the slowest tenth of the trace's jobs)");
        } else if (strcmp(argv[i], "in-force") == 0 && !in_force_only) {
            in_force_only = true;
        } else if (strcmp(argv[i], "depth-in-force") == 0 && !depth_in_force_only) {
            depth_in_force_only = true;
        } else if (strncmp(argv[i], "depth-gain=", 11) == 0 && !depth_gain_set) {
            depth_gain_set = true;
            depth_gain_step = strtod(argv[i] + 11, &end);
            if (*end || end == argv[i] + 11 || !(depth_gain_step >= 0 && depth_gain_step <= 1))
                return usage("depth-gain=S: S a number from 0 to 1");
        } else if (strncmp(argv[i], "gap-spread=", 11) == 0 && !spread_set) {
            spread_set = true;
            gap_spread = strtod(argv[i] + 11, &end);
            if (*end || end == argv[i] + 11 || !(gap_spread >= 0 && gap_spread <= 1))
                return usage("gap-spread=S: S a number from 0 to 1");
        } else if (strncmp(argv[i], "depth-trace=", 12) == 0) {
            int k = ladder_index(strtol(argv[i] + 12, &end, 10));
            if (end == argv[i] + 12 || *end != ':' || k < 0 || depth_trace[k])
                return usage("depth-trace=US:FILE: US a depth of the ladder (1000, 2000, 4000), each at most once");
            const char *why = NULL;
            depth_trace[k] = read_times(end + 1, &depth_trace_n[k], &why);
            if (!depth_trace[k]) {
                fprintf(stderr, "guard-replay: %s: %s\n", end + 1, why);
                return 2;
            }
            depth_traced = true;
        } else if (strncmp(argv[i], "depth=", 6) == 0 && !depth_on) {
            depth_on = true;
            depth_cost = strtod(argv[i] + 6, &end);
            if (*end || end == argv[i] + 6 || !(depth_cost >= 1 && depth_cost <= 4))
                return usage("depth=F: F a number from 1 to 4");
        } else {
            return usage("after the four arguments only `in-force`, `depth=F`, `depth-in-force`, `depth-gain=S`, "
                         "`gap-spread=S`, `depth-trace=US:FILE` and `tail=Q`, each at most once");
        }
    }
    if ((depth_in_force_only || depth_gain_set || spread_set || depth_traced) && !depth_on)
        return usage("`depth-in-force`, `depth-gain=S`, `gap-spread=S` and `depth-trace=US:FILE` qualify `depth=F`: give it too");
    double cost[GY_GUARD_ARM_COUNT];
    long jobs, runs;
    if (parse_costs(argv[2], cost))
        return usage("COST must be a number from 1 to 4, or SMS=F pairs of the arms' sizes joined by '/'");
    if (parse_count(argv[3], &jobs) || parse_count(argv[4], &runs))
        return usage("JOBS and RUNS must be whole numbers from 1 to 10000000");
    FILE *f = fopen(argv[1], "r");
    if (!f) {
        fprintf(stderr, "guard-replay: cannot open %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    static uint32_t trace[MAX_TRACE], sorted[MAX_TRACE];
    long n = 0;
    unsigned long v;
    while (n < MAX_TRACE && fscanf(f, "%lu", &v) == 1)
        trace[n++] = v > 0 && v < UINT32_MAX ? (uint32_t)v : 1;
    int bad = !feof(f) && n < MAX_TRACE;
    fclose(f);
    if (bad || n < 2 * GY_GUARD_RECENT) {
        fprintf(stderr, "guard-replay: %s: %s\n", argv[1],
                bad ? "not a job time (whole microseconds) on every line" : "fewer than 32 job times");
        return 2;
    }
    memcpy(sorted, trace, n * sizeof *trace);
    qsort(sorted, n, sizeof *sorted, cmp_u32);
    double gap_ms = 3.0 * sorted[n / 2] / 1000.0; /* a job's median and 3 of it idle: a quarter load */
    /* with tail=Q: the jobs at or past this time are the slow ones, the only ones an arm costs */
    uint32_t slow_from = tail_q ? sorted[(long)(tail_q * (double)(n - 1))] : 0;
    long slow_jobs = 0, slow_on_arms = 0;
    double *p99_over = tail_q ? calloc(runs, sizeof *p99_over) : NULL;
    uint32_t *ran = tail_q ? calloc(jobs, sizeof *ran) : NULL, *traced = tail_q ? calloc(jobs, sizeof *traced) : NULL;
    if (tail_q && (!p99_over || !ran || !traced))
        return 2;

    long promoted = 0, at_end = 0, on_arms = 0, ends_in[GY_GUARD_ARM_COUNT] = {0};
    long trial_ends[GY_GUARD_TRIAL_OUTCOME_COUNT] = {0};
    double traced_us = 0, ran_us = 0; /* the trace's job times, and the same jobs as they ran */
    double lp_total = 0, lp_stop = 0;  /* the LP's launches, and those it would have made under stop */
    long depth_at_end = 0, depth_ends[GY_GUARD_DEPTH_COUNT] = {0};
    long *first = calloc(runs, sizeof *first), *dropped = calloc(runs, sizeof *dropped);
    long *depth_first = calloc(runs, sizeof *depth_first);
    if (!first || !dropped || !depth_first)
        return 2;
    for (long r = 0; r < runs; r++) {
        static struct gy_guard g;
        gy_guard_init(&g);
        gy_guard_configure(&g, GY_GUARD_DEFAULT_EPS_P50, GY_GUARD_DEFAULT_EPS_P99, GY_GUARD_DEFAULT_STOP_SHARE,
                           0x5eed + (uint64_t)r);
        gy_guard_set_depth(&g, depth_on);
        spread_state = 0x9e3779b97f4a7c15ull * (uint64_t)(r + 1) + 1;
        depth_first[r] = -1;
        long depth_jobs[GY_GUARD_DEPTH_COUNT] = {0}, stop_k = 0; /* recorded times taken this run: each depth's, stop's */
        uint64_t now_ns = 1000000000ull, lp = 0;
        long start = r * n / runs;
        first[r] = dropped[r] = -1;
        for (long j = 0; j < jobs; j++) {
            uint32_t depth;
            enum gy_guard_arm arm = gy_guard_pick(&g, &depth);
            struct gy_guard_change begun = gy_guard_cycle(&g, arm, now_ns, lp);
            if (begun.trial_ended)
                trial_ends[begun.trial_end.outcome]++;
            /* with recorded depths each stop or arm job takes the next stop job recorded, as each depth
             * job takes the next recorded at its depth: the two streams advance as they ran on the GPU
             * (indexed by the job number instead, stop's jobs outran the depth's and a 2000-us trial
             * that ran 2 304 of its jobs there ended after 768, bench/results/2026-12-07-h100-depth-gross-mixed) */
            uint32_t base_us = trace[(start + (depth_traced ? stop_k : j)) % n], us = base_us;
            int dk = depth ? ladder_index(depth) : -1; /* the depth's recorded times, if given: the cost as it was */
            bool recorded = dk >= 0 && depth_trace[dk] && (!depth_in_force_only || depth == g.depth_in_force);
            stop_k += !recorded; /* a recorded depth job leaves the stop job for the next */
            if (recorded)
                us = depth_trace[dk][(r * depth_trace_n[dk] / runs + depth_jobs[dk]++) % depth_trace_n[dk]];
            bool slow = base_us >= slow_from; /* every job without tail=Q */
            bool costs = slow && arm != GY_ARM_STOP && (!in_force_only || (arm == g.in_force && arm != g.trial));
            bool depth_costs = depth && !recorded && (!depth_in_force_only || depth == g.depth_in_force);
            double factor = (costs ? cost[arm] : 1.0) * (depth_costs ? depth_cost : 1.0);
            uint64_t ns = (uint64_t)(us * factor * 1000.0);
            if (tail_q) {
                slow_jobs += slow;
                slow_on_arms += slow && arm != GY_ARM_STOP;
                ran[j] = (uint32_t)(ns / 1000), traced[j] = base_us;
            }
            now_ns += ns + (uint64_t)(gap_ms * 1e6);
            double cycle_lp = job_launches_per_ms[arm] * ns / 1e6 + GAP_LAUNCHES_PER_MS * gap_ms * gap_gain(&g) * spread_factor();
            lp += (uint64_t)cycle_lp;
            lp_total += cycle_lp;
            lp_stop += GAP_LAUNCHES_PER_MS * gap_ms;
            on_arms += arm != GY_ARM_STOP;
            traced_us += base_us; /* the HP's job under stop there */
            ran_us += ns / 1000.0;
            struct gy_guard_change c =
                gy_guard_record(&g, arm, depth, ns, (uint64_t)(job_launches_per_ms[arm] * ns / 1e6));
            if (c.trial_ended)
                trial_ends[c.trial_end.outcome]++;
            if (c.changed && c.to != GY_ARM_STOP && first[r] < 0)
                first[r] = j;
            else if (c.changed && c.to == GY_ARM_STOP && first[r] >= 0 && dropped[r] < 0)
                dropped[r] = j - first[r];
            if (c.depth_changed && c.depth_to && depth_first[r] < 0)
                depth_first[r] = j;
        }
        if (tail_q) {
            qsort(ran, jobs, sizeof *ran, cmp_u32);
            qsort(traced, jobs, sizeof *traced, cmp_u32);
            long at = (long)(0.99 * (double)(jobs - 1));
            p99_over[r] = (double)ran[at] / (double)traced[at];
        }
        depth_at_end += g.depth_in_force != 0;
        for (int i = 0; i < GY_GUARD_DEPTH_COUNT; i++)
            depth_ends[i] += g.depth_in_force == ladder_us[i];
        promoted += first[r] >= 0;
        at_end += g.in_force != GY_ARM_STOP;
        if (g.in_force < GY_GUARD_ARM_COUNT)
            ends_in[g.in_force]++;
    }
    long k = 0, d = 0, e = 0;
    for (long r = 0; r < runs; r++) {
        if (first[r] >= 0)
            first[k++] = first[r];
        if (dropped[r] >= 0)
            dropped[d++] = dropped[r];
        if (depth_first[r] >= 0)
            depth_first[e++] = depth_first[r];
    }
    printf("cost %s%s: promoted in %ld of %ld runs, in force at the end in %ld, first promotion at job %ld "
           "(median), %.1f %% of jobs on partition arms, HP time +%.2f %% over the trace's, LP launches +%.2f %% over "
           "stop's; dropped after promotion in %ld, %ld jobs after it (median); in force at the end by SMs:",
           argv[2], in_force_only ? " once in force" : "", promoted, runs, at_end, median(first, k),
           100.0 * on_arms / ((double)jobs * runs), 100.0 * (ran_us / traced_us - 1.0),
           100.0 * (lp_total / lp_stop - 1.0), d, median(dropped, d));

    for (int a = GY_ARM_STOP + 1; a < GY_GUARD_ARM_COUNT; a++)
        if (ends_in[a])
            printf(" %u:%ld", gy_guard_arm_sms((enum gy_guard_arm)a), ends_in[a]);
    printf("; trials ended:");
    for (int o = 0; o < GY_GUARD_TRIAL_OUTCOME_COUNT; o++)
        if (trial_ends[o])
            printf(" %s=%ld", gy_guard_trial_outcome_name((enum gy_guard_trial_outcome)o), trial_ends[o]);
    if (depth_on) {
        printf("; depth: in force at the end in %ld of %ld runs, promoted in %ld, first depth promotion at job %ld "
               "(median), by us:", depth_at_end, runs, e, median(depth_first, e));
        for (int i = 0; i < GY_GUARD_DEPTH_COUNT; i++)
            if (depth_ends[i])
                printf(" %u:%ld", ladder_us[i], depth_ends[i]);
    }
    if (tail_q) {
        qsort(p99_over, runs, sizeof *p99_over, cmp_double);
        printf("; tail: slow jobs on partition arms %.1f %%, HP p99 x%.4f of the trace's in the median run, x%.4f at "
               "most", slow_jobs ? 100.0 * slow_on_arms / slow_jobs : 0.0, p99_over[(runs - 1) / 2], p99_over[runs - 1]);
    }
    printf("\n");
    free(p99_over);
    free(ran);
    free(traced);
    free(depth_first);
    for (int i = 0; i < GY_GUARD_DEPTH_COUNT; i++)
        free(depth_trace[i]);
    free(dropped);
    free(first);
    return 0;
}
