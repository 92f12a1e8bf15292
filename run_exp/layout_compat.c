/* run_exp --layout-compat DIR: put gpuyield's drop-in libraries where the original experiment's
 * harness loads them from, so that a checkout of that harness at DIR/gpu-tester runs unmodified:
 *   DIR/pytcppexp/libgeek.so                         (ctypes: os.path.abspath("../pytcppexp/libgeek.so"))
 *   DIR/intercept-lib/build/lib/libcuinterpose.so    (LD_PRELOAD, "../intercept-lib/build/lib/...")
 *   DIR/intercept-lib/build/lib/libcuinterpose_sync.so
 *   DIR/intercept-lib/build/lib/libcuinterpose_event.so
 * The files are copies of this build's (<build>/lib), each written to a temporary name and
 * renamed into place, so a process that has the old one loaded keeps it intact. Copies, not
 * links: the layout stays valid when the tree is moved or copied to another machine; run it again
 * after a rebuild. Exit status 0, 1 (a file could not be placed), 2 (usage). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch.h"
#include "layout_compat.h"

static const struct {
    const char *file, *subdir;
} placed[] = {
    {"libgeek.so", "pytcppexp"},
    {"libcuinterpose.so", "intercept-lib/build/lib"},
    {"libcuinterpose_sync.so", "intercept-lib/build/lib"},
    {"libcuinterpose_event.so", "intercept-lib/build/lib"},
};

static int mkdirs(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Copy src to dst through dst.tmp-<pid> and rename. Returns 0, or -1 with a message. */
static int copy_file(const char *src, const char *dst)
{
    char tmp[PATH_MAX + 96];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", dst, (int)getpid());
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        fprintf(stderr, "run_exp: error: --layout-compat: cannot read %s: %s (build it with ./make.sh)\n", src,
                strerror(errno));
        return -1;
    }
    int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (out < 0) {
        fprintf(stderr, "run_exp: error: --layout-compat: cannot write %s: %s\n", tmp, strerror(errno));
        close(in);
        return -1;
    }
    char buf[1 << 16];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0) {
                if (errno == EINTR)
                    continue;
                rc = -1;
                break;
            }
            off += w;
        }
        if (rc)
            break;
    }
    if (n < 0)
        rc = -1;
    int e = errno;
    close(in);
    if (close(out) != 0 && !rc)
        rc = -1, e = errno;
    if (!rc && rename(tmp, dst) != 0)
        rc = -1, e = errno;
    if (rc) {
        unlink(tmp);
        fprintf(stderr, "run_exp: error: --layout-compat: cannot copy %s to %s: %s\n", src, dst, strerror(e));
    }
    return rc;
}

int layout_compat_main(const char *dir)
{
    if (!dir || !*dir) {
        fprintf(stderr, "run_exp: error: --layout-compat needs a directory: run_exp --layout-compat DIR (the "
                        "original harness then goes in DIR/gpu-tester)\n");
        return 2;
    }
    if (strlen(dir) > PATH_MAX - 128) {
        fprintf(stderr, "run_exp: error: --layout-compat: the directory name is too long\n");
        return 2;
    }
    struct install in;
    if (install_locate(&in) != 0)
        return 1;
    char src[PATH_MAX + 64], sub[PATH_MAX], dst[PATH_MAX + 64];
    int missing = 0;
    for (size_t i = 0; i < sizeof placed / sizeof placed[0]; i++) {
        snprintf(src, sizeof src, "%s/lib/%s", in.build, placed[i].file);
        if (access(src, R_OK) != 0) {
            fprintf(stderr, "run_exp: error: --layout-compat: %s is missing: build it with ./make.sh\n", src);
            missing++;
        }
    }
    if (missing)
        return 1;
    for (size_t i = 0; i < sizeof placed / sizeof placed[0]; i++) {
        snprintf(sub, sizeof sub, "%s/%s", dir, placed[i].subdir);
        if (mkdirs(sub) != 0) {
            fprintf(stderr, "run_exp: error: --layout-compat: cannot create directory %s: %s\n", sub, strerror(errno));
            return 1;
        }
        snprintf(src, sizeof src, "%s/lib/%s", in.build, placed[i].file);
        snprintf(dst, sizeof dst, "%s/%s", sub, placed[i].file);
        if (copy_file(src, dst) != 0)
            return 1;
        printf("%s\n", dst);
    }
    snprintf(sub, sizeof sub, "%s/gpu-tester", dir);
    struct stat st;
    if (stat(sub, &st) != 0 || !S_ISDIR(st.st_mode))
        fprintf(stderr, "run_exp: note: %s does not exist yet: put a checkout of the original harness there and run "
                        "it from that directory (it loads ../pytcppexp/libgeek.so and "
                        "../intercept-lib/build/lib/*.so)\n", sub);
    return 0;
}
