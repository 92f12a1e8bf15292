/* With next_second.c: proves that dlsym(RTLD_NEXT, ...) through our dlsym hook still searches
 * after the *caller* (this library), not after libgpuyield. Both define gy_next_probe. */
#include <dlfcn.h>

int gy_next_probe(void);
int gy_next_call(void);

int gy_next_probe(void) { return 1; }

/* The definition after this library: next_second's (2). 1 would mean the search started before us. */
int gy_next_call(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "gy_next_probe");
    return next ? next() : -1;
}
