/* nsight-parser: per-model kernel tables and a summary from an Nsight Systems report.
 *   nsight-parser REPORT [-p models_pid.json] -o OUTDIR [--nsys PATH]
 * REPORT: an SQLite export, an .nsys-rep (exported through nsys), or the CSV of
 * `nsys stats --report cuda_kern_exec_trace --format csv`. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuyield.h"
#include "inputs.h"
#include "model_list.h"
#include "models_pid.h"
#include "option_text.h"
#include "outputs.h"
#include "report.h"

enum input_kind { INPUT_SQLITE, INPUT_NSYS_REP, INPUT_CSV };

static void usage(FILE *out)
{
    fprintf(out,
            "usage: nsight-parser REPORT [-p models_pid.json] -o OUTDIR [--nsys PATH]\n"
            "  REPORT   an SQLite export (nsys export --type sqlite), an .nsys-rep (exported with nsys,\n"
            "           found on PATH or given with --nsys), or the CSV of\n"
            "           nsys stats --report cuda_kern_exec_trace --format csv\n"
            "  -p FILE  models_pid.json ([[name, pid], ...]): name each process after its model\n"
            "  -o DIR   output directory: <name>_<pid>.csv per model, summary.log, summary.json\n"
            "  --version  print the gpuyield version\n");
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* By content where it tells (SQLite's header), else by name (.nsys-rep), else CSV. */
static bool input_kind_of(const char *path, enum input_kind *kind)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "nsight-parser: %s: cannot open: %s\n", path, strerror(errno));
        return false;
    }
    char head[16] = {0};
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n == sizeof head && memcmp(head, "SQLite format 3", 16) == 0)
        *kind = INPUT_SQLITE;
    else if (ends_with(path, ".nsys-rep") || ends_with(path, ".qdrep"))
        *kind = INPUT_NSYS_REP;
    else
        *kind = INPUT_CSV;
    return true;
}

static void print_table(const struct np_report *report, const struct np_model_list *models, const char *outdir)
{
    printf("%-24s %8s %10s %16s\n", "model", "pid", "kernels", "kernel ns (sum)");
    for (size_t i = 0; i < models->count; i++) {
        const struct np_model *m = &models->models[i];
        int64_t total = 0;
        for (size_t k = 0; k < m->kernel_count; k++)
            total += report->kernels[m->first_kernel + k].exec_end - report->kernels[m->first_kernel + k].exec_start;
        printf("%-24s %8u %10zu %16lld\n", m->name, m->pid, m->kernel_count, (long long)total);
    }
    printf("nsight-parser: wrote %zu model table(s), summary.log and summary.json to %s\n", models->count, outdir);
}

/* A usage error: one line, what is wrong and where the options are (the whole help buried the
 * reason); exit status 2. */
static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "nsight-parser: ");
    fprintf(stderr, what, arg);
    fprintf(stderr, " (nsight-parser --help lists the options)\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *pid_file = NULL, *outdir = NULL, *nsys = NULL;
    static const struct option long_options[] = {
        {"nsys", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {0, 0, 0, 0},
    };
    int opt;
    opterr = 0; /* our own one line instead of getopt's */
    while ((opt = getopt_long(argc, argv, ":p:o:h", long_options, NULL)) != -1) {
        switch (opt) {
        case 'p': pid_file = optarg; break;
        case 'o': outdir = optarg; break;
        case 'n': nsys = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("nsight-parser (gpuyield) %s\n", gy_version()); return 0;
        case ':': return usage_error("option '%s' needs an argument", gy_option_text(argv, optind));
        default: return usage_error("unknown option '%s'", gy_option_text(argv, optind));
        }
    }
    if (optind > argc - 1)
        return usage_error("%s", "missing REPORT: the Nsight Systems report to read");
    if (optind < argc - 1)
        return usage_error("more than one REPORT: '%s' is one too many", argv[optind + 1]);
    if (!outdir)
        return usage_error("%s", "missing -o OUTDIR: where the tables go");
    const char *input = argv[optind];
    enum input_kind kind;
    if (!input_kind_of(input, &kind) || !np_check_outdir(outdir))
        return 1;

    struct np_models_pid pids = {0};
    if (pid_file && !np_models_pid_load(pid_file, &pids))
        return 1;

    struct np_report report;
    np_report_init(&report);
    char *export_path = NULL, *export_dir = NULL;
    bool ok;
    switch (kind) {
    case INPUT_SQLITE: ok = np_read_sqlite(input, &report); break;
    case INPUT_CSV: ok = np_read_kern_exec_csv(input, &report); break;
    case INPUT_NSYS_REP:
        ok = np_export_nsys_rep(input, nsys, &export_path, &export_dir) && np_read_sqlite(export_path, &report);
        np_remove_export(export_path, export_dir);
        break;
    default: ok = false;
    }
    if (ok && report.kernel_count == 0) {
        fprintf(stderr, "nsight-parser: %s: the report has no kernels: nothing to summarise (was the profiled "
                        "program's CUDA traced? nsys profile -t cuda,nvtx ...)\n", input);
        ok = false;
    }
    struct np_model_list models = {0};
    if (ok) {
        np_report_sort_kernels(&report);
        ok = np_model_list_build(&report, pid_file ? &pids : NULL, &models) &&
             np_write_outputs(&report, &models, outdir, input);
    }
    if (ok)
        print_table(&report, &models, outdir);
    np_model_list_free(&models);
    np_report_free(&report);
    np_models_pid_free(&pids);
    return ok ? 0 : 1;
}
