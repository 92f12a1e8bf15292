/* Segment lifecycle: naming, create, open (with every check an opener owes), close, remove. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "errors.h"
#include "gpuyield.h"
#include "layout_stamp.h"
#include "owner_text.h"
#include "proc_identity.h"
#include "guarded.h"
#include "shared_wait.h"

#define TAG_MAX 40

static bool valid_tag(const char *tag)
{
    size_t n = strlen(tag);
    if (n == 0 || n > TAG_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = tag[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-'))
            return false;
    }
    return strcmp(tag, ".") != 0 && strcmp(tag, "..") != 0;
}

/* The owner of /dev/shm<name> when it is not us (shm_open names map there on Linux). */
static bool foreign_owner(const char *name, uid_t *owner)
{
    char path[GY_NAME_MAX + 16];
    struct stat st;
    snprintf(path, sizeof path, "/dev/shm%s", name);
    if (lstat(path, &st) != 0 || st.st_uid == geteuid())
        return false;
    *owner = st.st_uid;
    return true;
}

const char *gy_default_tag(void)
{
    const char *env = getenv("GPUYIELD_SHM");
    return env && *env ? env : GY_DEFAULT_TAG;
}

int gy_segment_name(const char *tag_or_name, char out[GY_NAME_MAX], gy_err *err)
{
    if (!tag_or_name)
        tag_or_name = gy_default_tag();
    if (strncmp(tag_or_name, "/gpuyield-", 10) == 0) {
        /* A full name: /gpuyield-<uid>-<tag>. The uid may be another user's; open refuses it. */
        const char *p = tag_or_name + 10;
        char *end;
        errno = 0;
        unsigned long uid = strtoul(p, &end, 10);
        if (end == p || *end != '-' || errno || uid > 0xffffffffu || !valid_tag(end + 1))
            return gy_fail(err, EINVAL,
                           "segment name '%s' is malformed: expected /gpuyield-<uid>-<tag> with a tag of 1..%d "
                           "characters from [A-Za-z0-9._-]",
                           tag_or_name, TAG_MAX);
        snprintf(out, GY_NAME_MAX, "%s", tag_or_name);
        return 0;
    }
    if (!valid_tag(tag_or_name))
        return gy_fail(err, EINVAL,
                       "experiment tag '%s' is invalid: use 1..%d characters from [A-Za-z0-9._-] (or a full "
                       "segment name /gpuyield-<uid>-<tag>)",
                       tag_or_name, TAG_MAX);
    snprintf(out, GY_NAME_MAX, "/gpuyield-%u-%s", (unsigned)getuid(), tag_or_name);
    return 0;
}

int gy_create(const char *tag_or_name, uint64_t drain_timeout_ns, gy_shm *out, gy_err *err)
{
    char name[GY_NAME_MAX];
    memset(out, 0, sizeof *out);
    out->slot = -1;
    if (gy_segment_name(tag_or_name, name, err))
        return -1;
    if (drain_timeout_ns > GY_MAX_DRAIN_TIMEOUT_NS)
        return gy_fail(err, EINVAL, "drain timeout of %llu ns is out of range: at most a day (0 for the default)",
                       (unsigned long long)drain_timeout_ns);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        uid_t squatter;
        if (e == EEXIST && foreign_owner(name, &squatter)) {
            char owner[160];
            gy_owner_text(squatter, owner, sizeof owner);
            return gy_fail(err, e,
                           "segment %s already exists and belongs to %s, not to you (uid %u): another user holds "
                           "this name; ask them (or root) to remove /dev/shm%s, or pick another tag",
                           name, owner, (unsigned)geteuid(), name);
        }
        if (e == EEXIST)
            return gy_fail(err, e,
                           "segment %s already exists: another experiment uses this tag, or a crashed one left "
                           "it; pick another tag, or run `expcontroller clean` (dead creators) or "
                           "`expcontroller remove --name %s`",
                           name, name);
        return gy_fail(err, e, "cannot create segment %s in /dev/shm: %s", name, strerror(e));
    }
    /* The mode we mean whatever the umask: a segment made 0000 under umask 0777 would be
     * refused to its own owner's other processes as "another user's". */
    if (fchmod(fd, 0600) != 0) {
        int e = errno;
        close(fd);
        shm_unlink(name);
        return gy_fail(err, e, "cannot set mode 0600 on segment %s: %s", name, strerror(e));
    }
    if (ftruncate(fd, sizeof(struct gy_segment)) != 0) {
        int e = errno;
        close(fd);
        shm_unlink(name);
        return gy_fail(err, e, "cannot size segment %s to %zu bytes: %s (is /dev/shm full?)", name,
                       sizeof(struct gy_segment), strerror(e));
    }
    struct gy_segment *seg = mmap(NULL, sizeof *seg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (seg == MAP_FAILED) {
        int e = errno;
        shm_unlink(name);
        return gy_fail(err, e, "cannot map segment %s: %s", name, strerror(e));
    }
    /* ftruncate zero-fills: every counter, slot and level starts at 0 (FREE, no job). */
    int rc = gy_mutex_init(seg);
    if (rc) {
        munmap(seg, sizeof *seg);
        shm_unlink(name);
        return gy_fail(err, rc, "cannot initialise the robust process-shared mutex of %s: %s", name, strerror(rc));
    }
    seg->layout_stamp = GY_LAYOUT_STAMP;
    seg->segment_size = sizeof *seg;
    seg->owner_uid = (uint32_t)geteuid();
    seg->creator_pid = getpid();
    seg->creator_start_time = gy_proc_start_time(getpid());
    seg->drain_timeout_ns = drain_timeout_ns ? drain_timeout_ns : GY_DEFAULT_DRAIN_TIMEOUT_NS;
    gy_guarded_init_segment(seg);
    snprintf(seg->name, sizeof seg->name, "%s", name);
    /* The magic goes in last: an opener racing with us sees either no magic or a whole header. */
    atomic_thread_fence(memory_order_release);
    seg->magic = GY_MAGIC;
    out->seg = seg;
    snprintf(out->name, sizeof out->name, "%s", name);
    return 0;
}

/* The start of the header, as every build since the stamp lays it out (leaked_segments.py too). */
struct gy_segment_head {
    uint64_t magic;
    uint32_t layout_stamp;
};
_Static_assert(offsetof(struct gy_segment, layout_stamp) == offsetof(struct gy_segment_head, layout_stamp),
               "the header's start moved");

static int other_build_fail(const char *name, uint32_t stamp, gy_err *err)
{
    return gy_fail(err, EPROTO,
                   "segment %s was made by a different gpuyield build (layout stamp %08x, this build's %08x): "
                   "remove it with `expcontroller remove --name %s` or restart the experiment",
                   name, (unsigned)stamp, (unsigned)GY_LAYOUT_STAMP, name);
}

int gy_open(const char *tag_or_name, gy_shm *out, gy_err *err)
{
    char name[GY_NAME_MAX];
    memset(out, 0, sizeof *out);
    out->slot = -1;
    if (gy_segment_name(tag_or_name, name, err))
        return -1;
    /* Non-blocking (a FIFO planted at the name must not hang us), no symlink followed (glibc's
     * shm_open adds O_NOFOLLOW; said here too), then checked before any use: type, owner, size. */
    int fd = shm_open(name, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT)
            return gy_fail(err, e,
                           "no segment %s: start the experiment first (run_exp creates one; by hand: "
                           "`expcontroller serve --name <tag>`), or check GPUYIELD_SHM",
                           name);
        uid_t other;
        if (e == EACCES && foreign_owner(name, &other)) {
            char owner[160];
            gy_owner_text(other, owner, sizeof owner);
            return gy_fail(err, e,
                           "segment %s belongs to another user, %s, not to you (uid %u): gpuyield segments are "
                           "private (0600); use your own tag",
                           name, owner, (unsigned)geteuid());
        }
        if (e == EACCES)
            return gy_fail(err, e, "segment %s belongs to another user: gpuyield segments are private (0600)",
                           name);
        if (e == ELOOP)
            return gy_fail(err, e, "segment %s is a symbolic link: a segment is a plain file; refused", name);
        return gy_fail(err, e, "cannot open segment %s: %s", name, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gy_fail(err, e, "cannot stat segment %s: %s", name, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return gy_fail(err, EPROTO,
                       "segment %s is not a regular file (mode %#o): someone put something else at its name; "
                       "refused",
                       name, (unsigned)st.st_mode);
    }
    if (st.st_uid != geteuid()) {
        char owner[160];
        gy_owner_text(st.st_uid, owner, sizeof owner);
        close(fd);
        return gy_fail(err, EACCES,
                       "segment %s is owned by %s, not by you (uid %u): gpuyield never joins another "
                       "user's experiment; use your own tag",
                       name, owner, (unsigned)geteuid());
    }
    if ((size_t)st.st_size != sizeof(struct gy_segment)) {
        /* Another build's layout may well have another size: say so when its header says so. */
        struct gy_segment_head head;
        bool other_build = pread(fd, &head, sizeof head, 0) == (ssize_t)sizeof head && head.magic == GY_MAGIC &&
                           head.layout_stamp != GY_LAYOUT_STAMP;
        close(fd);
        if (other_build)
            return other_build_fail(name, head.layout_stamp, err);
        return gy_fail(err, EPROTO,
                       "segment %s is %lld bytes, expected %zu: it is truncated or from another gpuyield "
                       "build; stop its users and `expcontroller remove --name %s`",
                       name, (long long)st.st_size, sizeof(struct gy_segment), name);
    }
    struct gy_segment *seg = mmap(NULL, sizeof *seg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (seg == MAP_FAILED) {
        int e = errno;
        return gy_fail(err, e, "cannot map segment %s: %s", name, strerror(e));
    }
    const char *why = NULL;
    if (seg->magic != GY_MAGIC)
        why = "is not a gpuyield segment (bad magic)";
    else if (seg->layout_stamp != GY_LAYOUT_STAMP) {
        uint32_t stamp = seg->layout_stamp;
        munmap(seg, sizeof *seg);
        return other_build_fail(name, stamp, err);
    } else if (seg->segment_size != sizeof *seg)
        why = "declares another size";
    else if (seg->owner_uid != (uint32_t)geteuid())
        why = "records another owner";
    else if (seg->drain_timeout_ns == 0 || seg->drain_timeout_ns > GY_MAX_DRAIN_TIMEOUT_NS)
        why = "holds a drain timeout out of range";
    else if (atomic_load(&seg->policy) >= GY_POLICY_COUNT || atomic_load(&seg->mps) > 1)
        why = "holds a policy out of range";
    if (why) {
        munmap(seg, sizeof *seg);
        return gy_fail(err, EPROTO,
                       "segment %s %s: it is corrupted or from another gpuyield version; stop its users and "
                       "`expcontroller remove --name %s`",
                       name, why, name);
    }
    atomic_thread_fence(memory_order_acquire);
    out->seg = seg;
    snprintf(out->name, sizeof out->name, "%s", name);
    return 0;
}

void gy_close(gy_shm *shm)
{
    if (!shm || !shm->seg)
        return;
    if (shm->slot >= 0)
        gy_unregister(shm);
    munmap(shm->seg, sizeof *shm->seg);
    shm->seg = NULL;
}

void gy_mark_removed(gy_shm *shm)
{
    /* Under the mutex, so that no level update racing with us drops the bit; without it when the
     * mutex cannot be had (a stopped holder): the bit still goes in. */
    bool locked = gy_lock(shm->seg) >= 0;
    atomic_fetch_or_explicit(&shm->seg->active_levels, GY_REMOVED_BIT, memory_order_seq_cst);
    for (int d = 0; d < GY_MAX_DEVICES; d++) /* every device's launches see it on the fast path */
        atomic_fetch_or_explicit(&shm->seg->devices[d].active_levels, GY_REMOVED_BIT, memory_order_seq_cst);
    if (locked)
        gy_unlock(shm->seg);
    gy_wake_all(shm->seg);
}

int gy_remove(const char *tag_or_name, gy_err *err)
{
    char name[GY_NAME_MAX];
    if (gy_segment_name(tag_or_name, name, err))
        return -1;
    /* Mark it first: hooked processes still attached must not go on launching ungated on a
     * segment nobody can join any more (a new one of the same name may be made next). A segment
     * that does not open cleanly (another user's, corrupted) is only unlinked. */
    gy_shm old;
    if (gy_open(name, &old, NULL) == 0) {
        gy_mark_removed(&old);
        gy_close(&old);
    }
    if (shm_unlink(name) != 0) {
        int e = errno;
        if (e == ENOENT)
            return gy_fail(err, e, "no segment %s to remove (already gone?)", name);
        return gy_fail(err, e, "cannot remove segment %s: %s", name, strerror(e));
    }
    return 0;
}

int gy_segment_identity(const char *name, dev_t *dev, ino_t *ino)
{
    /* One lstat of the name under /dev/shm (where glibc's shm_open puts it), no open: whatever is
     * there (a FIFO, a symlink) cannot block us, and its identity tells it from our segment. Each
     * Python begin() asks this: on the H100 every syscall of a begin after idle time cost about as
     * much as a whole hot begin (bench/results/2026-11-24-begin-cost); open+fstat+close were three. */
    char path[sizeof "/dev/shm/" + GY_NAME_MAX];
    if (snprintf(path, sizeof path, "/dev/shm/%s", name[0] == '/' ? name + 1 : name) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    struct stat st;
    if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISREG(st.st_mode)) /* a symlink, a FIFO, a device: not our segment, so another */
        return *dev = 0, *ino = 0, 1;
    *dev = st.st_dev;
    *ino = st.st_ino;
    return 1;
}

void gy_set_policy(gy_shm *shm, enum gy_policy policy, bool mps)
{
    atomic_store(&shm->seg->policy, (uint32_t)policy);
    atomic_store(&shm->seg->mps, mps ? 1u : 0u);
}

enum gy_policy gy_get_policy(const gy_shm *shm)
{
    uint32_t policy = atomic_load(&shm->seg->policy);
    return policy < GY_POLICY_COUNT ? (enum gy_policy)policy : GY_POLICY_DRAIN;
}

bool gy_get_mps(const gy_shm *shm) { return atomic_load(&shm->seg->mps) == 1; }
