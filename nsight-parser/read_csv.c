/* Reads the CSV of `nsys stats --report cuda_kern_exec_trace --format csv` (the reference's
 * input). Its columns: API Start, API Dur, Queue Start, Queue Dur, Kernel Start, Kernel Dur,
 * Total Dur, PID, TID, DevId, API Function, GridXYZ, BlockXYZ, Kernel Name; times in ns. It has
 * no stream and no NVTX ranges. Lines that nsys prints before the header are skipped. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inputs.h"

enum column { API_START, API_DUR, KERNEL_START, KERNEL_DUR, PID, KERNEL_NAME, COLUMN_COUNT };
static const char *const column_names[COLUMN_COUNT] = {"API Start", "API Dur", "Kernel Start", "Kernel Dur", "PID",
                                                       "Kernel Name"};

#define MAX_FIELDS 64

/* Splits one CSV line in place (RFC 4180 quoting); returns the field count, or -1 for an
 * unterminated quote. */
static int split_csv(char *line, char **fields)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == MAX_FIELDS)
            return n;
        char *out = p;
        fields[n++] = out;
        if (*p == '"') {
            p++;
            for (;;) {
                if (*p == '\0')
                    return -1;
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
            while (*p && *p != ',') /* tolerate text after the closing quote */
                p++;
        } else {
            while (*p && *p != ',')
                *out++ = *p++;
        }
        char sep = *p;
        *out = '\0';
        if (sep == '\0')
            return n;
        p++;
    }
}

static void strip_line_end(char *line)
{
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
}

/* Matches a header field to a column: "Kernel Start (ns)" or "Kernel Start". Returns -1 when it
 * is not one we need, -2 when it is one of ours but in a unit other than ns. */
static int column_of_header(const char *field)
{
    for (int c = 0; c < COLUMN_COUNT; c++) {
        size_t len = strlen(column_names[c]);
        if (strncmp(field, column_names[c], len) != 0)
            continue;
        const char *rest = field + len;
        if (*rest == '\0')
            return c;
        if (strcmp(rest, " (ns)") == 0)
            return c;
        if (rest[0] == ' ' && rest[1] == '(')
            return -2;
    }
    return -1;
}

/* Times beyond +-2^62 ns (146 years) are no trace's: refusing them keeps start + duration from
 * overflowing (found by fuzz/nsight_csv_fuzz.c). */
#define NS_LIMIT (INT64_C(1) << 62)

/* Parses an integer number of ns (a decimal point is rounded); false if the field is no number
 * or lies beyond NS_LIMIT. */
static bool parse_ns(const char *field, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(field, &end, 10);
    if (end != field && *end == '\0' && !errno) {
        if (v > NS_LIMIT || v < -NS_LIMIT)
            return false;
        *out = v;
        return true;
    }
    double d = strtod(field, &end);
    if (end == field || *end != '\0' || !(d >= -(double)NS_LIMIT && d <= (double)NS_LIMIT))
        return false;
    *out = (int64_t)llround(d);
    return true;
}

bool np_read_kern_exec_csv(const char *path, struct np_report *report)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "nsight-parser: %s: cannot open: %s\n", path, strerror(errno));
        return false;
    }
    char *line = NULL, *fields[MAX_FIELDS];
    size_t cap = 0, line_no = 0;
    int index_of[COLUMN_COUNT];
    bool have_header = false, ok = true;
    while (ok && getline(&line, &cap, f) > 0) {
        line_no++;
        strip_line_end(line);
        if (!have_header) {
            if (!strstr(line, "Kernel Start"))
                continue; /* nsys's progress lines before the table */
            int n = split_csv(line, fields);
            for (int c = 0; c < COLUMN_COUNT; c++)
                index_of[c] = -1;
            for (int i = 0; i < n; i++) {
                int c = column_of_header(fields[i]);
                if (c == -2) {
                    fprintf(stderr, "nsight-parser: %s:%zu: column \"%s\" is not in ns: rerun nsys stats "
                                    "with --timeunit nsec\n", path, line_no, fields[i]);
                    ok = false;
                    break;
                }
                if (c >= 0)
                    index_of[c] = i;
            }
            for (int c = 0; ok && c < COLUMN_COUNT; c++) {
                if (index_of[c] < 0) {
                    fprintf(stderr, "nsight-parser: %s:%zu: the header has no \"%s\" column: expected the CSV of "
                                    "nsys stats --report cuda_kern_exec_trace --format csv\n",
                            path, line_no, column_names[c]);
                    ok = false;
                }
            }
            have_header = true;
            continue;
        }
        if (line[0] == '\0')
            continue;
        int n = split_csv(line, fields);
        if (n < 0) {
            fprintf(stderr, "nsight-parser: %s:%zu: unterminated quoted field\n", path, line_no);
            ok = false;
            break;
        }
        int64_t v[COLUMN_COUNT];
        for (int c = 0; c < COLUMN_COUNT && ok; c++) {
            if (index_of[c] >= n) {
                fprintf(stderr, "nsight-parser: %s:%zu: %d fields, too few for column \"%s\"\n", path, line_no, n,
                        column_names[c]);
                ok = false;
            } else if (c == KERNEL_NAME) {
                v[c] = np_strings_intern(&report->names, fields[index_of[c]], strlen(fields[index_of[c]]));
                if (v[c] < 0)
                    ok = np_out_of_memory("kernel names");
            } else if (c == PID && fields[index_of[c]][0] == '\0') {
                v[c] = 0;
            } else if (!parse_ns(fields[index_of[c]], &v[c])) {
                fprintf(stderr, "nsight-parser: %s:%zu: column \"%s\" holds \"%s\", not a number of ns within +-2^62\n", path, line_no,
                        column_names[c], fields[index_of[c]]);
                ok = false;
            }
        }
        if (!ok)
            break;
        struct np_kernel k = {
            .issue_start = v[API_START],
            .issue_end = v[API_START] + v[API_DUR],
            .exec_start = v[KERNEL_START],
            .exec_end = v[KERNEL_START] + v[KERNEL_DUR],
            .stream = NP_NO_STREAM,
            .pid = (uint32_t)v[PID],
            .name = (uint32_t)v[KERNEL_NAME],
        };
        ok = np_report_add_kernel(report, &k);
    }
    if (ok && ferror(f)) {
        fprintf(stderr, "nsight-parser: %s: read error: %s\n", path, strerror(errno));
        ok = false;
    }
    if (ok && !have_header) {
        fprintf(stderr, "nsight-parser: %s: not a report: no \"Kernel Start\" header (expected an SQLite export of "
                        "Nsight Systems, an .nsys-rep, or the CSV of nsys stats --report cuda_kern_exec_trace "
                        "--format csv)\n", path);
        ok = false;
    }
    free(line);
    fclose(f);
    return ok;
}
