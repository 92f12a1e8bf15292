/* How a message names a user: the owner of a segment or of a directory someone planted. */
#ifndef GY_OWNER_TEXT_H
#define GY_OWNER_TEXT_H

#include <stddef.h>
#include <sys/types.h>

/* "uid 65534 (nobody)", or "uid 65534" when the name cannot be looked up. */
void gy_owner_text(uid_t uid, char *buf, size_t len);

#endif
