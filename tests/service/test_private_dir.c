/* Private directories made along a path (service/private_dir.h, issue 29 item 2): the walk from
 * "/" with *at() calls, a missing parent another user makes first, a parent reached through
 * another user's symbolic link, umask 0777, and nothing left behind on a failure (suite 55-mps).
 * Another user is uid 65534 (chown as root: the cases that need one are skipped otherwise). */
#define GY_TEST_MAIN
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "private_dir.h"

#define OTHER_UID 65534

/* The racing user, made deterministic: the next mkdir of a directory named race_on (by the code
 * under test, through mkdir or mkdirat) finds it already made, by uid 65534, mode 0777, as if
 * another user had won the race between the check and the mkdir. */
static const char *race_on;
static int races_run;

int mkdirat(int dirfd, const char *path, mode_t mode)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (race_on && strcmp(base, race_on) == 0) {
        race_on = NULL;
        if (syscall(SYS_mkdirat, dirfd, path, 0777) == 0 && fchownat(dirfd, path, OTHER_UID, OTHER_UID, AT_SYMLINK_NOFOLLOW) == 0 &&
            fchmodat(dirfd, path, 0777, 0) == 0)
            races_run++;
    }
    return (int)syscall(SYS_mkdirat, dirfd, path, mode);
}

int mkdir(const char *path, mode_t mode) { return mkdirat(AT_FDCWD, path, mode); }

static char base[64];

static void make_base(void)
{
    snprintf(base, sizeof base, "/tmp/gy-private-dir.XXXXXX");
    if (!mkdtemp(base))
        abort();
}

static void remove_base(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    if (system(cmd) != 0)
        fprintf(stderr, "  could not remove %s\n", base);
}

static const char *at(const char *rel)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, 512, "%s/%s", base, rel);
    return p;
}

static int mode_of(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 ? (int)(st.st_mode & 07777) : -1;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static bool is_root(void) { return geteuid() == 0; }

static gy_err err;
static gy_private_path walked;

/* The directory at path made or verified (what was made kept): its descriptor, or -1 with err
 * filled. walked.path is the directory as walked. */
static int walk(const char *path)
{
    memset(&err, 0, sizeof err);
    int fd = gy_private_dir(path, &walked, &err);
    gy_private_path_keep(&walked);
    return fd;
}

static char real_base[PATH_MAX];

/* rel below the base as walked (links resolved: /tmp itself may be one). */
static const char *real_at(const char *rel)
{
    static char p[PATH_MAX + 64];
    if (!realpath(base, real_base))
        abort();
    snprintf(p, sizeof p, "%s/%s", real_base, rel);
    return p;
}

TEST(a_missing_parent_another_user_makes_first_is_refused)
{
    if (!is_root())
        SKIP("needs root to make a directory as uid 65534");
    make_base();
    REQUIRE(mkdir(at("sticky"), 01777) == 0 && chmod(at("sticky"), 01777) == 0);
    races_run = 0;
    race_on = "missing";
    int fd = walk(at("sticky/missing/mps"));
    race_on = NULL;
    CHECK(races_run == 1);
    CHECK(fd < 0, "a parent made by uid 65534 in the race was taken");
    CHECK(strstr(err.msg, "sticky/missing") && strstr(err.msg, "uid 65534"), "%s", err.msg);
    CHECK(!exists(at("sticky/missing/mps")), "our directory was made in theirs");
    if (fd >= 0)
        close(fd);
    remove_base();
}

TEST(a_parent_through_another_users_symlink_is_refused)
{
    if (!is_root())
        SKIP("needs root to own a symbolic link as uid 65534");
    make_base();
    REQUIRE(mkdir(at("target"), 0755) == 0);
    REQUIRE(symlink(at("target"), at("link")) == 0 && lchown(at("link"), OTHER_UID, OTHER_UID) == 0);
    int fd = walk(at("link/mps"));
    CHECK(fd < 0, "a parent reached through uid 65534's link (they can re-point it) was taken");
    CHECK(strstr(err.msg, "link") && strstr(err.msg, "symbolic link") && strstr(err.msg, "uid 65534"), "%s", err.msg);
    CHECK(!exists(at("target/mps")));
    if (fd >= 0)
        close(fd);
    /* Deeper: a link of theirs anywhere on the path, the directory above it missing below. */
    REQUIRE(mkdir(at("target/deep"), 0755) == 0);
    fd = walk(at("link/deep/more/mps"));
    CHECK(fd < 0);
    CHECK(!exists(at("target/deep/more")), "made something under their link");
    if (fd >= 0)
        close(fd);
    remove_base();
}

TEST(a_symlink_of_ours_into_another_users_directory_is_refused)
{
    if (!is_root())
        SKIP("needs root to make a directory of uid 65534");
    make_base();
    REQUIRE(mkdir(at("theirs"), 0755) == 0 && chown(at("theirs"), OTHER_UID, OTHER_UID) == 0);
    REQUIRE(symlink(at("theirs"), at("ours")) == 0);
    int fd = walk(at("ours/mps"));
    CHECK(fd < 0);
    CHECK(strstr(err.msg, "theirs") && strstr(err.msg, "uid 65534"), "%s", err.msg);
    CHECK(!exists(at("theirs/mps")));
    if (fd >= 0)
        close(fd);
    remove_base();
}

TEST(a_parent_of_another_user_open_to_others_is_refused_sticky_or_not)
{
    if (!is_root())
        SKIP("needs root to make a directory of uid 65534");
    make_base();
    REQUIRE(mkdir(at("open"), 0777) == 0 && chmod(at("open"), 0777) == 0 && chown(at("open"), OTHER_UID, OTHER_UID) == 0);
    REQUIRE(mkdir(at("sticky"), 0777) == 0 && chmod(at("sticky"), 01777) == 0 &&
            chown(at("sticky"), OTHER_UID, OTHER_UID) == 0);
    int fd = walk(at("open/a/mps"));
    CHECK(fd < 0 && strstr(err.msg, "uid 65534"), "%s", err.msg);
    CHECK(!exists(at("open/a")));
    if (fd >= 0)
        close(fd);
    fd = walk(at("sticky/a/mps")); /* its owner can rename what is in it */
    CHECK(fd < 0 && strstr(err.msg, "uid 65534"), "%s", err.msg);
    CHECK(!exists(at("sticky/a")));
    if (fd >= 0)
        close(fd);
    remove_base();
}

TEST(a_symlink_of_ours_in_a_verified_directory_is_followed)
{
    make_base();
    REQUIRE(mkdir(at("target"), 0755) == 0);
    REQUIRE(symlink("target", at("rel")) == 0 && symlink(at("target"), at("abs")) == 0);
    int fd = walk(at("rel/one"));
    CHECK(fd >= 0, "%s", err.msg);
    CHECK(mode_of(at("target/one")) == 0700);
    CHECK(strcmp(walked.path, real_at("target/one")) == 0, "%s", walked.path); /* what others are told */
    if (fd >= 0)
        close(fd);
    fd = walk(at("abs/x/two"));
    CHECK(fd >= 0, "%s", err.msg);
    CHECK(mode_of(at("target/x")) == 0700 && mode_of(at("target/x/two")) == 0700);
    CHECK(strcmp(walked.path, real_at("target/x/two")) == 0, "%s", walked.path);
    if (fd >= 0)
        close(fd);
    remove_base();
}

TEST(the_last_component_a_symlink_is_refused)
{
    make_base();
    REQUIRE(mkdir(at("target"), 0700) == 0 && symlink(at("target"), at("last")) == 0);
    int fd = walk(at("last"));
    CHECK(fd < 0 && strstr(err.msg, "symbolic link"), "%s", err.msg);
    if (fd >= 0)
        close(fd);
    remove_base();
}

TEST(a_component_that_is_a_file_is_refused_naming_it)
{
    make_base();
    int f = open(at("file"), O_CREAT | O_WRONLY, 0600);
    REQUIRE(f >= 0);
    close(f);
    int fd = walk(at("file/mps"));
    CHECK(fd < 0 && strstr(err.msg, "file"), "%s", err.msg);
    if (fd >= 0)
        close(fd);
    remove_base();
}

TEST(under_umask_0777_every_directory_made_is_0700)
{
    make_base();
    mode_t old = umask(0777);
    int fd = walk(at("u/a/mps"));
    umask(old);
    CHECK(fd >= 0, "%s", err.msg);
    CHECK(mode_of(at("u")) == 0700, "%04o", mode_of(at("u")));
    CHECK(mode_of(at("u/a")) == 0700, "%04o", mode_of(at("u/a")));
    CHECK(mode_of(at("u/a/mps")) == 0700, "%04o", mode_of(at("u/a/mps")));
    if (fd >= 0)
        close(fd);
    remove_base();
}

TEST(a_failure_after_parents_were_made_leaves_nothing_behind)
{
    make_base();
    char path[600], name[300];
    memset(name, 'n', 299);
    name[299] = '\0';                         /* longer than NAME_MAX: mkdirat fails */
    snprintf(path, sizeof path, "%s/made/a/%s", base, name);
    mode_t old = umask(0777);
    int fd = walk(path);
    umask(old);
    CHECK(fd < 0);
    CHECK(!exists(at("made")), "left behind with mode %04o", mode_of(at("made")));
    if (fd >= 0)
        close(fd);
    remove_base();
}

TEST(dot_and_dot_dot_are_walked)
{
    make_base();
    REQUIRE(mkdir(at("a"), 0755) == 0 && mkdir(at("a/b"), 0755) == 0);
    int fd = walk(at("a/./b/../mps"));
    CHECK(fd >= 0, "%s", err.msg);
    CHECK(mode_of(at("a/mps")) == 0700);
    CHECK(strcmp(walked.path, real_at("a/mps")) == 0, "%s", walked.path);
    if (fd >= 0)
        close(fd);
    remove_base();
}
