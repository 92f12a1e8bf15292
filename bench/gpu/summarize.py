"""Short tables from the raw GPU results (run by bench/gpu/run_all.sh and on the build machine)."""
import json
import statistics
import sys


def launch(path):
    """Per variant: the median over rounds, and the difference from the no-hook run of the same
    round (paired: rounds run the variants back to back), as the median and range over rounds."""
    rows = [json.loads(l) for l in open(path) if l.strip()]
    for key, title in (("ns_per_launch", "back to back, incl. the GPU retiring them"),
                       ("host_ns_per_launch", "launch calls only (CPU cost)")):
        by, base = {}, {}
        for r in rows:
            if key not in r["result"]:
                continue
            by.setdefault(r["variant"], {})[r["round"]] = r["result"][key]
        if "nohook" not in by:
            continue
        print(f"{key}: {title}")
        print(f"{'variant':<10}{'ns/launch (median)':>20}{'added ns, paired: median [min, max]':>40}")
        base = by["nohook"]
        for v, per_round in by.items():
            diffs = [x - base[r] for r, x in per_round.items() if r in base]
            m = statistics.median(per_round.values())
            spread = (f"{statistics.median(diffs):+.1f} [{min(diffs):+.1f}, {max(diffs):+.1f}]"
                      if diffs else "-")
            print(f"{v:<10}{m:>20.1f}{spread:>40}")


def launch_cost(path, out_path, device):
    """launch_cost.sh's rows -> {"device", "added_ns": {variant: {median, min, max, rounds}}, ...}:
    per round, a variant's median call minus the no-hook median call of the same round (paired);
    then the median and range of those differences over the rounds."""
    rows = [json.loads(l) for l in open(path) if l.strip()]
    per_variant = {}
    for r in rows:
        if r["variant"] != "components":
            per_variant.setdefault(r["variant"], {})[r["round"]] = r["result"]["launch"]["median"]
    base = per_variant.get("nohook")
    if not base:
        sys.exit("summarize: no no-hook rounds in " + path)
    added = {}
    for variant, rounds in per_variant.items():
        if variant == "nohook":
            continue
        diffs = [x - base[r] for r, x in sorted(rounds.items()) if r in base]
        added[variant] = {"median": round(statistics.median(diffs), 1), "min": round(min(diffs), 1),
                          "max": round(max(diffs), 1), "rounds": len(diffs),
                          "per_round": [round(d, 1) for d in diffs]}
    result = {"device": device, "nohook_median_call_ns": round(statistics.median(base.values()), 1),
              "added_ns": added,
              "components": next((r["result"] for r in rows if r["variant"] == "components"), None),
              "method": "median single-launch call (empty kernel, CUDA runtime, steady_clock around each call), "
                        "variant minus no-hook of the same round"}
    json.dump(result, open(out_path, "w"), indent=1)
    print(json.dumps(result["added_ns"], indent=1))
    print("components:", json.dumps(result["components"]))


if __name__ == "__main__":
    {"launch": launch, "launch-cost": launch_cost}[sys.argv[1]](*sys.argv[2:])
