/* The library after next_first.c in load order: its gy_next_probe is RTLD_NEXT's right answer. */
int gy_next_probe(void);

int gy_next_probe(void) { return 2; }
