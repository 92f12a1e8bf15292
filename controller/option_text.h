/* The command-line option getopt stopped at, for the tools' one-line usage errors (run_exp,
 * nsight-parser). Internal to gpuyield (not installed). */
#ifndef GY_OPTION_TEXT_H
#define GY_OPTION_TEXT_H

/* A long option as written, a short one as -X (it may sit in a cluster such as -pZ, where
 * argv[ind - 1] is not it). ind: getopt's optind after the error. The text lives until the next call. */
const char *gy_option_text(char **argv, int ind);

#endif
