/* A status snapshot in the Prometheus text exposition format (version 0.0.4): per segment, the
 * jobs in progress per level and the reaped processes; per registered process (labelled with its
 * pid, name and priority level), every counter of GY_PROC_COUNTERS. */
#include <ctype.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "guarded.h"
#include "metrics.h"

/* A label value: backslash, double quote and newline escaped. */
static void label_escape(const char *in, char *out, size_t len)
{
    size_t o = 0;
    for (; *in && o + 3 < len; in++) {
        if (*in == '\\' || *in == '"') {
            out[o++] = '\\';
            out[o++] = *in;
        } else if (*in == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

/* The per-process counters: one family per row of GY_PROC_COUNTERS (segment_layout.h), so a new
 * row is exported without an edit here. A row counts `name` -> gpuyield_<name>_total, its HELP the
 * row's description; a row of nanoseconds (name ending in _ns) is exported in seconds, Prometheus'
 * base unit: blocked_ns -> gpuyield_blocked_seconds_total. */
struct proc_counter {
    const char *name, *what;
    size_t offset; /* of its uint64_t in struct gy_status_proc */
};

#define PROC_COUNTER_ROW(name, what) {#name, what, offsetof(struct gy_status_proc, name)},
static const struct proc_counter proc_counters[] = {GY_PROC_COUNTERS(PROC_COUNTER_ROW)};
#undef PROC_COUNTER_ROW

static bool in_nanoseconds(const char *name)
{
    size_t n = strlen(name);
    return n > 3 && strcmp(name + n - 3, "_ns") == 0;
}

/* "gpuyield_<name>_total", or "gpuyield_<stem>_seconds_total" for <stem>_ns. */
static void family_name(const char *name, char *out, size_t len)
{
    if (in_nanoseconds(name))
        snprintf(out, len, "gpuyield_%.*s_seconds_total", (int)(strlen(name) - 3), name);
    else
        snprintf(out, len, "gpuyield_%s_total", name);
}

static uint64_t counter_value(const struct gy_status_proc *p, const struct proc_counter *c)
{
    uint64_t v;
    memcpy(&v, (const char *)p + c->offset, sizeof v);
    return v;
}

int gy_metrics_text(const struct gy_status *st, char *buf, size_t len)
{
    size_t used = 0;
#define EMIT(...)                                                                                        \
    do {                                                                                                 \
        int n_ = snprintf(used < len ? buf + used : NULL, used < len ? len - used : 0, __VA_ARGS__);     \
        used += n_ > 0 ? (size_t)n_ : 0;                                                                 \
    } while (0)
    char seg[2 * GY_NAME_MAX];
    label_escape(st->name, seg, sizeof seg);
    EMIT("# HELP gpuyield_info The segment's settings and the gpuyield version (value 1).\n"
         "# TYPE gpuyield_info gauge\n"
         "gpuyield_info{segment=\"%s\",policy=\"%s\",mps=\"%s\",version=\"%s\"} 1\n",
         seg, gy_policy_name(st->policy), st->mps ? "true" : "false", gy_version());
    EMIT("# HELP gpuyield_jobs_in_progress Jobs in progress per priority level.\n"
         "# TYPE gpuyield_jobs_in_progress gauge\n");
    for (int level = 0; level < GY_LEVELS; level++)
        EMIT("gpuyield_jobs_in_progress{segment=\"%s\",level=\"%d\"} %u\n", seg, level, st->jobs[level]);
    EMIT("# HELP gpuyield_reaped_processes_total Dead processes counted out of the segment.\n"
         "# TYPE gpuyield_reaped_processes_total counter\n"
         "gpuyield_reaped_processes_total{segment=\"%s\"} %llu\n",
         seg, (unsigned long long)st->reaped);
    EMIT("# HELP gpuyield_segment_drain_timeouts_total Drain waits that timed out, all processes.\n"
         "# TYPE gpuyield_segment_drain_timeouts_total counter\n"
         "gpuyield_segment_drain_timeouts_total{segment=\"%s\"} %llu\n",
         seg, (unsigned long long)st->total_drain_timeouts);
    EMIT("# HELP gpuyield_registered_processes Processes registered in the segment.\n"
         "# TYPE gpuyield_registered_processes gauge\n"
         "gpuyield_registered_processes{segment=\"%s\"} %d\n",
         seg, st->nprocs);
    for (size_t c = 0; c < sizeof proc_counters / sizeof *proc_counters; c++) {
        const struct proc_counter *pc = &proc_counters[c];
        char family[96];
        family_name(pc->name, family, sizeof family);
        bool seconds = in_nanoseconds(pc->name);
        /* HELP: the row's description, capitalized (the table's texts need no escaping). */
        EMIT("# HELP %s %c%s%s.\n# TYPE %s counter\n", family, toupper((unsigned char)pc->what[0]), pc->what + 1,
             seconds ? ", in seconds" : "", family);
        for (int i = 0; i < st->nprocs; i++) {
            const struct gy_status_proc *p = &st->procs[i];
            char name[4 * sizeof p->name];
            label_escape(p->name, name, sizeof name);
            uint64_t v = counter_value(p, pc);
            EMIT("%s{segment=\"%s\",pid=\"%d\",name=\"%s\",level=\"%d\"} ", family, seg, p->pid, name, p->priority);
            if (seconds)
                EMIT("%llu.%09llu\n", (unsigned long long)(v / 1000000000u), (unsigned long long)(v % 1000000000u));
            else
                EMIT("%llu\n", (unsigned long long)v);
        }
    }
    if (st->guarded)
        used += (size_t)gy_guarded_metrics(&st->guard, seg, used < len ? buf + used : NULL, used < len ? len - used : 0);
#undef EMIT
    return (int)used;
}
