/* A single-threaded HTTP/1.0 responder for GET /metrics, polled from expcontroller serve's loop:
 * every socket non-blocking and served from one poll(2), so no client can hold the loop (reaping,
 * the textfile) for longer than one round; each request bounded in size and in total time, the
 * connections capped (the oldest dropped), each closed after its answer. Enough for a Prometheus
 * scraper; not a general web server. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errors.h"
#include "metrics.h"

#define REQUEST_MAX 8192
#define LISTEN_BACKLOG 128

struct gy_metrics_conn {
    int fd;
    uint64_t deadline_ns; /* accept + GY_METRICS_REQUEST_MS */
    size_t in_len;
    char in[REQUEST_MAX + 1];
    char *out; /* the answer once the request is read; NULL while reading */
    size_t out_len, out_done;
};

int gy_metrics_http_listen(gy_metrics_http *srv, const char *spec, gy_err *err)
{
    srv->fd = -1;
    srv->conns = NULL;
    srv->nconns = 0;
    char addr_text[64] = "127.0.0.1";
    const char *port_text = spec;
    const char *colon = strrchr(spec, ':');
    if (colon) {
        size_t n = (size_t)(colon - spec);
        if (n == 0 || n >= sizeof addr_text)
            return gy_fail(err, EINVAL, "--metrics '%s': expected PORT or ADDR:PORT (e.g. 9400 or 0.0.0.0:9400)", spec);
        memcpy(addr_text, spec, n);
        addr_text[n] = '\0';
        port_text = colon + 1;
    }
    char *end;
    errno = 0;
    long port = strtol(port_text, &end, 10);
    if (errno || end == port_text || *end || port < 0 || port > 65535)
        return gy_fail(err, EINVAL, "--metrics '%s': the port must be a number 0..65535 (PORT or ADDR:PORT, e.g. 9400)",
                       spec);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, addr_text, &sa.sin_addr) != 1)
        return gy_fail(err, EINVAL, "--metrics '%s': '%s' is not an IPv4 address (e.g. 127.0.0.1 or 0.0.0.0)", spec,
                       addr_text);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return gy_fail(err, errno, "--metrics: cannot make a socket: %s", strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, LISTEN_BACKLOG)) {
        int e = errno;
        close(fd);
        return gy_fail(err, e, "--metrics %s: cannot listen: %s%s", spec, strerror(e),
                       e == EADDRINUSE ? " (another program has that port: pick another)" :
                       e == EADDRNOTAVAIL ? " (not an address of this host)" : "");
    }
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    snprintf(srv->bound, sizeof srv->bound, "%s:%u", addr_text, (unsigned)ntohs(sa.sin_port));
    srv->conns = calloc(GY_METRICS_CONN_MAX, sizeof *srv->conns);
    if (!srv->conns) {
        close(fd);
        return gy_fail(err, ENOMEM, "--metrics: out of memory");
    }
    srv->fd = fd;
    return 0;
}

static void conn_drop(gy_metrics_http *srv, int i)
{
    close(srv->conns[i].fd);
    free(srv->conns[i].out);
    memmove(&srv->conns[i], &srv->conns[i + 1], (size_t)(srv->nconns - i - 1) * sizeof *srv->conns);
    srv->nconns--;
}

/* The whole answer in one buffer: the headers, then the body unless HEAD (whose Content-Length
 * is still the body's, RFC 9110 9.3.2). */
static void conn_answer(struct gy_metrics_conn *c, const char *status, const char *type, const char *body, bool head)
{
    size_t body_len = strlen(body);
    char top[256];
    int n = snprintf(top, sizeof top,
                     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", status,
                     type, body_len);
    size_t send_body = head ? 0 : body_len;
    c->out = malloc((size_t)n + send_body + 1);
    c->out_len = c->out_done = 0;
    if (!c->out)
        return; /* out of memory: the connection is dropped unanswered */
    memcpy(c->out, top, (size_t)n);
    memcpy(c->out + n, body, send_body);
    c->out_len = (size_t)n + send_body;
    c->out_done = 0;
}

static void conn_request(struct gy_metrics_conn *c, const char *(*render)(void *ctx), void *ctx)
{
    char method[16], target[256];
    if (sscanf(c->in, "%15s %255s", method, target) != 2) {
        conn_answer(c, "400 Bad Request", "text/plain", "malformed request line\n", false);
        return;
    }
    bool head = strcmp(method, "HEAD") == 0;
    if (!head && strcmp(method, "GET") != 0) {
        conn_answer(c, "405 Method Not Allowed", "text/plain", "only GET /metrics\n", false);
        return;
    }
    target[strcspn(target, "?")] = '\0'; /* scrapers may add query parameters */
    if (strcmp(target, "/metrics") != 0) {
        conn_answer(c, "404 Not Found", "text/plain", "not found: the metrics are at /metrics\n", head);
        return;
    }
    conn_answer(c, "200 OK", "text/plain; version=0.0.4; charset=utf-8", render(ctx), head);
}

/* Reads what is there. Returns false when the connection is to be dropped (the peer left). */
static bool conn_read(struct gy_metrics_conn *c, const char *(*render)(void *ctx), void *ctx)
{
    for (;;) {
        if (c->in_len >= REQUEST_MAX) {
            conn_answer(c, "400 Bad Request", "text/plain", "request too large\n", false);
            return c->out != NULL;
        }
        ssize_t n = recv(c->fd, c->in + c->in_len, REQUEST_MAX - c->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n <= 0)
            return false;
        c->in_len += (size_t)n;
        c->in[c->in_len] = '\0';
        if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n")) {
            conn_request(c, render, ctx);
            return c->out != NULL;
        }
    }
}

/* Sends what the socket takes. Returns false when done or the peer left (drop it either way). */
static bool conn_write(struct gy_metrics_conn *c)
{
    while (c->out_done < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_done, c->out_len - c->out_done, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n <= 0)
            return false;
        c->out_done += (size_t)n;
    }
    return false;
}

/* Takes every connection waiting; past the cap the oldest held one goes. */
static void accept_all(gy_metrics_http *srv)
{
    for (;;) {
        int fd = accept4(srv->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return; /* EAGAIN: no more; anything else: tried again next round */
        if (srv->nconns == GY_METRICS_CONN_MAX)
            conn_drop(srv, 0);
        struct gy_metrics_conn *c = &srv->conns[srv->nconns++];
        c->fd = fd;
        c->deadline_ns = gy_now_ns() + GY_METRICS_REQUEST_MS * 1000000ull;
        c->in_len = 0;
        c->in[0] = '\0';
        c->out = NULL;
        c->out_len = c->out_done = 0;
    }
}

void gy_metrics_http_poll(gy_metrics_http *srv, int timeout_ms, const char *(*render)(void *ctx), void *ctx)
{
    struct pollfd p[GY_METRICS_CONN_MAX + 1];
    uint64_t now = gy_now_ns();
    int n = srv->nconns;
    for (int i = 0; i < n; i++) {
        const struct gy_metrics_conn *c = &srv->conns[i];
        p[i] = (struct pollfd){.fd = c->fd, .events = c->out ? POLLOUT : POLLIN};
        int left_ms = c->deadline_ns > now ? (int)((c->deadline_ns - now) / 1000000ull) + 1 : 0;
        if (left_ms < timeout_ms)
            timeout_ms = left_ms;
    }
    p[n] = (struct pollfd){.fd = srv->fd, .events = POLLIN};
    if (poll(p, (nfds_t)n + 1, timeout_ms) < 0)
        return; /* a signal: the caller looks at its flag */
    /* Backwards: dropping one moves only those after it, already handled. */
    now = gy_now_ns();
    for (int i = n - 1; i >= 0; i--) {
        struct gy_metrics_conn *c = &srv->conns[i];
        bool keep;
        if (p[i].revents & (POLLERR | POLLNVAL))
            keep = false;
        else if (c->out)
            keep = !(p[i].revents & (POLLOUT | POLLHUP)) || conn_write(c);
        else if (p[i].revents & (POLLIN | POLLHUP)) {
            keep = conn_read(c, render, ctx);
            if (keep && c->out)
                keep = conn_write(c); /* most answers fit the socket's buffer at once */
        } else
            keep = true;
        if (keep && now >= c->deadline_ns)
            keep = false; /* too slow as a whole: a trickle of bytes does not extend it */
        if (!keep)
            conn_drop(srv, i);
    }
    if (p[n].revents & POLLIN)
        accept_all(srv);
}

void gy_metrics_http_close(gy_metrics_http *srv)
{
    while (srv->nconns > 0)
        conn_drop(srv, srv->nconns - 1);
    free(srv->conns);
    srv->conns = NULL;
    if (srv->fd >= 0)
        close(srv->fd);
    srv->fd = -1;
}
