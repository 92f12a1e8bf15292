/* The simulated device's time line, shared across processes when FAKECUDA_DEVICE_FILE is set,
 * and the FAKECUDA_LOG writer. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fake_internal.h"

static const char *kind_names[] = {"kernel", "ex", "coop", "graph", "copy"};

struct device_file {
    _Atomic uint64_t tail;
};

static struct device_file local_device;
static struct device_file *device;
static pthread_once_t device_once = PTHREAD_ONCE_INIT;
static int log_fd = -2; /* -2: not opened yet, -1: no log */
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

uint64_t fk_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void fk_sleep_until(uint64_t t_ns)
{
    if (t_ns <= fk_now_ns())
        return; /* finished work: return at once, as a driver would (no timer-slack sleep) */
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000ull), .tv_nsec = (long)(t_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static void open_device(void)
{
    device = &local_device;
    const char *path = getenv("FAKECUDA_DEVICE_FILE");
    if (!path || !*path)
        return;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(struct device_file)) != 0) {
        fprintf(stderr, "fakecuda: cannot open FAKECUDA_DEVICE_FILE %s: %m: fix the path or unset it\n", path);
        exit(2);
    }
    /* ftruncate to the same size keeps the contents; a new file starts at tail 0. */
    void *p = mmap(NULL, sizeof(struct device_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "fakecuda: cannot map FAKECUDA_DEVICE_FILE %s: %m\n", path);
        exit(2);
    }
    device = p;
}

uint64_t fk_device_reserve(uint64_t not_before, uint64_t duration_ns)
{
    pthread_once(&device_once, open_device);
    uint64_t tail = atomic_load(&device->tail);
    for (;;) {
        uint64_t start = tail > not_before ? tail : not_before;
        if (atomic_compare_exchange_weak(&device->tail, &tail, start + duration_ns))
            return start;
    }
}

static void open_log(void)
{
    const char *path = getenv("FAKECUDA_LOG");
    log_fd = -1;
    if (!path || !*path)
        return;
    log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        fprintf(stderr, "fakecuda: cannot open FAKECUDA_LOG %s: %m: fix the path or unset it\n", path);
        exit(2);
    }
}

static void write_line(const char *buf, int len)
{
    pthread_once(&log_once, open_log);
    if (log_fd < 0 || len <= 0)
        return;
    /* One write per line with O_APPEND: lines of concurrent processes never interleave. */
    if (write(log_fd, buf, (size_t)len) != len)
        fprintf(stderr, "fakecuda: short write to FAKECUDA_LOG: %m\n");
}

void fk_log_kernel(uint64_t stream_id, uint64_t submit, uint64_t start, uint64_t end, unsigned outstanding,
                   enum fk_kind kind, const char *name, unsigned green_sms)
{
    pthread_once(&log_once, open_log);
    if (log_fd < 0)
        return; /* no log: not even a getpid, so that benchmarks measure the hook, not us */
    char buf[256];
    int len = snprintf(buf, sizeof buf, "%d %llu %llu %llu %llu %u %s %s %u\n", (int)getpid(),
                       (unsigned long long)stream_id, (unsigned long long)submit, (unsigned long long)start,
                       (unsigned long long)end, outstanding, kind_names[kind], name, green_sms);
    write_line(buf, len < (int)sizeof buf ? len : (int)sizeof buf - 1);
}

void fk_log_violation(const char *fmt, ...)
{
    char buf[256];
    int len = snprintf(buf, sizeof buf, "%d VIOLATION ", (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    len += vsnprintf(buf + len, sizeof buf - (size_t)len - 1, fmt, ap);
    va_end(ap);
    if (len > (int)sizeof buf - 2)
        len = (int)sizeof buf - 2;
    buf[len++] = '\n';
    write_line(buf, len);
}
