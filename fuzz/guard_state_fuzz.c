/* Fuzz target: the guarded policy's part of a segment (struct gy_guard) made of arbitrary bytes,
 * as a foreign process or a bad write could leave it; segment_open's inputs never reach it (it
 * lies past their maximum length). Two readers of it:
 *   - the rule (controller/guarded.c) on a copy: jobs picked, their cycles, recorded with durations
 *     and lower progress taken from the input, jobs forgotten, the statistics status shows, the
 *     trials' outlooks (an arm's, a depth's), an operator's force and reset, and more jobs after them;
 *   - the protocol: a guarded segment under MPS carrying those bytes, this process registered as
 *     its HP, a job entered and exited (gy_guarded_begin_locked / end_locked), the status read and
 *     written as JSON.
 * Input: the guard's bytes from its start (shorter: the rest as gy_guard_init leaves it), then up
 * to 64 bytes of job durations and progress (reused cyclically). Nothing is left behind: the
 * segment is removed after each input. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "guarded.h"
#include "segment_layout.h"
#include "status_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_everything(const struct gy_guard *g)
{
    struct gy_guard_arm_stats st;
    struct gy_guard_outlook out;
    for (int a = 0; a < GY_GUARD_ARM_COUNT; a++)
        gy_guard_arm_stats(g, (enum gy_guard_arm)a, &st);
    gy_guard_depth_stats(g, &st);
    gy_guard_trial_outlook(g, &out);
    gy_guard_depth_outlook(g, &out);
    (void)gy_guard_on_confirmation(g);
    (void)gy_guard_arm_name((enum gy_guard_arm)g->in_force);
    (void)gy_guard_reason_text((enum gy_guard_reason)g->reason);
    (void)gy_guard_reason_name((enum gy_guard_reason)g->depth_reason);
    struct gy_guard_trial_view last;
    if (gy_guard_last_trial(g, &last)) { /* the packed last trial, whatever its bytes */
        char figures[160];
        gy_guard_trial_figures(&last, figures, sizeof figures);
        (void)gy_guard_trial_outcome_text(last.outcome);
    }
}

/* Jobs through the rule: durations of 1 us to ~16 s and lower progress from `tail`. */
static void run_jobs(struct gy_guard *g, const uint8_t *tail, size_t n, int jobs, uint64_t *now_ns)
{
    uint64_t lp = 0;
    for (int j = 0; j < jobs; j++) {
        uint8_t b = n ? tail[j % n] : (uint8_t)j;
        uint32_t depth;
        enum gy_guard_arm arm = gy_guard_pick(g, &depth);
        gy_guard_cycle(g, arm, *now_ns, lp);
        uint64_t ns = (uint64_t)1000 << (b % 25);
        lp += b;
        *now_ns += ns + 1000000;
        if (b == 0xff)
            gy_guard_forget(g, arm);
        else
            (void)gy_guard_record(g, arm, depth, ns, b);
        if (j % 8 == 7)
            read_everything(g);
    }
}

static void through_the_rule(const struct gy_guard *from, const uint8_t *tail, size_t n)
{
    static struct gy_guard g;
    uint64_t now_ns = 1000000000ull;
    g = *from;
    read_everything(&g);
    run_jobs(&g, tail, n, 96, &now_ns);
    gy_guard_force(&g, (enum gy_guard_arm)(n ? tail[0] % (GY_GUARD_ARM_COUNT + 1) : 1));
    run_jobs(&g, tail, n, 32, &now_ns);
    gy_guard_set_depth(&g, n && tail[n - 1] & 1);
    (void)gy_guard_reset(&g);
    run_jobs(&g, tail, n, 64, &now_ns);
}

static void through_the_protocol(const struct gy_guard *from)
{
    char name[GY_NAME_MAX];
    snprintf(name, sizeof name, "test-fuzz-guard-%d", (int)getpid()); /* /gpuyield-<uid>-test-fuzz-guard-<pid> */
    gy_shm shm;
    gy_err err;
    gy_remove(name, &err);
    if (gy_create(name, 1000000, &shm, &err))
        return;
    gy_set_policy(&shm, GY_POLICY_GUARDED, true);
    memcpy(&shm.seg->guard, from, sizeof *from);
    if (gy_register(&shm, 1, &err) == 0) {
        gy_job job;
        if (gy_job_enter(&shm, 1, 1000000, &job, &err) == 0) {
            gy_job_wait_drained(&shm, &job, 1000000);
            gy_job_exit(&shm, &job, &err);
        }
    }
    static struct gy_status st;
    static char json[65536];
    if (gy_status_read(&shm, &st, &err) == 0)
        gy_status_json(&st, json, sizeof json);
    gy_close(&shm);
    gy_remove(name, &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gy_guard g;
    gy_guard_init(&g);
    size_t k = size < sizeof g ? size : sizeof g;
    memcpy(&g, data, k);
    const uint8_t *tail = data + k;
    size_t n = size - k < 64 ? size - k : 64;
    through_the_rule(&g, tail, n);
    through_the_protocol(&g);
    return 0;
}
