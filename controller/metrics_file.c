/* The metrics as a node_exporter textfile: written to a temporary file beside the target and
 * renamed over it, so the collector reads a whole old or a whole new file, never half of one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "errors.h"
#include "metrics.h"

int gy_metrics_write_file(const char *path, const char *text, gy_err *err)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp)
        return gy_fail(err, ENAMETOOLONG, "--metrics-textfile: path too long: %s", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return gy_fail(err, errno, "--metrics-textfile: cannot write %s: %s (is its directory there and writable?)", tmp,
                       strerror(errno));
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
