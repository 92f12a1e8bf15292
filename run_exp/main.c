/* run_exp: run one experiment file (the reference JSON format) end to end.
 *   run_exp -f CONFIG [--out DIR] [--dry-run] [--nsys [--nsys-path P]] [--simulate] [--shm NAME]
 *   run_exp --layout-compat DIR   (the drop-in for the original experiment's harness)
 * Validates everything first, creates the experiment's segment, starts one worker per model,
 * releases them together, stops them after exp_dur, and writes per-job CSVs, logs,
 * models_pid.json and summary.json. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "gpu_detect.h"
#include "gpuyield.h"
#include "guarded.h"
#include "launch.h"
#include "layout_compat.h"
#include "models.h"
#include "mps_daemon.h"
#include "option_text.h"
#include "results.h"
#include "supervise.h"

struct options {
    const char *config, *out, *shm, *python, *nsys_path;
    bool dry_run, nsys, simulate;
    bool mps;             /* --mps: start an MPS daemon for the run */
    const char *mps_pipe; /* --mps-pipe DIR: join the daemon serving DIR */
    const char *policy;   /* --policy */
    double guard_p50, guard_p99; /* --guard-p50, --guard-p99; < 0: not given */
    bool guard_depth;            /* --guard-depth */
    double ready_timeout, min_jobs_timeout, stop_timeout;
    int min_jobs;
};

/* The --policy lines of the help, one per row of the policy table (policies.h). */
static void print_policy_help(FILE *to)
{
    char choices[128];
    fprintf(to, "  --policy %-15s default: " GY_POLICY_DEFAULT_TEXT "\n",
            gy_policy_choices(choices, sizeof choices, "|", "|"));
    for (int i = 0; i < GY_POLICY_COUNT; i++)
        fprintf(to, "%27s%s: %s\n", "", gy_policy_name((enum gy_policy)i), gy_policy_what((enum gy_policy)i));
    fprintf(to, "  --guard-p50 F, --guard-p99 F\n"
                "                           guarded: keep an arm while the HP's job p50 / p99 stay within 1+F\n"
                "                           of stop's (fractions 0..1; defaults %g and %g; file keys \"guard_p50\",\n"
                "                           \"guard_p99\")\n"
                "  --guard-depth            guarded: also learn how much work (time:US) lower models may queue\n"
                "                           between HP jobs (1000-4000 us; file key \"guard_depth\": true)\n",
            GY_GUARD_DEFAULT_EPS_P50, GY_GUARD_DEFAULT_EPS_P99);
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: run_exp -f CONFIG [options]\n"
            "  -f, --file CONFIG        the experiment file (models[], exp_dur, device_id)\n"
            "  --out DIR                write every model's outputs to DIR instead of its output_file_path\n"
            "  --dry-run                validate, then print each worker's command, environment and mode\n"
            "  --nsys                   run under Nsight Systems (cuda,nvtx); report + sqlite next to the logs\n"
            "  --nsys-path PATH         the nsys program (default: nsys on PATH)\n"
            "  --simulate               no GPU needed: a stand-in worker on a simulated GPU (fake driver)\n"
            "  --shm NAME               join an existing segment instead of creating one\n"
            "  --mps                    run the workers under an MPS daemon started for this run (pipes and\n"
            "                           log in OUTDIR/mps, quit at the end); also the file's \"mps\": true\n"
            "  --mps-pipe DIR           run them under the MPS daemon already serving DIR (left running)\n");
    print_policy_help(to);
    fprintf(to,
            "  --python PATH            the worker's interpreter (default: $GPUYIELD_PYTHON or python3)\n"
            "  --min-jobs N             jobs each worker runs at least (default 10)\n"
            "  --min-jobs-timeout S     how long past exp_dur to wait for them (default 120)\n"
            "  --ready-timeout S        bound on loading and warm-up (default 600)\n"
            "  --stop-timeout S         bound from the stop request to the worker's exit (default 30)\n"
            "  --version                print the gpuyield version\n"
            "or: run_exp --layout-compat DIR\n"
            "  place libgeek.so and libcuinterpose*.so where the original experiment's harness, checked out\n"
            "  at DIR/gpu-tester, loads them (DIR/pytcppexp, DIR/intercept-lib/build/lib)\n");
}

/* A usage error: one line, what is wrong and where the options are (the whole help buried the
 * reason); the caller exits 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("run_exp: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (run_exp --help lists the options)\n", stderr);
    return -1;
}

static int parse_seconds(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !(v > 0 && v <= 86400)) {
        return usage_error("%s '%s' is not a number of seconds in (0, 86400]", opt, s);
    }
    *out = v;
    return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
    enum { O_OUT = 256, O_DRY, O_NSYS, O_NSYS_PATH, O_SIM, O_SHM, O_PY, O_MIN, O_MINT, O_READY, O_STOP, O_MPS,
           O_MPS_PIPE, O_POLICY, O_VERSION, O_GUARD_P50, O_GUARD_P99, O_GUARD_DEPTH };
    static const struct option longopts[] = {
        {"file", required_argument, 0, 'f'},       {"out", required_argument, 0, O_OUT},
        {"dry-run", no_argument, 0, O_DRY},         {"nsys", no_argument, 0, O_NSYS},
        {"nsys-path", required_argument, 0, O_NSYS_PATH}, {"simulate", no_argument, 0, O_SIM},
        {"shm", required_argument, 0, O_SHM},       {"python", required_argument, 0, O_PY},
        {"min-jobs", required_argument, 0, O_MIN},  {"min-jobs-timeout", required_argument, 0, O_MINT},
        {"ready-timeout", required_argument, 0, O_READY}, {"stop-timeout", required_argument, 0, O_STOP},
        {"mps", no_argument, 0, O_MPS},             {"mps-pipe", required_argument, 0, O_MPS_PIPE},
        {"policy", required_argument, 0, O_POLICY}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        {"guard-p50", required_argument, 0, O_GUARD_P50}, {"guard-p99", required_argument, 0, O_GUARD_P99},
        {"guard-depth", no_argument, 0, O_GUARD_DEPTH},
        {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->ready_timeout = 600;
    o->min_jobs_timeout = 120;
    o->stop_timeout = 30;
    o->min_jobs = 10;
    o->guard_p50 = o->guard_p99 = -1;
    o->python = getenv("GPUYIELD_PYTHON") && *getenv("GPUYIELD_PYTHON") ? getenv("GPUYIELD_PYTHON") : "python3";
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': o->config = optarg; break;
        case O_OUT:
            if (!*optarg) {
                return usage_error("--out is empty (an unset variable?); give a directory, or leave --out out to use "
                                   "each model's output_file_path");
            }
            o->out = optarg;
            break;
        case O_DRY: o->dry_run = true; break;
        case O_NSYS: o->nsys = true; break;
        case O_NSYS_PATH: o->nsys_path = optarg, o->nsys = true; break;
        case O_SIM: o->simulate = true; break;
        case O_SHM: o->shm = optarg; break;
        case O_PY: o->python = optarg; break;
        case O_MPS: o->mps = true; break;
        case O_MPS_PIPE: o->mps_pipe = optarg; break;
        case O_POLICY: {
            enum gy_policy policy;
            if (gy_policy_parse(optarg, &policy)) {
                char choices[128];
                return usage_error("--policy '%s' must be %s", optarg,
                                   gy_policy_choices(choices, sizeof choices, ", ", " or "));
            }
            o->policy = optarg;
            break;
        }
        case O_GUARD_DEPTH:
            o->guard_depth = true;
            break;
        case O_GUARD_P50:
        case O_GUARD_P99:
            if (gy_guard_parse_eps(optarg, c == O_GUARD_P50 ? &o->guard_p50 : &o->guard_p99)) {
                return usage_error("%s '%s' must be a fraction 0..1 (0.02: the HP's job may grow 2 %% over stop's)",
                                   c == O_GUARD_P50 ? "--guard-p50" : "--guard-p99", optarg);
            }
            break;
        case O_MIN: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 1000000) {
                return usage_error("--min-jobs '%s' must be an integer 1..1000000", optarg);
            }
            o->min_jobs = (int)v;
            break;
        }
        case O_MINT: if (parse_seconds("--min-jobs-timeout", optarg, &o->min_jobs_timeout)) return -1; break;
        case O_READY: if (parse_seconds("--ready-timeout", optarg, &o->ready_timeout)) return -1; break;
        case O_STOP: if (parse_seconds("--stop-timeout", optarg, &o->stop_timeout)) return -1; break;
        case 'h': usage(stdout); exit(0);
        case O_VERSION: printf("run_exp (gpuyield) %s\n", gy_version()); exit(0);
        case ':': return usage_error("option '%s' needs an argument", gy_option_text(argv, optind));
        default: return usage_error("unknown option '%s'", gy_option_text(argv, optind));
        }
    }
    if (optind < argc) {
        return usage_error("unexpected argument '%s'; the experiment file goes after -f", argv[optind]);
    }
    if (!o->config) {
        return usage_error("no experiment file: give one with -f CONFIG (e.g. -f exp_configs/input.json)");
    }
    if (o->nsys && o->simulate) {
        return usage_error("--nsys and --simulate do not go together: Nsight Systems needs a real GPU");
    }
    if (o->mps && o->mps_pipe) {
        return usage_error("--mps starts a daemon and --mps-pipe joins one: give one of them");
    }
    return 0;
}

static bool file_exists(const char *path) { return access(path, F_OK) == 0; }

/* The build outputs the workers need. Errors for a real run; warnings for --dry-run. */
static int check_install(const struct exp_config *cfg, const struct install *in, const struct options *o)
{
    int problems = 0;
    const char *level = o->dry_run ? "warning" : "error";
    bool any_control = false;
    for (int i = 0; i < cfg->nmodels; i++)
        any_control = any_control || cfg->models[i].control;
    if (any_control && !file_exists(in->hooks_lib)) {
        fprintf(stderr, "run_exp: %s: the hooks library %s is missing (models with control: true need it); build "
                        "it with ./make.sh\n", level, in->hooks_lib);
        problems++;
    }
    if (o->simulate) {
        char lib[PATH_MAX + 16];
        snprintf(lib, sizeof lib, "%s/libcuda.so.1", in->fakecuda_dir);
        if (!file_exists(in->standin) || !file_exists(lib)) {
            fprintf(stderr, "run_exp: %s: --simulate needs %s and %s; build them with ./make.sh\n", level, in->standin,
                    lib);
            problems++;
        }
    } else if (!file_exists(in->python_dir)) {
        fprintf(stderr, "run_exp: %s: the gpuyield Python package is not built (%s is missing); build it with "
                        "./make.sh\n", level, in->python_dir);
        problems++;
    }
    return o->dry_run ? 0 : problems;
}

static int find_nsys(const struct options *o, char *out, size_t len)
{
    if (o->nsys_path) {
        if (access(o->nsys_path, X_OK) != 0) {
            fprintf(stderr, "run_exp: error: --nsys-path %s is not an executable program: %s\n", o->nsys_path,
                    strerror(errno));
            return -1;
        }
        snprintf(out, len, "%s", o->nsys_path);
        return 0;
    }
    const char *path = getenv("PATH");
    char dirs[8192];
    snprintf(dirs, sizeof dirs, "%s", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, len, "%s/nsys", d);
        if (access(out, X_OK) == 0)
            return 0;
    }
    fprintf(stderr, "run_exp: error: --nsys: Nsight Systems (nsys) is not on PATH; install it, or point to it with "
                    "--nsys-path (it often lies under /opt/nvidia/nsight-systems/*/bin or "
                    "/opt/nvidia/nsight-compute/*/host/target-linux-x64)\n");
    return -1;
}

static int wait_child(pid_t pid)
{
    int status;
    pid_t r;
    bool forwarded = false;
    for (;;) {
        r = waitpid(pid, &status, 0);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            return -1;
        if (supervise_interrupted() && !forwarded) {
            kill(pid, SIGINT); /* nsys stops its application and still writes the report */
            forwarded = true;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run_program(char *const argv[])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, "run_exp: error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return wait_child(pid);
}

/* --nsys: run this same command (without --nsys) under nsys profile, then export sqlite. */
static int run_under_nsys(int argc, char **argv, const struct exp_config *cfg, const char *nsys)
{
    char self[PATH_MAX], report[PATH_MAX + 32], rep_file[PATH_MAX + 48], sqlite[PATH_MAX + 48];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    if (config_make_output_dirs(cfg) != 0)
        return 1;
    snprintf(report, sizeof report, "%s/nsight_report", cfg->models[0].out_dir);
    snprintf(rep_file, sizeof rep_file, "%s.nsys-rep", report);
    snprintf(sqlite, sizeof sqlite, "%s.sqlite", report);
    char *cmd[64 + 16];
    int k = 0;
    cmd[k++] = (char *)nsys;
    cmd[k++] = "profile";
    cmd[k++] = "-t";
    cmd[k++] = "cuda,nvtx";
    cmd[k++] = "-s";
    cmd[k++] = "none";
    cmd[k++] = "--cpuctxsw=none";
    cmd[k++] = "-o";
    cmd[k++] = report;
    cmd[k++] = "-f";
    cmd[k++] = "true";
    cmd[k++] = self;
    for (int i = 1; i < argc && k < 64 + 14; i++) {
        if (strcmp(argv[i], "--nsys") == 0)
            continue;
        if (strcmp(argv[i], "--nsys-path") == 0) {
            i++;
            continue;
        }
        if (strncmp(argv[i], "--nsys-path=", 12) == 0)
            continue;
        cmd[k++] = argv[i];
    }
    cmd[k] = NULL;
    printf("run_exp: profiling with Nsight Systems: report %s\n", rep_file);
    supervise_install_signals();
    int rc = run_program(cmd);
    if (!file_exists(rep_file)) {
        fprintf(stderr, "run_exp: error: nsys left no report %s (if only a .qdstrm file is there, its importer "
                        "lacks libraries such as libdw.so.1/libelf.so.1: add them to LD_LIBRARY_PATH)\n", rep_file);
        return rc ? rc : 1;
    }
    char *export_cmd[] = {(char *)nsys, "export", "--type", "sqlite", "-f", "true", "-o", sqlite, rep_file, NULL};
    if (run_program(export_cmd) != 0) {
        fprintf(stderr, "run_exp: error: `nsys export` failed; the report %s is still there\n", rep_file);
        return rc ? rc : 1;
    }
    printf("run_exp: Nsight Systems report %s, sqlite %s\n", rep_file, sqlite);
    return rc;
}

static void print_dry_run(const struct exp_config *cfg, struct launch *launches, const char *segment, bool created,
                          const struct options *o, int gpu_count, const char *policy, const char *mps_pipe_dir)
{
    printf("run_exp: dry run of %s: nothing is started\n", cfg->path);
    if (o->simulate)
        printf("SIMULATED: stand-in workers on the fake GPU driver (figures would not be a real GPU's)\n");
    printf("segment: %s (%s)\n", segment, created ? "created at start, removed at the end" : "joined, left in place");
    if (!mps_pipe_dir)
        printf("policy: %s; no MPS\n", policy);
    else
        printf("policy: %s; MPS: %s %s\n", policy, o->mps_pipe ? "would join the daemon at" : "would start a daemon, pipes in",
               mps_pipe_dir);
    printf("experiment: exp_dur %g s, device_id %d%s, %d worker%s, each at least %d jobs\n", cfg->exp_dur,
           cfg->device_id,
           o->simulate ? " (simulated: runs on fake GPUs, one per device_id the models use, from 0)"
           : gpu_count < 0 ? " (not checked: no GPU found here)" : "",
           cfg->nmodels,
           cfg->nmodels == 1 ? "" : "s", o->min_jobs);
    if (o->nsys)
        printf("nsys: the experiment runs under `nsys profile -t cuda,nvtx -s none --cpuctxsw=none`, report in %s\n",
               cfg->models[0].out_dir);
    for (int i = 0; i < cfg->nmodels; i++) {
        const struct exp_model *m = &cfg->models[i];
        const struct known_model *km = model_find(m->model_name);
        char cmd[8192];
        launch_format_command(&launches[i], cmd, sizeof cmd);
        printf("worker %d '%s': %s (%s), priority %d, mode %s (%s)\n", i, m->output_file_name, m->model_name,
               km ? model_task_name(km->task) : "?", m->priority, m->mode, launches[i].mode_desc);
        int fake_gpus;
        int fake = launch_simulated_device(cfg, m->device_id, &fake_gpus);
        if (o->simulate)
            printf("  gpu: device_id %d, simulated as fake GPU %d of %d\n", m->device_id, fake, fake_gpus);
        else
            printf("  gpu: device_id %d\n", m->device_id);
        printf("  command: %s\n", cmd);
        for (int k = 0; k < launches[i].nenv; k++)
            printf("  %s %s\n", k == 0 ? "env:" : "    ", launches[i].env[k]);
        printf("  writes: %s, %s\n", m->csv_path, m->log_path);
        if (!m->model_weight || !m->model_weight[0] || !m->weight_is_file)
            printf("  weights: random initialisation%s%s%s\n", m->model_weight && m->model_weight[0] ? " (" : "",
                   m->model_weight && m->model_weight[0] ? m->model_weight : "",
                   m->model_weight && m->model_weight[0] ? " needs a download; give a local .pth file to load it)" : "");
        else
            printf("  weights: %s\n", m->model_weight);
    }
}

/* The run's own segment: exp<pid>, or where that name is taken (a crashed run's, or one planted
 * by another user who can write /dev/shm), exp<pid>-1, -2, ...; segment gets the name made. */
static int create_own_segment(const char *tag, char segment[GY_NAME_MAX], gy_shm *shm, gy_err *err)
{
    char name[GY_NAME_MAX], first[GY_NAME_MAX], attempt[64];
    snprintf(first, sizeof first, "%s", segment);
    for (int n = 0; n < 100; n++) {
        if (n == 0)
            snprintf(attempt, sizeof attempt, "%s", tag);
        else
            snprintf(attempt, sizeof attempt, "%s-%d", tag, n);
        if (gy_segment_name(attempt, name, err) != 0)
            return -1;
        if (gy_create(name, 0, shm, err) == 0) {
            if (n > 0)
                printf("run_exp: segment %s is taken (another run's, or another user's): using %s\n", first, name);
            snprintf(segment, GY_NAME_MAX, "%s", name);
            return 0;
        }
        if (err->code != EEXIST)
            return -1;
    }
    return -1; /* err says the last name was taken */
}

/* The simulated GPU's timeline file, made anew here (O_EXCL, never through a link) before any
 * worker maps it: a file planted at the name by another user (in a shared /tmp) is never used;
 * another name is. path holds the first name tried and gets the one made. */
static int create_fake_device(const char *tmpdir, char *path, size_t len)
{
    for (int n = 0; n < 100; n++) {
        if (n > 0)
            snprintf(path, len, "%s/gpuyield-sim-%u-%d-%d.dev", tmpdir, (unsigned)getuid(), (int)getpid(), n);
        int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            close(fd);
            return 0;
        }
        if (errno != EEXIST) {
            fprintf(stderr, "run_exp: error: cannot create the simulated GPU's file %s: %s; set TMPDIR to a "
                            "writable directory\n", path, strerror(errno));
            return -1;
        }
    }
    fprintf(stderr, "run_exp: error: cannot create the simulated GPU's file: %s and 99 other names are taken; "
                    "set TMPDIR to a directory of your own\n", path);
    return -1;
}

int main(int argc, char **argv)
{
    struct options o;
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        bool eq = strncmp(argv[i], "--layout-compat=", 16) == 0;
        if (!eq && strcmp(argv[i], "--layout-compat") != 0)
            continue;
        if (argc != (eq ? 2 : 3) || i != 1) {
            fprintf(stderr, "run_exp: error: --layout-compat takes one directory and no other option: run_exp "
                            "--layout-compat DIR\n");
            return 2;
        }
        return layout_compat_main(eq ? argv[1] + 16 : argv[2]);
    }
    if (parse_options(argc, argv, &o) != 0)
        return 2;
    static struct exp_config cfg;
    int errors = config_load(o.config, o.out, &cfg);
    if (errors) {
        fprintf(stderr, "run_exp: %d problem%s in %s: nothing was started\n", errors, errors == 1 ? "" : "s", o.config);
        config_free(&cfg);
        return 2;
    }
    int gpus = o.simulate ? -1 : gpu_count_detect(); /* the simulated GPU takes any device_id */
    struct install in;
    errors = config_check_environment(&cfg, gpus);
    if (install_locate(&in) != 0)
        errors++;
    else
        errors += check_install(&cfg, &in, &o);
    if (errors) {
        fprintf(stderr, "run_exp: %d problem%s: nothing was started\n", errors, errors == 1 ? "" : "s");
        config_free(&cfg);
        return 2;
    }
    if (!o.dry_run && !o.simulate && gpus < 0) {
        fprintf(stderr, "run_exp: no GPU found here (nvidia-smi is missing or lists none): add --simulate to run the "
                        "same experiment on a simulated GPU (stand-in workers, simulated figures)\n");
        config_free(&cfg);
        return 1;
    }
    char nsys[PATH_MAX];
    if (o.nsys && find_nsys(&o, nsys, sizeof nsys) != 0) {
        config_free(&cfg);
        return 2;
    }
    if (o.nsys && !o.dry_run) {
        int rc = run_under_nsys(argc, argv, &cfg, nsys);
        config_free(&cfg);
        /* The run under nsys got SIGINT whatever stopped us: our own signal's status. */
        return supervise_interrupted() ? supervise_signal_status() : rc;
    }

    /* MPS and the policy: flags win over the file; guarded by default where MPS runs. */
    bool use_mps = o.mps || o.mps_pipe || cfg.mps;
    if (use_mps && o.simulate) {
        fprintf(stderr, "run_exp: error: MPS needs a real GPU and --simulate runs without one: drop --mps/--mps-pipe "
                        "(or \"mps\" from %s) to simulate\n", o.config);
        config_free(&cfg);
        return 2;
    }
    enum gy_policy policy = gy_policy_default(use_mps);
    if (o.policy || cfg.policy) /* both checked against the table already */
        gy_policy_parse(o.policy ? o.policy : cfg.policy, &policy);
    const char *policy_text = gy_policy_name(policy);
    /* guarded's bound: flags win over the file's keys; either only with the policy guarded */
    double guard_p50 = o.guard_p50 >= 0 ? o.guard_p50 : cfg.guard_p50 >= 0 ? cfg.guard_p50 : GY_GUARD_DEFAULT_EPS_P50;
    double guard_p99 = o.guard_p99 >= 0 ? o.guard_p99 : cfg.guard_p99 >= 0 ? cfg.guard_p99 : GY_GUARD_DEFAULT_EPS_P99;
    if ((o.guard_p50 >= 0 || o.guard_p99 >= 0 || o.guard_depth) && policy != GY_POLICY_GUARDED) {
        usage_error("%s go with the policy guarded (--policy guarded or \"policy\": \"guarded\"), not %s",
                    o.guard_depth ? "--guard-depth, --guard-p50 and --guard-p99" : "--guard-p50 and --guard-p99",
                    policy_text);
        config_free(&cfg);
        return 2;
    }
    if ((policy == GY_POLICY_PARTITION || policy == GY_POLICY_GUARDED) && !use_mps)
        fprintf(stderr, "run_exp: warning: policy %s without MPS falls back to drain (processes time-slice, a "
                        "partition would not help): add --mps or \"mps\": true\n", policy_text);
    else if (gy_policy_wants_mps(policy) && !use_mps)
        fprintf(stderr, "run_exp: warning: policy %s without MPS: a job starts while lower work is still queued, "
                        "and the GPU time-slices between them; %s is meant for MPS (--mps)\n", policy_text, policy_text);
    char mps_dir[2 * PATH_MAX + 8], pipe_dir[2 * PATH_MAX + 16], log_dir[2 * PATH_MAX + 16];
    pipe_dir[0] = log_dir[0] = mps_dir[0] = '\0';
    if (o.mps_pipe) {
        snprintf(pipe_dir, sizeof pipe_dir, "%s", o.mps_pipe);
    } else if (use_mps) { /* absolute: the daemon and the workers must agree whatever their cwd */
        const char *od = cfg.models[0].out_dir;
        char cwd[PATH_MAX] = "";
        if (od[0] != '/' && !getcwd(cwd, sizeof cwd))
            cwd[0] = '\0';
        snprintf(mps_dir, sizeof mps_dir, "%s%s%s/mps", cwd, cwd[0] ? "/" : "", od);
        snprintf(pipe_dir, sizeof pipe_dir, "%s/pipe", mps_dir);
        snprintf(log_dir, sizeof log_dir, "%s/log", mps_dir);
    }
    int top_priority = 0;
    for (int i = 0; i < cfg.nmodels; i++)
        if (cfg.models[i].priority > top_priority)
            top_priority = cfg.models[i].priority;

    /* The segment: created under a tag unique to this run, or joined. */
    char segment[GY_NAME_MAX], tag[48];
    gy_err err;
    snprintf(tag, sizeof tag, "exp%d", (int)getpid());
    if (gy_segment_name(o.shm ? o.shm : tag, segment, &err) != 0) {
        usage_error("--shm: %s", err.msg);
        config_free(&cfg);
        return 2;
    }
    char fake_device[PATH_MAX], fake_log[PATH_MAX + 32];
    const char *tmpdir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(fake_device, sizeof fake_device, "%s/gpuyield-sim-%u-%d.dev", tmpdir, (unsigned)getuid(), (int)getpid());
    snprintf(fake_log, sizeof fake_log, "%s/simulated_kernels.log", cfg.models[0].out_dir);
    int rc = 0;
    static struct launch launches[EXP_MAX_MODELS];
    gy_shm shm;
    bool have_shm = false, have_device = false;
    if (!o.dry_run) {
        supervise_install_signals();
        /* Made before the workers' commands, which name them: a name already taken (another run's,
         * or planted by another user) gives way to another one. */
        if (o.shm ? gy_open(segment, &shm, &err) : create_own_segment(tag, segment, &shm, &err)) {
            fprintf(stderr, "run_exp: error: %s\n", err.msg);
            rc = 1;
            goto out;
        }
        have_shm = true;
        if (o.simulate && create_fake_device(tmpdir, fake_device, sizeof fake_device) != 0) {
            rc = 1;
            goto out;
        }
        have_device = o.simulate;
    }
    struct launch_settings ls = {.python = o.python, .segment = segment, .simulate = o.simulate,
                                 .fake_device_file = fake_device, .fake_log = fake_log,
                                 .mps_pipe_dir = use_mps ? pipe_dir : NULL, .mps_log_dir = log_dir[0] ? log_dir : NULL,
                                 .mps_top_priority = gy_policy_wants_mps(policy) ? top_priority : -1};
    for (int i = 0; i < cfg.nmodels; i++) {
        if (launch_build(&cfg, &cfg.models[i], &in, &ls, &launches[i]) != 0) {
            fprintf(stderr, "run_exp: error: cannot make the command of models[%d] (out of memory, or too many "
                            "arguments or variables)\n", i);
            rc = 1;
            goto out;
        }
    }
    if (o.dry_run) {
        print_dry_run(&cfg, launches, segment, !o.shm, &o, gpus, policy_text, use_mps ? pipe_dir : NULL);
        goto out;
    }
    /* After the segment, so that a segment that cannot be made leaves no empty directories. */
    if (config_make_output_dirs(&cfg) != 0) {
        rc = 1;
        goto out;
    }
    /* MPS before any worker: a worker that finds no daemon would run without it, unseen. */
    gy_mps mps = {0};
    if (use_mps && (o.mps_pipe ? gy_mps_join(&mps, pipe_dir, &err) : gy_mps_start(&mps, mps_dir, &err))) {
        fprintf(stderr, "run_exp: error: %s\n", err.msg);
        /* gy_mps_start removed what it made (relative to the directories it verified). */
        for (int i = 0; i < cfg.nmodels; i++)
            rmdir(cfg.models[i].out_dir);
        rc = 1;
        goto out;
    }
    if (!o.shm)
        gy_set_policy(&shm, policy, use_mps);
    if (!o.shm && policy == GY_POLICY_GUARDED &&
        (gy_guarded_configure(&shm, guard_p50, guard_p99, GY_GUARD_DEFAULT_STOP_SHARE, 0, &err) ||
         gy_guarded_set_depth(&shm, o.guard_depth || cfg.guard_depth, &err)))
        fprintf(stderr, "run_exp: warning: %s\n", err.msg); /* in range: checked above */
    if (use_mps)
        printf("run_exp: MPS daemon %s %s; policy %s\n", mps.started ? "started, pipes in" : "joined at", mps.pipe_dir,
               policy_text);
    /* The workers are told the directories the daemon got: as walked, links on the way resolved. */
    bool launches_ok = true;
    if (use_mps && !o.mps_pipe && (strcmp(mps.pipe_dir, pipe_dir) || strcmp(mps.log_dir, log_dir))) {
        snprintf(pipe_dir, sizeof pipe_dir, "%s", mps.pipe_dir);
        snprintf(log_dir, sizeof log_dir, "%s", mps.log_dir);
        for (int i = 0; i < cfg.nmodels; i++) {
            launch_free(&launches[i]);
            if (launches_ok && launch_build(&cfg, &cfg.models[i], &in, &ls, &launches[i]) != 0) {
                fprintf(stderr, "run_exp: error: the command of models[%d] is too long\n", i);
                launches_ok = false;
            }
        }
    }
    if (o.simulate) {
        unlink(fake_log);
        printf("run_exp: SIMULATED run: stand-in workers on the fake GPU driver; the figures are not a real GPU's\n");
    }
    struct supervise_options so = {.ready_timeout_s = o.ready_timeout, .min_jobs_timeout_s = o.min_jobs_timeout,
                                   .stop_timeout_s = o.stop_timeout, .min_jobs = o.min_jobs, .shm = &shm};
    static struct worker_result results[EXP_MAX_MODELS];
    enum run_outcome outcome = RUN_START_FAILED;
    if (!launches_ok)
        rc = 1;
    else if (!supervise_interrupted())
        outcome = supervise_run(&cfg, launches, &so, results);
    else
        outcome = RUN_INTERRUPTED;
    struct run_info info = {.segment = segment, .simulated = o.simulate, .outcome = outcome,
                            .fake_log = o.simulate ? fake_log : NULL, .policy = policy_text, .mps = use_mps};
    if (results_write(&cfg, results, &info) != 0)
        rc = 1;
    if (gy_mps_stop(&mps, 10, &err) != 0) {
        fprintf(stderr, "run_exp: error: %s\n", err.msg);
        rc = 1;
    } else if (mps.daemon_pid && use_mps && !o.mps_pipe) {
        printf("run_exp: MPS daemon quit\n");
    }
    gy_close(&shm);
    have_shm = false;
    if (!o.shm && gy_remove(segment, &err) != 0)
        fprintf(stderr, "run_exp: warning: %s\n", err.msg);
    switch (outcome) {
    case RUN_OK: break;
    case RUN_INTERRUPTED: rc = 130; break;
    default: rc = 1; break;
    }
    /* Stopped by a signal (even one that came after the workers had stopped): 128 + its number,
     * 130 for SIGINT and 143 for SIGTERM, as a shell reports a process that signal ended. */
    if (supervise_interrupted())
        rc = supervise_signal_status();
out:
    if (have_shm) { /* a run that stopped before its workers started */
        gy_close(&shm);
        if (!o.shm)
            gy_remove(segment, NULL);
    }
    if (have_device)
        unlink(fake_device);
    for (int i = 0; i < cfg.nmodels; i++)
        launch_free(&launches[i]);
    config_free(&cfg);
    return rc;
}
