/* The one rule for a priority given as text ($GPUYIELD_PRIORITY), shared by the hook and the
 * Python extension so that a value one accepts the other never refuses. */
#include "gpuyield.h"

int gy_priority_parse(const char *text, int *out)
{
    if (!text) { /* unset: the default */
        *out = 0;
        return 0;
    }
    /* Decimal digits only (no sign, no space, not empty), value 0..GY_LEVELS-1. */
    int value = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9'; p++) {
        value = value * 10 + (*p - '0');
        if (value >= GY_LEVELS)
            return -1;
    }
    if (p == text || *p)
        return -1;
    *out = value;
    return 0;
}
