#include "models_pid.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char expected[] = "expected [[\"model name\", pid], ...] as run_exp writes it";

bool np_models_pid_load(const char *path, struct np_models_pid *out)
{
    *out = (struct np_models_pid){0};
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root) {
        if (err.line < 1)
            fprintf(stderr, "nsight-parser: -p %s: %s\n", path, err.text);
        else
            fprintf(stderr, "nsight-parser: -p %s:%d:%d: invalid JSON: %s (%s)\n", path, err.line, err.column, err.text,
                    expected);
        return false;
    }
    bool ok = json_is_array(root);
    if (!ok)
        fprintf(stderr, "nsight-parser: -p %s: the top level is not an array: %s\n", path, expected);
    size_t n = ok ? json_array_size(root) : 0;
    out->models = calloc(n ? n : 1, sizeof *out->models);
    if (ok && !out->models) {
        fprintf(stderr, "nsight-parser: out of memory (models_pid)\n");
        ok = false;
    }
    for (size_t i = 0; ok && i < n; i++) {
        json_t *entry = json_array_get(root, i);
        json_t *name = json_array_get(entry, 0), *pid = json_array_get(entry, 1);
        if (!json_is_array(entry) || json_array_size(entry) != 2 || !json_is_string(name) || !json_is_integer(pid) ||
            json_integer_value(pid) <= 0 || json_integer_value(pid) > 0xFFFFFF || !json_string_value(name)[0]) {
            fprintf(stderr, "nsight-parser: -p %s: entry %zu is not a [\"non-empty name\", pid > 0] pair: %s\n", path,
                    i, expected);
            ok = false;
            break;
        }
        uint32_t p = (uint32_t)json_integer_value(pid);
        if (np_models_pid_find(out, p) >= 0) {
            fprintf(stderr, "nsight-parser: -p %s: warning: pid %u is listed twice; the first name (%s) is used\n",
                    path, p, out->models[np_models_pid_find(out, p)].name);
            continue;
        }
        out->models[out->count].name = strdup(json_string_value(name));
        out->models[out->count].pid = p;
        if (!out->models[out->count].name) {
            fprintf(stderr, "nsight-parser: out of memory (models_pid)\n");
            ok = false;
            break;
        }
        out->count++;
    }
    json_decref(root);
    if (!ok)
        np_models_pid_free(out);
    return ok;
}

void np_models_pid_free(struct np_models_pid *m)
{
    for (size_t i = 0; i < m->count; i++)
        free(m->models[i].name);
    free(m->models);
    *m = (struct np_models_pid){0};
}

long np_models_pid_find(const struct np_models_pid *m, uint32_t pid)
{
    for (size_t i = 0; i < m->count; i++)
        if (m->models[i].pid == pid)
            return (long)i;
    return -1;
}
