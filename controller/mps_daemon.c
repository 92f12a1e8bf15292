/* Starting, joining and quitting an MPS control daemon for one experiment. */
#include <errno.h>
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

extern char **environ;

/* The longest socket the daemon makes in its pipe directory. */
#define LONGEST_SOCKET "/control_privileged"
#define PID_FILE "/nvidia-cuda-mps-control.pid"

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int mkdir_p(const char *path, gy_err *err)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return gy_fail(err, ENAMETOOLONG, "MPS directory '%s' is too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
            int e = errno;
            return gy_fail(err, e, "cannot create MPS directory '%s': %s", buf, strerror(e));
        }
        *p = saved;
        if (!saved)
            return 0;
    }
}

static pid_t read_daemon_pid(const char *pipe_dir)
{
    char path[PATH_MAX + sizeof PID_FILE];
    snprintf(path, sizeof path, "%s" PID_FILE, pipe_dir);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1)
            pid = 0;
        fclose(f);
    }
    return pid > 0 && pid < 1 << 30 ? (pid_t)pid : 0;
}

/* gy_proc_start_time counts a zombie as gone: a daemon detaches, so a subreaper ancestor (nsys is
 * one) adopts it instead of init and may reap it only at its own end. */
static bool process_alive(pid_t pid) { return pid > 0 && gy_proc_start_time(pid) != 0; }

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

static int set_dirs(gy_mps *mps, const char *pipe_dir, const char *log_dir, gy_err *err)
{
    memset(mps, 0, sizeof *mps);
    if (strlen(pipe_dir) + sizeof LONGEST_SOCKET > sizeof(((struct sockaddr_un *)0)->sun_path))
        return gy_fail(err, ENAMETOOLONG,
                       "MPS pipe directory '%s' is too long for the daemon's sockets (at most %zu characters): "
                       "use a shorter output directory",
                       pipe_dir, sizeof(((struct sockaddr_un *)0)->sun_path) - sizeof LONGEST_SOCKET);
    snprintf(mps->pipe_dir, sizeof mps->pipe_dir, "%s", pipe_dir);
    snprintf(mps->log_dir, sizeof mps->log_dir, "%s", log_dir ? log_dir : pipe_dir);
    return 0;
}

int gy_mps_start(gy_mps *mps, const char *pipe_dir, const char *log_dir, gy_err *err)
{
    if (set_dirs(mps, pipe_dir, log_dir, err))
        return -1;
    pid_t running = read_daemon_pid(pipe_dir);
    if (process_alive(running))
        return gy_fail(err, EEXIST,
                       "MPS: a control daemon (pid %d) already serves %s: join it instead, or stop it with "
                       "`echo quit | CUDA_MPS_PIPE_DIRECTORY=%s %s`",
                       (int)running, pipe_dir, pipe_dir, GY_MPS_CONTROL);
    if (mkdir_p(mps->pipe_dir, err) || mkdir_p(mps->log_dir, err))
        return -1;
    int rc = run_control(mps, "-d", NULL, err);
    if (rc < 0)
        return -1;
    if (rc != 0)
        return gy_fail(err, EIO, "MPS: `%s -d` failed (exit status %d); its log is in %s (control.log)",
                       GY_MPS_CONTROL, rc, mps->log_dir);
    /* -d returns once the daemon forked; wait for its pid file and control socket. */
    char control[PATH_MAX + 16];
    snprintf(control, sizeof control, "%s/control", mps->pipe_dir);
    for (int waited_ms = 0; waited_ms < 10000; waited_ms += 20) {
        mps->daemon_pid = read_daemon_pid(mps->pipe_dir);
        if (mps->daemon_pid && access(control, F_OK) == 0) {
            mps->daemon_start_time = gy_proc_start_time(mps->daemon_pid);
            mps->started = true;
            return 0;
        }
        sleep_ms(20);
    }
    return gy_fail(err, ETIMEDOUT, "MPS: the control daemon made no control socket in %s within 10 s; see %s/control.log",
                   mps->pipe_dir, mps->log_dir);
}

int gy_mps_join(gy_mps *mps, const char *pipe_dir, gy_err *err)
{
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
    mps->daemon_pid = read_daemon_pid(mps->pipe_dir);
    if (mps->daemon_pid && !process_alive(mps->daemon_pid))
        return gy_fail(err, ESRCH, "MPS: the control daemon of %s (pid %d) is gone; remove its stale files or start a new one",
                       pipe_dir, (int)mps->daemon_pid);
    return 0;
}

/* The pipe directory holds only sockets and a pid file once the daemon is gone: remove them. */
static void remove_pipe_dir(const char *dir)
{
    static const char *const names[] = {"control", "control_lock", "control_privileged", "log",
                                        "nvidia-cuda-mps-control.pid", NULL};
    char path[PATH_MAX + 64];
    for (const char *const *n = names; *n; n++) {
        snprintf(path, sizeof path, "%s/%s", dir, *n);
        unlink(path);
    }
    rmdir(dir); /* fails harmlessly if the daemon left other files */
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
    remove_pipe_dir(mps->pipe_dir);
    if (killed)
        return gy_fail(err, ETIMEDOUT, "MPS: the control daemon (pid %d) did not quit within %.0f s and was killed",
                       (int)pid, timeout_s);
    return 0;
}
