/* A single-threaded HTTP/1.0 responder for GET /metrics, polled from expcontroller serve's loop:
 * one connection at a time, the request bounded in size and time, the connection closed after
 * each answer. Enough for a Prometheus scraper; not a general web server. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errors.h"
#include "metrics.h"

#define REQUEST_MAX 8192
#define REQUEST_TIMEOUT_MS 1000

int gy_metrics_http_listen(gy_metrics_http *srv, const char *spec, gy_err *err)
{
    srv->fd = -1;
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
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 16)) {
        int e = errno;
        close(fd);
        return gy_fail(err, e, "--metrics %s: cannot listen: %s%s", spec, strerror(e),
                       e == EADDRINUSE ? " (another program has that port: pick another)" :
                       e == EADDRNOTAVAIL ? " (not an address of this host)" : "");
    }
    socklen_t len = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &len);
    snprintf(srv->bound, sizeof srv->bound, "%s:%u", addr_text, (unsigned)ntohs(sa.sin_port));
    srv->fd = fd;
    return 0;
}

static void send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            if (poll(&p, 1, REQUEST_TIMEOUT_MS) <= 0)
                return; /* a client that does not read: give up on it */
            continue;
        }
        if (n <= 0)
            return;
        data += n;
        len -= (size_t)n;
    }
}

static void respond(int fd, const char *status, const char *type, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof head, "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, type, strlen(body));
    send_all(fd, head, (size_t)n);
    send_all(fd, body, strlen(body));
}

/* Reads until the end of the headers; false when it is too big, too slow or the peer left. */
static bool read_request(int fd, char *buf, size_t len)
{
    size_t used = 0;
    while (used + 1 < len) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, REQUEST_TIMEOUT_MS) <= 0)
            return false;
        ssize_t n = recv(fd, buf + used, len - 1 - used, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return false;
        used += (size_t)n;
        buf[used] = '\0';
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
            return true;
    }
    return false;
}

static void answer(int fd, const char *(*render)(void *ctx), void *ctx)
{
    char req[REQUEST_MAX + 1];
    if (!read_request(fd, req, sizeof req)) {
        respond(fd, "400 Bad Request", "text/plain", "request too large, too slow or incomplete\n");
        return;
    }
    char method[16], target[256];
    if (sscanf(req, "%15s %255s", method, target) != 2) {
        respond(fd, "400 Bad Request", "text/plain", "malformed request line\n");
        return;
    }
    bool head = strcmp(method, "HEAD") == 0;
    if (!head && strcmp(method, "GET") != 0) {
        respond(fd, "405 Method Not Allowed", "text/plain", "only GET /metrics\n");
        return;
    }
    target[strcspn(target, "?")] = '\0'; /* scrapers may add query parameters */
    if (strcmp(target, "/metrics") != 0) {
        respond(fd, "404 Not Found", "text/plain", "not found: the metrics are at /metrics\n");
        return;
    }
    respond(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", head ? "" : render(ctx));
}

void gy_metrics_http_poll(gy_metrics_http *srv, int timeout_ms, const char *(*render)(void *ctx), void *ctx)
{
    struct pollfd p = {.fd = srv->fd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) <= 0)
        return;
    int fd = accept4(srv->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
        return;
    answer(fd, render, ctx);
    close(fd);
}

void gy_metrics_http_close(gy_metrics_http *srv)
{
    if (srv->fd >= 0)
        close(srv->fd);
    srv->fd = -1;
}
