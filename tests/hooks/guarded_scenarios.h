/* cuda_worker's scenario for the guarded policy (guarded_scenarios.c). */
#ifndef GY_TEST_GUARDED_SCENARIOS_H
#define GY_TEST_GUARDED_SCENARIOS_H

/* Runs scenario `what` (guarded); its failed checks are counted in `failures` (worker_check.h),
 * which it returns. */
int guarded_scenario(const char *what, int argc, char **argv);

#endif
