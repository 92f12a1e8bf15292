/* Preloaded into `expcontroller serve` by 10-controller.sh: right after shm_open creates a
 * segment, the process sends itself SIGTERM. That is the moment a stop request used to kill serve
 * before its handlers were installed, leaving the segment in /dev/shm; made certain here, not left
 * to a race. Only creating opens (O_CREAT) signal. */
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/types.h>

int shm_open(const char *name, int oflag, mode_t mode)
{
    int (*real)(const char *, int, mode_t) = (int (*)(const char *, int, mode_t))dlsym(RTLD_NEXT, "shm_open");
    if (!real)
        return -1;
    int fd = real(name, oflag, mode);
    if (fd >= 0 && (oflag & O_CREAT))
        raise(SIGTERM);
    return fd;
}
