/* The real driver: its entry points looked up by exact name in the loaded libcuda, and the map
 * between them and our hooks (which hook stands for which real function). */
#ifndef GY_DRIVER_H
#define GY_DRIVER_H

#include <stdatomic.h>
#include <stdbool.h>

#include "cuda_abi.h"
#include "hooked_functions.h"

#define GY_EXPORT __attribute__((visibility("default")))

/* Driver functions we call, by exact exported name (hooked_functions.h). The hooked ones come
 * first, so that GY_FN_HOOKED_COUNT bounds them. */
#define GY_FN_ENUM_ROW(name, id, pfn) id,
enum gy_fn {
    GY_HOOKED_FUNCTIONS(GY_FN_ENUM_ROW)
    GY_FN_HOOKED_COUNT, /* the rest are only called */
    GY_FN_BEFORE_CALLED = GY_FN_HOOKED_COUNT - 1, /* the first called one takes GY_FN_HOOKED_COUNT */
    GY_CALLED_FUNCTIONS(GY_FN_ENUM_ROW)
    GY_FN_COUNT,
};
#undef GY_FN_ENUM_ROW

extern _Atomic(void *) gy_real_fns[GY_FN_COUNT];
extern _Atomic int gy_driver_bound;

/* Bind to the driver library that contains `known` (a pointer a lookup just returned), if that
 * library is libcuda. Returns true once bound (now or before). */
bool gy_driver_bind_from(void *known);
/* Bind to an already loaded libcuda.so.1 if not bound yet (for callers linked to libcuda). */
bool gy_driver_bind_loaded(void);

/* The real function `id` (NULL when the driver lacks it). */
static inline void *gy_real(enum gy_fn id)
{
    if (!atomic_load_explicit(&gy_driver_bound, memory_order_acquire))
        gy_driver_bind_loaded();
    return atomic_load_explicit(&gy_real_fns[id], memory_order_relaxed);
}

/* Our hook for the hooked name `name`, or NULL. */
void *gy_hook_by_name(const char *name);
/* Our hook for `name` if `fn` is the driver's function of exactly that name, else NULL. */
void *gy_hook_if_real(const char *name, void *fn);
/* Our hook standing for the real function pointer `fn`, or NULL when we do not hook it. */
void *gy_hook_for_real(void *fn);
/* Whether `name` is a base name we hook (cuLaunchKernel, cuGraphLaunch, ...), in any variant. */
bool gy_hooked_base_name(const char *name);

#endif
