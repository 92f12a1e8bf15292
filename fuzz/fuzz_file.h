/* For targets whose entry point reads a path: the input bytes go to one temporary file per
 * process (rewritten for each input, removed at exit). */
#ifndef GY_FUZZ_FILE_H
#define GY_FUZZ_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Returns the file's path, or NULL when it cannot be written. */
const char *fuzz_file_write(const uint8_t *data, size_t size, const char *extension);

#endif
