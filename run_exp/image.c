#include "image.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int be16(const unsigned char *p) { return (p[0] << 8) | p[1]; }
static long be32(const unsigned char *p) { return ((long)p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; }

/* Walk JPEG segments to the first start-of-frame marker, which holds the size. */
static int jpeg_size(FILE *f, int *h, int *w)
{
    unsigned char seg[8];
    if (fseek(f, 2, SEEK_SET) != 0)
        return -1;
    for (;;) {
        int c = fgetc(f);
        if (c == EOF)
            return -1;
        if (c != 0xFF)
            continue;
        int marker;
        do
            marker = fgetc(f);
        while (marker == 0xFF);
        if (marker == EOF || marker == 0xD9 || marker == 0xDA)
            return -1;
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7))
            continue; /* markers without a length */
        if (fread(seg, 1, 2, f) != 2)
            return -1;
        int len = be16(seg);
        if (len < 2)
            return -1;
        int is_sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
        if (is_sof) {
            if (fread(seg, 1, 5, f) != 5)
                return -1;
            *h = be16(seg + 1);
            *w = be16(seg + 3);
            return 0;
        }
        if (fseek(f, len - 2, SEEK_CUR) != 0)
            return -1;
    }
}

int image_probe(const char *path, int *h, int *w, char *why, size_t why_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "cannot open it: %s", strerror(errno));
        return -1;
    }
    unsigned char head[24];
    size_t n = fread(head, 1, sizeof head, f);
    int rc = -1;
    static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n >= 24 && memcmp(head, png_magic, 8) == 0 && memcmp(head + 12, "IHDR", 4) == 0) {
        *w = (int)be32(head + 16);
        *h = (int)be32(head + 20);
        rc = 0;
    } else if (n >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF) {
        rc = jpeg_size(f, h, w);
    } else {
        snprintf(why, why_len, "it is not a PNG or JPEG image (the formats the worker decodes): convert it");
        fclose(f);
        return -1;
    }
    fclose(f);
    if (rc != 0 || *h <= 0 || *w <= 0 || *h > 65535 || *w > 65535) {
        snprintf(why, why_len, "its header is truncated or damaged: re-export the image");
        return -1;
    }
    return 0;
}
