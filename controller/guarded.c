/* The guarded rule (guarded.h), a pure function of struct gy_guard: no clock, no segment, no
 * process, so that tests drive it with synthetic durations.
 *
 * A job gets stop with probability stop_share (the running baseline, so that a slow drift of the
 * HP's own job time is never blamed on an arm; at least half the jobs while an arm is tried), else
 * the arm being tried, else the arm in force. The arms give the LP 16, 32, 64, 96 or 120 SMs; 64 is
 * tried first, then 120, then by bisection below any that failed (next_arm), and only once stop has
 * GY_GUARD_MIN_JOBS samples.
 *   Promotion is slow and distribution-free: at 32, 64, 128, 256 samples of the arm's window and
 *   every 128 from there, a Mann-Whitney rank test must show the arm's jobs shorter than stop's
 *   times (1 + eps_p50) at one-sided 0.6 % (z >= 2.5): for the window under test block by block
 *   (van Elteren: each block of 16 of its jobs against stop's jobs of the same stretch, so that a
 *   drift of the HP's own speed is no noise; add_block), else over every (arm job, stop job) pair
 *   of the windows. And the arm's p99 must be within
 *   (1 + eps_p99) of stop's, both windows holding GY_GUARD_P99_MIN_JOBS (a p99 of fewer is noise).
 *   Noise lowers z, so noise never promotes; an arm shown longer (z <= -3.09), a trial not within
 *   after GY_GUARD_TRIAL_MAX jobs, or a futile one (z < 0 from GY_GUARD_FUTILE_JOBS jobs on), is
 *   rejected. Both windows cover the same time: stop's paired window starts with the trial. The
 *   durations are kept as histograms of 1 % bins around a base (stop's first median), so a window
 *   holds thousands of jobs in a few hundred bytes and a job's end costs one bin.
 *   Demotion is fast: once a block of an arm's GY_GUARD_RECENT jobs clearly leaves the bound
 *   (their median's 99.9 % lower bound above the p50 bound, or 4 of them above the p99 bound), it
 *   is out at once, not tried again for GY_GUARD_BACKOFF_JOBS jobs (doubling while it keeps failing).
 * In force is the arm within the bound whose cycles (an HP job's begin to the next one's) give the
 * LP the most launches per second, a tried one by GY_GUARD_CYCLE_GAIN over the one in force
 * (lp_cycle_verdict), on confirmation for its first GY_GUARD_CONFIRM_JOBS jobs in force (fresh
 * windows; a futile look drops it; no larger arm tried meanwhile). Not its launches during the
 * HP's jobs: on the H100 16 SMs gave a GEMM LP 881 launches/s there against stop's none, yet 0.96
 * of stop's over whole cycles, its backlog of slow kernels costing it more after each job
 * (bench/results/2026-11-25-lp-cycles). Every GY_GUARD_RECHECK_JOBS jobs
 * (between trials) the partition arms' windows reset, so the arm in force is tested again and
 * larger ones retried; when stop's recent median moves by more than a factor GY_GUARD_SHIFT from its
 * window's, the HP's speed changed: the windows start again around the new median and the arm in
 * force is measured again (shifted()); the same when the HP's job rate (its mean cycle) moves by
 * that factor (note_rate).
 *
 * The queue depth is the second dimension: what the lower processes may keep queued (their time:US
 * bound raised to 1000, 2000 or 4000 us) in the gap before an HP job, i.e. what the job finds ahead
 * of it on the GPU when it begins. A deeper queue feeds a host-bound LP through its own stalls
 * (more LP throughput) and costs a GPU-bound HP the drain. Depths are tried up the ladder (2000
 * first, 4000 after it, 1000 below a failed 2000): the first one before the arms, with stop in
 * force, so that its test sees its own cost (on the H200 a costless 2000 us tried on top of a 16-SM
 * arm that cost 1-3 % stayed undecided for 4 700 jobs: bench/results/2026-12-02-h200-depth-first),
 * the arms then at it against stop at the own depth (the two together within the bound), deeper
 * ones on the arm in force once no arm is tried; by the same tests against
 * the same stop samples (at half the p50 bound, block by block while tried: record_depth), whose
 * gaps stay at the lower processes' own bound: the job's class (stop
 * sample or not) is drawn at the begin before it, so the gap runs at its depth. A depth within the
 * bound is promoted if its gaps (over stop jobs' cycles, by the depth of the gap after the job) give
 * the LP GY_GUARD_CYCLE_GAIN more launches per second than the depth in force's, over half of that
 * shown at z >= GY_GUARD_GAIN_Z against the cycles' spread in its trial's stretch (depth_gain_z;
 * until then the trial runs on, to its cap), with stop in force
 * on confirmation as a promoted arm is (its first GY_GUARD_CONFIRM_JOBS jobs in force in fresh
 * windows, out when futile against the whole p50 bound); one out of it goes like an arm (fallback
 * to the own bound, backoff). */
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "guarded.h"

#define FALLBACK_CONF 0.999
#define P99_OUT_OF_RECENT 4 /* of a block of 16 above the p99 bound: clearly out (1 % expected) */
#define PROBE_JOINT_OUT 3   /* of a probed retrial's first 4 jobs over stop's p90 and gross margin: out */
#define BLOCKS_VAR12_AGE (256u * GY_GUARD_RECENT * GY_GUARD_RECENT * (2 * GY_GUARD_RECENT + 1))

#define ARM_ROW(suffix, name, sms, disjoint) {name, sms},
static const struct {
    const char *name;
    unsigned sms;
} arm_rows[GY_GUARD_ARM_COUNT] = {GY_GUARD_ARMS(ARM_ROW)};
#undef ARM_ROW

#define REASON_ROW(suffix, code, text) {code, text},
static const struct {
    const char *code, *text;
} reason_rows[GY_GUARD_REASON_COUNT] = {GY_GUARD_REASONS(REASON_ROW)};
#undef REASON_ROW

#define TRIAL_END_ROW(suffix, code, text) {code, text},
static const struct {
    const char *code, *text;
} trial_end_rows[GY_GUARD_TRIAL_OUTCOME_COUNT] = {GY_GUARD_TRIAL_ENDS(TRIAL_END_ROW)};
#undef TRIAL_END_ROW

const char *gy_guard_trial_outcome_name(enum gy_guard_trial_outcome outcome)
{
    return (unsigned)outcome < GY_GUARD_TRIAL_OUTCOME_COUNT ? trial_end_rows[outcome].code : "?";
}

const char *gy_guard_trial_outcome_text(enum gy_guard_trial_outcome outcome)
{
    return (unsigned)outcome < GY_GUARD_TRIAL_OUTCOME_COUNT ? trial_end_rows[outcome].text : "?";
}

const char *gy_guard_arm_name(enum gy_guard_arm arm)
{
    return (unsigned)arm < GY_GUARD_ARM_COUNT ? arm_rows[arm].name : "?";
}

unsigned gy_guard_arm_sms(enum gy_guard_arm arm) { return (unsigned)arm < GY_GUARD_ARM_COUNT ? arm_rows[arm].sms : 0; }

enum gy_guard_arm gy_guard_arm_lower_twin(enum gy_guard_arm arm)
{
    if (!gy_guard_arm_disjoint(arm))
        return arm;
    for (int a = 0; a < GY_GUARD_ARM_COUNT; a++)
        if (arm_rows[a].sms == arm_rows[arm].sms && !gy_guard_arm_disjoint((enum gy_guard_arm)a))
            return (enum gy_guard_arm)a;
    return arm;
}

const char *gy_guard_reason_text(enum gy_guard_reason reason)
{
    return (unsigned)reason < GY_GUARD_REASON_COUNT ? reason_rows[reason].text : "?";
}

const char *gy_guard_reason_name(enum gy_guard_reason reason)
{
    return (unsigned)reason < GY_GUARD_REASON_COUNT ? reason_rows[reason].code : "?";
}

int gy_guard_parse_eps(const char *text, double *out)
{
    if (!text || !*text)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || *end || !(v >= 0 && v <= GY_GUARD_MAX_EPS)) /* NaN fails the comparison */
        return -1;
    *out = v;
    return 0;
}

int gy_guard_arm_parse(const char *text, enum gy_guard_arm *out)
{
    for (int i = 0; text && i < GY_GUARD_ARM_COUNT; i++)
        if (strcmp(text, arm_rows[i].name) == 0) {
            *out = (enum gy_guard_arm)i;
            return 0;
        }
    return -1;
}

/* x in parts per million, saturated: a ratio of job times may be past 4 294 (an HP job stalled for
 * seconds beside a 0.1 ms median), and a cast out of range is undefined (the guard_state fuzzer). */
static uint32_t ppm(double x)
{
    double v = x * 1e6 + 0.5;
    return v >= 4294967295.0 ? UINT32_MAX : v > 0 ? (uint32_t)v : 0; /* NaN: 0 */
}

void gy_guard_init(struct gy_guard *g)
{
    memset(g, 0, sizeof *g);
    atomic_store(&g->current, GY_ARM_STOP);
    g->in_force = GY_ARM_STOP;
    g->trial = GY_GUARD_NO_ARM;
    g->reason = GY_GUARD_WHY_START;
    g->depth_reason = GY_GUARD_WHY_START;
    g->cycle_arm = GY_GUARD_NO_ARM;
    g->blocks_arm = GY_GUARD_NO_ARM;
    gy_guard_configure(g, GY_GUARD_DEFAULT_EPS_P50, GY_GUARD_DEFAULT_EPS_P99, GY_GUARD_DEFAULT_STOP_SHARE,
                       GY_GUARD_DEFAULT_SEED);
}

static uint64_t next_random(struct gy_guard *g);
static bool next_is_stop(struct gy_guard *g, uint32_t share_ppm);
static void publish_depth(struct gy_guard *g);
static bool is_look(uint32_t n);

int gy_guard_configure(struct gy_guard *g, double eps_p50, double eps_p99, double stop_share, uint64_t seed)
{
    /* written as negations so that NaN is refused too */
    if (!(eps_p50 >= 0 && eps_p50 <= GY_GUARD_MAX_EPS) || !(eps_p99 >= 0 && eps_p99 <= GY_GUARD_MAX_EPS) ||
        !(stop_share >= 0 && stop_share <= 1))
        return -1;
    g->eps_p50_ppm = ppm(eps_p50);
    g->eps_p99_ppm = ppm(eps_p99);
    g->stop_share_ppm = ppm(stop_share);
    g->rng = seed ? seed : GY_GUARD_DEFAULT_SEED; /* xorshift's state must not be 0 */
    g->stop_block = 0; /* the next job's class at this share, the first of a new block */
    g->next_stop = next_is_stop(g, g->stop_share_ppm);
    publish_depth(g);
    return 0;
}

/* xorshift64*: fast, deterministic, plenty for a coin with a bias. */
static uint64_t next_random(struct gy_guard *g)
{
    uint64_t x = g->rng ? g->rng : GY_GUARD_DEFAULT_SEED;
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    g->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* Whether the next job is a stop sample at share_ppm. Stop samples are drawn in blocks of
 * STOP_BLOCK jobs, each holding floor(STOP_BLOCK x share) of them (one more with the probability of
 * its fraction) at random places: the share is kept on average as a coin would keep it, but
 * every stretch of 4 jobs holds both kinds in proportion, so that each block of the arm's jobs
 * has stop's jobs of the same time to be compared with (replayed on the H200's and H100's
 * measured stop jobs: bench/results/2026-12-01-test-at-the-noise-limit). Another share (a trial
 * begins or ends, the settings change) draws a new block at once. stop_block: bits 0-3 the block's
 * stop places, 4-7 the next place, 8-27 the share it was drawn at. */
#define STOP_BLOCK 4u
static bool next_is_stop(struct gy_guard *g, uint32_t share_ppm)
{
    share_ppm = share_ppm > 1000000u ? 1000000u : share_ppm;
    uint32_t mask = g->stop_block & 0xfu, place = g->stop_block >> 4 & 0xfu, drawn_at = g->stop_block >> 8;
    if (place == 0 || place >= STOP_BLOCK || drawn_at != share_ppm) {
        uint64_t want = (uint64_t)share_ppm * STOP_BLOCK;
        uint32_t k = (uint32_t)(want / 1000000u) + (next_random(g) % 1000000u < want % 1000000u);
        uint32_t order[STOP_BLOCK] = {0, 1, 2, 3};
        for (uint32_t i = STOP_BLOCK - 1; i > 0; i--) { /* Fisher-Yates */
            uint32_t j = (uint32_t)(next_random(g) % (i + 1)), t = order[i];
            order[i] = order[j], order[j] = t;
        }
        mask = 0;
        for (uint32_t i = 0; i < k && i < STOP_BLOCK; i++)
            mask |= 1u << order[i];
        place = 0;
    }
    bool stop = mask >> place & 1u;
    g->stop_block = mask | (place + 1) << 4 | share_ppm << 8;
    return stop;
}

static bool valid_arm(uint32_t arm) { return arm < GY_GUARD_ARM_COUNT; }

/* The arm the open jobs give lower launches: stop while any open job is a stop sample, else the
 * smallest partition open (two HP jobs at once must both stay within their bound). */
static void publish_current(struct gy_guard *g)
{
    uint32_t current = GY_ARM_STOP;
    for (uint32_t a = 0; a < GY_GUARD_ARM_COUNT; a++)
        if (g->open[a]) {
            current = a;
            break;
        }
    atomic_store_explicit(&g->current, current, memory_order_seq_cst);
}

static void reset_window(struct gy_guard_window *w)
{
    memset(w->bins, 0, sizeof w->bins);
    w->n = 0;
    w->recent_n = 0;
    w->lp_work = w->lp_ns = 0;
}

/* Stop's paired window and the block sums of the window under test start again together: both
 * cover the same stretch of time. */
static void reset_paired(struct gy_guard *g)
{
    reset_window(&g->paired_stop);
    g->blocks_arm = GY_GUARD_NO_ARM;
    g->blocks_u2 = 0;
    g->blocks_var12 = 0;
}

/* The window the full test is about: the trial's, else the arm in force's. */
static uint32_t under_test(const struct gy_guard *g) { return g->trial != GY_GUARD_NO_ARM ? g->trial : g->in_force; }

static double progress(const struct gy_guard *g, uint32_t arm)
{
    const struct gy_guard_window *w = &g->arms[arm];
    return arm == GY_ARM_STOP || !w->lp_ns ? 0.0 : (double)w->lp_work * 1e9 / (double)w->lp_ns;
}

/* Launches per second of counted cycles' sums (0 when none were counted). */
static double launch_rate(uint32_t work, uint32_t us) { return us ? (double)work * 1e6 / (double)us : 0.0; }

static double cycle_rate(const struct gy_guard *g, uint32_t arm) { return launch_rate(g->cycle_work[arm], g->cycle_us[arm]); }

/* What cycles summed to (work, us) gave the lower processes against (than_work, than_us): 1 when
 * GY_GUARD_CYCLE_GAIN more launches per second (worth promoting), -1 when no more (a trial can only
 * cost the HP), 0 in between, or when either has no counted cycle: nothing to compare. */
static int gain_verdict(uint32_t work, uint32_t us, uint32_t than_work, uint32_t than_us)
{
    if (!us || !than_us)
        return 0;
    double mine = launch_rate(work, us), theirs = launch_rate(than_work, than_us);
    return mine > theirs * (1.0 + GY_GUARD_CYCLE_GAIN) ? 1 : mine <= theirs ? -1 : 0;
}

/* What `arm`'s cycles gave the lower processes against `than`'s (gain_verdict); no counted cycle
 * means each was longer than GY_GUARD_CYCLE_MAX_BASES jobs: the HP so sparse that the LP has the
 * GPU almost all the time anyway. */
static int lp_cycle_verdict(const struct gy_guard *g, uint32_t arm, uint32_t than)
{
    return gain_verdict(g->cycle_work[arm], g->cycle_us[arm], g->cycle_work[than], g->cycle_us[than]);
}

static uint16_t e4(double x)
{
    double v = x * 1e4 + 0.5;
    return v >= 65535.0 ? UINT16_MAX : v > 0 ? (uint16_t)v : 0; /* NaN: 0 */
}

/* The trial ends (how: outcome), kept as the last trial with what was measured of it (the last
 * full test's z and ratios, its cycles' LP launches over the arm in force's) and told in *c when
 * given (GPUYIELD_VERBOSE); no arm is tried after it until the caller starts one. */
static void end_trial(struct gy_guard *g, enum gy_guard_trial_outcome outcome, struct gy_guard_change *c)
{
    uint32_t arm = g->trial;
    g->trial = GY_GUARD_NO_ARM;
    if (!valid_arm(arm))
        return;
    double mine = cycle_rate(g, arm), theirs = valid_arm(g->in_force) ? cycle_rate(g, g->in_force) : 0.0;
    struct gy_guard_trial_view v = {.arm = (enum gy_guard_arm)arm,
                                    .in_force = (enum gy_guard_arm)g->in_force,
                                    .outcome = outcome,
                                    .jobs = g->arms[arm].n,
                                    .z = g->z_milli / 1e3,
                                    .ratio_p50 = g->ratio_p50_ppm / 1e6,
                                    .ratio_p99 = g->ratio_p99_ppm / 1e6,
                                    .lp_cycle_ratio = mine > 0 && theirs > 0 ? mine / theirs : 0.0,
                                    .at_job = g->jobs};
    int32_t centi = g->z_milli / 10;
    g->last_trial = (struct gy_guard_trial_end){
        .arm = (uint8_t)arm,
        .outcome = (uint8_t)outcome,
        .in_force = (uint8_t)g->in_force,
        .z_centi = (int16_t)(centi > INT16_MAX ? INT16_MAX : centi < -INT16_MAX ? -INT16_MAX : centi),
        .jobs = (uint16_t)(v.jobs > UINT16_MAX ? UINT16_MAX : v.jobs),
        .ratio_p50_e4 = e4(v.ratio_p50),
        .ratio_p99_e4 = e4(v.ratio_p99),
        .lp_cycle_e4 = e4(v.lp_cycle_ratio),
        .at_job = (uint32_t)g->jobs};
    if (g->trials_ended < UINT32_MAX)
        g->trials_ended++;
    if (c) {
        c->trial_ended = true;
        c->trial_end = v;
    }
}

bool gy_guard_last_trial(const struct gy_guard *g, struct gy_guard_trial_view *out)
{
    memset(out, 0, sizeof *out);
    const struct gy_guard_trial_end *e = &g->last_trial;
    if (!gy_guard_sane(g) || !g->trials_ended || !valid_arm(e->arm) || !valid_arm(e->in_force) ||
        e->outcome >= GY_GUARD_TRIAL_OUTCOME_COUNT)
        return false;
    *out = (struct gy_guard_trial_view){.arm = (enum gy_guard_arm)e->arm,
                                        .in_force = (enum gy_guard_arm)e->in_force,
                                        .outcome = (enum gy_guard_trial_outcome)e->outcome,
                                        .jobs = e->jobs,
                                        .z = e->z_centi / 100.0,
                                        .ratio_p50 = e->ratio_p50_e4 / 1e4,
                                        .ratio_p99 = e->ratio_p99_e4 / 1e4,
                                        .lp_cycle_ratio = e->lp_cycle_e4 / 1e4,
                                        .at_job = e->at_job};
    return true;
}

static bool backing_off(const struct gy_guard *g, uint32_t arm) { return g->jobs < g->backoff_until[arm]; }

/* A partition put in force by a trial that passed, not confirmed yet: on confirmation for its first
 * GY_GUARD_CONFIRM_JOBS jobs in force, confirmed once through them. */
static bool promoted_unconfirmed(const struct gy_guard *g)
{
    return valid_arm(g->in_force) && g->in_force != GY_ARM_STOP && !g->confirmed &&
           g->reason == GY_GUARD_WHY_PROMOTED && !g->pinned;
}

bool gy_guard_on_confirmation(const struct gy_guard *g)
{
    return promoted_unconfirmed(g) && g->arms[g->in_force].n <= GY_GUARD_CONFIRM_JOBS;
}

/* A depth put in force by its trial with stop in force, not confirmed yet: on confirmation for its
 * first GY_GUARD_CONFIRM_JOBS jobs in force, as a promoted arm (record_depth). */
static bool depth_promoted_unconfirmed(const struct gy_guard *g)
{
    return g->depth_in_force && !g->depth_confirmed && g->depth_reason == GY_GUARD_WHY_PROMOTED &&
           g->in_force == GY_ARM_STOP && !g->depth_trial && !g->pinned;
}

bool gy_guard_depth_on_confirmation(const struct gy_guard *g)
{
    return depth_promoted_unconfirmed(g) && g->depth_window.n <= GY_GUARD_CONFIRM_JOBS;
}

/* The next partition arm to try above `arm`, the largest within the bound so far, or
 * GY_GUARD_NO_ARM: from stop the middle one (64 SMs), then the largest; below a larger arm that was
 * dropped and still backs off, the one halfway to it (a bisection: 16 below a failed 64 from stop,
 * then 32 once 16 passed). The middle first since 2026-11-25 (before: 16, then 64, then 120): on
 * the H100 beside the launch-bound HP, 64 and 120 SMs pinned gave the LP 0.82-0.86 of alone where
 * corun gave 0.66-0.79, at the HP's corun p50 (bench/results/2026-11-25-mechanism-ceiling), while
 * 16 SMs gave +0.00-0.09; a noisy HP's trial takes thousands of jobs, and a learning spent on 16
 * first reached 64 in one cell of four. A GPU-bound HP's cost is gross on every arm (the GEMM HP
 * 1.75x on 16 SMs, 1.86x on 64): the fallback drops the middle one after a block as it did 16.
 * A larger arm than one that failed is not tried, and a pair whose cost grows with the LP's SMs
 * gets the middle one without first waiting out a trial of the largest: the launch-bound HP's
 * 120-SM arm cost it 1.01-1.04 of stop, right at the bound, while 64 SMs cost 1.00-1.01
 * (bench/results/2026-11-24-guarded-v3).
 * Disjoint arms are never tried: measured on the H100 beside every pair screened they cost the HP
 * as much as their partition twin or more (the launch-bound HP 0.95-1.16 of stop against 0.99-1.03,
 * BERT 2.3-2.8 against 1.09-1.25, a GEMM HP 1.9-3.6; bench/results/2026-11-24-guarded-v3), so they are
 * there only to be pinned and measured (gy_guard_force). */
static uint32_t next_arm(const struct gy_guard *g, uint32_t arm)
{
    if (!valid_arm(arm))
        return GY_GUARD_NO_ARM;
    int ladder[GY_GUARD_ARM_COUNT], count = 0, from = -1; /* -1: stop, below the ladder */
    for (uint32_t a = GY_ARM_STOP + 1; a < GY_GUARD_ARM_COUNT; a++)
        if (!gy_guard_arm_disjoint((enum gy_guard_arm)a))
            ladder[count++] = (int)a; /* the table is ordered by size */
    for (int i = 0; arm != GY_ARM_STOP && i < count; i++)
        if (arm_rows[ladder[i]].sms <= arm_rows[arm].sms)
            from = i;
    int failed = count;
    for (int i = from + 1; i < count && failed == count; i++)
        if (backing_off(g, (uint32_t)ladder[i]))
            failed = i;
    int next = failed < count ? from + (failed - from) / 2 : from < count / 2 ? count / 2 : count - 1;
    return next > from ? (uint32_t)ladder[next] : GY_GUARD_NO_ARM;
}

/* A gross cost in the trial of `arm` (the middle one, tried first) says the HP may need what the LP
 * takes there. The partitions between the one in force and it back off once (GY_GUARD_BACKOFF_JOBS),
 * not as long as it does, and go on probation as a gross arm's retrial does (their first jobs
 * probed, probe_out and probe_joint_out): so the next trial is below it (next_arm's bisection), and
 * costs a GPU-bound HP, gross on every size, at most GY_GUARD_PROBE_JOBS jobs, not a block (the GEMM
 * HP on the H100: 1.75x of stop on 16 SMs, 1.86x on 64; on the H200 a first 16-SM trial after 64
 * SMs failed grossly ran a block of 16 at 1.14x in a measured round at 60 % load,
 * bench/results/2026-11-29-h200-graph-twins, call C). Until 2026-11-29 they backed off as long as
 * the gross arm, whose retrial came first and failed again: replayed on 42 H200 cells with 16 and
 * 32 SMs free and 64 or more at 1.5x, a small partition was promoted in 2 of 840 learnings of 8 000
 * jobs; now in 755, the HP's time +0.12 % over its trace against +0.13 %
 * (replay_probation_below_*.md there). A costless arm is rarely dropped by the probe and its strikes
 * go once it is within the bound. Not after an arm in force falls back: the HP changed, and the
 * smaller arms are tried again as before. */
static void back_off_below(struct gy_guard *g, uint32_t arm)
{
    unsigned floor = valid_arm(g->in_force) ? arm_rows[g->in_force].sms : 0;
    uint64_t once = g->jobs + GY_GUARD_BACKOFF_JOBS;
    for (uint32_t a = GY_ARM_STOP + 1; a < GY_GUARD_ARM_COUNT; a++)
        if (!gy_guard_arm_disjoint((enum gy_guard_arm)a) && arm_rows[a].sms > floor &&
            arm_rows[a].sms < arm_rows[arm].sms) {
            if (g->backoff_until[a] < once)
                g->backoff_until[a] = once;
            if (g->strikes[a] < GY_GUARD_GROSS_STRIKES)
                g->strikes[a] = GY_GUARD_GROSS_STRIKES;
        }
}

/* No partition is tried before the next re-check: the LP gains nothing from any size (its jobs
 * sent nothing to the one tried: CUDA graphs wait under every arm, or it was idle). */
static void back_off_every_arm(struct gy_guard *g)
{
    for (uint32_t a = GY_ARM_STOP + 1; a < GY_GUARD_ARM_COUNT; a++)
        if (g->backoff_until[a] < g->jobs + GY_GUARD_RECHECK_JOBS)
            g->backoff_until[a] = g->jobs + GY_GUARD_RECHECK_JOBS;
}

#define DEPTH_ROW(us) us,
static const uint32_t depth_ladder[GY_GUARD_DEPTH_COUNT] = {GY_GUARD_DEPTHS(DEPTH_ROW)};
#undef DEPTH_ROW

/* The ladder index of a depth (-1: the lower processes' own, or not on the ladder). */
static int depth_index(uint32_t us)
{
    for (int i = 0; i < GY_GUARD_DEPTH_COUNT; i++)
        if (depth_ladder[i] == us)
            return i;
    return -1;
}

/* The guard lives in the shared segment: a process that writes it wrongly (or a foreign one) can
 * leave any bytes there. What the rule uses as an arm, a depth or a window's ring position must be
 * in range, or it reads and writes past its arrays (the guard_state fuzz target: a status of a
 * window holding "more than 16" recent jobs wrote past its stack). The rest is statistics: wrong
 * ones can only make a wrong decision, which the bound and the fallback judge as any other. */
static bool window_sane(const struct gy_guard_window *w)
{
    return w->head < GY_GUARD_RECENT && w->recent_n <= GY_GUARD_RECENT;
}

static bool arm_or_none(uint32_t arm) { return valid_arm(arm) || arm == GY_GUARD_NO_ARM; }

static bool depth_or_own(uint32_t us) { return us == 0 || depth_index(us) >= 0; }

/* A depth's (or the own bound's, 0) place in the depth cycle sums: 0 the own bound, i + 1 the
 * ladder's i-th depth. */
static uint32_t depth_slot(uint32_t us) { return (uint32_t)(depth_index(us) + 1); }

bool gy_guard_sane(const struct gy_guard *g)
{
    if (!valid_arm(atomic_load_explicit(&g->current, memory_order_relaxed)) || !valid_arm(g->in_force) ||
        !arm_or_none(g->trial) || !(arm_or_none(g->blocks_arm) || g->blocks_arm == GY_GUARD_DEPTH_BLOCKS) ||
        !arm_or_none(g->cycle_arm) ||
        g->reason >= GY_GUARD_REASON_COUNT || g->depth_reason >= GY_GUARD_REASON_COUNT ||
        !depth_or_own(g->depth_in_force) || !depth_or_own(g->depth_trial) ||
        !depth_or_own(atomic_load_explicit(&g->queue_us, memory_order_relaxed)) || !depth_or_own(g->gap_us) ||
        g->eps_p50_ppm > GY_GUARD_MAX_EPS * 1e6 || g->eps_p99_ppm > GY_GUARD_MAX_EPS * 1e6 ||
        g->stop_share_ppm > 1000000u || !window_sane(&g->paired_stop) || !window_sane(&g->depth_window))
        return false;
    for (uint32_t a = 0; a < GY_GUARD_ARM_COUNT; a++)
        if (!window_sane(&g->arms[a]))
            return false;
    for (int side = 0; side < 2; side++) /* a NaN or infinite spread could read as no spread: a gain shown */
        if (!(g->gain_spread[side] >= 0 && g->gain_spread[side] <= FLT_MAX))
            return false;
    return true;
}

/* A guard found not sane starts over as a new one (stop in force, nothing learned), keeping its job
 * count, its random state and its settings where those are in range. */
static void start_over_if_not_sane(struct gy_guard *g)
{
    if (gy_guard_sane(g))
        return;
    bool settings = g->eps_p50_ppm <= GY_GUARD_MAX_EPS * 1e6 && g->eps_p99_ppm <= GY_GUARD_MAX_EPS * 1e6 &&
                    g->stop_share_ppm <= 1000000u;
    double eps_p50 = settings ? g->eps_p50_ppm / 1e6 : GY_GUARD_DEFAULT_EPS_P50;
    double eps_p99 = settings ? g->eps_p99_ppm / 1e6 : GY_GUARD_DEFAULT_EPS_P99;
    double share = settings ? g->stop_share_ppm / 1e6 : GY_GUARD_DEFAULT_STOP_SHARE;
    uint64_t jobs = g->jobs, rng = g->rng;
    uint32_t depth_on = g->depth_on == 1, changes = g->changes;
    gy_guard_init(g);
    gy_guard_configure(g, eps_p50, eps_p99, share, rng);
    g->jobs = jobs;
    g->depth_on = depth_on;
    g->changes = changes + 1;
}

static bool depth_backing_off(const struct gy_guard *g, int i) { return g->jobs < g->depth_backoff_until[i]; }

/* The next depth to try above the one in force, or 0: from the own bound the middle one (2000),
 * below it when it failed (1000); above one in force the next one up, unless it failed lately. */
static uint32_t next_depth(const struct gy_guard *g)
{
    int from = depth_index(g->depth_in_force), mid = GY_GUARD_DEPTH_COUNT / 2;
    if (from < 0) {
        for (int i = mid; i >= 0; i--)
            if (!depth_backing_off(g, i))
                return depth_ladder[i];
        return 0;
    }
    return from + 1 < GY_GUARD_DEPTH_COUNT && !depth_backing_off(g, from + 1) ? depth_ladder[from + 1] : 0;
}

static void start_depth_trial(struct gy_guard *g, uint32_t us)
{
    g->depth_trial = us;
    if (!us)
        return;
    reset_window(&g->depth_window);
    reset_paired(g);
    uint32_t d = depth_slot(us);
    g->depth_cycle_work[d] = g->depth_cycle_us[d] = 0; /* its gaps from now, beside the LP of now */
    for (int side = 0; side < 2; side++) /* its gain test's sums: this stretch's alone */
        g->gain_work[side] = g->gain_us[side] = 0, g->gain_spread[side] = 0;
}

/* A stop job's cycle, its gap at `gap_us`, into the depth trial's gain test: side 0 the gaps at
 * the lower processes' own bound (before a stop sample), 1 those at the depth tried; other gaps
 * (a trial begun since this gap was published) count for neither. Its spread is off the side's
 * rate over the cycles before it (the own bound's long-run rate for a side's first): the spread
 * off the rate over all of them would need three sums a side, and one off the rate before is a
 * prediction's, in expectation larger (the test more cautious), not smaller. */
static void add_gain_cycle(struct gy_guard *g, uint32_t gap_us, uint32_t work, uint32_t us)
{
    int side = !g->depth_trial ? -1 : gap_us == g->depth_trial ? 1 : gap_us == 0 ? 0 : -1;
    if (side < 0 || work > UINT32_MAX - g->gain_work[side] || us > UINT32_MAX - g->gain_us[side])
        return;
    double rate = g->gain_us[side] ? (double)g->gain_work[side] / g->gain_us[side]
                                   : launch_rate(g->depth_cycle_work[0], g->depth_cycle_us[0]) / 1e6;
    double off = (double)work - rate * us, square = off * off;
    g->gain_work[side] += work;
    g->gain_us[side] += us;
    /* a double past FLT_MAX does not convert (undefined): clamped, the sum then goes infinite and
     * the guard is not sane (a segment's garbage; real cycles square to under 10^12) */
    g->gain_spread[side] += (float)(square < FLT_MAX ? square : FLT_MAX);
}

/* The depth tried's gain over the depth in force, standardized against the cycles' spread: its
 * gaps' launch rate over the own bound's gaps' of the same stretch (its trial's), against the depth
 * in force's over the own bound's (their long-run sums; 1 with the own bound in force) times half
 * the bar (1 + GY_GUARD_CYCLE_GAIN / 2), each side over at least GY_GUARD_MIN_JOBS cycles of the
 * HP's mean. The point verdict (depth_cycle_verdict) reads a ratio of sums that spread 0.25-0.61 a
 * cycle on the H200: at a trial's few hundred cycles a depth giving 0-2 % read over its 3 % bar in
 * 8-36 % of draws from the learnings' own cycles, and gemm + graph promoted 1000 us at x1.019 over
 * its learning (bench/results/2026-12-04-h200-depth-gain-rule, gain_noise.txt). Replayed on 28 H200
 * learnings' stop jobs with the gaps spread 0.4 (replay_gain_z/), a costless depth whose gaps give
 * 1-3 % was in force at the end in 3 % of runs against 39 % on the point verdict alone, one giving
 * 4-12 % in 74 % against 81 %, 2-6 % in 20 % against 63 %; shown over the whole bar instead, 0 %
 * and 67 %, but a 4 % gain almost never (2-6 %: 3 %); tested once, where the HP's test passes,
 * 1 % and 48 %. */
static double depth_gain_z(const struct gy_guard *g)
{
    struct gy_guard_ratio_sums side[2];
    for (int i = 0; i < 2; i++) {
        if (!g->cycle_mean_us || g->gain_us[i] < (uint64_t)GY_GUARD_MIN_JOBS * g->cycle_mean_us)
            return 0;
        side[i] = (struct gy_guard_ratio_sums){g->gain_work[i], g->gain_us[i], g->gain_spread[i]};
    }
    double reference = 1.0;
    if (g->depth_in_force) {
        uint32_t f = depth_slot(g->depth_in_force);
        double in_force = launch_rate(g->depth_cycle_work[f], g->depth_cycle_us[f]),
               own = launch_rate(g->depth_cycle_work[0], g->depth_cycle_us[0]);
        if (in_force > 0 && own > 0)
            reference = in_force / own;
    }
    return gy_guard_ratio_gain_z(&side[1], &side[0], reference * (1.0 + GY_GUARD_CYCLE_GAIN / 2));
}

/* What the gaps at depth `us` gave the lower processes against those at `than` (0: their own
 * bound), over stop jobs' cycles: as lp_cycle_verdict for arms, 1 when GY_GUARD_CYCLE_GAIN more
 * launches per second, -1 when no more, 0 in between or unmeasured. On the H200 a depth gave the
 * LP's launches x1.04-1.16 beside ResNet-50 training and eager GEMM LPs, x0.97-1.02 beside CUDA-graph
 * LPs, whose gaps already ran at 0.94-0.97 of their rate alone; promoted there for nothing, 4000 us
 * cost the GEMM HP's p99 1.05-1.07 of alone against corun's 1.02, and a 1000-us trial beside BERT and
 * FasterRCNN 1440p (x1.009) ran 2 690 jobs at its half bound, the cell's HP p50 1.05 against 1.02
 * (bench/results/2026-12-03-h200-matrix-coverage-2). */
static int depth_cycle_verdict(const struct gy_guard *g, uint32_t us, uint32_t than)
{
    uint32_t d = depth_slot(us), t = depth_slot(than);
    return gain_verdict(g->depth_cycle_work[d], g->depth_cycle_us[d], g->depth_cycle_work[t], g->depth_cycle_us[t]);
}

static void start_trial(struct gy_guard *g, uint32_t arm)
{
    g->trial = GY_GUARD_NO_ARM;
    if (!valid_arm(arm) || g->jobs < g->backoff_until[arm])
        return;
    g->trial = arm;
    reset_window(&g->arms[arm]);
    reset_paired(g);
    g->cycle_work[arm] = g->cycle_us[arm] = 0; /* its cycles from now, beside the LP of now */
    /* no test of it yet: a trial that ends before its first (no-gain, nothing, a shift) is not
     * told with the last trial's z and ratios */
    g->z_milli = 0;
    g->ratio_p50_ppm = g->ratio_p99_ppm = 0;
}

/* The depth the lower processes run at until the next job begins: the own bound before a stop
 * sample, else the depth being tried or in force. */
static void publish_depth(struct gy_guard *g)
{
    uint32_t us = g->next_stop ? 0 : g->depth_trial ? g->depth_trial : g->depth_in_force;
    atomic_store_explicit(&g->queue_us, us, memory_order_release);
}

/* The depth in force becomes `to` (why), told in *c. */
static void note_depth(struct gy_guard *g, uint32_t to, enum gy_guard_reason why, struct gy_guard_change *c)
{
    c->depth_changed = true;
    c->depth_from = g->depth_in_force;
    c->depth_to = to;
    c->depth_reason = why;
    g->depth_in_force = to;
    g->depth_reason = why;
    g->changes++;
}

enum gy_guard_arm gy_guard_pick(struct gy_guard *g, uint32_t *depth_us)
{
    start_over_if_not_sane(g);
    g->jobs++;
    /* The periodic re-check waits for a trial to end: a noisy HP's trial may take thousands of
     * jobs, and cutting it would start it over for ever. */
    if (g->jobs - g->last_recheck >= GY_GUARD_RECHECK_JOBS && !valid_arm(g->trial) && !g->depth_trial &&
        !g->pinned) {
        g->last_recheck = g->jobs;
        for (uint32_t a = GY_ARM_STOP + 1; a < GY_GUARD_ARM_COUNT; a++)
            reset_window(&g->arms[a]);
        reset_paired(g);
        reset_window(&g->depth_window);
        g->confirmed = 0;
        g->depth_confirmed = 0;
        if (g->in_force != GY_ARM_STOP)
            g->reason = GY_GUARD_WHY_RECHECK;
        if (g->depth_in_force)
            g->depth_reason = GY_GUARD_WHY_RECHECK;
    }
    /* Trials start only once stop has its samples: until then the early fallback has no
     * baseline to look at, and a costly arm would run unchecked. One trial at a time. A depth only
     * when asked for: the first one before the arms, with stop in force, so that its own cost is
     * what its test sees (the arms are then tried at it, against stop at the own depth: the two
     * together within the bound); a deeper one with the arm in force once no larger arm is to be
     * tried, on top of an arm measured within the bound (not one measured again). */
    if (!valid_arm(g->trial) && !g->depth_trial && !g->pinned && g->base_us &&
        g->arms[GY_ARM_STOP].n >= GY_GUARD_MIN_JOBS && !gy_guard_on_confirmation(g) &&
        !gy_guard_depth_on_confirmation(g)) {
        if (g->depth_on && g->in_force == GY_ARM_STOP && !g->depth_in_force)
            start_depth_trial(g, next_depth(g));
        if (!g->depth_trial)
            start_trial(g, next_arm(g, g->in_force));
        if (!valid_arm(g->trial) && !g->depth_trial && g->depth_on && (g->in_force == GY_ARM_STOP || g->confirmed))
            start_depth_trial(g, next_depth(g));
    }
    bool trying = valid_arm(g->trial) || g->depth_trial;
    /* While an arm or a depth is tried, stop gets at least half the jobs: the test compares the
     * two windows, and for a given number of jobs it is sharpest when they are of a size. */
    uint32_t share = g->stop_share_ppm;
    if (trying && share < (uint32_t)(GY_GUARD_TRIAL_STOP_SHARE * 1e6))
        share = (uint32_t)(GY_GUARD_TRIAL_STOP_SHARE * 1e6);
    /* The job ran after a gap at the depth published for it (0 before a stop sample); a depth
     * trial that started just now has its first job after the next gap. */
    uint32_t arm = g->in_force, depth = atomic_load_explicit(&g->queue_us, memory_order_relaxed);
    if (g->next_stop)
        arm = GY_ARM_STOP, depth = 0;
    else if (valid_arm(g->trial) && depth == g->depth_in_force)
        arm = g->trial;
    /* the next job's class now: the gap before it runs at its depth */
    g->next_stop = next_is_stop(g, share);
    publish_depth(g);
    g->open[arm]++;
    publish_current(g);
    if (depth_us)
        *depth_us = depth;
    return (enum gy_guard_arm)arm;
}

void gy_guard_forget(struct gy_guard *g, enum gy_guard_arm arm)
{
    start_over_if_not_sane(g);
    if (valid_arm(arm) && g->open[arm])
        g->open[arm]--;
    publish_current(g);
}

static void bin_sample(struct gy_guard *g, struct gy_guard_window *w, uint32_t us)
{
    unsigned b = gy_guard_bin(us, g->base_us);
    if (w->bins[b] == UINT16_MAX || w->n >= GY_GUARD_WINDOW_MAX) { /* the window ages: half of it goes */
        w->n = 0;
        for (unsigned i = 0; i < GY_GUARD_BINS; i++)
            w->n += w->bins[i] /= 2;
        w->lp_work /= 2, w->lp_ns /= 2;
    }
    w->bins[b]++;
    w->n++;
}

/* A job into window w; stop_sample: a stop job at the own depth (the baseline: its recent jobs
 * are dated, it feeds the paired window and sets the base). */
static void add_sample(struct gy_guard *g, struct gy_guard_window *w, bool stop_sample, uint64_t duration_ns,
                       uint64_t lp_work)
{
    uint64_t us64 = (duration_ns + 500) / 1000;
    uint32_t us = us64 > UINT32_MAX ? UINT32_MAX : us64 ? (uint32_t)us64 : 1;
    if (stop_sample)
        g->stop_recent_job[w->head % GY_GUARD_RECENT] = (uint32_t)g->jobs;
    w->recent[w->head % GY_GUARD_RECENT] = us;
    w->head = (w->head + 1) % GY_GUARD_RECENT;
    if (w->recent_n < GY_GUARD_RECENT)
        w->recent_n++;
    if (w->jobs % GY_GUARD_RECENT == 0) /* the first job of a block */
        w->block_start = g->jobs;
    w->jobs++;
    w->lp_work += lp_work;
    w->lp_ns += duration_ns;
    if (g->base_us) {
        bin_sample(g, w, us);
        if (stop_sample)
            bin_sample(g, &g->paired_stop, us);
    } else if (stop_sample && w->recent_n == GY_GUARD_RECENT) {
        /* The histograms' centre: stop's median over its first jobs; they go in as the first samples. */
        uint32_t scratch[GY_GUARD_RECENT];
        g->base_us = gy_guard_order_stat(w->recent, GY_GUARD_RECENT, GY_GUARD_RECENT / 2, scratch);
        for (uint32_t i = 0; i < GY_GUARD_RECENT; i++)
            bin_sample(g, w, w->recent[i]);
    }
}

/* What the arms are judged against: stop's median and p99 (microseconds, over its histogram). */
struct stop_baseline {
    double median, p99;         /* over stop's window (0: no histogram yet) */
    double recent_median, recent_max; /* over its last GY_GUARD_RECENT jobs (0: fewer yet) */
};

static struct stop_baseline baseline(const struct gy_guard *g)
{
    const struct gy_guard_window *w = &g->arms[GY_ARM_STOP];
    struct stop_baseline b = {0};
    if (g->base_us && w->n) {
        b.median = gy_guard_bin_us(gy_guard_bin_quantile(w->bins, w->n, 0.5), g->base_us);
        b.p99 = gy_guard_bin_us(gy_guard_bin_quantile(w->bins, w->n, 0.99), g->base_us);
    }
    if (w->recent_n == GY_GUARD_RECENT) {
        uint32_t scratch[GY_GUARD_RECENT];
        b.recent_median = gy_guard_order_stat(w->recent, GY_GUARD_RECENT, GY_GUARD_RECENT / 2, scratch);
        b.recent_max = scratch[GY_GUARD_RECENT - 1];
    }
    return b;
}

static double bound(double stop_value, uint32_t eps_ppm) { return stop_value * (1.0 + eps_ppm / 1e6); }

/* Was stop's recent job i counted at or after the guard's job `since`? */
static bool stop_recent_since(const struct gy_guard *g, uint32_t i, uint64_t since)
{
    return gy_guard_dated_since(g->jobs, g->stop_recent_job[i], since);
}

/* Stop's recent durations of jobs that began at or after the guard's job `since`, into out. */
static uint32_t stop_jobs_since(const struct gy_guard *g, uint64_t since, uint32_t *out)
{
    const struct gy_guard_window *stop = &g->arms[GY_ARM_STOP];
    uint32_t k = 0;
    for (uint32_t i = 0; i < stop->recent_n; i++)
        if (stop_recent_since(g, i, since))
            out[k++] = stop->recent[i];
    return k;
}

/* The last GY_GUARD_RECENT jobs of `arm` clearly out of the bound of stop? Looked at once per
 * block of GY_GUARD_RECENT jobs, not at every job (overlapping looks at a noisy HP would find a
 * lucky miss of a costless arm sooner or later), at a level that a costless arm passes: the
 * block's median's 99.9 % lower bound above the p50 bound, or 4 of its 16 above the p99 bound
 * (1 % expected there). Against stop's recent jobs (the largest median of its last 16, of its
 * paired window and of its jobs during the block; its p99, or the maximum of its last 16 when
 * higher), so that a change of the HP's speed (a host-bound HP after idle time) is not taken for a
 * cost of the arm. A costly arm (the 1.7x of a GPU-bound HP beside a GEMM LP) is out after a block
 * or two; a small cost is left to the full test. */
static bool recent_out(struct gy_guard *g, const struct gy_guard_window *w)
{
    uint32_t scratch[GY_GUARD_RECENT], l, u;
    if (w->recent_n < GY_GUARD_RECENT || w->jobs % GY_GUARD_RECENT)
        return false; /* between blocks: nothing computed, a job's end costs its bin only */
    struct stop_baseline base = baseline(g), *b = &base;
    if (!(b->recent_median > 0))
        return false;
    double p99 = b->p99 > b->recent_max ? b->p99 : b->recent_max;
    /* stop's median: the larger of its last 16 jobs' (a speed change of the HP shows there first)
     * and its paired window's (16 jobs alone are noisy: a low one dropped costless arms) */
    const struct gy_guard_window *paired = &g->paired_stop;
    double median = b->recent_median;
    if (g->base_us && paired->n >= GY_GUARD_MIN_JOBS) {
        double m = gy_guard_bin_us(gy_guard_bin_quantile(paired->bins, paired->n, 0.5), g->base_us);
        median = m > median ? m : median;
    }
    /* ... and of stop's jobs during this block (at least 3, else no decision on this block): the
     * HP's speed right now, when it changed since stop's last 16 (stop gets a quarter of the jobs:
     * its last 16 lag behind a block, and a block slow all through looked like a 2x cost) */
    uint32_t during[GY_GUARD_RECENT], k = stop_jobs_since(g, w->block_start, during);
    if (k < 3)
        return false; /* too few to tell the arm from a change of the HP's speed: the next block */
    uint32_t m = gy_guard_order_stat(during, k, (k + 1) / 2, scratch);
    median = m > median ? m : median;
    gy_guard_median_ranks(GY_GUARD_RECENT, FALLBACK_CONF, &l, &u);
    uint32_t lcb = gy_guard_order_stat(w->recent, GY_GUARD_RECENT, l, scratch);
    uint32_t above = 0;
    for (uint32_t i = 0; i < GY_GUARD_RECENT; i++)
        above += w->recent[i] > bound(p99, g->eps_p99_ppm);
    if (lcb > bound(median, g->eps_p50_ppm) || above >= P99_OUT_OF_RECENT) {
        g->ratio_p50_ppm = ppm(scratch[GY_GUARD_RECENT / 2 - 1] / median);
        g->ratio_p99_ppm = ppm(scratch[GY_GUARD_RECENT - 1] / p99);
        return true;
    }
    return false;
}

/* A block of GY_GUARD_RECENT jobs of the window under test ended (its recent ring holds exactly
 * them): into the block sums, against stop's jobs of the same stretch (those of its last 16 that
 * ended since the block began). On the H100 an HP's job times drift (consecutive jobs of the
 * launch-bound HP or FasterRCNN 720p correlate at 0.3-0.66): compared block by block the drift
 * falls out (replays: is_look). Halved with the windows' age, so the sums fit. */
static void add_block_of(struct gy_guard *g, const struct gy_guard_window *w, uint32_t id, uint32_t eps_ppm)
{
    const struct gy_guard_window *stop = &g->arms[GY_ARM_STOP];
    uint32_t during[GY_GUARD_RECENT], k = 0, var12;
    int32_t u2;
    if (w->recent_n < GY_GUARD_RECENT || w->jobs % GY_GUARD_RECENT)
        return; /* mid-block, or a block cut by a reset */
    if (g->blocks_arm != id) /* another window is under test now (a trial ended): its own sums */
        g->blocks_arm = id, g->blocks_u2 = 0, g->blocks_var12 = 0;
    for (uint32_t i = 0; i < stop->recent_n; i++)
        if (stop_recent_since(g, i, w->block_start))
            during[k++] = stop->recent[i];
    if (!k)
        return;
    gy_guard_block_u(w->recent, GY_GUARD_RECENT, during, k, eps_ppm, &u2, &var12);
    if (g->blocks_var12 >= BLOCKS_VAR12_AGE) /* about 256 full blocks: the sums age as a window does */
        g->blocks_u2 /= 2, g->blocks_var12 /= 2;
    g->blocks_u2 += u2;
    g->blocks_var12 += var12;
}

static void add_block(struct gy_guard *g, uint32_t arm) { add_block_of(g, &g->arms[arm], arm, g->eps_p50_ppm); }

/* The full test's z: by the window's blocks (add_block) when asked and summed, else over the whole
 * window against the paired one. */
static double window_z(const struct gy_guard *g, const struct gy_guard_window *w, double eps_p50, bool by_blocks)
{
    const struct gy_guard_window *s = &g->paired_stop;
    return by_blocks && g->blocks_var12 ? gy_guard_blocks_z(g->blocks_u2, g->blocks_var12)
                                        : gy_guard_scale_z(w->bins, w->n, s->bins, s->n, gy_guard_bins_for(eps_p50));
}

/* The slow jobs' test: the rank test of the full one on each window's slowest GY_GUARD_TAIL_SHARE,
 * against stop's paired window's times 1 + eps_p99, once both hold GY_GUARD_P99_MIN_JOBS jobs (0 and
 * *judged false before). A p99 is one order statistic (the 3rd slowest of 256), and an arm that
 * cost only the HP's slow jobs passed on a lucky one, or never passed and ran its trial to the cap:
 * replayed on the H200's learnings with the slowest tenth of each trace 10 % slower under the arms,
 * one was promoted in 32 % of 3 000-job learnings (13 % with this test), 25 % slower in 7 % (4 %),
 * a costless arm as often as before (bench/results/2026-12-04-slow-job-test/). */
static double slow_jobs_z(const struct gy_guard *g, const struct gy_guard_window *w, bool *judged)
{
    const struct gy_guard_window *s = &g->paired_stop;
    *judged = w->n >= GY_GUARD_P99_MIN_JOBS && s->n >= GY_GUARD_P99_MIN_JOBS;
    if (!*judged)
        return 0;
    uint16_t arm_top[GY_GUARD_BINS], stop_top[GY_GUARD_BINS];
    uint32_t arm_n = gy_guard_bins_top(w->bins, w->n, GY_GUARD_TAIL_SHARE, arm_top);
    uint32_t stop_n = gy_guard_bins_top(s->bins, s->n, GY_GUARD_TAIL_SHARE, stop_top);
    return gy_guard_scale_z(arm_top, arm_n, stop_top, stop_n, gy_guard_bins_for(g->eps_p99_ppm / 1e6));
}

/* Mood's median test of window w against stop's paired jobs times 1 + eps (gy_guard_median_z). */
static double window_median_z(const struct gy_guard *g, const struct gy_guard_window *w, double eps)
{
    const struct gy_guard_window *s = &g->paired_stop;
    return gy_guard_median_z(w->bins, w->n, s->bins, s->n, gy_guard_bins_for(eps));
}

/* The full test of `arm` against stop's jobs of the same time (paired_stop): -1 clearly out of the bound, 1
 * within it, 0 cannot tell yet. Within: Mann-Whitney's z for "the arm's jobs are shorter than
 * stop's times 1 + eps_p50" at least GY_GUARD_LOOK_Z, the arm's p99 bin within stop's p99 bin
 * times 1 + eps_p99 (an arm's p99 beyond the last bin: within only when stop's is beyond it too),
 * and its slow jobs not leaning over stop's times 1 + eps_p99 (tail_z below), both windows holding
 * GY_GUARD_P99_MIN_JOBS jobs, and (since 2026-12-07, see below) its median not leaning over stop's
 * times 1 + eps_p50 (median_z below 0). Out: either z at -GY_GUARD_OUT_Z or below, or the median
 * shown over the bound (median_z at GY_GUARD_OUT_Z or above). */
static int test_window(struct gy_guard *g, const struct gy_guard_window *w, double eps_p50, bool by_blocks)
{
    const struct gy_guard_window *s = &g->paired_stop;
    double z = window_z(g, w, eps_p50, by_blocks);
    unsigned p99 = gy_guard_bin_quantile(w->bins, w->n, 0.99), stop_p99 = gy_guard_bin_quantile(s->bins, s->n, 0.99);
    double median = gy_guard_bin_us(gy_guard_bin_quantile(w->bins, w->n, 0.5), g->base_us);
    double stop_median = gy_guard_bin_us(gy_guard_bin_quantile(s->bins, s->n, 0.5), g->base_us);
    g->ratio_p50_ppm = ppm(median / stop_median);
    g->ratio_p99_ppm = ppm(gy_guard_bin_us(p99, g->base_us) / gy_guard_bin_us(stop_p99, g->base_us));
    g->z_milli = (int32_t)(z * 1000 + (z < 0 ? -0.5 : 0.5));
    /* past the last bin a p99 cannot be judged: within only when stop's is past it too; and below
     * GY_GUARD_P99_MIN_JOBS a window's p99 is one of its few slowest jobs, or none of the slow ones */
    bool p99_judged;
    double tail_z = slow_jobs_z(g, w, &p99_judged);
    bool p99_ok = p99_judged && (p99 < GY_GUARD_BINS - 1
                                     ? (int)p99 <= (int)stop_p99 + gy_guard_bins_for(g->eps_p99_ppm / 1e6)
                                     : stop_p99 == GY_GUARD_BINS - 1);
    /* The rank test asks whether the arm's jobs are shorter than stop's x (1 + eps); a cost on some
     * of its jobs only can leave that near even while the median moves: on the H100 a 2000-us depth
     * cost the GEMM HP's jobs after long gaps 8 % and the others nothing, which stop's own slow jobs
     * overlap (P(its job < 1.01 x stop's) 0.478), its median x1.04 of stop's against a half bound of
     * 1 %, and its trial ran 2 432 of its jobs (bench/results/2026-12-07-h100-depth-gross-mixed);
     * on the fake driver such a depth (median x1.056, P 0.57) was promoted and kept in every seed.
     * So out, too, where the median is shown over the bound, and within only where it does not lean
     * over it. Replayed (bench/results/2026-12-07-median-test-replay) this holds back 2-3 % of the
     * costless arms' and depths' promotions in 8 000-job learnings, and the recorded depths' time
     * added to the HP falls from 0.46 % to 0.42 %. */
    double median_z = window_median_z(g, w, eps_p50);
    if (z <= -GY_GUARD_OUT_Z || tail_z <= -GY_GUARD_OUT_Z || median_z >= GY_GUARD_OUT_Z)
        return -1;
    return z >= GY_GUARD_LOOK_Z && p99_ok && tail_z >= 0 && median_z < 0 ? 1 : 0;
}

/* Status: where the trial stands. Its z as its next look would compute it (from the same sums);
 * where that z is above 0 and the arm costs what its jobs so far say, z grows as the square root
 * of its jobs, so it reaches GY_GUARD_LOOK_Z at about n (LOOK_Z / z)^2 of them (never before
 * GY_GUARD_P99_MIN_JOBS), judged at the first look from there (is_look). A rough count for an
 * operator wondering why guarded keeps stop: on the H200 a costless arm beside a launch-bound HP
 * needed 1 000-3 000 HP jobs (bench/results/2026-11-29-h200-twins-long-learning). */
/* Where window w under trial stands against the bound eps (its test by blocks or not), capped at
 * `cap` of its jobs. */
static void outlook_of(const struct gy_guard *g, const struct gy_guard_window *w, double eps, bool by_blocks,
                       uint32_t cap, struct gy_guard_outlook *out)
{
    out->jobs = w->n;
    out->judged = g->base_us && w->n && g->paired_stop.n >= GY_GUARD_MIN_JOBS;
    if (!out->judged)
        return;
    out->z = window_z(g, w, eps, by_blocks);
    out->slow_z = slow_jobs_z(g, w, &out->slow_judged);
    if (out->z > 0) {
        double need = w->n * (GY_GUARD_LOOK_Z / out->z) * (GY_GUARD_LOOK_Z / out->z);
        need = need > GY_GUARD_P99_MIN_JOBS ? need : GY_GUARD_P99_MIN_JOBS;
        need = need < 1e15 ? need : 1e15; /* a z near 0: no trend worth a count, and no cast out of range */
        out->beyond_cap = need > cap;
        /* the first look at or past that many jobs (and past its jobs now) decides */
        uint64_t k = (uint64_t)need + ((double)(uint64_t)need < need); /* rounded up (no libm here) */
        k = k > w->n ? k : w->n + 1;
        while (!out->beyond_cap && !is_look((uint32_t)k))
            k++;
        out->more_jobs = (int64_t)(k - w->n);
    }
}

bool gy_guard_trial_outlook(const struct gy_guard *g, struct gy_guard_outlook *out)
{
    *out = (struct gy_guard_outlook){.arm = GY_ARM_STOP, .more_jobs = -1};
    if (g->trial >= GY_GUARD_ARM_COUNT || !gy_guard_sane(g))
        return false;
    out->arm = (enum gy_guard_arm)g->trial;
    outlook_of(g, &g->arms[g->trial], g->eps_p50_ppm / 1e6, g->trial == g->blocks_arm, GY_GUARD_TRIAL_MAX, out);
    return true;
}

bool gy_guard_depth_outlook(const struct gy_guard *g, struct gy_guard_outlook *out)
{
    *out = (struct gy_guard_outlook){.arm = GY_ARM_STOP, .more_jobs = -1};
    if (!g->depth_trial || !gy_guard_sane(g))
        return false;
    out->arm = (enum gy_guard_arm)g->in_force;
    outlook_of(g, &g->depth_window, g->eps_p50_ppm / 2e6, g->blocks_arm == GY_GUARD_DEPTH_BLOCKS,
               GY_GUARD_DEPTH_TRIAL_MAX, out);
    return true;
}

/* After a test that could not tell: is the trial futile? From GY_GUARD_FUTILE_JOBS jobs on, a z
 * below 0 says the tried jobs were more often over the bound than under it. A trial runs until
 * its test can tell, and half the HP's jobs pay its cost meanwhile: on the H100 a 16-SM arm that
 * cost a FasterRCNN 720p HP about 3 % a job stayed in trial for the whole learning and the
 * measured rounds, and the HP's p50 interval reached 1.061 (bench/results/2026-11-24-guarded-v3).
 * From 128 jobs since 2026-11-28 (256 before): in 10 % lognormal noise the first trial of an arm
 * costing 4 % ran 134 of its jobs on average (239 from 256), while a costless arm's first trial was
 * rejected in 8.5 % of runs (4 %), in 25 % noise 60 % (56 %) (simulated, 200 seeds); replayed on
 * the H100's measured stop jobs (145 cells, 2 000-job learnings,
 * bench/results/2026-11-28-confirmation-replay) the trials of arms costing 5 % / 7 % added 0.91 %
 * / 0.85 % to the HP's mean job time (1.14 / 1.07 from 256), and a costless arm gave the LP +13.3 %
 * launches over stop (+13.7 %): a costless arm that a noisy HP could not show within the bound is
 * tried again after the backoff. */
static bool futile(const struct gy_guard *g, const struct gy_guard_window *w)
{
    return w->n >= GY_GUARD_FUTILE_JOBS && g->z_milli < 0;
}

/* An arm's full test: the window under test by its blocks (add_block), another (the arm in force's
 * while a trial runs) over its whole window against the paired one. */
static int test_arm(struct gy_guard *g, uint32_t arm)
{
    return test_window(g, &g->arms[arm], g->eps_p50_ppm / 1e6, arm == under_test(g) && arm == g->blocks_arm);
}

static void set_in_force(struct gy_guard *g, uint32_t arm, enum gy_guard_reason why, struct gy_guard_change *c)
{
    g->reason = why;
    if (g->in_force == arm)
        return;
    c->changed = true;
    c->from = (enum gy_guard_arm)g->in_force;
    c->to = (enum gy_guard_arm)arm;
    c->reason = why;
    g->in_force = arm;
    g->confirmed = 0;
    g->changes++;
    /* the depth window measured the old arm in force under its depth */
    reset_window(&g->depth_window);
    g->depth_confirmed = 0;
}

/* `arm` is out: not tried again for a while; if it was in force, stop is. */
/* Each trial of an arm that costs the HP costs it those jobs again: on the H100 a GEMM HP beside
 * ResNet-50 training lost 7-13 % a job on 16 SMs and guarded's p50 stayed 3-10 % above stop's
 * while it retried every 500 jobs (bench/results/2026-11-24-matrix). An arm dropped again and
 * again waits twice as long each time; one that passes starts over at the base. */
static uint64_t strike(struct gy_guard *g, uint32_t arm) /* counts the drop, returns its backoff */
{
    uint32_t doublings = g->strikes[arm] < GY_GUARD_MAX_DOUBLINGS ? g->strikes[arm] : GY_GUARD_MAX_DOUBLINGS;
    if (g->strikes[arm] < UINT32_MAX)
        g->strikes[arm]++;
    return (uint64_t)GY_GUARD_BACKOFF_JOBS << doublings;
}

/* `arm` dropped (why), backing off; a trial of it ends as `outcome`. */
static void drop(struct gy_guard *g, uint32_t arm, enum gy_guard_reason why, enum gy_guard_trial_outcome outcome,
                 struct gy_guard_change *c)
{
    g->backoff_until[arm] = g->jobs + strike(g, arm);
    if (g->trial == arm)
        end_trial(g, outcome, c);
    if (g->in_force == arm) {
        end_trial(g, GY_GUARD_TRIAL_ENDED, c); /* a larger arm than one that failed is no safer */
        set_in_force(g, GY_ARM_STOP, why, c);
    } else if (g->in_force == GY_ARM_STOP) {
        g->reason = GY_GUARD_WHY_REJECTED;
    }
}

/* Forget every window and backoff: stop in force, arms measured again from the start (a new base
 * from stop's next jobs). Settings, the random state and the job counts stay. */
static void start_over(struct gy_guard *g, enum gy_guard_reason why, struct gy_guard_change *c)
{
    end_trial(g, GY_GUARD_TRIAL_ENDED, c); /* first: kept with its window and last test */
    for (uint32_t a = 0; a < GY_GUARD_ARM_COUNT; a++) {
        reset_window(&g->arms[a]);
        g->backoff_until[a] = 0;
        g->strikes[a] = 0;
    }
    reset_paired(g);
    g->base_us = 0;
    g->cycle_mean_us = g->cycles_counted = g->rate_ref_us = 0;
    g->ratio_p50_ppm = g->ratio_p99_ppm = 0; /* the last test was of another pair */
    g->z_milli = 0;
    g->confirmed = 0;
    g->pinned = 0;
    set_in_force(g, GY_ARM_STOP, why, c);
    g->reason = why;
    if (g->depth_in_force)
        note_depth(g, 0, why, c);
    g->depth_reason = why;
    g->depth_trial = 0;
    memset(g->depth_backoff_until, 0, sizeof g->depth_backoff_until);
    memset(g->depth_strikes, 0, sizeof g->depth_strikes);
    publish_depth(g);
}

/* After a shift (the HP's job time or job rate) the windows start again: a trial ends, the arm and
 * the depth in force stay and are measured again, and the periodic re-check counts from here. */
static void measure_again(struct gy_guard *g, struct gy_guard_change *c)
{
    end_trial(g, GY_GUARD_TRIAL_ENDED, c);
    g->confirmed = 0;
    reset_window(&g->depth_window); /* the depth in force stays, measured again (not on confirmation) */
    g->depth_trial = 0;
    g->depth_confirmed = 0;
    if (g->depth_in_force)
        g->depth_reason = GY_GUARD_WHY_SHIFT;
    publish_depth(g);
    g->last_recheck = g->jobs;
}

/* Stop's recent median far from its window's, and all of its last 16 jobs on that side of the
 * window's median: the HP's own speed changed (another input, or a host-bound HP's CPU: on the H100
 * the launch-bound HP ran whole segments at 5 or at 11 ms a job). The median of 16 alone is no
 * such sign where the HP's jobs are of two kinds (two request sizes, or two HP processes sharing
 * the guard) with about as many of each: it flips between them, and on the fake driver with half
 * the jobs 8x the others every trial ended at a false shift (119-164 in 8 000 jobs, no arm ever
 * promoted); a real shift of 2x moves all 16 once 16 stop jobs ran at it (where the HP's own
 * jobs spread less than 2x), while 16 of 16 on one side from a 50/50 mix comes once in 32 768 looks (a_two_kinds_of_hp_job_are_no_shift_and_costless_arms_pass).
 * The windows start again around the new median (stop's last 16 jobs are its first samples); the
 * arm in force stays, unconfirmed, measured again like after a re-check: its fast fallback is
 * judged against stop's recent jobs, so an arm that costs the changed HP goes within a block or
 * two. Starting over from stop here threw away thousands of jobs of learning at every change.
 * Only a factor of 2 counts: a BERT HP's job time wandered between 3.2 and 5.3 ms (medians of 64
 * jobs) on the H100, and a 50 % threshold cut every trial short (bench/results/2026-11-24-guarded-v3);
 * a trial compares jobs of the same time (paired_stop), so a smaller change falls on both sides. */
static bool shifted(struct gy_guard *g, struct gy_guard_change *c)
{
    struct gy_guard_window *w = &g->arms[GY_ARM_STOP];
    uint32_t scratch[GY_GUARD_RECENT], kept[GY_GUARD_RECENT];
    if (!g->base_us || w->n < 2 * GY_GUARD_RECENT || w->recent_n < GY_GUARD_RECENT)
        return false; /* at every stop job: looking once per 16 let a speed change pass for a cost longer */
    double whole = baseline(g).median;
    uint32_t recent = gy_guard_order_stat(w->recent, GY_GUARD_RECENT, GY_GUARD_RECENT / 2, scratch);
    if (!(whole > 0) || (recent <= whole * GY_GUARD_SHIFT && recent * GY_GUARD_SHIFT >= whole))
        return false;
    bool up = recent > whole; /* and every one of the last 16 on that side of the window's median */
    for (uint32_t i = 0; i < GY_GUARD_RECENT; i++)
        if (up ? w->recent[i] <= whole : w->recent[i] >= whole)
            return false;
    measure_again(g, c); /* first: the trial's end is logged with its window */
    memcpy(kept, w->recent, sizeof kept);
    uint32_t head = w->head;
    for (uint32_t a = 0; a < GY_GUARD_ARM_COUNT; a++)
        reset_window(&g->arms[a]);
    reset_paired(g);
    g->base_us = recent;
    memcpy(w->recent, kept, sizeof kept);
    w->head = head;
    w->recent_n = GY_GUARD_RECENT;
    for (uint32_t i = 0; i < GY_GUARD_RECENT; i++)
        bin_sample(g, w, kept[i]), bin_sample(g, &g->paired_stop, kept[i]);
    g->reason = GY_GUARD_WHY_SHIFT;
    return true;
}

/* Every arm's and depth's cycle sums start again (the LP they ran beside is not the one to come). */
static void forget_cycles(struct gy_guard *g)
{
    memset(g->cycle_work, 0, sizeof g->cycle_work);
    memset(g->cycle_us, 0, sizeof g->cycle_us);
    memset(g->depth_cycle_work, 0, sizeof g->depth_cycle_work);
    memset(g->depth_cycle_us, 0, sizeof g->depth_cycle_us);
}

struct gy_guard_change gy_guard_reset(struct gy_guard *g)
{
    struct gy_guard_change c = {.changed = false};
    start_over_if_not_sane(g);
    start_over(g, GY_GUARD_WHY_RESET, &c);
    g->cycle_arm = GY_GUARD_NO_ARM; /* the cycles ran beside the workload that was forgotten */
    forget_cycles(g);
    return c;
}

/* The HP's job rate moved by more than a factor GY_GUARD_SHIFT: what an arm costs the HP may move
 * with it (on the H100 arms passed while the launch-bound HP ran at 0.9 of its rate cost it 1.05-1.065
 * of stop at 0.25, bench/results/2026-11-25-mechanism-ceiling), and what it gives the LP over a
 * cycle moves with the gaps. As after a shift of its job time: the partition arms' windows and
 * stop's paired window start again, the arm in force stays and is measured again, a trial ends;
 * stop's own window stays (the fallback's baseline). Every arm's cycle sums start again too. */
static void rate_shifted(struct gy_guard *g, struct gy_guard_change *c)
{
    measure_again(g, c); /* first: the trial's end is kept with its window and cycles */
    forget_cycles(g);
    for (uint32_t a = GY_ARM_STOP + 1; a < GY_GUARD_ARM_COUNT; a++)
        reset_window(&g->arms[a]);
    reset_paired(g);
    if (g->in_force != GY_ARM_STOP)
        g->reason = GY_GUARD_WHY_SHIFT; /* with stop in force, why it is stays the reason */
}

/* A counted cycle of `us`: the running mean of the HP's cycles; its reference is taken once
 * 2 x GY_GUARD_RATE_CYCLES cycles were counted (again after each shift of the rate), and a mean
 * more than GY_GUARD_SHIFT from it is a shift. Not while an arm is pinned (it is measured as it
 * is, whatever the load). */
static void note_rate(struct gy_guard *g, uint64_t us, struct gy_guard_change *c)
{
    int64_t u = us > UINT32_MAX ? UINT32_MAX : (int64_t)us, mean = g->cycle_mean_us;
    g->cycle_mean_us = (uint32_t)(mean ? mean + (u - mean) / GY_GUARD_RATE_CYCLES : u);
    if (g->cycles_counted < UINT32_MAX)
        g->cycles_counted++;
    if (!g->rate_ref_us) {
        if (g->cycles_counted >= 2 * GY_GUARD_RATE_CYCLES)
            g->rate_ref_us = g->cycle_mean_us ? g->cycle_mean_us : 1;
        return;
    }
    double ratio = (double)g->cycle_mean_us / g->rate_ref_us;
    if (g->pinned || (ratio <= GY_GUARD_SHIFT && ratio * GY_GUARD_SHIFT >= 1.0))
        return;
    g->rate_ref_us = 0;
    g->cycles_counted = 0;
    if (g->base_us)
        rate_shifted(g, c);
}

struct gy_guard_change gy_guard_cycle(struct gy_guard *g, enum gy_guard_arm arm, uint64_t now_ns, uint64_t lp_launches)
{
    struct gy_guard_change c = {.changed = false};
    start_over_if_not_sane(g);
    if (g->cycle_arm < GY_GUARD_ARM_COUNT && now_ns > g->cycle_start_ns && lp_launches >= g->cycle_start_work) {
        uint64_t ns = now_ns - g->cycle_start_ns;
        uint64_t cap = g->base_us ? (uint64_t)g->base_us * 1000u * GY_GUARD_CYCLE_MAX_BASES : GY_GUARD_CYCLE_MAX_NS;
        uint64_t work = lp_launches - g->cycle_start_work, us = (ns + 500) / 1000;
        uint32_t a = g->cycle_arm;
        /* the sums stay below 2^32: a cycle is at most 64 x a job under 4295 s, and they halve past
         * 120 s; a cycle past the cap (or with more launches than 32 bits hold) is not counted */
        if (ns <= cap && us <= GY_GUARD_CYCLE_HORIZON_US && work <= UINT32_MAX - g->cycle_work[a]) {
            g->cycle_work[a] += (uint32_t)work;
            g->cycle_us[a] += (uint32_t)us;
            if (g->cycle_us[a] > GY_GUARD_CYCLE_HORIZON_US)
                g->cycle_work[a] /= 2, g->cycle_us[a] /= 2;
            uint32_t d = depth_slot(g->gap_us);
            if (a == GY_ARM_STOP && work <= UINT32_MAX - g->depth_cycle_work[d]) {
                g->depth_cycle_work[d] += (uint32_t)work;
                g->depth_cycle_us[d] += (uint32_t)us;
                if (g->depth_cycle_us[d] > GY_GUARD_CYCLE_HORIZON_US)
                    g->depth_cycle_work[d] /= 2, g->depth_cycle_us[d] /= 2;
                add_gain_cycle(g, g->gap_us, (uint32_t)work, (uint32_t)us);
            }
            note_rate(g, us, &c);
        }
    }
    /* the gap of the cycle opening now runs at what the pick just published for it */
    g->gap_us = atomic_load_explicit(&g->queue_us, memory_order_relaxed);
    g->cycle_arm = (unsigned)arm < GY_GUARD_ARM_COUNT ? (uint32_t)arm : GY_GUARD_NO_ARM;
    g->cycle_start_ns = now_ns;
    g->cycle_start_work = lp_launches;
    return c;
}

/* The full test runs at 32, 64, 128, 256 samples of the arm's window and every GY_GUARD_LOOK_STEP
 * from there (few looks while the p99 cannot pass yet, below GY_GUARD_P99_MIN_JOBS), each at
 * GY_GUARD_LOOK_Z. Replayed on the H100's measured stop jobs (bench/guard_replay.py: 137 cells of
 * the records since 2026-11-21, 20 learnings of 2 000 jobs each), with the blocks a costless arm
 * passed in 74 % of learnings against 53 % with looks at powers of 2 only, over whole windows, at
 * z 2.33 (a trial waited 1 024 of its jobs between its last two looks); one costing exactly the
 * bound in 2.5 % (2.4 %), 3 % in 8 of 2 740 (2), 5 % in none (bench/results/2026-11-25-matrix-current). */
static bool is_look(uint32_t n)
{
    return n >= GY_GUARD_MIN_JOBS &&
           ((n & (n - 1)) == 0 || (n >= GY_GUARD_P99_MIN_JOBS && n % GY_GUARD_LOOK_STEP == 0));
}

/* The depth tried or in force is out: not tried again for a while (doubling as for arms); if it
 * was in force, the lower processes' own bound is. */
static void drop_depth(struct gy_guard *g, uint32_t us, enum gy_guard_reason why, struct gy_guard_change *c)
{
    int i = depth_index(us);
    if (i >= 0) {
        uint32_t doublings = g->depth_strikes[i] < GY_GUARD_MAX_DOUBLINGS ? g->depth_strikes[i] : GY_GUARD_MAX_DOUBLINGS;
        if (g->depth_strikes[i] < UINT32_MAX)
            g->depth_strikes[i]++;
        g->depth_backoff_until[i] = g->jobs + ((uint64_t)GY_GUARD_BACKOFF_JOBS << doublings);
    }
    if (g->depth_trial == us) {
        c->depth_trial_ended = true;
        c->depth_tried_us = us;
        c->depth_trial_jobs = g->depth_window.n;
        c->depth_trial_reason = why;
        c->depth_ratio_p50 = g->ratio_p50_ppm / 1e6;
        c->depth_ratio_p99 = g->ratio_p99_ppm / 1e6;
        g->depth_trial = 0;
        if (!g->depth_in_force)
            g->depth_reason = why == GY_GUARD_WHY_KEPT ? GY_GUARD_WHY_KEPT : GY_GUARD_WHY_REJECTED;
    } else if (g->depth_in_force == us) {
        note_depth(g, 0, why, c);
    }
    reset_window(&g->depth_window);
    g->depth_confirmed = 0;
    publish_depth(g);
}

/* A job or block this far over stop's is a gross cost: GY_GUARD_GROSS_EPS x the bound it is tested
 * at (an arm's eps_p50; a depth's, half of it). */
static double gross_margin_at(double eps) { return 1.0 + GY_GUARD_GROSS_EPS * eps; }
static double gross_margin(const struct gy_guard *g) { return gross_margin_at(g->eps_p50_ppm / 1e6); }

/* A depth out on its cost: its fast fallback, or its trial shown over the bound at a look. Over
 * stop's median by GY_GUARD_GROSS_EPS x its half bound (4 %) it is gross, as an arm's fallback at
 * four times its bound is: a GPU-bound HP waits for what the LP queued ahead of its jobs, and a
 * depth that cost it that much does again at each retrial (on the H100 the GEMM HP's 2000 us ended
 * four times in an 8 000-job learning, three of them fast fallbacks at x1.065-1.109 of stop, and its
 * fifth trial ran through the measured rounds: p50 1.10-1.13 of alone against corun's 1.06-1.07;
 * beside FasterRCNN 1440p it was rejected four times at x1.051, bench/results/2026-12-07-h100-matrix).
 * It counts as GY_GUARD_GROSS_STRIKES drops (the first backoff 4x), and every deeper depth, whose
 * queue ahead of a job is longer, backs off at least as long. A trial ended futile or at its cap is
 * no evidence of a gross cost: drop_depth. */
static void drop_depth_out(struct gy_guard *g, uint32_t us, enum gy_guard_reason why, struct gy_guard_change *c)
{
    int i = depth_index(us);
    bool gross = i >= 0 && g->ratio_p50_ppm >= ppm(gross_margin_at(g->eps_p50_ppm / 2e6));
    if (gross && g->depth_strikes[i] < UINT32_MAX - GY_GUARD_GROSS_STRIKES)
        g->depth_strikes[i] += GY_GUARD_GROSS_STRIKES - 1;
    drop_depth(g, us, why, c);
    for (int j = i + 1; gross && j < GY_GUARD_DEPTH_COUNT; j++)
        if (g->depth_backoff_until[j] < g->depth_backoff_until[i])
            g->depth_backoff_until[j] = g->depth_backoff_until[i];
}

/* A job of the arm in force at the depth tried (or, stop in force, at the depth in force) ended:
 * the same fast fallback and full test as an arm's, against the same stop samples. */
static void record_depth(struct gy_guard *g, uint64_t duration_ns, struct gy_guard_change *c)
{
    struct gy_guard_window *w = &g->depth_window;
    uint32_t us = g->depth_trial ? g->depth_trial : g->depth_in_force;
    add_sample(g, w, false, duration_ns, 0);
    if (!g->base_us || g->pinned)
        return;
    if (g->depth_trial) /* under test: its blocks against stop's of the same stretch (below) */
        add_block_of(g, w, GY_GUARD_DEPTH_BLOCKS, g->eps_p50_ppm / 2);
    if (recent_out(g, w)) {
        drop_depth_out(g, us, GY_GUARD_WHY_FALLBACK, c);
        return;
    }
    bool on_confirmation = gy_guard_depth_on_confirmation(g);
    if (depth_promoted_unconfirmed(g) && w->n > GY_GUARD_CONFIRM_JOBS)
        g->depth_confirmed = 1; /* through its confirmation without a futile look */
    if (!is_look(w->n) || g->paired_stop.n < GY_GUARD_MIN_JOBS)
        return;
    /* Half the p50 bound: a depth's cost lands on every HP job that follows a gap (and adds to
     * corun's own), its gain for the LP is a few per cent; on the H100 1000 us cost a GPU-bound HP
     * 1.5-2 % a job, within 2 %, and 3-4 % of latency once queued (bench/results/2026-11-25-queue-depth).
     * A test at half the margin needs about four times the jobs for the same power: a depth's trial
     * is tested block by block against stop's jobs of the same stretch (add_block_of), as an arm's
     * trial is, so that the HP's drift between stretches is no noise, and capped above the arms':
     * GY_GUARD_DEPTH_TRIAL_MAX, twice theirs, as many jobs as the window holds before it ages
     * (GY_GUARD_WINDOW_MAX; without a cap the trial would hold off every other and the re-check).
     * Until 2026-12-02 it was tested over the whole window's histogram and cut at the arms' cap:
     * beside the launch-bound HP on the H200 a costless 2000-us trial ran out undecided, and beside
     * a heavy-tailed HP (Pareto job times, tests) a 3 % depth passed, with most jobs in the
     * histogram's first bin (a base of 33-40 ms against a median near 16 ms in the seeds looked at:
     * ties, which the rank test cannot order). Replayed on 75 H200 learnings' stop jobs, a costless
     * depth was in force at the end of 8 000-job learnings in 58 % / 82 % of runs (arms free /
     * gross) against 37 % / 52 %, of 20 000-job ones in 93 % / 83 % against 67 % / 61 % (the block
     * test alone: 57 / 75 and 89 / 79); one costing 1 % in 2-3 % (1-2 % before), 3 % never, the
     * HP's time over its trace the same (bench/results/2026-12-02-h200-wave-limit/replay_depth_cap.md). */
    _Static_assert(GY_GUARD_DEPTH_TRIAL_MAX <= GY_GUARD_WINDOW_MAX, "a depth's cap must fit its window");
    if (g->depth_trial && w->n >= GY_GUARD_DEPTH_LP_FUTILE_JOBS && depth_cycle_verdict(g, us, g->depth_in_force) < 0) {
        /* its gaps gave the LP no more than the depth in force's: promotion needs
         * GY_GUARD_CYCLE_GAIN more, so the rest of the trial could only cost the HP. From 128 of
         * its jobs, not an arm's 64: a depth gives a few per cent, and on the H200 the gain of one
         * that gave x1.04 over its learning read x0.997 after its first 64 jobs (bert + gemm), while
         * after 128 every depth that gave 4-16 % read x1.026 or more and those beside CUDA-graph
         * LPs x0.92-1.05 (bench/results/2026-12-03-h200-matrix-coverage-2, early_gain.txt). */
        drop_depth(g, us, GY_GUARD_WHY_KEPT, c);
        return;
    }
    int verdict = test_window(g, w, g->eps_p50_ppm / 2e6, g->depth_trial && g->blocks_arm == GY_GUARD_DEPTH_BLOCKS);
    int i = depth_index(us);
    if (verdict > 0 && g->depth_trial && depth_cycle_verdict(g, us, g->depth_in_force) <= 0) {
        /* within the bound, but its gaps did not give the LP the gain promotion needs: not tried
         * again for a while, as a rejected depth (drop_depth's backoff) */
        drop_depth(g, us, GY_GUARD_WHY_KEPT, c);
    } else if (verdict > 0 && g->depth_trial && depth_gain_z(g) < GY_GUARD_GAIN_Z) {
        /* within the bound, its gaps over the bar, but their gain not shown against the cycles'
         * spread (depth_gain_z): the trial runs on, each look another test, to an arm's cap
         * (GY_GUARD_TRIAL_MAX), where it ends as giving the LP too little. To its own cap
         * (twice that) the arms' trials wait for it longer: in 2 of 20 seeds of the test of this
         * (a_depth_whose_gain_is_within_the_gaps_spread...) the largest arm was not reached in
         * 8 000 jobs; replayed, a depth giving 2-6 % was in force in 27 % of runs against 20 % */
        if (w->n >= GY_GUARD_TRIAL_MAX)
            drop_depth(g, us, GY_GUARD_WHY_KEPT, c);
    } else if (verdict > 0 && g->depth_trial) {
        /* within the bound, its gaps giving the LP the gain promotion needs: promoted; the arm
         * in force's window now runs at this depth (its jobs are these). Until 2026-12-03 a depth
         * within the bound was promoted on the HP's test alone ("deeper always gives the lower
         * processes more"): see depth_cycle_verdict. */
        if (i >= 0)
            g->depth_strikes[i] = 0;
        note_depth(g, us, GY_GUARD_WHY_PROMOTED, c);
        g->depth_trial = 0;
        if (g->in_force != GY_ARM_STOP) {
            g->arms[g->in_force] = *w;
            reset_window(w);
            g->depth_confirmed = 1;
        } else {
            /* With stop in force, on confirmation: its window and stop's paired one start again and
             * its first GY_GUARD_CONFIRM_JOBS jobs in force are judged as a trial's (a futile look
             * drops it), no trial meanwhile. On the H200 the 1000 us promoted beside BERT ran its
             * jobs at x1.018 of stop's in the learning's last 1 500 and x1.04 [1.03, 1.10] in the
             * rounds, over the half bound, kept: an in-force depth went only when shown out
             * (bench/results/2026-12-02-h200-depth-first); the arms' confirmation is the same for
             * the same reason (a cost in force can differ from the trial's). */
            reset_window(w);
            reset_paired(g);
            g->depth_confirmed = 0;
        }
        publish_depth(g);
    } else if (verdict > 0) {
        g->depth_confirmed = 1;
    } else if (verdict < 0 || ((w->n >= GY_GUARD_DEPTH_TRIAL_MAX || futile(g, w)) && g->depth_trial) ||
               (on_confirmation && w->n >= GY_GUARD_FUTILE_JOBS && g->paired_stop.n >= GY_GUARD_CONFIRM_FUTILE_STOP_JOBS &&
                (window_z(g, w, g->eps_p50_ppm / 1e6, false) < 0 || window_median_z(g, w, g->eps_p50_ppm / 1e6) > 0))) {
        /* On confirmation futile against the whole p50 bound, not the half its promotion passed:
         * its jobs in force more often over stop's + eps than under, or (since 2026-12-07) their
         * median over stop's + eps (a depth promoted on a look where its median leaned within by
         * chance, test_window). Replayed on 78 H200 learnings
         * of 8 000 jobs (bench/results/2026-12-02-h200-depth-first, section 5): a depth costless in
         * its trial and 3 % over stop once in force was in force at the end in 19-20 % of runs
         * against 63-67 % without the confirmation (15 % with its look at the half bound), one
         * costless throughout in 75-81 % against 82-88 % (66-74 % at the half bound). */
        if (verdict < 0 && g->depth_trial)
            drop_depth_out(g, us, GY_GUARD_WHY_REJECTED, c);
        else
            drop_depth(g, us, g->depth_trial || on_confirmation ? GY_GUARD_WHY_REJECTED : GY_GUARD_WHY_FALLBACK, c);
    }
}


/* The fast fallback's drop. A gross cost does not go away by itself (a GPU-bound HP's jobs were
 * 1.08-1.73x stop's on 16 SMs beside every LP on the H100, bench/results/2026-11-25-matrix-refresh),
 * and each retrial costs the HP such jobs: it counts as GY_GUARD_GROSS_STRIKES drops. */
static void drop_out(struct gy_guard *g, uint32_t arm, bool gross, enum gy_guard_trial_outcome outcome,
                     struct gy_guard_change *c)
{
    bool tried = arm == g->trial;
    if (gross && g->strikes[arm] < UINT32_MAX - GY_GUARD_GROSS_STRIKES)
        g->strikes[arm] += GY_GUARD_GROSS_STRIKES - 1;
    drop(g, arm, GY_GUARD_WHY_FALLBACK, outcome, c);
    if (gross && tried)
        back_off_below(g, arm);
}

/* A job among the first GY_GUARD_PROBE_JOBS of a retrial of an arm dropped GY_GUARD_GROSS_STRIKES
 * times in a row (once for a gross cost) over stop's p99 (or the longest of its last 16, if
 * longer) by the gross margin: out at once, not after a block of 16. On the H100 the GEMM HP's
 * retrials of 64 SMs (1.79x stop's jobs) came back after the 2 000 jobs of a cell's learning, and
 * the block of 16 in its measured rounds put its p99 at 2.44 of alone against corun's 0.97; with
 * the first job alone probed, that job (5.23 ms; hypothesis: the LP not yet on its partition)
 * passed and the next 15 ran at 6.2-6.8 (bench/results/2026-11-25-matrix-current, calls 4 and 6).
 * A costless arm's job is out only if it is one of stop's slowest 1 % by 8 % more. */
static bool probe_out(struct gy_guard *g, uint64_t duration_ns)
{
    struct stop_baseline b = baseline(g);
    double us = duration_ns / 1e3, margin = gross_margin(g);
    double slow = b.p99 > b.recent_max ? b.p99 : b.recent_max;
    if (!(b.recent_median > 0) || us <= slow * margin)
        return false;
    g->ratio_p50_ppm = ppm(us / b.recent_median);
    g->ratio_p99_ppm = ppm(us / slow);
    return true;
}

/* The first GY_GUARD_PROBE_JOBS jobs of a retrial on probation together: out when
 * PROBE_JOINT_OUT of them are over stop's p90 and over the median of stop's jobs of the same stretch
 * (its last GY_GUARD_RECENT jobs of the guard, at least 2) by the gross margin. A costless arm's
 * jobs are 3 of 4 over stop's p90 in under 0.4 % of retrials; the same stretch's stop jobs carry a
 * drift of the HP's speed. On the H200 a GEMM HP's 64-SM retrial ran its block of 16 at 1.16x of
 * stop's jobs in a measured round at 60 % load (p50 1.05 of alone there), none of them over stop's
 * p99 x 1.08 (its p99 was 1.17x its median): probe_out cannot see such a cost, this look can
 * (bench/results/2026-11-29-h200-matrix). */
static bool probe_joint_out(struct gy_guard *g, const struct gy_guard_window *w)
{
    const struct gy_guard_window *stop = &g->arms[GY_ARM_STOP];
    if (!g->base_us || !stop->n || w->recent_n < GY_GUARD_PROBE_JOBS)
        return false;
    uint32_t during[GY_GUARD_RECENT], scratch[GY_GUARD_RECENT];
    uint32_t k = stop_jobs_since(g, g->jobs > GY_GUARD_RECENT ? g->jobs - GY_GUARD_RECENT : 0, during);
    if (k < 2)
        return false; /* no stop job beside it to tell a cost from the HP's speed: its block decides */
    double median = gy_guard_order_stat(during, k, (k + 1) / 2, scratch);
    double p90 = gy_guard_bin_us(gy_guard_bin_quantile(stop->bins, stop->n, 0.9), g->base_us);
    double line = median * gross_margin(g);
    line = p90 > line ? p90 : line;
    uint32_t over = 0, first[GY_GUARD_PROBE_JOBS];
    for (uint32_t i = 0; i < GY_GUARD_PROBE_JOBS; i++) {
        first[i] = w->recent[(w->head + GY_GUARD_RECENT - 1 - i) % GY_GUARD_RECENT];
        over += first[i] > line;
    }
    if (over < PROBE_JOINT_OUT)
        return false;
    g->ratio_p50_ppm = ppm(gy_guard_order_stat(first, GY_GUARD_PROBE_JOBS, GY_GUARD_PROBE_JOBS / 2, scratch) / median);
    g->ratio_p99_ppm = ppm(scratch[GY_GUARD_PROBE_JOBS - 1] / p90);
    return true;
}

struct gy_guard_change gy_guard_record(struct gy_guard *g, enum gy_guard_arm arm, uint32_t depth_us,
                                       uint64_t duration_ns, uint64_t lp_work)
{
    struct gy_guard_change c = {.changed = false};
    gy_guard_forget(g, arm);
    if (!valid_arm(arm))
        return c;
    if (arm == GY_ARM_STOP && !depth_us) {
        add_sample(g, &g->arms[GY_ARM_STOP], true, duration_ns, 0);
        shifted(g, &c);
        return c;
    }
    /* A job at another depth than its arm's jobs now get: of the depth tried, or (stop in force)
     * of the depth in force, into the depth window; any other began before a change: not counted. */
    if ((g->depth_trial && depth_us == g->depth_trial) || arm == GY_ARM_STOP) {
        if (arm == g->in_force && depth_us == (g->depth_trial ? g->depth_trial : g->depth_in_force))
            record_depth(g, duration_ns, &c);
        return c;
    }
    if (depth_us != g->depth_in_force)
        return c;
    add_sample(g, &g->arms[arm], false, duration_ns, lp_work);
    if ((arm != g->trial && arm != g->in_force) || !g->base_us)
        return c; /* a job that began before the arm changed, or before there is a baseline */
    if (arm == under_test(g))
        add_block(g, arm);
    if (g->pinned) { /* measured and shown (the last test's z and ratios), never changed */
        if (is_look(g->arms[arm].n) && g->paired_stop.n >= GY_GUARD_MIN_JOBS)
            test_arm(g, arm);
        return c;
    }
    if (arm == g->trial && g->arms[arm].n >= GY_GUARD_RECENT && progress(g, arm) == 0) {
        /* Its jobs gave the lower processes nothing (CUDA graphs wait under every arm; or they were
         * idle): the trial can only cost the HP. It ends after a block of GY_GUARD_RECENT jobs, the
         * arm in force kept, and is not tried again until the next re-check (a costly arm's fallback
         * would bring it back after each backoff). On the H100 a BERT HP beside a ResNet-50 graph LP
         * ran 2 910 jobs of such trials in one cell, its p99 2.23 of alone against corun's 0.75
         * (bench/results/2026-11-25-matrix-refresh). */
        end_trial(g, GY_GUARD_TRIAL_NOTHING, &c);
        g->reason = GY_GUARD_WHY_KEPT;
        back_off_every_arm(g);
        return c;
    }
    if (arm == g->trial && g->arms[arm].n <= GY_GUARD_PROBE_JOBS && g->strikes[arm] >= GY_GUARD_GROSS_STRIKES &&
        (probe_out(g, duration_ns) || (g->arms[arm].n == GY_GUARD_PROBE_JOBS && probe_joint_out(g, &g->arms[arm])))) {
        drop_out(g, arm, true, GY_GUARD_TRIAL_GROSS, &c);
        return c;
    }
    if (recent_out(g, &g->arms[arm])) {
        drop_out(g, arm, g->ratio_p50_ppm >= ppm(gross_margin(g)), GY_GUARD_TRIAL_FALLBACK, &c);
        return c;
    }
    const struct gy_guard_window *w = &g->arms[arm];
    if (arm == g->in_force && promoted_unconfirmed(g) && w->n > GY_GUARD_CONFIRM_JOBS) {
        /* through its confirmation without a futile look: it passed its trial and its first jobs
         * in force, so a depth may be tried on it (gy_guard_pick) and its strikes go */
        g->confirmed = 1;
        g->strikes[arm] = 0;
    }
    if (!is_look(w->n) || g->paired_stop.n < GY_GUARD_MIN_JOBS)
        return c;
    if (arm == g->trial && w->n >= GY_GUARD_LP_FUTILE_JOBS && lp_cycle_verdict(g, arm, g->in_force) < 0) {
        /* Its cycles gave the LP no more than the arm in force's: promotion needs
         * GY_GUARD_CYCLE_GAIN more, so the rest of the trial could only cost the HP. On the H100 a
         * 16-SM trial beside a GEMM LP, 0.86-0.93 of stop's launches over cycles, was tried again
         * after each backoff and cost the launch-bound HP 1.037 of stop a job in the measured rounds
         * (bench/results/2026-11-25-lp-cycles). Not tried again before the next re-check; the next
         * arm up is (a larger partition drains its backlog faster: 64 SMs gave that LP 1.18). */
        g->reason = GY_GUARD_WHY_KEPT;
        g->backoff_until[arm] = g->jobs + GY_GUARD_RECHECK_JOBS;
        end_trial(g, GY_GUARD_TRIAL_NO_GAIN, &c);
        start_trial(g, next_arm(g, arm));
        return c;
    }
    int verdict = test_arm(g, arm);
    bool full = w->n >= GY_GUARD_TRIAL_MAX || futile(g, w);
    if (arm == g->trial && verdict > 0) {
        uint32_t before = g->in_force;
        bool gave = progress(g, arm) > 0;
        if (lp_cycle_verdict(g, arm, before) > 0) {
            /* In force on confirmation: its window and stop's paired one start again, and its
             * first GY_GUARD_CONFIRM_JOBS jobs in force are judged as a trial's (a futile look
             * drops it) before a larger arm is tried; its strikes go once it is through.
             * The arms promoted are those whose trial looked good, and an arm's cost in force can
             * differ from its trial's (stop at half the jobs then, a quarter now): on the H100, in
             * 5 of 7 cells where a partition was promoted, its jobs in the measured rounds cost the
             * HP 1.6-4.5 % more than in its learning's last 800 jobs
             * (bench/results/2026-11-25-matrix-current, learned_vs_rounds.md), while an arm in
             * force goes only when shown out of the bound, 2 000-5 000 jobs later in the replay. */
            end_trial(g, GY_GUARD_TRIAL_PROMOTED, &c);
            set_in_force(g, arm, GY_GUARD_WHY_PROMOTED, &c);
            reset_window(&g->arms[arm]);
            reset_paired(g);
        } else {
            g->strikes[arm] = 0; /* within the bound: it costs nothing */
            g->reason = GY_GUARD_WHY_KEPT;
            g->backoff_until[arm] = g->jobs + GY_GUARD_RECHECK_JOBS; /* no use before the workload changes */
            end_trial(g, gave ? GY_GUARD_TRIAL_WITHIN : GY_GUARD_TRIAL_NOTHING, &c);
        }
        /* An LP that sent nothing to the partition during the arm's jobs (CUDA graphs wait under
         * every arm) gains nothing from a larger one, and a trial costs the HP: none until the
         * next re-check. On the H100 a BERT HP beside a graph LP lost 22 % a job in a trial of 120
         * SMs that could not have given the LP anything. */
        if (!gave)
            back_off_every_arm(g);
        else if (!gy_guard_on_confirmation(g))
            start_trial(g, next_arm(g, arm));
    } else if (arm == g->in_force && !g->confirmed && verdict > 0) {
        g->confirmed = 1;
        g->strikes[arm] = 0;
    } else if (arm == g->in_force && gy_guard_on_confirmation(g) &&
               (verdict < 0 || (futile(g, w) && g->paired_stop.n >= GY_GUARD_CONFIRM_FUTILE_STOP_JOBS))) {
        /* Its jobs in force were more often over the bound than under it (futile): out, as a trial
         * would be. Replayed on the H100's measured stop jobs (bench/guard_replay.py, 145 cells, 10
         * runs of 10 000 jobs each; bench/results/2026-11-28-confirmation-replay): an arm costless
         * in its trial and 3 % over stop once in force added 0.43 % to the HP's mean job time
         * against 0.74 % without the confirmation, at 5 % 0.39 against 0.52; a costless one gave
         * the LP 19.2 % more launches than stop on every job would have, against 20.5 % (larger
         * arms tried later). A confirmation until the full test passed again (about 1 000 jobs:
         * the p99 needs 256 of stop's) protected the HP no better (0.44, 0.39) and cost the LP
         * more (18.4 %). */
        drop(g, arm, GY_GUARD_WHY_REJECTED, GY_GUARD_TRIAL_ENDED, &c); /* in force: not a trial */
    } else if (verdict < 0 || (verdict == 0 && full && arm == g->trial)) {
        /* A trial not within after GY_GUARD_TRIAL_MAX jobs, or futile, is rejected; the arm in force, measured
         * again after a re-check, goes only when shown out (it passed once; its window is not
         * balanced with stop's: stop gets a quarter of the jobs outside trials). */
        drop(g, arm, arm == g->trial ? GY_GUARD_WHY_REJECTED : GY_GUARD_WHY_FALLBACK,
             verdict < 0 ? GY_GUARD_TRIAL_OVER : futile(g, w) ? GY_GUARD_TRIAL_FUTILE : GY_GUARD_TRIAL_CAP, &c);
    }
    return c;
}

void gy_guard_set_depth(struct gy_guard *g, bool on)
{
    start_over_if_not_sane(g);
    g->depth_on = on;
    if (on)
        return;
    g->depth_in_force = g->depth_trial = 0;
    g->depth_confirmed = 0;
    reset_window(&g->depth_window);
    publish_depth(g);
}

void gy_guard_force(struct gy_guard *g, enum gy_guard_arm arm)
{
    struct gy_guard_change ignored;
    if (!valid_arm(arm))
        return;
    start_over_if_not_sane(g);
    end_trial(g, GY_GUARD_TRIAL_ENDED, NULL);
    g->backoff_until[arm] = 0;
    g->strikes[arm] = 0;
    set_in_force(g, arm, GY_GUARD_WHY_FORCED, &ignored);
    /* Pinned until a reset: no trial, no fallback, no re-check; stop is still interleaved at its
     * share and every arm measured, so the forced arm's cost is seen beside stop's (status). */
    g->pinned = 1;
    g->confirmed = 0;
    /* the arm measured as it is: at the lower processes' own depth */
    g->depth_in_force = g->depth_trial = 0;
    g->depth_reason = GY_GUARD_WHY_FORCED;
    publish_depth(g);
    g->last_recheck = g->jobs;
    for (uint32_t a = arm + 1; a < GY_GUARD_ARM_COUNT; a++) /* no larger trial soon after, either */
        g->backoff_until[a] = g->jobs + GY_GUARD_RECHECK_JOBS;
    reset_window(&g->arms[arm]);
    reset_paired(g);
}

double gy_guard_depth_gain_z(const struct gy_guard *g) { return gy_guard_sane(g) && g->depth_trial ? depth_gain_z(g) : 0.0; }

double gy_guard_gap_lp_per_s(const struct gy_guard *g, uint32_t us)
{
    if (!gy_guard_sane(g) || !depth_or_own(us))
        return 0.0;
    uint32_t d = depth_slot(us);
    return launch_rate(g->depth_cycle_work[d], g->depth_cycle_us[d]);
}

void gy_guard_depth_stats(const struct gy_guard *g, struct gy_guard_arm_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!gy_guard_sane(g))
        return;
    const struct gy_guard_window *w = &g->depth_window;
    out->jobs = w->jobs;
    if (g->base_us && w->n) {
        out->window = w->n;
        out->p50_ms = gy_guard_bin_us(gy_guard_bin_quantile(w->bins, w->n, 0.5), g->base_us) / 1e3;
        out->p99_ms = gy_guard_bin_us(gy_guard_bin_quantile(w->bins, w->n, 0.99), g->base_us) / 1e3;
    }
}

void gy_guard_arm_stats(const struct gy_guard *g, enum gy_guard_arm arm, struct gy_guard_arm_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!valid_arm(arm) || !gy_guard_sane(g))
        return;
    const struct gy_guard_window *w = &g->arms[arm];
    out->jobs = w->jobs;
    if (g->base_us && w->n) {
        out->window = w->n;
        out->p50_ms = gy_guard_bin_us(gy_guard_bin_quantile(w->bins, w->n, 0.5), g->base_us) / 1e3;
        out->p99_ms = gy_guard_bin_us(gy_guard_bin_quantile(w->bins, w->n, 0.99), g->base_us) / 1e3;
    } else if (!g->base_us && w->recent_n) { /* no histogram before stop's first jobs: the last jobs */
        uint32_t scratch[GY_GUARD_RECENT], n = w->recent_n;
        uint32_t values[GY_GUARD_RECENT];
        for (uint32_t i = 0; i < n; i++)
            values[i] = w->recent[(w->head + GY_GUARD_RECENT - 1 - i) % GY_GUARD_RECENT];
        out->window = n;
        out->p50_ms = gy_guard_order_stat(values, n, (n + 1) / 2, scratch) / 1e3;
        out->p99_ms = scratch[n - 1 - (n - 1) / 100] / 1e3; /* nearest rank of 0.99 */
    }
    out->lp_per_s = progress(g, arm);
    out->lp_cycle_per_s = cycle_rate(g, arm);
}
