/* Binding to the real driver. Real entry points are looked up by exact name on libcuda's own
 * handle, so a _ptsz hook always calls the real _ptsz function and a lookup never finds our
 * preloaded exports. Binding happens once, the first time a lookup hands out a libcuda pointer
 * (or a hook runs in a process linked to libcuda): a dladdr, a no-load dlopen, a few dlsyms.
 * It takes no lock: a fork while another thread held one left the child waiting for good on its
 * first hooked call (the holder does not exist in the child; test fork_while_binding). Threads
 * that bind at once all fill the table from the first handle chosen, storing the same pointers. */
#include <dlfcn.h>
#include <string.h>

#include "driver.h"
#include "hook_functions.h"
#include "real_dlsym.h"

struct fn_name {
    const char *name;
    void *hook; /* NULL for functions we only call */
};

#define HOOKED_ROW(fn, id, pfn) [id] = {#fn, (void *)(fn)},
#define CALLED_ROW(fn, id, pfn) [id] = {#fn, NULL},
static const struct fn_name fn_names[GY_FN_COUNT] = {GY_HOOKED_FUNCTIONS(HOOKED_ROW) GY_CALLED_FUNCTIONS(CALLED_ROW)};

_Atomic(void *) gy_real_fns[GY_FN_COUNT];
_Atomic int gy_driver_bound;
static _Atomic(void *) chosen_handle; /* the first libcuda handle a binding thread offered */

static bool is_libcuda_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return strncmp(base, "libcuda.so", strlen("libcuda.so")) == 0;
}

static bool bind_handle(void *handle)
{
    if (!handle)
        return false;
    void *none = NULL;
    atomic_compare_exchange_strong(&chosen_handle, &none, handle);
    handle = atomic_load(&chosen_handle);
    gy_dlsym_fn real_dlsym = gy_real_dlsym();
    for (int i = 0; i < GY_FN_COUNT; i++)
        atomic_store_explicit(&gy_real_fns[i], real_dlsym(handle, fn_names[i].name), memory_order_relaxed);
    atomic_store_explicit(&gy_driver_bound, 1, memory_order_release);
    return true;
}

bool gy_driver_bind_from(void *known)
{
    if (atomic_load_explicit(&gy_driver_bound, memory_order_acquire))
        return true;
    Dl_info info;
    if (!known || !dladdr(known, &info) || !info.dli_fname || !is_libcuda_path(info.dli_fname))
        return false;
    return bind_handle(dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD));
}

bool gy_driver_bind_loaded(void)
{
    if (atomic_load_explicit(&gy_driver_bound, memory_order_acquire))
        return true;
    return bind_handle(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD));
}

void *gy_hook_by_name(const char *name)
{
    if (name[0] != 'c' || name[1] != 'u')
        return NULL;
    for (int i = 0; i < GY_FN_HOOKED_COUNT; i++)
        if (strcmp(fn_names[i].name, name) == 0)
            return fn_names[i].hook;
    return NULL;
}

void *gy_hook_if_real(const char *name, void *fn)
{
    if (!fn || name[0] != 'c' || name[1] != 'u')
        return NULL;
    for (int i = 0; i < GY_FN_HOOKED_COUNT; i++)
        if (strcmp(fn_names[i].name, name) == 0)
            return gy_real_fns[i] == fn ? fn_names[i].hook : NULL;
    return NULL;
}

void *gy_hook_for_real(void *fn)
{
    if (!fn)
        return NULL;
    for (int i = 0; i < GY_FN_HOOKED_COUNT; i++)
        if (gy_real_fns[i] == fn)
            return fn_names[i].hook;
    return NULL;
}

bool gy_hooked_base_name(const char *name)
{
    for (int i = 0; i < GY_FN_HOOKED_COUNT; i++) {
        size_t len = strlen(name);
        if (strncmp(fn_names[i].name, name, len) == 0 &&
            (fn_names[i].name[len] == '\0' || fn_names[i].name[len] == '_'))
            return true;
    }
    return false;
}
