"""How each arm's HP jobs compared with stop's through a guarded learning, stretch by stretch: the
learning's jobs (in the order they ran) cut into blocks of --block consecutive jobs, and in each
block per arm its jobs, their median service time and its ratio to the median of the stop jobs of
the same block, which ran beside them at the same time; with --by-cpu the same per CPU the HP's
launches ended on (since 2026-11-29). Tells a shift of the HP's own speed (every arm's median moves
together, the ratios stay) from an arm's cost that appears in some stretches only (the ratio
moves): e.g. a trial that passed for thousands of jobs and was then futile.
    python3 -m bench.gpu.learning_blocks DIR [DIR ...] [--block 500] [--by-cpu] [--min-jobs 10]
Each DIR a matrix invocation's folder (raw.json, raw.json.xz or raw.json.gz) with a learning
(setups guarded, guarded_depth, guarded_auto and --learn-jobs above 0)."""
import argparse
import statistics
import sys

from bench.gpu import raw_record


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
            arm = (arms[i] if i < len(arms) else None) or "stop"
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
    args = p.parse_args(argv)
    if args.block < 1 or args.min_jobs < 1:
        p.error("--block and --min-jobs must be 1 or more")
    found = learnings(args.folders)
    if not found:
        sys.exit("learning_blocks: no learning segment with HP jobs in " + ", ".join(args.folders) +
                 " (a matrix run with a guarded setup and --learn-jobs above 0 has one)")
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
