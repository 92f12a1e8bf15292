"""One process's side of the graph-split check (bench/gpu/graph_split_check.sh): build CUDA graphs
of different shapes with torch, replay each, and save their outputs and replay times, so that a run
whose graphs were launched in parts (GPUYIELD_GRAPH_SPLIT=auto) can be compared bit for bit with
one that launched them whole (off).

Graphs: gemm2 (the matrix's LP graph: 2 x (2048^2 matmul + tanh)); r50 (ResNet-50 inference, batch
64: hundreds of kernels); branches (work forked onto a side stream inside the capture and joined:
parallel branches, a memset and a device copy).

  python3 bench/gpu/graph_split_probe.py OUT.json [REPLAYS]

With GY_PROBE_READY and GY_PROBE_GO set (two file names), every graph is first replayed
WARM_REPLAYS times, one at a time (so that graph split times and cuts the long ones outside any
job), then READY is written and the probe waits for GO to exist (at most GO_WAIT_S) before the
measured replays: the check opens a higher job in between, so that the measured replays run as
twins of the graphs' parts.
"""
import hashlib
import json
import os
import statistics
import sys
import time

import torch
import torchvision


def capture(fn):
    """The graph, its output, and fn: the graph reads the memory of the tensors fn holds (weights,
    inputs), so fn must outlive every replay; dropped, that memory goes back to the allocator and a
    later replay reads what took its place (an illegal address on the H200, 2026-12-01, once every
    graph was captured before the first was measured)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph, out, fn


def gemm2():
    a = torch.randn(2048, 2048, device="cuda")
    b = torch.randn(2048, 2048, device="cuda") / 45.0
    return lambda: torch.tanh(torch.tanh(a @ b) @ b)


def r50():
    model = torchvision.models.resnet50(weights=None).cuda().eval()
    x = torch.randn(64, 3, 224, 224, device="cuda")

    def run():
        with torch.inference_mode():
            return model(x)
    return run


def branches():
    a = torch.randn(1024, 1024, device="cuda")
    buf = torch.empty(1024, 1024, device="cuda")

    def run():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        left = torch.relu(a @ a)
        with torch.cuda.stream(s):
            buf.zero_()            # a memset node
            right = torch.sigmoid(a @ a.t())
            buf.copy_(right)       # a device-to-device copy node
        torch.cuda.current_stream().wait_stream(s)
        return left + buf
    return run


WARM_REPLAYS = 16  # graph split: 3 whole launches timed, then 2 a cut, up to 3 cuts
GO_WAIT_S = 120


def wait_for_go(ready, go):
    with open(ready, "w") as f:
        f.write("warm\n")
    deadline = time.monotonic() + GO_WAIT_S
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            sys.exit(f"graph_split_probe: {go} did not appear within {GO_WAIT_S} s of {ready}")
        time.sleep(0.05)


def measure(graph, out, replays):
    times = []
    for _ in range(replays):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        graph.replay()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    # Back to back, no synchronisation between replays: the throughput an LP sees.
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(replays):
        graph.replay()
    torch.cuda.synchronize()
    per_replay_ms = (time.perf_counter() - t0) * 1e3 / replays
    # The output's bytes, hashed: equal hashes, equal bits (the tensors themselves are tens of MB).
    digest = hashlib.sha256(out.detach().contiguous().cpu().numpy().tobytes()).hexdigest()
    return {"sha256": digest, "replay_ms_p50": statistics.median(times), "back_to_back_ms": per_replay_ms}


def main():
    out_path, replays = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30
    ready, go = os.environ.get("GY_PROBE_READY"), os.environ.get("GY_PROBE_GO")
    torch.manual_seed(0)
    graphs = {name: capture(make()) for name, make in (("gemm2", gemm2), ("r50", r50), ("branches", branches))}
    if ready and go:
        for graph, _, _ in graphs.values():
            for _ in range(WARM_REPLAYS):
                graph.replay()
                torch.cuda.synchronize()
        wait_for_go(ready, go)
    results = {}
    for name, (graph, out, _) in graphs.items():
        results[name] = r = measure(graph, out, replays)
        print(f"{name}: replay p50 {r['replay_ms_p50']:.3f} ms, back to back {r['back_to_back_ms']:.3f} ms a replay",
              flush=True)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
