#include "private_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
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
    /* A directory we just made has the umask applied: give it the mode we mean, and look again. */
    if (fstat(fd, &st) != 0 ||
        (*created && st.st_uid == geteuid() && S_ISDIR(st.st_mode) && (fchmod(fd, 0700) != 0 || fstat(fd, &st) != 0))) {
        int e = errno;
        close(fd);
        if (*created)
            unlinkat(parent_fd, name, AT_REMOVEDIR);
        return gy_fail(err, e, "cannot set the mode of directory %s: %s", shown, strerror(e));
    }
    if (!ours_and_private(&st)) {
        char owner[160];
        gy_owner_text(st.st_uid, owner, sizeof owner);
        close(fd);
        if (*created) /* not what we made: someone swapped it (only root can, in a checked parent) */
            unlinkat(parent_fd, name, AT_REMOVEDIR);
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
 * and the workers are given. Checked on the descriptor of each directory the walk reaches. */
static int check_ancestor(const struct stat *st, const char *at, const char *shown, gy_err *err)
{
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        char owner[160];
        gy_owner_text(st->st_uid, owner, sizeof owner);
        return gy_fail(err, EACCES,
                       "%s (above %s) belongs to %s: its owner could swap the directory under the MPS daemon and "
                       "your workers; choose a directory whose parents only you or root can change",
                       at, shown, owner);
    }
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        return gy_fail(err, EACCES,
                       "%s (above %s) has mode %04o: others can write to it without the sticky bit and could swap "
                       "the directory under the MPS daemon and your workers; `chmod go-w` it or choose another "
                       "directory",
                       at, shown, (unsigned)(st->st_mode & 07777));
    return 0;
}

static const char *type_text(mode_t mode)
{
    return S_ISREG(mode) ? "regular file" : S_ISFIFO(mode) ? "FIFO" : S_ISSOCK(mode) ? "socket"
         : S_ISCHR(mode) || S_ISBLK(mode) ? "device" : "non-directory";
}

void gy_private_path_keep(gy_private_path *p)
{
    for (int i = 0; i < p->made; i++)
        close(p->made_parent[i]);
    p->made = 0;
}

void gy_private_path_undo(gy_private_path *p)
{
    for (int i = p->made - 1; i >= 0; i--)
        unlinkat(p->made_parent[i], p->made_name[i], AT_REMOVEDIR); /* only if empty */
    gy_private_path_keep(p);
}

/* Note a directory this call made in `parent`, before anything else can fail. */
static int note_made(gy_private_path *p, int parent, const char *name, const char *shown, gy_err *err)
{
    int dup_fd = p->made < GY_PRIVATE_MADE_MAX ? fcntl(parent, F_DUPFD_CLOEXEC, 0) : -1;
    if (dup_fd < 0) {
        int e = p->made < GY_PRIVATE_MADE_MAX ? errno : E2BIG;
        unlinkat(parent, name, AT_REMOVEDIR);
        if (e == E2BIG)
            return gy_fail(err, e, "cannot make %s: more than %d missing directories on the way; make some yourself",
                           shown, GY_PRIVATE_MADE_MAX);
        return gy_fail(err, e, "cannot make %s: %s", shown, strerror(e));
    }
    p->made_parent[p->made] = dup_fd;
    snprintf(p->made_name[p->made], sizeof p->made_name[p->made], "%s", name);
    p->made++;
    return 0;
}

/* The path walked so far, plus one more name (for messages, and out->path). */
static void walked_plus(const gy_private_path *p, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s", strcmp(p->path, "/") ? p->path : "", name);
}

static int open_root(const char *shown, gy_err *err)
{
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return gy_fail(err, e, "cannot open / (above %s): %s", shown, strerror(e));
    }
    if (check_ancestor(&st, "/", shown, err)) {
        close(fd);
        return -1;
    }
    return fd;
}

#define LINKS_MAX 40 /* as the kernel's own limit on links followed in one lookup */

/* One step of the walk: the directory `name` below cur (existing, made now, or reached through a
 * symlink of ours or root's, which then puts its target in front of `rest`). Returns the new
 * descriptor (cur is then closed), -2 when a link was spliced into rest (cur may have changed), or
 * -1 with err filled. */
static int step(int *cur, const char *name, char *rest, size_t rest_len, int *links, gy_private_path *p,
                const char *shown, gy_err *err)
{
    char at[PATH_MAX + NAME_MAX + 2];
    walked_plus(p, name, at, sizeof at);
    for (int tries = 0;; tries++) {
        int fd = openat(*cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno != ENOENT) {
            int e = errno;
            return gy_fail(err, e, "cannot open %s (above %s): %s", at, shown, strerror(e));
        }
        if (fd < 0) { /* missing: ours to make */
            if (tries >= 3)
                return gy_fail(err, EAGAIN, "%s (above %s) keeps appearing and disappearing: something else is "
                                            "making and removing it; choose another directory", at, shown);
            if (mkdirat(*cur, name, 0700) != 0) {
                int e = errno;
                if (e == EEXIST)
                    continue; /* another process made it first: checked as any that exists */
                return gy_fail(err, e, "cannot create directory %s (above %s): %s", at, shown, strerror(e));
            }
            if (note_made(p, *cur, name, at, err))
                return -1;
            fd = openat(*cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            struct stat st;
            /* Made with the umask applied: the mode we mean, on what we opened if it is ours. */
            if (fd < 0 || fstat(fd, &st) != 0 ||
                (st.st_uid == geteuid() && (fchmod(fd, 0700) != 0 || fstat(fd, &st) != 0))) {
                int e = errno;
                if (fd >= 0)
                    close(fd);
                return gy_fail(err, e, "cannot open or set the mode of directory %s, made just now (above %s): %s", at,
                               shown, strerror(e));
            }
            if (!ours_and_private(&st)) { /* only root can have swapped it, in a checked parent */
                close(fd);
                return gy_fail(err, EACCES, "directory %s, made just now (above %s), is not ours with mode 0700 any "
                                            "more: something replaced it; choose another directory", at, shown);
            }
            close(*cur);
            *cur = fd;
            return fd;
        }
        struct stat st;
        if (fstat(fd, &st) != 0) {
            int e = errno;
            close(fd);
            return gy_fail(err, e, "cannot stat %s (above %s): %s", at, shown, strerror(e));
        }
        if (S_ISLNK(st.st_mode)) {
            char owner[160], target[PATH_MAX];
            gy_owner_text(st.st_uid, owner, sizeof owner);
            if (st.st_uid != 0 && st.st_uid != geteuid()) {
                close(fd);
                return gy_fail(err, EACCES,
                               "%s (above %s) is a symbolic link owned by %s: its owner could re-point it under the "
                               "MPS daemon and your workers; give the directory it leads to, or a path without it",
                               at, shown, owner);
            }
            ssize_t n = readlinkat(fd, "", target, sizeof target);
            int e = errno;
            close(fd);
            if (n < 0)
                return gy_fail(err, e, "cannot read the symbolic link %s (above %s): %s", at, shown, strerror(e));
            if (n == 0 || (size_t)n >= sizeof target)
                return gy_fail(err, ENAMETOOLONG, "the symbolic link %s (above %s) is empty or too long", at, shown);
            target[n] = '\0';
            if (++*links > LINKS_MAX)
                return gy_fail(err, ELOOP, "%s (above %s): more than %d symbolic links on the way (a loop?)", at,
                               shown, LINKS_MAX);
            char joined[PATH_MAX];
            if (snprintf(joined, sizeof joined, "%s/%s", target, rest) >= (int)sizeof joined ||
                strlen(joined) >= rest_len)
                return gy_fail(err, ENAMETOOLONG, "%s (above %s) leads to a path too long", at, shown);
            strcpy(rest, joined);
            if (target[0] == '/') { /* from "/" again */
                int root = open_root(shown, err);
                if (root < 0)
                    return -1;
                close(*cur);
                *cur = root;
                snprintf(p->path, sizeof p->path, "/");
            }
            return -2;
        }
        if (!S_ISDIR(st.st_mode)) {
            char owner[160];
            gy_owner_text(st.st_uid, owner, sizeof owner);
            close(fd);
            return gy_fail(err, ENOTDIR, "%s (above %s) is a %s owned by %s, not a directory: remove it or choose "
                                         "another directory", at, shown, type_text(st.st_mode), owner);
        }
        if (check_ancestor(&st, at, shown, err)) {
            close(fd);
            return -1;
        }
        close(*cur);
        *cur = fd;
        return fd;
    }
}

/* Append `name` to the walked path, or drop its last component for "..". */
static int walked_push(gy_private_path *p, const char *name, const char *shown, gy_err *err)
{
    if (strcmp(name, "..") == 0) {
        char *slash = strrchr(p->path, '/');
        if (slash == p->path)
            p->path[1] = '\0';
        else if (slash)
            *slash = '\0';
        return 0;
    }
    char next[PATH_MAX + NAME_MAX + 2];
    walked_plus(p, name, next, sizeof next);
    if (strlen(next) >= sizeof p->path)
        return gy_fail(err, ENAMETOOLONG, "directory %s leads to a path too long", shown);
    memcpy(p->path, next, strlen(next) + 1);
    return 0;
}

int gy_private_dir(const char *path, gy_private_path *out, gy_err *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "/");
    char rest[PATH_MAX];
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    if (n == 0 || n >= sizeof rest)
        return gy_fail(err, ENAMETOOLONG, "directory '%s' is empty or too long", path);
    if (path[0] != '/')
        return gy_fail(err, EINVAL, "directory '%s' is not an absolute path", path);
    memcpy(rest, path, n);
    rest[n] = '\0';
    const char *last = strrchr(rest, '/') + 1;
    if (!*last || strcmp(last, ".") == 0 || strcmp(last, "..") == 0)
        return gy_fail(err, EINVAL, "directory '%s' must end in a name, not '/', '.' or '..'", path);
    int cur = open_root(path, err), links = 0;
    if (cur < 0)
        return -1;
    for (;;) {
        char *p = rest + strspn(rest, "/");
        size_t len = strcspn(p, "/");
        char name[NAME_MAX + 1];
        if (len > NAME_MAX) {
            gy_fail(err, ENAMETOOLONG, "'%.*s...' in %s is longer than %d bytes", 40, p, path, NAME_MAX);
            break;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        char *after = p + len;
        if (!after[strspn(after, "/")]) { /* the last component: the directory itself */
            char shown[PATH_MAX + NAME_MAX + 2];
            walked_plus(out, name, shown, sizeof shown);
            bool created;
            int fd = gy_private_dir_at(cur, name, shown, &created, err);
            if (fd < 0)
                break;
            if ((created && note_made(out, cur, name, shown, err)) || walked_push(out, name, path, err)) {
                close(fd);
                break;
            }
            close(cur);
            return fd;
        }
        memmove(rest, after, strlen(after) + 1); /* what is left to walk */
        if (strcmp(name, ".") == 0)
            continue;
        if (strcmp(name, "..") == 0) {
            int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            struct stat st;
            if (up < 0 || fstat(up, &st) != 0) {
                int e = errno;
                if (up >= 0)
                    close(up);
                gy_fail(err, e, "cannot open the directory above %s (in %s): %s", out->path, path, strerror(e));
                break;
            }
            walked_push(out, name, path, err);
            if (check_ancestor(&st, out->path, path, err)) {
                close(up);
                break;
            }
            close(cur);
            cur = up;
            continue;
        }
        int rc = step(&cur, name, rest, sizeof rest, &links, out, path, err);
        if (rc == -1)
            break;
        if (rc >= 0 && walked_push(out, name, path, err))
            break;
    }
    close(cur);
    gy_private_path_undo(out);
    return -1;
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
