// The green-context facts the partition policy relies on, measured with no hook involved:
//   green-probe [SMS]      (default 16)
// Creates a green context of SMS SMs beside the primary context and checks that work of the
// primary context runs on its stream (cuLaunchKernel, cuLaunchKernelEx, a graph instantiated in
// the primary context and launched with cuGraphLaunch), on which SMs, that events order the two
// streams both ways, whether cuCtxSynchronize / cudaDeviceSynchronize in the primary context
// wait for green-stream work, and which group sizes cuDevSmResourceSplitByCount returns.
// Prints one JSON object; exit 1 when a fact the hook relies on does not hold, 2 on bad usage.
// Whether a graph launched on the green stream is confined is reported, not required: the hook
// never sends a graph to the partition (on the H100, driver 580, a graph instantiated in the primary
// context ran on all 132 SMs), so the policy holds either way. Three other ways are reported beside
// it (the graph instantiated again with the green context current; a graph captured on the green
// stream; a clone whose kernel nodes name the green context): if one is confined, a lower
// process's graphs could run in the partition too.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "check_cuda.cuh"
#include "smid_kernels.cuh"
#include "spin_kernels.cuh"


static const unsigned long long BLOCK_SPIN_NS = 20000; // long enough for blocks to spread over SMs

// Device buffers for one recorded launch of `blocks` blocks.
struct recorded {
    int blocks;
    unsigned long long *starts;
    unsigned *smids;
    gy_launch_record *rec;
    gy_launch_counters *cnt;
};

static recorded make_recorded(int blocks)
{
    recorded r{blocks, nullptr, nullptr, nullptr, nullptr};
    CHECK_CUDA(cudaMalloc(&r.starts, blocks * sizeof *r.starts));
    CHECK_CUDA(cudaMalloc(&r.smids, blocks * sizeof *r.smids));
    CHECK_CUDA(cudaMalloc(&r.rec, sizeof *r.rec));
    CHECK_CUDA(cudaMalloc(&r.cnt, sizeof *r.cnt));
    CHECK_CUDA(cudaMemset(r.cnt, 0, sizeof *r.cnt));
    CHECK_CUDA(cudaMemset(r.starts, 0, blocks * sizeof *r.starts));
    return r;
}

// The distinct SMs the recorded launch ran on; empty when a block did not run.
static std::set<unsigned> sm_set(const recorded &r)
{
    std::vector<unsigned long long> starts(r.blocks);
    std::vector<unsigned> smids(r.blocks);
    CHECK_CUDA(cudaMemcpy(starts.data(), r.starts, r.blocks * sizeof starts[0], cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(smids.data(), r.smids, r.blocks * sizeof smids[0], cudaMemcpyDeviceToHost));
    std::set<unsigned> sms;
    for (int i = 0; i < r.blocks; i++) {
        if (!starts[i])
            return {};
        sms.insert(smids[i]);
    }
    CHECK_CUDA(cudaMemset(r.starts, 0, r.blocks * sizeof *r.starts));
    return sms;
}

static std::string json_set(const std::set<unsigned> &s)
{
    std::string out = "[";
    for (unsigned v : s)
        out += (out.size() > 1 ? ", " : "") + std::to_string(v);
    return out + "]";
}

static bool subset(const std::set<unsigned> &a, const std::set<unsigned> &b)
{
    return std::includes(b.begin(), b.end(), a.begin(), a.end());
}

__global__ void write_after_spin(unsigned long long spin_ns, int *flag, int value)
{
    unsigned long long start = gy_globaltimer();
    while (gy_globaltimer() - start < spin_ns) {
    }
    *flag = value;
}

__global__ void read_flag(const int *flag, int *out)
{
    *out = *flag;
}

// A writer kernel on `first` (spins, then writes), an event recorded there, `second` waits for it,
// a reader kernel on `second` copies the flag: the value read says whether the wait ordered them.
static int read_across(CUstream first, CUstream second, bool wait, int value, int *flag, int *out)
{
    CHECK_CUDA(cudaMemset(flag, 0, sizeof *flag));
    CHECK_CUDA(cudaMemset(out, 0, sizeof *out));
    CHECK_CUDA(cudaDeviceSynchronize());
    CUevent ev;
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    write_after_spin<<<1, 1, 0, (cudaStream_t)first>>>(5000000ull, flag, value);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CU(cuEventRecord(ev, first));
    if (wait)
        CHECK_CU(cuStreamWaitEvent(second, ev, 0));
    read_flag<<<1, 1, 0, (cudaStream_t)second>>>(flag, out);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CU(cuStreamSynchronize(first));
    CHECK_CU(cuStreamSynchronize(second));
    CHECK_CU(cuEventDestroy(ev));
    int got = 0;
    CHECK_CUDA(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    return got;
}

// A graph launched on the green stream by one of the ways below: each step's result code (0: it
// worked) and the SMs its kernel ran on (empty when a step failed).
struct graph_variant {
    CUresult make_rc, instantiate_rc, launch_rc, sync_rc;
    std::set<unsigned> sms;
};

static graph_variant launch_variant(CUresult make_rc, CUresult instantiate_rc, CUgraphExec exec, CUstream green,
                                    const recorded &r)
{
    graph_variant v{make_rc, instantiate_rc, CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY, {}};
    if (make_rc != CUDA_SUCCESS || instantiate_rc != CUDA_SUCCESS)
        return v;
    CHECK_CUDA(cudaMemset(r.starts, 0, r.blocks * sizeof *r.starts));
    v.launch_rc = cuGraphLaunch(exec, green);
    v.sync_rc = v.launch_rc == CUDA_SUCCESS ? cuStreamSynchronize(green) : CUDA_ERROR_NOT_READY;
    if (v.launch_rc == CUDA_SUCCESS && v.sync_rc == CUDA_SUCCESS)
        v.sms = sm_set(r);
    return v;
}

// (a) `graph` (captured in the primary context) instantiated with the green context current.
static graph_variant graph_in_green_ctx(CUgreenCtx green_ctx, cudaGraph_t graph, CUstream green, const recorded &r)
{
    CUcontext as_ctx = nullptr;
    CUresult make_rc = cuCtxFromGreenCtx(&as_ctx, green_ctx);
    CUgraphExec exec = nullptr;
    CUresult inst_rc = CUDA_ERROR_NOT_READY;
    if (make_rc == CUDA_SUCCESS && (make_rc = cuCtxPushCurrent(as_ctx)) == CUDA_SUCCESS) {
        inst_rc = cuGraphInstantiate(&exec, (CUgraph)graph, 0);
        CUcontext popped;
        CHECK_CU(cuCtxPopCurrent(&popped));
    }
    graph_variant v = launch_variant(make_rc, inst_rc, exec, green, r);
    if (exec)
        CHECK_CU(cuGraphExecDestroy(exec));
    return v;
}

// A graph made here (make_rc: how that went), instantiated with the primary context current,
// launched on the green stream; the graph and its exec destroyed after.
static graph_variant run_own_graph(CUresult make_rc, CUgraph graph, CUstream green, const recorded &r)
{
    CUgraphExec exec = nullptr;
    CUresult inst_rc = make_rc == CUDA_SUCCESS ? cuGraphInstantiate(&exec, graph, 0) : CUDA_ERROR_NOT_READY;
    graph_variant v = launch_variant(make_rc, inst_rc, exec, green, r);
    if (exec)
        CHECK_CU(cuGraphExecDestroy(exec));
    if (graph)
        CHECK_CU(cuGraphDestroy(graph));
    return v;
}

// (b) a graph captured from a cuLaunchKernel on the green stream, instantiated in the primary context.
static graph_variant graph_captured_on_green(CUfunction fn, int blocks, void **params, CUstream green,
                                             const recorded &r)
{
    CUgraph graph = nullptr;
    CUresult make_rc = cuStreamBeginCapture(green, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (make_rc == CUDA_SUCCESS) {
        CUresult launch_rc = cuLaunchKernel(fn, blocks, 1, 1, 128, 1, 1, 0, green, params, nullptr);
        make_rc = cuStreamEndCapture(green, &graph);
        if (make_rc == CUDA_SUCCESS)
            make_rc = launch_rc;
    }
    return run_own_graph(make_rc, graph, green, r);
}

// What the kernel nodes of a graph captured from a runtime launch hold: a CUfunction (bound to the
// primary context) or a CUkernel (context-independent, run in the node's ctx).
struct node_facts {
    int nodes, kernel_nodes, func_set, kern_set;
};

// (c) `graph` cloned, each kernel node given the green context as its ctx (and a CUkernel: the
// node's own, or the one the runtime has for `symbol` when the node holds a CUfunction).
static graph_variant graph_nodes_in_green_ctx(CUgreenCtx green_ctx, cudaGraph_t graph, const void *symbol,
                                              CUstream green, const recorded &r, node_facts *facts)
{
    CUcontext as_ctx = nullptr;
    CUgraph clone = nullptr;
    CUresult make_rc = cuCtxFromGreenCtx(&as_ctx, green_ctx);
    if (make_rc == CUDA_SUCCESS)
        make_rc = cuGraphClone(&clone, (CUgraph)graph);
    size_t n = 0;
    if (make_rc == CUDA_SUCCESS)
        make_rc = cuGraphGetNodes(clone, nullptr, &n);
    std::vector<CUgraphNode> nodes(n);
    if (make_rc == CUDA_SUCCESS && n)
        make_rc = cuGraphGetNodes(clone, nodes.data(), &n);
    facts->nodes = (int)n;
    for (size_t i = 0; make_rc == CUDA_SUCCESS && i < n; i++) {
        CUgraphNodeType type;
        if ((make_rc = cuGraphNodeGetType(nodes[i], &type)) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        facts->kernel_nodes++;
        CUDA_KERNEL_NODE_PARAMS p;
        if ((make_rc = cuGraphKernelNodeGetParams(nodes[i], &p)) != CUDA_SUCCESS)
            break;
        facts->func_set += p.func != nullptr;
        facts->kern_set += p.kern != nullptr;
        if (!p.kern) {
            cudaKernel_t k = nullptr;
            if (cudaGetKernel(&k, symbol) != cudaSuccess) {
                make_rc = CUDA_ERROR_NOT_FOUND;
                break;
            }
            p.kern = (CUkernel)k;
        }
        p.func = nullptr;
        p.ctx = as_ctx;
        make_rc = cuGraphKernelNodeSetParams(nodes[i], &p);
    }
    return run_own_graph(make_rc, clone, green, r);
}

static void print_variant(const char *key, const graph_variant &v, const std::set<unsigned> &green_sms)
{
    bool in = !v.sms.empty() && subset(v.sms, green_sms);
    std::printf(" \"%s\": {\"make_rc\": %d, \"instantiate_rc\": %d, \"launch_rc\": %d, \"sync_rc\": %d, "
                "\"runs\": %s, \"distinct_sms\": %zu, \"in_partition\": %s},\n",
                key, (int)v.make_rc, (int)v.instantiate_rc, (int)v.launch_rc, (int)v.sync_rc,
                v.sms.empty() ? "false" : "true", v.sms.size(), in ? "true" : "false");
}

// Seconds a synchronize call took while a long spin kernel ran on the green stream.
template <typename F> static double sync_seconds(CUstream green, unsigned long long spin_ns, F sync)
{
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CU(cuStreamSynchronize(green));
    gy_spin_kernel<<<1, 1, 0, (cudaStream_t)green>>>(spin_ns);
    CHECK_CUDA(cudaGetLastError());
    auto t0 = std::chrono::steady_clock::now();
    sync();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK_CU(cuStreamSynchronize(green));
    return s;
}

int main(int argc, char **argv)
{
    int want = 16;
    if (argc > 2 || (argc == 2 && ((want = std::atoi(argv[1])) <= 0))) {
        std::fprintf(stderr, "usage: green-probe [SMS] (SMS: the green context's SM count, > 0; default 16)\n");
        return 2;
    }
    CHECK_CUDA(cudaSetDevice(0));
    CHECK_CUDA(cudaFree(nullptr)); // the primary context, current
    CUcontext primary;
    CUdevice dev;
    CHECK_CU(cuCtxGetCurrent(&primary));
    CHECK_CU(cuCtxGetDevice(&dev));
    int driver = 0;
    CHECK_CU(cuDriverGetVersion(&driver));
    char name[256] = {0};
    CHECK_CU(cuDeviceGetName(name, sizeof name - 1, dev));

    CUdevResource all;
    CHECK_CU(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
    std::string granularity = "[";
    for (unsigned min_count : {8u, 12u, 16u, 24u, 32u}) {
        CUdevResource part, rest;
        unsigned groups = 1;
        CUresult r = cuDevSmResourceSplitByCount(&part, &groups, &all, &rest, 0, min_count);
        char item[200];
        if (r == CUDA_SUCCESS)
            std::snprintf(item, sizeof item, "{\"min_count\": %u, \"groups\": %u, \"group_sms\": %u, \"rest_sms\": %u}",
                          min_count, groups, groups ? part.sm.smCount : 0, rest.sm.smCount);
        else
            std::snprintf(item, sizeof item, "{\"min_count\": %u, \"error\": %d}", min_count, (int)r);
        granularity += (granularity.size() > 1 ? ", " : "") + std::string(item);
    }
    granularity += "]";

    CUdevResource part, rest;
    unsigned groups = 1;
    CHECK_CU(cuDevSmResourceSplitByCount(&part, &groups, &all, &rest, 0, (unsigned)want));
    if (groups != 1) {
        std::fprintf(stderr, "green-probe: no group of %d SMs out of %u\n", want, all.sm.smCount);
        return 1;
    }
    CUdevResourceDesc desc;
    CHECK_CU(cuDevResourceGenerateDesc(&desc, &part, 1));
    CUgreenCtx green_ctx;
    CHECK_CU(cuGreenCtxCreate(&green_ctx, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    CUstream green;
    CHECK_CU(cuGreenCtxStreamCreate(&green, green_ctx, CU_STREAM_NON_BLOCKING, 0));
    CHECK_CU(cuCtxSetCurrent(primary)); // everything below runs with the primary context current
    cudaStream_t ordinary;
    CHECK_CUDA(cudaStreamCreateWithFlags(&ordinary, cudaStreamNonBlocking));

    int sm_total = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&sm_total, cudaDevAttrMultiProcessorCount, 0));
    int blocks = sm_total * 4;
    recorded r = make_recorded(blocks);
    unsigned long long spin = BLOCK_SPIN_NS, launch_no = 0;

    // The reference: the primary context's own stream uses the whole GPU.
    gy_record_spin_kernel<<<blocks, 128, 0, ordinary>>>(spin, launch_no, r.rec, r.cnt, r.starts, r.smids);
    CHECK_CUDA(cudaStreamSynchronize(ordinary));
    std::set<unsigned> ordinary_sms = sm_set(r);

    // A CUfunction of the primary context, launched on the green stream with cuLaunchKernel.
    cudaFunction_t fn_rt;
    CHECK_CUDA(cudaGetFuncBySymbol(&fn_rt, (const void *)gy_record_spin_kernel));
    CUfunction fn = (CUfunction)fn_rt;
    void *params[] = {&spin, &launch_no, &r.rec, &r.cnt, &r.starts, &r.smids};
    CUresult launch_rc = cuLaunchKernel(fn, blocks, 1, 1, 128, 1, 1, 0, green, params, nullptr);
    CUresult sync_rc = cuStreamSynchronize(green);
    std::set<unsigned> launch_sms = launch_rc == CUDA_SUCCESS && sync_rc == CUDA_SUCCESS ? sm_set(r) : std::set<unsigned>{};

    // cuLaunchKernelEx with the green stream in its config.
    CUlaunchConfig cfg = {};
    cfg.gridDimX = blocks, cfg.gridDimY = 1, cfg.gridDimZ = 1;
    cfg.blockDimX = 128, cfg.blockDimY = 1, cfg.blockDimZ = 1;
    cfg.hStream = green;
    CUresult ex_rc = cuLaunchKernelEx(&cfg, fn, params, nullptr);
    sync_rc = cuStreamSynchronize(green);
    std::set<unsigned> ex_sms = ex_rc == CUDA_SUCCESS && sync_rc == CUDA_SUCCESS ? sm_set(r) : std::set<unsigned>{};

    // A runtime <<<>>> launch on the green stream (the primary context current).
    gy_record_spin_kernel<<<blocks, 128, 0, (cudaStream_t)green>>>(spin, launch_no, r.rec, r.cnt, r.starts, r.smids);
    cudaError_t rt_rc = cudaGetLastError();
    sync_rc = cuStreamSynchronize(green);
    std::set<unsigned> rt_sms = rt_rc == cudaSuccess && sync_rc == CUDA_SUCCESS ? sm_set(r) : std::set<unsigned>{};

    // A graph captured and instantiated in the primary context, launched on the green stream; the
    // same graph on the ordinary stream for contrast.
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(ordinary, cudaStreamCaptureModeThreadLocal));
    gy_record_spin_kernel<<<blocks, 128, 0, ordinary>>>(spin, launch_no, r.rec, r.cnt, r.starts, r.smids);
    CHECK_CUDA(cudaStreamEndCapture(ordinary, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CUresult graph_rc = cuGraphLaunch((CUgraphExec)exec, green);
    sync_rc = cuStreamSynchronize(green);
    std::set<unsigned> graph_sms = graph_rc == CUDA_SUCCESS && sync_rc == CUDA_SUCCESS ? sm_set(r) : std::set<unsigned>{};
    CHECK_CUDA(cudaGraphLaunch(exec, ordinary));
    CHECK_CUDA(cudaStreamSynchronize(ordinary));
    std::set<unsigned> graph_ordinary_sms = sm_set(r);

    // Two ways a lower process's graphs might be confined, for the hook to build on if one holds:
    // (a) the same graph instantiated again with the green context current (a twin exec the hook
    // could make at a graph's instantiation), launched on the green stream;
    graph_variant twin = graph_in_green_ctx(green_ctx, graph, green, r);
    // (b) a graph captured from launches on the green stream itself, instantiated in the primary
    // context and launched on the green stream.
    graph_variant captured = graph_captured_on_green(fn, blocks, params, green, r);
    // (c) the primary context's graph cloned, each kernel node's context set to the green context
    // (a kernel node runs in its `ctx` when it names a CUkernel, not a CUfunction).
    node_facts facts{};
    graph_variant retargeted = graph_nodes_in_green_ctx(green_ctx, graph, (const void *)gy_record_spin_kernel,
                                                        green, r, &facts);

    // Events both ways; without the wait the reader overtakes the writer (the check can fail).
    int *flag, *out;
    CHECK_CUDA(cudaMalloc(&flag, sizeof *flag));
    CHECK_CUDA(cudaMalloc(&out, sizeof *out));
    int green_after_ordinary = read_across((CUstream)ordinary, green, true, 11, flag, out);
    int ordinary_after_green = read_across(green, (CUstream)ordinary, true, 22, flag, out);
    int unordered = read_across((CUstream)ordinary, green, false, 33, flag, out);

    // Do the primary context's synchronize calls wait for the green stream's work?
    const unsigned long long long_ns = 300000000ull; // 300 ms
    double ctx_sync_s = sync_seconds(green, long_ns, [] { CHECK_CU(cuCtxSynchronize()); });
    double dev_sync_s = sync_seconds(green, long_ns, [] { CHECK_CUDA(cudaDeviceSynchronize()); });
    double legacy_sync_s = sync_seconds(green, long_ns, [] { CHECK_CUDA(cudaStreamSynchronize(0)); });

    bool in_partition_launch = !launch_sms.empty() && (int)launch_sms.size() <= (int)part.sm.smCount;
    bool in_partition_ex = !ex_sms.empty() && subset(ex_sms, launch_sms);
    bool in_partition_rt = !rt_sms.empty() && subset(rt_sms, launch_sms);
    bool in_partition_graph = !graph_sms.empty() && subset(graph_sms, launch_sms);
    bool events_order = green_after_ordinary == 11 && ordinary_after_green == 22;
    bool ok = in_partition_launch && in_partition_ex && in_partition_rt && events_order;
    auto waits = [&](double s) { return s >= 0.9 * long_ns / 1e9 ? "true" : "false"; };

    std::printf("{\"device\": \"%s\", \"driver_version\": %d, \"sm_count\": %d, \"requested_sms\": %d, "
                "\"green_sms\": %u, \"blocks_per_launch\": %d,\n",
                name, driver, sm_total, want, part.sm.smCount, blocks);
    std::printf(" \"split_by_count\": %s,\n", granularity.c_str());
    std::printf(" \"ordinary_stream\": {\"distinct_sms\": %zu},\n", ordinary_sms.size());
    std::printf(" \"cuLaunchKernel_green\": {\"rc\": %d, \"runs\": %s, \"distinct_sms\": %zu, \"sms\": %s},\n",
                (int)launch_rc, launch_sms.empty() ? "false" : "true", launch_sms.size(), json_set(launch_sms).c_str());
    std::printf(" \"cuLaunchKernelEx_green\": {\"rc\": %d, \"runs\": %s, \"distinct_sms\": %zu, \"same_sms\": %s},\n",
                (int)ex_rc, ex_sms.empty() ? "false" : "true", ex_sms.size(), in_partition_ex ? "true" : "false");
    std::printf(" \"runtime_launch_green\": {\"rc\": %d, \"runs\": %s, \"distinct_sms\": %zu, \"same_sms\": %s},\n",
                (int)rt_rc, rt_sms.empty() ? "false" : "true", rt_sms.size(), in_partition_rt ? "true" : "false");
    std::printf(" \"cuGraphLaunch_green\": {\"rc\": %d, \"runs\": %s, \"distinct_sms\": %zu, \"in_partition\": %s, "
                "\"same_graph_ordinary_stream_distinct_sms\": %zu},\n",
                (int)graph_rc, graph_sms.empty() ? "false" : "true", graph_sms.size(),
                in_partition_graph ? "true" : "false", graph_ordinary_sms.size());
    print_variant("cuGraphLaunch_green_instantiated_in_green_ctx", twin, launch_sms);
    print_variant("cuGraphLaunch_green_captured_on_green", captured, launch_sms);
    print_variant("cuGraphLaunch_green_nodes_set_to_green_ctx", retargeted, launch_sms);
    std::printf(" \"captured_kernel_node\": {\"nodes\": %d, \"kernel_nodes\": %d, \"func_set\": %d, \"kern_set\": %d},\n",
                facts.nodes, facts.kernel_nodes, facts.func_set, facts.kern_set);
    std::printf(" \"events\": {\"green_waits_ordinary_read\": %d, \"ordinary_waits_green_read\": %d, "
                "\"expected\": [11, 22], \"no_wait_read\": %d, \"order\": %s},\n",
                green_after_ordinary, ordinary_after_green, unordered, events_order ? "true" : "false");
    std::printf(" \"primary_sync_waits_for_green\": {\"spin_s\": %.3f, \"cuCtxSynchronize_s\": %.4f, "
                "\"cuCtxSynchronize_waits\": %s, \"cudaDeviceSynchronize_s\": %.4f, \"cudaDeviceSynchronize_waits\": %s, "
                "\"legacy_stream_sync_s\": %.4f, \"legacy_stream_sync_waits\": %s},\n",
                long_ns / 1e9, ctx_sync_s, waits(ctx_sync_s), dev_sync_s, waits(dev_sync_s), legacy_sync_s,
                waits(legacy_sync_s));
    std::printf(" \"ok\": %s}\n", ok ? "true" : "false");
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CU(cuStreamDestroy(green));
    CHECK_CU(cuGreenCtxDestroy(green_ctx));
    if (!ok)
        std::fprintf(stderr, "green-probe: a fact the partition policy relies on does not hold (see \"ok\")\n");
    return ok ? 0 : 1;
}
