"""The matrix's workloads on a real GPU (torch): what one high-priority (HP) job and one
low-priority (LP) unit are, per kind. Random weights everywhere (the GPU machine has no network);
the kernels and their times are those of trained weights.

HP kinds (a job = the work, then the GPU synchronised, as a server answers a request; a unit of
more than one kind of job may carry `reseed(seed)` and `variants`, see matrix_worker.Worker):
  gemm      GPU-bound: 10 x (2048^2 fp32 matmul + tanh), about 3.6 ms on an H100
  small     launch-bound: 100 x (256^2 matmul + tanh) = 200 small kernels, the GPU mostly idle
  frcnn720  torchvision FasterRCNN-ResNet50-FPN on one 720x1280 image (the reference HP)
  bert      a BERT-base-sized encoder (12 layers, d 768, 12 heads, FFN 3072), batch 1, sequence 128
  mixed     only when named: two kinds of request, the small job 9 times in 10 and, drawn at random
            (seeded), a long GPU-bound one of 200 x (2048^2 matmul + tanh): 70 ms against 2.2 ms
            on the H100 (32x, measured 2026-12-07; 18x was the estimate before), a mean service of
            about 9 ms, four times its median: a server with a few long requests, whose p99 lies far
            past its median (the guard's histograms reach 72x its base since 2026-12-04, 5.7x before).
            Its draws restart from each `hp` command's seed (unit.reseed), so that every setup of a
            round runs the same kind at the same arrival; it names its two jobs with their shares
            (unit.variants), which the profiler and the calibration weigh (see _mixed)
LP kinds (a unit = one step, queued without a synchronisation: the LP keeps the GPU busy):
  gemm           an eager loop: 4 x (2048^2 fp32 matmul + tanh) a unit
  resnet50train  ResNet-50 SGD training step, batch 64, 224x224
  graph          a torch.cuda.CUDAGraph of 2 x (2048^2 matmul + tanh) replayed (about 0.7 ms a replay)
  frcnn1440      FasterRCNN inference on one 1440x2560 image (the reference LP)
  graphr50       ResNet-50 inference, batch 64, captured once as a torch.cuda.CUDAGraph and replayed
                 (a few hundred kernels, several ms a replay: a served model under CUDA graphs)
  hostonly       no GPU work: one thread copies 64 MB and runs a Python loop a unit (a busy host
                 neighbour on the LP's CPUs; beside the HP under corun it is never stopped, so the HP's
                 time against hp_ctl_alone is what another process's host work alone costs it)
"""
import random

DEFAULT_HP_KINDS = ("gemm", "small", "frcnn720", "bert")
HP_KINDS = DEFAULT_HP_KINDS + ("mixed",)
MIXED_LONG_SHARE = 0.1  # of the mixed HP's jobs, the long ones
LP_KINDS = ("gemm", "resnet50train", "graph", "frcnn1440", "graphr50", "hostonly")


def _gemm_chain(torch, dev, n):
    a = torch.randn(2048, 2048, device=dev)
    b = torch.randn(2048, 2048, device=dev) / 45.0

    def unit():
        x = a
        for _ in range(n):
            x = torch.tanh(x @ b)
        return x
    return unit


def _frcnn(torch, torchvision, dev, h, w):
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None,
                                                                 min_size=h, max_size=w).to(dev).eval()
    img = [torch.rand(3, h, w, device=dev)]

    def unit():
        with torch.inference_mode():
            return model(img)
    return unit


def _bert(torch, dev):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=768, nhead=12, dim_feedforward=3072, dropout=0.0,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False).to(dev).eval()
    x = torch.randn(1, 128, 768, device=dev)

    def unit():
        with torch.inference_mode():
            return model(x)
    return unit


def _small(torch, dev):
    x0 = torch.randn(256, 256, device=dev)
    w = torch.randn(256, 256, device=dev) / 16.0

    def unit():
        x = x0
        for _ in range(100):
            x = torch.tanh(x @ w)
        return x
    return unit


def _mixed(torch, dev, seed=0):
    """The small job, or with probability MIXED_LONG_SHARE the long GEMM chain, drawn per job from
    the unit's own random.Random (seeded with `seed` when built).

    unit.reseed(s): restart the draws from seed `s` (matrix_worker's `hp` command does, with one
    taken from its arrival seed, before its first arrival; `calib` too): the kind of the i-th job of
    an `hp` command is then the same in every process given the same seed, whatever each process
    ran before. A stream drawn over a process's whole life was not: on the H100 on 2026-12-07 the
    plain alone HP ran 18-24 long jobs a round, corun's 11-13 and guarded's 14-18 over the same
    arrivals, so that the setups' ratios were not paired.
    unit.variants: ((share, job), ...), the two kinds of job apart, so that the profiler and the
    calibration can weigh each by its share instead of relying on a few draws (on 2026-12-07 the 10
    profiled jobs drew no long one: 0.7 ms GPU-busy a job, the GPU time left read 0.97-0.98 where
    it is about 0.75)."""
    small, long = _small(torch, dev), _gemm_chain(torch, dev, 200)
    rng = random.Random(seed)

    def unit():
        unit.last = 1 if rng.random() < MIXED_LONG_SHARE else 0  # which of unit.variants ran: the hp reply says
        return long() if unit.last else small()
    unit.reseed = rng.seed
    unit.variants = ((1.0 - MIXED_LONG_SHARE, small), (MIXED_LONG_SHARE, long))
    return unit


def _resnet_train(torch, torchvision, dev):
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).to(dev).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (64,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()

    def unit():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return unit


def _graph(torch, dev):
    a = torch.randn(2048, 2048, device=dev)
    b = torch.randn(2048, 2048, device=dev) / 45.0
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as torch's capture recipe asks
        for _ in range(3):
            torch.tanh(torch.tanh(a @ b) @ b)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = torch.tanh(torch.tanh(a @ b) @ b)

    def unit(_output=out):  # the graph's output buffer lives as long as the unit
        graph.replay()
    return unit


def _graph_resnet(torch, torchvision, dev):
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None).to(dev).eval()
    x = torch.randn(64, 3, 224, 224, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.inference_mode(), torch.cuda.stream(side):  # warm-up off the default stream
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.inference_mode(), torch.cuda.graph(graph):
        out = model(x)

    def unit(_output=out):
        graph.replay()
    return unit


def _host_only():
    src, dst = bytearray(64 << 20), bytearray(64 << 20)

    def unit():
        dst[:] = src  # one thread streams 64 MB: the last-level cache and the memory bandwidth
        s = 0
        for i in range(20000):  # and the core's own work, as an LP's Python is
            s += i * i
        return s
    return unit


class TorchBackend:
    """What matrix_worker needs from torch: build a kind, synchronise, and measure how busy one
    HP job keeps the GPU (CUPTI through torch.profiler: the union of kernel intervals)."""

    def __init__(self):
        import torch
        import torchvision
        self.torch, self.torchvision = torch, torchvision
        self.dev = torch.device("cuda", 0)
        torch.cuda.set_device(self.dev)

    def build(self, kind, role):
        t, tv, dev = self.torch, self.torchvision, self.dev
        if role == "hp":
            table = {"gemm": lambda: _gemm_chain(t, dev, 10), "small": lambda: _small(t, dev),
                     "frcnn720": lambda: _frcnn(t, tv, dev, 720, 1280), "bert": lambda: _bert(t, dev),
                     "mixed": lambda: _mixed(t, dev)}
        else:
            table = {"gemm": lambda: _gemm_chain(t, dev, 4), "resnet50train": lambda: _resnet_train(t, tv, dev),
                     "graph": lambda: _graph(t, dev), "frcnn1440": lambda: _frcnn(t, tv, dev, 1440, 2560),
                     "graphr50": lambda: _graph_resnet(t, tv, dev), "hostonly": _host_only}
        if kind not in table:
            raise ValueError(f"unknown {role} kind '{kind}': use one of {', '.join(table)}")
        return table[kind]()

    def sync(self):
        self.torch.cuda.synchronize()

    def mark(self):
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def elapsed_ms(self, a, b):
        return a.elapsed_time(b)

    def release(self):
        import gc
        gc.collect()
        self.torch.cuda.empty_cache()

    def busy_ms_per_job(self, job, jobs, gap_s=0.005):
        """Mean GPU-busy milliseconds (union of kernel intervals) inside one HP job, and the mean
        job wall time, over `jobs` jobs alone."""
        import json
        import os
        import tempfile
        import time
        from torch.profiler import ProfilerActivity, profile
        marks = []
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(jobs):
                t0 = time.perf_counter_ns()
                job()
                self.sync()
                marks.append((t0, time.perf_counter_ns()))
                time.sleep(gap_s)
        fd, path = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        try:
            prof.export_chrome_trace(path)
            events = json.load(open(path)).get("traceEvents", [])
        finally:
            os.unlink(path)
        kernels = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
                         for e in events if e.get("cat") == "kernel")
        return union_us(kernels) / 1000.0 / jobs, sum(b - a for a, b in marks) / 1e6 / jobs


def union_us(intervals):
    """Total length of the union of sorted (start, end) intervals."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in intervals:
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total
