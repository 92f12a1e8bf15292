"""The HP's service times (a job's begin to its end, queueing left out) per cell and setup of one
or more matrix invocations: median, mean, p90 and p99 in ms, pooled over the rounds, and each
setup's ratio to hp_alone's in the same cell. What a lower process leaves ahead of a job shows
here first, before the queueing of a loaded HP magnifies it into latency.
    python3 -m bench.gpu.service_tails DIR [DIR ...]     (each with raw.json, raw.json.xz or raw.json.gz)
"""
import collections
import statistics
import sys

from bench.gpu import raw_record
from bench.gpu.stats import nearest_rank


def load(folder):
    return raw_record.load_or_exit(folder, "service_tails")


def tails(folders):
    """{(hp, lp, load): {setup: {"jobs", "p50_ms", "mean_ms", "p90_ms", "p99_ms"}}} over the measured rounds."""
    svc = collections.defaultdict(list)
    for folder in folders:
        for seg in load(folder)["segments"]:
            result = seg.get("hp_result") or {}
            if seg.get("round", -1) < 0 or not result.get("ok") or not result.get("svc_ms"):
                continue  # a learning segment, an LP-only setup or a failed one
            svc[(seg["hp"], seg["lp"], seg["load"]), seg["setup"]].extend(result["svc_ms"])
    out = collections.defaultdict(dict)
    for (cell, setup), values in sorted(svc.items()):
        out[cell][setup] = {"jobs": len(values), "p50_ms": nearest_rank(values, 50),
                            "mean_ms": statistics.fmean(values), "p90_ms": nearest_rank(values, 90),
                            "p99_ms": nearest_rank(values, 99)}
    return out


def main(argv):
    if not argv:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    for cell, setups in tails(argv).items():
        base = setups.get("hp_alone")
        print(" + ".join(cell[:2]) + f", {cell[2]}")
        for setup, t in setups.items():
            rel = "" if not base or setup == "hp_alone" else "  (x alone: " + " ".join(
                f"{k[:-3]} {t[k] / base[k]:.3f}" for k in ("p50_ms", "mean_ms", "p90_ms", "p99_ms")) + ")"
            print(f"  {setup:<14} {t['jobs']:>5} jobs  p50 {t['p50_ms']:.3f}  mean {t['mean_ms']:.3f}  "
                  f"p90 {t['p90_ms']:.3f}  p99 {t['p99_ms']:.3f} ms{rel}")


if __name__ == "__main__":
    main(sys.argv[1:])
