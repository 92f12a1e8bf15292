/* Internal to the controller: slot-table helpers used under the mutex. */
#ifndef GY_REGISTRY_H
#define GY_REGISTRY_H

#include "gpuyield.h"

/* Under the mutex: recompute the active-levels word from the per-level job counts. */
void gy_publish_levels_locked(struct gy_segment *seg);
/* Under the mutex: count out dead processes (returns how many; the caller wakes), and correct job
 * counts that no live process holds (waking by itself). */
int gy_reap_locked(struct gy_segment *seg);
/* Jobs one process may hold at one level (nested); more is refused, and a slot that claims more
 * is corrupt. */
#define GY_MAX_HELD_JOBS 1024
/* A slot whose fields are in range; anything else is treated as corrupt and skipped. */
bool gy_slot_sane(const struct gy_proc_slot *slot);
/* Lock, and if the last owner died inside, reap before going on. 0 when locked, -1 when not
 * (gy_lock's bound passed or the mutex is corrupted): then fill an error with gy_lock_fail. */
int gy_lock_and_recover(struct gy_segment *seg);
/* Without the mutex: record an end of a job of ours (device -1: every device) for the next
 * holder to apply. false only when the slot's table has no room (GY_OWED_ENDS kinds owed). */
bool gy_owe_end(struct gy_segment *seg, struct gy_proc_slot *slot, int device, int level);
/* Under the mutex: apply every slot's owed ends to the job counts, publish and wake if any did. */
bool gy_apply_owed_ends_locked(struct gy_segment *seg);
/* Without the mutex: add a slot's owed ends per level (and per device, when not NULL). */
void gy_owed_ends_of(const struct gy_proc_slot *slot, uint32_t owed[GY_LEVELS],
                     uint32_t owed_on_device[GY_MAX_DEVICES][GY_LEVELS]);
/* Fill err for a lock that failed while doing `doing`, naming the holder; returns -1. */
int gy_lock_fail(const gy_shm *shm, const char *doing, gy_err *err);
/* "pid P (thread T, registered at priority p, STOPPED)": who holds the mutex now. */
void gy_describe_holder(const struct gy_segment *seg, char *buf, size_t len);
/* How many jobs at `level` or above this process (every slot of its pid: the hook and the Python
 * extension register apart) holds that gate `device`: begun on it, or on every device. -1 when the
 * mutex cannot be had within its bound. The hook's auto jobs (GPUYIELD_JOBS=auto) ask it whether a
 * marked job already covers a launch. */
int gy_own_jobs_covering(gy_shm *shm, int device, int level);

#endif
