/* Metrics for scrapers: the Prometheus text format (metrics_text.c), a minimal HTTP responder for
 * GET /metrics (metrics_http.c) and a node_exporter textfile written atomically (metrics_file.c). */
#ifndef GY_METRICS_H
#define GY_METRICS_H

#include "gpuyield.h"

/* The snapshot as Prometheus text. Returns bytes written (or that would be, snprintf-style). */
int gy_metrics_text(const struct gy_status *st, char *buf, size_t len);

/* Connections held at once; one more drops the oldest (idle clients cannot lock scrapers out). */
#define GY_METRICS_CONN_MAX 64
/* A whole request, from accept to the last byte of the answer, in milliseconds: a client that
 * trickles its request or does not read the answer is dropped after it, whatever it sends. */
#define GY_METRICS_REQUEST_MS 2000

struct gy_metrics_conn; /* metrics_http.c */

typedef struct gy_metrics_http {
    int fd;         /* the listening socket, -1 when closed */
    char bound[80]; /* "ADDR:PORT" as bound (the port the kernel chose for port 0) */
    struct gy_metrics_conn *conns; /* GY_METRICS_CONN_MAX of them, oldest first */
    int nconns;
} gy_metrics_http;

/* Listen on "PORT" (loopback) or "ADDR:PORT" (IPv4 address; 0.0.0.0 for every interface).
 * EINVAL: a malformed spec; otherwise the errno of bind/listen (EADDRINUSE: the port is taken). */
int gy_metrics_http_listen(gy_metrics_http *srv, const char *spec, gy_err *err);
/* One round of the server, never longer than timeout_ms plus one render: waits for any socket
 * (new connections, request bytes, room to send), accepts, reads, answers what is complete and
 * drops what is past its deadline. GET /metrics gets render(ctx)'s text, HEAD its headers (the
 * same Content-Length), other paths 404, other methods 405, a request over 8 KiB 400. Nothing in
 * it blocks on a client: the caller's loop (reaping) runs again after each round. */
void gy_metrics_http_poll(gy_metrics_http *srv, int timeout_ms, const char *(*render)(void *ctx), void *ctx);
void gy_metrics_http_close(gy_metrics_http *srv);

/* Write text to path through a temporary file in the same directory and rename(2): a reader
 * (node_exporter's textfile collector) never sees half a file. */
int gy_metrics_write_file(const char *path, const char *text, gy_err *err);

#endif
