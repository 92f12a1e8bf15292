"""How far a contention run's high-priority JCT ratios can be trusted: a bootstrap (resampling
the jobs of the setup and of the standalone run, seed fixed) of the p50 and p90 ratios, with a
95% interval, from a contention.py result file.
  python3 bench/gpu/bootstrap_ratio.py RESULTS.json [ROUNDS]
"""
import json
import random
import sys

from contention import nearest_rank


def interval(hp, alone, q, rounds, rng):
    ratios = sorted(nearest_rank([rng.choice(hp) for _ in hp], q) / nearest_rank([rng.choice(alone) for _ in alone], q)
                    for _ in range(rounds))
    return ratios[int(0.025 * rounds)], ratios[int(0.975 * rounds) - 1]


def main(path, rounds=2000):
    runs = json.load(open(path))["runs"]
    alone = runs["alone_hp"]["hp"]["jct_list_ms"]
    rng = random.Random(1)
    print(f"{'setup':<16}{'jobs':>6}{'p50 ratio':>11}{'95% interval':>18}{'p90 ratio':>11}{'95% interval':>18}")
    for label, run in runs.items():
        if "hp" not in run or label == "alone_hp":
            continue
        hp = run["hp"]["jct_list_ms"]
        row = f"{label:<16}{len(hp):>6}"
        for q in (50, 90):
            lo, hi = interval(hp, alone, q, rounds, rng)
            row += f"{nearest_rank(hp, q) / nearest_rank(alone, q):>11.3f}{f'[{lo:.2f}, {hi:.2f}]':>18}"
        print(row)


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:3]))
