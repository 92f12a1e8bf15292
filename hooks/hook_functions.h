/* Every exported hook, declared from its row of hooked_functions.h with the signature type of
 * cuda_abi.h: a hook defined with other parameters does not compile. The exported dynamic symbol
 * list of the library is exactly these plus dlsym (exports.map.in). */
#ifndef GY_HOOK_FUNCTIONS_H
#define GY_HOOK_FUNCTIONS_H

#include "cuda_abi.h"
#include "driver.h"
#include "hooked_functions.h"

#define GY_DECLARE_HOOK(name, id, pfn) GY_EXPORT __typeof__(*(pfn)0) name;
GY_HOOKED_FUNCTIONS(GY_DECLARE_HOOK)
#undef GY_DECLARE_HOOK

/* The parameters of cuLaunchKernel and cuLaunchCooperativeKernel up to the stream, for the
 * launch hooks' definitions. */
#define GY_LAUNCH_ARGS                                                                                 \
    gy_cu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,    \
        unsigned shmem, gy_cu_stream stream

#endif
