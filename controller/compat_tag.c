/* The original experiment's segments (libgeek.so's suffix, libcuinterpose's SUFFIX) on gpuyield
 * tags: written once here for libgeek.so, the hooks and the Python package (gpuyield.compat). */
#include <errno.h>
#include <stdio.h>

#include "compat_tag.h"
#include "errors.h"
#include "gpuyield.h"

int gy_compat_tag(const char *suffix, char tag[GY_NAME_MAX], gy_err *err)
{
    char name[GY_NAME_MAX];
    int len = snprintf(tag, GY_NAME_MAX, "%s%s", GY_COMPAT_TAG_PREFIX, suffix);
    if (!*suffix || len >= GY_NAME_MAX || gy_segment_name(tag, name, NULL))
        return gy_fail(err, EINVAL,
                       "suffix \"%.80s\" is invalid: \"" GY_COMPAT_TAG_PREFIX "\" + suffix must be 1..40 characters "
                       "from [A-Za-z0-9._-] (a uuid4 hex suffix fits)",
                       suffix);
    return 0;
}
