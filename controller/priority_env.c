/* GPUYIELD_PRIORITY, read the same way by the hooks library and the Python extension. */
#include <errno.h>
#include <stdlib.h>

#include "gpuyield.h"

int gy_priority_parse(const char *text, int *out)
{
    if (!text) {
        *out = 0;
        return 0;
    }
    /* Digits only: strtol alone would also take "", " 3" and "+3". */
    if (*text < '0' || *text > '9')
        return -1;
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || *end || value >= GY_LEVELS)
        return -1;
    *out = (int)value;
    return 0;
}
