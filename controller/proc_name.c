/* A registered process's human name for status and metrics: the GPUYIELD_MODEL its environment
 * sets (run_exp sets it to the model's name), else its command name (/proc/PID/comm). Read from
 * /proc by the reader, so the segment layout carries no names. */
#include <stdio.h>
#include <string.h>

#include "gpuyield.h"
#include "proc_identity.h"

/* GPUYIELD_MODEL=... from /proc/PID/environ (readable for our own processes), or false. */
static bool model_from_environ(int pid, char *out, size_t len)
{
    char buf[32768];
    long got = gy_proc_read(pid, "environ", buf, sizeof buf);
    if (got < 0)
        return false;
    size_t n = (size_t)got;
    static const char key[] = "GPUYIELD_MODEL=";
    for (size_t at = 0; at < n; at += strlen(buf + at) + 1) {
        if (strncmp(buf + at, key, sizeof key - 1) == 0 && buf[at + sizeof key - 1]) {
            snprintf(out, len, "%s", buf + at + sizeof key - 1);
            return true;
        }
    }
    return false;
}

void gy_proc_name(int pid, char *out, size_t len)
{
    if (len == 0)
        return;
    out[0] = '\0';
    if (model_from_environ(pid, out, len))
        return;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fgets(out, (int)len, f))
        out[strcspn(out, "\n")] = '\0';
    else
        out[0] = '\0';
    fclose(f);
}
