/* The original experiment's libgeek.so suffix S is the segment of tag "compat" + S, and its
 * high-priority job is a job of priority 1 (compat_tag.c; libgeek.so, the hooks loaded as
 * libcuinterpose*.so and gpuyield.compat all use these). Internal to gpuyield (not installed). */
#ifndef GY_COMPAT_TAG_H
#define GY_COMPAT_TAG_H

#include "gpuyield.h"

#define GY_COMPAT_TAG_PREFIX "compat"
#define GY_COMPAT_PRIORITY 1
/* The tag a suffix stands for; -1 with err filled (EINVAL) when it makes no valid tag. */
int gy_compat_tag(const char *suffix, char tag[GY_NAME_MAX], gy_err *err);

#endif
