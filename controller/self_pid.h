/* This process's pid without a syscall: the begin/end paths ask it several times a job, and on
 * the H100 each syscall of a begin after idle time cost microseconds (bench/results/
 * 2026-11-24-begin-cost). Internal to gpuyield (not installed). */
#ifndef GY_SELF_PID_H
#define GY_SELF_PID_H

/* getpid(), remembered; a fork child learns its own (pthread_atfork). A child made by a raw
 * clone() that runs no fork handlers is not supported (it runs no Python nor CUDA either). */
int gy_self_pid(void);

#endif
