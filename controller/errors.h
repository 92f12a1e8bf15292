/* Filling a gy_err: one helper so every message has the same shape. */
#ifndef GY_ERRORS_H
#define GY_ERRORS_H

#include "gpuyield.h"

/* Sets err->code and formats err->msg; returns -1 so callers can `return gy_fail(...)`. */
int gy_fail(gy_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
