/* Micro-benchmark of the controller's hot paths, on the CPU:
 *  - the launch check with nothing in progress (what every kernel launch pays);
 *  - a begin/end pair with no lower process in flight (what each high-priority job pays), back to
 *    back, and after 10 ms asleep on a corun segment under MPS (as a marked HP between requests:
 *    its core idle, its caches cold; 300 pairs, p50 and p90);
 *  - the guarded rule's pick and record of one job (what guarded adds to each HP job, under the
 *    mutex), over 200 000 jobs of 4 ms +-10 % with a trial of every arm on the way;
 *  - a begin/end pair on one segment under MPS as corun and as guarded with stop pinned (what a
 *    guarded HP job pays where corun's would not: the rule's pick and record and the lower
 *    counters' scan under the mutex), alternated rep by rep (ABAB), back to back and after 10 ms
 *    asleep.
 * Prints one JSON object; medians of several repetitions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuyield.h"
#include "guarded.h"

#define REPS 9

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    /* It takes no arguments: --help (or anything else) must not start a 10 s benchmark. */
    if (argc > 1) {
        bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");
        if (!strcmp(argv[1], "--version")) {
            printf("gate-bench (gpuyield) %s\n", gy_version());
            return 0;
        }
        fprintf(help ? stdout : stderr, "%susage: gate-bench   (no arguments; prints one JSON object)\n",
                help ? "" : "gate-bench: it takes no arguments\n");
        return help ? 0 : 2;
    }
    char tag[64];
    snprintf(tag, sizeof tag, "bench-gate-%d", getpid());
    gy_shm shm, lower;
    gy_err err;
    if (gy_create(tag, 0, &shm, &err) || gy_register(&shm, 1, &err) || gy_open(tag, &lower, &err) ||
        gy_register(&lower, 0, &err)) {
        fprintf(stderr, "gate-bench: %s\n", err.msg);
        gy_remove(tag, NULL);
        return 1;
    }
    const long checks = 20000000, pairs = 20000;
    double check_ns[REPS], pair_ns[REPS];
    volatile long sink = 0;
    for (int r = 0; r < REPS; r++) {
        uint64_t t0 = gy_now_ns();
        long allowed = 0;
        for (long i = 0; i < checks; i++)
            allowed += gy_launch_allowed(&lower, 0);
        sink += allowed;
        check_ns[r] = (double)(gy_now_ns() - t0) / (double)checks;
        t0 = gy_now_ns();
        for (long i = 0; i < pairs; i++) {
            gy_job job;
            gy_begin(&shm, 1, &job, &err);
            gy_job_exit(&shm, &job, &err);
        }
        pair_ns[r] = (double)(gy_now_ns() - t0) / (double)pairs;
    }
    /* After 10 ms asleep, as an HP between requests, on corun under MPS (no drain wait). */
    enum { COLD_PAIRS = 300 };
    static double cold_us[COLD_PAIRS];
    gy_set_policy(&shm, GY_POLICY_CORUN, true);
    for (int i = 0; i < COLD_PAIRS; i++) {
        usleep(10000);
        uint64_t t0 = gy_now_ns();
        gy_job job;
        gy_begin(&shm, 1, &job, &err);
        gy_job_exit(&shm, &job, &err);
        cold_us[i] = (double)(gy_now_ns() - t0) / 1e3;
    }
    qsort(cold_us, COLD_PAIRS, sizeof *cold_us, cmp_double);
    /* corun and guarded on one segment, ABAB */
    static const enum gy_policy side_by_side[2] = {GY_POLICY_CORUN, GY_POLICY_GUARDED};
    gy_set_policy(&shm, GY_POLICY_GUARDED, true);
    if (gy_guarded_force(&shm, GY_ARM_STOP, &err)) { /* stop pinned (arm:stop): no trial of a partition */
        fprintf(stderr, "gate-bench: %s\n", err.msg);
        gy_close(&lower);
        gy_close(&shm);
        gy_remove(tag, NULL);
        return 1;
    }
    double mps_pair_ns[2][REPS];
    static double mps_cold_us[2][COLD_PAIRS], mps_cold_begin_us[2][COLD_PAIRS];
    for (int r = 0; r < REPS; r++)
        for (int p = 0; p < 2; p++) {
            gy_set_policy(&shm, side_by_side[p], true);
            uint64_t t0 = gy_now_ns();
            for (long i = 0; i < pairs; i++) {
                gy_job job;
                gy_begin(&shm, 1, &job, &err);
                gy_job_exit(&shm, &job, &err);
            }
            mps_pair_ns[p][r] = (double)(gy_now_ns() - t0) / (double)pairs;
        }
    for (int i = 0; i < COLD_PAIRS; i++)
        for (int p = 0; p < 2; p++) {
            gy_set_policy(&shm, side_by_side[p], true);
            usleep(10000);
            uint64_t t0 = gy_now_ns();
            gy_job job;
            gy_begin(&shm, 1, &job, &err);
            uint64_t t1 = gy_now_ns(); /* the begin: ahead of the job's first launch */
            gy_job_exit(&shm, &job, &err);
            mps_cold_us[p][i] = (double)(gy_now_ns() - t0) / 1e3;
            mps_cold_begin_us[p][i] = (double)(t1 - t0) / 1e3;
        }
    for (int p = 0; p < 2; p++) {
        qsort(mps_cold_us[p], COLD_PAIRS, sizeof *mps_cold_us[p], cmp_double);
        qsort(mps_cold_begin_us[p], COLD_PAIRS, sizeof *mps_cold_begin_us[p], cmp_double);
    }
    /* The guarded rule alone (no segment): durations 4 ms x (0.9 .. 1.1), a costless pair, so
     * that trials, looks, promotions and the fast fallback's blocks all happen in the loop. */
    const long guarded_jobs = 200000;
    double guard_ns[REPS];
    static struct gy_guard guard;
    uint64_t noise = 0x9e3779b97f4a7c15ull;
    for (int r = 0; r < REPS; r++) {
        gy_guard_init(&guard);
        /* its clock and the LP's launches, for the cycles the rule promotes by: 240 launches a ms
         * during a partition arm's jobs, none under stop, 340 a ms in the gaps (a quarter load) */
        uint64_t clock_ns = 1000000000ull, lp_launches = 0;
        uint64_t t0 = gy_now_ns();
        for (long i = 0; i < guarded_jobs; i++) {
            noise ^= noise >> 12, noise ^= noise << 25, noise ^= noise >> 27;
            uint64_t ns = 3600000 + (noise * 0x2545f4914f6cdd1dull >> 40) % 800000;
            uint32_t depth;
            enum gy_guard_arm arm = gy_guard_pick(&guard, &depth);
            gy_guard_cycle(&guard, arm, clock_ns, lp_launches);
            uint64_t during = arm == GY_ARM_STOP ? 0 : ns * 240 / 1000000;
            clock_ns += 4 * ns;
            lp_launches += during + 3 * ns * 340 / 1000000;
            gy_guard_record(&guard, arm, depth, ns, during);
        }
        guard_ns[r] = (double)(gy_now_ns() - t0) / (double)guarded_jobs;
    }
    if (sink != (long)REPS * checks) {
        fprintf(stderr, "gate-bench: a check said 'blocked' with nothing in progress\n");
        return 1;
    }
    printf("{\"launch_check_ns\": %.2f, \"begin_end_pair_ns\": %.0f, \"begin_end_pair_after_sleep_us\": "
           "{\"p50\": %.2f, \"p90\": %.2f, \"pairs\": %d}, \"guarded_pick_record_ns\": %.0f, "
           "\"guarded_in_force\": \"%s\", \"checks_per_rep\": %ld, \"pairs_per_rep\": %ld, \"guarded_jobs_per_rep\": %ld, "
           "\"mps_pair_ns\": {\"corun\": %.0f, \"guarded_stop\": %.0f}, \"mps_pair_after_sleep_us\": "
           "{\"corun\": {\"p50\": %.2f, \"p90\": %.2f}, \"guarded_stop\": {\"p50\": %.2f, \"p90\": %.2f}}, "
           "\"mps_begin_after_sleep_us\": {\"corun\": {\"p50\": %.2f}, \"guarded_stop\": {\"p50\": %.2f}}, "
           "\"reps\": %d}\n",
           median(check_ns, REPS), median(pair_ns, REPS), cold_us[COLD_PAIRS / 2], cold_us[COLD_PAIRS * 9 / 10],
           (int)COLD_PAIRS, median(guard_ns, REPS),
           gy_guard_arm_name((enum gy_guard_arm)guard.in_force), checks, pairs, guarded_jobs,
           median(mps_pair_ns[0], REPS), median(mps_pair_ns[1], REPS), mps_cold_us[0][COLD_PAIRS / 2],
           mps_cold_us[0][COLD_PAIRS * 9 / 10], mps_cold_us[1][COLD_PAIRS / 2], mps_cold_us[1][COLD_PAIRS * 9 / 10],
           mps_cold_begin_us[0][COLD_PAIRS / 2], mps_cold_begin_us[1][COLD_PAIRS / 2], REPS);
    gy_close(&lower);
    gy_close(&shm);
    gy_remove(tag, NULL);
    return 0;
}
