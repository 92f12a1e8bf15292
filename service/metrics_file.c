/* The metrics as a node_exporter textfile: written to a temporary file beside the target and
 * renamed over it, so the collector reads a whole old or a whole new file, never half of one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "metrics.h"

/* Names tried for one write before giving up: each taken name (a stale temp file, or anything
 * planted there) costs one. */
#define TEMP_NAME_TRIES 100

/* A new file beside path, "<path>.tmp.<pid>.<n>": O_EXCL makes it ours alone (an existing name,
 * a symbolic link included, is skipped, never written through; O_NOFOLLOW says so twice). 0644: the
 * collector may run as another user. Returns the descriptor, tmp holding its name. */
static int create_temp(const char *path, char *tmp, size_t len, gy_err *err)
{
    static unsigned next; /* serve's loop is the one writer: no lock */
    for (int i = 0; i < TEMP_NAME_TRIES; i++) {
        if (snprintf(tmp, len, "%s.tmp.%d.%u", path, (int)getpid(), next++) >= (int)len)
            return gy_fail(err, ENAMETOOLONG, "--metrics-textfile: path too long: %s", path);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 && fchmod(fd, 0644) == 0) /* the umask (077 is common) must not lock the collector out */
            return fd;
        if (fd >= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return gy_fail(err, e, "--metrics-textfile: cannot make %s readable (0644): %s", tmp, strerror(e));
        }
        if (errno != EEXIST)
            return gy_fail(err, errno, "--metrics-textfile: cannot write %s: %s (is its directory there and writable?)",
                           tmp, strerror(errno));
    }
    return gy_fail(err, EEXIST, "--metrics-textfile: %d temporary names beside %s were all taken (last %s): remove "
                   "the stale %s.tmp.* files", TEMP_NAME_TRIES, path, tmp, path);
}

int gy_metrics_write_file(const char *path, const char *text, gy_err *err)
{
    char tmp[4096];
    int fd = create_temp(path, tmp, sizeof tmp, err);
    if (fd < 0)
        return -1;
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            return gy_fail(err, e, "--metrics-textfile: writing %s failed: %s", tmp, strerror(e));
        }
        done += (size_t)n;
    }
    if (close(fd) || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return gy_fail(err, e, "--metrics-textfile: cannot put %s in place: %s", path, strerror(e));
    }
    return 0;
}
