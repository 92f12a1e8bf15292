/* Private directories in places others can write to (/tmp): made 0700, or found owned by us with
 * mode 0700, never reached through a symlink another user owns; files in them opened without
 * following links and checked to be what they should be. Everything after the check works
 * relative to the directory's descriptor, so a path swapped in afterwards is never followed. */
#ifndef GY_PRIVATE_DIR_H
#define GY_PRIVATE_DIR_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gpuyield.h"

/* The directory for per-user runtime files: $XDG_RUNTIME_DIR when it is an absolute path to a
 * directory of ours with mode 0700, else /tmp. */
const char *gy_runtime_base(void);

/* Make `name` in the directory parent_fd (AT_FDCWD or a verified descriptor) with mode 0700, or
 * take the one there if it is a directory (not a symlink) owned by us with mode 0700. Returns its
 * descriptor (O_DIRECTORY) and sets *created, or -1 with err naming the owner of what was found
 * (a directory it made is removed again). `shown` is the path used in messages. */
int gy_private_dir_at(int parent_fd, const char *name, const char *shown, bool *created, gy_err *err);

/* The most directories one gy_private_dir call makes (parents and the directory itself). */
#define GY_PRIVATE_MADE_MAX 32

/* Where gy_private_dir went, and what it made there, to undo on a later failure. */
typedef struct gy_private_path {
    char path[PATH_MAX]; /* the directory as walked: absolute, no symlink, no '.' or '..' */
    int made;            /* directories this call created, outermost first */
    int made_parent[GY_PRIVATE_MADE_MAX];   /* each one's parent (an open descriptor) */
    char made_name[GY_PRIVATE_MADE_MAX][NAME_MAX + 1]; /* and its name there */
} gy_private_path;

/* The same for a whole absolute path, walked from "/" one component at a time with *at() calls
 * on descriptors (no path is resolved again after its check):
 *  - every directory above the last component that exists must be root's or ours and, where
 *    group or others can write to it, sticky (as /tmp); else its owner, or anyone, could move
 *    what is below it away and put theirs at the path;
 *  - a symbolic link above the last component is followed only when root or we own it (it sits
 *    in a directory checked as above, so nobody else can re-point it); one owned by anyone else
 *    is refused, and where it leads is walked and checked the same way;
 *  - a missing directory is made 0700 with mkdirat, fchmod'ed to 0700 whatever the umask and
 *    checked on its descriptor (a directory of ours, 0700); one that another process made first
 *    is checked as any that existed (and refused when it is another user's);
 *  - the last component is made or verified as by gy_private_dir_at.
 * Returns the directory's descriptor with *out filled (out->path is what to give others: every
 * component of it is one only we or root can change), or -1 with err naming the component and
 * what to do, and nothing this call made left behind. */
int gy_private_dir(const char *path, gy_private_path *out, gy_err *err);

/* After a later failure: remove (each only if empty, innermost first) the directories that
 * gy_private_dir made, relative to their parents' descriptors, and close those. */
void gy_private_path_undo(gy_private_path *p);

/* Keep what was made: close the parents' descriptors. Safe to call twice, or after undo. */
void gy_private_path_keep(gy_private_path *p);

/* Open the regular file `name` of a verified directory for reading without following a link and
 * without blocking (a FIFO planted there is refused, never waited on). Returns the descriptor, or
 * -1: errno ENOENT when absent, else err filled. */
int gy_private_file_read(int dir_fd, const char *name, const char *shown, gy_err *err);

#endif
