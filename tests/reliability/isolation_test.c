/* Isolation: two experiments of one user side by side do not see each other; a full process
 * table is a clear error through the controller, the hook and the Python extension; another
 * user cannot open our segment (run as root: a child switches to nobody to try).
 *
 * Env for the hook and Python parts (each skipped with a note when unset):
 *   GY_CUDA_WORKER, GY_HOOK_LIB, GY_FAKECUDA_DIR   a CUDA program under the hook, fake driver
 *   GY_PYTHON, GY_PYTHONPATH                       a python3 and where gpuyield is built */
#define GY_TEST_MAIN
#include "../lib/harness.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuyield.h"

#define MS 1000000ull
#define NOBODY 65534

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static bool create_fresh(const char *what, gy_shm *shm)
{
    static int n;
    char tag[64];
    gy_err err;
    snprintf(tag, sizeof tag, "test-iso-%d-%d-%s", getpid(), n++, what);
    if (gy_create(tag, 300 * MS, shm, &err)) {
        fprintf(stderr, "  create: %s\n", err.msg);
        return false;
    }
    return true;
}

static void destroy(gy_shm *shm)
{
    char name[GY_NAME_MAX];
    snprintf(name, sizeof name, "%s", shm->name);
    gy_close(shm);
    gy_remove(name, NULL);
}

/* Runs argv with extra environment, output captured into out; returns the exit status (128+sig
 * for a signal, -1 when it could not run, 124 when it ran past timeout_ms and was killed). */
static int run_captured(char *const argv[], char *const env[], char *out, size_t out_len, unsigned timeout_ms)
{
    int pipefd[2];
    if (pipe(pipefd))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        close(pipefd[0]);
        for (int i = 0; env[i]; i++)
            putenv(env[i]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(pipefd[1]);
    fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    size_t used = 0;
    int status = 0;
    uint64_t until = gy_now_ns() + (uint64_t)timeout_ms * MS;
    bool done = false, killed = false;
    while (!done) {
        ssize_t n = read(pipefd[0], out + used, out_len - 1 - used);
        if (n > 0)
            used += (size_t)n;
        if (waitpid(pid, &status, WNOHANG) == pid)
            done = true;
        else if (gy_now_ns() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            done = killed = true;
        } else if (n <= 0)
            sleep_ms(5);
    }
    ssize_t n;
    while (used < out_len - 1 && (n = read(pipefd[0], out + used, out_len - 1 - used)) > 0)
        used += (size_t)n;
    out[used] = '\0';
    close(pipefd[0]);
    if (killed)
        return 124;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static bool have_hook(void) { return getenv("GY_CUDA_WORKER") && getenv("GY_HOOK_LIB") && getenv("GY_FAKECUDA_DIR"); }
static bool have_python(void) { return getenv("GY_PYTHON") && getenv("GY_PYTHONPATH"); }

/* A CUDA program under the hook, joined to segment name at the priority given. */
static int run_hooked(const char *name, const char *priority, char *out, size_t len)
{
    static char preload[600], libpath[600], shm_env[128], prio_env[64];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("GY_HOOK_LIB"));
    snprintf(libpath, sizeof libpath, "LD_LIBRARY_PATH=%s", getenv("GY_FAKECUDA_DIR"));
    snprintf(shm_env, sizeof shm_env, "GPUYIELD_SHM=%s", name);
    snprintf(prio_env, sizeof prio_env, "GPUYIELD_PRIORITY=%s", priority);
    char *env[] = {preload, libpath, shm_env, prio_env, NULL};
    char *argv[] = {getenv("GY_CUDA_WORKER"), "plain", "3", NULL};
    return run_captured(argv, env, out, len, 10000);
}

/* Python: connect to name and begin a job at priority 1 (which registers). */
static int run_python_begin(const char *name, char *out, size_t len)
{
    static char pypath[600];
    snprintf(pypath, sizeof pypath, "PYTHONPATH=%s", getenv("GY_PYTHONPATH"));
    char *env[] = {pypath, NULL};
    char code[512];
    snprintf(code, sizeof code,
             "import gpuyield, sys\n"
             "try:\n"
             "    s = gpuyield.connect('%s'); s.begin(1); s.end(1); s.close()\n"
             "except gpuyield.Error as e:\n"
             "    print('gpuyield.Error', e.errno, e); sys.exit(3)\n",
             name);
    char *argv[] = {getenv("GY_PYTHON"), "-c", code, NULL};
    return run_captured(argv, env, out, len, 20000);
}

/* ---- same user, two experiments --------------------------------------------------------------- */

TEST(two_experiments_side_by_side_do_not_see_each_other)
{
    gy_shm a, b;
    gy_err err;
    gy_job job_a, job_b;
    REQUIRE(create_fresh("sideA", &a));
    REQUIRE(create_fresh("sideB", &b));
    CHECK(strcmp(a.name, b.name) != 0);
    REQUIRE(gy_register(&a, 7, &err) == 0, "%s", err.msg);
    REQUIRE(gy_register(&b, 0, &err) == 0, "%s", err.msg);
    /* In A: a low process with work "in flight" and no helper, so A's jobs wait out the drain. */
    fflush(NULL);
    pid_t low = fork();
    if (low == 0) {
        gy_shm a_low;
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (gy_open(a.name, &a_low, &err) || gy_register(&a_low, 0, &err))
            _exit(1);
        gy_mark_inflight(&a_low);
        for (;;)
            pause();
    }
    uint64_t until = gy_now_ns() + 5000 * MS;
    int inflight = 0;
    while (!inflight && gy_now_ns() < until) {
        for (int i = 0; i < GY_MAX_PROCS; i++)
            inflight += a.seg->procs[i].pid == low && atomic_load(&a.seg->procs[i].inflight);
        sleep_ms(2);
    }
    REQUIRE(inflight, "A's low process did not register");
    REQUIRE(gy_begin(&a, 7, &job_a, &err) == 0, "%s", err.msg);
    CHECK(job_a.timed_out, "A's job waits for A's own low process");
    CHECK(!gy_launch_allowed(&a, 0), "A's low level is gated by A's job");
    CHECK(gy_launch_allowed(&b, 0), "a job in A must not gate B");
    uint64_t t0 = gy_now_ns();
    gy_wait_until_allowed(&b, NULL);
    CHECK(gy_now_ns() - t0 < 1000 * MS, "B's launch waited on A");
    /* B's own job: nothing of A may hold it up (A's low process owes A a drain, not B). */
    gy_mark_inflight(&b);
    gy_shm b_high;
    REQUIRE(gy_open(b.name, &b_high, &err) == 0 && gy_register(&b_high, 5, &err) == 0, "%s", err.msg);
    gy_unregister(&b);
    REQUIRE(gy_begin(&b_high, 5, &job_b, &err) == 0, "%s", err.msg);
    CHECK(job_b.drained && !job_b.timed_out && job_b.wait_ns < 200 * MS, "B's job waited %llu ms",
          (unsigned long long)(job_b.wait_ns / MS));
    static struct gy_status sa, sb;
    REQUIRE(gy_status_read(&a, &sa, &err) == 0 && gy_status_read(&b, &sb, &err) == 0, "%s", err.msg);
    CHECK(sa.nprocs == 2 && sb.nprocs == 1, "A lists %d processes, B %d", sa.nprocs, sb.nprocs);
    CHECK(sa.jobs[7] == 1 && sb.jobs[7] == 0 && sb.jobs[5] == 1 && sa.jobs[5] == 0);
    CHECK(gy_reap(&b) == 0 && gy_reap(&a) == 0);
    gy_job_exit(&b_high, &job_b, &err);
    gy_job_exit(&a, &job_a, &err);
    gy_close(&b_high);
    kill(low, SIGKILL);
    waitpid(low, NULL, 0);
    destroy(&a);
    destroy(&b);
}

/* ---- a full process table ----------------------------------------------------------------------- */

TEST(a_full_table_is_a_clear_error_everywhere)
{
    gy_shm owner;
    gy_err err;
    REQUIRE(create_fresh("full", &owner));
    static gy_shm handles[GY_MAX_PROCS];
    int filled = 0;
    for (int i = 0; i < GY_MAX_PROCS; i++) {
        if (gy_open(owner.name, &handles[i], &err) || gy_register(&handles[i], 0, &err))
            break;
        filled++;
    }
    REQUIRE(filled == GY_MAX_PROCS, "only %d registrations", filled);
    gy_shm extra;
    REQUIRE(gy_open(owner.name, &extra, &err) == 0);
    CHECK(gy_register(&extra, 3, &err) == -1 && err.code == ENOSPC && strstr(err.msg, "is full") &&
              strstr(err.msg, owner.name),
          "%s", err.msg);
    gy_close(&extra);
    static char out[8192];
    if (have_hook()) {
        int rc = run_hooked(owner.name, "2", out, sizeof out);
        CHECK(rc == 2 && strstr(out, "is full") && strstr(out, "GPUYIELD_SHM"),
              "hooked program: exit %d, wanted 2 and a line saying the table is full: %s", rc, out);
    } else {
        printf("note: GY_CUDA_WORKER/GY_HOOK_LIB/GY_FAKECUDA_DIR unset: the hook's full-table error is not tested\n");
    }
    if (have_python()) {
        int rc = run_python_begin(owner.name, out, sizeof out);
        CHECK(rc == 3 && strstr(out, "gpuyield.Error 28") && strstr(out, "is full"),
              "python: exit %d, wanted gpuyield.Error(ENOSPC) saying the table is full: %s", rc, out);
    } else {
        printf("note: GY_PYTHON/GY_PYTHONPATH unset: the extension's full-table error is not tested\n");
    }
    /* One slot freed: the next process gets in. */
    gy_close(&handles[0]);
    if (have_hook()) {
        int rc = run_hooked(owner.name, "2", out, sizeof out);
        CHECK(rc == 0, "hooked program after a slot was freed: exit %d: %s", rc, out);
    }
    for (int i = 1; i < GY_MAX_PROCS; i++)
        gy_close(&handles[i]);
    destroy(&owner);
}

/* ---- another user --------------------------------------------------------------------------- */

TEST(segments_are_private_to_their_user)
{
    gy_shm shm;
    gy_err err;
    REQUIRE(create_fresh("private", &shm));
    struct stat st;
    char path[GY_NAME_MAX + 16];
    snprintf(path, sizeof path, "/dev/shm%s", shm.name);
    REQUIRE(stat(path, &st) == 0);
    CHECK((st.st_mode & 0777) == 0600 && st.st_uid == geteuid(), "mode %o uid %u", st.st_mode & 0777,
          (unsigned)st.st_uid);
    char expected_prefix[64];
    snprintf(expected_prefix, sizeof expected_prefix, "/gpuyield-%u-", (unsigned)getuid());
    CHECK(strncmp(shm.name, expected_prefix, strlen(expected_prefix)) == 0, "%s", shm.name);
    if (geteuid() != 0) {
        printf("note: not root: opening the segment as another user is not tested\n");
        destroy(&shm);
        return;
    }
    /* Another user, for real: a child drops to nobody and tries every way in. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
            _exit(10);
        gy_shm other;
        gy_err e;
        if (gy_open(shm.name, &other, &e) == 0)
            _exit(11); /* opened another user's segment */
        if (e.code != EACCES || !strstr(e.msg, "another user"))
            _exit(12);
        /* Its own tag names its own segment: never ours. */
        char name[GY_NAME_MAX];
        if (gy_segment_name("x", name, &e) || strncmp(name, "/gpuyield-65534-", 16) != 0)
            _exit(13);
        int fd = shm_open(shm.name, O_RDONLY, 0);
        _exit(fd >= 0 ? 14 : 0);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "as nobody: exit %d (11: opened it, 12: unclear error, 13: named it, 14: read it)",
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    /* A segment of another user under our prefix (chowned): refused by the opener's owner check. */
    CHECK(chown(path, NOBODY, NOBODY) == 0);
    gy_shm other;
    CHECK(gy_open(shm.name, &other, &err) == -1 && err.code == EACCES && strstr(err.msg, "not by you"), "%s",
          err.msg);
    if (have_hook()) {
        static char out[4096];
        int rc = run_hooked(shm.name, "1", out, sizeof out);
        CHECK(rc == 2 && strstr(out, "not by you"), "hooked program on another user's segment: exit %d: %s", rc,
              out);
    }
    if (have_python()) {
        static char out[4096];
        int rc = run_python_begin(shm.name, out, sizeof out);
        CHECK(rc == 3 && strstr(out, "gpuyield.Error 13"), "python on another user's segment: exit %d: %s", rc, out);
    }
    destroy(&shm);
}
