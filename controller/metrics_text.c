/* A status snapshot in the Prometheus text exposition format (version 0.0.4): per segment, the
 * jobs in progress per level and the reaped processes; per registered process (labelled with its
 * pid, name and priority level), its launches, waits, seconds blocked, drains and drain timeouts. */
#include <stdio.h>
#include <string.h>

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

struct proc_counter {
    const char *name, *help;
    double (*value)(const struct gy_status_proc *p);
};

static double launches(const struct gy_status_proc *p) { return (double)p->launches; }
static double graph_launches(const struct gy_status_proc *p) { return (double)p->graph_launches; }
static double waits(const struct gy_status_proc *p) { return (double)p->waits; }
static double blocked_seconds(const struct gy_status_proc *p) { return (double)p->blocked_ns / 1e9; }
static double drains(const struct gy_status_proc *p) { return (double)p->drains; }
static double drain_timeouts(const struct gy_status_proc *p) { return (double)p->drain_timeouts; }

static const struct proc_counter proc_counters[] = {
    {"gpuyield_launches_total", "Kernel launches, copies and memsets that passed the gate.", launches},
    {"gpuyield_graph_launches_total", "CUDA graph launches that passed the gate.", graph_launches},
    {"gpuyield_waits_total", "Launches that waited at the gate for a higher-priority job.", waits},
    {"gpuyield_blocked_seconds_total", "Seconds launches spent waiting at the gate.", blocked_seconds},
    {"gpuyield_drains_total", "Drain requests this process acknowledged.", drains},
    {"gpuyield_drain_timeouts_total", "Drain waits on this process that timed out.", drain_timeouts},
};

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
        EMIT("# HELP %s %s\n# TYPE %s counter\n", proc_counters[c].name, proc_counters[c].help, proc_counters[c].name);
        for (int i = 0; i < st->nprocs; i++) {
            const struct gy_status_proc *p = &st->procs[i];
            char name[4 * sizeof p->name];
            label_escape(p->name, name, sizeof name);
            EMIT("%s{segment=\"%s\",pid=\"%d\",name=\"%s\",level=\"%d\"} %.9g\n", proc_counters[c].name, seg, p->pid,
                 name, p->priority, proc_counters[c].value(p));
        }
    }
#undef EMIT
    return (int)used;
}
