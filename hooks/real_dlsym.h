/* The C library's dlsym, found without glibc-private symbols. */
#ifndef GY_REAL_DLSYM_H
#define GY_REAL_DLSYM_H

typedef void *(*gy_dlsym_fn)(void *, const char *);

/* dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"), else "GLIBC_2.2.5"; never our own exported dlsym.
 * Safe before sanitizer runtimes finish starting (no instrumented memory access). */
gy_dlsym_fn gy_real_dlsym(void);

#endif
