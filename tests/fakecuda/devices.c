/* The fake driver's GPUs: FAKECUDA_DEVICES=N physical devices (1 when unset, at most
 * FK_MAX_DEVICES), each with its own UUID and primary context. CUDA_VISIBLE_DEVICES (a list of
 * physical indices) selects and renumbers them as the real driver does: ordinal i is the i-th
 * listed device, and a UUID always names the same physical device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_internal.h"

static struct CUctx_st primary[FK_MAX_DEVICES];
static int visible[FK_MAX_DEVICES]; /* ordinal -> physical index */
static int nvisible = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void read_environment(void)
{
    const char *text = getenv("FAKECUDA_DEVICES");
    int physical = text && *text ? atoi(text) : 1;
    if (physical < 1 || physical > FK_MAX_DEVICES) {
        fprintf(stderr, "fakecuda: FAKECUDA_DEVICES=%s is not 1..%d\n", text, FK_MAX_DEVICES);
        abort();
    }
    for (int p = 0; p < FK_MAX_DEVICES; p++)
        primary[p] = (struct CUctx_st){.id = p == 0 ? 1 : 1000 + p, .device = p};
    const char *list = getenv("CUDA_VISIBLE_DEVICES");
    nvisible = 0;
    if (!list) {
        for (int p = 0; p < physical; p++)
            visible[nvisible++] = p;
        return;
    }
    for (const char *s = list; *s && nvisible < FK_MAX_DEVICES;) { /* stops at the first invalid entry */
        char *end;
        long p = strtol(s, &end, 10);
        if (end == s || p < 0 || p >= physical)
            break;
        visible[nvisible++] = (int)p;
        s = *end == ',' ? end + 1 : end;
    }
}

int fk_device_count(void)
{
    pthread_once(&once, read_environment);
    return nvisible;
}

bool fk_device_valid(CUdevice dev) { return dev >= 0 && dev < fk_device_count(); }

int fk_physical_device(CUdevice dev) { return fk_device_valid(dev) ? visible[dev] : -1; }

CUcontext fk_primary_ctx(CUdevice dev) { return fk_device_valid(dev) ? &primary[visible[dev]] : NULL; }

bool fk_is_primary(CUcontext ctx) { return ctx >= primary && ctx < primary + FK_MAX_DEVICES; }

/* UUID of physical device p: fixed bytes, then p (as nvidia-smi would show GPU-fa4ec0da-...). */
static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
    if (!uuid || !fk_device_valid(dev))
        return CUDA_ERROR_INVALID_VALUE;
    static const unsigned char base[16] = {0xfa, 0x4e, 0xc0, 0xda, 0x11, 0x22, 0x33, 0x44,
                                           0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0x00};
    memcpy(uuid->bytes, base, sizeof base);
    uuid->bytes[15] = (char)fk_physical_device(dev);
    return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return get_uuid(uuid, dev); }
#ifndef FK_OLD_DRIVER
FK_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return get_uuid(uuid, dev); }
#endif
