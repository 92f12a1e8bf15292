/* Names come from /proc (a command name the kernel cut at 15 bytes, GPUYIELD_MODEL cut at 63) and
 * may be any bytes; what the service prints must be UTF-8 (Prometheus rejects a whole scrape
 * otherwise, a JSON parser the whole document). */
#include <stdbool.h>
#include <stdint.h>

#include "status_view.h"

/* The length of the well-formed sequence at s (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF), or 0. */
static int sequence_length(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong */
        if (c == 0xed)
            hi = 0x9f; /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong */
        if (c == 0xf4)
            hi = 0x8f; /* over U+10FFFF */
    } else
        return 0;
    if (s[1] < lo || s[1] > hi) /* a NUL (the text cut) fails here too */
        return 0;
    for (int i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

size_t gy_utf8_clean(char *text)
{
    size_t replaced = 0;
    unsigned char *s = (unsigned char *)text;
    while (*s) {
        int n = sequence_length(s);
        if (n == 0) {
            *s++ = '?';
            replaced++;
        } else {
            s += n;
        }
    }
    return replaced;
}
