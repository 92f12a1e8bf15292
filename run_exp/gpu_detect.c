#include "gpu_detect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int count_visible(const char *list)
{
    int n = 1;
    if (!*list)
        return 0;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    return n;
}

int gpu_count_detect(void)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]), close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(fds[1], 1);
        if (devnull >= 0)
            dup2(devnull, 2);
        execlp("nvidia-smi", "nvidia-smi", "-L", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    int gpus = 0;
    char line[512];
    while (f && fgets(line, sizeof line, f))
        gpus += strncmp(line, "GPU ", 4) == 0;
    if (f)
        fclose(f);
    else
        close(fds[0]);
    int status;
    pid_t r;
    do
        r = waitpid(pid, &status, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || gpus == 0)
        return -1;
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (visible) {
        int v = count_visible(visible);
        if (v < gpus)
            gpus = v;
        if (gpus == 0)
            return -1;
    }
    return gpus;
}
