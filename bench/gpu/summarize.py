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


if __name__ == "__main__":
    {"launch": launch}[sys.argv[1]](*sys.argv[2:])
