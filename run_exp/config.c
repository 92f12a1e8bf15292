/* Loading and checking the experiment file. Every problem is reported (not only the first) in
 * the form "run_exp: error: FILE: WHERE: what; how to fix", and nothing is started on any. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpuyield.h"
#include "guarded.h"
#include "image.h"
#include "models.h"

struct ctx {
    const char *file;
    int errors;
};

static void report(const char *level, struct ctx *c, const char *where, const char *fmt, va_list ap)
{
    fprintf(stderr, "run_exp: %s: %s: %s: ", level, c->file, where);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

/* Every policy of the table with what it does: "drain" (a job waits ...) or "corun" (...). */
static const char *policy_choices(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < GY_POLICY_COUNT && used < len; i++) {
        const char *before = i == 0 ? "" : i == GY_POLICY_COUNT - 1 ? " or " : ", ";
        int n = snprintf(buf + used, len - used, "%s\"%s\" (%s)", before, gy_policy_name((enum gy_policy)i),
                         gy_policy_what((enum gy_policy)i));
        used += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

__attribute__((format(printf, 3, 4))) static void error_at(struct ctx *c, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("error", c, where, fmt, ap);
    va_end(ap);
    c->errors++;
}

__attribute__((format(printf, 3, 4))) static void warn_at(struct ctx *c, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("warning", c, where, fmt, ap);
    va_end(ap);
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* "parent.key" (or "key" at the top level), cut to fit. */
static void join_where(char *out, size_t len, const char *parent, const char *key)
{
    size_t k = 0;
    for (const char *p = parent; *p && k + 1 < len; p++)
        out[k++] = *p;
    if (parent[0] && k + 1 < len)
        out[k++] = '.';
    for (const char *p = key; *p && k + 1 < len; p++)
        out[k++] = *p;
    out[k] = '\0';
}

/* Unknown keys are warnings: a typo must not pass unseen, but extra notes in a file are harmless. */
static void warn_unknown_keys(struct ctx *c, json_t *obj, const char *where, const char *const *known)
{
    const char *key;
    json_t *value;
    json_object_foreach(obj, key, value) {
        bool ok = false;
        for (const char *const *k = known; *k; k++)
            ok = ok || strcmp(*k, key) == 0;
        if (!ok) {
            char list[512] = "";
            for (const char *const *k = known; *k; k++) {
                strncat(list, *k, sizeof list - strlen(list) - 1);
                if (k[1])
                    strncat(list, ", ", sizeof list - strlen(list) - 1);
            }
            warn_at(c, where[0] ? where : "top level", "unknown key '%s' is ignored (known keys: %s); check its spelling",
                    key, list);
        }
    }
}

/* Fetch obj[key]; reports a missing required key. NULL when missing (or JSON null for optional). */
static json_t *member(struct ctx *c, json_t *obj, const char *parent, const char *key, bool required, const char *hint)
{
    json_t *v = json_object_get(obj, key);
    if (!v && required) {
        char where[160];
        join_where(where, sizeof where, parent, key);
        error_at(c, where, "required key is missing; add it (%s)", hint);
    }
    return v;
}

static bool get_string(struct ctx *c, json_t *obj, const char *parent, const char *key, bool required,
                       const char *hint, const char **out)
{
    char where[160];
    join_where(where, sizeof where, parent, key);
    json_t *v = member(c, obj, parent, key, required, hint);
    if (!v)
        return false;
    if (!json_is_string(v)) {
        error_at(c, where, "must be a string, got %s; write it in double quotes (%s)", type_name(v), hint);
        return false;
    }
    *out = json_string_value(v);
    return true;
}

static bool get_bool(struct ctx *c, json_t *obj, const char *parent, const char *key, bool required, bool *out)
{
    char where[160];
    join_where(where, sizeof where, parent, key);
    json_t *v = member(c, obj, parent, key, required, "true or false");
    if (!v)
        return false;
    if (!json_is_boolean(v)) {
        error_at(c, where, "must be true or false, got %s", type_name(v));
        return false;
    }
    *out = json_is_true(v);
    return true;
}

static bool get_int(struct ctx *c, json_t *obj, const char *parent, const char *key, bool required, long min,
                    long max, const char *hint, int *out)
{
    char where[160];
    join_where(where, sizeof where, parent, key);
    json_t *v = member(c, obj, parent, key, required, hint);
    if (!v)
        return false;
    if (!json_is_integer(v)) {
        error_at(c, where, "must be an integer %ld..%ld, got %s; %s", min, max, type_name(v), hint);
        return false;
    }
    json_int_t x = json_integer_value(v);
    if (x < min || x > max) {
        error_at(c, where, "must be %ld..%ld, got %lld; %s", min, max, (long long)x, hint);
        return false;
    }
    *out = (int)x;
    return true;
}

static bool get_number(struct ctx *c, json_t *obj, const char *parent, const char *key, bool required, double min,
                       double max, const char *hint, double *out)
{
    char where[160];
    join_where(where, sizeof where, parent, key);
    json_t *v = member(c, obj, parent, key, required, hint);
    if (!v)
        return false;
    if (!json_is_number(v)) {
        error_at(c, where, "must be a number (seconds) %g..%g, got %s; %s", min, max, type_name(v), hint);
        return false;
    }
    double x = json_number_value(v);
    if (!(x >= min && x <= max)) {
        error_at(c, where, "must be %g..%g, got %g; %s", min, max, x, hint);
        return false;
    }
    *out = x;
    return true;
}

/* A file name, not a path: it becomes <name>.csv and <name>.log. */
static bool valid_output_name(const char *s)
{
    if (!s[0] || strlen(s) > 100 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
              *p == '-' || *p == '.'))
            return false;
    return true;
}

/* The longest name run_exp itself writes in an output directory: summary.json.tmp<pid> (dump_json),
 * nsight_report.nsys-rep, simulated_kernels.log. */
#define OWN_FILE_NAME_MAX 32

/* An output directory whose files' paths fit the system's limits: PATH_MAX for a whole path (a
 * longer one would be cut by the snprintf that makes it, and the worker would write a file of
 * another name), NAME_MAX for each component. Reports where it does not, by the option that gave
 * it. */
static bool output_dir_fits(struct ctx *c, const char *where, const char *dir, const char *name, bool from_out)
{
    char shown[72];
    size_t dir_len = strlen(dir), file_len = strlen(name) + 4; /* <name>.csv, <name>.log */
    if (file_len < OWN_FILE_NAME_MAX)
        file_len = OWN_FILE_NAME_MAX;
    snprintf(shown, sizeof shown, "%.60s%s", dir, dir_len > 60 ? "..." : "");
    if (dir_len + 1 + file_len >= PATH_MAX) {
        error_at(c, where, "%s'%s' is %zu bytes long: the paths of the files written in it (%s.csv, "
                           "summary.json, ...: up to %zu bytes more) would pass the system's limit of %d bytes "
                           "(PATH_MAX); choose a shorter %s",
                 from_out ? "--out " : "", shown, dir_len, name, 1 + file_len, PATH_MAX,
                 from_out ? "--out" : "output_file_path (or --out)");
        return false;
    }
    for (const char *part = dir; *part;) {
        size_t n = strcspn(part, "/");
        if (n > NAME_MAX) {
            error_at(c, where, "%s'%s' has a component of %zu bytes ('%.20s...'): a file or directory name is at "
                               "most %d bytes; choose another %s",
                     from_out ? "--out " : "", shown, n, part, NAME_MAX, from_out ? "--out" : "output_file_path (or --out)");
            return false;
        }
        part += n;
        part += strspn(part, "/");
    }
    return true;
}

static bool looks_like_file(const char *weight)
{
    size_t n = strlen(weight);
    return strchr(weight, '/') || (n > 3 && strcmp(weight + n - 3, ".pt") == 0) ||
           (n > 4 && strcmp(weight + n - 4, ".pth") == 0);
}

static void load_control(struct ctx *c, json_t *obj, const char *parent, struct exp_model *m)
{
    /* controlTime / queue_limit.time_us are gpuyield's extension of the reference format. */
    static const char *const keys[] = {"control", "controlsync", "controlEvent", "controlTime", "queue_limit", NULL};
    static const char *const qkeys[] = {"sync", "event_group", "time_us", NULL};
    char where[160];
    join_where(where, sizeof where, parent, "control");
    json_t *ctl = member(c, obj, parent, "control", true,
                         "an object {\"control\": false} runs the model without gpuyield");
    if (!ctl)
        return;
    if (!json_is_object(ctl)) {
        error_at(c, where, "must be an object like {\"control\": true, \"controlsync\": false, \"controlEvent\": "
                           "false, \"queue_limit\": {\"sync\": 1, \"event_group\": 2}}, got %s",
                 type_name(ctl));
        return;
    }
    warn_unknown_keys(c, ctl, where, keys);
    get_bool(c, ctl, where, "control", true, &m->control);
    get_bool(c, ctl, where, "controlsync", false, &m->controlsync);
    get_bool(c, ctl, where, "controlEvent", false, &m->controlEvent);
    get_bool(c, ctl, where, "controlTime", false, &m->controlTime);
    char qwhere[200];
    join_where(qwhere, sizeof qwhere, where, "queue_limit");
    bool need_q = m->controlsync || m->controlEvent || m->controlTime;
    json_t *q = member(c, ctl, where, "queue_limit", need_q && m->control,
                       "{\"sync\": N, \"event_group\": N}: kernels per sync point / per event group");
    if (q && !json_is_object(q)) {
        error_at(c, qwhere, "must be an object {\"sync\": N, \"event_group\": N}, got %s", type_name(q));
        q = NULL;
    }
    if (q) {
        warn_unknown_keys(c, q, qwhere, qkeys);
        bool time_used = m->control && m->controlTime;
        bool sync_used = m->control && m->controlsync && !m->controlEvent && !time_used;
        bool event_used = m->control && m->controlEvent && !time_used;
        get_int(c, q, qwhere, "sync", sync_used, sync_used ? 1 : 0, 1000000,
                "kernels between two sync points (controlsync needs at least 1)", &m->queue_sync);
        get_int(c, q, qwhere, "event_group", event_used, event_used ? 1 : 0, 1000000,
                "kernels per event group (controlEvent needs at least 1)", &m->queue_event_group);
        get_int(c, q, qwhere, "time_us", time_used, time_used ? 1 : 0, 1000000,
                "microseconds of GPU work allowed in flight (controlTime needs at least 1)", &m->queue_time_us);
    }
    if (!m->control)
        snprintf(m->mode, sizeof m->mode, "none");
    else if (m->controlTime)
        snprintf(m->mode, sizeof m->mode, "time:%d", m->queue_time_us);
    else if (m->controlEvent)
        snprintf(m->mode, sizeof m->mode, "event:%d", m->queue_event_group);
    else if (m->controlsync)
        snprintf(m->mode, sizeof m->mode, "sync:%d", m->queue_sync);
    else
        snprintf(m->mode, sizeof m->mode, "none");
    if (!m->control && (m->controlsync || m->controlEvent || m->controlTime))
        warn_at(c, where, "controlsync/controlEvent have no effect while control is false (no hooks); set "
                          "control to true to use them");
}

static void load_model(struct ctx *c, json_t *obj, int i, struct exp_model *m, const char *out_override)
{
    static const char *const keys[] = {"model_name", "model_weight", "sleep_time", "input_file_path",
                                       "output_file_path", "output_file_name", "priority", "resize",
                                       "resize_size", "control", "batch_size", "device_id", "jobs", NULL};
    char where[32];
    snprintf(where, sizeof where, "models[%d]", i);
    memset(m, 0, sizeof *m);
    m->batch_size = 1;
    if (!json_is_object(obj)) {
        error_at(c, where, "must be an object with model_name, input_file_path, ... (see "
                           "exp_configs/input.json), got %s", type_name(obj));
        return;
    }
    warn_unknown_keys(c, obj, where, keys);
    char sub[64];
    if (get_string(c, obj, where, "model_name", true, "a torchvision model such as \"fasterrcnn_resnet50_fpn\"",
                   &m->model_name) &&
        !model_find(m->model_name)) {
        char near[256];
        model_suggest(m->model_name, near, sizeof near);
        snprintf(sub, sizeof sub, "%s.model_name", where);
        error_at(c, sub, "'%s' is not a torchvision classification, detection or segmentation model; %s%s",
                 m->model_name, near[0] ? "did you mean: " : "see torchvision.models.list_models()", near);
    }
    json_t *w = json_object_get(obj, "model_weight");
    if (w && !json_is_null(w))
        get_string(c, obj, where, "model_weight", false, "a local .pth file, or a torchvision weights name",
                   &m->model_weight);
    m->weight_is_file = m->model_weight && looks_like_file(m->model_weight);
    get_number(c, obj, where, "sleep_time", false, 0, 3600, "seconds to sleep between two jobs; 0 runs back to back",
               &m->sleep_time);
    get_string(c, obj, where, "input_file_path", true, "the path of a PNG or JPEG image", &m->input_file_path);
    if (get_string(c, obj, where, "output_file_path", true, "a directory for the model's logs, e.g. \"./logs\"",
                   &m->output_file_path) &&
        !m->output_file_path[0]) {
        snprintf(sub, sizeof sub, "%s.output_file_path", where);
        error_at(c, sub, "is empty; give a directory, e.g. \"./logs\"");
    }
    if (get_string(c, obj, where, "output_file_name", true, "a file name without extension, e.g. \"model_A\"",
                   &m->output_file_name) &&
        !valid_output_name(m->output_file_name)) {
        snprintf(sub, sizeof sub, "%s.output_file_name", where);
        error_at(c, sub, "'%s' is not a plain file name; use 1..100 characters from [A-Za-z0-9._-] (no '/'), "
                         "e.g. \"model_A\"",
                 m->output_file_name);
    }
    get_int(c, obj, where, "priority", true, 0, 7, "0 is the lowest; higher wins", &m->priority);
    m->device_id = -1; /* absent: the experiment's device_id (config_load) */
    get_int(c, obj, where, "device_id", false, 0, 1023,
            "the GPU this model runs on, as nvidia-smi numbers them; absent: the experiment's device_id", &m->device_id);
    get_bool(c, obj, where, "resize", false, &m->resize);
    json_t *rs = json_object_get(obj, "resize_size");
    snprintf(sub, sizeof sub, "%s.resize_size", where);
    if (!rs && m->resize) {
        error_at(c, sub, "required when resize is true; add it as [height, width], e.g. [720, 1280]");
    } else if (rs) {
        json_t *h = json_array_get(rs, 0), *wd = json_array_get(rs, 1);
        if (!json_is_array(rs) || json_array_size(rs) != 2 || !json_is_integer(h) || !json_is_integer(wd) ||
            json_integer_value(h) < 16 || json_integer_value(h) > 8192 || json_integer_value(wd) < 16 ||
            json_integer_value(wd) > 8192)
            error_at(c, sub, "must be [height, width], two integers 16..8192, e.g. [720, 1280]");
        else
            m->resize_h = (int)json_integer_value(h), m->resize_w = (int)json_integer_value(wd);
    }
    get_int(c, obj, where, "batch_size", false, 1, 1024, "images per job", &m->batch_size);
    load_control(c, obj, where, m);
    const char *jobs = NULL;
    snprintf(sub, sizeof sub, "%s.jobs", where);
    if (get_string(c, obj, where, "jobs", false, "\"explicit\" (the worker marks each job) or \"auto\"", &jobs)) {
        m->auto_jobs = strcmp(jobs, "auto") == 0;
        if (!m->auto_jobs && strcmp(jobs, "explicit") != 0)
            error_at(c, sub, "'%s' is not a way of making jobs; use \"explicit\" (the worker marks each job, the "
                             "default) or \"auto\" (the hook opens a job at the model's priority on its first launch "
                             "after idle: GPUYIELD_JOBS=auto)",
                     jobs);
        else if (m->auto_jobs && m->priority == 0)
            error_at(c, sub, "\"auto\" needs a priority of 1..7: a job at priority 0 stops nothing");
        else if (m->auto_jobs && !m->control)
            warn_at(c, sub, "\"auto\" has no effect while control is false (no hooks); set control to true");
    }
    /* models_pid.json names, as the reference run_exp.py did: model_name, with _<height> when resized. */
    if (m->model_name) {
        if (m->resize && m->resize_h)
            snprintf(m->pid_name, sizeof m->pid_name, "%s_%d", m->model_name, m->resize_h);
        else
            snprintf(m->pid_name, sizeof m->pid_name, "%s", m->model_name);
    }
    snprintf(sub, sizeof sub, "%s.output_file_path", where);
    if (m->output_file_path && m->output_file_name && valid_output_name(m->output_file_name) &&
        output_dir_fits(c, sub, out_override ? out_override : m->output_file_path, m->output_file_name,
                        out_override != NULL)) {
        snprintf(m->out_dir, sizeof m->out_dir, "%s", out_override ? out_override : m->output_file_path);
        snprintf(m->csv_path, sizeof m->csv_path, "%s/%s.csv", m->out_dir, m->output_file_name);
        snprintf(m->log_path, sizeof m->log_path, "%s/%s.log", m->out_dir, m->output_file_name);
    }
}

/* The reference's names collide when two workers run the same model at the same size; a reader
 * of models_pid.json (nsight-parser) could not tell them apart, so those get _<output_file_name>. */
static void disambiguate_pid_names(struct exp_config *cfg)
{
    bool clash[EXP_MAX_MODELS] = {false};
    for (int i = 0; i < cfg->nmodels; i++)
        for (int j = 0; j < cfg->nmodels; j++)
            if (i != j && cfg->models[i].pid_name[0] && strcmp(cfg->models[i].pid_name, cfg->models[j].pid_name) == 0)
                clash[i] = true;
    for (int i = 0; i < cfg->nmodels; i++) {
        struct exp_model *m = &cfg->models[i];
        size_t n = strlen(m->pid_name);
        if (clash[i] && m->output_file_name && n + 1 + strlen(m->output_file_name) < sizeof m->pid_name) {
            m->pid_name[n] = '_';
            memcpy(m->pid_name + n + 1, m->output_file_name, strlen(m->output_file_name) + 1);
        }
    }
    /* Still equal (same output_file_name in two directories): the model's index tells them apart. */
    for (int i = 0; i < cfg->nmodels; i++)
        for (int j = 0; j < i; j++)
            if (cfg->models[i].pid_name[0] && strcmp(cfg->models[i].pid_name, cfg->models[j].pid_name) == 0) {
                struct exp_model *m = &cfg->models[i];
                size_t n = strlen(m->pid_name);
                if (n + 12 < sizeof m->pid_name)
                    snprintf(m->pid_name + n, sizeof m->pid_name - n, "_%d", i);
                break;
            }
}

/* An experiment file is a few KiB; anything this large is the wrong file. */
#define EXP_CONFIG_MAX_BYTES (16 << 20)

int config_load(const char *path, const char *out_dir_override, struct exp_config *cfg)
{
    static const char *const keys[] = {"models", "exp_dur", "device_id", "mps", "policy", "guard_p50", "guard_p99",
                                       "guard_depth", NULL};
    struct ctx c = {path, 0};
    memset(cfg, 0, sizeof *cfg);
    cfg->path = path;
    json_error_t jerr;
    /* Sized before it is read: a huge file (or a device, a FIFO) is refused, not parsed whole. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat fst;
    if (fd >= 0 && fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode) && fst.st_size > EXP_CONFIG_MAX_BYTES) {
        fprintf(stderr, "run_exp: error: %s is %lld bytes: an experiment file is at most %d MiB; check the path "
                        "given to -f\n",
                path, (long long)fst.st_size, EXP_CONFIG_MAX_BYTES >> 20);
        close(fd);
        return 1;
    }
    json_t *root = NULL;
    if (fd >= 0 && fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode))
        root = json_loadfd(fd, JSON_REJECT_DUPLICATES, &jerr);
    else if (fd >= 0 && !S_ISDIR(fst.st_mode)) {
        fprintf(stderr, "run_exp: error: %s is not a regular file (a FIFO or a device?); give -f the experiment's "
                        "JSON file\n", path);
        close(fd);
        return 1;
    }
    if (fd >= 0)
        close(fd);
    if (!root) {
        struct stat st;
        if (stat(path, &st) != 0 || access(path, R_OK) != 0)
            fprintf(stderr, "run_exp: error: %s: cannot read the experiment file: %s; check the path given to -f\n",
                    path, strerror(errno));
        else if (S_ISDIR(st.st_mode))
            fprintf(stderr, "run_exp: error: %s is a directory; give -f the experiment's JSON file (e.g. "
                            "exp_configs/input_control.json)\n",
                    path);
        else
            fprintf(stderr, "run_exp: error: %s:%d:%d: invalid JSON: %s; fix the file there (a trailing comma or a "
                            "missing quote is the usual cause)\n",
                    path, jerr.line, jerr.column, jerr.text);
        return 1;
    }
    cfg->json = root;
    if (!json_is_object(root)) {
        error_at(&c, "top level", "must be an object {\"models\": [...], \"exp_dur\": N, \"device_id\": N}, got %s",
                 type_name(root));
        return c.errors;
    }
    warn_unknown_keys(&c, root, "", keys);
    get_number(&c, root, "", "exp_dur", true, 0.001, 86400, "seconds the experiment runs, e.g. 30", &cfg->exp_dur);
    get_int(&c, root, "", "device_id", true, 0, 1023, "the GPU index, as nvidia-smi numbers them", &cfg->device_id);
    get_bool(&c, root, "", "mps", false, &cfg->mps);
    enum gy_policy policy;
    char names[128], choices[512];
    if (get_string(&c, root, "", "policy", false, gy_policy_choices(names, sizeof names, ", ", " or "), &cfg->policy) &&
        gy_policy_parse(cfg->policy, &policy) != 0)
        error_at(&c, "policy", "must be %s, got \"%s\"", policy_choices(choices, sizeof choices), cfg->policy);
    /* The guarded policy's bound of stop: only with it (a key that does nothing is a mistake). */
    static const char *const guard_keys[] = {"guard_p50", "guard_p99"};
    double *guard_values[] = {&cfg->guard_p50, &cfg->guard_p99};
    for (int i = 0; i < 2; i++) {
        *guard_values[i] = -1;
        json_t *v = json_object_get(root, guard_keys[i]);
        if (!v)
            continue;
        if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) <= GY_GUARD_MAX_EPS))
            error_at(&c, guard_keys[i], "must be a fraction 0..1 (0.02: the HP's job may grow 2 %% over stop's), got %s",
                     json_is_number(v) ? "a number out of range" : type_name(v));
        else if (!cfg->policy || strcmp(cfg->policy, "guarded") != 0)
            error_at(&c, guard_keys[i], "goes with \"policy\": \"guarded\"; set that policy or drop the key");
        else
            *guard_values[i] = json_number_value(v);
    }
    get_bool(&c, root, "", "guard_depth", false, &cfg->guard_depth);
    if (cfg->guard_depth && (!cfg->policy || strcmp(cfg->policy, "guarded") != 0))
        error_at(&c, "guard_depth", "goes with \"policy\": \"guarded\"; set that policy or drop the key");
    json_t *models = member(&c, root, "", "models", true, "an array with one object per model");
    if (models && (!json_is_array(models) || json_array_size(models) == 0 ||
                   json_array_size(models) > EXP_MAX_MODELS)) {
        error_at(&c, "models", "must be an array of 1..%d model objects, got %s%s", EXP_MAX_MODELS,
                 type_name(models), json_is_array(models) ? (json_array_size(models) ? " too long" : " that is empty")
                                                          : "");
        models = NULL;
    }
    if (models) {
        cfg->nmodels = (int)json_array_size(models);
        for (int i = 0; i < cfg->nmodels; i++) {
            load_model(&c, json_array_get(models, (size_t)i), i, &cfg->models[i], out_dir_override);
            if (cfg->models[i].device_id < 0)
                cfg->models[i].device_id = cfg->device_id;
        }
        disambiguate_pid_names(cfg);
    }
    return c.errors;
}

/* The closest existing ancestor of dir must be a writable directory (dir is created later). */
static int check_output_dir(struct ctx *c, const char *where, const char *dir)
{
    char probe[PATH_MAX];
    snprintf(probe, sizeof probe, "%s", dir);
    struct stat st;
    for (;;) {
        if (stat(probe, &st) == 0)
            break;
        char *slash = strrchr(probe, '/');
        if (!slash) {
            snprintf(probe, sizeof probe, ".");
            continue;
        }
        if (slash == probe) {
            probe[1] = '\0';
            continue;
        }
        *slash = '\0';
    }
    if (!S_ISDIR(st.st_mode)) {
        error_at(c, where, "'%s' cannot be an output directory: '%s' is not a directory; choose another "
                           "output_file_path (or --out)",
                 dir, probe);
        return -1;
    }
    if (access(probe, W_OK | X_OK) != 0) {
        error_at(c, where, "output directory '%s' cannot be written (%s is not writable by you); choose another "
                           "output_file_path (or --out)",
                 dir, probe);
        return -1;
    }
    return 0;
}

/* dir as an absolute path without ".", ".." or doubled '/', symlinks resolved in the part that
 * exists: two spellings of one directory compare equal even before it is created. */
static void canonical_dir(const char *dir, char *out, size_t len)
{
    char abs[2 * PATH_MAX], cwd[PATH_MAX];
    if (dir[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(abs, sizeof abs, "%s/%s", cwd, dir);
    else
        snprintf(abs, sizeof abs, "%s", dir);
    char norm[2 * PATH_MAX] = "";
    size_t n = 0;
    for (char *save = NULL, *part = strtok_r(abs, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
        if (strcmp(part, ".") == 0)
            continue;
        if (strcmp(part, "..") == 0) {
            char *slash = strrchr(norm, '/');
            n = slash ? (size_t)(slash - norm) : 0;
            norm[n] = '\0';
            continue;
        }
        int w = snprintf(norm + n, sizeof norm - n, "/%s", part);
        n = w > 0 && (size_t)w < sizeof norm - n ? n + (size_t)w : sizeof norm - 1;
    }
    if (!norm[0])
        snprintf(norm, sizeof norm, "/");
    /* The longest existing prefix through realpath, the rest as written. */
    char prefix[2 * PATH_MAX], resolved[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s", norm);
    size_t cut = strlen(prefix);
    for (;;) {
        if (realpath(prefix[0] ? prefix : "/", resolved)) {
            snprintf(out, len, "%s%s", strcmp(resolved, "/") == 0 && norm[cut] ? "" : resolved, norm + cut);
            return;
        }
        char *slash = strrchr(prefix, '/');
        if (!slash) {
            snprintf(out, len, "%s", norm);
            return;
        }
        *slash = '\0';
        cut = (size_t)(slash - prefix);
    }
}

int config_check_environment(const struct exp_config *cfg, int gpu_count)
{
    struct ctx c = {cfg->path, 0};
    char where[64];
    if (gpu_count >= 0 && cfg->device_id >= gpu_count)
        error_at(&c, "device_id", "is %d but this machine has %d GPU%s (0..%d); pick one nvidia-smi lists",
                 cfg->device_id, gpu_count, gpu_count == 1 ? "" : "s", gpu_count - 1);
    for (int i = 0; i < cfg->nmodels; i++) {
        snprintf(where, sizeof where, "models[%d].device_id", i);
        if (gpu_count >= 0 && cfg->models[i].device_id >= gpu_count && cfg->models[i].device_id != cfg->device_id)
            error_at(&c, where, "is %d but this machine has %d GPU%s (0..%d); pick one nvidia-smi lists",
                     cfg->models[i].device_id, gpu_count, gpu_count == 1 ? "" : "s", gpu_count - 1);
    }
    for (int i = 0; i < cfg->nmodels; i++) {
        const struct exp_model *m = &cfg->models[i];
        int h, w;
        char why[200];
        snprintf(where, sizeof where, "models[%d].input_file_path", i);
        if (m->input_file_path && image_probe(m->input_file_path, &h, &w, why, sizeof why) != 0)
            error_at(&c, where, "input image '%s': %s; give the path of a PNG or JPEG file (relative paths are "
                                "taken from the current directory)",
                     m->input_file_path, why);
        snprintf(where, sizeof where, "models[%d].model_weight", i);
        if (m->weight_is_file && access(m->model_weight, R_OK) != 0)
            error_at(&c, where, "weights file '%s' cannot be read: %s; give a local .pth file, or leave "
                                "model_weight out for random weights",
                     m->model_weight, strerror(errno));
        snprintf(where, sizeof where, "models[%d].output_file_path", i);
        if (m->out_dir[0])
            check_output_dir(&c, where, m->out_dir);
        if (!m->csv_path[0])
            continue;
        char mine[PATH_MAX];
        canonical_dir(m->out_dir, mine, sizeof mine);
        for (int j = 0; j < i; j++) {
            const struct exp_model *o = &cfg->models[j];
            char theirs[PATH_MAX];
            if (!o->csv_path[0])
                continue;
            canonical_dir(o->out_dir, theirs, sizeof theirs);
            if (strcmp(mine, theirs) == 0 && strcmp(m->output_file_name, o->output_file_name) == 0) {
                snprintf(where, sizeof where, "models[%d].output_file_name", i);
                error_at(&c, where, "'%s' in '%s' is already used by models[%d]: both would write %s; give each "
                                    "model its own output_file_name",
                         m->output_file_name, m->out_dir, j, m->csv_path);
            }
        }
    }
    return c.errors;
}

static int mkdir_p(const char *dir)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", dir);
    if (!buf[0]) {
        errno = ENOENT;
        return -1;
    }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

int config_make_output_dirs(const struct exp_config *cfg)
{
    for (int i = 0; i < cfg->nmodels; i++) {
        if (mkdir_p(cfg->models[i].out_dir) != 0) {
            fprintf(stderr, "run_exp: error: cannot create output directory '%s': %s; choose another "
                            "output_file_path (or --out)\n",
                    cfg->models[i].out_dir, strerror(errno));
            return -1;
        }
    }
    return 0;
}

void config_free(struct exp_config *cfg)
{
    json_decref(cfg->json);
    cfg->json = NULL;
}
