/* cuda_worker's scenarios for the partition policy (partition_scenarios.c). */
#ifndef GY_TEST_PARTITION_SCENARIOS_H
#define GY_TEST_PARTITION_SCENARIOS_H

/* Runs scenario `what` (partition, partition_threads, partition_fork, partition_fallback,
 * partition_bound); its failed checks are counted in `failures` (worker_check.h), which it returns. */
int partition_scenario(const char *what, int argc, char **argv);

#endif
