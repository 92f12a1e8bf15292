#include "protocol.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int job_row_format(const struct job_row *r, char *buf, size_t len)
{
    double jct_ms = (double)(r->end_ns - r->start_ns) / 1e6;
    return snprintf(buf, len, "%ld,%" PRIu64 ",%" PRIu64 ",%.3f,%" PRIu64 ",%d,%" PRIu64 ",%" PRIu64 "\n", r->job,
                    r->start_ns, r->end_ns, jct_ms, r->drain_wait_ns, r->drained, r->mem_peak, r->mem_reserved_peak);
}

int job_row_parse(const char *line, struct job_row *r)
{
    double jct_ms;
    int consumed = 0;
    if (sscanf(line, "%ld,%" SCNu64 ",%" SCNu64 ",%lf,%" SCNu64 ",%d,%" SCNu64 ",%" SCNu64 "%n", &r->job,
               &r->start_ns, &r->end_ns, &jct_ms, &r->drain_wait_ns, &r->drained, &r->mem_peak,
               &r->mem_reserved_peak, &consumed) != 8)
        return -1;
    const char *rest = line + consumed;
    if (*rest != '\n' && *rest != '\0')
        return -1;
    return r->end_ns >= r->start_ns ? 0 : -1;
}

static int env_fd(const char *name)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v)
        return -1;
    long fd = strtol(v, &end, 10);
    return *end || fd < 0 || fd > 65535 ? -1 : (int)fd;
}

int worker_link_open(struct worker_link *link)
{
    link->status_fd = env_fd(PROTO_STATUS_FD_ENV);
    link->control_fd = env_fd(PROTO_CONTROL_FD_ENV);
    if (link->status_fd < 0 || link->control_fd < 0) {
        fprintf(stderr, "worker: %s and %s are not set: workers are started by run_exp, not by hand "
                        "(run `run_exp -f CONFIG`)\n",
                PROTO_STATUS_FD_ENV, PROTO_CONTROL_FD_ENV);
        return -1;
    }
    return 0;
}

int worker_link_send(struct worker_link *link, const char *line)
{
    size_t n = strlen(line);
    ssize_t w;
    do
        w = write(link->status_fd, line, n);
    while (w < 0 && errno == EINTR);
    return w == (ssize_t)n ? 0 : -1;
}

/* Read one command word; "" on EOF or error. */
static void read_command(struct worker_link *link, char *cmd, size_t len)
{
    size_t n = 0;
    cmd[0] = '\0';
    for (;;) {
        char c;
        ssize_t r = read(link->control_fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            cmd[0] = '\0';
            return;
        }
        if (c == '\n')
            break;
        if (n + 1 < len)
            cmd[n++] = c;
    }
    cmd[n] = '\0';
}

bool worker_link_wait_go(struct worker_link *link)
{
    char cmd[16];
    read_command(link, cmd, sizeof cmd);
    return strcmp(cmd, "go") == 0;
}

bool worker_link_stop_requested(struct worker_link *link, int timeout_ms)
{
    struct pollfd p = {.fd = link->control_fd, .events = POLLIN};
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        return false;
    char cmd[16];
    read_command(link, cmd, sizeof cmd);
    return true; /* "stop" or EOF; nothing else is sent after "go" */
}
