#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

static volatile sig_atomic_t g_signals, g_first_signal;

static void on_signal(int sig)
{
    if (!g_first_signal)
        g_first_signal = sig;
    g_signals++;
}

void supervise_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* A worker that died must not kill us through a write to its pipe. */
    signal(SIGPIPE, SIG_IGN);
}

bool supervise_interrupted(void) { return g_signals > 0; }

int supervise_signal_status(void) { return g_first_signal ? 128 + g_first_signal : 0; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

enum phase { LOADING, RUNNING, MIN_JOBS, STOPPING, DONE };

struct worker {
    const struct exp_model *m;
    struct launch *launch;
    struct worker_result *res;
    int status_fd;  /* read end, -1 once closed */
    int control_fd; /* write end, -1 once closed */
    char line[256];
    size_t line_len;
    bool stop_sent;
    double stop_at;
};

static void child_exec(struct worker *w, int status_w, int control_r, int log_fd, char **envp, pid_t parent)
{
    /* The worker must never outlive run_exp, even if run_exp is killed outright. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(1);
    /* Own process group: a Ctrl-C reaches run_exp only, which stops the workers in order. */
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    /* Move the fds out of the way before placing them on 3 and 4. */
    int s = fcntl(status_w, F_DUPFD_CLOEXEC, 20), c = fcntl(control_r, F_DUPFD_CLOEXEC, 20);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (s < 0 || c < 0 || devnull < 0 || dup2(devnull, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0 ||
        dup2(s, PROTO_STATUS_FD) < 0 || dup2(c, PROTO_CONTROL_FD) < 0) {
        dprintf(log_fd, "run_exp: cannot set up the worker's file descriptors: %s\n", strerror(errno));
        _exit(126);
    }
    execvpe(w->launch->argv[0], w->launch->argv, envp);
    dprintf(2, "run_exp: cannot start the worker program '%s': %s\n", w->launch->argv[0], strerror(errno));
    _exit(127);
}

static int spawn(struct worker *w)
{
    int st[2], ct[2];
    if (pipe2(st, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(ct, O_CLOEXEC) != 0) {
        close(st[0]), close(st[1]);
        return -1;
    }
    unlink(w->m->csv_path); /* a stale file must not pass for this run's results */
    /* Never through a link: one planted in a shared output directory would have us write (as
     * ourselves) wherever it points. */
    int log_fd = open(w->m->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    int open_errno = errno;
    char **envp = launch_envp(w->launch);
    if (log_fd < 0 || !envp) {
        if (log_fd < 0 && open_errno == ELOOP)
            fprintf(stderr, "run_exp: error: %s is a symbolic link: refused (output files are never written through "
                            "a link); remove it\n", w->m->log_path);
        else
            fprintf(stderr, "run_exp: error: cannot open %s: %s\n", w->m->log_path, strerror(log_fd < 0 ? open_errno : errno));
        launch_free_envp(envp);
        if (log_fd >= 0)
            close(log_fd);
        close(st[0]), close(st[1]), close(ct[0]), close(ct[1]);
        return -1;
    }
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0)
        child_exec(w, st[1], ct[0], log_fd, envp, parent);
    int e = errno;
    if (pid > 0)
        setpgid(pid, pid); /* as the child does: no window in which a signal to its group misses */
    launch_free_envp(envp);
    close(log_fd);
    close(st[1]);
    close(ct[0]);
    if (pid < 0) {
        close(st[0]), close(ct[1]);
        fprintf(stderr, "run_exp: error: cannot fork a worker: %s\n", strerror(e));
        return -1;
    }
    fcntl(st[0], F_SETFL, O_NONBLOCK);
    w->status_fd = st[0];
    w->control_fd = ct[1];
    w->res->pid = pid;
    w->res->started = true;
    return 0;
}

static void send_command(struct worker *w, const char *cmd)
{
    if (w->control_fd < 0)
        return;
    ssize_t r;
    do
        r = write(w->control_fd, cmd, strlen(cmd));
    while (r < 0 && errno == EINTR);
}

static void request_stop(struct worker *w, double t)
{
    if (w->stop_sent)
        return;
    w->stop_sent = true;
    w->stop_at = t;
    send_command(w, "stop\n");
    if (w->control_fd >= 0)
        close(w->control_fd);
    w->control_fd = -1;
}

static void handle_line(struct worker *w, const char *line)
{
    long n;
    if (strcmp(line, "ready") == 0)
        w->res->ready = true;
    else if (sscanf(line, "job %ld", &n) == 1 && n > w->res->jobs)
        w->res->jobs = n;
}

static void drain_status(struct worker *w)
{
    if (w->status_fd < 0)
        return;
    char buf[512];
    for (;;) {
        ssize_t r = read(w->status_fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                close(w->status_fd);
                w->status_fd = -1;
            }
            return;
        }
        for (ssize_t i = 0; i < r; i++) {
            if (buf[i] == '\n') {
                w->line[w->line_len] = '\0';
                handle_line(w, w->line);
                w->line_len = 0;
            } else if (w->line_len + 1 < sizeof w->line) {
                w->line[w->line_len++] = buf[i];
            }
        }
    }
}

static void describe_status(int status, char *buf, size_t len)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "ended with wait status 0x%x", status);
}

/* The last few lines of a worker's log, indented, to stderr: the usual place of the reason. */
static void print_log_tail(const char *path, int lines)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char *ring[8] = {0};
    size_t caps[8] = {0};
    int count = 0;
    if (lines > 8)
        lines = 8;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) >= 0) {
        int k = count % lines;
        free(ring[k]);
        ring[k] = line;
        caps[k] = cap;
        line = NULL;
        cap = 0;
        count++;
    }
    free(line);
    fclose(f);
    int first = count > lines ? count - lines : 0;
    for (int i = first; i < count; i++) {
        char *l = ring[i % lines];
        size_t n = strlen(l);
        fprintf(stderr, "    | %s%s", l, n && l[n - 1] == '\n' ? "" : "\n");
    }
    for (int i = 0; i < lines; i++)
        free(ring[i]);
    (void)caps;
}

static void reap(struct worker *ws, int n, enum run_outcome *outcome)
{
    for (int i = 0; i < n; i++) {
        struct worker *w = &ws[i];
        if (!w->res->started || w->res->exited)
            continue;
        int status;
        pid_t r = waitpid(w->res->pid, &status, WNOHANG);
        if (r != w->res->pid)
            continue;
        drain_status(w); /* its last reports */
        w->res->exited = true;
        kill(-w->res->pid, SIGKILL); /* whatever it left behind in its group: no stray process */
        w->res->wait_status = status;
        bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if ((!w->stop_sent || !clean) && !w->res->killed_by_us) {
            w->res->failed = true;
            char how[128];
            describe_status(status, how, sizeof how);
            fprintf(stderr, "\nrun_exp: error: worker '%s' (pid %d) %s %s; its log: %s\n", w->m->output_file_name,
                    (int)w->res->pid, how, w->stop_sent ? "while stopping" : "before the experiment ended",
                    w->m->log_path);
            print_log_tail(w->m->log_path, 5);
            if (*outcome == RUN_OK)
                *outcome = RUN_WORKER_FAILED;
        }
    }
}

static void snapshot_counters(const struct supervise_options *opt, struct worker *ws, int n)
{
    static struct gy_status st;
    gy_err err;
    if (!opt->shm || gy_status_read(opt->shm, &st, &err) != 0)
        return;
    for (int i = 0; i < n; i++) {
        struct worker_result *r = ws[i].res;
        uint64_t waits = 0, blocked = 0, drains = 0, timeouts = 0, launches = 0;
        bool seen = false;
        for (int k = 0; k < st.nprocs; k++) {
            if (st.procs[k].pid != r->pid)
                continue;
            seen = true;
            waits += st.procs[k].waits;
            blocked += st.procs[k].blocked_ns;
            drains += st.procs[k].drains;
            timeouts += st.procs[k].drain_timeouts;
            launches += st.procs[k].launches + st.procs[k].graph_launches;
        }
        /* Counters only grow; a vanished slot (process ended) keeps the last values. */
        if (seen) {
            r->waits = waits > r->waits ? waits : r->waits;
            r->blocked_ns = blocked > r->blocked_ns ? blocked : r->blocked_ns;
            r->drains = drains > r->drains ? drains : r->drains;
            r->drain_timeouts = timeouts > r->drain_timeouts ? timeouts : r->drain_timeouts;
            r->launches = launches > r->launches ? launches : r->launches;
        }
    }
}

static void print_progress(const struct exp_config *cfg, struct worker *ws, int n, double elapsed, bool final)
{
    static bool tty = false, tty_known = false;
    if (!tty_known)
        tty = isatty(STDOUT_FILENO), tty_known = true;
    char line[1024];
    int used = snprintf(line, sizeof line, "run_exp: [%5.1f/%.0f s]", elapsed, cfg->exp_dur);
    for (int i = 0; i < n && used < (int)sizeof line; i++)
        used += snprintf(line + used, sizeof line - (size_t)used, "  %s: %ld jobs", ws[i].m->output_file_name,
                         ws[i].res->jobs);
    if (tty)
        printf("\r%s\033[K%s", line, final ? "\n" : "");
    else
        printf("%s\n", line);
    fflush(stdout);
}

static void poll_status(struct worker *ws, int n, int timeout_ms)
{
    struct pollfd fds[EXP_MAX_MODELS];
    int map[EXP_MAX_MODELS], k = 0;
    for (int i = 0; i < n; i++) {
        if (ws[i].status_fd < 0)
            continue;
        fds[k] = (struct pollfd){.fd = ws[i].status_fd, .events = POLLIN};
        map[k++] = i;
    }
    if (k == 0) {
        struct timespec ts = {0, (long)timeout_ms * 1000000L};
        nanosleep(&ts, NULL);
        return;
    }
    if (poll(fds, (nfds_t)k, timeout_ms) <= 0)
        return;
    for (int j = 0; j < k; j++)
        if (fds[j].revents)
            drain_status(&ws[map[j]]);
}

/* A worker leads its own process group: signal the group, so that what it started (a wrapper
 * that does not exec, its children) goes with it. */
static void signal_worker(const struct worker_result *r, int sig)
{
    if (kill(-r->pid, sig) != 0)
        kill(r->pid, sig);
}

static void signal_all(struct worker *ws, int n, int sig)
{
    for (int i = 0; i < n; i++) {
        if (ws[i].res->started && !ws[i].res->exited) {
            ws[i].res->killed_by_us = true;
            signal_worker(ws[i].res, sig);
        }
    }
}

/* Stop everyone: ready workers get "stop" (they finish the current job, so rows stay whole);
 * those still loading have nothing to keep and get SIGTERM at once. */
static void stop_all(struct worker *ws, int n, double t)
{
    for (int i = 0; i < n; i++) {
        if (!ws[i].res->started || ws[i].res->exited)
            continue;
        if (!ws[i].res->ready) {
            ws[i].res->killed_by_us = true;
            signal_worker(ws[i].res, SIGTERM);
        }
        request_stop(&ws[i], t);
    }
}

enum run_outcome supervise_run(const struct exp_config *cfg, struct launch *launches,
                               const struct supervise_options *opt, struct worker_result *results)
{
    int n = cfg->nmodels;
    struct worker ws[EXP_MAX_MODELS];
    enum run_outcome outcome = RUN_OK;
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        ws[i] = (struct worker){.m = &cfg->models[i], .launch = &launches[i], .res = &results[i],
                                .status_fd = -1, .control_fd = -1};
    }
    for (int i = 0; i < n && outcome == RUN_OK; i++)
        if (spawn(&ws[i]) != 0)
            outcome = RUN_START_FAILED;

    enum phase phase = outcome == RUN_OK ? LOADING : STOPPING;
    double start = now_s(), t_go = 0, deadline = start + opt->ready_timeout_s, next_progress = 0, next_snap = 0;
    bool term_sent = false, kill_sent = false;
    int signals_seen = 0;
    if (phase == STOPPING) {
        stop_all(ws, n, start);
        deadline = start + opt->stop_timeout_s;
    } else {
        printf("run_exp: started %d worker%s; waiting until every model is loaded and warmed up\n", n,
               n == 1 ? "" : "s");
        fflush(stdout);
    }
    while (phase != DONE) {
        poll_status(ws, n, 100);
        reap(ws, n, &outcome);
        double t = now_s();
        if (g_signals != signals_seen) {
            if (signals_seen == 0) {
                fprintf(stderr, "\nrun_exp: interrupted: stopping the workers (again to kill them at once)\n");
                if (outcome == RUN_OK)
                    outcome = RUN_INTERRUPTED;
                if (phase != STOPPING) {
                    stop_all(ws, n, t);
                    phase = STOPPING;
                    deadline = t + (opt->stop_timeout_s < 5 ? opt->stop_timeout_s : 5);
                }
            } else {
                signal_all(ws, n, SIGKILL);
                kill_sent = true;
            }
            signals_seen = g_signals;
        }
        if (outcome == RUN_WORKER_FAILED && phase != STOPPING) {
            fprintf(stderr, "run_exp: stopping the other workers\n");
            stop_all(ws, n, t);
            phase = STOPPING;
            deadline = t + opt->stop_timeout_s;
        }
        if (phase != LOADING && phase != STOPPING && t >= next_snap) {
            snapshot_counters(opt, ws, n);
            next_snap = t + 0.25;
        }
        switch (phase) {
        case LOADING: {
            bool all = true;
            for (int i = 0; i < n; i++)
                all = all && results[i].ready;
            if (all) {
                for (int i = 0; i < n; i++)
                    send_command(&ws[i], "go\n");
                t_go = t;
                phase = RUNNING;
                printf("run_exp: all models ready; running for %g s\n", cfg->exp_dur);
                fflush(stdout);
            } else if (t >= deadline) {
                for (int i = 0; i < n; i++)
                    if (!results[i].ready)
                        fprintf(stderr, "run_exp: error: worker '%s' (pid %d) was not ready after %g s (still "
                                        "loading its model?); its log: %s; raise --ready-timeout if it is just slow\n",
                                ws[i].m->output_file_name, (int)results[i].pid, opt->ready_timeout_s,
                                ws[i].m->log_path);
                outcome = RUN_START_FAILED;
                stop_all(ws, n, t);
                phase = STOPPING;
                deadline = t + opt->stop_timeout_s;
            }
            break;
        }
        case RUNNING:
            if (t >= next_progress) {
                print_progress(cfg, ws, n, t - t_go, false);
                next_progress = t + (isatty(STDOUT_FILENO) ? 0.5 : 5.0);
            }
            if (t - t_go >= cfg->exp_dur) {
                phase = MIN_JOBS;
                deadline = t + opt->min_jobs_timeout_s;
            }
            break;
        case MIN_JOBS: {
            bool all = true;
            for (int i = 0; i < n; i++) {
                if (!ws[i].stop_sent && results[i].jobs >= opt->min_jobs)
                    request_stop(&ws[i], t);
                all = all && ws[i].stop_sent;
            }
            if (!all && t >= deadline) {
                for (int i = 0; i < n; i++)
                    if (!ws[i].stop_sent)
                        fprintf(stderr, "run_exp: warning: worker '%s' ran only %ld jobs (at least %d wanted) in %g s "
                                        "past exp_dur; stopping it anyway: its statistics are thin\n",
                                ws[i].m->output_file_name, results[i].jobs, opt->min_jobs, opt->min_jobs_timeout_s);
                stop_all(ws, n, t);
                all = true;
            }
            if (all) {
                print_progress(cfg, ws, n, t - t_go, true);
                phase = STOPPING;
                deadline = t + opt->stop_timeout_s;
            }
            break;
        }
        case STOPPING: {
            bool all = true;
            for (int i = 0; i < n; i++)
                all = all && (!results[i].started || results[i].exited);
            if (all) {
                phase = DONE;
            } else if (t >= deadline && !term_sent) {
                for (int i = 0; i < n; i++)
                    if (results[i].started && !results[i].exited)
                        fprintf(stderr, "run_exp: worker '%s' (pid %d) did not stop in time: terminating it\n",
                                ws[i].m->output_file_name, (int)results[i].pid);
                signal_all(ws, n, SIGTERM);
                term_sent = true;
                deadline = t + 5;
            } else if (t >= deadline && !kill_sent) {
                signal_all(ws, n, SIGKILL);
                kill_sent = true;
                deadline = t + 30;
            } else if (t >= deadline) {
                /* Unkillable (stuck in the driver): give up waiting rather than hang forever. */
                fprintf(stderr, "run_exp: error: a worker survives SIGKILL (stuck in the kernel?); giving up on it\n");
                phase = DONE;
            }
            break;
        }
        case DONE:
            break;
        }
    }
    for (int i = 0; i < n; i++) {
        if (ws[i].status_fd >= 0)
            close(ws[i].status_fd);
        if (ws[i].control_fd >= 0)
            close(ws[i].control_fd);
        if (results[i].ready && t_go > 0)
            results[i].run_s = (ws[i].stop_sent ? ws[i].stop_at : now_s()) - t_go;
    }
    return outcome;
}
