/* Private directories in places others can write to (/tmp): made 0700, or found owned by us with
 * mode 0700, never reached through a symlink; files in them opened without following links and
 * checked to be what they should be. Everything after the check works relative to the directory's
 * descriptor, so a path swapped in afterwards is never followed. */
#ifndef GY_PRIVATE_DIR_H
#define GY_PRIVATE_DIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gpuyield.h"

/* The directory for per-user runtime files: $XDG_RUNTIME_DIR when it is an absolute path to a
 * directory of ours with mode 0700, else /tmp. */
const char *gy_runtime_base(void);

/* Make `name` in the directory parent_fd (AT_FDCWD or a verified descriptor) with mode 0700, or
 * take the one there if it is a directory (not a symlink) owned by us with mode 0700. Returns its
 * descriptor (O_DIRECTORY) and sets *created, or -1 with err naming the owner of what was found.
 * `shown` is the path used in messages. */
int gy_private_dir_at(int parent_fd, const char *name, const char *shown, bool *created, gy_err *err);

/* The same for a whole path: its parents are made (0700) where missing and may be links (the
 * caller chose the path); its last component is made or verified as above. */
int gy_private_dir(const char *path, bool *created, gy_err *err);

/* Open the regular file `name` of a verified directory for reading without following a link and
 * without blocking (a FIFO planted there is refused, never waited on). Returns the descriptor, or
 * -1: errno ENOENT when absent, else err filled. */
int gy_private_file_read(int dir_fd, const char *name, const char *shown, gy_err *err);

#endif
