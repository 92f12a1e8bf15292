"""The sweep: the trade-off between high-priority latency and low-priority throughput as the
queue bound N (or the time budget) varies, from a contention run's results, as the points
`python3 -m gpuyield.plot sweep` draws. Run the contention benchmark with the modes to sweep, e.g.
  python3 -m bench.gpu.contention --setups alone,event:1,event:2,event:4,event:8,event:16,sync:1,sync:4,time:500,time:1000,time:2000 --out c.json
  python3 -m bench.gpu.sweep c.json -o sweep.json && python3 -m gpuyield.plot sweep sweep.json -o sweep.png
"""
import argparse
import json
import re


def points(contention):
    out = []
    for label, d in contention["derived"].items():
        m = re.fullmatch(r"gy_(sync|event|time)(\d+)", label)
        if not m or "hp_p50_ratio" not in d:
            continue
        if d["lp_harvest"] is None:  # the high-priority job left no idle time: no harvest to plot
            print(f"sweep: {label}: no lp_harvest (no idle time left by the high-priority job): left out")
            continue
        out.append({"mode": m.group(1), "n": int(m.group(2)), "hp_p50_ratio": d["hp_p50_ratio"],
                    "hp_p99_ratio": d["hp_p99_ratio"], "lp_throughput": d["lp_throughput"],
                    "lp_harvest": d["lp_harvest"]})
    return sorted(out, key=lambda p: (p["mode"], p["n"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("contention_json")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()
    pts = points(json.load(open(args.contention_json)))
    if not pts:
        raise SystemExit(f"sweep.py: no gy_sync/gy_event/gy_time setups in {args.contention_json}")
    json.dump({"points": pts}, open(args.out, "w"), indent=1)
    print(f"sweep.py: {len(pts)} points -> {args.out}")


if __name__ == "__main__":
    main()
