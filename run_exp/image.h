/* Input images: run_exp checks that each model's image is a PNG or JPEG it can read (what the
 * worker decodes with torchvision.io) and learns its size without decoding it. */
#ifndef RUN_EXP_IMAGE_H
#define RUN_EXP_IMAGE_H

#include <stddef.h>

/* Fills *h and *w from the file's header. Returns 0, or -1 with why (a sentence) filled. */
int image_probe(const char *path, int *h, int *w, char *why, size_t why_len);

#endif
