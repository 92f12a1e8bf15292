/* See option_text.h. */
#include "option_text.h"

#include <getopt.h>
#include <string.h>

const char *gy_option_text(char **argv, int ind)
{
    static char short_opt[3];
    const char *arg = argv[ind - 1];
    if (strncmp(arg, "--", 2) == 0 || optopt <= 0 || optopt > 127)
        return arg;
    short_opt[0] = '-', short_opt[1] = (char)optopt, short_opt[2] = '\0';
    return short_opt;
}
