/* Turns an .nsys-rep into an SQLite export with `nsys export`, into a private temporary
 * directory that is removed afterwards, also when the user interrupts the export. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inputs.h"

/* What the signal handler must clean up while an export runs. */
static volatile sig_atomic_t export_child;
static char cleanup_file[PATH_MAX];
static char cleanup_dir[PATH_MAX];

static void on_interrupt(int sig)
{
    if (export_child > 0) {
        kill((pid_t)export_child, SIGTERM);
        waitpid((pid_t)export_child, NULL, 0);
    }
    unlink(cleanup_file);
    rmdir(cleanup_dir);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The nsys to run: the one given, or the first executable nsys on PATH; NULL if none. */
static char *find_nsys(const char *given)
{
    if (given)
        return access(given, X_OK) == 0 ? strdup(given) : NULL;
    const char *path = getenv("PATH");
    if (!path)
        return NULL;
    char *dirs = strdup(path), *save = NULL, *found = NULL;
    if (!dirs)
        return NULL;
    for (char *dir = strtok_r(dirs, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char candidate[PATH_MAX];
        struct stat st;
        if (snprintf(candidate, sizeof candidate, "%s/nsys", *dir ? dir : ".") >= (int)sizeof candidate)
            continue;
        if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0)
            found = strdup(candidate);
    }
    free(dirs);
    return found;
}

void np_remove_export(char *sqlite_path, char *temp_dir)
{
    if (temp_dir) {
        DIR *d = opendir(temp_dir); /* nsys may leave more than the export there */
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                char p[PATH_MAX];
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
                    snprintf(p, sizeof p, "%s/%s", temp_dir, e->d_name) < (int)sizeof p)
                    unlink(p);
            }
            closedir(d);
        }
        rmdir(temp_dir);
    }
    free(sqlite_path);
    free(temp_dir);
}

bool np_export_nsys_rep(const char *rep_path, const char *nsys_path, char **sqlite_path, char **temp_dir)
{
    *sqlite_path = *temp_dir = NULL;
    char *nsys = find_nsys(nsys_path);
    if (!nsys) {
        if (nsys_path)
            fprintf(stderr, "nsight-parser: --nsys %s: not an executable file: give the path of Nsight Systems' "
                            "nsys\n", nsys_path);
        else
            fprintf(stderr, "nsight-parser: %s is an .nsys-rep, and no nsys is on PATH to export it: add Nsight "
                            "Systems to PATH, give --nsys PATH, or pass an SQLite export "
                            "(nsys export --type sqlite %s)\n", rep_path, rep_path);
        return false;
    }
    const char *tmp = getenv("TMPDIR");
    char dir_template[PATH_MAX];
    snprintf(dir_template, sizeof dir_template, "%s/nsight-parser-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir_template)) {
        fprintf(stderr, "nsight-parser: cannot create a temporary directory for the export (%s): %s; set TMPDIR "
                        "to a writable directory\n", dir_template, strerror(errno));
        free(nsys);
        return false;
    }
    *temp_dir = strdup(dir_template);
    size_t len = strlen(dir_template) + sizeof "/report.sqlite";
    *sqlite_path = malloc(len);
    if (!*temp_dir || !*sqlite_path) {
        free(nsys);
        np_remove_export(*sqlite_path, *temp_dir ? *temp_dir : strdup(dir_template));
        *sqlite_path = *temp_dir = NULL;
        return np_out_of_memory("export path");
    }
    snprintf(*sqlite_path, len, "%s/report.sqlite", dir_template);
    snprintf(cleanup_file, sizeof cleanup_file, "%s", *sqlite_path);
    snprintf(cleanup_dir, sizeof cleanup_dir, "%s", *temp_dir);

    struct sigaction sa = {.sa_handler = on_interrupt}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    fprintf(stderr, "nsight-parser: exporting %s to SQLite with %s\n", rep_path, nsys);
    /* Held until export_child names the child: a Ctrl-C that came between the fork and that
     * store found no child to stop, and nsys ran on, orphaned, holding our output pipes open. */
    sigset_t stops, before;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    sigprocmask(SIG_BLOCK, &stops, &before);
    pid_t child = fork();
    if (child == 0) {
        sigaction(SIGINT, &old_int, NULL); /* the caller's, not our cleanup, until exec */
        sigaction(SIGTERM, &old_term, NULL);
        sigprocmask(SIG_SETMASK, &before, NULL);
        /* stdout carries nsys's chatter: keep ours for results. */
        dup2(STDERR_FILENO, STDOUT_FILENO);
        execl(nsys, nsys, "export", "--type", "sqlite", "--output", *sqlite_path, rep_path, (char *)NULL);
        fprintf(stderr, "nsight-parser: cannot run %s: %s\n", nsys, strerror(errno));
        _exit(127);
    }
    int status = 0;
    bool ok = child > 0;
    if (child > 0)
        export_child = child;
    sigprocmask(SIG_SETMASK, &before, NULL);
    if (child > 0) {
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
            ;
        export_child = 0;
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    struct stat st;
    if (!ok) {
        fprintf(stderr, "nsight-parser: cannot start %s: %s\n", nsys, strerror(errno));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || stat(*sqlite_path, &st) != 0) {
        fprintf(stderr, "nsight-parser: %s export --type sqlite %s failed (%s %d): is %s an Nsight Systems "
                        "report? Its messages are above.\n", nsys, rep_path,
                WIFEXITED(status) ? "exit status" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
                rep_path);
        ok = false;
    }
    free(nsys);
    if (!ok) {
        np_remove_export(*sqlite_path, *temp_dir);
        *sqlite_path = *temp_dir = NULL;
    }
    return ok;
}
