/* Processes as the protocol knows them: alive or not, a reused pid told apart, named for status.
 * Internal to gpuyield (not installed). */
#ifndef GY_PROC_IDENTITY_H
#define GY_PROC_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* starttime of /proc/<pid>/stat (clock ticks since boot), 0 if the process does not exist. */
uint64_t gy_proc_start_time(int pid);
/* /proc/<pid>/<file> read into buf (NUL-terminated, at most len-1 bytes): the byte count, or -1
 * with errno set (ENOENT/ESRCH: no such process). */
long gy_proc_read(int pid, const char *file, char *buf, size_t len);
/* Its name for status and metrics: $GPUYIELD_MODEL of its environment, else /proc/PID/comm;
 * "" when neither can be read (proc_name.c). */
void gy_proc_name(int pid, char *out, size_t len);
/* True while the process (pid, start_time) is the same live process. */
bool gy_proc_alive(int pid, uint64_t start_time);
/* gy_proc_start_time, and in *exec_id a value of the program image the process runs: exec
 * changes it, nothing else does (0: cannot be seen; proc_identity.c says how it is made). */
uint64_t gy_proc_identity(int pid, uint32_t *exec_id);
/* gy_proc_alive, and still running the image exec_id (a registered slot's): a process that has
 * exec'd another program counts as dead. exec_id 0, or an image that cannot be seen, checks
 * only the pid and start time. */
bool gy_proc_image_alive(int pid, uint64_t start_time, uint32_t exec_id);

#endif
