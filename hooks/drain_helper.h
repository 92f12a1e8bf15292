/* The drain helper: a thread of the gated process that answers a higher job's drain request
 * even while the process is busy on the CPU and launching nothing. */
#ifndef GY_DRAIN_HELPER_H
#define GY_DRAIN_HELPER_H

/* Start the helper of this process (at registration; again in a child after fork). Exits the
 * process (status 2, one line) if the thread cannot be created. */
void gy_drain_helper_start(void);

#endif
