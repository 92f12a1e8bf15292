/* Starting, joining and quitting an MPS control daemon for one experiment. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "errors.h"
#include "mps_daemon.h"
#include "private_dir.h"
#include "proc_identity.h"

extern char **environ;

/* The longest socket the daemon makes in its pipe directory. */
#define LONGEST_SOCKET "/control_privileged"
#define PID_NAME "nvidia-cuda-mps-control.pid" /* in the pipe directory */
#define PID_FILE "/" PID_NAME

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The daemon's pid from its pid file in the verified pipe directory: 0 when there is none, -1
 * (err filled) when something other than our regular file is there (a planted FIFO or link). */
static pid_t read_daemon_pid(int pipe_fd, const char *pipe_dir, gy_err *err)
{
    char shown[PATH_MAX + sizeof PID_FILE];
    snprintf(shown, sizeof shown, "%s" PID_FILE, pipe_dir);
    int fd = gy_private_file_read(pipe_fd, PID_NAME, shown, err);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    char *end;
    long pid = strtol(buf, &end, 10);
    return pid > 0 && pid < 1 << 30 && end != buf ? (pid_t)pid : 0;
}

/* gy_proc_start_time counts a zombie as gone: a daemon detaches, so a subreaper ancestor (nsys is
 * one) adopts it instead of init and may reap it only at its own end. */
static bool process_alive(pid_t pid) { return pid > 0 && gy_proc_start_time(pid) != 0; }

/* A pid file names our daemon only if that process is alive and runs as us: a pid file naming
 * anyone else's process (planted, or a pid reused since) is stale and must not refuse a start. */
static bool our_process_alive(pid_t pid)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    return process_alive(pid) && stat(path, &st) == 0 && st.st_uid == geteuid();
}

static bool has_control(int pipe_fd)
{
    struct stat st;
    return fstatat(pipe_fd, "control", &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == geteuid() &&
           !S_ISLNK(st.st_mode) && !S_ISDIR(st.st_mode);
}

/* The environment with the two MPS directories set to ours. */
static char **mps_environment(const char *pipe_dir, const char *log_dir, char *pipe_var, char *log_var, size_t len)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 3, sizeof *envp);
    if (!envp)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CUDA_MPS_PIPE_DIRECTORY=", 24) && strncmp(environ[i], "CUDA_MPS_LOG_DIRECTORY=", 23))
            envp[k++] = environ[i];
    snprintf(pipe_var, len, "CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
    snprintf(log_var, len, "CUDA_MPS_LOG_DIRECTORY=%s", log_dir);
    envp[k++] = pipe_var;
    envp[k++] = log_var;
    return envp;
}

/* Run the control program with `arg` (or none), `input` on its stdin; its exit status, or -1
 * with err filled when it cannot run at all. */
static int run_control(const gy_mps *mps, const char *arg, const char *input, gy_err *err)
{
    static char pipe_var[PATH_MAX + 32], log_var[PATH_MAX + 32];
    char **envp = mps_environment(mps->pipe_dir, mps->log_dir, pipe_var, log_var, sizeof pipe_var);
    if (!envp)
        return gy_fail(err, ENOMEM, "MPS: out of memory");
    int in[2] = {-1, -1};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (input) {
        if (pipe(in) != 0) {
            int e = errno;
            free(envp);
            posix_spawn_file_actions_destroy(&actions);
            return gy_fail(err, e, "MPS: pipe: %s", strerror(e));
        }
        posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
        posix_spawn_file_actions_addclose(&actions, in[1]);
    }
    char *argv[] = {(char *)GY_MPS_CONTROL, (char *)arg, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, GY_MPS_CONTROL, &actions, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    free(envp);
    if (input)
        close(in[0]);
    if (rc != 0) {
        if (input)
            close(in[1]);
        if (rc == ENOENT)
            return gy_fail(err, rc,
                           "MPS: %s is not on PATH: install the NVIDIA driver's utilities (it ships with the "
                           "driver), or run without MPS",
                           GY_MPS_CONTROL);
        return gy_fail(err, rc, "MPS: cannot run %s: %s", GY_MPS_CONTROL, strerror(rc));
    }
    if (input) {
        ssize_t len = (ssize_t)strlen(input);
        if (write(in[1], input, (size_t)len) != len) {
        } /* a control program that died early is reported by its status */
        close(in[1]);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return gy_fail(err, errno, "MPS: waiting for %s: %s", GY_MPS_CONTROL, strerror(errno));
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void reset(gy_mps *mps)
{
    bool adopt_running = mps->adopt_running; /* the caller's choice, kept */
    memset(mps, 0, sizeof *mps);
    mps->adopt_running = adopt_running;
    mps->dir_fd = mps->pipe_fd = -1;
}

static int set_dirs(gy_mps *mps, const char *pipe_dir, const char *log_dir, gy_err *err)
{
    if (strlen(pipe_dir) + sizeof LONGEST_SOCKET > sizeof(((struct sockaddr_un *)0)->sun_path))
        return gy_fail(err, ENAMETOOLONG,
                       "MPS pipe directory '%s' is too long for the daemon's sockets (at most %zu characters): "
                       "use a shorter output directory",
                       pipe_dir, sizeof(((struct sockaddr_un *)0)->sun_path) - sizeof LONGEST_SOCKET);
    snprintf(mps->pipe_dir, sizeof mps->pipe_dir, "%s", pipe_dir);
    snprintf(mps->log_dir, sizeof mps->log_dir, "%s", log_dir ? log_dir : pipe_dir);
    return 0;
}

void gy_mps_default_dir(const char *segment_name, char *out, size_t len)
{
    /* segment_name is "/gpuyield-<uid>-<tag>": the directory is gpuyield-mps-<uid>-<tag>. */
    snprintf(out, len, "%s/gpuyield-mps%s", gy_runtime_base(), segment_name + strlen("/gpuyield"));
}

/* What the daemon leaves in its pipe directory once it is gone. */
static const char *const pipe_files[] = {"control", "control_lock", "control_privileged", "log", PID_NAME, NULL};

/* Remove what we made, relative to the verified descriptors only: a path swapped in since is
 * never followed. Directories go only when empty (the log directory keeps the daemon's log). */
static void release_dirs(gy_mps *mps, bool remove_pipe)
{
    if (mps->pipe_fd >= 0 && remove_pipe)
        for (const char *const *n = pipe_files; *n; n++)
            unlinkat(mps->pipe_fd, *n, 0);
    if (mps->dir_fd >= 0) {
        if (remove_pipe)
            unlinkat(mps->dir_fd, "pipe", AT_REMOVEDIR);
        if (mps->made_log) /* a failed start: nothing of ours stays */
            unlinkat(mps->dir_fd, "log", AT_REMOVEDIR);
    }
    if (mps->pipe_fd >= 0)
        close(mps->pipe_fd);
    if (mps->dir_fd >= 0)
        close(mps->dir_fd);
    mps->pipe_fd = mps->dir_fd = -1;
}

/* The directory and the parents the walk made go too (each only if empty, by descriptor). */
static int start_failed(gy_mps *mps)
{
    release_dirs(mps, true);
    gy_private_path_undo(&mps->made);
    return -1;
}

/* From here on the directories hold the daemon's files, or another daemon's: none is removed. */
static void dirs_kept(gy_mps *mps)
{
    mps->made_log = false;
    gy_private_path_keep(&mps->made);
}

int gy_mps_start(gy_mps *mps, const char *dir, gy_err *err)
{
    /* Workers are told the pipe directory: a relative one would name another place from their cwd. */
    char absolute[PATH_MAX], cwd[PATH_MAX];
    if (dir[0] != '/') {
        if (!getcwd(cwd, sizeof cwd)) {
            int e = errno;
            return gy_fail(err, e, "MPS directory '%s' is relative and the current directory is unknown: %s", dir,
                           strerror(e));
        }
        if (snprintf(absolute, sizeof absolute, "%s/%s", cwd, dir) >= (int)sizeof absolute)
            return gy_fail(err, ENAMETOOLONG, "MPS directory '%s/%s' is too long", cwd, dir);
        dir = absolute;
    }
    char pipe_dir[PATH_MAX], log_dir[PATH_MAX];
    if (snprintf(pipe_dir, sizeof pipe_dir, "%s/pipe", dir) >= (int)sizeof pipe_dir ||
        snprintf(log_dir, sizeof log_dir, "%s/log", dir) >= (int)sizeof log_dir)
        return gy_fail(err, ENAMETOOLONG, "MPS directory '%s' is too long", dir);
    reset(mps);
    if (set_dirs(mps, pipe_dir, log_dir, err)) /* too long already: nothing made */
        return -1;
    bool created_pipe = false, created_log = false;
    mps->dir_fd = gy_private_dir(dir, &mps->made, err);
    if (mps->dir_fd < 0)
        return -1;
    /* The daemon and the workers get the directory as walked: every component of it was checked
     * to be one only we or root can change (and links on the way, ours or root's, are resolved), so
     * it names what we checked for as long as they run. Not /proc/self/fd/N: the daemon detaches
     * and closes what it inherits, its servers and the workers resolve /proc/self in their own
     * processes, and a restarted serve (whose descriptors died with its predecessor) adopts it. */
    if (snprintf(pipe_dir, sizeof pipe_dir, "%s/pipe", mps->made.path) >= (int)sizeof pipe_dir ||
        snprintf(log_dir, sizeof log_dir, "%s/log", mps->made.path) >= (int)sizeof log_dir) {
        gy_fail(err, ENAMETOOLONG, "MPS directory '%s' (links resolved) is too long", mps->made.path);
        return start_failed(mps);
    }
    if (set_dirs(mps, pipe_dir, log_dir, err))
        return start_failed(mps);
    mps->pipe_fd = gy_private_dir_at(mps->dir_fd, "pipe", pipe_dir, &created_pipe, err);
    if (mps->pipe_fd < 0)
        return start_failed(mps);
    int log_fd = gy_private_dir_at(mps->dir_fd, "log", log_dir, &created_log, err);
    if (log_fd < 0)
        return start_failed(mps);
    mps->made_log = created_log;
    close(log_fd);
    pid_t running = read_daemon_pid(mps->pipe_fd, pipe_dir, err);
    if (running < 0)
        return start_failed(mps);
    if (running && our_process_alive(running) && has_control(mps->pipe_fd) && mps->adopt_running) {
        mps->daemon_pid = running;
        mps->daemon_start_time = gy_proc_start_time(running);
        mps->started = mps->adopted = true;
        dirs_kept(mps);
        return 0;
    }
    if (running && our_process_alive(running) && has_control(mps->pipe_fd)) {
        gy_fail(err, EEXIST,
                "MPS: a control daemon (pid %d) already serves %s: join it instead, or stop it with "
                "`echo quit | CUDA_MPS_PIPE_DIRECTORY=%s %s`",
                (int)running, pipe_dir, pipe_dir, GY_MPS_CONTROL);
        dirs_kept(mps); /* its files are not ours to remove */
        release_dirs(mps, false);
        return -1;
    }
    if (running) /* stale: a dead daemon's, or naming a process that is not our daemon */
        unlinkat(mps->pipe_fd, PID_NAME, 0);
    int rc = run_control(mps, "-d", NULL, err);
    if (rc < 0)
        return start_failed(mps);
    if (rc != 0) {
        gy_fail(err, EIO, "MPS: `%s -d` failed (exit status %d); its log is in %s (control.log)", GY_MPS_CONTROL, rc,
                mps->log_dir);
        return start_failed(mps); /* a log directory holding its log is not empty: it stays */
    }
    /* -d returns once the daemon forked; wait for its pid file and control socket. */
    for (int waited_ms = 0; waited_ms < 10000; waited_ms += 20) {
        mps->daemon_pid = read_daemon_pid(mps->pipe_fd, pipe_dir, err);
        if (mps->daemon_pid < 0)
            return start_failed(mps);
        if (mps->daemon_pid && has_control(mps->pipe_fd)) {
            mps->daemon_start_time = gy_proc_start_time(mps->daemon_pid);
            mps->started = true;
            dirs_kept(mps);
            return 0;
        }
        sleep_ms(20);
    }
    dirs_kept(mps); /* a daemon may be writing its log there */
    return gy_fail(err, ETIMEDOUT, "MPS: the control daemon made no control socket in %s within 10 s; see %s/control.log",
                   mps->pipe_dir, mps->log_dir);
}

int gy_mps_join(gy_mps *mps, const char *pipe_dir, gy_err *err)
{
    reset(mps);
    if (set_dirs(mps, pipe_dir, NULL, err))
        return -1;
    char control[PATH_MAX + 16];
    snprintf(control, sizeof control, "%s/control", mps->pipe_dir);
    struct stat st;
    if (stat(control, &st) != 0)
        return gy_fail(err, ENOENT,
                       "MPS: no control daemon serves %s (no %s): start one with `CUDA_MPS_PIPE_DIRECTORY=%s %s -d`, "
                       "or let gpuyield start its own",
                       pipe_dir, control, pipe_dir, GY_MPS_CONTROL);
    if (st.st_uid != geteuid())
        return gy_fail(err, EACCES,
                       "MPS: the control daemon at %s belongs to uid %u, not to you (uid %u): its server would run "
                       "as that user and refuse your processes; let gpuyield start your own daemon",
                       pipe_dir, (unsigned)st.st_uid, (unsigned)geteuid());
    /* The directory the user named (links followed: their choice); its pid file never is. */
    int pipe_fd = open(pipe_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pipe_fd < 0) {
        int e = errno;
        return gy_fail(err, e, "MPS: cannot open %s: %s", pipe_dir, strerror(e));
    }
    mps->daemon_pid = read_daemon_pid(pipe_fd, pipe_dir, err);
    close(pipe_fd);
    if (mps->daemon_pid < 0)
        return -1;
    if (mps->daemon_pid && !process_alive(mps->daemon_pid))
        return gy_fail(err, ESRCH, "MPS: the control daemon of %s (pid %d) is gone; remove its stale files or start a new one",
                       pipe_dir, (int)mps->daemon_pid);
    return 0;
}

int gy_mps_stop(gy_mps *mps, double timeout_s, gy_err *err)
{
    if (!mps->started)
        return 0;
    mps->started = false;
    gy_err ignored;
    run_control(mps, NULL, "quit\n", &ignored);
    /* By pid and start time: a signal must never reach a process that reused the daemon's pid. */
    pid_t pid = mps->daemon_pid;
    uint64_t start = mps->daemon_start_time;
    for (double waited = 0; gy_proc_alive(pid, start) && waited < timeout_s; waited += 0.02)
        sleep_ms(20);
    bool killed = false;
    if (gy_proc_alive(pid, start)) { /* quit waits for clients; ours are gone, so something hangs */
        kill(pid, SIGTERM);
        for (int i = 0; i < 50 && gy_proc_alive(pid, start); i++)
            sleep_ms(20);
        if (gy_proc_alive(pid, start))
            kill(pid, SIGKILL);
        killed = true;
    }
    release_dirs(mps, true);
    if (killed)
        return gy_fail(err, ETIMEDOUT, "MPS: the control daemon (pid %d) did not quit within %.0f s and was killed",
                       (int)pid, timeout_s);
    return 0;
}
