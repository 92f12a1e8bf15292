/* FAKECUDA_LOG parser for the hook tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_log.h"

int fake_log_read(const char *path, struct fake_log *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "  cannot read fake driver log %s\n", path);
        return -1;
    }
    char line[512];
    int cap = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        int pid;
        char word[32];
        if (sscanf(line, "%d %31s", &pid, word) != 2) {
            fprintf(stderr, "  unparsable log line: %s", line);
            rc = -1;
            break;
        }
        if (strcmp(word, "VIOLATION") == 0) {
            if (!out->violations++)
                snprintf(out->first_violation, sizeof out->first_violation, "%s", line);
            continue;
        }
        if (out->n == cap) {
            cap = cap ? 2 * cap : 256;
            out->kernels = realloc(out->kernels, (size_t)cap * sizeof *out->kernels);
            if (!out->kernels)
                abort();
        }
        struct fake_kernel *k = &out->kernels[out->n];
        unsigned long long stream, submit, start, end;
        if (sscanf(line, "%d %llu %llu %llu %llu %u %7s %31s %u", &k->pid, &stream, &submit, &start, &end,
                   &k->outstanding, k->kind, k->name, &k->green_sms) != 9) {
            fprintf(stderr, "  unparsable log line: %s", line);
            rc = -1;
            break;
        }
        k->stream = stream, k->submit = submit, k->start = start, k->end = end;
        out->n++;
    }
    fclose(f);
    return rc;
}

void fake_log_free(struct fake_log *log)
{
    free(log->kernels);
    memset(log, 0, sizeof *log);
}

int fake_log_count_pid(const struct fake_log *log, int pid)
{
    int n = 0;
    for (int i = 0; i < log->n; i++)
        n += log->kernels[i].pid == pid;
    return n;
}
