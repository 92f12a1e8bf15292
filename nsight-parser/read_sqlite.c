/* Reads an Nsight Systems SQLite export. Tables used (absent optional ones are fine):
 *   CUPTI_ACTIVITY_KIND_KERNEL  start, end, streamId, correlationId, globalPid,
 *                               demangledName/shortName (ids into StringIds)      required
 *   CUPTI_ACTIVITY_KIND_RUNTIME start, end, globalTid, correlationId              launch calls
 *   NVTX_EVENTS                 start, end, eventType, text/textId, globalTid     ranges
 *   PROCESSES                   globalPid, pid, name                              process names
 *   ENUM_NSYS_EVENT_TYPE        id, name                                          range type ids
 * A kernel's launch call is the runtime record with the same correlationId in the same process
 * (nsys's own cuda_kern_exec_trace joins the same way). The join is a hash join in memory:
 * exports carry no index on correlationId, and a million kernels must take seconds. */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inputs.h"
#include "int_map.h"

struct reader {
    const char *path;
    sqlite3 *db;
    struct np_report *report;
    sqlite3_stmt *string_lookup; /* SELECT value FROM StringIds WHERE id = ? ; NULL without it */
    struct np_int_map string_ids; /* StringIds id -> index in report->names */
};

static bool sql_failed(struct reader *r, const char *doing)
{
    fprintf(stderr, "nsight-parser: %s: reading %s failed: %s\n", r->path, doing, sqlite3_errmsg(r->db));
    return false;
}

static bool table_exists(struct reader *r, const char *table)
{
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

static bool column_exists(struct reader *r, const char *table, const char *column)
{
    char sql[256];
    sqlite3_stmt *st;
    bool found = false;
    snprintf(sql, sizeof sql, "PRAGMA table_info(\"%s\")", table);
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return false;
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(st, 1);
        found = name && strcmp((const char *)name, column) == 0;
    }
    sqlite3_finalize(st);
    return found;
}

/* The column's name if the table has it, else "NULL" (so queries work on older schemas). */
static const char *column_or_null(struct reader *r, const char *table, const char *column)
{
    return column_exists(r, table, column) ? column : "NULL";
}

/* Index in report->names of StringIds id (or of a placeholder when it cannot be resolved). */
static int64_t name_of_string_id(struct reader *r, sqlite3_stmt *row, int column)
{
    static const char unknown[] = "[unknown]";
    if (sqlite3_column_type(row, column) == SQLITE_NULL || !r->string_lookup)
        return np_strings_intern(&r->report->names, unknown, sizeof unknown - 1);
    int64_t id = sqlite3_column_int64(row, column);
    uint32_t *known = np_int_map_get(&r->string_ids, id);
    if (known)
        return *known;
    int64_t index;
    sqlite3_reset(r->string_lookup);
    sqlite3_bind_int64(r->string_lookup, 1, id);
    if (sqlite3_step(r->string_lookup) == SQLITE_ROW && sqlite3_column_text(r->string_lookup, 0))
        index = np_strings_intern(&r->report->names, (const char *)sqlite3_column_text(r->string_lookup, 0),
                                  (size_t)sqlite3_column_bytes(r->string_lookup, 0));
    else
        index = np_strings_intern(&r->report->names, unknown, sizeof unknown - 1);
    if (index < 0 || !np_int_map_put(&r->string_ids, id, (uint32_t)index))
        return -1;
    return index;
}

static bool read_processes(struct reader *r)
{
    if (!table_exists(r, "PROCESSES") || !column_exists(r, "PROCESSES", "name"))
        return true;
    char sql[256];
    bool has_pid = column_exists(r, "PROCESSES", "pid");
    if (!has_pid && !column_exists(r, "PROCESSES", "globalPid"))
        return true;
    snprintf(sql, sizeof sql, "SELECT %s, name FROM PROCESSES WHERE name IS NOT NULL",
             has_pid ? "pid" : "(globalPid >> 24) & 16777215");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_failed(r, "PROCESSES");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!np_report_add_process(r->report, (uint32_t)sqlite3_column_int64(st, 0),
                                   (const char *)sqlite3_column_text(st, 1))) {
            sqlite3_finalize(st);
            return false;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || sql_failed(r, "PROCESSES");
}

/* A launch call's join key: pid in bits 32..55, correlationId in bits 0..31. */
static int64_t launch_key(uint32_t pid, int64_t correlation_id)
{
    return (int64_t)(((uint64_t)pid << 32) | ((uint64_t)correlation_id & 0xFFFFFFFFu));
}

struct launch {
    int64_t start, end;
};

/* Kernels, then their launch calls. launch_slot[i] is kernel i's index in launches, or
 * UINT32_MAX when it has no correlationId. */
static bool read_kernels(struct reader *r, uint32_t **launch_slot_out, struct np_int_map *keys)
{
    const char *t = "CUPTI_ACTIVITY_KIND_KERNEL";
    const char *name_expr;
    bool demangled = column_exists(r, t, "demangledName"), short_name = column_exists(r, t, "shortName");
    if (demangled && short_name)
        name_expr = "coalesce(demangledName, shortName)";
    else if (demangled)
        name_expr = "demangledName";
    else if (short_name)
        name_expr = "shortName";
    else
        name_expr = "NULL";
    if (!column_exists(r, t, "start") || !column_exists(r, t, "end")) {
        fprintf(stderr, "nsight-parser: %s: table %s has no start/end columns: not an Nsight Systems "
                        "export this parser knows; re-export it with a recent nsys (nsys export --type sqlite)\n",
                r->path, t);
        return false;
    }
    /* Degraded exports still parse, but say what is lost. */
    if (!r->string_lookup && strcmp(name_expr, "NULL") != 0)
        fprintf(stderr, "nsight-parser: warning: %s has no StringIds table: kernel names are reported as "
                        "[unknown]\n",
                r->path);
    if (!column_exists(r, t, "globalPid"))
        fprintf(stderr, "nsight-parser: warning: %s: %s has no globalPid column: kernels cannot be told apart "
                        "by process and are all reported under pid 0\n",
                r->path, t);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT start, end, %s, %s, %s, %s FROM %s", column_or_null(r, t, "streamId"),
             column_or_null(r, t, "correlationId"), column_or_null(r, t, "globalPid"), name_expr, t);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_failed(r, t);
    uint32_t *launch_slot = NULL;
    size_t slot_capacity = 0;
    int rc;
    bool ok = true;
    while (ok && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 1) == SQLITE_NULL)
            continue; /* a kernel the profiler could not time: nothing to report */
        struct np_kernel k = {
            .issue_start = NP_NO_TIME,
            .issue_end = NP_NO_TIME,
            .exec_start = sqlite3_column_int64(st, 0),
            .exec_end = sqlite3_column_int64(st, 1),
            .stream = sqlite3_column_type(st, 2) == SQLITE_NULL ? NP_NO_STREAM : sqlite3_column_int64(st, 2),
            .pid = sqlite3_column_type(st, 4) == SQLITE_NULL ? 0 : np_pid_of_global_id(sqlite3_column_int64(st, 4)),
        };
        int64_t name = name_of_string_id(r, st, 5);
        if (name < 0) {
            ok = np_out_of_memory("kernel names");
            break;
        }
        k.name = (uint32_t)name;
        if (r->report->kernel_count == slot_capacity) {
            slot_capacity = slot_capacity ? slot_capacity * 2 : 4096;
            uint32_t *grown = realloc(launch_slot, slot_capacity * sizeof *grown);
            if (!grown) {
                ok = np_out_of_memory("launch join");
                break;
            }
            launch_slot = grown;
        }
        uint32_t slot = UINT32_MAX;
        if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
            int64_t key = launch_key(k.pid, sqlite3_column_int64(st, 3));
            uint32_t *have = np_int_map_get(keys, key);
            if (have) {
                slot = *have; /* kernels of one graph launch share its correlationId */
            } else {
                slot = (uint32_t)keys->count;
                if (!np_int_map_put(keys, key, slot)) {
                    ok = np_out_of_memory("launch join");
                    break;
                }
            }
        }
        launch_slot[r->report->kernel_count] = slot;
        ok = np_report_add_kernel(r->report, &k);
    }
    sqlite3_finalize(st);
    *launch_slot_out = launch_slot;
    if (ok && rc != SQLITE_DONE)
        return sql_failed(r, t);
    return ok;
}

static bool join_launch_calls(struct reader *r, const uint32_t *launch_slot, const struct np_int_map *keys)
{
    const char *t = "CUPTI_ACTIVITY_KIND_RUNTIME";
    if (!keys->count || !table_exists(r, t) || !column_exists(r, t, "correlationId") ||
        !column_exists(r, t, "start") || !column_exists(r, t, "end"))
        return true; /* no CUDA API trace: kernels keep unknown issue times */
    struct launch *launches = malloc(keys->count * sizeof *launches);
    if (!launches)
        return np_out_of_memory("launch join");
    for (size_t i = 0; i < keys->count; i++)
        launches[i] = (struct launch){NP_NO_TIME, NP_NO_TIME};
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT start, end, %s, correlationId FROM %s WHERE correlationId IS NOT NULL",
             column_or_null(r, t, "globalTid"), t);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        free(launches);
        return sql_failed(r, t);
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint32_t pid = sqlite3_column_type(st, 2) == SQLITE_NULL ? 0 : np_pid_of_global_id(sqlite3_column_int64(st, 2));
        uint32_t *slot = np_int_map_get(keys, launch_key(pid, sqlite3_column_int64(st, 3)));
        if (!slot)
            continue; /* an API call that launched no kernel */
        struct launch *l = &launches[*slot];
        int64_t start = sqlite3_column_int64(st, 0);
        if (l->start == NP_NO_TIME || start < l->start) /* the outermost call issued it */
            *l = (struct launch){start, sqlite3_column_int64(st, 1)};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(launches);
        return sql_failed(r, t);
    }
    for (size_t i = 0; i < r->report->kernel_count; i++) {
        if (launch_slot[i] == UINT32_MAX)
            continue;
        r->report->kernels[i].issue_start = launches[launch_slot[i]].start;
        r->report->kernels[i].issue_end = launches[launch_slot[i]].end;
    }
    free(launches);
    return true;
}

/* The eventType ids of NVTX ranges: looked up by name where the export lists them. */
static void nvtx_range_types(struct reader *r, char *list, size_t size)
{
    snprintf(list, size, "59,60,70,71"); /* PushPop, StartEnd, and their NVTXT twins */
    if (!table_exists(r, "ENUM_NSYS_EVENT_TYPE"))
        return;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db,
                           "SELECT id FROM ENUM_NSYS_EVENT_TYPE WHERE name IN ('NvtxPushPopRange',"
                           "'NvtxStartEndRange','NvtxtPushPopRange','NvtxtStartEndRange')",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    size_t used = 0;
    while (sqlite3_step(st) == SQLITE_ROW && used + 24 < size)
        used += (size_t)snprintf(list + used, size - used, "%s%lld", used ? "," : "", (long long)sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
    if (!used)
        snprintf(list, size, "59,60,70,71");
}

static bool read_nvtx(struct reader *r)
{
    const char *t = "NVTX_EVENTS";
    if (!table_exists(r, t) || !column_exists(r, t, "globalTid") || !column_exists(r, t, "end"))
        return true; /* NVTX not traced */
    char types[128], sql[768];
    nvtx_range_types(r, types, sizeof types);
    bool has_text_id = column_exists(r, t, "textId") && table_exists(r, "StringIds");
    bool has_type = column_exists(r, t, "eventType");
    snprintf(sql, sizeof sql,
             "SELECT (n.globalTid >> 24) & 16777215, coalesce(%s, %s, '[unnamed]') AS range_name, "
             "count(*), sum(n.\"end\" - n.start) FROM %s AS n %s "
             "WHERE n.\"end\" IS NOT NULL AND n.globalTid IS NOT NULL %s%s%s GROUP BY 1, 2",
             column_exists(r, t, "text") ? "n.text" : "NULL", has_text_id ? "s.value" : "NULL", t,
             has_text_id ? "LEFT JOIN StringIds AS s ON n.textId = s.id" : "", has_type ? "AND n.eventType IN (" : "",
             has_type ? types : "", has_type ? ")" : "");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_failed(r, t);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!np_report_add_nvtx(r->report, (uint32_t)sqlite3_column_int64(st, 0),
                                (const char *)sqlite3_column_text(st, 1), sqlite3_column_int64(st, 2),
                                sqlite3_column_int64(st, 3))) {
            sqlite3_finalize(st);
            return false;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || sql_failed(r, t);
}

bool np_read_sqlite(const char *path, struct np_report *report)
{
    struct reader r = {.path = path, .report = report};
    np_int_map_init(&r.string_ids);
    if (sqlite3_open_v2(path, &r.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "nsight-parser: %s: cannot open as SQLite: %s\n", path, r.db ? sqlite3_errmsg(r.db) : "out of memory");
        sqlite3_close(r.db);
        return false;
    }
    /* Reading a large export: map it instead of copying pages through the cache. */
    sqlite3_exec(r.db, "PRAGMA mmap_size = 17179869184", NULL, NULL, NULL);
    bool ok = false;
    uint32_t *launch_slot = NULL;
    struct np_int_map keys;
    np_int_map_init(&keys);
    if (sqlite3_exec(r.db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "nsight-parser: %s: not a report: %s (expected an SQLite export of Nsight Systems, "
                        "an .nsys-rep, or the CSV of nsys stats --report cuda_kern_exec_trace)\n",
                path, sqlite3_errmsg(r.db));
        goto out;
    }
    if (!table_exists(&r, "CUPTI_ACTIVITY_KIND_KERNEL") && !table_exists(&r, "StringIds")) {
        fprintf(stderr, "nsight-parser: %s: not a report: an SQLite file without the tables of an Nsight "
                        "Systems export (StringIds, CUPTI_ACTIVITY_KIND_KERNEL); export one with "
                        "nsys export --type sqlite REPORT.nsys-rep\n",
                path);
        goto out;
    }
    if (!table_exists(&r, "CUPTI_ACTIVITY_KIND_KERNEL")) {
        fprintf(stderr, "nsight-parser: %s: the report has no CUDA kernels (no CUPTI_ACTIVITY_KIND_KERNEL "
                        "table): profile with CUDA tracing on (nsys profile -t cuda,nvtx ...)\n",
                path);
        goto out;
    }
    if (table_exists(&r, "StringIds") &&
        sqlite3_prepare_v2(r.db, "SELECT value FROM StringIds WHERE id = ?", -1, &r.string_lookup, NULL) != SQLITE_OK) {
        sql_failed(&r, "StringIds");
        goto out;
    }
    ok = read_processes(&r) && read_kernels(&r, &launch_slot, &keys) && join_launch_calls(&r, launch_slot, &keys) &&
         read_nvtx(&r);
out:
    free(launch_slot);
    np_int_map_free(&keys);
    np_int_map_free(&r.string_ids);
    sqlite3_finalize(r.string_lookup);
    sqlite3_close(r.db);
    return ok;
}
