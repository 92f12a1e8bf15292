/* A status snapshot as the service shows it (/metrics, the textfile, `status` table and JSON):
 * one row per process and names that are clean UTF-8. */
#ifndef GY_STATUS_VIEW_H
#define GY_STATUS_VIEW_H

#include <stddef.h>

#include "gpuyield.h"

/* One row per pid (status_merge.c): a process registers a slot for its hook and another for the
 * Python extension; two rows with one label set make Prometheus keep one of them (silently). The
 * counters are summed, the device masks joined, the highest priority and the busiest state kept. */
void gy_status_merge(struct gy_status *st);

/* Every byte sequence that is not well-formed UTF-8 (a byte 0xff, a character cut at the end, an
 * overlong or surrogate form) replaced in place by '?', one per byte (utf8_clean.c): the text
 * keeps its length and becomes valid in Prometheus text and JSON. Returns how many were replaced. */
size_t gy_utf8_clean(char *text);

/* Both of the above on a fresh snapshot: process names, the segment name and the mutex holder's
 * text cleaned, slots merged. */
void gy_status_view(struct gy_status *st);

#endif
