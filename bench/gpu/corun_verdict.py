"""Co-run verdict benchmark (issue 11): for one pair of models, standalone high-priority rounds
interleaved with the contention setups (A B A B ...), each setup run by run_exp side by side in one
invocation, >= 1000 high-priority jobs per setup, nearest-rank percentiles with bootstrap 95%
intervals.

  python3 -m bench.gpu.corun_verdict --pair resnet --build BUILD --out DIR \
      --drain-mode time:1000 --corun-mode time:500 [--setups LIST] [--dur 60] [--alone-dur 15] \
      [--hp-sleep 0.035]

Setups: nocontrol (time-slicing), mps (MPS alone, no gating), gy_drain_<mode> (gpuyield, policy
drain, no MPS), gy_corun_<mode> (gpuyield, policy corun under an MPS daemon run_exp starts; the
low-priority worker at MPS client priority below normal), mps_lp25/50/75 (MPS alone with the LP
limited to that share of the SMs, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: a partition, no gating). Standalone rounds: alone_hp@1..N between
them, alone_lp once. Ratios use the pooled standalone rounds; the per-round p50s are recorded so
drift between rounds shows.

  hp_p50_ratio / hp_p99_ratio  HP JCT percentile under contention / pooled standalone percentile
  lp_harvest                   LP throughput under contention / (LP standalone throughput x the
                               fraction of time outside HP jobs at standalone speed)
Each with a block-bootstrap 95% interval (bench.gpu.stats: runs of 50 consecutive jobs on each
side resampled whole, each standalone round a block, 2000 resamples, fixed seed). For the verdict
a skeptic accepts (plain standalone processes, whole rounds resampled) see partition_verdict.py.

--phased ON,OFF: the baseline is taken inside each setup's own run instead of from separate
processes. The low-priority worker runs jobs for ON seconds, idles OFF seconds, and again
(worker --duty), while the high-priority worker runs throughout: its jobs that overlap a
low-priority burst are the contended ones, those at least GUARD seconds away from every burst
are its standalone ones (same process, same setup, same minute), the rest are dropped. Separate
standalone HP processes moved by up to 30% between rounds of one invocation; this removes that
process-to-process and minute-to-minute drift from the ratio. One standalone HP round before
and after still shows what a setup (MPS, the hook) costs the HP with nothing beside it.
  lp_harvest (phased)  LP jobs per second of burst / (standalone LP throughput x the fraction of
                       burst time outside contended HP jobs at their in-run standalone p50)
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

from .contention import PAIRS, control_block, model_entry, read_jobs
from .stats import block_bootstrap, consecutive_blocks, nearest_rank

BLOCK_JOBS = 50  # jobs per bootstrap block: consecutive jobs correlate, so they are resampled together


def run_setup(label, models, extra_args, args, env=None):
    out_dir = os.path.join(args.out, label)
    os.makedirs(out_dir, exist_ok=True)
    cfg = {"models": models, "exp_dur": args.alone_dur if label.startswith("alone") else args.dur, "device_id": 0}
    cfg_path = os.path.join(out_dir, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1)
    cmd = [os.path.join(args.build, "bin", "run_exp"), "-f", cfg_path, "--out", out_dir, "--min-jobs", "1"] + extra_args
    t0 = time.time()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, **env) if env else None)
    with open(os.path.join(out_dir, "run_exp.out"), "w") as f:
        f.write(" ".join(cmd) + "\n" + proc.stdout)
    print(f"[{args.pair}] {label}: exit {proc.returncode} in {time.time() - t0:.0f} s", flush=True)
    if proc.returncode != 0:
        print(proc.stdout[-2000:], flush=True)
        return None
    jobs = {}
    for role in ("lp", "hp"):
        path = os.path.join(out_dir, role + ".csv")
        if os.path.exists(path):
            rows = read_jobs(path)
            jobs[role] = {"jct": [float(r["jct_ms"]) for r in rows],
                          "span_s": (max(int(r["end_ns"]) for r in rows) - min(int(r["start_ns"]) for r in rows)) / 1e9
                          if rows else 0.0,
                          "drained": [int(r["drained"]) for r in rows],
                          "start_ns": [int(r["start_ns"]) for r in rows], "end_ns": [int(r["end_ns"]) for r in rows]}
    return jobs


def bursts(starts, ends, split_s):
    """The low-priority worker's bursts: [start, end] ns of runs of jobs less than split_s apart."""
    spans = []
    for s, e in sorted(zip(starts, ends)):
        if spans and s - spans[-1][1] < split_s * 1e9:
            spans[-1][1] = max(spans[-1][1], e)
        else:
            spans.append([s, e])
    return spans


def split_phased(hp, lp, split_s, guard_s):
    """HP JCTs of a phased run split into (contended, alone), LP JCTs inside bursts, burst seconds.
    Contended: the job overlaps a burst. Alone: no burst within guard_s of it. Others dropped."""
    spans = bursts(lp["start_ns"], lp["end_ns"], split_s)
    guard = guard_s * 1e9
    contended, alone = [], []
    for s, e, jct in zip(hp["start_ns"], hp["end_ns"], hp["jct"]):
        if any(s < be and e > bs for bs, be in spans):
            contended.append(jct)
        elif all(e <= bs - guard or s >= be + guard for bs, be in spans):
            alone.append(jct)
    return contended, alone, lp["jct"], sum(be - bs for bs, be in spans) / 1e9


def harvest(lp_jct, lp_span, hp_jobs, alone_lp_jct, alone_hp_p50):
    """LP throughput under contention over what the time outside HP jobs would allow."""
    if not lp_jct or not alone_lp_jct or not lp_span:
        return None
    # LP runs back to back: its throughput is 1 / mean JCT (robust to resampling, unlike a span).
    thr = 1e3 / (sum(lp_jct) / len(lp_jct))
    alone_thr = 1e3 / (sum(alone_lp_jct) / len(alone_lp_jct))
    idle = max(1e-9, 1 - hp_jobs * alone_hp_p50 / 1e3 / lp_span)
    return thr / (alone_thr * idle)


def blocks_of(jobs):
    return consecutive_blocks(jobs, BLOCK_JOBS)


def interval(strata, stat, rng):
    """Block bootstrap over strata (lists of blocks of JCTs); stat gets the pooled JCTs per stratum."""
    ci = block_bootstrap(strata, lambda s: stat(*[[x for b in blocks for x in b] for blocks in s]),
                         seed=rng.randrange(2 ** 31))
    return [round(ci[0], 4), round(ci[1], 4)] if ci else None


def verdict_for(setup_jobs, alone_hp, alone_lp, rng, phased=None):
    """phased: (split_s, guard_s) to take the HP baseline from the run itself (--phased)."""
    hp, lp = setup_jobs["hp"]["jct"], setup_jobs["lp"]["jct"]
    span = setup_jobs["lp"]["span_s"]
    if phased:
        hp, alone_hp, lp, span = split_phased(setup_jobs["hp"], setup_jobs["lp"], *phased)
        if not hp or not alone_hp:
            return {"error": f"phased split left {len(hp)} contended and {len(alone_hp)} alone HP jobs"}
    p50_alone, p99_alone = nearest_rank(alone_hp, 50), nearest_rank(alone_hp, 99)
    out = {"hp_jobs": len(hp), "lp_jobs": len(lp),
           "hp_p50_ms": nearest_rank(hp, 50), "hp_p99_ms": nearest_rank(hp, 99),
           "hp_p50_ratio": {"value": round(nearest_rank(hp, 50) / p50_alone, 4)},
           "hp_p99_ratio": {"value": round(nearest_rank(hp, 99) / p99_alone, 4)},
           "lp_harvest": {"value": round(harvest(lp, span, len(hp), alone_lp, p50_alone), 4)}}
    if phased:
        out.update(hp_alone_jobs=len(alone_hp), hp_alone_p50_ms=p50_alone, hp_alone_p99_ms=p99_alone,
                   lp_burst_s=round(span, 3))
    # Blocks: each side's jobs in runs of consecutive jobs.
    alone_blocks = blocks_of(alone_hp)
    hp_blocks, lp_blocks, alone_lp_blocks = blocks_of(hp), blocks_of(lp), blocks_of(alone_lp)
    out["hp_p50_ratio"]["ci95"] = interval(
        [hp_blocks, alone_blocks], lambda h, a: nearest_rank(h, 50) / nearest_rank(a, 50), rng)
    out["hp_p99_ratio"]["ci95"] = interval(
        [hp_blocks, alone_blocks], lambda h, a: nearest_rank(h, 99) / nearest_rank(a, 99), rng)
    out["lp_harvest"]["ci95"] = interval(
        [lp_blocks, alone_lp_blocks, alone_blocks],
        lambda l, al, a: harvest(l, span, len(hp), al, nearest_rank(a, 50)), rng)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pair", choices=sorted(PAIRS), required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--drain-mode", default="time:1000")
    ap.add_argument("--corun-mode", default="time:500")
    ap.add_argument("--setups", default="nocontrol,mps,drain,corun",
                    help="which contention setups to run, comma-separated (each beside standalone HP rounds)")
    ap.add_argument("--dur", type=float, default=60)
    ap.add_argument("--alone-dur", type=float, default=15)
    ap.add_argument("--hp-sleep", type=float, default=0.035)
    ap.add_argument("--device", default="")
    ap.add_argument("--phased", metavar="ON,OFF",
                    help="LP runs ON s, idles OFF s; the HP baseline comes from each run itself (see above)")
    ap.add_argument("--guard", type=float, default=0.25,
                    help="phased: seconds between an HP job and any LP burst for the job to count as alone")
    ap.add_argument("--from-raw", help="recompute the verdict from a raw.json an earlier (cut-off) run wrote")
    args = ap.parse_args()
    pair = PAIRS[args.pair]
    lp, hp = pair["lp"], dict(pair["hp"], sleep_time=args.hp_sleep)
    off = control_block(False)
    both = lambda lp_ctl, hp_ctl: [model_entry(lp, "lp", 0, lp_ctl), model_entry(hp, "hp", 1, hp_ctl)]
    dm, cm = args.drain_mode, args.corun_mode
    lp_python = ["--python", os.path.join(os.path.dirname(os.path.abspath(__file__)), "lp_python.sh")]
    lp_env = {"REAL_PYTHON": os.environ.get("GPUYIELD_PYTHON") or sys.executable}
    if args.phased:
        try:
            on_s, off_s = (float(v) for v in args.phased.split(","))
        except ValueError:
            on_s = off_s = 0.0
        if not (on_s > 0 and off_s > 2 * args.guard):
            ap.error(f"--phased '{args.phased}': give ON,OFF seconds with OFF > 2 x --guard ({args.guard})")
        lp_env["LP_DUTY"] = args.phased
    setups = {  # key: (label, models, run_exp options, LP worker environment)
        "nocontrol": ("nocontrol", both(off, off), [], {}),
        "mps": ("mps", both(off, off), ["--mps"], {}),
        "drain": ("gy_drain_" + dm.replace(":", ""), both(control_block(True, dm), control_block(True)),
                  ["--policy", "drain"], {}),
        "corun": ("gy_corun_" + cm.replace(":", ""), both(control_block(True, cm), control_block(True)),
                  ["--mps", "--policy", "corun"], {}),
    }
    for pct in (25, 50, 75):  # MPS alone, the LP limited to pct % of the SMs: a partition, no gating
        setups[f"mps_lp{pct}"] = (f"mps_lp{pct}", both(off, off), ["--mps"], {"LP_SM_PERCENT": str(pct)})
    wanted = args.setups.split(",")
    unknown = [w for w in wanted if w not in setups]
    if unknown:
        ap.error(f"unknown setups {unknown}: use {', '.join(setups)}")
    setups = [setups[w] for w in wanted]
    os.makedirs(args.out, exist_ok=True)
    if args.from_raw:
        with open(args.from_raw) as f:
            raw = json.load(f)
        return summarize(raw, args, lp, hp)
    raw = {"alone_hp_rounds": [], "setups": {}, "phased": args.phased, "guard_s": args.guard}
    lp_alone = run_setup("alone_lp", [model_entry(lp, "lp", 0, off)], [], args)
    raw["alone_lp"] = lp_alone["lp"]["jct"] if lp_alone else []
    for i, (label, models, extra, env) in enumerate(setups):
        if i == 0 or not args.phased:  # phased runs carry their own baseline: one round before, one after
            a = run_setup(f"alone_hp_r{i + 1}", [model_entry(hp, "hp", 1, off)], [], args)
            if a:
                raw["alone_hp_rounds"].append(a["hp"]["jct"])
        if env or args.phased:
            extra, env = extra + lp_python, dict(lp_env, **env)
        jobs = run_setup(label, models, extra, args, env or None)
        if jobs and "hp" in jobs and "lp" in jobs:
            raw["setups"][label] = jobs
        with open(os.path.join(args.out, "raw.json"), "w") as f:  # a cut-off run keeps what it measured
            json.dump(raw, f)
    a = run_setup(f"alone_hp_r{len(setups) + 1}", [model_entry(hp, "hp", 1, off)], [], args)
    if a:
        raw["alone_hp_rounds"].append(a["hp"]["jct"])
    with open(os.path.join(args.out, "raw.json"), "w") as f:
        json.dump(raw, f)
    summarize(raw, args, lp, hp)


def summarize(raw, args, lp, hp):
    alone_hp = [x for r in raw["alone_hp_rounds"] for x in r]
    rng = random.Random(1)
    result = {"device": args.device, "pair": args.pair, "spec": {"lp": lp, "hp": hp}, "dur_s": args.dur,
              "alone_hp_jobs": len(alone_hp), "alone_lp_jobs": len(raw["alone_lp"]),
              "alone_hp_round_p50_ms": [nearest_rank(r, 50) for r in raw["alone_hp_rounds"]],
              "alone_hp_p50_ms": nearest_rank(alone_hp, 50), "alone_hp_p99_ms": nearest_rank(alone_hp, 99),
              "setups": {}}
    phased = raw.get("phased")
    if phased:
        result.update(phased=phased, guard_s=raw["guard_s"])
    for label, jobs in raw["setups"].items():
        split = (float(phased.split(",")[1]) / 2, raw["guard_s"]) if phased else None
        result["setups"][label] = verdict_for(jobs, alone_hp, raw["alone_lp"], rng, split)
        v = result["setups"][label]
        if "error" in v:
            print(f"{label:<18} {v['error']}", flush=True)
            continue
        print(f"{label:<18} hp_jobs {v['hp_jobs']:>5}  p50 x{v['hp_p50_ratio']['value']:.3f} {v['hp_p50_ratio']['ci95']}"
              f"  p99 x{v['hp_p99_ratio']['value']:.3f} {v['hp_p99_ratio']['ci95']}"
              f"  harvest {v['lp_harvest']['value']:.3f} {v['lp_harvest']['ci95']}"
              + (f"  (in-run alone: {v['hp_alone_jobs']} jobs, p50 {v['hp_alone_p50_ms']:.2f} ms)" if phased else ""),
              flush=True)
    with open(os.path.join(args.out, f"verdict_{args.pair}.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
