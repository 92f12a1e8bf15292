/* Status fields as text, for the tools that print them (status.c). Internal to gpuyield (not
 * installed): the public form of a snapshot is gy_status_json. */
#ifndef GY_STATUS_TEXT_H
#define GY_STATUS_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* "0,1" for a launched_devices mask ("-": none yet; "?" stands for no known device). */
void gy_devices_text(uint32_t launched, char *out, size_t len);
/* "2026-11-23T16:55:01.123Z" (UTC). */
void gy_rfc3339(const struct timespec *when, char *out, size_t len);

#endif
