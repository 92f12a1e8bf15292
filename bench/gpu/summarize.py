"""Short tables from the raw GPU results (run by bench/gpu/run_all.sh and on the build machine)."""
import json
import statistics
import sys


def launch(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    by = {}
    for r in rows:
        by.setdefault(r["variant"], []).append(r["result"]["ns_per_launch"])
    base = statistics.median(by["nohook"])
    print(f"{'variant':<10}{'ns/launch (median of rounds)':>30}{'launches/s':>12}{'added ns':>10}")
    for v, xs in by.items():
        m = statistics.median(xs)
        print(f"{v:<10}{m:>30.1f}{1e9 / m:>12.0f}{m - base:>10.1f}")


if __name__ == "__main__":
    {"launch": launch}[sys.argv[1]](*sys.argv[2:])
