/* One process, one row: the hook and the Python extension register apart (two slots, one pid). */
#include <string.h>

#include "status_view.h"

/* The state that says most about the process: blocked over draining over running. */
static int state_rank(const char *state)
{
    if (!state)
        return 0;
    if (strcmp(state, "blocked") == 0)
        return 3;
    if (strcmp(state, "draining") == 0)
        return 2;
    return 1;
}

static void merge_into(struct gy_status_proc *into, const struct gy_status_proc *from)
{
#define SUM_COUNTER(name, what) into->name += from->name;
    GY_PROC_COUNTERS(SUM_COUNTER)
#undef SUM_COUNTER
    if (from->priority > into->priority)
        into->priority = from->priority;
    if (state_rank(from->state) > state_rank(into->state))
        into->state = from->state;
    into->inflight = into->inflight || from->inflight;
    into->launched_devices |= from->launched_devices;
    /* The slot that decided a partition (the hook's) says more than one that did not ("-"). */
    if (from->partition && (!into->partition || strcmp(into->partition, "-") == 0))
        into->partition = from->partition;
    if (!into->name[0])
        memcpy(into->name, from->name, sizeof into->name);
}

void gy_status_merge(struct gy_status *st)
{
    int kept = 0;
    for (int i = 0; i < st->nprocs; i++) {
        int j = 0;
        while (j < kept && st->procs[j].pid != st->procs[i].pid)
            j++;
        if (j < kept)
            merge_into(&st->procs[j], &st->procs[i]);
        else if (kept != i)
            st->procs[kept++] = st->procs[i];
        else
            kept++;
    }
    st->nprocs = kept;
}

void gy_status_view(struct gy_status *st)
{
    gy_utf8_clean(st->name);
    gy_utf8_clean(st->mutex_holder);
    for (int i = 0; i < st->nprocs; i++)
        gy_utf8_clean(st->procs[i].name);
    gy_status_merge(st);
}
