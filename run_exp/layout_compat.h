/* run_exp --layout-compat DIR (run_exp/layout_compat.c). */
#ifndef RUN_EXP_LAYOUT_COMPAT_H
#define RUN_EXP_LAYOUT_COMPAT_H

/* Place libgeek.so and libcuinterpose*.so where the original harness at DIR/gpu-tester looks for
 * them; prints each path placed. Returns the exit status (0, 1 runtime error, 2 usage). */
int layout_compat_main(const char *dir);

#endif
