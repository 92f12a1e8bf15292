/* summary.json's provenance. External programs (nvidia-smi, git) run without a shell, with their
 * output bounded; any of them missing or failing gives null, never an error. */
#include "provenance.h"

#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpuyield.h"
#include "status_text.h"

extern char **environ;

/* The first line of argv's stdout, or false (not found, non-zero exit, empty output). */
static bool first_line_of(char *const argv[], char *out, size_t len)
{
    int fds[2];
    if (pipe(fds))
        return false;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", 0, 0);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc) {
        close(fds[0]);
        return false;
    }
    size_t used = 0;
    ssize_t n;
    char sink[256];
    while ((n = read(fds[0], used + 1 < len ? out + used : sink, used + 1 < len ? len - 1 - used : sizeof sink)) > 0)
        if (used + 1 < len)
            used += (size_t)n;
    close(fds[0]);
    out[used] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return false;
    return out[0] != '\0';
}

static json_t *string_or_null(bool ok, const char *s) { return ok ? json_string(s) : json_null(); }

/* The source tree: run_exp lies at <tree>/build/bin/run_exp (or <tree>/<O>/bin). */
static bool git_commit(char *out, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(exe, '/');
        if (!slash || slash == exe)
            return false;
        *slash = '\0';
    }
    char *argv[] = {"git", "-C", exe, "rev-parse", "--verify", "-q", "HEAD", NULL};
    return first_line_of(argv, out, len);
}

json_t *provenance_json(const char *config_path, int device_id, bool simulated)
{
    char stamp[48], host[256] = "", gpu[512] = "", commit[64], config[PATH_MAX];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    gy_rfc3339(&now, stamp, sizeof stamp);
    bool have_host = gethostname(host, sizeof host - 1) == 0;
    char device[16];
    snprintf(device, sizeof device, "%d", device_id);
    char *smi[] = {"nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader", "-i", device, NULL};
    bool have_gpu = !simulated && first_line_of(smi, gpu, sizeof gpu);
    char *comma = have_gpu ? strchr(gpu, ',') : NULL;
    json_t *gpu_json;
    if (comma) {
        *comma = '\0';
        const char *driver = comma + 1 + strspn(comma + 1, " ");
        gpu_json = json_pack("{s:s,s:s}", "name", gpu, "driver", driver);
    } else {
        gpu_json = json_pack("{s:n,s:n}", "name", "driver");
    }
    bool have_commit = git_commit(commit, sizeof commit);
    bool have_config = realpath(config_path, config) != NULL;
    return json_pack("{s:s,s:o,s:o,s:s,s:o,s:s}", "time", stamp, "host", string_or_null(have_host, host), "gpu",
                     gpu_json, "gpuyield_version", gy_version(), "git_commit", string_or_null(have_commit, commit),
                     "config", have_config ? config : config_path);
}
