/* The guarded policy's part of the shared segment (segment_layout.h places it after the slots).
 * It is a wire format like the rest: every field has its row in layout_stamp.h (suite 10 checks
 * it), so a change gives another stamp and older segments are refused.
 *
 * Everything except `current` is written under the segment's mutex, at job begin and end
 * (guarded_job.c), by the rule of guarded.c. `current` is the one word a lower process reads, on
 * its slow path only (the gate word said closed): the arm of the jobs now open. */
#ifndef GY_GUARDED_LAYOUT_H
#define GY_GUARDED_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

/* The arms a job may get, by the lower processes' SMs (never fewer than the arm before).
 * X(enum suffix, name, SMs the lower processes get (0: stop), disjoint). A disjoint arm gives the
 * lower processes the same K SMs as partition:K and confines the HP's own launches, during its
 * job, to the complement of that split (its blocks never land beside a lower block). The rule
 * never tries one (on the H100 none cost the HP less than its partition twin); they can be pinned
 * (expcontroller guard-force) to measure them on other devices and pairs. */
#define GY_GUARD_ARMS(X)                                                                           \
    X(STOP, "stop", 0, 0)                                                                          \
    X(P16, "partition:16", 16, 0)                                                                  \
    X(P32, "partition:32", 32, 0)                                                                  \
    X(P64, "partition:64", 64, 0)                                                                  \
    X(D64, "disjoint:64", 64, 1)                                                                   \
    X(P96, "partition:96", 96, 0)                                                                  \
    X(P120, "partition:120", 120, 0)                                                               \
    X(D120, "disjoint:120", 120, 1)

#define GY_GUARD_ARM_ENUM(suffix, name, sms, disjoint) GY_ARM_##suffix,
enum gy_guard_arm { GY_GUARD_ARMS(GY_GUARD_ARM_ENUM) GY_GUARD_ARM_COUNT };
#undef GY_GUARD_ARM_ENUM
#define GY_GUARD_NO_ARM 0xffu /* no trial running */
#define GY_GUARD_DEPTH_BLOCKS 0xfeu /* blocks_arm: the blocks are the depth trial's (no arm's) */

/* The queue depths the rule may give the lower processes between HP jobs (time:US bounds, in
 * microseconds; 0 is their own): what an HP job finds queued ahead of it when it begins. On the
 * H100 a ResNet-50 training LP under time:500 kept 0.85 of its alone throughput, 0.89 / 0.93 /
 * 0.94 under 1000 / 2000 / 4000, while a GPU-bound HP lost 4 % / 13 % a job to 1000 / 2000 and a
 * launch-bound one nothing (bench/results/2026-11-25-queue-depth). */
#define GY_GUARD_DEPTHS(X) X(1000) X(2000) X(4000)
#define GY_GUARD_DEPTH_ONE(us) +1
enum { GY_GUARD_DEPTH_COUNT = 0 GY_GUARD_DEPTHS(GY_GUARD_DEPTH_ONE) };
#undef GY_GUARD_DEPTH_ONE

#define GY_GUARD_BINS 512  /* histogram bins of HP job durations per arm: 0.45x to 72x the base (guard_bins.py says why) */
#define GY_GUARD_RECENT 16 /* the last job durations kept per arm, for the fast fallback */

/* Why the arm in force is what it is. X(enum suffix, code, text) */
#define GY_GUARD_REASONS(X)                                                                        \
    X(START, "start", "start: stop until an arm is measured within the bound of stop")             \
    X(PROMOTED, "promoted", "promoted: within the bound of stop, the LP launching most over whole cycles") \
    X(KEPT, "kept", "kept: a tried arm or depth gave the LP no more over whole cycles, or nothing in its jobs") \
    X(REJECTED, "rejected", "rejected: the tried arm missed the bound of stop (p50 or p99), or its test leaned over the bound (futile: ratios near 1 can say so on few jobs), in its trial or on its confirmation in force") \
    X(FALLBACK, "fallback", "fallback: the arm's recent jobs left the bound of stop")              \
    X(SHIFT, "shift", "shift: the HP's job time or job rate moved by a factor over 2; measured again from there") \
    X(RECHECK, "recheck", "re-check: windows reset after the periodic interval; kept while within the bound") \
    X(FORCED, "forced", "forced by gy_guard_force (tests, operators)")                              \
    X(RESET, "reset", "reset by an operator (expcontroller guard-reset): learning again from stop")

#define GY_GUARD_REASON_ENUM(suffix, code, text) GY_GUARD_WHY_##suffix,
enum gy_guard_reason { GY_GUARD_REASONS(GY_GUARD_REASON_ENUM) GY_GUARD_REASON_COUNT };
#undef GY_GUARD_REASON_ENUM

/* How a trial ended (guarded.c, end_trial), kept in the guard's trial log and told by
 * GPUYIELD_VERBOSE: what status needs to say why a costless-looking arm was not promoted.
 * X(enum suffix, code, text) */
#define GY_GUARD_TRIAL_ENDS(X)                                                                     \
    X(PROMOTED, "promoted", "within the bound, its cycles gave the LP the gain promotion needs: in force") \
    X(WITHIN, "within", "within the bound, but its cycles gave the LP under the gain promotion needs: backs off to the next re-check") \
    X(NO_GAIN, "no-gain", "its cycles gave the LP no more than the arm in force's: ended at a look, the next arm up tried") \
    X(NOTHING, "nothing", "its jobs gave the lower processes nothing (graphs waiting, or idle): every arm backs off") \
    X(OVER, "over", "shown over the bound of stop (p50 or p99)")                                  \
    X(FUTILE, "futile", "its test leaned over the bound (z < 0) after enough jobs to tell")        \
    X(CAP, "cap", "not shown within the bound by its trial's cap of jobs")                         \
    X(FALLBACK, "fallback", "its recent jobs left the bound of stop (the fast fallback)")          \
    X(GROSS, "gross", "a job of its retrial far over stop's slowest (the probe of an arm dropped before)") \
    X(ENDED, "ended", "its windows started again (the HP's speed or rate shifted, a reset, an arm forced, the arm in force dropped)")

#define GY_GUARD_TRIAL_END_ENUM(suffix, code, text) GY_GUARD_TRIAL_##suffix,
enum gy_guard_trial_outcome { GY_GUARD_TRIAL_ENDS(GY_GUARD_TRIAL_END_ENUM) GY_GUARD_TRIAL_OUTCOME_COUNT };
#undef GY_GUARD_TRIAL_END_ENUM

/* The last trial's end as the segment keeps it, packed (the segment was at its 64 KiB limit then: this and
 * trials_ended took its last 24 bytes): the arm, how it ended, the arm in force it was tried
 * against, what the rule had measured of it then, when. guarded.h's gy_guard_last_trial reads it. */
struct gy_guard_trial_end {
    uint8_t arm;           /* enum gy_guard_arm tried */
    uint8_t outcome;       /* enum gy_guard_trial_outcome */
    uint8_t in_force;      /* enum gy_guard_arm it was tried against */
    uint8_t unused;
    int16_t z_centi;       /* the last full test's z x 100, clamped to +-327.67 */
    uint16_t jobs;         /* in its window (saturating) */
    uint16_t ratio_p50_e4; /* the last decision's ratios to stop x 10 000 (saturating: 6.5535) */
    uint16_t ratio_p99_e4;
    uint16_t lp_cycle_e4;  /* its cycles' LP launches per second over the arm in force's x 10 000 (0: unmeasured) */
    uint32_t at_job;       /* the guard's job count when it ended (its low 32 bits) */
};

/* One arm's window: its HP job durations as a histogram over the guard's base (bins 1 % wide,
 * guard_bins.h; counts halved when the window reaches GY_GUARD_WINDOW_MAX, so it ages), its last
 * GY_GUARD_RECENT durations, and the lower processes' progress during the window's jobs. */
struct gy_guard_window {
    uint16_t bins[GY_GUARD_BINS];
    uint32_t recent[GY_GUARD_RECENT]; /* microseconds, a ring */
    uint32_t head;    /* next recent index written */
    uint32_t recent_n; /* durations in recent (at most GY_GUARD_RECENT) */
    uint32_t n;       /* jobs in the histogram (the sum of bins) */
    uint64_t jobs;    /* jobs recorded ever (never reset) */
    uint64_t lp_work; /* lower partition launches + copies during the window's jobs */
    uint64_t lp_ns;   /* the window's jobs' total duration, for progress per second */
    uint64_t block_start; /* the guard's job count when this arm's current block of RECENT began */
};
struct gy_guard {
    _Atomic uint32_t current;  /* enum gy_guard_arm of the jobs now open (stop when any is stop) */
    uint32_t in_force;         /* enum gy_guard_arm: what a job gets when it is not a stop sample */
    uint32_t trial;            /* enum gy_guard_arm being tried, or GY_GUARD_NO_ARM */
    uint32_t reason;           /* enum gy_guard_reason of in_force */
    uint32_t confirmed;        /* 1 once in_force passed the full test on its current window, or its
                                  trial and then its confirmation in force (guarded.c) */
    uint32_t pinned;           /* 1: in_force was forced (gy_guard_force) and stays until a reset */
    /* Settings (ppm), set by the creator: epsilons of the bound, the share of stop samples. */
    uint32_t eps_p50_ppm;
    uint32_t eps_p99_ppm;
    uint32_t stop_share_ppm;
    uint32_t open[GY_GUARD_ARM_COUNT]; /* jobs open per arm */
    uint32_t ratio_p50_ppm; /* the test behind the last decision: arm / stop */
    uint32_t ratio_p99_ppm;
    uint32_t changes;          /* changes of in_force (or of the depth in force) so far */
    int32_t z_milli;           /* the last full test's statistic x 1000 (>= the look's z: within) */
    uint32_t base_us;          /* the histograms' centre: stop's median when they were started */
    uint64_t rng;              /* xorshift64* state: deterministic with a seed */
    uint64_t jobs;             /* jobs begun under guarded */
    uint64_t last_recheck;     /* jobs at the last periodic re-check */
    uint64_t backoff_until[GY_GUARD_ARM_COUNT]; /* an arm is not tried again before this many jobs */
    uint32_t strikes[GY_GUARD_ARM_COUNT];       /* times in a row the arm was dropped: backoff doubles */
    struct gy_guard_window arms[GY_GUARD_ARM_COUNT];
    /* stop's jobs since the window under test began (a trial, or the arm in force after a
     * re-check): what the full test compares it with, so that both windows cover the same time
     * and a change of the HP's own speed meanwhile (a host-bound HP's CPU) falls on both. */
    struct gy_guard_window paired_stop;
    /* the guard's job count at each of stop's recent durations, its low 32 bits (guarded.c reads
     * it back by its distance from `jobs`: a recent job is thousands of jobs old, not 2^32) */
    uint32_t stop_recent_job[GY_GUARD_RECENT];
    /* The queue depth (guarded.c): a second dimension beside the arm. A stop sample runs after a
     * gap at the lower processes' own bound (the baseline is corun as it is); every other job after
     * a gap at depth_in_force, or at depth_trial while one is tried (with the arm in force). */
    _Atomic uint32_t queue_us; /* what lower time:US bounds are raised to now (0: their own) */
    uint32_t depth_on;         /* setting: 1 lets the rule try depths (off by default) */
    uint32_t next_stop;        /* 1: the next job is a stop sample (drawn at the last begin, so
                                  that the gap before it runs at its depth) */
    uint32_t depth_in_force;   /* microseconds, 0: the lower processes' own */
    uint32_t depth_trial;      /* microseconds being tried, 0: none */
    uint32_t depth_reason;     /* enum gy_guard_reason of depth_in_force */
    uint32_t depth_confirmed;  /* 1 once the depth in force passed the full test on its window */
    uint64_t depth_backoff_until[GY_GUARD_DEPTH_COUNT];
    uint32_t depth_strikes[GY_GUARD_DEPTH_COUNT];
    /* jobs under depth_trial (with the arm in force), or, with stop in force, under depth_in_force */
    struct gy_guard_window depth_window;
    /* Cycles (gy_guard_cycle): an HP job's begin to the next one's, what an arm leaves the LP
     * after the job too (what the rule promotes by, guarded.c). The open one: the arm of the last HP job
     * begun (GY_GUARD_NO_ARM: none), when, and the lower processes' launches then; per arm the
     * launches and length (microseconds) of its counted cycles, both halved once the length
     * passes GY_GUARD_CYCLE_HORIZON_US (they age by time, apart from the job windows; 32 bits
     * each: the segment was at its 64 KiB limit then). */
    uint32_t cycle_arm;
    /* The HP's job rate, for a load shift (guarded.c, note_rate): a running mean of the counted
     * cycles' lengths in microseconds, how many were counted since it was last taken as the
     * reference (saturating), and that reference (0: not taken yet). In what was padding. */
    uint32_t cycle_mean_us;
    uint64_t cycle_start_ns;
    uint64_t cycle_start_work;
    uint32_t cycle_work[GY_GUARD_ARM_COUNT];
    uint32_t cycle_us[GY_GUARD_ARM_COUNT];
    uint32_t cycles_counted;
    uint32_t rate_ref_us;
    /* The depth's cycles (guarded.c, gy_guard_cycle): over the cycles whose job ran stop, the
     * lower processes' launches and the cycles' length (microseconds) by the depth the cycle's gap
     * ran at (index 0 the own bound, i + 1 the i-th depth of GY_GUARD_DEPTHS), aged as the arms'
     * are; gap_us: the depth of the open cycle's gap (published at its begin, for the gap before
     * the next job). What a depth is promoted by: a job's depth is that of the gap before it, and
     * what it gives the LP is in that gap, not in the job. */
    uint32_t gap_us;
    uint32_t depth_cycle_work[GY_GUARD_DEPTH_COUNT + 1];
    uint32_t depth_cycle_us[GY_GUARD_DEPTH_COUNT + 1];
    /* The depth trial's gain test (guarded.c, depth_gain_z): over its stretch's stop jobs' cycles
     * whose gap ran at the lower processes' own bound ([0]) or at the depth tried ([1]), their
     * launches and length (microseconds), and the squares of each cycle's launches off the rate of
     * the cycles before it (its spread; a float: the segment was at its 64 KiB limit, these took the
     * last 24 bytes). They start with the trial. [1] is not the tried depth's depth_cycle sums
     * read again: those halve past GY_GUARD_CYCLE_HORIZON_US, which a spread summed beside them
     * would not follow, and [0] is this stretch's own bound, not its long-run sums. */
    uint32_t gain_work[2];
    uint32_t gain_us[2];
    float gain_spread[2];
    /* The window under test (a trial's, else the arm in force's) against stop block by block
     * (gy_guard_block_u, guarded.c): sums over its blocks of GY_GUARD_RECENT jobs, each against
     * stop's jobs of the same stretch of time; they start again with stop's paired window, and
     * when another arm is under test. blocks_arm: whose they are (GY_GUARD_NO_ARM: none yet;
     * GY_GUARD_DEPTH_BLOCKS: the depth trial's window). */
    uint32_t blocks_arm;
    int32_t blocks_u2;
    uint32_t blocks_var12;
    /* The stop samples' block of 4 jobs (guarded.c, next_is_stop): its stop places, the next
     * place, the share it was drawn at. */
    uint32_t stop_block;
    /* Trials ended so far, and the last one's end (every one is told by GPUYIELD_VERBOSE). */
    uint32_t trials_ended;
    struct gy_guard_trial_end last_trial;
};

#endif
