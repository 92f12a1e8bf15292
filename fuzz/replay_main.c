/* The fuzz targets without libFuzzer: replay inputs (files, or every file of a directory)
 * through LLVMFuzzerTestOneInput once each, for CI. A crash or a sanitizer report fails it.
 *   replay_<target> PATH...   (the targets' own messages go to stderr) */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *grown = realloc(buf, cap);
            if (!grown) {
                fclose(f);
                free(buf);
                fprintf(stderr, "replay: out of memory reading %s\n", path);
                return -1;
            }
            buf = grown;
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        if (n == 0)
            break;
        len += n;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int compare_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int replay_path(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: no such file or directory: %s\n", path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return replay_file(path);
    }
    struct dirent **entries;
    int n = scandir(path, &entries, NULL, NULL);
    if (n < 0) {
        fprintf(stderr, "replay: cannot list %s\n", path);
        return -1;
    }
    char **names = malloc(sizeof *names * (size_t)(n ? n : 1));
    int files = 0, rc = 0;
    for (int i = 0; i < n; i++) {
        if (entries[i]->d_name[0] != '.' && names)
            names[files++] = strdup(entries[i]->d_name);
        free(entries[i]);
    }
    free(entries);
    if (!names)
        return -1;
    qsort(names, (size_t)files, sizeof *names, compare_names);
    for (int i = 0; i < files; i++) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        if (rc == 0 && replay_path(full, count) != 0)
            rc = -1;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    int count = 0, rc = 0;
    for (int i = 1; i < argc && rc == 0; i++)
        rc = replay_path(argv[i], &count);
    printf("replayed %d inputs%s\n", count, rc ? " (some could not be read)" : "");
    return rc ? 1 : 0;
}
