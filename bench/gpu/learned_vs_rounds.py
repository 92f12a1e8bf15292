"""What a partition put in force by guarded's learning costs the HP afterwards: per cell where the
learning ended with a partition in force and that arm ran in the measured rounds, the arm's HP
service median over stop's in the last --tail jobs of the learning and in each measured round (the
same segments' stop jobs). A promoted arm is one whose learning looked good: measured again, it
shows what it costs.
    python3 -m bench.gpu.learned_vs_rounds DIR [DIR ...] [--tail 800]
Each DIR a matrix invocation's folder (raw.json, raw.json.xz or raw.json.gz)."""
import argparse
import collections
import statistics
import sys

from bench.gpu import raw_record

MIN_LEARNING_JOBS = 50  # of each of the arm and stop in the learning's tail
MIN_ROUND_ARM, MIN_ROUND_STOP = 10, 5


def cells(raw, tail):
    """[(hp, lp, load, arm, learning ratio, [round ratios])] of one invocation."""
    learned, rounds = {}, collections.defaultdict(lambda: collections.defaultdict(list))
    for seg in raw.get("segments", []):
        r = seg.get("hp_result") or {}
        if seg.get("setup") not in ("guarded", "guarded_learn") or not r.get("ok") or not r.get("arms"):
            continue
        key = (seg["hp"], seg["lp"], seg["load"])
        if seg["setup"] == "guarded_learn":
            learned[key] = (((seg.get("guarded_status") or {}).get("guarded") or {}).get("in_force"), r)
            continue
        for svc, arm in zip(r["svc_ms"], r["arms"]):
            rounds[key][(seg["round"], arm)].append(svc)
    out = []
    for key, (arm, r) in learned.items():
        if not arm or arm == "stop":
            continue
        jobs = list(zip(r["svc_ms"], r["arms"]))[-tail:]
        on_arm = [v for v, a in jobs if a == arm]
        on_stop = [v for v, a in jobs if a == "stop"]
        if len(on_arm) < MIN_LEARNING_JOBS or len(on_stop) < MIN_LEARNING_JOBS:
            continue
        per_round = []
        for rnd in sorted({k[0] for k in rounds[key]}):
            a, s = rounds[key].get((rnd, arm), []), rounds[key].get((rnd, "stop"), [])
            if len(a) >= MIN_ROUND_ARM and len(s) >= MIN_ROUND_STOP:
                per_round.append(statistics.median(a) / statistics.median(s))
        if per_round:
            out.append(key + (arm, statistics.median(on_arm) / statistics.median(on_stop), per_round))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.learned_vs_rounds", description=__doc__.split("\n")[0])
    p.add_argument("folders", nargs="+", metavar="DIR")
    p.add_argument("--tail", type=int, default=800, help="the learning's last jobs compared (default 800)")
    args = p.parse_args(argv)
    if args.tail < 2 * MIN_LEARNING_JOBS:
        p.error(f"--tail {args.tail}: at least {2 * MIN_LEARNING_JOBS}")
    rows = []
    for folder in args.folders:
        rows += [(folder,) + c for c in cells(raw_record.load_or_exit(folder, "learned_vs_rounds"), args.tail)]
    if not rows:
        print("learned_vs_rounds: no cell had a partition in force after its learning and in its rounds")
        return 0
    print("| folder | cell | arm | learning | rounds (each) | rounds' median |")
    print("|---|---|---|---|---|---|")
    higher = 0
    for folder, hp, lp, load, arm, learning, per_round in rows:
        med = statistics.median(per_round)
        higher += med > learning
        print(f"| {folder} | {hp} + {lp}, {load} | {arm} | {learning:.3f} | "
              f"{' '.join(f'{x:.3f}' for x in per_round)} | {med:.3f} |")
    print(f"\nthe rounds' median above the learning's in {higher} of {len(rows)} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
