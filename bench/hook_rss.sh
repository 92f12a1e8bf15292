#!/usr/bin/env bash
# Resident memory the hook adds to a process: peak RSS (getrusage of the child) of a program
# launching 5 x 2 000 000 kernels on one stream against the fake driver, without the hook and with it
# gated in each mode (the hook's own memory does not depend on the GPU). Three rounds, interleaved.
# usage: bench/hook_rss.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
TAG=bench-rss-$$
"$B/bin/expcontroller" serve --name "$TAG" > /dev/null 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2> /dev/null; wait $SERVER 2> /dev/null || true' EXIT
for _ in $(seq 100); do [ -e "/dev/shm/gpuyield-$(id -u)-$TAG" ] && break; sleep 0.05; done
python3 - "$B" "$TAG" <<'PY'
# VmHWM of the worker's own address space, sampled until it exits (ru_maxrss would carry the
# forking Python's RSS across the exec).
import os, subprocess, sys, statistics, time
b, tag = sys.argv[1], sys.argv[2]
env0 = dict(os.environ, LD_LIBRARY_PATH=f"{b}/fakecuda")
variants = {"nohook": {}, "none": {"GPUYIELD_MODE": "none"}, "event:8": {"GPUYIELD_MODE": "event:8"},
            "time:1000": {"GPUYIELD_MODE": "time:1000"}}
def hwm_kib(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
peaks = {v: [] for v in variants}
for _ in range(3):
    for v, extra in variants.items():
        env = dict(env0, **extra)
        if v != "nohook":
            env.update(LD_PRELOAD=f"{b}/lib/libgpuyield.so", GPUYIELD_SHM=tag)
        proc = subprocess.Popen([f"{b}/tests/hooks/cuda_worker", "rate", "2000000"], env=env,
                                stdout=subprocess.DEVNULL)
        peak = 0
        time.sleep(0.05)  # past the exec
        while proc.poll() is None:
            peak = max(peak, hwm_kib(proc.pid) or 0)
            time.sleep(0.01)
        assert proc.returncode == 0, (v, proc.returncode)
        peaks[v].append(peak)
base = statistics.median(peaks["nohook"])
print(f"{'variant':<10}{'peak RSS KiB (median of 3)':>28}{'added KiB':>11}")
for v, xs in peaks.items():
    print(f"{v:<10}{statistics.median(xs):>28.0f}{statistics.median(xs) - base:>11.0f}")
PY
