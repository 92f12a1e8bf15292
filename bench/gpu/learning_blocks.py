"""How each arm's HP jobs compared with stop's through a guarded learning, stretch by stretch: the
learning's jobs (in the order they ran) cut into blocks of --block consecutive jobs, and in each
block per arm its jobs, their median service time and its ratio to the median of the stop jobs of
the same block, which ran beside them at the same time; with --by-cpu the same per CPU the HP's
launches ended on (since 2026-11-29). Tells a shift of the HP's own speed (every arm's median moves
together, the ratios stay) from an arm's cost that appears in some stretches only (the ratio
moves): e.g. a trial that passed for thousands of jobs and was then futile. With --speed, over every
learning and block at once: does an arm cost the HP more in the stretches where the HP runs faster?
The slope of log(arm median / stop median) on log(the block's stop median / the learning's), with a
95 % interval resampling the blocks; each block's stop jobs split in two interleaved halves, one for
the speed and one for the ratio's base, so that a stop median low by chance does not make the
ratio high by the same chance (the shared denominator would give a negative slope by itself).
    python3 -m bench.gpu.learning_blocks DIR [DIR ...] [--block 500] [--by-cpu] [--min-jobs 10] [--speed]
Each DIR a matrix invocation's folder (raw.json, raw.json.xz or raw.json.gz) with a learning
(setups guarded, guarded_depth, guarded_auto and --learn-jobs above 0)."""
import argparse
import math
import statistics
import sys

from bench.gpu import raw_record
from bench.gpu.stats import block_bootstrap


def arm_at(arms, i):
    """Job i's arm; a job without one (an older record, an unmarked HP) counts as stop's."""
    return (arms[i] if i < len(arms) else None) or "stop"


def blocks(hp_result, block, by_cpu=False):
    """[(first job, {key: (jobs, median svc, ratio to stop's median or None)})] per block of `block`
    jobs; key the arm, or (cpu, arm) with by_cpu. Jobs without an arm count as stop's."""
    svc = hp_result["svc_ms"]
    arms = hp_result.get("arms") or []
    cpus = hp_result.get("cpus") or []
    out = []
    for first in range(0, len(svc), block):
        groups = {}
        for i in range(first, min(first + block, len(svc))):
            arm = arm_at(arms, i)
            key = ((cpus[i] if i < len(cpus) else None), arm) if by_cpu else arm
            groups.setdefault(key, []).append(svc[i])
        medians = {k: statistics.median(v) for k, v in groups.items()}
        row = {}
        for key, values in groups.items():
            stop_key = (key[0], "stop") if by_cpu else "stop"
            base = medians.get(stop_key)
            ratio = medians[key] / base if base and key != stop_key else None
            row[key] = (len(values), medians[key], ratio)
        out.append((first, row))
    return out


def speed_points(hp_result, block, min_jobs):
    """[(log speed, log ratio)] per block and arm (not stop, not a depth's "@"): the block's stop median
    (even-numbered stop jobs) over the learning's, and the arm's median over the block's odd-numbered
    stop jobs' median. Blocks with fewer than 2 x min_jobs stop jobs, arms with fewer than min_jobs, left out."""
    svc, arms = hp_result["svc_ms"], hp_result.get("arms") or []
    stop_all = [v for i, v in enumerate(svc) if arm_at(arms, i) == "stop"]
    if not stop_all:
        return []
    overall = statistics.median(stop_all)
    out = []
    for first in range(0, len(svc), block):
        stops, by_arm = [], {}
        for i in range(first, min(first + block, len(svc))):
            arm = arm_at(arms, i)
            (stops if arm == "stop" else by_arm.setdefault(arm, [])).append(svc[i])
        if len(stops) < 2 * min_jobs:
            continue
        speed, base = statistics.median(stops[0::2]), statistics.median(stops[1::2])
        for arm, values in sorted(by_arm.items()):
            if len(values) >= min_jobs and "@" not in arm:
                out.append((math.log(speed / overall), math.log(statistics.median(values) / base)))
    return out


def fit(points):
    """The least-squares slope of y on x, or None without spread in x."""
    mx, my = statistics.fmean(x for x, _ in points), statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else None


def slope(points):
    """(slope of y on x, its 95 % interval resampling the points), or None with fewer than 3 points or no spread."""
    value = fit(points) if len(points) >= 3 else None
    ci = block_bootstrap([points], lambda strata: fit(strata[0])) if value is not None else None
    return (value, tuple(ci)) if ci else None


def learnings(folders):
    """[(folder, segment)] of every learning segment with HP jobs."""
    found = []
    for folder in folders:
        for seg in raw_record.load_or_exit(folder, "learning_blocks")["segments"]:
            r = seg.get("hp_result") or {}
            if seg.get("setup", "").endswith("_learn") and r.get("ok") and r.get("svc_ms"):
                found.append((folder, seg))
    return found


def key_text(key):
    return f"cpu {key[0]} {key[1]}" if isinstance(key, tuple) else key


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.learning_blocks", description=__doc__.split("\n")[0])
    p.add_argument("folders", nargs="+", metavar="DIR")
    p.add_argument("--block", type=int, default=500, help="consecutive HP jobs a block (default 500)")
    p.add_argument("--by-cpu", action="store_true", help="split each block by the CPU the HP's launches ended on")
    p.add_argument("--min-jobs", type=int, default=10, help="leave out a block's arms with fewer jobs (default 10)")
    p.add_argument("--speed", action="store_true",
                   help="over every learning and block: the arms' cost against the stretch's HP speed (a slope)")
    args = p.parse_args(argv)
    if args.block < 1 or args.min_jobs < 1:
        p.error("--block and --min-jobs must be 1 or more")
    found = learnings(args.folders)
    if not found:
        sys.exit("learning_blocks: no learning segment with HP jobs in " + ", ".join(args.folders) +
                 " (a matrix run with a guarded setup and --learn-jobs above 0 has one)")
    if args.speed:
        by_hp = {}
        for _, seg in found:
            by_hp.setdefault(seg["hp"], []).extend(speed_points(seg["hp_result"], args.block, args.min_jobs))
        by_hp["all"] = [pt for pts in list(by_hp.values()) for pt in pts]
        print(f"the arms' service over stop's against the HP's speed in blocks of {args.block} jobs "
              "(slope of log ratio on log speed; below 0: costlier where the HP runs faster)")
        for hp, pts in by_hp.items():
            fit = slope(pts)
            print(f"  {hp:<10} {len(pts):>5} arm-blocks  " +
                  (f"slope {fit[0]:+.3f} [{fit[1][0]:+.3f}, {fit[1][1]:+.3f}]" if fit else "too few to fit"))
        return 0
    for folder, seg in found:
        print(f"{seg['hp']} + {seg['lp']}, {seg['load']}, {seg['setup']} ({folder}): {len(seg['hp_result']['svc_ms'])} "
              f"jobs in blocks of {args.block} (jobs, median service ms, x the block's stop median)")
        for first, row in blocks(seg["hp_result"], args.block, args.by_cpu):
            cells = [f"{key_text(k)} {n} {m:.3f}" + (f" x{r:.3f}" if r is not None else "")
                     for k, (n, m, r) in sorted(row.items(), key=lambda kv: str(kv[0])) if n >= args.min_jobs]
            print(f"  {first:>6}  " + " | ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
