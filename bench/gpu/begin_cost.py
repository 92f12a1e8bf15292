"""Where the cost of being controlled goes (issue 25 item 0): seg.begin(1) / seg.end(1) timed in
one hooked, marking HP process (as the matrix's hp_ctl_alone: preloaded, priority 1, a corun
segment under MPS), nothing beside it, in four conditions:
  hot      begin/end back to back (no GPU work, no idle time)
  sleep    after 10 ms asleep (the HP idles to its next arrival)
  spin     after 10 ms of busy-waiting (the core stays awake; tells idle state from cold caches)
  sleep_null  os.getppid() after 10 ms asleep (what waking up costs any call: the null control)
  sleep_split, sleep_split_all  after 10 ms asleep, begin(wait=False) and job.wait() timed apart,
           with the default device (the driver asked for the current GPU) and with device="all"
  job      after 10 ms asleep, around a GEMM job (10 x 2048^2 matmul + tanh), as in the matrix
and the job's own time with and without the marking (alternated, same process).
  python3 -m bench.gpu.begin_cost child OUT.json      (run by begin_cost.sh with the hook preloaded)
"""
import json
import os
import statistics
import sys
import time


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, max(0, int(round(q / 100 * len(v) + 0.5)) - 1))]


def summary(us):
    return {"n": len(us), "p50_us": round(statistics.median(us), 2), "p90_us": round(pct(us, 90), 2),
            "p99_us": round(pct(us, 99), 2)}


def child(out):
    import torch
    import gpuyield
    seg = gpuyield.connect()
    a = torch.randn(2048, 2048, device="cuda")

    def job():
        x = a
        for _ in range(10):
            x = torch.tanh(x @ a)
        torch.cuda.synchronize()

    for _ in range(20):
        job()
        with seg.job(1):
            job()
    res = {}

    def timed(n, before):
        b, e = [], []
        for _ in range(n):
            before()
            t0 = time.perf_counter_ns()
            seg.begin(1)
            t1 = time.perf_counter_ns()
            seg.end(1)
            t2 = time.perf_counter_ns()
            b.append((t1 - t0) / 1e3)
            e.append((t2 - t1) / 1e3)
        return {"begin": summary(b), "end": summary(e)}

    def spin():
        t = time.perf_counter() + 0.01
        while time.perf_counter() < t:
            pass

    def null_after_sleep(n):
        # the same timing around a syscall that does no work: what waking up costs any call
        v = []
        for _ in range(n):
            time.sleep(0.01)
            t0 = time.perf_counter_ns()
            os.getppid()
            v.append((time.perf_counter_ns() - t0) / 1e3)
        return {"begin": summary(v), "end": summary(v)}

    def split_after_sleep(n, device):
        # begin() in its parts, after 10 ms asleep: the enter (registration check, device, the
        # segment's lock and gate) with wait=False, then the drain wait; device="all" skips asking
        # the driver for the current context's GPU (the default, device=None, asks it each begin)
        enter, wait, end = [], [], []
        for _ in range(n):
            time.sleep(0.01)
            t0 = time.perf_counter_ns()
            job = seg.begin(1, wait=False, device=device)
            t1 = time.perf_counter_ns()
            job.wait()
            t2 = time.perf_counter_ns()
            seg.end(1)
            t3 = time.perf_counter_ns()
            enter.append((t1 - t0) / 1e3)
            wait.append((t2 - t1) / 1e3)
            end.append((t3 - t2) / 1e3)
        return {"enter": summary(enter), "wait": summary(wait), "end": summary(end)}

    res["hot"] = timed(2000, lambda: None)
    res["sleep_split"] = split_after_sleep(200, None)
    res["sleep_split_all"] = split_after_sleep(200, "all")
    res["sleep_null"] = null_after_sleep(200)
    res["sleep"] = timed(200, lambda: time.sleep(0.01))
    res["spin"] = timed(200, spin)
    b, e, marked, plain = [], [], [], []
    for i in range(400):
        time.sleep(0.01)
        if i % 2:
            t0 = time.perf_counter_ns()
            job()
            plain.append((time.perf_counter_ns() - t0) / 1e6)
            continue
        t0 = time.perf_counter_ns()
        seg.begin(1)
        t1 = time.perf_counter_ns()
        job()
        t2 = time.perf_counter_ns()
        seg.end(1)
        t3 = time.perf_counter_ns()
        b.append((t1 - t0) / 1e3)
        e.append((t3 - t2) / 1e3)
        marked.append((t3 - t0) / 1e6)
    res["job"] = {"begin": summary(b), "end": summary(e),
                  "job_marked_p50_ms": round(statistics.median(marked), 4),
                  "job_unmarked_p50_ms": round(statistics.median(plain), 4),
                  "marked_over_unmarked": round(statistics.median(marked) / statistics.median(plain), 4)}
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "child":
        sys.exit("usage: python3 -m bench.gpu.begin_cost child OUT.json (see bench/gpu/begin_cost.sh)")
    child(sys.argv[2])
