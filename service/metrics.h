/* Metrics for scrapers: the Prometheus text format (metrics_text.c), a minimal HTTP responder for
 * GET /metrics (metrics_http.c) and a node_exporter textfile written atomically (metrics_file.c). */
#ifndef GY_METRICS_H
#define GY_METRICS_H

#include "gpuyield.h"

/* The snapshot as Prometheus text. Returns bytes written (or that would be, snprintf-style). */
int gy_metrics_text(const struct gy_status *st, char *buf, size_t len);

typedef struct gy_metrics_http {
    int fd;         /* the listening socket, -1 when closed */
    char bound[80]; /* "ADDR:PORT" as bound (the port the kernel chose for port 0) */
} gy_metrics_http;

/* Listen on "PORT" (loopback) or "ADDR:PORT" (IPv4 address; 0.0.0.0 for every interface).
 * EINVAL: a malformed spec; otherwise the errno of bind/listen (EADDRINUSE: the port is taken). */
int gy_metrics_http_listen(gy_metrics_http *srv, const char *spec, gy_err *err);
/* Wait up to timeout_ms for a connection and answer it: GET /metrics gets render(ctx)'s text,
 * other paths 404, other methods 405, a request over 8 KiB or slower than 1 s is dropped.
 * Returns when it answered one or the time passed (or a signal came). */
void gy_metrics_http_poll(gy_metrics_http *srv, int timeout_ms, const char *(*render)(void *ctx), void *ctx);
void gy_metrics_http_close(gy_metrics_http *srv);

/* Write text to path through a temporary file in the same directory and rename(2): a reader
 * (node_exporter's textfile collector) never sees half a file. */
int gy_metrics_write_file(const char *path, const char *text, gy_err *err);

#endif
