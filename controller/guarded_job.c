/* The guarded rule inside the protocol: gate.c calls these under the segment's mutex as a job is
 * counted in and out, so every decision is per job and in one place; a lower process only reads
 * the arm word (guard.current) on its slow path. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "guarded.h"
#include "shared_wait.h"
#include "registry.h"
#include "stderr_line.h"

void gy_guarded_init_segment(struct gy_segment *seg) { gy_guard_init(&seg->guard); }

bool gy_guarded_active(const gy_shm *shm)
{
    return gy_get_policy(shm) == GY_POLICY_GUARDED && gy_get_mps(shm);
}

/* The lower processes' counters summed over their slots: what they sent to the partition
 * (launches + copies: the rule's progress during a job) and all their kernel and graph launches
 * (their progress over a cycle); and the highest registered level (the HP's), found in the same
 * pass: a begin reads each slot once (each scan of the 128 slots cost a cold begin microseconds:
 * bench/results/2026-12-07-cpu-guarded-job-cost/). */
struct lower_sums {
    uint64_t partition, launches;
    int top; /* the highest priority of a live slot */
};
static struct lower_sums lower_sums_locked(const struct gy_segment *seg, int priority)
{
    struct lower_sums sum = {0, 0, 0};
    for (int i = 0; i < GY_MAX_PROCS; i++) {
        const struct gy_proc_slot *slot = &seg->procs[i];
        if (atomic_load_explicit(&slot->state, memory_order_acquire) == GY_PROC_FREE || !gy_slot_sane(slot))
            continue;
        if (slot->priority > sum.top)
            sum.top = slot->priority;
        if (slot->priority >= priority)
            continue;
        sum.partition += atomic_load_explicit(&slot->counters.partition_launches, memory_order_relaxed) +
                         atomic_load_explicit(&slot->counters.partition_copies, memory_order_relaxed);
        sum.launches += atomic_load_explicit(&slot->counters.launches, memory_order_relaxed) +
                        atomic_load_explicit(&slot->counters.graph_launches, memory_order_relaxed);
    }
    return sum;
}

uint64_t gy_guarded_lp_work_locked(const struct gy_segment *seg, int priority)
{
    return lower_sums_locked(seg, priority).partition;
}

/* Jobs in progress on the segment, every level. */
static uint64_t jobs_in_progress_locked(const struct gy_segment *seg)
{
    uint64_t n = 0;
    for (int level = 0; level < GY_LEVELS; level++)
        n += seg->jobs[level];
    return n;
}

void gy_guarded_begin_locked(gy_shm *shm, gy_job *job, struct gy_guard_change *change)
{
    memset(change, 0, sizeof *change);
    job->guard_arm = -1;
    if (!gy_guarded_active(shm))
        return;
    struct gy_segment *seg = shm->seg;
    /* Only the HP's jobs are measured and get an arm: a job at level 0 gates nobody (lower workers
     * marking their own jobs), and a job below the top registered level is another kind of job
     * whose times must not enter the HP's windows; its lower launches see the arm of the open HP
     * jobs, stop when there is none (as under corun). */
    if (job->priority == 0)
        return; /* before the scan: a lower worker's own job pays nothing for the rule */
    struct lower_sums lower = lower_sums_locked(seg, job->priority);
    if (job->priority < lower.top)
        return;
    /* A job alone on the segment: whatever the open counts say was left by jobs counted out
     * without an end (a reaped process), and must not pin the arm. */
    if (jobs_in_progress_locked(seg) <= 1)
        memset(seg->guard.open, 0, sizeof seg->guard.open);
    /* the pick starts a corrupt guard over (gy_guard_sane): say so once, where it happens */
    if (!gy_guard_sane(&seg->guard))
        gy_say("gpuyield: segment %s: its guarded state holds values out of range (written by another process?): "
               "started over, stop in force until arms are measured again",
               shm->name);
    job->guard_arm = (int)gy_guard_pick(&seg->guard, &job->guard_depth_us);
    job->guard_lp_work = lower.partition;
    job->guard_lower_launches = lower.launches;
    *change = gy_guard_cycle(&seg->guard, (enum gy_guard_arm)job->guard_arm, gy_now_ns(), lower.launches);
}

void gy_guarded_end_locked(gy_shm *shm, const gy_job *job, uint64_t now_ns, struct gy_guard_change *change)
{
    memset(change, 0, sizeof *change);
    if (job->guard_arm < 0 || job->guard_arm >= GY_GUARD_ARM_COUNT)
        return;
    struct gy_segment *seg = shm->seg;
    uint64_t work = gy_guarded_lp_work_locked(seg, job->priority);
    uint64_t duration = now_ns > job->entered_ns ? now_ns - job->entered_ns : 0;
    *change = gy_guard_record(&seg->guard, (enum gy_guard_arm)job->guard_arm, job->guard_depth_us, duration,
                              work > job->guard_lp_work ? work - job->guard_lp_work : 0);
}

void gy_guarded_tell(const gy_shm *shm, const struct gy_guard_change *change)
{
    if (!change->changed && !change->depth_changed && !change->trial_ended && !change->depth_trial_ended)
        return; /* every job's end comes here: no getenv (a scan of the environment) unless there is news */
    const char *verbose = getenv("GPUYIELD_VERBOSE");
    if (!verbose || strcmp(verbose, "1") != 0)
        return;
    const struct gy_guard *g = &shm->seg->guard;
    if (change->depth_changed)
        fprintf(stderr, "gpuyield: pid %d: %s: guarded queue depth %u -> %u us (0: the lower processes' own; %s)\n",
                (int)getpid(), shm->name, change->depth_from, change->depth_to,
                gy_guard_reason_text(change->depth_reason));
    if (change->depth_trial_ended)
        fprintf(stderr,
                "gpuyield: pid %d: %s: guarded trial of queue depth %u us ended after %u of its jobs: %s (p50 x%.3f, "
                "p99 x%.3f of stop; the depth in force stays %u us)\n",
                (int)getpid(), shm->name, change->depth_tried_us, change->depth_trial_jobs,
                change->depth_trial_reason == GY_GUARD_WHY_FALLBACK
                    ? "fallback: a block of its jobs clearly left the bound of stop"
                : change->depth_trial_reason == GY_GUARD_WHY_KEPT
                    ? "no-gain: its gaps gave the LP less than the gain promotion needs over the depth in force's gaps"
                    : "rejected: out of half the p50 bound of stop or the p99 bound, its test leaning over it, or "
                      "undecided at its cap",
                change->depth_ratio_p50, change->depth_ratio_p99, g->depth_in_force);
    if (change->trial_ended) {
        const struct gy_guard_trial_view *t = &change->trial_end;
        char figures[160];
        gy_guard_trial_figures(t, figures, sizeof figures);
        fprintf(stderr, "gpuyield: pid %d: %s: guarded trial of %s against %s ended after %u of its jobs: %s (%s; %s)\n",
                (int)getpid(), shm->name, gy_guard_arm_name(t->arm), gy_guard_arm_name(t->in_force), t->jobs,
                gy_guard_trial_outcome_name(t->outcome), gy_guard_trial_outcome_text(t->outcome), figures);
    }
    if (!change->changed)
        return;
    fprintf(stderr, "gpuyield: pid %d: %s: guarded arm %s -> %s (%s; p50 x%.3f, p99 x%.3f of stop)\n", (int)getpid(),
            shm->name, gy_guard_arm_name(change->from), gy_guard_arm_name(change->to),
            gy_guard_reason_text(change->reason), g->ratio_p50_ppm / 1e6, g->ratio_p99_ppm / 1e6);
}

int gy_guarded_configure(gy_shm *shm, double eps_p50, double eps_p99, double stop_share, uint64_t seed, gy_err *err)
{
    struct gy_guard probe;
    gy_guard_init(&probe);
    if (gy_guard_configure(&probe, eps_p50, eps_p99, stop_share, seed))
        return gy_fail(err, EINVAL,
                       "guarded settings out of range: eps p50 %g and eps p99 %g must be 0..%g, the stop share %g "
                       "0..1",
                       eps_p50, eps_p99, GY_GUARD_MAX_EPS, stop_share);
    if (gy_lock_and_recover(shm->seg))
        return gy_lock_fail(shm, "set the guarded policy's settings", err);
    gy_guard_configure(&shm->seg->guard, eps_p50, eps_p99, stop_share, seed);
    gy_unlock(shm->seg);
    return 0;
}

/* A change to a guarded segment's rule: refused (EINVAL, `why_not` says what there is not) under
 * another policy, else the segment locked (to `act`, for the error). 0 when locked. */
static int lock_guarded(gy_shm *shm, const char *why_not, const char *act, gy_err *err)
{
    enum gy_policy policy = gy_get_policy(shm);
    if (policy != GY_POLICY_GUARDED)
        return gy_fail(err, EINVAL, "%s runs policy %s, not guarded: %s", shm->name, gy_policy_name(policy), why_not);
    if (gy_lock_and_recover(shm->seg))
        return gy_lock_fail(shm, act, err);
    return 0;
}

int gy_guarded_set_depth(gy_shm *shm, bool on, gy_err *err)
{
    if (lock_guarded(shm, "it has no queue depths to learn (create it with --policy guarded)",
                     "set the guarded policy's queue depth", err))
        return -1;
    gy_guard_set_depth(&shm->seg->guard, on);
    gy_unlock(shm->seg);
    return 0;
}

int gy_guarded_force(gy_shm *shm, enum gy_guard_arm arm, gy_err *err)
{
    if ((unsigned)arm >= GY_GUARD_ARM_COUNT)
        return gy_fail(err, EINVAL, "guarded arm %d is out of range: 0..%d", (int)arm, GY_GUARD_ARM_COUNT - 1);
    if (lock_guarded(shm, "it has no arms to force (create it with --policy guarded)", "force a guarded arm", err))
        return -1;
    gy_guard_force(&shm->seg->guard, arm);
    gy_unlock(shm->seg);
    return 0;
}

int gy_guarded_reset(gy_shm *shm, gy_err *err)
{
    if (lock_guarded(shm, "there is nothing learned to reset", "reset the guarded policy", err))
        return -1;
    struct gy_guard_change change = gy_guard_reset(&shm->seg->guard);
    gy_unlock(shm->seg);
    gy_guarded_tell(shm, &change);
    return 0;
}

int gy_guarded_snapshot(gy_shm *shm, struct gy_guard *out, gy_err *err)
{
    if (gy_lock_and_recover(shm->seg))
        return gy_lock_fail(shm, "read the guarded policy's state", err);
    memcpy(out, &shm->seg->guard, sizeof *out);
    gy_unlock(shm->seg);
    return 0;
}
