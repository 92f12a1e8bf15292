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
    each round (a process) gives the median over adjacent call pairs of (through the hook - direct
    to the driver); then the median and range of those over the rounds. The no-hook variant is
    the A/A check: both calls are the driver's."""
    rows = [json.loads(l) for l in open(path) if l.strip()]
    per_variant, opened = {}, {}
    for r in rows:
        if r["variant"] != "components":
            per_variant.setdefault(r["variant"], []).append(r["result"])
            if "jobs_opened" in r:
                opened.setdefault(r["variant"], []).append(r["jobs_opened"])
    if not per_variant:
        sys.exit("summarize: no rounds in " + path)
    added = {}
    for variant, results in per_variant.items():
        diffs = [x["pair_diff"]["median"] for x in results]
        name = "nohook_aa_check" if variant == "nohook" else variant
        added[name] = {"median": round(statistics.median(diffs), 1), "min": round(min(diffs), 1),
                       "max": round(max(diffs), 1), "rounds": len(diffs),
                       "per_round": [round(d, 1) for d in diffs],
                       "direct_call_median_ns": round(statistics.median(x["direct"]["median"] for x in results), 1)}
        inserting = [x["inserting_pair_diff"]["median"] for x in results if "inserting_pair_diff" in x]
        if inserting:  # the launches set apart: they record or query an event
            added[name]["inserting_launches_median"] = round(statistics.median(inserting), 1)
        if variant in opened:  # jobs the process began (auto: 1 = its launches ran inside one open job)
            added[name]["jobs_opened_per_round"] = opened[variant]
    result = {"device": device, "added_ns": added,
              "components": next((r["result"] for r in rows if r["variant"] == "components"), None),
              "method": "per process, launches alternate between the hooked cuLaunchKernel and the driver's own "
                        "(empty kernel, one stream, steady_clock around each call); added = median of "
                        "(hooked - direct) over adjacent pairs whose hooked launch inserts nothing (event:N: by position on a "
                        "fresh stream; time:US: all pairs, its groups hold hundreds of these launches); "
                        "median/min/max over processes (rounds); auto: mode none at priority 1 under "
                        "GPUYIELD_JOBS=auto, inside the auto job its warm-up opened (jobs_opened_per_round: jobs "
                        "each process began, from the segment's job_epoch)"}
    json.dump(result, open(out_path, "w"), indent=1)
    print(json.dumps(result["added_ns"], indent=1))
    print("components:", json.dumps(result["components"]))


if __name__ == "__main__":
    {"launch": launch, "launch-cost": launch_cost}[sys.argv[1]](*sys.argv[2:])
