/* The guarded policy's state as status, --json and /metrics show it: the arm in force and why,
 * per arm the HP's job times (p50, p99, jobs) and the LP's progress during them. From a copy of
 * struct gy_guard taken under the mutex (gy_status_read). */
#include <stdio.h>

#include "guarded.h"

#define GAP_DEPTH_US(us) us,

#define EMIT(...)                                                                                        \
    do {                                                                                                 \
        int n_ = snprintf(used < len ? buf + used : NULL, used < len ? len - used : 0, __VA_ARGS__);     \
        used += n_ > 0 ? (size_t)n_ : 0;                                                                 \
    } while (0)

static const char *trial_name(const struct gy_guard *g)
{
    return g->trial < GY_GUARD_ARM_COUNT ? gy_guard_arm_name((enum gy_guard_arm)g->trial) : "-";
}

bool gy_guard_trial_tested(const struct gy_guard_trial_view *t) { return t->ratio_p50 > 0 || t->ratio_p99 > 0 || t->z != 0; }

void gy_guard_trial_figures(const struct gy_guard_trial_view *t, char *buf, size_t len)
{
    int n = gy_guard_trial_tested(t)
                ? snprintf(buf, len, "last test z %.2f, p50 x%.3f, p99 x%.3f of stop", t->z, t->ratio_p50, t->ratio_p99)
                : snprintf(buf, len, "no test had judged it");
    size_t used = n > 0 ? (size_t)n : 0;
    if (used < len && t->lp_cycle_ratio > 0)
        snprintf(buf + used, len - used, "; its cycles gave the LP x%.3f of %s's", t->lp_cycle_ratio,
                 gy_guard_arm_name(t->in_force));
    else if (used < len)
        snprintf(buf + used, len - used, "; its cycles not compared with %s's", gy_guard_arm_name(t->in_force));
}

/* {"arm": ..., "jobs": ..., "passes_at_z": ..., "z_now": ..., "more_jobs_estimate": ..., "beyond_cap": ...,
 *  "slow_jobs_z": ...}
 * into buf (may be NULL when len is 0); returns the length it needs, as snprintf. */
static size_t outlook_json(const struct gy_guard_outlook *o, char *buf, size_t len)
{
    size_t used = 0;
    EMIT("{\"arm\": \"%s\", \"jobs\": %u, \"passes_at_z\": %.2f, \"z_now\": ", gy_guard_arm_name(o->arm), o->jobs,
         GY_GUARD_LOOK_Z);
    EMIT(o->judged ? "%.3f" : "null", o->z);
    EMIT(", \"more_jobs_estimate\": ");
    EMIT(o->more_jobs >= 0 ? "%lld" : "null", (long long)o->more_jobs);
    EMIT(", \"beyond_cap\": %s, \"slow_jobs_z\": ", o->beyond_cap ? "true" : "false");
    EMIT(o->slow_judged ? "%.3f}" : "null}", o->slow_z);
    return used;
}

int gy_guarded_json(const struct gy_guard *g, char *buf, size_t len)
{
    size_t used = 0;
    EMIT("{\"in_force\": \"%s\", \"reason\": \"%s\", \"reason_text\": \"%s\", \"trying\": ",
         gy_guard_arm_name((enum gy_guard_arm)g->in_force), gy_guard_reason_name((enum gy_guard_reason)g->reason),
         gy_guard_reason_text((enum gy_guard_reason)g->reason));
    EMIT(g->trial < GY_GUARD_ARM_COUNT ? "\"%s\"" : "null", trial_name(g));
    EMIT(", \"confirmed\": %s, \"on_confirmation\": %s, \"pinned\": %s, \"jobs\": %llu, \"changes\": %u, \"eps_p50\": %.6g, \"eps_p99\": %.6g, "
         "\"stop_share\": %.6g, \"last_ratio_p50\": %.6g, \"last_ratio_p99\": %.6g, \"last_z\": %.3f, "
         "\"base_ms\": %.3f, \"arms\": {",
         g->confirmed ? "true" : "false", gy_guard_on_confirmation(g) ? "true" : "false", g->pinned ? "true" : "false",
         (unsigned long long)g->jobs, g->changes,
         g->eps_p50_ppm / 1e6,
         g->eps_p99_ppm / 1e6, g->stop_share_ppm / 1e6, g->ratio_p50_ppm / 1e6, g->ratio_p99_ppm / 1e6,
         g->z_milli / 1e3, g->base_us / 1e3);
    for (int a = 0; a < GY_GUARD_ARM_COUNT; a++) {
        struct gy_guard_arm_stats s;
        gy_guard_arm_stats(g, (enum gy_guard_arm)a, &s);
        EMIT("%s\"%s\": {\"jobs\": %llu, \"window\": %u, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"lp_per_s\": %.1f, "
             "\"lp_cycle_per_s\": %.1f, \"backoff_until_job\": %llu}",
             a ? ", " : "", gy_guard_arm_name((enum gy_guard_arm)a), (unsigned long long)s.jobs, s.window, s.p50_ms,
             s.p99_ms, s.lp_per_s, s.lp_cycle_per_s, (unsigned long long)g->backoff_until[a]);
    }
    EMIT("}, \"trial\": "); /* where the arm tried stands: gy_guard_trial_outlook */
    struct gy_guard_outlook o;
    if (!gy_guard_trial_outlook(g, &o))
        EMIT("null");
    else
        used += outlook_json(&o, used < len ? buf + used : NULL, used < len ? len - used : 0);
    EMIT(", \"queue_depth\": {\"on\": %s, \"in_force_us\": %u, \"reason\": \"%s\", \"trying_us\": ",
         g->depth_on ? "true" : "false", g->depth_in_force, gy_guard_reason_name((enum gy_guard_reason)g->depth_reason));
    EMIT(g->depth_trial ? "%u" : "null", g->depth_trial);
    struct gy_guard_arm_stats d;
    gy_guard_depth_stats(g, &d);
    EMIT(", \"confirmed\": %s, \"on_confirmation\": %s, \"now_us\": %u, \"window\": %u, \"p50_ms\": %.3f, "
         "\"p99_ms\": %.3f, \"gap_lp_per_s\": {\"own\": %.1f",
         g->depth_confirmed ? "true" : "false", gy_guard_depth_on_confirmation(g) ? "true" : "false",
         (unsigned)atomic_load(&g->queue_us), d.window, d.p50_ms, d.p99_ms, gy_guard_gap_lp_per_s(g, 0));
    static const uint32_t depths[GY_GUARD_DEPTH_COUNT] = {GY_GUARD_DEPTHS(GAP_DEPTH_US)};
    for (int i = 0; i < GY_GUARD_DEPTH_COUNT; i++) /* what the gaps at each depth gave the LP: promotion's gain */
        EMIT(", \"%u\": %.1f", depths[i], gy_guard_gap_lp_per_s(g, depths[i]));
    EMIT("}, \"gain_z\": "); /* the depth tried's gain shown against its gaps' spread (promotion needs GY_GUARD_GAIN_Z) */
    EMIT(g->depth_trial ? "%.2f" : "null", gy_guard_depth_gain_z(g));
    EMIT(", \"trial\": ");
    if (!gy_guard_depth_outlook(g, &o)) { /* where the depth tried stands, as an arm's trial */
        EMIT("null}");
    } else {
        used += outlook_json(&o, used < len ? buf + used : NULL, used < len ? len - used : 0);
        EMIT("}");
    }
    EMIT(", \"trials_ended\": %u, \"last_trial\": ", g->trials_ended); /* how the last trial ended */
    struct gy_guard_trial_view t;
    if (!gy_guard_last_trial(g, &t)) {
        EMIT("null");
    } else {
        EMIT("{\"arm\": \"%s\", \"against\": \"%s\", \"outcome\": \"%s\", \"outcome_text\": \"%s\", \"jobs\": %u, "
             "\"z\": ", gy_guard_arm_name(t.arm), gy_guard_arm_name(t.in_force), gy_guard_trial_outcome_name(t.outcome),
             gy_guard_trial_outcome_text(t.outcome), t.jobs);
        /* no decision yet (a trial ended before its first test): null, not a ratio of 0 */
        bool tested = gy_guard_trial_tested(&t);
        EMIT(tested ? "%.2f" : "null", t.z);
        EMIT(", \"ratio_p50\": ");
        EMIT(tested ? "%.4f" : "null", t.ratio_p50);
        EMIT(", \"ratio_p99\": ");
        EMIT(tested ? "%.4f" : "null", t.ratio_p99);
        EMIT(", \"lp_cycle_ratio\": ");
        EMIT(t.lp_cycle_ratio > 0 ? "%.4f" : "null", t.lp_cycle_ratio);
        EMIT(", \"at_job\": %llu}", (unsigned long long)t.at_job);
    }
    EMIT("}");
    return (int)used;
}

/* The rest of a trial's status line: where its test stands against a bound of bound_pct. */
static void print_outlook(FILE *to, const struct gy_guard_outlook *o, double bound_pct)
{
    if (!o->judged)
        fprintf(to, ", not judged yet (stop's paired window needs %u jobs)", GY_GUARD_MIN_JOBS);
    else if (o->more_jobs < 0)
        fprintf(to, ", z %.2f now: its jobs so far are not shorter than stop's + %.1f %% (ends when futile, from %u "
                    "jobs)", o->z, bound_pct, GY_GUARD_FUTILE_JOBS);
    else
        fprintf(to, ", z %.2f now (passes at %.2f, from %u jobs): at this trend about %lld more of its jobs%s", o->z,
                GY_GUARD_LOOK_Z, GY_GUARD_P99_MIN_JOBS, (long long)o->more_jobs,
                o->beyond_cap ? ", past its trial's cap: it ends first unless the trend improves"
                              : " (it gets at most half the HP's jobs while tried)");
    if (o->slow_judged) /* the slow jobs' test: a trial passes only where it does not lean over */
        fprintf(to, "; its slowest tenth z %.2f against stop's + p99 bound (passes at >= 0, out at <= -%.2f)",
                o->slow_z, GY_GUARD_OUT_Z);
    fputc('\n', to);
}

void gy_guarded_print(FILE *to, const struct gy_guard *g)
{
    fprintf(to, "guarded: arm in force %s%s%s%s (%s); trying %s; %llu jobs, %u changes; bound p50 +%.1f %%, p99 +%.1f %%, "
                "stop share %.2f; last test z %.2f (within at >= %.2f, from %u jobs a window)\n",
            gy_guard_arm_name((enum gy_guard_arm)g->in_force), g->confirmed ? ", confirmed" : "",
            gy_guard_on_confirmation(g) ? ", on confirmation (measured again in force before a larger arm)" : "",
            g->pinned ? ", pinned until a guard-reset" : "", gy_guard_reason_text((enum gy_guard_reason)g->reason), trial_name(g), (unsigned long long)g->jobs,
            g->changes, g->eps_p50_ppm / 1e4, g->eps_p99_ppm / 1e4, g->stop_share_ppm / 1e6, g->z_milli / 1e3,
            GY_GUARD_LOOK_Z, GY_GUARD_P99_MIN_JOBS);
    struct gy_guard_outlook o;
    if (gy_guard_trial_outlook(g, &o)) {
        fprintf(to, "guarded: trial of %s: %u of its jobs", gy_guard_arm_name(o.arm), o.jobs);
        print_outlook(to, &o, g->eps_p50_ppm / 1e4);
    }
    struct gy_guard_trial_view t;
    if (gy_guard_last_trial(g, &t)) {
        char figures[160];
        gy_guard_trial_figures(&t, figures, sizeof figures);
        fprintf(to, "guarded: last trial (%u ended so far): %s against %s, %u of its jobs: %s (%s); %s\n",
                g->trials_ended, gy_guard_arm_name(t.arm), gy_guard_arm_name(t.in_force), t.jobs,
                gy_guard_trial_outcome_name(t.outcome), gy_guard_trial_outcome_text(t.outcome), figures);
    }
    struct gy_guard_arm_stats d;
    gy_guard_depth_stats(g, &d);
    if (!g->depth_on) {
        fprintf(to, "guarded: lower queue depth between HP jobs: their own bound (not learned: --guard-depth)\n");
    } else {
        fprintf(to, "guarded: lower queue depth between HP jobs %u us%s (0: their own bound; %s); trying ",
                g->depth_in_force,
                g->depth_confirmed               ? ", confirmed"
                : gy_guard_depth_on_confirmation(g) ? ", on confirmation (measured again in force before any trial)"
                                                    : "",
                gy_guard_reason_text((enum gy_guard_reason)g->depth_reason));
        if (g->depth_trial)
            fprintf(to, "%u us; its window %u jobs, p50 %.3f ms, p99 %.3f ms; its gaps' gain z %.2f (promotion: %.1f)\n",
                    g->depth_trial, d.window, d.p50_ms, d.p99_ms, gy_guard_depth_gain_z(g), GY_GUARD_GAIN_Z);
        else
            fprintf(to, "-\n");
        if (gy_guard_depth_outlook(g, &o)) {
            fprintf(to, "guarded: trial of queue depth %u us with %s: %u of its jobs", g->depth_trial,
                    gy_guard_arm_name(o.arm), o.jobs);
            print_outlook(to, &o, g->eps_p50_ppm / 2e4);
        }
    }
    fprintf(to, "%14s %10s %7s %10s %10s %12s %14s\n", "arm", "jobs", "window", "p50_ms", "p99_ms", "lp_per_s",
            "lp_cycle_per_s");
    for (int a = 0; a < GY_GUARD_ARM_COUNT; a++) {
        struct gy_guard_arm_stats s;
        gy_guard_arm_stats(g, (enum gy_guard_arm)a, &s);
        fprintf(to, "%14s %10llu %7u %10.3f %10.3f %12.1f %14.1f%s\n", gy_guard_arm_name((enum gy_guard_arm)a),
                (unsigned long long)s.jobs, s.window, s.p50_ms, s.p99_ms, s.lp_per_s, s.lp_cycle_per_s,
                (uint32_t)a == g->in_force ? "  <- in force" : "");
    }
}

int gy_guarded_metrics(const struct gy_guard *g, const char *segment, char *buf, size_t len)
{
    size_t used = 0;
    EMIT("# HELP gpuyield_guarded_in_force The guarded policy's arm in force (value 1), with the reason code.\n"
         "# TYPE gpuyield_guarded_in_force gauge\n"
         "gpuyield_guarded_in_force{segment=\"%s\",arm=\"%s\",reason=\"%s\"} 1\n",
         segment, gy_guard_arm_name((enum gy_guard_arm)g->in_force),
         gy_guard_reason_name((enum gy_guard_reason)g->reason));
    EMIT("# HELP gpuyield_guarded_queue_depth_seconds The lower processes' queue depth between HP jobs in force "
         "(GPU time; 0: their own bound), with the reason code.\n"
         "# TYPE gpuyield_guarded_queue_depth_seconds gauge\n"
         "gpuyield_guarded_queue_depth_seconds{segment=\"%s\",reason=\"%s\"} %.6f\n",
         segment, gy_guard_reason_name((enum gy_guard_reason)g->depth_reason), g->depth_in_force / 1e6);
    EMIT("# HELP gpuyield_guarded_trials_ended_total Trials of arms ended so far.\n"
         "# TYPE gpuyield_guarded_trials_ended_total counter\n"
         "gpuyield_guarded_trials_ended_total{segment=\"%s\"} %u\n",
         segment, g->trials_ended);
    struct gy_guard_trial_view t;
    if (gy_guard_last_trial(g, &t))
        EMIT("# HELP gpuyield_guarded_last_trial The last trial's arm and how it ended (value 1).\n"
             "# TYPE gpuyield_guarded_last_trial gauge\n"
             "gpuyield_guarded_last_trial{segment=\"%s\",arm=\"%s\",outcome=\"%s\"} 1\n",
             segment, gy_guard_arm_name(t.arm), gy_guard_trial_outcome_name(t.outcome));
    static const struct {
        const char *family, *help, *type;
    } families[] = {
        {"gpuyield_guarded_jobs_total", "HP jobs run under each arm.", "counter"},
        {"gpuyield_guarded_job_p50_seconds", "Median HP job time under each arm, over its window.", "gauge"},
        {"gpuyield_guarded_job_p99_seconds", "99th percentile HP job time under each arm, over its window.", "gauge"},
        {"gpuyield_guarded_lp_progress_per_second",
         "Lower partition launches and copies per second of HP job under each arm, over its window.", "gauge"},
        {"gpuyield_guarded_lp_cycle_launches_per_second",
         "Lower kernel and graph launches per second over each arm's HP jobs and the gaps after them, over its window.",
         "gauge"},
    };
    for (size_t f = 0; f < sizeof families / sizeof *families; f++) {
        EMIT("# HELP %s %s\n# TYPE %s %s\n", families[f].family, families[f].help, families[f].family,
             families[f].type);
        for (int a = 0; a < GY_GUARD_ARM_COUNT; a++) {
            struct gy_guard_arm_stats s;
            gy_guard_arm_stats(g, (enum gy_guard_arm)a, &s);
            EMIT("%s{segment=\"%s\",arm=\"%s\"} ", families[f].family, segment, gy_guard_arm_name((enum gy_guard_arm)a));
            if (f == 0)
                EMIT("%llu\n", (unsigned long long)s.jobs);
            else
                EMIT("%.6f\n", f == 1 ? s.p50_ms / 1e3 : f == 2 ? s.p99_ms / 1e3 : f == 3 ? s.lp_per_s : s.lp_cycle_per_s);
        }
    }
    return (int)used;
}
