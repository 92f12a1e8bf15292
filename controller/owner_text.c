/* A user named for a message (segment.c, and the service room's private directories). */
#include "owner_text.h"

#include <pwd.h>
#include <stdio.h>

void gy_owner_text(uid_t uid, char *buf, size_t len)
{
    struct passwd pw, *found = NULL;
    char names[1024];
    if (getpwuid_r(uid, &pw, names, sizeof names, &found) == 0 && found)
        snprintf(buf, len, "uid %u (%s)", (unsigned)uid, found->pw_name);
    else
        snprintf(buf, len, "uid %u", (unsigned)uid);
}
