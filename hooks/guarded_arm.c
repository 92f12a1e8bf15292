/* A lower launch held by a guarded job of arm stop. Under back-to-back HP jobs the gate may never
 * be seen open between a stop job and the partition job after it: a launch that waited for the
 * gate would then wait through the partition job too, and the lower process would get nothing
 * from it. So it waits for either, and is routed to its partition once the arm turns to one. */
#include <unistd.h>

#include "client.h"
#include "guarded.h"
#include "partition.h"
#include "stderr_line.h"
#include "trace_ranges.h"

/* One wait: true once the launch may go ahead on its own stream, false when the arm turned to a
 * partition with the gate still closed (route again). Steps out of `entered` while it waits, as
 * gy_client_block does, so that the drain helper never waits for it. */
static bool wait_for_gate_or_partition(void)
{
    int allowed_at;
    bool turned;
    gy_client_step_out();
    gy_range_push("preemption");
    gy_wait_until_allowed_or_partition_on(&gy_client.shm, gy_thread_device, &allowed_at, &turned);
    gy_range_pop();
    if (gy_segment_removed(&gy_client.shm))
        gy_die("gpuyield: pid %d stops: its segment was removed while it ran (expcontroller remove, or its "
               "experiment ended): no launch goes ahead ungated; restart the worker to join the experiment's new "
               "segment",
               (int)getpid());
    gy_client_step_in();
    gy_mark_inflight(&gy_client.shm);
    return !turned && gy_word_allows(gy_thread_gate, allowed_at);
}

void gy_partition_gate_closed(gy_cu_stream stream, gy_cu_graph_exec graph, struct gy_partition_route *route)
{
    for (;;) {
        if (!route->stopped) { /* not guarded's stop: wait for the job's end, as before */
            gy_client_block();
            return;
        }
        if (wait_for_gate_or_partition())
            return;
        if (gy_partition_route(stream, graph, route))
            return;
    }
}
