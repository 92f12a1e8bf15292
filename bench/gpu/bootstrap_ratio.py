"""How far a contention run's high-priority JCT ratios can be trusted: a block bootstrap
(bench.gpu.stats: runs of BLOCK consecutive jobs of the setup and of the standalone run resampled
whole, since consecutive jobs correlate; seed fixed) of the p50 and p90 ratios, with a 95%
interval, from a contention.py result file.
  python3 -m bench.gpu.bootstrap_ratio RESULTS.json [RESAMPLES] [BLOCK]
"""
import json
import sys

from .stats import block_bootstrap, consecutive_blocks, nearest_rank, pooled


def interval(hp, alone, q, resamples, block):
    ci = block_bootstrap([consecutive_blocks(hp, block), consecutive_blocks(alone, block)],
                         lambda s: nearest_rank(pooled(s[0], list), q) / nearest_rank(pooled(s[1], list), q),
                         resamples)
    return ci


def main(path, resamples=2000, block=50):
    runs = json.load(open(path))["runs"]
    alone = runs["alone_hp"]["hp"]["jct_list_ms"]
    print(f"{'setup':<16}{'jobs':>6}{'p50 ratio':>11}{'95% interval':>18}{'p90 ratio':>11}{'95% interval':>18}")
    for label, run in runs.items():
        if "hp" not in run or label == "alone_hp":
            continue
        hp = run["hp"]["jct_list_ms"]
        row = f"{label:<16}{len(hp):>6}"
        for q in (50, 90):
            lo, hi = interval(hp, alone, q, resamples, block)
            row += f"{nearest_rank(hp, q) / nearest_rank(alone, q):>11.3f}{f'[{lo:.2f}, {hi:.2f}]':>18}"
        print(row)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:4]))
