"""What a Python begin()/end() costs after the process slept (as an HP server between requests), on
the CPU alone: no GPU, no hook, a corun segment of its own, nothing beside it. Per condition the
median and p90 in microseconds over N pairs, each after 10 ms asleep:
  null      os.getppid() (what waking up costs any call: the control)
  default   seg.begin(1) + seg.end(1) (the device: the current CUDA context's, none here)
  all       seg.begin(1, device="all") + seg.end(1) (no device lookup)
  nowait    seg.begin(1, wait=False) + seg.end(1) (no drain wait)
    PYTHONPATH=BUILD/python:. python3 -m bench.begin_idle [N]      (prints one JSON line)
The gpuyield package on PYTHONPATH is the one measured: run it alternately with two builds to
compare them.
"""
import json
import os
import sys
import time


def after_sleep(call, n):
    out = []
    for _ in range(n):
        time.sleep(0.01)
        t0 = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - t0) / 1e3)
    out.sort()
    return {"p50_us": round(out[n // 2], 2), "p90_us": round(out[(9 * n) // 10], 2)}


def main(argv):
    import gpuyield
    n = int(argv[0]) if argv else 300
    tag = f"beginidle{os.getpid()}"
    seg = gpuyield.create(tag)
    try:
        seg.begin(1)
        seg.end(1)  # registered, the segment mapped and warm once
        pair = lambda **kw: (seg.begin(1, **kw), seg.end(1))
        res = {"package": os.path.dirname(gpuyield.__file__), "n": n,
               "null": after_sleep(os.getppid, n),
               "default": after_sleep(pair, n),
               "all": after_sleep(lambda: pair(device="all"), n),
               "nowait": after_sleep(lambda: pair(wait=False), n)}
    finally:
        seg.close()
        gpuyield.remove(tag)
    print(json.dumps(res))


if __name__ == "__main__":
    main(sys.argv[1:])
