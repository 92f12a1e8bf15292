/* gpuyield-standin: the worker of `run_exp --simulate`. Same arguments, handshake and CSV as the
 * Python worker, but each job is a burst of kernels on whatever libcuda.so.1 the loader finds (the
 * fake driver of the tests under --simulate), with a cost derived from the model and image size.
 * It reaches the driver through dlopen/dlsym exactly as PyTorch does, so the hooks see it. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuyield.h"
#include "image.h"
#include "models.h"
#include "protocol.h"

typedef int CUresult;
typedef void *CUptr;
typedef CUresult (*fn_init)(unsigned);
typedef CUresult (*fn_device_get)(int *, int);
typedef CUresult (*fn_device_get_uuid)(uint8_t *, int);
typedef CUresult (*fn_ctx_retain)(CUptr *, int);
typedef CUresult (*fn_ctx_set)(CUptr);
typedef CUresult (*fn_module_load)(CUptr *, const void *);
typedef CUresult (*fn_get_function)(CUptr *, CUptr, const char *);
typedef CUresult (*fn_stream_create)(CUptr *, unsigned);
typedef CUresult (*fn_stream_sync)(CUptr);
typedef CUresult (*fn_launch)(CUptr, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUptr,
                              void **, void **);

struct driver {
    fn_launch launch;
    fn_stream_sync sync;
    CUptr function, stream;
    uint8_t uuid[GY_UUID_BYTES]; /* the GPU's, for the job's device slot */
};

struct args {
    const char *name, *model, *weights, *input, *csv;
    int resize_h, resize_w, batch, priority, device;
    double sleep_time;
};

static void die(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "gpuyield-standin: ");
    fprintf(stderr, fmt, a, b);
    fputc('\n', stderr);
    exit(1);
}

static void *need(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        die("the driver lacks %s%s: is LD_LIBRARY_PATH pointing at the fake driver (build/fakecuda)?", name, "");
    return p;
}

static void check(CUresult rc, const char *what)
{
    if (rc != 0) {
        char code[16];
        snprintf(code, sizeof code, "%d", rc);
        die("%s failed with CUDA error %s", what, code);
    }
}

static void driver_open(struct driver *d, const struct args *a, int kernel_us)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        die("cannot load libcuda.so.1: %s%s", dlerror(), "");
    int dev;
    CUptr ctx, module;
    check(((fn_init)need(lib, "cuInit"))(0), "cuInit");
    check(((fn_device_get)need(lib, "cuDeviceGet"))(&dev, a->device), "cuDeviceGet");
    check(((fn_device_get_uuid)need(lib, "cuDeviceGetUuid"))(d->uuid, dev), "cuDeviceGetUuid");
    check(((fn_ctx_retain)need(lib, "cuDevicePrimaryCtxRetain"))(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(((fn_ctx_set)need(lib, "cuCtxSetCurrent"))(ctx), "cuCtxSetCurrent");
    check(((fn_module_load)need(lib, "cuModuleLoadData"))(&module, "standin"), "cuModuleLoadData");
    char fname[32];
    snprintf(fname, sizeof fname, "spin_us:%d", kernel_us);
    check(((fn_get_function)need(lib, "cuModuleGetFunction"))(&d->function, module, fname), "cuModuleGetFunction");
    check(((fn_stream_create)need(lib, "cuStreamCreate"))(&d->stream, 0), "cuStreamCreate");
    d->launch = (fn_launch)need(lib, "cuLaunchKernel");
    d->sync = (fn_stream_sync)need(lib, "cuStreamSynchronize");
}

static void run_kernels(struct driver *d, int kernels)
{
    for (int k = 0; k < kernels; k++)
        check(d->launch(d->function, 1, 1, 1, 1, 1, 1, 0, d->stream, NULL, NULL), "cuLaunchKernel");
    check(d->sync(d->stream), "cuStreamSynchronize");
}

static int parse_int(const char *opt, const char *s, int min, int max)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < min || v > max)
        die("%s: bad value '%s'", opt, s);
    return (int)v;
}

static void parse_args(int argc, char **argv, struct args *a)
{
    static const struct option longopts[] = {
        {"name", required_argument, 0, 'n'},       {"model", required_argument, 0, 'm'},
        {"weights", required_argument, 0, 'w'},    {"input", required_argument, 0, 'i'},
        {"resize", required_argument, 0, 'r'},     {"batch-size", required_argument, 0, 'b'},
        {"sleep-time", required_argument, 0, 's'}, {"priority", required_argument, 0, 'p'},
        {"device-id", required_argument, 0, 'd'},  {"csv", required_argument, 0, 'c'},
        {"version", no_argument, 0, 'V'},          {0, 0, 0, 0}};
    memset(a, 0, sizeof *a);
    a->batch = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'n': a->name = optarg; break;
        case 'm': a->model = optarg; break;
        case 'w': a->weights = optarg; break;
        case 'i': a->input = optarg; break;
        case 'r':
            if (sscanf(optarg, "%dx%d", &a->resize_h, &a->resize_w) != 2 || a->resize_h <= 0 || a->resize_w <= 0)
                die("--resize: '%s' is not HEIGHTxWIDTH%s", optarg, "");
            break;
        case 'b': a->batch = parse_int("--batch-size", optarg, 1, 1024); break;
        case 's': a->sleep_time = strtod(optarg, NULL); break;
        case 'p': a->priority = parse_int("--priority", optarg, 0, GY_LEVELS - 1); break;
        case 'd': a->device = parse_int("--device-id", optarg, 0, 1023); break;
        case 'c': a->csv = optarg; break;
        case 'V': printf("gpuyield-standin (gpuyield) %s\n", gy_version()); exit(0);
        default: die("unknown option%s%s (it takes run_exp's worker arguments)", "", "");
        }
    }
    if (!a->model || !a->input || !a->csv)
        die("--model, --input and --csv are required%s%s", "", "");
}

int main(int argc, char **argv)
{
    struct args a;
    parse_args(argc, argv, &a);
    struct worker_link link;
    if (worker_link_open(&link) != 0)
        return 2;
    const struct known_model *km = model_find(a.model);
    if (!km)
        die("unknown model '%s'%s", a.model, "");
    int h = a.resize_h, w = a.resize_w;
    char why[200];
    if (!h && image_probe(a.input, &h, &w, why, sizeof why) != 0)
        die("input image %s: %s", a.input, why);
    int kernels, kernel_us;
    model_simulated_job(km, h, w, a.batch, &kernels, &kernel_us);
    fprintf(stderr, "gpuyield-standin: SIMULATED %s (%s) at %dx%d, batch %d: %d kernels of %d us a job%s\n", a.model,
            model_task_name(km->task), h, w, a.batch, kernels, kernel_us,
            a.weights ? " (weights ignored: nothing is computed)" : "");

    /* Jobs are marked only when run_exp put this worker under control (it then names the segment). */
    const char *segment = getenv("GPUYIELD_SHM");
    /* Under GPUYIELD_JOBS=auto the hook opens the jobs itself: marking them too would nest. */
    const char *jobs = getenv("GPUYIELD_JOBS");
    bool mark = a.priority > 0 && segment && *segment && !(jobs && strcmp(jobs, "auto") == 0);
    gy_shm shm = {.slot = -1};
    gy_err err;
    if (mark && (gy_open(segment, &shm, &err) != 0 || gy_register(&shm, a.priority, &err) != 0))
        die("cannot join the experiment's segment: %s%s", err.msg, "");

    struct driver d;
    driver_open(&d, &a, kernel_us);
    run_kernels(&d, kernels); /* warm-up, not recorded */
    /* A job stops lower work on this worker's GPU only (every GPU if the table is full). */
    int device = mark ? gy_device_slot(&shm, d.uuid, &err) : GY_DEVICE_ALL;
    if (device < 0)
        device = GY_DEVICE_ALL;

    int csv_fd = open(a.csv, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644); /* never via a link */
    FILE *csv = csv_fd >= 0 ? fdopen(csv_fd, "w") : NULL;
    if (!csv) {
        fprintf(stderr, "gpuyield-standin: cannot write %s: %s\n", a.csv, strerror(errno));
        return 1;
    }
    fputs(JOB_CSV_HEADER, csv);
    fflush(csv);
    worker_link_send(&link, "ready\n");
    if (!worker_link_wait_go(&link)) {
        fclose(csv);
        gy_close(&shm);
        return 0;
    }
    for (long job = 1;; job++) {
        struct job_row row = {.job = job, .drained = JOB_NOT_MARKED};
        row.start_ns = gy_now_ns();
        gy_job gj;
        if (mark) {
            if (gy_begin_on(&shm, a.priority, device, &gj, &err) != 0)
                die("cannot begin a job: %s%s", err.msg, "");
            row.drain_wait_ns = gj.wait_ns;
            row.drained = gj.corun ? JOB_CORUN : gj.drained ? JOB_DRAINED : JOB_DRAIN_TIMED_OUT;
        }
        run_kernels(&d, kernels);
        if (mark && gy_job_exit(&shm, &gj, &err) != 0)
            die("cannot end a job: %s%s", err.msg, "");
        row.end_ns = gy_now_ns();
        char line[256], msg[64];
        job_row_format(&row, line, sizeof line);
        /* One write per row: a reader (or a kill) never sees half of one. */
        fputs(line, csv);
        fflush(csv);
        snprintf(msg, sizeof msg, "job %ld %.3f\n", job, (double)(row.end_ns - row.start_ns) / 1e6);
        worker_link_send(&link, msg);
        int sleep_ms = (int)(a.sleep_time * 1000.0);
        if (worker_link_stop_requested(&link, sleep_ms))
            break;
    }
    fclose(csv);
    gy_close(&shm);
    return 0;
}
