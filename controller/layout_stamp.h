/* The segment's layout stamp, computed from the layout itself (as LMDB does): a hash of the offset
 * and size of every field of the shared structures, an integer constant expression. segment.c
 * stores it in the header at creation and every opener compares it with its own, so a field
 * added, moved or resized gives another stamp, and a process of another build refuses the
 * segment instead of misreading it; nobody has to remember to bump a number.
 *
 * Each structure lists its fields, in order, X(struct, field); the counters come from
 * GY_PROC_COUNTERS. C cannot enumerate a structure's members, so suite 10 checks that these rows
 * name every member of the structures in segment_layout.h, in order (tests/lib/layout_rows.py):
 * a field added without its row fails a test. */
#ifndef GY_LAYOUT_STAMP_H
#define GY_LAYOUT_STAMP_H

#include <stddef.h>
#include <stdint.h>

#include "segment_layout.h"

#define GY_SEGMENT_FIELDS(X)                                                                           \
    X(gy_segment, magic) X(gy_segment, layout_stamp) X(gy_segment, segment_size) X(gy_segment, owner_uid) \
    X(gy_segment, creator_pid) X(gy_segment, creator_start_time) X(gy_segment, drain_timeout_ns)          \
    X(gy_segment, policy) X(gy_segment, mps) X(gy_segment, name) X(gy_segment, active_levels)             \
    X(gy_segment, mutex) X(gy_segment, wake_seq) X(gy_segment, wake_waiters) X(gy_segment, jobs) X(gy_segment, job_epoch)             \
    X(gy_segment, total_drain_timeouts) X(gy_segment, reaped) X(gy_segment, next_reap_ns)                 \
    X(gy_segment, lock_timeouts) X(gy_segment, ends_owed) X(gy_segment, devices) X(gy_segment, procs) X(gy_segment, guard)
#define GY_DEVICE_SLOT_FIELDS(X)                                                                       \
    X(gy_device_slot, active_levels) X(gy_device_slot, claimed) X(gy_device_slot, uuid) X(gy_device_slot, jobs)
#define GY_PROC_SLOT_FIELDS(X)                                                                         \
    X(gy_proc_slot, state) X(gy_proc_slot, pid) X(gy_proc_slot, start_time) X(gy_proc_slot, priority)     \
    X(gy_proc_slot, held_jobs) X(gy_proc_slot, launched_devices) X(gy_proc_slot, inflight)                \
    X(gy_proc_slot, drained_epoch) X(gy_proc_slot, partition_state) X(gy_proc_slot, exec_id)              \
    X(gy_proc_slot, counters) X(gy_proc_slot, held_device_jobs) X(gy_proc_slot, ends_owed)

#define GY_GUARD_FIELDS(X)                                                                             \
    X(gy_guard, current) X(gy_guard, in_force) X(gy_guard, trial) X(gy_guard, reason) X(gy_guard, confirmed) X(gy_guard, pinned) \
    X(gy_guard, eps_p50_ppm) X(gy_guard, eps_p99_ppm) X(gy_guard, stop_share_ppm) X(gy_guard, open)          \
    X(gy_guard, ratio_p50_ppm) X(gy_guard, ratio_p99_ppm) X(gy_guard, changes) X(gy_guard, z_milli) X(gy_guard, base_us) X(gy_guard, rng)              \
    X(gy_guard, jobs) X(gy_guard, last_recheck) X(gy_guard, backoff_until) X(gy_guard, strikes)           \
    X(gy_guard, arms) X(gy_guard, paired_stop) X(gy_guard, stop_recent_job) X(gy_guard, queue_us)        \
    X(gy_guard, depth_on) X(gy_guard, next_stop) X(gy_guard, depth_in_force) X(gy_guard, depth_trial)     \
    X(gy_guard, depth_reason) X(gy_guard, depth_confirmed) X(gy_guard, depth_backoff_until)               \
    X(gy_guard, depth_strikes) X(gy_guard, depth_window) X(gy_guard, cycle_arm) X(gy_guard, cycle_mean_us)   \
    X(gy_guard, cycle_start_ns) X(gy_guard, cycle_start_work) X(gy_guard, cycle_work) X(gy_guard, cycle_us)   \
    X(gy_guard, cycles_counted) X(gy_guard, rate_ref_us) X(gy_guard, gap_us) X(gy_guard, depth_cycle_work) X(gy_guard, depth_cycle_us) X(gy_guard, gain_work) X(gy_guard, gain_us) X(gy_guard, gain_spread) X(gy_guard, blocks_arm) X(gy_guard, blocks_u2) X(gy_guard, blocks_var12) X(gy_guard, stop_block) \
    X(gy_guard, trials_ended) X(gy_guard, last_trial)
#define GY_GUARD_WINDOW_FIELDS(X)                                                                      \
    X(gy_guard_window, bins) X(gy_guard_window, recent) X(gy_guard_window, head) X(gy_guard_window, recent_n) X(gy_guard_window, n) X(gy_guard_window, jobs)         \
    X(gy_guard_window, lp_work) X(gy_guard_window, lp_ns) X(gy_guard_window, block_start)

#define GY_GUARD_TRIAL_END_FIELDS(X)                                                                   \
    X(gy_guard_trial_end, arm) X(gy_guard_trial_end, outcome) X(gy_guard_trial_end, in_force)             \
    X(gy_guard_trial_end, unused) X(gy_guard_trial_end, z_centi) X(gy_guard_trial_end, jobs)              \
    X(gy_guard_trial_end, ratio_p50_e4) X(gy_guard_trial_end, ratio_p99_e4) X(gy_guard_trial_end, lp_cycle_e4) \
    X(gy_guard_trial_end, at_job)
#define GY_FIELD_SIZE(s, f) sizeof(((struct s *)0)->f)

/* Each row's ordinal, so that two fields trading places change the stamp too. */
#define GY_LAYOUT_ROW(s, f) GY_LAYOUT_ROW_##s##_##f,
#define GY_LAYOUT_COUNTER_ROW(name, what) GY_LAYOUT_ROW_counter_##name,
enum gy_layout_row {
    GY_SEGMENT_FIELDS(GY_LAYOUT_ROW) GY_DEVICE_SLOT_FIELDS(GY_LAYOUT_ROW) GY_PROC_SLOT_FIELDS(GY_LAYOUT_ROW)
        GY_GUARD_FIELDS(GY_LAYOUT_ROW) GY_GUARD_WINDOW_FIELDS(GY_LAYOUT_ROW) GY_GUARD_TRIAL_END_FIELDS(GY_LAYOUT_ROW)
            GY_PROC_COUNTERS(GY_LAYOUT_COUNTER_ROW)
            GY_LAYOUT_ROWS
};
#undef GY_LAYOUT_ROW
#undef GY_LAYOUT_COUNTER_ROW

/* FNV-1a over whole values: one row is (ordinal, offset, size); the rows are summed. */
#define GY_STAMP_MIX(h, v) ((((uint64_t)(h)) ^ (uint64_t)(v)) * 0x100000001b3ull)
#define GY_STAMP_TERM(row, offset, size)                                                               \
    GY_STAMP_MIX(GY_STAMP_MIX(GY_STAMP_MIX(0xcbf29ce484222325ull, row), offset), size)
#define GY_STAMP_FIELD(s, f) +GY_STAMP_TERM(GY_LAYOUT_ROW_##s##_##f, offsetof(struct s, f), GY_FIELD_SIZE(s, f))
#define GY_STAMP_COUNTER(name, what)                                                                   \
    +GY_STAMP_TERM(GY_LAYOUT_ROW_counter_##name, offsetof(struct gy_proc_counters, name),               \
                   GY_FIELD_SIZE(gy_proc_counters, name))
#define GY_LAYOUT_HASH                                                                                 \
    (GY_STAMP_TERM(GY_LAYOUT_ROWS, sizeof(struct gy_segment), GY_MAGIC) GY_SEGMENT_FIELDS(GY_STAMP_FIELD) \
         GY_DEVICE_SLOT_FIELDS(GY_STAMP_FIELD) GY_PROC_SLOT_FIELDS(GY_STAMP_FIELD) GY_GUARD_FIELDS(GY_STAMP_FIELD)   \
             GY_GUARD_WINDOW_FIELDS(GY_STAMP_FIELD) GY_GUARD_TRIAL_END_FIELDS(GY_STAMP_FIELD)                \
                 GY_PROC_COUNTERS(GY_STAMP_COUNTER))
/* Stored in the header's layout_stamp (32 bits: the two halves folded). */
#define GY_LAYOUT_STAMP ((uint32_t)(GY_LAYOUT_HASH ^ (GY_LAYOUT_HASH >> 32)))

#endif
