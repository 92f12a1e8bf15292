/* Stream capture hooks: only counted, so that the drain helper never calls cuCtxSynchronize
 * while a capture is in progress (illegal in global mode) and the queue bound re-checks
 * cuStreamIsCapturing after a capture began.
 *
 * A capture is counted in before it begins, and backs off while the helper is synchronizing;
 * the helper raises its flag and backs off while a capture is counted (drain_helper.c). Both
 * sides store then load (seq_cst), so at least one of them sees the other: a capture never
 * begins during the helper's cuCtxSynchronize. */
#include <time.h>

#include "client.h"
#include "hook_functions.h"
#include "partition.h"


/* Before a capture begins on `stream`: the partition work it owes is joined outside the capture. */
static void count_capture_in_on(gy_cu_stream stream)
{
    if (gy_partition_owes())
        gy_partition_before_use(stream);
    for (;;) {
        atomic_fetch_add_explicit(&gy_client.captures_in_progress, 1, memory_order_seq_cst);
        if (!atomic_load_explicit(&gy_client.helper_synchronizing, memory_order_seq_cst))
            return;
        atomic_fetch_sub_explicit(&gy_client.captures_in_progress, 1, memory_order_seq_cst);
        while (atomic_load_explicit(&gy_client.helper_synchronizing, memory_order_seq_cst)) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
    }
}
static gy_cu_result began(gy_cu_result rc)
{
    if (rc == GY_CUDA_SUCCESS)
        atomic_fetch_add_explicit(&gy_client.captures_begun, 1, memory_order_acq_rel);
    else
        atomic_fetch_sub_explicit(&gy_client.captures_in_progress, 1, memory_order_seq_cst);
    return rc;
}

GY_EXPORT gy_cu_result cuStreamBeginCapture(gy_cu_stream stream)
{
    gy_pfn_begin_capture real = (gy_pfn_begin_capture)gy_real(GY_FN_BEGIN_CAPTURE);
    return real ? (count_capture_in_on(stream ? stream : GY_CU_STREAM_LEGACY), began(real(stream))) : GY_CUDA_ERROR_NOT_INITIALIZED;
}

GY_EXPORT gy_cu_result cuStreamBeginCapture_ptsz(gy_cu_stream stream)
{
    gy_pfn_begin_capture real = (gy_pfn_begin_capture)gy_real(GY_FN_BEGIN_CAPTURE_PTSZ);
    return real ? (count_capture_in_on(stream ? stream : GY_CU_STREAM_PER_THREAD), began(real(stream))) : GY_CUDA_ERROR_NOT_INITIALIZED;
}

GY_EXPORT gy_cu_result cuStreamBeginCapture_v2(gy_cu_stream stream, int mode)
{
    gy_pfn_begin_capture_v2 real = (gy_pfn_begin_capture_v2)gy_real(GY_FN_BEGIN_CAPTURE_V2);
    return real ? (count_capture_in_on(stream ? stream : GY_CU_STREAM_LEGACY), began(real(stream, mode))) : GY_CUDA_ERROR_NOT_INITIALIZED;
}

GY_EXPORT gy_cu_result cuStreamBeginCapture_v2_ptsz(gy_cu_stream stream, int mode)
{
    gy_pfn_begin_capture_v2 real = (gy_pfn_begin_capture_v2)gy_real(GY_FN_BEGIN_CAPTURE_V2_PTSZ);
    return real ? (count_capture_in_on(stream ? stream : GY_CU_STREAM_PER_THREAD), began(real(stream, mode))) : GY_CUDA_ERROR_NOT_INITIALIZED;
}

GY_EXPORT gy_cu_result cuStreamBeginCaptureToGraph(gy_cu_stream stream, gy_cu_graph graph,
                                                   const gy_cu_graph_node *deps,
                                                   const gy_cu_graph_edge_data *edge_data, size_t ndeps, int mode)
{
    gy_pfn_begin_capture_to_graph real = (gy_pfn_begin_capture_to_graph)gy_real(GY_FN_BEGIN_CAPTURE_TO_GRAPH);
    return real ? (count_capture_in_on(stream ? stream : GY_CU_STREAM_LEGACY), began(real(stream, graph, deps, edge_data, ndeps, mode))) : GY_CUDA_ERROR_NOT_INITIALIZED;
}

GY_EXPORT gy_cu_result cuStreamBeginCaptureToGraph_ptsz(gy_cu_stream stream, gy_cu_graph graph,
                                                        const gy_cu_graph_node *deps,
                                                        const gy_cu_graph_edge_data *edge_data, size_t ndeps,
                                                        int mode)
{
    gy_pfn_begin_capture_to_graph real =
        (gy_pfn_begin_capture_to_graph)gy_real(GY_FN_BEGIN_CAPTURE_TO_GRAPH_PTSZ);
    return real ? (count_capture_in_on(stream ? stream : GY_CU_STREAM_PER_THREAD), began(real(stream, graph, deps, edge_data, ndeps, mode))) : GY_CUDA_ERROR_NOT_INITIALIZED;
}

/* A capture ends with this call if the stream was capturing before and is not after. */
static gy_cu_result end_capture(gy_pfn_end_capture real, gy_cu_stream stream, gy_cu_stream normalized,
                                gy_cu_graph *graph)
{
    if (!real)
        return GY_CUDA_ERROR_NOT_INITIALIZED;
    gy_pfn_is_capturing is_capturing = (gy_pfn_is_capturing)gy_real(GY_FN_IS_CAPTURING);
    int status = GY_CU_STREAM_CAPTURE_STATUS_NONE;
    bool was_capturing = is_capturing && is_capturing(normalized, &status) == GY_CUDA_SUCCESS &&
                         status != GY_CU_STREAM_CAPTURE_STATUS_NONE;
    gy_cu_result rc = real(stream, graph);
    /* A failed end (an unjoined side stream, say) may leave the capture going: count it out only
     * once the stream no longer captures. */
    status = GY_CU_STREAM_CAPTURE_STATUS_NONE;
    bool still_capturing = rc != GY_CUDA_SUCCESS && is_capturing(normalized, &status) == GY_CUDA_SUCCESS &&
                           status != GY_CU_STREAM_CAPTURE_STATUS_NONE;
    if (was_capturing && !still_capturing) {
        int n = atomic_load(&gy_client.captures_in_progress);
        while (n > 0 && !atomic_compare_exchange_weak(&gy_client.captures_in_progress, &n, n - 1)) {
        }
    }
    return rc;
}

GY_EXPORT gy_cu_result cuStreamEndCapture(gy_cu_stream stream, gy_cu_graph *graph)
{
    return end_capture((gy_pfn_end_capture)gy_real(GY_FN_END_CAPTURE), stream, stream ? stream : GY_CU_STREAM_LEGACY,
                       graph);
}

GY_EXPORT gy_cu_result cuStreamEndCapture_ptsz(gy_cu_stream stream, gy_cu_graph *graph)
{
    return end_capture((gy_pfn_end_capture)gy_real(GY_FN_END_CAPTURE_PTSZ), stream,
                       stream ? stream : GY_CU_STREAM_PER_THREAD, graph);
}
