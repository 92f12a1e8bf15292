"""The two sides of the green-context probe (bench/gpu/green_probe.sh): what a lower process's work
gets from a K-SM partition while a higher job is open, against the whole GPU, with the higher
process idle in its job or launching small kernels through it (issue 26: beside the launch-bound HP
the LP ran at about half its rate during the HP's jobs at 64, 96 and 120 SMs alike,
bench/results/2026-12-01-h200-trial-ends/).

  python3 bench/gpu/green_probe.py lp OUT.json SECONDS   a lower process's units, back to back
  python3 bench/gpu/green_probe.py hp SEGMENT ARM idle|busy|plain READY STOP

lp: for each work kind, units back to back for SECONDS, then one synchronize ("nomarks"), and
the matrix LP's loop, an event recorded after every unit ("marks": under the hook each record is a
use of the stream, so every unit joins the partition stream and the next one forks again). Kinds:
gemm2048 (the matrix's gemm LP unit: 4 x (2048^2 matmul + tanh), a grid that fits the whole
GPU in one or two waves), gemm4096 (one 4096^2 matmul + tanh: four times the tiles), and
axpy (an elementwise 64 Mi-float kernel, hundreds of thousands of blocks: no wave to lose).
Writes {kind: {mode: {"units", "secs", "units_per_s"}}}.

hp: joins SEGMENT at priority 1 (the gpuyield module; plain: no segment, an MPS client only),
opens one job until its arm is ARM (a pinned arm still gives stop to a share of jobs; ARM "any": the
first job, as on a partition segment, which has no arms), writes READY,
then holds the job until STOP exists: idle does nothing in it, busy launches the matrix's small HP
unit (100 x (256^2 matmul + tanh), a synchronize after each) back to back through it.
"""
import json
import os
import sys
import time

import torch


def kinds(dev):
    a = torch.randn(2048, 2048, device=dev)
    b = torch.randn(2048, 2048, device=dev) / 45.0
    c = torch.randn(4096, 4096, device=dev)
    d = torch.randn(4096, 4096, device=dev) / 64.0
    x = torch.randn(64 << 20, device=dev)
    y = torch.randn(64 << 20, device=dev)

    def gemm2048():
        z = a
        for _ in range(4):
            z = torch.tanh(z @ b)
        return z

    def gemm4096():
        return torch.tanh(c @ d)

    def axpy():
        return y.add_(x, alpha=1e-6)
    return {"gemm2048": gemm2048, "gemm4096": gemm4096, "axpy": axpy}


def run_lp(out, seconds):
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    table = kinds(dev)
    for unit in table.values():  # warm up: cuBLAS handles, the queue bound's timings
        for _ in range(20):
            unit()
    torch.cuda.synchronize()
    result = {}
    for name, unit in table.items():
        rows = {}
        for mode in ("nomarks", "marks"):
            torch.cuda.synchronize()
            start, units, marks = time.monotonic(), 0, []
            while time.monotonic() - start < seconds:
                unit()
                units += 1
                if mode == "marks":
                    event = torch.cuda.Event(enable_timing=True)  # as the matrix LP's marks
                    event.record()
                    marks.append(event)
            torch.cuda.synchronize()
            secs = time.monotonic() - start
            rows[mode] = {"units": units, "secs": round(secs, 4), "units_per_s": round(units / secs, 2)}
        result[name] = rows
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


def run_hp(segment, arm, how, ready, stop):
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    x0 = torch.randn(256, 256, device=dev)
    w = torch.randn(256, 256, device=dev) / 16.0
    seg = job = None
    if how != "plain":
        import gpuyield
        seg = gpuyield.connect(segment)
        seg.register(priority=1)
        for _ in range(200):
            job = seg.begin(priority=1)
            if arm == "any" or job.guarded_arm == arm:
                break
            seg.end(1)
        if arm != "any" and job.guarded_arm != arm:
            print(f"green_probe hp: no job of arm {arm} in 200 begins (last {job.guarded_arm})", flush=True)
            seg.end(1)
            sys.exit(1)
    print(f"green_probe hp: job open, arm {job.guarded_arm if job else 'none (plain)'}, {how}", flush=True)
    open(ready, "w").close()
    units = 0
    while not os.path.exists(stop):
        if how == "idle":
            time.sleep(0.01)
            continue
        z = x0
        for _ in range(100):
            z = torch.tanh(z @ w)
        torch.cuda.synchronize()
        units += 1
    if seg:
        seg.end(1)
    print(f"green_probe hp: job closed after {units} units", flush=True)


def main(argv):
    if len(argv) == 4 and argv[1] == "lp":
        run_lp(argv[2], float(argv[3]))
    elif len(argv) == 7 and argv[1] == "hp" and argv[4] in ("idle", "busy", "plain"):
        run_hp(*argv[2:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
