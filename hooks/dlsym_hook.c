/* The dlsym hook. The CUDA runtime finds cuGetProcAddress_v2, and PyTorch finds cuLaunchKernel,
 * with dlsym on libcuda's handle, which a preloaded export never answers. When the real answer
 * is the driver's function of exactly the asked name and we hook that name, hand out our hook.
 *
 * RTLD_NEXT is resolved relative to the caller's return address, so it goes straight to the
 * real dlsym as a tail call (our frame gone, the caller's return address intact). Nothing here
 * may be sanitizer-instrumented: sanitizer runtimes call dlsym before they are ready. */
#include <dlfcn.h>

#include "config.h"
#include "driver.h"
#include "real_dlsym.h"

static __thread int in_hook __attribute__((tls_model("initial-exec")));

static __attribute__((noinline, no_sanitize_address, no_sanitize_undefined, no_sanitize_thread)) void *lookup(void *handle,
                                                                                     const char *name)
{
    void *result = gy_real_dlsym()(handle, name);
    if (!result || !name || in_hook || name[0] != 'c' || name[1] != 'u' || !gy_hook_by_name(name))
        return result;
    in_hook = 1; /* binding calls dladdr/dlopen: never let them come back here */
    void *hook = gy_driver_bind_from(result) ? gy_hook_if_real(name, result) : NULL;
    if (hook) {
        gy_config(); /* a bad environment stops the process here, before any launch */
        result = hook;
    }
    in_hook = 0;
    return result;
}

GY_EXPORT __attribute__((no_sanitize_address, no_sanitize_undefined, no_sanitize_thread)) void *dlsym(void *handle, const char *name)
{
    if (handle == RTLD_NEXT)
        return gy_real_dlsym()(handle, name);
    return lookup(handle, name);
}
