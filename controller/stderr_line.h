/* One line on stderr, written with a single write(2): no stdio buffer to flush or share, so it
 * is safe in a library preloaded into any process, in a forked child and right before _exit. */
#ifndef GY_STDERR_LINE_H
#define GY_STDERR_LINE_H

/* Formats the line (cut at about 600 bytes) and adds the newline. */
void gy_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* gy_say, then _exit(2): the "print one line and exit" of every bad setting (what, where, how to
 * fix) found inside a process we do not own. */
void gy_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#endif
