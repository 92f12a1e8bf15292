/* The original experiment's environment, for the library loaded under the original names.
 *
 * build/lib/libcuinterpose.so, libcuinterpose_sync.so and libcuinterpose_event.so are the same
 * library as libgpuyield.so (hard links). Loaded under one of those names (found at run time
 * with dladdr on one of our functions), the original harness's variables give the defaults:
 *   SUFFIX=S            -> GPUYIELD_SHM=compatS (the segment libgeek.so's calls use for S)
 *   ID=D                -> GPUYIELD_PRIORITY=D (one digit, 0..7)
 *   SYNC_KERNELS=N      -> GPUYIELD_MODE=sync:N   (libcuinterpose_sync.so only, where it is required)
 *   EVENT_GROUP_SIZE=N  -> GPUYIELD_MODE=event:N  (libcuinterpose_event.so only, where it is required)
 *   libcuinterpose.so   -> GPUYIELD_MODE=none
 * Each applies only where the GPUYIELD_* variable is unset. Under any other file name
 * (libgpuyield.so) these variables are ignored: ID and SUFFIX are common names. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat_tag.h"
#include "stderr_line.h"
#include "config.h"
#include "gpuyield.h"

static char compat_shm[GY_NAME_MAX];
static char compat_mode[48];

/* Which original name we were loaded under: "" when not one of them. */
static const char *library_flavour(const char **file)
{
    Dl_info info;
    *file = "?";
    if (!dladdr((void *)gy_compat_env, &info) || !info.dli_fname)
        return "";
    const char *base = strrchr(info.dli_fname, '/');
    base = base ? base + 1 : info.dli_fname;
    *file = base;
    if (strcmp(base, "libcuinterpose.so") == 0)
        return "plain";
    if (strcmp(base, "libcuinterpose_sync.so") == 0)
        return "sync";
    if (strcmp(base, "libcuinterpose_event.so") == 0)
        return "event";
    return "";
}

static unsigned long group_from(const char *var, const char *file)
{
    const char *value = getenv(var);
    if (!value)
        gy_die("gpuyield: %s is unset (pid %d, loaded as %s): set it to the number of kernels per %s "
                      "(1..1000000) as the original harness does, or set GPUYIELD_MODE",
                      var, (int)getpid(), file, strcmp(var, "SYNC_KERNELS") == 0 ? "synchronization point" : "event group");
    char *end;
    unsigned long n = 0;
    if (*value >= '0' && *value <= '9')
        n = strtoul(value, &end, 10);
    if (!(*value >= '0' && *value <= '9') || *end || n < 1 || n > 1000000)
        gy_die("gpuyield: %s=\"%s\" is invalid (pid %d, loaded as %s): use an integer 1..1000000 (kernels "
                      "per %s), or set GPUYIELD_MODE",
                      var, value, (int)getpid(), file,
                      strcmp(var, "SYNC_KERNELS") == 0 ? "synchronization point" : "event group");
    return n;
}

void gy_compat_env(const char **shm, const char **priority, const char **mode)
{
    const char *file;
    const char *flavour = library_flavour(&file);
    if (!*flavour)
        return;
    if (!*shm) {
        const char *suffix = getenv("SUFFIX");
        if (suffix) {
            if (gy_compat_tag(suffix, compat_shm, NULL))
                gy_die("gpuyield: SUFFIX=\"%.80s\" is invalid (pid %d, loaded as %s): the segment tag "
                              "\"compat\" + SUFFIX must be 1..40 characters from [A-Za-z0-9._-] (a uuid4 hex "
                              "suffix fits), or set GPUYIELD_SHM",
                              suffix, (int)getpid(), file);
            *shm = compat_shm;
        }
    }
    if (!*priority) {
        const char *id = getenv("ID");
        if (id) {
            if (!(id[0] >= '0' && id[0] <= '7' && id[1] == '\0'))
                gy_die("gpuyield: ID=\"%.80s\" is invalid (pid %d, loaded as %s): use one priority digit "
                              "0..7 (higher wins), or set GPUYIELD_PRIORITY",
                              id, (int)getpid(), file);
            *priority = id;
        }
    }
    if (!*mode) {
        if (strcmp(flavour, "sync") == 0)
            snprintf(compat_mode, sizeof compat_mode, "sync:%lu", group_from("SYNC_KERNELS", file));
        else if (strcmp(flavour, "event") == 0)
            snprintf(compat_mode, sizeof compat_mode, "event:%lu", group_from("EVENT_GROUP_SIZE", file));
        else
            snprintf(compat_mode, sizeof compat_mode, "none");
        *mode = compat_mode;
    }
}
