/* Finding the real dlsym. glibc >= 2.34 hides __libc_dlsym and _dl_sym, and calling dlsym by
 * name from here would reach our own hook; dlvsym with an explicit version skips both. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "stderr_line.h"
#include "real_dlsym.h"

static _Atomic(gy_dlsym_fn) real;

__attribute__((no_sanitize_address, no_sanitize_undefined, no_sanitize_thread)) gy_dlsym_fn gy_real_dlsym(void)
{
    gy_dlsym_fn fn = atomic_load_explicit(&real, memory_order_acquire);
    if (fn)
        return fn;
    fn = (gy_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!fn)
        fn = (gy_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (!fn) {
        gy_die("gpuyield: cannot find the C library's dlsym (tried versions GLIBC_2.34 and GLIBC_2.2.5): this "
               "platform is not supported; unset LD_PRELOAD");
    }
    atomic_store_explicit(&real, fn, memory_order_release); /* every racer stores the same value */
    return fn;
}
