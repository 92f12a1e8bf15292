/* Which GPU a Python job gates: the `device` argument of seg.job() and seg.begin() resolved to a
 * device slot of the segment. None: the GPU of this thread's current CUDA context, or every GPU
 * when the process has no CUDA context (libcuda not loaded, or nothing current); "all": every
 * GPU; "GPU-<uuid>": that GPU; an int: that device ordinal of this process (as
 * CUDA_VISIBLE_DEVICES numbers them), which needs libcuda. */
#include "pyext.h"

#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <string.h>

typedef int (*pfn_init)(unsigned);
typedef int (*pfn_device_get_count)(int *);
typedef int (*pfn_ctx_get_current)(void **);
typedef int (*pfn_ctx_get_device)(int *);
typedef int (*pfn_device_get)(int *, int);
typedef int (*pfn_device_get_uuid)(uint8_t *, int);

/* libcuda.so.1 as the process has it loaded (NULL when it has none, for a default), or loaded now
 * when the caller names an ordinal. */
static void *driver(bool load)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib && load)
        lib = dlopen("libcuda.so.1", RTLD_NOW);
    return lib;
}

static int uuid_of(void *lib, int ordinal, uint8_t uuid[GY_UUID_BYTES])
{
    pfn_device_get_uuid get_uuid = (pfn_device_get_uuid)dlsym(lib, "cuDeviceGetUuid_v2");
    if (!get_uuid)
        get_uuid = (pfn_device_get_uuid)dlsym(lib, "cuDeviceGetUuid");
    return get_uuid ? get_uuid(uuid, ordinal) : -1;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (dashes optional) -> 16 bytes; -1 if malformed. */
static int parse_uuid(const char *text, uint8_t uuid[GY_UUID_BYTES])
{
    if (strncmp(text, "GPU-", 4) != 0)
        return -1;
    int n = 0;
    for (const char *p = text + 4; *p; p++) {
        if (*p == '-')
            continue;
        if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]) || n == GY_UUID_BYTES)
            return -1;
        char byte[3] = {p[0], p[1], 0};
        uuid[n++] = (uint8_t)strtoul(byte, NULL, 16);
        p++;
    }
    return n == GY_UUID_BYTES ? 0 : -1;
}

/* The UUIDs of the GPUs the CUDA driver reports to this process (as CUDA_VISIBLE_DEVICES leaves
 * them), asked once: a UUID is claimed in the segment's device table (16 slots, never freed) only
 * if the driver reports it, so a made-up or mistyped one cannot take a slot for good. */
#define KNOWN_MAX 64
static bool known_asked;
static int known_count;
static uint8_t known_uuids[KNOWN_MAX][GY_UUID_BYTES];

/* Fills uuids (up to KNOWN_MAX) with the driver's GPUs; returns their number, or -1 with why set
 * to a phrase when the driver cannot be asked. Runs without the GIL. */
static int enumerate_gpus(uint8_t uuids[KNOWN_MAX][GY_UUID_BYTES], const char **why)
{
    void *lib = driver(true);
    if (!lib) {
        *why = "libcuda.so.1 cannot be loaded (no NVIDIA driver here)";
        return -1;
    }
    pfn_init init = (pfn_init)dlsym(lib, "cuInit");
    pfn_device_get_count get_count = (pfn_device_get_count)dlsym(lib, "cuDeviceGetCount");
    pfn_device_get get = (pfn_device_get)dlsym(lib, "cuDeviceGet");
    int count = 0, n = 0;
    if (!init || !get_count || !get || init(0) != 0 || get_count(&count) != 0) {
        *why = "the CUDA driver does not initialize (cuInit or cuDeviceGetCount failed)";
        dlclose(lib);
        return -1;
    }
    for (int ordinal = 0; ordinal < count && n < KNOWN_MAX; ordinal++) {
        int dev;
        if (get(&dev, ordinal) == 0 && uuid_of(lib, dev, uuids[n]) == 0)
            n++;
    }
    dlclose(lib);
    return n;
}

/* 0 if the driver reports the GPU `uuid`; -1 with gpuyield.ArgumentError (one line) otherwise. */
static int reported(const char *text, const uint8_t uuid[GY_UUID_BYTES])
{
    if (!known_asked) {
        uint8_t found[KNOWN_MAX][GY_UUID_BYTES];
        const char *why = NULL;
        int n;
        Py_BEGIN_ALLOW_THREADS /* cuInit can take a while on a real driver */
        n = enumerate_gpus(found, &why);
        Py_END_ALLOW_THREADS
        if (n < 0) {
            gyp_raise(EINVAL, "device %s cannot be checked: %s; a GPU UUID must be one the driver reports (use "
                              "\"all\" or None here)",
                      text, why);
            return -1; /* not remembered: a later call asks again */
        }
        memcpy(known_uuids, found, sizeof found);
        known_count = n;
        known_asked = true;
    }
    for (int i = 0; i < known_count; i++)
        if (memcmp(known_uuids[i], uuid, GY_UUID_BYTES) == 0)
            return 0;
    gyp_raise(EINVAL, "device %s is a GPU the CUDA driver does not report here (%d GPU%s visible, "
                      "CUDA_VISIBLE_DEVICES applies; nvidia-smi -L lists them)",
              text, known_count, known_count == 1 ? "" : "s");
    return -1;
}

static int claim(SegmentObject *seg, const uint8_t uuid[GY_UUID_BYTES], int *slot)
{
    gy_err err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gy_device_slot(&seg->shm, uuid, &err);
    Py_END_ALLOW_THREADS
    if (rc < 0 && err.code == ENOSPC) {
        /* The device table is full (GY_MAX_DEVICES GPUs): a job on a GPU past it gates every GPU,
         * as a job on no known device does (segment_layout.h), rather than fail. */
        *slot = GY_DEVICE_ALL;
        return 0;
    }
    if (rc < 0) {
        gyp_raise_err(&err);
        return -1;
    }
    *slot = rc;
    return 0;
}

/* The driver's current-context calls, looked up once libcuda is loaded (under the GIL); the
 * handle is kept: the process already has the library loaded, and it stays so. */
static void *current_lib;
static pfn_ctx_get_current get_current;
static pfn_ctx_get_device get_device;

/* How many objects the process has loaded so far (glibc's dlpi_adds, the same in every entry);
 * false where the loader does not say. */
static int read_adds(struct dl_phdr_info *info, size_t size, void *data)
{
    if (size < offsetof(struct dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
        return -1;
    *(unsigned long long *)data = info->dlpi_adds;
    return 1; /* the first entry is enough */
}

static bool objects_loaded(unsigned long long *n)
{
    return dl_iterate_phdr(read_adds, n) == 1;
}

static bool current_calls(void)
{
    /* A process without libcuda (one that marks jobs before CUDA starts, or never uses it) would
     * search the library path at every begin: dlopen's RTLD_NOLOAD looks on disk too, 50-100 us
     * a begin on the build machine (bench/results/begin_idle_cpu.md). Looked for again only once
     * the process has loaded something. */
    static bool absent;
    static unsigned long long loads_when_absent;
    if (current_lib)
        return get_current && get_device;
    unsigned long long loads = 0;
    bool counted = objects_loaded(&loads);
    if (absent && counted && loads == loads_when_absent)
        return false;
    current_lib = driver(false);
    if (!current_lib) {
        absent = counted;
        loads_when_absent = loads;
        return false;
    }
    get_current = (pfn_ctx_get_current)dlsym(current_lib, "cuCtxGetCurrent");
    get_device = (pfn_ctx_get_device)dlsym(current_lib, "cuCtxGetDevice");
    return get_current && get_device;
}

/* The slot of this thread's current context's GPU; every GPU (GY_DEVICE_ALL) when the process
 * has no CUDA context. The UUID is asked once per ordinal (see ordinal_slots). */
static int current_device(SegmentObject *seg, int *slot)
{
    void *ctx = NULL;
    int ordinal;
    if (!current_calls() || get_current(&ctx) != 0 || !ctx || get_device(&ordinal) != 0)
        return 0;
    bool cached = ordinal >= 0 && ordinal < GYP_ORDINAL_CACHE;
    if (cached && seg->ordinal_slots[ordinal]) {
        *slot = seg->ordinal_slots[ordinal] - 1;
        return 0;
    }
    uint8_t uuid[GY_UUID_BYTES];
    if (uuid_of(current_lib, ordinal, uuid) != 0)
        return 0;
    if (claim(seg, uuid, slot))
        return -1;
    if (cached)
        seg->ordinal_slots[ordinal] = *slot + 1;
    return 0;
}

int gyp_resolve_device(SegmentObject *seg, PyObject *device, int *slot)
{
    uint8_t uuid[GY_UUID_BYTES];
    *slot = GY_DEVICE_ALL;
    if (!device || device == Py_None)
        return current_device(seg, slot);
    if (PyUnicode_Check(device)) {
        const char *text = PyUnicode_AsUTF8(device);
        if (!text)
            return -1;
        if (strcmp(text, "all") == 0)
            return 0;
        if (parse_uuid(text, uuid)) {
            gyp_raise(EINVAL, "device %s is not a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as nvidia-smi -L "
                              "shows it), \"all\", an ordinal or None",
                      text);
            return -1;
        }
        if (reported(text, uuid))
            return -1;
        return claim(seg, uuid, slot);
    }
    if (PyLong_Check(device)) {
        long ordinal = PyLong_AsLong(device);
        if (ordinal == -1 && PyErr_Occurred())
            return -1;
        /* The same numbering as the current context's ordinal (CUDA_VISIBLE_DEVICES'), so the same
         * cache: the driver and the segment's mutex are asked once per ordinal, not at every begin. */
        bool cached = ordinal >= 0 && ordinal < GYP_ORDINAL_CACHE;
        if (cached && seg->ordinal_slots[ordinal]) {
            *slot = seg->ordinal_slots[ordinal] - 1;
            return 0;
        }
        void *lib = driver(true);
        pfn_init init = lib ? (pfn_init)dlsym(lib, "cuInit") : NULL;
        pfn_device_get get = lib ? (pfn_device_get)dlsym(lib, "cuDeviceGet") : NULL;
        int dev;
        bool known = init && get && ordinal >= 0 && ordinal <= 1024 && init(0) == 0 && get(&dev, (int)ordinal) == 0 &&
                     uuid_of(lib, dev, uuid) == 0;
        if (lib)
            dlclose(lib);
        if (!known) {
            gyp_raise(EINVAL, "device %ld is not a GPU ordinal the CUDA driver knows here (%s): use 0..N-1 as "
                              "CUDA_VISIBLE_DEVICES numbers them, a UUID, or \"all\"",
                      ordinal, lib ? "cuDeviceGet failed" : "libcuda.so.1 cannot be loaded");
            return -1;
        }
        if (claim(seg, uuid, slot))
            return -1;
        if (cached)
            seg->ordinal_slots[ordinal] = *slot + 1;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "device must be None, \"all\", a GPU UUID string or an int ordinal, not %s",
                 Py_TYPE(device)->tp_name);
    return -1;
}
