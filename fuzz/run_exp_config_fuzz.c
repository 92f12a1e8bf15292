/* Fuzz target: run_exp's experiment-file validator (config_load) on arbitrary bytes. It reads a
 * path, so each input goes through a private temporary file, removed when the process exits. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file_write(data, size, "json");
    if (!path)
        return 0;
    static struct exp_config cfg;
    config_load(path, NULL, &cfg);
    config_free(&cfg);
    return 0;
}
