/* An MPS control daemon managed for one experiment: started with its own pipe and log
 * directories (so it never meets another experiment's or another user's daemon) and quit at the
 * end, or joined when one already runs. Workers find it through CUDA_MPS_PIPE_DIRECTORY. */
#ifndef GY_MPS_DAEMON_H
#define GY_MPS_DAEMON_H

#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <sys/types.h>

#include "gpuyield.h"
#include "private_dir.h"

/* The control program; tests put a stand-in of the same name first on PATH. */
#define GY_MPS_CONTROL "nvidia-cuda-mps-control"

typedef struct gy_mps {
    char pipe_dir[PATH_MAX];
    char log_dir[PATH_MAX];
    pid_t daemon_pid; /* from its pid file; 0 when unknown */
    uint64_t daemon_start_time; /* with the pid, tells it from a process that reused the pid */
    bool started;     /* ours to quit */
    /* Set before gy_mps_start: a daemon of ours already serving the pipe directory is taken over
     * (ours to quit from then on) instead of refused; `adopted` says it was. A restarted serve
     * does this for the daemon its predecessor left to the segment's live workers. */
    bool adopt_running, adopted;
    /* Started ones: the verified experiment and pipe directories (every removal is relative to
     * them; -1 when not open), whether this start made `log` (a failed start removes it, and
     * `pipe` always), and what the walk to the experiment directory made (undone by a failed
     * start: the directory and the parents it made, each only if empty). */
    int dir_fd, pipe_fd;
    bool made_log;
    gy_private_path made;
} gy_mps;

/* Start a control daemon whose pipes live in dir/pipe and logs in dir/log. dir (and any missing
 * parent) and both subdirectories are made 0700 or must already be ours with mode 0700 and not
 * links, every directory above dir root's or ours and not open to others without the sticky bit,
 * a link on the way root's or ours (gy_private_dir, private_dir.h); anything planted is refused
 * naming its owner. The daemon and the workers are told the directory as walked (mps->pipe_dir:
 * absolute, links resolved). Refuses a pipe directory where our daemon already answers, a path
 * too long for its sockets, a missing control program; returns once its control socket exists.
 * 0, or -1 with err filled and nothing this call made left behind. */
int gy_mps_start(gy_mps *mps, const char *dir, gy_err *err);
/* The default experiment directory for segment_name: gpuyield-mps-<uid>-<tag> in
 * $XDG_RUNTIME_DIR when that is ours (0700), else in /tmp. */
void gy_mps_default_dir(const char *segment_name, char *out, size_t len);
/* Use the daemon already serving pipe_dir (never quit by us). Refuses one of another user. */
int gy_mps_join(gy_mps *mps, const char *pipe_dir, gy_err *err);
/* Quit a daemon we started and wait (up to timeout_s) until it is gone; nothing for a joined
 * one. Safe to call twice. */
int gy_mps_stop(gy_mps *mps, double timeout_s, gy_err *err);

#endif
