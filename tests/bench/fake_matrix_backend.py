"""A stand-in for bench.gpu.matrix_kinds.TorchBackend in the matrix benchmark's dry run: units
sleep instead of running kernels (HP jobs 2 ms, LP units 3 ms, no torch, no GPU); "GPU" events are
host times, so the LP's completion timing runs the same code. Each build logs the process's
GPUYIELD_* environment on stderr (the worker's log, GROUP_ROLE.log): what the harness gave it.
FAKE_BUSY_MS: the GPU-busy milliseconds the profiler reports of one HP job (default 1)."""
import json
import os
import sys
import time


class FakeBackend:
    def build(self, kind, role):
        env = {k: v for k, v in os.environ.items() if k.startswith("GPUYIELD_")}
        print(f"fake backend env {json.dumps(env, sort_keys=True)}", file=sys.stderr, flush=True)
        seconds = 0.002 if role == "hp" else 0.003
        return lambda: time.sleep(seconds)

    def sync(self):
        pass

    def release(self):
        pass

    def mark(self):
        return time.monotonic()

    def elapsed_ms(self, a, b):
        return (b - a) * 1000.0

    def busy_ms_per_job(self, job, jobs):
        return float(os.environ.get("FAKE_BUSY_MS", "1.0")), 2.0
