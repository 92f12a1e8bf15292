#include "private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "owner_text.h"

static bool ours_and_private(const struct stat *st)
{
    return S_ISDIR(st->st_mode) && st->st_uid == geteuid() && (st->st_mode & 07777) == 0700;
}

const char *gy_runtime_base(void)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (!xdg || xdg[0] != '/')
        return "/tmp";
    int fd = open(xdg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return "/tmp";
    struct stat st;
    bool usable = fstat(fd, &st) == 0 && ours_and_private(&st);
    close(fd);
    return usable ? xdg : "/tmp";
}

int gy_private_dir_at(int parent_fd, const char *name, const char *shown, bool *created, gy_err *err)
{
    *created = mkdirat(parent_fd, name, 0700) == 0;
    if (!*created && errno != EEXIST) {
        int e = errno;
        return gy_fail(err, e, "cannot create directory %s: %s", shown, strerror(e));
    }
    int fd = openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) {
        int e = errno;
        if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
            char owner[160];
            gy_owner_text(st.st_uid, owner, sizeof owner);
            return gy_fail(err, EEXIST,
                           "%s is a %s owned by %s, not a private directory: something was planted there; "
                           "remove it or choose another directory",
                           shown, S_ISLNK(st.st_mode) ? "symbolic link" : "non-directory", owner);
        }
        return gy_fail(err, e, "cannot open directory %s: %s", shown, strerror(e));
    }
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gy_fail(err, e, "cannot stat directory %s: %s", shown, strerror(e));
    }
    /* A directory we just made has the umask applied: give it the mode we mean. */
    if (*created && st.st_uid == geteuid() && (st.st_mode & 07777) != 0700 && fchmod(fd, 0700) == 0)
        st.st_mode = (st.st_mode & ~07777u) | 0700;
    if (!ours_and_private(&st)) {
        char owner[160];
        gy_owner_text(st.st_uid, owner, sizeof owner);
        close(fd);
        if (st.st_uid != geteuid())
            return gy_fail(err, EACCES,
                           "directory %s belongs to %s, not to you (uid %u): someone else made it first; remove it "
                           "or choose another directory",
                           shown, owner, (unsigned)geteuid());
        return gy_fail(err, EACCES,
                       "directory %s has mode %04o, not 0700: others could have placed files in it; remove it "
                       "or `chmod 700` it after checking its contents",
                       shown, (unsigned)(st.st_mode & 07777));
    }
    return fd;
}

/* A directory above a private one is safe when nobody else can rename what is in it: owned by
 * root or by us, and writable by group or others only with the sticky bit (as /tmp). Otherwise
 * its owner (or anyone) could move our directory away and put theirs at the path the MPS daemon
 * and the workers are given. Checked on the resolved path of the deepest part that exists; what is
 * missing below it we make ourselves (0700). */
static int check_ancestor(const char *at, const char *shown, gy_err *err)
{
    struct stat st;
    if (lstat(at, &st) != 0) {
        int e = errno;
        return gy_fail(err, e, "cannot check %s (above %s): %s", at, shown, strerror(e));
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        char owner[160];
        gy_owner_text(st.st_uid, owner, sizeof owner);
        return gy_fail(err, EACCES,
                       "%s (above %s) belongs to %s: its owner could swap the directory under the MPS daemon and "
                       "your workers; choose a directory whose parents only you or root can change",
                       at, shown, owner);
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
        return gy_fail(err, EACCES,
                       "%s (above %s) has mode %04o: others can write to it without the sticky bit and could swap "
                       "the directory under the MPS daemon and your workers; `chmod go-w` it or choose another "
                       "directory",
                       at, shown, (unsigned)(st.st_mode & 07777));
    return 0;
}

static int check_ancestors(const char *above, const char *shown, gy_err *err)
{
    char probe[PATH_MAX], real[PATH_MAX];
    snprintf(probe, sizeof probe, "%s", above);
    while (!realpath(probe, real)) { /* up to the deepest part that exists */
        int e = errno;
        char *slash = strrchr(probe, '/');
        if (e != ENOENT)
            return gy_fail(err, e, "cannot resolve %s (above %s): %s", probe, shown, strerror(e));
        if (!slash && strcmp(probe, ".") == 0)
            return gy_fail(err, e, "cannot resolve the current directory (above %s): %s", shown, strerror(e));
        if (!slash)
            snprintf(probe, sizeof probe, "."); /* relative, none of it there yet: below the cwd */
        else if (slash == probe)
            probe[1] = '\0';
        else
            *slash = '\0';
    }
    char prefix[PATH_MAX] = "/";
    const char *rest = real + 1;
    for (;;) { /* "/", then each longer prefix of the resolved path */
        if (check_ancestor(prefix, shown, err))
            return -1;
        if (!*rest)
            return 0;
        size_t n = strcspn(rest, "/"), used = strlen(prefix);
        if (used > 1)
            prefix[used++] = '/';
        memcpy(prefix + used, rest, n);
        prefix[used + n] = '\0';
        rest += n + (rest[n] == '/');
    }
}

/* mkdir -p of everything above the last component; a component that exists is taken as is. */
static int make_parents(char *path, gy_err *err)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        int e = errno;
        *p = '/';
        if (rc != 0 && e != EEXIST) {
            *p = '\0';
            gy_fail(err, e, "cannot create directory %s: %s", path, strerror(e));
            *p = '/';
            return -1;
        }
    }
    return 0;
}

int gy_private_dir(const char *path, bool *created, gy_err *err)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n == 0 || n >= sizeof buf)
        return gy_fail(err, ENAMETOOLONG, "directory '%s' is empty or too long", path);
    memcpy(buf, path, n);
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    const char *name = slash ? slash + 1 : buf;
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return gy_fail(err, EINVAL, "directory '%s' must end in a name, not '/', '.' or '..'", path);
    char above[PATH_MAX];
    if (!slash)
        snprintf(above, sizeof above, ".");
    else if (slash == buf)
        snprintf(above, sizeof above, "/");
    else
        snprintf(above, sizeof above, "%.*s", (int)(slash - buf), buf);
    if (check_ancestors(above, path, err))
        return -1;
    int parent = AT_FDCWD;
    if (slash) {
        if (make_parents(buf, err))
            return -1;
        if (slash == buf)
            parent = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        else {
            *slash = '\0';
            parent = open(buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            *slash = '/';
        }
        if (parent < 0) {
            int e = errno;
            return gy_fail(err, e, "cannot open the directory above %s: %s", path, strerror(e));
        }
    }
    int fd = gy_private_dir_at(parent, name, buf, created, err);
    if (parent != AT_FDCWD)
        close(parent);
    return fd;
}

int gy_private_file_read(int dir_fd, const char *name, const char *shown, gy_err *err)
{
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) {
            errno = ENOENT;
            return -1;
        }
        if (e == ELOOP)
            return gy_fail(err, e, "%s is a symbolic link: refused (a private file is never followed); remove it",
                           shown);
        return gy_fail(err, e, "cannot open %s: %s", shown, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gy_fail(err, e, "cannot stat %s: %s", shown, strerror(e));
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        char owner[160];
        gy_owner_text(st.st_uid, owner, sizeof owner);
        bool regular = S_ISREG(st.st_mode);
        close(fd);
        errno = EPERM;
        return gy_fail(err, EPERM, "%s is %s owned by %s: refused; remove it", shown,
                       regular ? "a file" : "not a regular file (a FIFO or device?),", owner);
    }
    return fd;
}
