#include "fuzz_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char path[128];

static void remove_file(void)
{
    if (path[0])
        unlink(path);
}

const char *fuzz_file_write(const uint8_t *data, size_t size, const char *extension)
{
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/gpuyield-fuzz-%d.%s", (int)getpid(), extension);
        atexit(remove_file);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    size_t written = fwrite(data, 1, size, f);
    if (fclose(f) != 0 || written != size)
        return NULL;
    return path;
}
