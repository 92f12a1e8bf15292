"""A high-priority inference loop: each request is one gpuyield job.

Inside `with seg.job(1)`, lower-priority processes on the GPU stop launching and (policy drain)
their queued work drains first; they resume when the job ends. Run it with the environment of
run.sh: GPUYIELD_SHM names the segment, GPUYIELD_PRIORITY=1 the process's own level.
"""
import argparse
import time

import gpuyield
import workload

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--requests", type=int, default=50)
parser.add_argument("--interval", type=float, default=0.05, help="seconds between requests")
args = parser.parse_args()

seg = gpuyield.connect()  # the segment named by $GPUYIELD_SHM
request = workload.inference()
jct_ms, drained = [], 0
for _ in range(args.requests):
    time.sleep(args.interval)
    start = time.monotonic()
    with seg.job(1) as job:  # the one line: this request is a priority-1 job
        request()
    jct_ms.append((time.monotonic() - start) * 1e3)
    drained += job.drained
jct_ms.sort()
print(f"infer: {len(jct_ms)} requests, JCT p50 {jct_ms[len(jct_ms) // 2]:.2f} ms, "
      f"max {jct_ms[-1]:.2f} ms, {drained} found lower-priority work to drain")
seg.close()
