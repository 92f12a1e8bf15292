/* The guarded policy: each HP job gets an arm (stop, or a partition of 16 to 120 SMs for the
 * lower processes, the HP's own launches confined to the rest under a disjoint arm), stop
 * interleaved at random as the running baseline; the arm in force is the one whose cycles (an HP
 * job's begin to the next one's) give the LP the most launches per second, among those whose HP job
 * times stay within epsilon of stop's.
 *
 *   guard_stats.c  order statistics and their distribution-free confidence bounds (pure);
 *   guarded.c      the rule: which arm a job gets, and what a finished job changes (pure, on a
 *                  struct gy_guard, so that tests feed it synthetic durations);
 *   guarded_job.c  the rule inside the protocol: called by gate.c under the segment's mutex at
 *                  job begin and end, and the word the lower processes read. */
#ifndef GY_GUARDED_H
#define GY_GUARDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpuyield.h"
#include "guarded_layout.h"

/* Defaults of the settings; the tools' flags and run_exp's keys take the epsilons. */
#define GY_GUARD_DEFAULT_EPS_P50 0.02
#define GY_GUARD_DEFAULT_EPS_P99 0.05
#define GY_GUARD_DEFAULT_STOP_SHARE 0.25
#define GY_GUARD_DEFAULT_SEED 0x9e3779b97f4a7c15ull
#define GY_GUARD_MAX_EPS 1.0 /* a bound of 2x stop is no guard any more */

/* The rule's constants (guarded.c says why each). */
#define GY_GUARD_MIN_JOBS 32        /* samples stop needs before a trial; the first look of an arm */
#define GY_GUARD_LOOK_Z 2.5         /* a look passes at z >= this (one-sided 0.6 %: a look every 128 jobs) */
#define GY_GUARD_OUT_Z 3.09         /* ... and shows the arm out of the bound at z <= -this (0.1 %) */
#define GY_GUARD_TRIAL_MAX 2048     /* an arm not within the bound after this many jobs is rejected */
#define GY_GUARD_DEPTH_TRIAL_MAX (2u * GY_GUARD_TRIAL_MAX) /* ... a depth, judged at half the bound, after
                                       twice as many: as many as its window holds (GY_GUARD_WINDOW_MAX) */
#define GY_GUARD_FUTILE_JOBS 128    /* ... and one whose jobs are more often over the bound than under it at
                                       a look from this many jobs on (z < 0): futile, it ends there */
#define GY_GUARD_CONFIRM_JOBS 512   /* a promoted arm's first jobs in force, on confirmation: judged as a
                                       trial's (a futile look drops it), no larger arm tried meanwhile */
#define GY_GUARD_CONFIRM_FUTILE_STOP_JOBS 128 /* ... futile there once stop's paired window holds this
                                       many too (it gets a quarter of the jobs then) */
#define GY_GUARD_P99_MIN_JOBS 256   /* a p99 is judged (so an arm passed) from this many jobs a window: its
                                       3rd slowest; of 32 it is the slowest, or none of the slow ones */
#define GY_GUARD_LOOK_STEP 128     /* from GY_GUARD_P99_MIN_JOBS on, the full test looks this often */
#define GY_GUARD_TAIL_SHARE 0.1     /* the slow jobs: each window's slowest tenth, judged at eps_p99 */
#define GY_GUARD_WINDOW_MAX 4096    /* a window's counts are halved here (it ages) */
#define GY_GUARD_TRIAL_STOP_SHARE 0.5 /* the stop share while an arm is tried (at least) */
#define GY_GUARD_BACKOFF_JOBS 500   /* a rejected or fallen-back arm is not tried again before */
#define GY_GUARD_MAX_DOUBLINGS 5    /* ... and twice as long each time in a row, up to 32 x */
#define GY_GUARD_GROSS_EPS 4        /* a fallback block over stop's median by 4 x eps_p50 (8 %) or more: */
#define GY_GUARD_GROSS_STRIKES 3    /* ... counts as this many drops in a row (the first backoff 4 x) */
#define GY_GUARD_PROBE_JOBS 4       /* a retrial after GROSS_STRIKES drops: its first jobs are judged one by one, then together */
#define GY_GUARD_RECHECK_JOBS 8000  /* windows of the partition arms reset this often (between trials) */
#define GY_GUARD_SHIFT 2.0          /* stop's recent median this factor above or below its window's: re-base */
#define GY_GUARD_RATE_CYCLES 32     /* the HP's mean cycle (its job rate) is a running mean over about this many */
#define GY_GUARD_CYCLE_MAX_BASES 64 /* a cycle longer than this many of stop's median jobs is not counted */
#define GY_GUARD_CYCLE_MAX_NS 1000000000ull /* ... and before there is a median, one over a second */
#define GY_GUARD_CYCLE_HORIZON_US 120000000u /* an arm's cycle sums halve past 2 minutes of cycles */
#define GY_GUARD_CYCLE_GAIN 0.03    /* promoted only with this much more LP launches/s over cycles */
#define GY_GUARD_LP_FUTILE_JOBS 64  /* a trial whose cycles give the LP no more than in force's ends here */
#define GY_GUARD_DEPTH_LP_FUTILE_JOBS 128 /* ... a depth's, whose gain is a few per cent: from here (guarded.c) */
#define GY_GUARD_GAIN_Z GY_GUARD_LOOK_Z /* ... and promoted only with its gain over half that shown at this z */
#define GY_GUARD_GAIN_Z_MAX 1000.0  /* the gain's z is clamped here (no spread: a test feeding exact numbers) */

/* ---- statistics (guard_stats.c) ------------------------------------------------------------- */
/* The k-th smallest (1-based, 1..n) of n values; `scratch` holds n values (sorted there). */
uint32_t gy_guard_order_stat(const uint32_t *values, uint32_t n, uint32_t k, uint32_t *scratch);
/* Ranks of a distribution-free confidence interval for the median of n samples, each side at
 * one-sided level `conf` (e.g. 0.975): the lower rank l and upper rank u with P(X(l) <= median)
 * >= conf and P(X(u) >= median) >= conf. For small n, l = 1 / u = n (the best there is). */
void gy_guard_median_ranks(uint32_t n, double conf, uint32_t *lower, uint32_t *upper);
/* The histogram bin (0..GY_GUARD_BINS-1, guard_bins.h) of a duration over the base. */
unsigned gy_guard_bin(uint32_t us, uint32_t base_us);
/* A bin's duration in microseconds: its centre (bins 0 and GY_GUARD_BINS-1: their inner edge). */
double gy_guard_bin_us(unsigned bin, uint32_t base_us);
/* The bin of the nearest-rank q-quantile of a histogram of n jobs (0 when n is 0). */
unsigned gy_guard_bin_quantile(const uint16_t *bins, uint32_t n, double q);
/* The whole bins nearest to a factor 1 + eps (2 for 2 %: 1.01^2 = 1.0201). */
int gy_guard_bins_for(double eps);
/* The slowest `share` of a histogram's n jobs (rounded up; part of the bin where they begin) as a
 * histogram in out; returns how many. */
uint32_t gy_guard_bins_top(const uint16_t *bins, uint32_t n, double share, uint16_t *out);
/* Mann-Whitney's test on two histograms, standardized: U counts the pairs (arm job, stop job) with
 * the arm's bin below the stop's bin + shift (a tie counts half), z = (U - mn/2) / sqrt(mn(m+n+1)/12).
 * z >> 0: the arm's jobs are shorter than stop's times 1.01^shift (its whole distribution, not one
 * quantile); z << 0: longer. Ranks only, so any distribution of noise; ties make it conservative. */
double gy_guard_scale_z(const uint16_t *arm, uint32_t m, const uint16_t *stop, uint32_t n, int shift);

/* Mood's median test on two histograms, standardized: the share of the arm's m jobs past stop's
 * median bin + shift (a job in that bin counts half) against one half, over the spread of that share
 * and of stop's median (n jobs): z >> 0, the arm's median is over stop's times 1.01^shift. Where a
 * cost falls on some jobs only, the rank test above can stay near 0 while the median moves. */
double gy_guard_median_z(const uint16_t *arm, uint32_t m, const uint16_t *stop, uint32_t n, int shift);

/* One block of the van Elteren test (Mann-Whitney within strata, summed): the m jobs of an arm's
 * block against the k jobs of stop in the same stretch of time, U counting the pairs with the arm's
 * job below stop's times 1 + eps_ppm / 10^6 (a tie half). *u2 = 2U - mk (its excess over no
 * difference, doubled to stay whole), *var12 = mk(m+k+1) (12 x U's variance). Sums over blocks
 * compare the arm with stop within each stretch only, so a drift of the HP's own speed between
 * stretches is no noise to the test (m, k <= GY_GUARD_RECENT). */
void gy_guard_block_u(const uint32_t *arm, uint32_t m, const uint32_t *stop, uint32_t k, uint32_t eps_ppm,
                      int32_t *u2, uint32_t *var12);
/* The standardized sum over blocks: z >> 0, the arm's jobs shorter than stop's times 1 + eps. */
double gy_guard_blocks_z(int64_t u2_sum, uint64_t var12_sum);

/* Cycles summed for a ratio of sums (launches per microsecond over them): their launches, length,
 * and the sum of each cycle's squared launches off the ratio (its spread, sum (w - R u)^2). */
struct gy_guard_ratio_sums {
    double work, us, spread;
};
/* How far one ratio of sums stands over another times `reference`, standardized: (Q - reference) /
 * se(Q), Q = (work/us of `tried`) / (work/us of `base`), its variance by the delta method from
 * each side's spread (the ratio estimator's variance: spread / us^2). z >> 0: tried's rate is
 * above base's times reference beyond its noise. 0 when a side has nothing counted;
 * +-GY_GUARD_GAIN_Z_MAX without any spread (and for any reading past it), so always finite. */
double gy_guard_ratio_gain_z(const struct gy_guard_ratio_sums *tried, const struct gy_guard_ratio_sums *base,
                             double reference);

/* ---- the rule (guarded.c) ------------------------------------------------------------------- */

/* Defaults: stop in force, no trial yet (the first job starts the trial of 16). */
void gy_guard_init(struct gy_guard *g);
/* Whether every arm, depth, reason and window ring position in g is in range. The guard is in the
 * shared segment, where another process may have left any bytes: a guard that is not sane is
 * started over by the next of the functions below that changes it (stop in force, the settings
 * kept), and reads as empty to those that only read it. */
bool gy_guard_sane(const struct gy_guard *g);
/* Settings; -1 when out of range (eps 0..GY_GUARD_MAX_EPS, share 0..1). */
int gy_guard_configure(struct gy_guard *g, double eps_p50, double eps_p99, double stop_share, uint64_t seed);
/* A job begins: the arm it gets (counts it in g->jobs and in g->open; sets g->current), and in
 * *depth_us (may be NULL) the queue depth the gap before it ran at (0: the lower processes' own);
 * draws the next job's class and publishes the depth of the gap after this one (g->queue_us). */
enum gy_guard_arm gy_guard_pick(struct gy_guard *g, uint32_t *depth_us);
/* What a job's end changed in force: from -> to, and why. */
/* A trial's end, as status and GPUYIELD_VERBOSE say it. */
struct gy_guard_trial_view {
    enum gy_guard_arm arm, in_force; /* the arm tried, the arm in force it was tried against */
    enum gy_guard_trial_outcome outcome;
    uint32_t jobs;                   /* in its window when it ended */
    double z;                        /* the last full test's z */
    double ratio_p50, ratio_p99;     /* the last decision's ratios to stop */
    double lp_cycle_ratio;           /* its cycles' LP launches per second over the arm in force's (0: unmeasured) */
    uint64_t at_job;                 /* the guard's job count then (the segment keeps its low 32 bits) */
};
struct gy_guard_change {
    bool changed;
    enum gy_guard_arm from, to;
    enum gy_guard_reason reason;
    bool depth_changed; /* the queue depth in force (microseconds, 0: the lower processes' own) */
    uint32_t depth_from, depth_to;
    enum gy_guard_reason depth_reason;
    bool trial_ended; /* a trial ended (the guard keeps the last one's end): how, and its figures */
    struct gy_guard_trial_view trial_end;
    /* a depth's trial ended out of the bound (a promotion is depth_changed): which depth, after how
     * many of its jobs, why (rejected by its test, its cap or a futile look; fallback: a block of
     * its jobs clearly out), the decision's ratios to stop */
    bool depth_trial_ended;
    uint32_t depth_tried_us, depth_trial_jobs;
    enum gy_guard_reason depth_trial_reason;
    double depth_ratio_p50, depth_ratio_p99;
};
/* A job of `arm` after a gap at depth_us (as gy_guard_pick gave) ended after duration_ns, the lower
 * processes having made lp_work progress (partition launches + copies) during it. Counts it out of
 * g->open, records it, applies the rule. */
struct gy_guard_change gy_guard_record(struct gy_guard *g, enum gy_guard_arm arm, uint32_t depth_us,
                                       uint64_t duration_ns, uint64_t lp_work);
/* An HP job of `arm` begins at now_ns, the lower processes having launched lp_launches kernels and
 * graphs so far: the cycle of the job begun before it (its begin to this one) is counted into that
 * job's arm (cycle_work, cycle_us), this job's opens. A cycle longer than
 * GY_GUARD_CYCLE_MAX_BASES of stop's median jobs (an idle HP: the LP alone) or with fewer launches
 * than at its start (a lower process left) is not counted. */
struct gy_guard_change gy_guard_cycle(struct gy_guard *g, enum gy_guard_arm arm, uint64_t now_ns, uint64_t lp_launches);
/* A job counted out without a measurement (its process was reaped): only g->open changes. */
void gy_guard_forget(struct gy_guard *g, enum gy_guard_arm arm);
/* Pin `arm` in force (tests, operators, measuring one arm): trial stopped, reason FORCED, its
 * window and stop's paired one started afresh; no trial, fallback or re-check until a reset, stop
 * still interleaved at its share so that the arm's cost shows beside stop's. */
void gy_guard_force(struct gy_guard *g, enum gy_guard_arm arm);
/* Whether the rule may try queue depths for the lower processes between HP jobs (off by default:
 * on the H100 a GPU-bound HP paid for the trials; see docs/guarded.md); off drops any in force. */
void gy_guard_set_depth(struct gy_guard *g, bool on);
/* A promoted arm is on confirmation (guarded.c) for its first GY_GUARD_CONFIRM_JOBS jobs in force
 * (a fresh window and a fresh paired one for stop): a look that finds them futile drops it, and no
 * larger arm is tried meanwhile, so that its jobs in force are the ones measured. */
bool gy_guard_on_confirmation(const struct gy_guard *g);
/* The same for a queue depth promoted with stop in force: its first GY_GUARD_CONFIRM_JOBS jobs in
 * force (fresh windows) are judged as a trial's, no trial meanwhile. */
bool gy_guard_depth_on_confirmation(const struct gy_guard *g);
/* Forget what was learned (the lower workload changed): every window and backoff cleared, stop in
 * force, reason RESET; settings, random state and job counts kept. */
struct gy_guard_change gy_guard_reset(struct gy_guard *g);

/* One arm as status shows it. */
struct gy_guard_arm_stats {
    uint64_t jobs;       /* ever */
    uint32_t window;     /* samples in its window now (its histogram) */
    double p50_ms, p99_ms; /* over the window; 0 when empty */
    double lp_per_s;     /* lower partition launches + copies per second of HP job, over the window */
    double lp_cycle_per_s; /* lower launches per second over its recent cycles (its job + the gap after) */
};
void gy_guard_arm_stats(const struct gy_guard *g, enum gy_guard_arm arm, struct gy_guard_arm_stats *out);
/* Where the trial stands, for status (gy_guard_trial_outlook: false when no arm is tried). */
struct gy_guard_outlook {
    enum gy_guard_arm arm; /* the arm tried */
    uint32_t jobs;         /* in its window */
    bool judged;           /* a z could be computed (a base, its jobs, GY_GUARD_MIN_JOBS of stop's) */
    double z;              /* as its next look would compute it; passes at GY_GUARD_LOOK_Z */
    int64_t more_jobs;     /* of its own, at this trend, to pass; -1 where z <= 0 (no trend within) */
    bool beyond_cap;       /* ... past GY_GUARD_TRIAL_MAX: the trial ends first unless the trend improves */
    bool slow_judged;      /* its slowest tenth's test could be computed (GY_GUARD_P99_MIN_JOBS a window) */
    double slow_z;         /* ... its z: the trial passes only at >= 0, is out at <= -GY_GUARD_OUT_Z */
};
bool gy_guard_trial_outlook(const struct gy_guard *g, struct gy_guard_outlook *out);
/* The same for the queue depth's trial (false when none is tried): arm is the arm in force it is
 * tried with, z against half the p50 bound, the cap GY_GUARD_DEPTH_TRIAL_MAX. On the H200 a 2000-us
 * trial ran 4 700 jobs undecided with nothing in status to say so (2026-12-02-h200-depth-first). */
bool gy_guard_depth_outlook(const struct gy_guard *g, struct gy_guard_outlook *out);
/* The depth window's (jobs of the depth tried, or with stop in force of the depth in force). */
void gy_guard_depth_stats(const struct gy_guard *g, struct gy_guard_arm_stats *out);
/* The lower processes' launches per second over stop jobs' cycles whose gap ran at `us` (0: their
 * own bound; one of GY_GUARD_DEPTHS), what a depth is promoted by; 0 when unmeasured. */
double gy_guard_gap_lp_per_s(const struct gy_guard *g, uint32_t us);
/* The depth tried's gain over the depth in force's x (1 + GY_GUARD_CYCLE_GAIN / 2), its z against
 * the cycles' spread (promotion needs GY_GUARD_GAIN_Z); 0 with no trial or fewer than
 * GY_GUARD_MIN_JOBS cycles a side. */
double gy_guard_depth_gain_z(const struct gy_guard *g);
const char *gy_guard_arm_name(enum gy_guard_arm arm);  /* "stop", "partition:16", ...; "?" if unknown */
unsigned gy_guard_arm_sms(enum gy_guard_arm arm);      /* the lower processes' SMs; 0 for stop */
/* Was a job whose guard job count was kept as `dated` (its low 32 bits: stop_recent_job) counted at
 * or after the count `since`, the guard's count being `jobs` now? Its age (jobs - dated, modulo
 * 2^32) is exact for any job less than 2^32 jobs old; a recent one is thousands old. */
static inline bool gy_guard_dated_since(uint64_t jobs, uint32_t dated, uint64_t since)
{
    uint64_t age = (uint32_t)((uint32_t)jobs - dated);
    return since <= jobs && age <= jobs - since;
}

/* A disjoint arm: the HP's launches during its job go to the complement of the lower processes'
 * SMs. Inline: the HP's launch path asks it while a partition arm is open. */
#define GY_GUARD_ARM_DISJOINT_CASE(suffix, name, sms, disjoint) case GY_ARM_##suffix: return disjoint;
static inline bool gy_guard_arm_disjoint(enum gy_guard_arm arm)
{
    switch (arm) {
        GY_GUARD_ARMS(GY_GUARD_ARM_DISJOINT_CASE)
    default:
        return false;
    }
}
#undef GY_GUARD_ARM_DISJOINT_CASE
/* The partition arm of a disjoint arm's size (the lower processes' side of it); any other arm itself. */
enum gy_guard_arm gy_guard_arm_lower_twin(enum gy_guard_arm arm);
const char *gy_guard_reason_text(enum gy_guard_reason reason);
const char *gy_guard_reason_name(enum gy_guard_reason reason); /* "promoted", "fallback", ... */
const char *gy_guard_trial_outcome_name(enum gy_guard_trial_outcome outcome); /* "promoted", "no-gain", ... */
const char *gy_guard_trial_outcome_text(enum gy_guard_trial_outcome outcome);
/* The last trial's end as the guard keeps it; false when none ended yet (or the guard is not sane). */
bool gy_guard_last_trial(const struct gy_guard *g, struct gy_guard_trial_view *out);
/* Whether a test had judged the trial when it ended (else its z and ratios are not its own). */
bool gy_guard_trial_tested(const struct gy_guard_trial_view *t);
/* "last test z Z, p50 xR, p99 xR of stop; its cycles gave the LP xR of ARM's" (or what is not known). */
void gy_guard_trial_figures(const struct gy_guard_trial_view *t, char *buf, size_t len);
/* An epsilon as the flags and file keys give it: a decimal fraction 0..GY_GUARD_MAX_EPS (0.02 is
 * 2 %) -> *out; -1 on anything else (empty, trailing text, NaN, out of range). */
int gy_guard_parse_eps(const char *text, double *out);
/* The name of an arm -> *out; -1 when unknown. */
int gy_guard_arm_parse(const char *text, enum gy_guard_arm *out);

/* ---- inside the protocol (guarded_job.c) --------------------------------------------------- */

/* At segment creation: defaults. */
void gy_guarded_init_segment(struct gy_segment *seg);
/* Whether jobs of this segment are guarded now: policy guarded under MPS (without MPS guarded
 * drains, as partition does, and nothing is measured). */
bool gy_guarded_active(const gy_shm *shm);
/* Under the mutex, once the job is counted in (before the gate word is published): pick its arm,
 * note the lower processes' progress so far, and close the cycle of the HP job before it
 * (gy_guard_cycle; *change says a trial that a shift of the HP's job rate ended: tell it once
 * unlocked). job->guard_arm stays -1 when not guarded, and for a job that is not the HP's: at
 * level 0, or below the top registered priority. */
void gy_guarded_begin_locked(gy_shm *shm, gy_job *job, struct gy_guard_change *change);
/* Under the mutex, as the job is counted out: record its duration (now_ns - entered_ns) and the
 * lower progress made since its begin; *change says what the rule changed. */
void gy_guarded_end_locked(gy_shm *shm, const gy_job *job, uint64_t now_ns, struct gy_guard_change *change);
/* The lower processes' progress so far: partition launches + copies of every slot below
 * `priority`. Under the mutex. */
uint64_t gy_guarded_lp_work_locked(const struct gy_segment *seg, int priority);
/* The arm the open jobs give lower launches now (read on their slow path only). */
/* The queue depth the lower processes' time:US bounds are raised to now (0: their own); read at a
 * group's start, never per launch. */
static inline uint32_t gy_guarded_queue_us(const gy_shm *shm)
{
    return atomic_load_explicit(&shm->seg->guard.queue_us, memory_order_acquire);
}
static inline enum gy_guard_arm gy_guarded_current(const gy_shm *shm)
{
    uint32_t arm = atomic_load_explicit(&shm->seg->guard.current, memory_order_acquire);
    return arm < GY_GUARD_ARM_COUNT ? (enum gy_guard_arm)arm : GY_ARM_STOP;
}
/* Settings of a segment's rule (the creator's flags, tests): -1 with err filled when out of
 * range. seed 0: the default seed. */
int gy_guarded_configure(gy_shm *shm, double eps_p50, double eps_p99, double stop_share, uint64_t seed, gy_err *err);
/* gy_guard_set_depth under the mutex (the creator's --guard-depth); EINVAL when not guarded. */
int gy_guarded_set_depth(gy_shm *shm, bool on, gy_err *err);
/* gy_guard_force under the mutex (tests, operators). */
int gy_guarded_force(gy_shm *shm, enum gy_guard_arm arm, gy_err *err);
/* gy_guard_reset on the segment, under its mutex; EINVAL when its policy is not guarded. */
int gy_guarded_reset(gy_shm *shm, gy_err *err);
/* A copy of the rule's state taken under the mutex (status, metrics, tests). */
int gy_guarded_snapshot(gy_shm *shm, struct gy_guard *out, gy_err *err);
/* gy_wait_until_allowed_on (gate.c) that also returns, with *turned set, as soon as the arm of
 * the open jobs is a partition while the gate is still closed (a job of arm partition began while
 * a stop job held this launch, and the stop job ended): the launch goes to its partition rather
 * than waiting through the partition job. */
uint64_t gy_wait_until_allowed_or_partition_on(gy_shm *shm, int device, int *allowed_at, bool *turned);
/* GPUYIELD_VERBOSE=1: one line on stderr for a change of the arm in force (outside the mutex). */
void gy_guarded_tell(const gy_shm *shm, const struct gy_guard_change *change);

/* ---- what status shows (guarded_status.c) -------------------------------------------------- */

/* One JSON object (status --json's "guarded"); bytes written or needed, snprintf-style. */
int gy_guarded_json(const struct gy_guard *g, char *buf, size_t len);
/* The table expcontroller status prints. */
void gy_guarded_print(FILE *to, const struct gy_guard *g);
/* Prometheus families (gpuyield_guarded_*) for a segment label (escaped by the caller). */
int gy_guarded_metrics(const struct gy_guard *g, const char *segment, char *buf, size_t len);

#endif
