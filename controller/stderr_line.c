#include "stderr_line.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static void say_v(const char *fmt, va_list ap)
{
    char line[600];
    int len = vsnprintf(line, sizeof line - 1, fmt, ap);
    if (len < 0)
        return;
    if (len > (int)sizeof line - 2)
        len = (int)sizeof line - 2;
    line[len++] = '\n';
    if (write(2, line, (size_t)len) < 0) {
        /* nowhere left to report it */
    }
}

void gy_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say_v(fmt, ap);
    va_end(ap);
}

void gy_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say_v(fmt, ap);
    va_end(ap);
    _exit(2);
}
