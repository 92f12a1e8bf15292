"""The guarded rule replayed on the HP's job times of matrix records (CPU only): per cell, the stop
jobs of its guarded learning (in the order they ran) stand for the HP under every arm, the arms'
jobs multiplied by each cost; how often, in a learning of --jobs jobs, a partition arm was promoted
(it should be for a cost of 1, and never for one over the bound), and when. With --in-force-only the
cost falls only on an arm's jobs once it is in force (its trial costless): in how many runs and how
many jobs after its promotion the rule dropped it again. The last row gives, per cost, the two axes: the
share of jobs on partition arms and the LP's launches over what it would have launched with stop on
every job (what the LP got), and the HP's job time over the trace's (what the arms' costs added to
it), means over the cells. A cost may give each size its own factor: SMS=F pairs joined by '/'
(16=1/64=1.5: 16 SMs free, 64 SMs 1.5x, sizes not named 1), as for a GPU-bound HP that needs what a
larger partition takes. The last row counts, per cost, the runs that ended with each size in force.
With --depth-cost F the rule also learns the queue depth (`--guard-depth`), every job after a gap at
a depth costing F: each cell then also says in how many runs a depth was in force at the end (and
the median job of its first promotion), and a last row which depths; with --depth-in-force-only
only the jobs at the depth in force cost F (its trial ran costless). The LP launches 4 % more a
step of the depth ladder in a gap at a depth (--depth-gain S: 1 + S x k at the k-th; 0, an LP the
depth gives nothing), since the rule promotes a depth only with the gain an arm needs; with --gap-spread S
the LP's launches in each gap spread by S (relative SD; 0.25-0.61 a cycle on the H200), so that a depth
giving under the gain (--depth-gain 0.01) is promoted only by that noise. With --depth-recorded a job after
a gap at a depth takes the time the cell's learning recorded at that depth (its jobs of arm stop@<us>us, in
order; depths with fewer than MIN_DEPTH_JOBS of them cost F) and each stop job the next stop job recorded: a
cost that falls on some jobs only, as the GEMM HP's 2000 us on the H100 (8 % after long gaps, nothing after
short ones), replayed as it ran. With --tail-above Q only the
trace's slow jobs, at or past its Q-quantile, cost the arms' factor (a server whose long requests need the
SMs its short ones leave); a last row says how many of them ran on an arm and the HP's p99 over the trace's.
`guard-replay` (built from bench/guard_replay.c) runs the rule itself; a build of another commit replays that rule.
    python3 -m bench.guard_replay --build BUILD DIR [DIR ...] [--costs 1,1.02,1.03] [--jobs 2000] [--runs 40]
                                  [--in-force-only] [--depth-cost F [--depth-in-force-only] [--depth-gain S]
                                  [--gap-spread S] [--depth-recorded]] [--tail-above Q]
Each DIR a matrix invocation's folder (raw.json, raw.json.xz or raw.json.gz)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

from bench.gpu import raw_record

LINE = re.compile(r"promoted in (\d+) of (\d+) runs, in force at the end in (\d+), first promotion at job (-?\d+)"
                  r".*, ([\d.]+) % of jobs on partition arms, HP time \+(-?[\d.]+) % over the trace's,"
                  r" LP launches \+(-?[\d.]+) % over stop's"
                  r".*dropped after promotion in (\d+), (-?\d+) jobs after it.*in force at the end by SMs:(.*?)"
                  r"(?:; trials ended:(.*?))?"
                  r"(?:; depth: in force at the end in (\d+) of \d+ runs, promoted in (\d+), first depth promotion at job"
                  r" (-?\d+) \(median\),"
                  r" by us:([\d: ]*))?"
                  r"(?:; tail: slow jobs on partition arms ([\d.]+) %, HP p99 x([\d.]+) of the trace's in the median run,"
                  r" x([\d.]+) at most)?$",
                  re.M)
PROFILE = re.compile(r"^\d+=[\d.]+(/\d+=[\d.]+)*$")
MIN_STOP_JOBS = 256  # a shorter trace repeats itself within one learning
MIN_DEPTH_JOBS = 64  # --depth-recorded: a depth's recorded jobs, at least (fewer: its jobs cost F)
DEPTHS_US = (1000, 2000, 4000)
LEARNINGS = {"guarded_learn": "", "guarded_depth_learn": " (guarded_depth)", "guarded_auto_learn": " (guarded_auto)",
             "guarded@twin_learn": " (guarded@twin)", "guarded_depth@twin_learn": " (guarded_depth@twin)"}


def traces(folders, depths=False):
    """[(cell name, [stop job microseconds in order])] from each cell's guarded learning (guarded_learn;
    guarded_depth_learn and guarded_auto_learn too, named so); with depths, a third item: {us: [the
    microseconds of its jobs of arm stop@<us>us, in order]} for each depth of the ladder that ran
    MIN_DEPTH_JOBS of them."""
    out = []
    for folder in folders:
        record = raw_record.load_or_exit(folder, "guard_replay")
        if not isinstance(record, dict) or not isinstance(record.get("segments"), list):
            raise SystemExit(f"guard_replay: {folder}: its raw record has no list of segments "
                             "(not a matrix invocation's): leave it out")
        for seg in record["segments"]:
            r = seg.get("hp_result") or {}
            setup = seg.get("setup")
            if setup not in LEARNINGS or not r.get("ok") or not r.get("arms"):
                continue
            stop = [round(ms * 1000) for ms, arm in zip(r["svc_ms"], r["arms"]) if arm == "stop"]
            if len(stop) < MIN_STOP_JOBS:
                continue
            name = f"{seg['hp']} + {seg['lp']}, {seg['load']}" + LEARNINGS[setup]
            if not depths:
                out.append((name, stop))
                continue
            at = {us: [round(ms * 1000) for ms, arm in zip(r["svc_ms"], r["arms"]) if arm == f"stop@{us}us"]
                  for us in DEPTHS_US}
            out.append((name, stop, {us: t for us, t in at.items() if len(t) >= MIN_DEPTH_JOBS}))
    return out


def replay(binary, trace, cost, jobs, runs, in_force_only=False, depth_cost=None, depth_in_force_only=False,
           depth_gain=None, gap_spread=None, tail_above=None, depth_traces=None):
    files = []
    for times in [trace] + [t for _, t in sorted((depth_traces or {}).items())]:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(str(max(1, us)) for us in times))
        files.append(f.name)
    try:
        extra = ((["in-force"] if in_force_only else []) + ([f"depth={depth_cost}"] if depth_cost is not None else [])
                 + (["depth-in-force"] if depth_in_force_only else [])
                 + ([f"depth-gain={depth_gain}"] if depth_gain is not None else [])
                 + ([f"gap-spread={gap_spread}"] if gap_spread is not None else [])
                 + ([f"tail={tail_above}"] if tail_above is not None else [])
                 + [f"depth-trace={us}:{path}" for us, path in zip(sorted(depth_traces or {}), files[1:])])
        out = subprocess.run([binary, files[0], f"{cost}", str(jobs), str(runs)] + extra,
                             capture_output=True, text=True, check=False)
    finally:
        for path in files:
            os.unlink(path)
    m = LINE.search(out.stdout)
    if out.returncode or not m:
        raise RuntimeError(f"{binary} failed (exit {out.returncode}): {out.stderr.strip() or out.stdout.strip()}")
    g = m.groups()
    # (promoted, runs, in force at the end, first promotion, % of jobs on arms, HP time + %, LP + %, dropped,
    #  jobs after, {SMs: runs that ended with that size in force}, {outcome: trials that ended so},
    #  and with a depth cost (runs with a depth in force at the end, median first depth promotion,
    #  {us: runs that ended with that depth}, runs that promoted a depth at all), else None,
    #  and with a tail (% of the slow jobs on partition arms, HP p99 over the trace's: median run, largest), else None)
    ends = {int(k): int(v) for k, v in (pair.split(":") for pair in g[9].split())}
    how = {k: int(v) for k, v in (pair.split("=") for pair in (g[10] or "").split())}
    depth = None
    if depth_cost is not None:
        if g[11] is None:
            raise RuntimeError(f"{binary} said nothing of the depth: a build from before guard-replay's depth=F")
        depth = (int(g[11]), int(g[13]), {int(k): int(v) for k, v in (pair.split(":") for pair in g[14].split())},
                 int(g[12]))
    tail = None
    if tail_above is not None:
        if g[15] is None:
            raise RuntimeError(f"{binary} said nothing of the slow jobs: a build from before guard-replay's tail=Q")
        tail = (float(g[15]), float(g[16]), float(g[17]))
    return (tuple(int(x) for x in g[:4]) + tuple(float(x) for x in g[4:7]) + tuple(int(x) for x in g[7:9])
            + (ends, how, depth, tail))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.guard_replay", description=__doc__.split("\n")[0])
    p.add_argument("--build", required=True, help="a build folder with bench/guard-replay")
    p.add_argument("folders", nargs="+", metavar="DIR")
    p.add_argument("--costs", default="1,1.02,1.03",
                   help="factors from 1 to 4, or per-size profiles (16=1/64=1.5), separated by commas")
    p.add_argument("--jobs", type=int, default=2000, help="jobs a learning lasts (the matrix's --learn-jobs)")
    p.add_argument("--runs", type=int, default=40, help="runs per cell and cost, each from another point of the trace")
    p.add_argument("--in-force-only", action="store_true",
                   help="the cost only on an arm's jobs once in force: does the rule drop it again, and when")
    p.add_argument("--depth-cost", type=float, default=None, metavar="F",
                   help="the rule learns the queue depth too, each job after a gap at a depth costing F (1 to 4)")
    p.add_argument("--depth-in-force-only", action="store_true",
                   help="with --depth-cost: only the jobs after a gap at the depth in force cost F (its trial costless)")
    p.add_argument("--depth-gain", type=float, default=None, metavar="S",
                   help="with --depth-cost: the LP launches 1 + S x k as much in a gap at the k-th depth (1000, 2000, "
                        "4000 us; default 0.04, 0: an LP the depth gives nothing, as a CUDA-graph LP on the H200)")
    p.add_argument("--gap-spread", type=float, default=None, metavar="S",
                   help="with --depth-cost: the LP's launches in each gap spread by S (relative SD, 0 to 1; 0.25-0.61 "
                        "a cycle on the H200)")
    p.add_argument("--depth-recorded", action="store_true",
                   help="with --depth-cost: a job after a gap at a depth takes the time the cell's learning recorded "
                        f"at that depth (where it ran {MIN_DEPTH_JOBS} or more; the others cost F), each stop job the "
                        "next stop job recorded")
    p.add_argument("--tail-above", type=float, default=None, metavar="Q",
                   help="only the trace's slow jobs, at or past its Q-quantile (0.9: the slowest tenth), cost the "
                        "arms' factor; a last row says how many of them ran on an arm and the HP's p99 over the trace's")
    args = p.parse_args(argv)
    if args.tail_above is not None and not 0 < args.tail_above < 1:
        p.error(f"--tail-above {args.tail_above}: a quantile between 0 and 1")
    if args.gap_spread is not None and (args.depth_cost is None or not 0 <= args.gap_spread <= 1):
        p.error(f"--gap-spread {args.gap_spread}: a spread from 0 to 1, with --depth-cost F")
    if args.depth_recorded and args.depth_cost is None:
        p.error("--depth-recorded qualifies --depth-cost F: give both")
    if args.depth_in_force_only and args.depth_cost is None:
        p.error("--depth-in-force-only qualifies --depth-cost F: give both")
    if args.depth_gain is not None and args.depth_cost is None:
        p.error("--depth-gain qualifies --depth-cost F: give both")
    if args.depth_gain is not None and not 0 <= args.depth_gain <= 1:
        p.error(f"--depth-gain {args.depth_gain}: a step from 0 to 1")
    if args.depth_cost is not None and not 1 <= args.depth_cost <= 4:
        p.error(f"--depth-cost {args.depth_cost}: a factor from 1 to 4")
    binary = os.path.join(args.build, "bench", "guard-replay")
    if not os.access(binary, os.X_OK):
        p.error(f"no {binary}: build it (make -f build.mk O=BUILD all)")
    costs = args.costs.split(",")
    for c in costs:
        try:
            ok = PROFILE.match(c) and all(1 <= float(f.split("=")[1]) <= 4 for f in c.split("/")) or 1 <= float(c) <= 4
        except ValueError:
            ok = False
        if not ok:
            p.error(f"--costs {args.costs}: each a number from 1 to 4 or a profile of SMS=F pairs joined by '/' "
                    f"(e.g. 1,1.03,16=1/64=1.5): not {c!r}")
    if args.jobs < 1 or args.runs < 1:
        p.error("--jobs and --runs at least 1")
    cells = [cell if len(cell) == 3 else cell + ({},) for cell in traces(args.folders, depths=args.depth_recorded)]
    if not cells:
        print(f"guard_replay: no guarded learning with {MIN_STOP_JOBS} stop jobs or more in {' '.join(args.folders)}",
              file=sys.stderr)
        return 1
    what = "promoted, dropped again (median jobs after)" if args.in_force_only else "promoted (median first job)"
    print(f"| cell | stop jobs | " + " | ".join(f"cost {c}: {what}" for c in costs) + " |")
    print("|---|---|" + "---|" * len(costs))
    total = {c: [0, 0] for c in costs}
    depth_total = {c: 0 for c in costs}  # runs with a depth in force at the end (--depth-cost)
    depth_promoted = {c: 0 for c in costs}  # ... and runs that promoted one at all
    # per cell: the share of jobs on partition arms, the HP's time over the trace, the LP's launches over stop's
    on_arms, hp_over, lp_over = ({c: [] for c in costs} for _ in range(3))
    ends = {c: {} for c in costs}  # SMs -> runs that ended with that size in force
    depth_ends = {c: {} for c in costs}  # us -> runs that ended with that depth in force (--depth-cost)
    how = {c: {} for c in costs}  # outcome -> trials that ended so (controller/guarded_layout.h)
    slow = {c: [] for c in costs}  # --tail-above: per cell (% slow jobs on arms, p99 over, median run and largest)
    for name, trace, recorded in cells:
        row = f"| {name} | {len(trace)}" + (" (" + ", ".join(f"{us} us: {len(t)}" for us, t in sorted(recorded.items())) + ")"
                                            if recorded else "")
        for c in costs:
            promoted, runs, _, first, arms_pct, over_pct, lp_pct, dropped, after, ended, outcomes, depth, tail = replay(
                binary, trace, c, args.jobs, args.runs, args.in_force_only, args.depth_cost, args.depth_in_force_only,
                args.depth_gain, args.gap_spread, args.tail_above, recorded)
            if tail is not None:
                slow[c].append(tail)
            for sms, n in ended.items():
                ends[c][sms] = ends[c].get(sms, 0) + n
            for o, n in outcomes.items():
                how[c][o] = how[c].get(o, 0) + n
            total[c][0] += dropped if args.in_force_only else promoted
            total[c][1] += promoted if args.in_force_only else runs
            on_arms[c].append(arms_pct)
            hp_over[c].append(over_pct)
            lp_over[c].append(lp_pct)
            if args.in_force_only:
                row += f" | {promoted}/{runs}, {dropped}" + (f" ({after})" if dropped else "")
            else:
                row += f" | {promoted}/{runs}" + (f" ({first})" if promoted else "")
            if depth is not None:
                row += f"; depth {depth[0]}/{runs}" + (f" ({depth[1]})" if depth[1] >= 0 else "")
                depth_total[c] += depth[0]
                depth_promoted[c] += depth[3]
                for us, n in depth[2].items():
                    depth_ends[c][us] = depth_ends[c].get(us, 0) + n
        print(row + " |")
    # over every cell: the runs that promoted (or, --in-force-only, the promoted ones dropped again)
    print("| all | | " + " | ".join((f"{t[0]}/{t[1]} ({t[0] / t[1]:.0%})" if t[1] else "-") +
                                   (f"; depth {depth_total[c]}/{t[1]} ({depth_total[c] / t[1]:.0%}),"
                                    f" promoted in {depth_promoted[c]}"
                                    if args.depth_cost is not None and t[1] else "")
                                   for c, t in total.items()) + " |")
    # the two axes over every cell (means of the cells'): what the LP got (jobs on arms, its launches over
    # stop's), what the HP paid (its time over the trace's)
    print("| jobs on arms, LP over stop's, HP time over the trace (means of cells) | | " +
          " | ".join(f"{sum(on_arms[c]) / len(cells):.1f} %, LP +{sum(lp_over[c]) / len(cells):.2f} %, "
                     f"HP +{sum(hp_over[c]) / len(cells):.2f} %" for c in costs) + " |")
    print("| in force at the end, runs by SMs | | " +
          " | ".join(", ".join(f"{sms}: {n}" for sms, n in sorted(ends[c].items())) or "none" for c in costs) + " |")
    print("| trials ended, by how | | " +
          " | ".join(", ".join(f"{o} {n}" for o, n in sorted(how[c].items(), key=lambda kv: -kv[1])) or "none"
                     for c in costs) + " |")
    if args.tail_above is not None:
        # the slow jobs (past the trace's --tail-above quantile) that paid an arm's cost, and what that did to
        # the HP's p99: the median over the cells of each cell's median run, and the largest of any run
        def median(values):
            values = sorted(values)
            return values[(len(values) - 1) // 2]
        print(f"| slow jobs (past the trace's q{args.tail_above:g}) on arms, HP p99 over the trace's (median cell's"
              " median run; largest run) | | " +
              " | ".join(f"{median([t[0] for t in slow[c]]):.1f} %, x{median([t[1] for t in slow[c]]):.4f}; "
                         f"x{max(t[2] for t in slow[c]):.4f}" for c in costs) + " |")
    if args.depth_cost is not None:
        print(f"| depth in force at the end (depth cost {args.depth_cost}), runs by us | | " +
              " | ".join(", ".join(f"{us}: {n}" for us, n in sorted(depth_ends[c].items())) or "none" for c in costs) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
