"""Nsight evidence for the co-run verdict (issue 11): one pair under run_exp --nsys in each given
setup, then, from the SQLite export, per high-priority job (its NVTX range "hp job N"):
  - the lower process's GPU time inside the job (union of its kernel intervals clipped to the
    job) and how many of its kernels ran there: what co-ran with the job;
  - the job's own GPU busy time (union of its kernels) over the job's length;
and between jobs, the share of the gap the lower process kept the GPU busy (its harvest of the
time the job leaves). Medians over jobs; one JSON line per setup.
  python3 -m bench.gpu.corun_nsight --pair reference --build BUILD --out DIR [--dur 8]
      [--setups drain:event:8,corun:time:500] [--hp-sleep 0.01]
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys

from .contention import PAIRS, control_block, model_entry
from .intervals import covered, merged
from .stats import nearest_rank


def analyse(db_path):
    db = sqlite3.connect(db_path)
    jobs = sorted((s, e) for s, e in db.execute(
        "SELECT start, end FROM NVTX_EVENTS WHERE text LIKE 'hp job %' AND end IS NOT NULL"))
    pid_of = {}
    for (pid,) in db.execute("SELECT DISTINCT (globalTid >> 24) & 0xFFFFFF FROM NVTX_EVENTS WHERE text LIKE 'hp job %'"):
        pid_of["hp"] = pid
    for (pid,) in db.execute("SELECT DISTINCT (globalTid >> 24) & 0xFFFFFF FROM NVTX_EVENTS WHERE text LIKE 'lp job %'"):
        pid_of["lp"] = pid
    kern = {role: sorted(db.execute(
        "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE (globalPid >> 24) & 0xFFFFFF = ?", (pid,)))
        for role, pid in pid_of.items()}
    lp, hp = merged(kern.get("lp", [])), merged(kern.get("hp", []))
    lp_in_job, lp_kernels_in_job, hp_busy, lengths = [], [], [], []
    for s, e in jobs:
        lengths.append((e - s) / 1e6)
        lp_in_job.append(covered(lp, s, e) / 1e6)
        lp_kernels_in_job.append(sum(1 for ks, ke in kern.get("lp", []) if ks < e and ke > s))
        hp_busy.append(covered(hp, s, e) / max(1, e - s))
    gaps = [(a[1], b[0]) for a, b in zip(jobs, jobs[1:]) if b[0] > a[1]]
    gap_busy = [covered(lp, s, e) / (e - s) for s, e in gaps]
    med = lambda xs: round(statistics.median(xs), 4) if xs else None
    return {"hp_jobs": len(jobs), "job_ms_p50": med(lengths), "lp_gpu_ms_in_job_p50": med(lp_in_job),
            "lp_gpu_ms_in_job_p90": round(nearest_rank(lp_in_job, 90), 4) if lp_in_job else None,
            "lp_kernels_in_job_p50": med(lp_kernels_in_job), "hp_gpu_busy_in_job_p50": med(hp_busy),
            "gap_ms_p50": med([(e - s) / 1e6 for s, e in gaps]), "lp_gpu_busy_in_gap_p50": med(gap_busy),
            "lp_gpu_busy_in_gap_mean": round(sum(gap_busy) / len(gap_busy), 4) if gap_busy else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pair", choices=sorted(PAIRS), required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dur", type=float, default=8)
    ap.add_argument("--hp-sleep", type=float, default=0.01)
    ap.add_argument("--setups", default="drain:event:8,corun:time:500",
                    help="POLICY:MODE,... (the LP's bound; corun runs under MPS); 'lpalone' runs the LP alone")
    ap.add_argument("--nsys", default=os.environ.get("NSYS", ""))
    args = ap.parse_args()
    pair = PAIRS[args.pair]
    lp, hp = pair["lp"], dict(pair["hp"], sleep_time=args.hp_sleep)
    os.makedirs(args.out, exist_ok=True)
    results = {}
    for setup in args.setups.split(","):
        policy, _, mode = setup.partition(":")
        label = setup.replace(":", "_")
        run_dir = os.path.join(args.out, label)
        if policy == "lpalone":
            models = [model_entry(lp, "lp", 0, control_block(False))]
        else:
            models = [model_entry(lp, "lp", 0, control_block(True, mode)), model_entry(hp, "hp", 1, control_block(True))]
        cfg_path = os.path.join(args.out, label + ".json")
        with open(cfg_path, "w") as f:
            json.dump({"models": models, "exp_dur": args.dur, "device_id": 0}, f, indent=1)
        cmd = [os.path.join(args.build, "bin", "run_exp"), "-f", cfg_path, "--out", run_dir, "--nsys", "--min-jobs", "1"]
        if args.nsys:
            cmd += ["--nsys-path", args.nsys]
        if policy == "corun":
            cmd += ["--mps", "--policy", "corun"]
        elif policy == "drain":
            cmd += ["--policy", "drain"]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with open(os.path.join(args.out, label + ".run_exp.txt"), "w") as f:
            f.write(" ".join(cmd) + "\n" + proc.stdout)
        db = os.path.join(run_dir, "nsight_report.sqlite")
        if not os.path.exists(db):
            print(f"{label}: run_exp exit {proc.returncode}, no report; {proc.stdout[-1500:]}", flush=True)
            continue
        if proc.returncode != 0:  # e.g. an MPS daemon that nsys held past run_exp's quit timeout
            print(f"{label}: run_exp exit {proc.returncode} (report made; analysed anyway): "
                  f"{[l for l in proc.stdout.splitlines() if 'error' in l][-3:]}", flush=True)
        if policy == "lpalone":
            c = sqlite3.connect(db)
            ks = merged(c.execute("SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL"))
            lo, hi = c.execute("SELECT min(start), max(end) FROM NVTX_EVENTS WHERE text LIKE 'lp job %'").fetchone()
            results[label] = {"lp_gpu_busy_alone": round(covered(ks, lo, hi) / (hi - lo), 4) if lo and hi else None}
        else:
            results[label] = analyse(db)
        print(label, json.dumps(results[label]), flush=True)
    with open(os.path.join(args.out, "corun_nsight.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
