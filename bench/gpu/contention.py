"""Contention benchmark on the GPU machine: one high-priority and one low-priority model, run by
run_exp under each setup (each model alone, no control, MPS, the reference's sync-every-kernel,
gpuyield's modes), side by side in one invocation. Writes raw per-setup figures and the derived
ratios as JSON, and prints a table.

  python3 -m bench.gpu.contention --pair reference --setups alone,nocontrol,sync:1,event:2 \
      --dur 20 --out results.json --logs DIR

Metrics (see issue 6):
  hp_p50_ratio, hp_p99_ratio  high-priority JCT under contention / its standalone JCT
  lp_harvest                  low-priority throughput under contention / (standalone throughput
                              x the fraction of time the high-priority job leaves the GPU idle)
  drain wait p50/p99          from the high-priority worker's CSV (begin -> drained)
Percentiles are nearest rank everywhere (p50 included), as in run_exp's summary and the plots.
With fewer than 100 jobs a p99 is the maximum: one job's JCT. hp_p90_ratio is given beside it.
"The fraction of time the high-priority job leaves the GPU idle" is taken as the time outside
its jobs (jobs under contention x its standalone median JCT, over the low-priority span): the
ceiling for a low-priority process that is blocked for whole high-priority jobs (the gated
setups). Its jobs are partly launch-bound, so setups that let both run at once (no control,
MPS) can exceed 1.
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time

from .stats import nearest_rank

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMAGE = os.path.join(ROOT, "exp_configs", "images", "street.png")

PAIRS = {
    # The reference pair: FasterRCNN 1440x2560 low priority back to back, FasterRCNN 720x1280 high.
    "reference": {
        "lp": {"model_name": "fasterrcnn_resnet50_fpn", "resize": True, "resize_size": [1440, 2560],
               "sleep_time": 0},
        "hp": {"model_name": "fasterrcnn_resnet50_fpn", "resize": False, "resize_size": [720, 1280],
               "sleep_time": 0.2},
    },
    # A deterministic high-priority model beside a heavy batch job.
    "resnet": {
        "lp": {"model_name": "resnet152", "resize": True, "resize_size": [224, 224], "sleep_time": 0,
               "batch_size": 64},
        "hp": {"model_name": "resnet50", "resize": True, "resize_size": [224, 224], "sleep_time": 0.05,
               "batch_size": 1},
    },
}


def model_entry(spec, name, priority, control):
    entry = {
        "model_name": spec["model_name"], "model_weight": "", "sleep_time": spec["sleep_time"],
        "input_file_path": IMAGE, "output_file_path": "./logs", "output_file_name": name,
        "priority": priority, "resize": spec["resize"], "resize_size": spec["resize_size"],
        "control": control,
    }
    if "batch_size" in spec:
        entry["batch_size"] = spec["batch_size"]
    return entry


def control_block(enabled, mode="none"):
    kind, _, n = mode.partition(":")
    n = int(n) if n else 1
    return {"control": enabled, "controlsync": kind == "sync", "controlEvent": kind == "event",
            "controlTime": kind == "time",
            "queue_limit": {"sync": n if kind == "sync" else 1, "event_group": n if kind == "event" else 2,
                            "time_us": n if kind == "time" else 1000}}


def configs_for(setup, pair):
    """Yield (label, config) for one setup name."""
    lp, hp = pair["lp"], pair["hp"]
    off = control_block(False)
    if setup == "alone":
        yield "alone_lp", [model_entry(lp, "lp", 0, off)]
        yield "alone_hp", [model_entry(hp, "hp", 1, off)]
    elif setup == "alone_hooked":  # hook cost, standalone, mode none
        yield "alone_hp_hooked", [model_entry(hp, "hp", 1, control_block(True))]
    elif setup.startswith(("lp_alone_", "hp_alone_")):
        # The hook's and the queue bound's cost to one model alone, back to back (the GPU never
        # idles, so its clocks stay up and runs compare). "@2" repeats a setup (a second round).
        role, mode = setup[:2], setup[len("lp_alone_"):]
        mode, _, rnd = mode.partition("@")
        label = f"{role}_alone_" + mode.replace(":", "") + (f"_r{rnd}" if rnd else "")
        spec = dict(pair[role], sleep_time=0)
        yield label, [model_entry(spec, role, 0, control_block(mode != "off", "none" if mode == "off" else mode))]
    elif setup in ("nocontrol", "mps"):
        yield setup, [model_entry(lp, "lp", 0, off), model_entry(hp, "hp", 1, off)]
    elif setup.startswith(("sync:", "event:", "time:", "none")):
        label = "gy_" + setup.replace(":", "")
        yield label, [model_entry(lp, "lp", 0, control_block(True, setup)),
                      model_entry(hp, "hp", 1, control_block(True))]
    else:
        raise SystemExit(f"contention.py: unknown setup '{setup}'")


def read_jobs(path):
    with open(path, newline="") as f:
        return [row for row in csv.DictReader(f)]


def start_mps():
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY="/tmp/gy-mps-pipe", CUDA_MPS_LOG_DIRECTORY="/tmp/gy-mps-log")
    for d in ("/tmp/gy-mps-pipe", "/tmp/gy-mps-log"):
        os.makedirs(d, exist_ok=True)
    subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True)
    time.sleep(1)
    return env


def stop_mps(env):
    subprocess.run(["nvidia-cuda-mps-control"], input=b"quit\n", env=env)
    time.sleep(1)


def run_one(label, models, args):
    out_dir = os.path.join(args.logs, label)
    os.makedirs(out_dir, exist_ok=True)
    cfg = {"models": models, "exp_dur": args.dur, "device_id": 0}
    cfg_path = os.path.join(out_dir, "config.json")
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=1)
    env = dict(os.environ)
    mps_env = start_mps() if label == "mps" else None
    if mps_env:
        env.update(mps_env)
    cmd = [os.path.join(args.build, "bin", "run_exp"), "-f", cfg_path, "--out", out_dir]
    t0 = time.time()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.time() - t0
    if mps_env:
        stop_mps(mps_env)
    with open(os.path.join(out_dir, "run_exp.out"), "w") as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        print(f"[{label}] run_exp failed ({proc.returncode}):\n{proc.stdout[-3000:]}", file=sys.stderr)
        return {"label": label, "error": proc.returncode}
    result = {"label": label, "wall_s": round(wall, 1)}
    for role in ("lp", "hp"):
        path = os.path.join(out_dir, role + ".csv")
        if not os.path.exists(path):
            continue
        rows = read_jobs(path)
        jct = [float(r["jct_ms"]) for r in rows]
        starts = [int(r["start_ns"]) for r in rows]
        ends = [int(r["end_ns"]) for r in rows]
        span_s = (max(ends) - min(starts)) / 1e9 if rows else 0
        drain = [int(r["drain_wait_ns"]) / 1e6 for r in rows if r["drained"] != "-1"]
        result[role] = {
            "jobs": len(rows), "span_s": round(span_s, 3),
            "throughput": round(len(rows) / span_s, 3) if span_s else None,
            "jct_ms": {"p50": nearest_rank(jct, 50), "p90": nearest_rank(jct, 90), "p99": nearest_rank(jct, 99),
                       "mean": sum(jct) / len(jct) if jct else None},
            "busy_s": sum(jct) / 1e3,
            "drain_ms": {"p50": nearest_rank(drain, 50), "p99": nearest_rank(drain, 99),
                         "timeouts": sum(1 for r in rows if r["drained"] == "0")} if drain else None,
            "jct_list_ms": jct,
        }
    return result


def derive(results):
    """Ratios against the standalone runs of the same invocation."""
    alone_hp = results.get("alone_hp", {}).get("hp")
    alone_lp = results.get("alone_lp", {}).get("lp")
    table = {}
    for label, r in results.items():
        if "hp" not in r or "lp" not in r or not alone_hp or not alone_lp:
            continue
        hp, lp = r["hp"], r["lp"]
        # The GPU time the high-priority job needs, at its standalone speed, over the run.
        hp_busy = hp["jobs"] * alone_hp["jct_ms"]["p50"] / 1e3
        idle_fraction = max(0.0, 1 - hp_busy / lp["span_s"]) if lp["span_s"] else None
        table[label] = {
            "hp_p50_ratio": hp["jct_ms"]["p50"] / alone_hp["jct_ms"]["p50"],
            "hp_p90_ratio": hp["jct_ms"]["p90"] / alone_hp["jct_ms"]["p90"],
            "hp_p99_ratio": hp["jct_ms"]["p99"] / alone_hp["jct_ms"]["p99"],
            "hp_p99_is_max": hp["jobs"] < 100 or alone_hp["jobs"] < 100,
            "lp_harvest": (lp["throughput"] / (alone_lp["throughput"] * idle_fraction)
                           if idle_fraction else None),
            "lp_throughput": lp["throughput"],
            "drain_p50_ms": hp["drain_ms"]["p50"] if hp.get("drain_ms") else None,
            "drain_p99_ms": hp["drain_ms"]["p99"] if hp.get("drain_ms") else None,
            "drain_timeouts": hp["drain_ms"]["timeouts"] if hp.get("drain_ms") else None,
            "hp_jobs": hp["jobs"], "lp_jobs": lp["jobs"],
        }
    if "alone_hp_hooked" in results and alone_hp:
        hooked = results["alone_hp_hooked"]["hp"]["jct_ms"]
        table["hook_cost_standalone_hp"] = {"p50_ratio": hooked["p50"] / alone_hp["jct_ms"]["p50"]}
    for role in ("lp", "hp"):
        for label, r in results.items():
            if not label.startswith(f"{role}_alone_") or role not in r:
                continue
            # A repeated round ("_r2") compares with the "off" run of the same round.
            rnd = re.search(r"_r\d+$", label)
            rnd = rnd.group(0) if rnd else ""
            base = results.get(f"{role}_alone_off{rnd}", {}).get(role)
            if base:
                table["cost_" + label] = {"jct_p50_ratio": r[role]["jct_ms"]["p50"] / base["jct_ms"]["p50"],
                                          "throughput_ratio": r[role]["throughput"] / base["throughput"]}
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pair", choices=sorted(PAIRS), default="reference")
    ap.add_argument("--setups", default="alone,nocontrol,mps,sync:1,event:2")
    ap.add_argument("--dur", type=int, default=20)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--logs", default="/tmp/gy-contention")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    pair = PAIRS[args.pair]
    results = {}
    for setup in args.setups.split(","):
        for label, models in configs_for(setup, pair):
            r = run_one(label, models, args)
            results[label] = r
            with open(args.out, "w") as f:  # after each run: a cut-off invocation keeps what it measured
                json.dump({"pair": args.pair, "spec": pair, "dur_s": args.dur, "runs": results,
                           "derived": derive(results)}, f, indent=1)
            brief = {k: (v["jct_ms"]["p50"], v["jct_ms"]["p99"], v["throughput"]) for k, v in r.items()
                     if isinstance(v, dict) and "jct_ms" in v}
            print(f"[{args.pair}] {label}: (p50 ms, p99 ms, jobs/s) {brief}", flush=True)
    table = derive(results)
    with open(args.out, "w") as f:
        json.dump({"pair": args.pair, "spec": pair, "dur_s": args.dur, "runs": results, "derived": table}, f,
                  indent=1)
    print(f"{'setup':<16}{'hp_p50':>8}{'hp_p99':>8}{'harvest':>9}{'drain50':>9}{'drain99':>9}{'hpN':>5}{'lpN':>5}")
    for label, d in table.items():
        if "hp_p50_ratio" not in d:
            print(f"{label:<16}{d}")
            continue
        fmt = lambda v, w=8, p=3: f"{v:>{w}.{p}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"
        print(f"{label:<16}{fmt(d['hp_p50_ratio'])}{fmt(d['hp_p99_ratio'])}{fmt(d['lp_harvest'], 9)}"
              f"{fmt(d['drain_p50_ms'], 9, 2)}{fmt(d['drain_p99_ms'], 9, 2)}{d['hp_jobs']:>5}{d['lp_jobs']:>5}")


if __name__ == "__main__":
    main()
