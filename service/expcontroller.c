/* expcontroller: create, serve, inspect and clean gpuyield segments.
 * Exit status: 0 ok, 1 runtime error, 2 usage error. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpuyield.h"
#include "guarded.h"
#include "metrics.h"
#include "mps_daemon.h"
#include "proc_identity.h"
#include "status_text.h"
#include "status_view.h"

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2

/* A format: the two %s are the policy names (policies.h). */
static const char usage_text[] =
    "usage: expcontroller COMMAND [options]\n"
    "  create [--name TAG] [--drain-timeout-ms MS] [--policy %s]\n"
    "         [--guard-p50 F] [--guard-p99 F] [--guard-depth]\n"
    "         [--mps-pipe DIR]                       create a segment, print its name; --mps-pipe: its\n"
    "                                                workers run under the MPS daemon serving DIR\n"
    "  serve  [--name TAG] [--drain-timeout-ms MS] [--policy %s]\n"
    "         [--guard-p50 F] [--guard-p99 F] [--guard-depth]\n"
    "         [--mps [--mps-dir DIR] | --mps-pipe DIR]\n"
    "         [--metrics [ADDR:]PORT] [--metrics-textfile PATH] [--remove-on-exit]\n"
    "                                                create it if absent (adopt it if present), reap\n"
    "                                                dead processes; on SIGINT/SIGTERM (exit 130/143)\n"
    "                                                remove it unless live processes use it\n"
    "                                                (--remove-on-exit: always); --mps starts an MPS\n"
    "                                                daemon for it (pipes and logs in DIR, private:\n"
    "                                                made 0700; default gpuyield-mps-<uid>-<tag> in\n"
    "                                                $XDG_RUNTIME_DIR if yours, else /tmp) and quits\n"
    "                                                it at the end; --mps-pipe joins a running one. Policy\n"
    "                                                default: " GY_POLICY_DEFAULT_TEXT ";\n"
    "                                                partition and guarded need MPS (else they drain);\n"
    "                                                --guard-p50/--guard-p99: guarded keeps an arm while\n"
    "                                                the HP's job p50/p99 stay within 1+F of stop's\n"
    "                                                (fractions 0..1, defaults 0.02 and 0.05);\n"
    "                                                --guard-depth: guarded also learns how much work\n"
    "                                                (time:US) the lower processes may queue between\n"
    "                                                HP jobs (1000-4000 us, within half the p50 bound)\n"
    "                                                --metrics serves GET /metrics (Prometheus text) on\n"
    "                                                PORT of 127.0.0.1, or of ADDR (0.0.0.0: every\n"
    "                                                interface); --metrics-textfile rewrites PATH every\n"
    "                                                second for node_exporter's textfile collector\n"
    "  status [--name TAG] [--json] [--watch [SEC]]  processes and jobs in progress\n"
    "  remove [--name TAG]                           remove a segment\n"
    "  guard-reset [--name TAG]                      guarded: forget what was learned (the lower work\n"
    "                                                changed): stop in force, every arm measured again\n"
    "  guard-force [--name TAG] --arm ARM            guarded: pin ARM in force (stop, partition:K or\n"
    "                                                disjoint:64|120) to measure it beside stop; a guard-reset\n"
    "                                                ends it\n"
    "  clean                                         remove your segments whose creator is dead\n"
    "  --version                                     print the gpuyield version\n"
    "TAG defaults to $GPUYIELD_SHM, else \"" GY_DEFAULT_TAG "\"; a full name /gpuyield-<uid>-<tag> works too.\n";

static void print_usage(FILE *to)
{
    char choices[128];
    gy_policy_choices(choices, sizeof choices, "|", "|");
    fprintf(to, usage_text, choices, choices);
}

/* One line: what was wrong and where the options are (the whole help buried the reason). */
static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "expcontroller: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (expcontroller --help lists the commands and options)\n");
    return EXIT_USAGE;
}

struct options {
    const char *name;
    bool json;
    double watch_s; /* 0: print once */
    uint64_t drain_timeout_ns;
    const char *policy;   /* NULL: guarded under MPS, else drain */
    bool mps;             /* serve: start a daemon */
    const char *mps_dir;  /* serve --mps: its directories */
    const char *mps_pipe; /* serve: join the daemon of this pipe directory */
    const char *metrics;  /* serve: [ADDR:]PORT to answer GET /metrics on */
    const char *metrics_textfile; /* serve: a file to keep the metrics in */
    bool remove_on_exit;          /* serve: remove the segment at the end even while it is used */
    double guard_p50, guard_p99;  /* create/serve --guard-p50/--guard-p99 (policy guarded) */
    bool guard_given;
    bool guard_depth; /* create/serve --guard-depth (policy guarded) */
    const char *arm; /* guard-force --arm */
};

static volatile sig_atomic_t stop_requested; /* the signal that asked: SIGINT or SIGTERM */

static void on_stop_signal(int sig)
{
    stop_requested = sig;
}

/* A stop by signal exits as a shell reports death by it (128 + N: 143 for SIGTERM), so a
 * supervisor tells it from a clean end; a runtime failure on the way out still exits 1. */
static int stop_status(int rc)
{
    return rc == 0 && stop_requested ? 128 + (int)stop_requested : rc;
}

/* The policy given, else the default for the segment's MPS (guarded under MPS, else drain). */
static enum gy_policy chosen_policy(const struct options *opt, bool mps)
{
    enum gy_policy policy = gy_policy_default(mps);
    if (opt->policy)
        gy_policy_parse(opt->policy, &policy);
    return policy;
}

static int parse_options(int argc, char **argv, const char *command, struct options *opt)
{
    static const struct option longopts[] = {
        {"name", required_argument, NULL, 'n'},      {"json", no_argument, NULL, 'j'},
        {"watch", optional_argument, NULL, 'w'},     {"drain-timeout-ms", required_argument, NULL, 't'},
        {"policy", required_argument, NULL, 'p'},    {"mps", no_argument, NULL, 'm'},
        {"mps-dir", required_argument, NULL, 'd'},   {"mps-pipe", required_argument, NULL, 'P'},
        {"metrics", required_argument, NULL, 'M'},   {"metrics-textfile", required_argument, NULL, 'T'},
        {"guard-p50", required_argument, NULL, '5'}, {"guard-p99", required_argument, NULL, '9'},
        {"remove-on-exit", no_argument, NULL, 'R'},  {"help", no_argument, NULL, 'h'},
        {"arm", required_argument, NULL, 'a'},       {"guard-depth", no_argument, NULL, 'D'},
        {NULL, 0, NULL, 0},
    };
    bool is_status = strcmp(command, "status") == 0;
    bool makes = strcmp(command, "create") == 0 || strcmp(command, "serve") == 0;
    bool takes_name = strcmp(command, "clean") != 0;
    memset(opt, 0, sizeof *opt);
    opt->guard_p50 = GY_GUARD_DEFAULT_EPS_P50;
    opt->guard_p99 = GY_GUARD_DEFAULT_EPS_P99;
    opterr = 0;
    optind = 2;
    int c;
    while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'n':
            if (!takes_name)
                return usage_error("'%s' takes no --name: it looks at all of your segments", command);
            opt->name = optarg;
            break;
        case 'j':
            if (!is_status)
                return usage_error("--json goes with 'status', not '%s'", command);
            opt->json = true;
            break;
        case 'w':
            if (!is_status)
                return usage_error("--watch goes with 'status', not '%s'", command);
            opt->watch_s = 1.0;
            if (!optarg && optind < argc && argv[optind][0] != '-')
                optarg = argv[optind++];
            if (optarg) {
                errno = 0;
                opt->watch_s = strtod(optarg, &end);
                if (errno || *end || end == optarg || !(opt->watch_s >= 0.05 && opt->watch_s <= 3600)) /* NaN too */
                    return usage_error("--watch takes seconds between 0.05 and 3600, not '%s'", optarg);
            }
            break;
        case 't': {
            if (!makes)
                return usage_error("--drain-timeout-ms goes with 'create' or 'serve', not '%s'", command);
            errno = 0;
            long long ms = strtoll(optarg, &end, 10);
            if (errno || *end || ms < 1 || ms > 3600000)
                return usage_error("--drain-timeout-ms takes 1..3600000 milliseconds, not '%s'", optarg);
            opt->drain_timeout_ns = (uint64_t)ms * 1000000ull;
            break;
        }
        case 'p': {
            enum gy_policy policy;
            if (!makes)
                return usage_error("--policy goes with 'create' or 'serve', not '%s'", command);
            if (gy_policy_parse(optarg, &policy)) {
                char choices[128], fmt[192];
                snprintf(fmt, sizeof fmt, "--policy takes %s, not '%%s'",
                         gy_policy_choices(choices, sizeof choices, ", ", " or "));
                return usage_error(fmt, optarg);
            }
            opt->policy = optarg;
            break;
        }
        case 'P':
            if (strcmp(command, "serve") != 0 && strcmp(command, "create") != 0)
                return usage_error("--mps-pipe goes with 'create' or 'serve', not '%s'", command);
            opt->mps_pipe = optarg;
            break;
        case 'm':
        case 'd':
            if (strcmp(command, "serve") != 0)
                return usage_error("--mps and --mps-dir go with 'serve', not '%s'", command);
            if (c == 'm')
                opt->mps = true;
            else
                opt->mps_dir = optarg;
            break;
        case 'R':
            if (strcmp(command, "serve") != 0)
                return usage_error("--remove-on-exit goes with 'serve', not '%s'", command);
            opt->remove_on_exit = true;
            break;
        case 'M':
        case 'T':
            if (strcmp(command, "serve") != 0)
                return usage_error("--metrics and --metrics-textfile go with 'serve', not '%s'", command);
            if (c == 'M')
                opt->metrics = optarg;
            else if (!*optarg)
                return usage_error("%s", "--metrics-textfile is empty: give a file path (e.g. "
                                         "/var/lib/node_exporter/gpuyield.prom)");
            else
                opt->metrics_textfile = optarg;
            break;
        case '5':
        case '9':
            if (!makes)
                return usage_error("--guard-p50 and --guard-p99 go with 'create' or 'serve', not '%s'", command);
            if (gy_guard_parse_eps(optarg, c == '5' ? &opt->guard_p50 : &opt->guard_p99))
                return usage_error(c == '5' ? "--guard-p50 takes a fraction 0..1 (0.02: the HP's p50 may grow 2 %%), "
                                              "not '%s'"
                                            : "--guard-p99 takes a fraction 0..1 (0.05: the HP's p99 may grow 5 %%), "
                                              "not '%s'",
                                   optarg);
            opt->guard_given = true;
            break;
        case 'D':
            if (!makes)
                return usage_error("--guard-depth goes with 'create' or 'serve', not '%s'", command);
            opt->guard_depth = true;
            break;
        case 'a': {
            enum gy_guard_arm arm;
            if (strcmp(command, "guard-force") != 0)
                return usage_error("--arm goes with 'guard-force', not '%s'", command);
            if (gy_guard_arm_parse(optarg, &arm))
                return usage_error("--arm takes stop, partition:16|32|64|96|120 or disjoint:64|120, not '%s'",
                                   optarg);
            opt->arm = optarg;
            break;
        }
        case 'h':
            print_usage(stdout);
            exit(0);
        default:
            return usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (opt->mps_dir && !opt->mps)
        return usage_error("%s", "--mps-dir goes with --mps");
    if (opt->mps && opt->mps_pipe)
        return usage_error("%s", "--mps starts a daemon, --mps-pipe joins one: give one of them");
    if (strcmp(command, "guard-force") == 0 && !opt->arm)
        return usage_error("%s", "guard-force needs --arm ARM (e.g. --arm disjoint:120)");
    /* the policy the segment will have: guarded by default under MPS (--mps or --mps-pipe) */
    if ((opt->guard_given || opt->guard_depth) && chosen_policy(opt, opt->mps || opt->mps_pipe) != GY_POLICY_GUARDED)
        return usage_error("%s", opt->guard_given
                                     ? "--guard-p50 and --guard-p99 go with the policy guarded (--policy guarded, "
                                       "or the default under MPS: --mps or --mps-pipe DIR)"
                                     : "--guard-depth goes with the policy guarded (--policy guarded, or the default "
                                       "under MPS: --mps or --mps-pipe DIR)");
    char checked[GY_NAME_MAX];
    gy_err err;
    if (takes_name && gy_segment_name(opt->name, checked, &err))
        return usage_error("%s", err.msg);
    return 0;
}

static int fail(const gy_err *err)
{
    fprintf(stderr, "expcontroller: %s\n", err->msg);
    return EXIT_RUNTIME;
}

/* Partition confines lower work only under MPS; a segment that says no MPS makes its workers
 * fall back to drain. Said once where the segment is made: the workers say it only when verbose. */
static void warn_partition_without_mps(const gy_shm *shm)
{
    enum gy_policy policy = gy_get_policy(shm);
    if ((policy == GY_POLICY_PARTITION || policy == GY_POLICY_GUARDED) && !gy_get_mps(shm))
        fprintf(stderr, "expcontroller: warning: %s has policy %s but no MPS: its lower processes will "
                        "drain instead; give --mps (serve) or --mps-pipe DIR (the daemon the workers use)\n",
                shm->name, gy_policy_name(policy));
}

/* The guarded rule's epsilons into the segment (the defaults unless given). */
static int set_guard(gy_shm *shm, const struct options *opt)
{
    gy_err err;
    if (gy_get_policy(shm) == GY_POLICY_GUARDED &&
        (gy_guarded_configure(shm, opt->guard_p50, opt->guard_p99, GY_GUARD_DEFAULT_STOP_SHARE, 0, &err) ||
         gy_guarded_set_depth(shm, opt->guard_depth, &err))) {
        fprintf(stderr, "expcontroller: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int cmd_create(const struct options *opt)
{
    gy_mps mps = {0};
    gy_err err;
    /* The daemon is checked before the segment exists: a wrong DIR leaves nothing behind. */
    if (opt->mps_pipe && gy_mps_join(&mps, opt->mps_pipe, &err))
        return fail(&err);
    gy_shm shm;
    if (gy_create(opt->name, opt->drain_timeout_ns, &shm, &err))
        return fail(&err);
    bool under_mps = opt->mps_pipe != NULL;
    gy_set_policy(&shm, chosen_policy(opt, under_mps), under_mps);
    warn_partition_without_mps(&shm);
    if (set_guard(&shm, opt)) {
        gy_close(&shm);
        gy_remove(shm.name, NULL);
        return EXIT_RUNTIME;
    }
    printf("%s\n", shm.name);
    gy_close(&shm);
    return 0;
}

/* Registered processes still alive (the reaper's view: a dead one's slot is not a user). */
static int registered_alive(gy_shm *shm)
{
    int users = 0;
    for (int i = 0; i < GY_MAX_PROCS; i++) {
        const struct gy_proc_slot *slot = &shm->seg->procs[i];
        if (atomic_load(&slot->state) != GY_PROC_FREE &&
            gy_proc_image_alive(slot->pid, slot->start_time, slot->exec_id))
            users++;
    }
    return users;
}

/* What GET /metrics and the textfile show: a fresh snapshot each time. */
static const char *render_metrics(void *ctx)
{
    static struct gy_status st;
    static char text[512 * 1024];
    gy_err err;
    if (gy_status_read(ctx, &st, &err)) {
        snprintf(text, sizeof text, "# gpuyield: %s\n", err.msg);
        return text;
    }
    gy_status_view(&st);
    gy_metrics_text(&st, text, sizeof text);
    return text;
}

static int cmd_serve(const struct options *opt)
{
    gy_shm shm;
    gy_err err;
    bool created = true;
    /* The handlers before anything is made: a SIGINT/SIGTERM from here on only sets stop_requested,
     * so the setup below finishes (or fails and undoes itself), the loop does not start and the
     * common end removes what was made. Installed later, one arriving between the segment's
     * creation and the handlers killed serve and left the segment in /dev/shm. */
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* The port first: a bad address or a taken port leaves no segment behind. */
    gy_metrics_http http = {.fd = -1, .conns = NULL, .nconns = 0};
    if (opt->metrics && gy_metrics_http_listen(&http, opt->metrics, &err)) {
        if (err.code == EINVAL)
            return usage_error("%s", err.msg);
        return fail(&err);
    }
    if (gy_create(opt->name, opt->drain_timeout_ns, &shm, &err)) {
        if (err.code != EEXIST || gy_open(opt->name, &shm, &err)) {
            gy_metrics_http_close(&http);
            return fail(&err);
        }
        created = false;
    }
    if (opt->metrics_textfile && gy_metrics_write_file(opt->metrics_textfile, render_metrics(&shm), &err)) {
        char name[GY_NAME_MAX];
        snprintf(name, sizeof name, "%s", shm.name);
        gy_close(&shm);
        if (created)
            gy_remove(name, NULL);
        gy_metrics_http_close(&http);
        return fail(&err);
    }
    /* MPS before any worker can start: they read the policy and find the daemon. */
    gy_mps mps = {0};
    if (opt->mps || opt->mps_pipe) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", opt->mps_dir ? opt->mps_dir : "");
        if (!opt->mps_dir)
            gy_mps_default_dir(shm.name, dir, sizeof dir);
        mps.adopt_running = !created; /* the daemon a stopped serve left to the segment's workers */
        if (opt->mps_pipe ? gy_mps_join(&mps, opt->mps_pipe, &err) : gy_mps_start(&mps, dir, &err)) {
            char name[GY_NAME_MAX];
            snprintf(name, sizeof name, "%s", shm.name);
            gy_close(&shm);
            if (created)
                gy_remove(name, NULL);
            gy_metrics_http_close(&http);
            if (opt->metrics_textfile)
                unlink(opt->metrics_textfile);
            return fail(&err);
        }
        fprintf(stderr, "expcontroller: MPS daemon %s %s: give workers CUDA_MPS_PIPE_DIRECTORY=%s\n",
                mps.adopted ? "adopted at" : mps.started ? "started in" : "joined at", mps.pipe_dir, mps.pipe_dir);
    }
    if (created || opt->policy) {
        gy_set_policy(&shm, chosen_policy(opt, opt->mps || opt->mps_pipe), opt->mps || opt->mps_pipe);
        set_guard(&shm, opt); /* in range: the flags were checked */
    }
    warn_partition_without_mps(&shm);
    printf("%s\n", shm.name);
    fprintf(stderr, "expcontroller: serving %s (%s, policy %s%s); reaping dead processes every 200 ms; Ctrl-C "
                    "removes it unless processes still use it\n",
            shm.name, created ? "created" : "already existed: adopted", gy_policy_name(gy_get_policy(&shm)),
            gy_get_mps(&shm) ? ", under MPS" : "");
    if (http.fd >= 0)
        fprintf(stderr, "expcontroller: metrics at http://%s/metrics\n", http.bound);
    fflush(stdout);
    uint64_t next_reap = 0, next_textfile = 0;
    while (!stop_requested) {
        uint64_t now = gy_now_ns();
        if (now >= next_reap) {
            int reaped = gy_reap(&shm);
            if (reaped)
                fprintf(stderr, "expcontroller: reaped %d dead process%s\n", reaped, reaped == 1 ? "" : "es");
            next_reap = now + 200000000ull;
        }
        if (opt->metrics_textfile && now >= next_textfile) {
            if (gy_metrics_write_file(opt->metrics_textfile, render_metrics(&shm), &err))
                fprintf(stderr, "expcontroller: %s\n", err.msg); /* a full disk now and then: keep serving */
            next_textfile = now + 1000000000ull;
        }
        int wait_ms = (int)((next_reap - now) / 1000000ull) + 1;
        if (http.fd >= 0) {
            gy_metrics_http_poll(&http, wait_ms, render_metrics, &shm); /* a signal ends the poll */
        } else {
            struct timespec ts = {0, (long)wait_ms * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    gy_metrics_http_close(&http);
    if (opt->metrics_textfile)
        unlink(opt->metrics_textfile); /* nobody keeps it current now: a stale file would lie */
    gy_reap(&shm);
    int users = registered_alive(&shm);
    char name[GY_NAME_MAX];
    snprintf(name, sizeof name, "%s", shm.name);
    gy_close(&shm);
    /* A restart (a rolling update, a Slurm epilog of another job, a crash loop) must not pull
     * the segment, or the MPS daemon serve started, from under its workers: they would lose their
     * jobs and exit. The next serve adopts both as they are. */
    if (users > 0 && !opt->remove_on_exit) {
        fprintf(stderr, "expcontroller: left %s in place: %d registered process%s still use%s it; the next serve "
                        "adopts it (--remove-on-exit removes it anyway, `expcontroller remove` or `clean` later)\n",
                name, users, users == 1 ? "" : "es", users == 1 ? "s" : "");
        if (mps.started)
            fprintf(stderr, "expcontroller: left the MPS daemon (pid %d) at %s running for them: the next serve --mps "
                            "with the same directory adopts it\n",
                    (int)mps.daemon_pid, mps.pipe_dir);
        return stop_status(0);
    }
    int rc = 0;
    if (mps.started) {
        if (gy_mps_stop(&mps, 10, &err))
            rc = fail(&err);
        else
            fprintf(stderr, "expcontroller: MPS daemon quit\n");
    }
    if (gy_remove(name, &err))
        return fail(&err);
    fprintf(stderr, "expcontroller: removed %s\n", name);
    return stop_status(rc);
}

static void print_table(const struct gy_status *st)
{
    printf("segment %s (policy %s, %s)\njobs in progress per level 0..7:", st->name, gy_policy_name(st->policy),
           st->mps ? "under MPS" : "no MPS");
    for (int level = 0; level < GY_LEVELS; level++)
        printf(" %u", st->jobs[level]);
    printf("\ndrain timeouts %llu, dead processes reaped %llu, mutex waits given up %llu\n",
           (unsigned long long)st->total_drain_timeouts, (unsigned long long)st->reaped,
           (unsigned long long)st->lock_timeouts);
    if (st->mutex_holder[0])
        printf("the segment's mutex is held by %s: this snapshot was read without it\n", st->mutex_holder);
    for (int i = 0; i < st->ndevices; i++) {
        const struct gy_status_device *d = &st->devices[i];
        printf("device %d %s jobs on it per level 0..7:", d->slot, d->uuid);
        for (int level = 0; level < GY_LEVELS; level++)
            printf(" %u", d->jobs[level]);
        printf("\n");
    }
    printf("%8s %-16s %4s %-9s %12s %8s %8s %12s %8s %8s %12s %12s %9s %10s %-9s %s\n", "pid", "name", "prio",
           "state", "launches", "graphs", "waits", "ms_blocked", "drains", "timeouts", "partitioned", "part_copies",
           "auto_jobs", "ms_auto", "devices", "partition");
    for (int i = 0; i < st->nprocs; i++) {
        const struct gy_status_proc *p = &st->procs[i];
        char devices[64];
        gy_devices_text(p->launched_devices, devices, sizeof devices);
        /* auto_jobs, ms_auto: jobs the hook opened under GPUYIELD_JOBS=auto, and their time open */
        printf("%8d %-16s %4d %-9s %12llu %8llu %8llu %12.1f %8llu %8llu %12llu %12llu %9llu %10.1f %-9s %s\n", p->pid,
               p->name[0] ? p->name : "-", p->priority, p->state, (unsigned long long)p->launches,
               (unsigned long long)p->graph_launches, (unsigned long long)p->waits, (double)p->blocked_ns / 1e6,
               (unsigned long long)p->drains, (unsigned long long)p->drain_timeouts,
               (unsigned long long)p->partition_launches, (unsigned long long)p->partition_copies,
               (unsigned long long)p->auto_jobs, (double)p->auto_job_ns / 1e6, devices, p->partition);
    }
    if (st->nprocs == 0)
        printf("(no registered processes)\n");
    if (st->guarded)
        gy_guarded_print(stdout, &st->guard);
}

/* The segment's file as /dev/shm shows it now: a watch ends when it goes or is replaced. */
static bool segment_file(const char *name, struct stat *out)
{
    char path[GY_NAME_MAX + 16];
    snprintf(path, sizeof path, "/dev/shm%s", name);
    return stat(path, out) == 0;
}

static int cmd_status(const struct options *opt)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(opt->name, &shm, &err))
        return fail(&err);
    static struct gy_status st;
    static char json[160 * 1024];
    int rc = 0;
    if (opt->watch_s > 0) {
        struct sigaction sa = {.sa_handler = on_stop_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
    }
    struct stat watched, now;
    bool have_file = opt->watch_s > 0 && segment_file(shm.name, &watched);
    do {
        if (have_file &&
            (!segment_file(shm.name, &now) || now.st_ino != watched.st_ino || now.st_dev != watched.st_dev)) {
            /* Our mapping outlives the name: without this the watch went on showing a segment
             * nobody can join any more. */
            fprintf(stderr, "expcontroller: %s was removed%s: nothing more to watch\n", shm.name,
                    segment_file(shm.name, &now) ? " and made anew (run status again to watch the new one)" : "");
            rc = EXIT_RUNTIME;
            break;
        }
        if (gy_status_read(&shm, &st, &err)) {
            rc = fail(&err);
            break;
        }
        gy_status_view(&st);
        if (opt->json) {
            gy_status_json(&st, json, sizeof json);
            printf("%s\n", json);
        } else {
            if (opt->watch_s > 0 && isatty(STDOUT_FILENO))
                printf("\033[H\033[2J");
            print_table(&st);
        }
        fflush(stdout);
        if (opt->watch_s > 0) {
            double whole = (double)(long)opt->watch_s;
            struct timespec ts = {(time_t)whole, (long)((opt->watch_s - whole) * 1e9)};
            nanosleep(&ts, NULL);
        }
    } while (opt->watch_s > 0 && !stop_requested);
    gy_close(&shm);
    return rc;
}

static int cmd_guard_reset(const struct options *opt)
{
    gy_shm shm;
    gy_err err;
    if (gy_open(opt->name, &shm, &err))
        return fail(&err);
    int rc = gy_guarded_reset(&shm, &err) ? fail(&err) : 0;
    if (!rc)
        printf("reset the guarded policy of %s: stop in force\n", shm.name);
    gy_close(&shm);
    return rc;
}

static int cmd_guard_force(const struct options *opt)
{
    gy_shm shm;
    gy_err err;
    enum gy_guard_arm arm = GY_ARM_STOP;
    gy_guard_arm_parse(opt->arm, &arm); /* checked with the options */
    if (gy_open(opt->name, &shm, &err))
        return fail(&err);
    int rc = gy_guarded_force(&shm, arm, &err) ? fail(&err) : 0;
    if (!rc)
        printf("pinned arm %s in force on %s (stop still interleaved; guard-reset ends it)\n", opt->arm, shm.name);
    gy_close(&shm);
    return rc;
}

static int cmd_remove(const struct options *opt)
{
    gy_err err;
    char name[GY_NAME_MAX];
    if (gy_segment_name(opt->name, name, &err))
        return fail(&err);
    if (gy_remove(name, &err))
        return fail(&err);
    printf("removed %s\n", name);
    return 0;
}

/* A segment is stale when its creator is gone and no registered process is alive. Segments of
 * other users never match the name prefix (it carries our uid), and gy_open checks the owner. */
static int cmd_clean(void)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "gpuyield-%u-", (unsigned)getuid());
    DIR *dir = opendir("/dev/shm");
    if (!dir) {
        fprintf(stderr, "expcontroller: cannot list /dev/shm: %s\n", strerror(errno));
        return EXIT_RUNTIME;
    }
    int removed = 0, kept = 0, rc = 0;
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char name[GY_NAME_MAX];
        if (strlen(de->d_name) + 2 > sizeof name)
            continue; /* longer than any name we make */
        name[0] = '/';
        memcpy(name + 1, de->d_name, strlen(de->d_name) + 1);
        gy_shm shm;
        gy_err err;
        if (gy_open(name, &shm, &err)) {
            fprintf(stderr, "expcontroller: left %s alone: %s\n", name, err.msg);
            kept++;
            continue;
        }
        struct gy_segment *seg = shm.seg;
        bool in_use = gy_proc_alive(seg->creator_pid, seg->creator_start_time);
        for (int i = 0; i < GY_MAX_PROCS && !in_use; i++) {
            const struct gy_proc_slot *slot = &seg->procs[i];
            if (atomic_load(&slot->state) != GY_PROC_FREE &&
                gy_proc_image_alive(slot->pid, slot->start_time, slot->exec_id))
                in_use = true;
        }
        gy_close(&shm);
        if (in_use) {
            kept++;
            continue;
        }
        if (gy_remove(name, &err)) {
            fprintf(stderr, "expcontroller: %s\n", err.msg);
            rc = EXIT_RUNTIME;
        } else {
            printf("removed %s\n", name);
            removed++;
        }
    }
    closedir(dir);
    printf("clean: removed %d stale segment%s, kept %d in use or unreadable\n", removed, removed == 1 ? "" : "s",
           kept);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("%s", "missing command");
    const char *command = argv[1];
    if (!strcmp(command, "-h") || !strcmp(command, "--help") || !strcmp(command, "help")) {
        print_usage(stdout);
        return 0;
    }
    if (!strcmp(command, "--version")) {
        printf("expcontroller (gpuyield) %s\n", gy_version());
        return 0;
    }
    static const char *const commands[] = {"create", "serve", "status", "remove", "clean", "guard-reset", "guard-force"};
    bool known = false;
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        known = known || !strcmp(command, commands[i]);
    if (!known)
        return usage_error("unknown command '%s'", command);
    struct options opt;
    int rc = parse_options(argc, argv, command, &opt);
    if (rc)
        return rc;
    if (!strcmp(command, "create"))
        return cmd_create(&opt);
    if (!strcmp(command, "serve"))
        return cmd_serve(&opt);
    if (!strcmp(command, "status"))
        return cmd_status(&opt);
    if (!strcmp(command, "remove"))
        return cmd_remove(&opt);
    if (!strcmp(command, "guard-reset"))
        return cmd_guard_reset(&opt);
    if (!strcmp(command, "guard-force"))
        return cmd_guard_force(&opt);
    return cmd_clean();
}
