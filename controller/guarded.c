/* The guarded rule (guarded.h), a pure function of struct gy_guard: no clock, no segment, no
 * process, so that tests drive it with synthetic durations.
 *
 * A job gets stop with probability stop_share (the running baseline, so that a slow drift of the
 * HP's own job time is never blamed on an arm), else the arm being tried, else the arm in force.
 * Arms are tried in order 16, 32, 48 SMs, each only once the one before it was within the bound
 * (a larger partition takes more from the HP), and only once stop has GY_GUARD_MIN_JOBS samples.
 *   Promotion is slow and distribution-free: at every 16th sample of the arm's window (few looks,
 *   so that testing again and again does not make a lucky pass likely), the arm's median's 95 %
 *   upper confidence bound must be within (1 + eps_p50) of stop's median's 95 % lower bound, and
 *   the arm's p99 within (1 + eps_p99) of stop's. Noise widens the bounds, so noise never
 *   promotes; an arm whose window fills (GY_GUARD_RING) without passing is rejected.
 *   Demotion is fast: once an arm's last GY_GUARD_RECENT jobs clearly leave the bound (their
 *   median's 95 % lower bound above the p50 bound, or 3 of them above the p99 bound), it is out
 *   at once, not tried again for GY_GUARD_BACKOFF_JOBS jobs.
 * In force is the arm within the bound with the most LP progress. Every GY_GUARD_RECHECK_JOBS jobs
 * the partition arms' windows reset, so the arm in force is tested again and larger ones retried;
 * when stop's recent median moves by more than GY_GUARD_SHIFT from its window's, the HP changed:
 * everything resets to stop. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "guarded.h"

#define CONF 0.95
#define P99_OUT_OF_RECENT 3 /* of the last 16 above the p99 bound: clearly out (1 % expected) */

#define ARM_ROW(suffix, name, sms) {name, sms},
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

const char *gy_guard_arm_name(enum gy_guard_arm arm)
{
    return (unsigned)arm < GY_GUARD_ARM_COUNT ? arm_rows[arm].name : "?";
}

unsigned gy_guard_arm_sms(enum gy_guard_arm arm) { return (unsigned)arm < GY_GUARD_ARM_COUNT ? arm_rows[arm].sms : 0; }

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

static uint32_t ppm(double x) { return (uint32_t)(x * 1e6 + 0.5); }

void gy_guard_init(struct gy_guard *g)
{
    memset(g, 0, sizeof *g);
    atomic_store(&g->current, GY_ARM_STOP);
    g->in_force = GY_ARM_STOP;
    g->trial = GY_GUARD_NO_ARM;
    g->reason = GY_GUARD_WHY_START;
    gy_guard_configure(g, GY_GUARD_DEFAULT_EPS_P50, GY_GUARD_DEFAULT_EPS_P99, GY_GUARD_DEFAULT_STOP_SHARE,
                       GY_GUARD_DEFAULT_SEED);
}

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
    w->n = 0;
    w->lp_work = w->lp_ns = 0;
}

static uint32_t window_count(const struct gy_guard_window *w) { return w->n < GY_GUARD_RING ? w->n : GY_GUARD_RING; }

/* The window's samples, newest first; returns how many. */
static uint32_t window_values(const struct gy_guard_window *w, uint32_t out[GY_GUARD_RING])
{
    uint32_t count = window_count(w);
    for (uint32_t i = 0; i < count; i++)
        out[i] = w->us[(w->head + 2 * GY_GUARD_RING - 1 - i) % GY_GUARD_RING];
    return count;
}

static uint32_t nearest_rank(uint32_t n, double q)
{
    uint32_t k = (uint32_t)(q * n);
    return k < q * n ? k + 1 : k < 1 ? 1 : k;
}

static double progress(const struct gy_guard *g, uint32_t arm)
{
    const struct gy_guard_window *w = &g->arms[arm];
    return arm == GY_ARM_STOP || !w->lp_ns ? 0.0 : (double)w->lp_work * 1e9 / (double)w->lp_ns;
}

/* The next arm to try after `arm` (stop -> 16 -> 32 -> 48), or GY_GUARD_NO_ARM. */
static uint32_t next_arm(uint32_t arm) { return arm + 1 < GY_GUARD_ARM_COUNT ? arm + 1 : GY_GUARD_NO_ARM; }

static void start_trial(struct gy_guard *g, uint32_t arm)
{
    g->trial = GY_GUARD_NO_ARM;
    if (!valid_arm(arm) || g->jobs < g->backoff_until[arm])
        return;
    g->trial = arm;
    reset_window(&g->arms[arm]);
}

enum gy_guard_arm gy_guard_pick(struct gy_guard *g)
{
    g->jobs++;
    if (!valid_arm(g->in_force))
        g->in_force = GY_ARM_STOP;
    if (g->jobs - g->last_recheck >= GY_GUARD_RECHECK_JOBS) {
        g->last_recheck = g->jobs;
        for (uint32_t a = GY_ARM_STOP + 1; a < GY_GUARD_ARM_COUNT; a++)
            reset_window(&g->arms[a]);
        g->confirmed = 0;
        g->trial = GY_GUARD_NO_ARM;
        if (g->in_force != GY_ARM_STOP)
            g->reason = GY_GUARD_WHY_RECHECK;
    }
    /* Trials start only once stop has its samples: until then the early fallback has no
     * baseline to look at, and a costly arm would run unchecked. */
    if (!valid_arm(g->trial) && window_count(&g->arms[GY_ARM_STOP]) >= GY_GUARD_MIN_JOBS)
        start_trial(g, next_arm(g->in_force));
    uint32_t arm = g->in_force;
    if (next_random(g) % 1000000u < g->stop_share_ppm)
        arm = GY_ARM_STOP;
    else if (valid_arm(g->trial))
        arm = g->trial;
    g->open[arm]++;
    publish_current(g);
    return (enum gy_guard_arm)arm;
}

void gy_guard_forget(struct gy_guard *g, enum gy_guard_arm arm)
{
    if (valid_arm(arm) && g->open[arm])
        g->open[arm]--;
    publish_current(g);
}

static void add_sample(struct gy_guard_window *w, uint64_t duration_ns, uint64_t lp_work)
{
    uint64_t us = (duration_ns + 500) / 1000;
    w->us[w->head % GY_GUARD_RING] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    w->head = (w->head + 1) % GY_GUARD_RING;
    if (w->n < UINT32_MAX)
        w->n++;
    w->jobs++;
    w->lp_work += lp_work;
    w->lp_ns += duration_ns;
}

struct stop_baseline {
    uint32_t count, median, median_lcb, p99;
};

static struct stop_baseline baseline(const struct gy_guard *g)
{
    uint32_t v[GY_GUARD_RING], scratch[GY_GUARD_RING], l, u;
    struct stop_baseline b = {.count = window_values(&g->arms[GY_ARM_STOP], v)};
    if (!b.count)
        return b;
    gy_guard_median_ranks(b.count, CONF, &l, &u);
    b.median = gy_guard_order_stat(v, b.count, (b.count + 1) / 2, scratch);
    b.median_lcb = scratch[l - 1];
    b.p99 = scratch[nearest_rank(b.count, 0.99) - 1];
    return b;
}

static double bound(uint32_t stop_value, uint32_t eps_ppm) { return stop_value * (1.0 + eps_ppm / 1e6); }

/* The last GY_GUARD_RECENT jobs of `arm` clearly out of the bound of stop? */
static bool recent_out(struct gy_guard *g, uint32_t arm, const struct stop_baseline *b)
{
    uint32_t v[GY_GUARD_RING], scratch[GY_GUARD_RING], l, u;
    if (window_values(&g->arms[arm], v) < GY_GUARD_RECENT || b->count < GY_GUARD_RECENT)
        return false;
    gy_guard_median_ranks(GY_GUARD_RECENT, CONF, &l, &u);
    uint32_t lcb = gy_guard_order_stat(v, GY_GUARD_RECENT, l, scratch);
    uint32_t above = 0;
    for (uint32_t i = 0; i < GY_GUARD_RECENT; i++)
        above += v[i] > bound(b->p99, g->eps_p99_ppm);
    if (lcb > bound(b->median, g->eps_p50_ppm) || above >= P99_OUT_OF_RECENT) {
        g->ratio_p50_ppm = b->median ? ppm((double)scratch[GY_GUARD_RECENT / 2 - 1] / b->median) : 0;
        g->ratio_p99_ppm = b->p99 ? ppm((double)scratch[GY_GUARD_RECENT - 1] / b->p99) : 0;
        return true;
    }
    return false;
}

/* The full test of `arm` against stop, over both windows. */
static bool within_bound(struct gy_guard *g, uint32_t arm, const struct stop_baseline *b)
{
    uint32_t v[GY_GUARD_RING], scratch[GY_GUARD_RING], l, u;
    uint32_t count = window_values(&g->arms[arm], v);
    gy_guard_median_ranks(count, CONF, &l, &u);
    uint32_t median = gy_guard_order_stat(v, count, (count + 1) / 2, scratch);
    uint32_t ucb = scratch[u - 1], p99 = scratch[nearest_rank(count, 0.99) - 1];
    g->ratio_p50_ppm = b->median ? ppm((double)median / b->median) : 0;
    g->ratio_p99_ppm = b->p99 ? ppm((double)p99 / b->p99) : 0;
    return ucb <= bound(b->median_lcb, g->eps_p50_ppm) && p99 <= bound(b->p99, g->eps_p99_ppm);
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

static void drop(struct gy_guard *g, uint32_t arm, enum gy_guard_reason why, struct gy_guard_change *c)
{
    g->backoff_until[arm] = g->jobs + strike(g, arm);
    if (g->trial == arm)
        g->trial = GY_GUARD_NO_ARM;
    if (g->in_force == arm) {
        g->trial = GY_GUARD_NO_ARM; /* a larger arm than one that failed is no safer */
        set_in_force(g, GY_ARM_STOP, why, c);
    } else if (g->in_force == GY_ARM_STOP) {
        g->reason = GY_GUARD_WHY_REJECTED;
    }
}

/* Forget every window and backoff: stop in force, arms measured again from the start. Settings,
 * the random state and the job counts stay. */
static void start_over(struct gy_guard *g, enum gy_guard_reason why, struct gy_guard_change *c)
{
    for (uint32_t a = 0; a < GY_GUARD_ARM_COUNT; a++) {
        reset_window(&g->arms[a]);
        g->backoff_until[a] = 0;
        g->strikes[a] = 0;
    }
    g->trial = GY_GUARD_NO_ARM;
    g->confirmed = 0;
    set_in_force(g, GY_ARM_STOP, why, c);
    g->reason = why;
}

/* Stop's recent median far from its window's: the HP itself changed. Start over. */
static bool shifted(struct gy_guard *g, struct gy_guard_change *c)
{
    uint32_t v[GY_GUARD_RING], scratch[GY_GUARD_RING];
    uint32_t count = window_values(&g->arms[GY_ARM_STOP], v);
    if (count < 2 * GY_GUARD_RECENT)
        return false;
    uint32_t whole = gy_guard_order_stat(v, count, (count + 1) / 2, scratch);
    uint32_t recent = gy_guard_order_stat(v, GY_GUARD_RECENT, GY_GUARD_RECENT / 2, scratch);
    if (!whole || (recent <= whole * (1 + GY_GUARD_SHIFT) && recent >= whole * (1 - GY_GUARD_SHIFT)))
        return false;
    start_over(g, GY_GUARD_WHY_SHIFT, c);
    return true;
}

struct gy_guard_change gy_guard_reset(struct gy_guard *g)
{
    struct gy_guard_change c = {.changed = false};
    start_over(g, GY_GUARD_WHY_RESET, &c);
    return c;
}

struct gy_guard_change gy_guard_record(struct gy_guard *g, enum gy_guard_arm arm, uint64_t duration_ns,
                                       uint64_t lp_work)
{
    struct gy_guard_change c = {.changed = false};
    gy_guard_forget(g, arm);
    if (!valid_arm(arm))
        return c;
    add_sample(&g->arms[arm], duration_ns, arm == GY_ARM_STOP ? 0 : lp_work);
    if (arm == GY_ARM_STOP) {
        shifted(g, &c);
        return c;
    }
    if (arm != g->trial && arm != g->in_force)
        return c; /* a job that began before the arm changed */
    struct stop_baseline b = baseline(g);
    if (recent_out(g, arm, &b)) {
        drop(g, arm, GY_GUARD_WHY_FALLBACK, &c);
        return c;
    }
    const struct gy_guard_window *w = &g->arms[arm];
    if (w->n < GY_GUARD_MIN_JOBS || w->n % GY_GUARD_LOOK_EVERY || b.count < GY_GUARD_MIN_JOBS)
        return c;
    bool ok = within_bound(g, arm, &b);
    bool full = w->n >= GY_GUARD_RING;
    if (arm == g->trial && ok) {
        uint32_t before = g->in_force;
        g->strikes[arm] = 0; /* within the bound: it costs nothing */
        if (progress(g, arm) > progress(g, before)) {
            set_in_force(g, arm, GY_GUARD_WHY_PROMOTED, &c);
            g->confirmed = 1;
        } else {
            g->reason = GY_GUARD_WHY_KEPT;
            g->backoff_until[arm] = g->jobs + GY_GUARD_BACKOFF_JOBS; /* no use trying it again soon */
        }
        start_trial(g, next_arm(arm));
    } else if (arm == g->in_force && ok) {
        g->confirmed = 1;
        g->strikes[arm] = 0;
    } else if (!ok && full) {
        drop(g, arm, arm == g->trial ? GY_GUARD_WHY_REJECTED : GY_GUARD_WHY_FALLBACK, &c);
    }
    return c;
}

void gy_guard_force(struct gy_guard *g, enum gy_guard_arm arm)
{
    struct gy_guard_change ignored;
    if (!valid_arm(arm))
        return;
    g->trial = GY_GUARD_NO_ARM;
    g->backoff_until[arm] = 0;
    g->strikes[arm] = 0;
    set_in_force(g, arm, GY_GUARD_WHY_FORCED, &ignored);
    /* no trial until the next periodic re-check: what is forced stays */
    g->last_recheck = g->jobs;
    for (uint32_t a = arm + 1; a < GY_GUARD_ARM_COUNT; a++)
        g->backoff_until[a] = g->jobs + GY_GUARD_RECHECK_JOBS;
}

void gy_guard_arm_stats(const struct gy_guard *g, enum gy_guard_arm arm, struct gy_guard_arm_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!valid_arm(arm))
        return;
    uint32_t v[GY_GUARD_RING], scratch[GY_GUARD_RING];
    const struct gy_guard_window *w = &g->arms[arm];
    out->jobs = w->jobs;
    out->window = window_values(w, v);
    if (out->window) {
        out->p50_ms = gy_guard_order_stat(v, out->window, (out->window + 1) / 2, scratch) / 1e3;
        out->p99_ms = scratch[nearest_rank(out->window, 0.99) - 1] / 1e3;
    }
    out->lp_per_s = progress(g, arm);
}
