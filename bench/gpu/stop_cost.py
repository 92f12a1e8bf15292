"""What a guarded segment's stop costs the HP beside corun's, over records:
    python3 -m bench.gpu.stop_cost [--setups guarded,arm:stop] [--tails] FOLDER [FOLDER ...]
With stop in force a guarded segment does what corun does during an HP job (the lower launches
wait for its end); a difference in the HP's service is then the guarded machinery's, or the host's.
Per round of each cell where a setup ran with every HP job under stop (its jobs' recorded arms; a
round with any partition job is left out, and a round the matrix does not pair: its plain alone
overloaded, or the setups' HPs ran other kinds of job) beside corun: the setup's HP service median over corun's
in the same round. Per setup and HP kind: the rounds' median ratio, its quartiles, how many rounds
are above 1, and a two-sided sign test of "above or below 1 alike" (rounds of one invocation share
its machine: a small p is a reason to look, not a proof). FOLDER: a matrix invocation's folder or a
record holding such folders one level down (raw_record.invocation_folders).

--tails: the same question asked of the HP target's noisiest figure, the p99 (the 2nd to 10th slowest
of a cell's 200-1 000 jobs). Per cell (pooled over the invocations that ran the setup in it, as
bench.gpu.default_decision pools them) where every measured HP job of the setup ran under stop, so
that its mechanism during HP jobs was corun's: the two p99 ratios to the plain alone, which is above,
and which met the target (p99 <= 1.10) where the other missed it, and the share of each one's
resampled rounds over the target (matrix's resamples_over). A cost of the machinery shows as the
setup above corun in most cells; noise, as misses both ways."""
import argparse
import math
import statistics
import sys

from . import matrix, raw_record
from .default_decision import candidate_raws
from .stats import nearest_rank

class StopCostError(Exception):
    pass


MIN_JOBS = 20  # a round's service median on fewer jobs is left out


def round_ratios(raw, setup):
    """[(hp, lp, load, round, ratio)]: SETUP's HP service median over corun's, per round where every
    SETUP job ran under stop."""
    by = {}
    for s in raw["segments"]:
        if s["setup"] in ("corun", setup, "hp_alone") and "hp_result" in s:
            by[(s["hp"], s["lp"], s["load"], s["round"], s["setup"])] = s
    out = []
    for (hp, lp, load, r, name), seg in sorted(by.items()):
        corun = by.get((hp, lp, load, r, "corun"))
        if name != setup or corun is None:
            continue
        # the rounds the matrix pairs: not overloaded alone, the same kinds of job in each setup
        busy = matrix.alone_busy(by.get((hp, lp, load, r, "hp_alone")))
        if (busy is not None and busy > matrix.ALONE_BUSY_MAX) or matrix.kinds_differ([seg, corun]):
            continue
        res, corun = seg["hp_result"], corun["hp_result"]
        svc = res.get("svc_ms") or []
        arms = res.get("arms") or [None] * len(svc)
        if any(a not in (None, "stop") for a in arms):
            continue  # a partition or a depth in this round: not stop against stop
        theirs = corun.get("svc_ms") or []
        if len(svc) < MIN_JOBS or len(theirs) < MIN_JOBS:
            continue
        out.append((hp, lp, load, r, statistics.median(svc) / statistics.median(theirs)))
    return out


def sign_test(above, n):
    """Two-sided p of `above` of n on one side of 1 when each side is as likely (ties none)."""
    if n == 0:
        return None
    k = min(above, n - above)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def report(folders, setups):
    per = {}  # (setup, hp) -> [(ratio, where)]
    for folder in folders:
        for inv in raw_record.invocation_folders(folder):
            raw = raw_record.load(inv)
            for setup in setups:
                for hp, lp, load, r, ratio in round_ratios(raw, setup):
                    per.setdefault((setup, hp), []).append((ratio, f"{inv} {hp}+{lp} {load} r{r}"))
    if not per:
        raise StopCostError(f"no round of {', '.join(setups)} with every HP job under stop beside corun in "
                            f"{', '.join(folders)}")
    lines = ["| setup | HP kind | rounds | service x corun's: median [quartiles] | above 1 | sign test p |",
             "|---|---|---|---|---|---|"]
    for (setup, hp), rows in sorted(per.items()):
        ratios = [x for x, _ in rows]
        above = sum(x > 1 for x in ratios)
        p = sign_test(above, sum(x != 1 for x in ratios))
        lines.append(f"| {setup} | {hp} | {len(ratios)} | {statistics.median(ratios):.3f} "
                     f"[{nearest_rank(ratios, 25):.3f}, {nearest_rank(ratios, 75):.3f}] | {above} | "
                     + ("-" if p is None else f"{p:.3f}") + " |")
    return "\n".join(lines)


def stop_only(row):
    """Whether every measured HP job of a pooled cell's setup row ran under stop (arms recorded for all)."""
    arms = row.get("by_arm") or {}
    return set(arms) == {"stop"} and arms["stop"]["jobs"] == row.get("hp_jobs")


def tail_report(folders, setup):
    """Per cell where SETUP ran every measured HP job under stop: its HP p99 ratio beside corun's
    (None without such a cell)."""
    raws = candidate_raws(folders, setup)
    rows = []
    for c in sorted(matrix.analyze(raws)["cells"], key=lambda c: (c["hp"], c["load"], c["lp"])) if raws else []:
        cand, corun = c["setups"].get(setup), c["setups"].get("corun")
        if not cand or not corun or not cand.get("hp_jobs") or not stop_only(cand):
            continue
        mine, theirs = cand["hp_p99_ratio"], corun["hp_p99_ratio"]
        if mine["value"] is None or theirs["value"] is None:
            continue
        rows.append((f"{c['hp']} + {c['lp']}, {c['load']}", cand["hp_jobs"], mine["value"], theirs["value"],
                     mine.get("resamples_over"), theirs.get("resamples_over")))
    if not rows:
        return None
    target = matrix.TARGET_P99
    share = lambda v: "-" if v is None else f"{v:.2f}"
    lines = [f"| cell | {setup} HP jobs | {setup} p99 | corun p99 | above corun's | missed {target:.2f} alone | "
             f"resamples over {target:.2f}: {setup}, corun |", "|---|---|---|---|---|---|---|"]
    for name, jobs, mine, theirs, mine_over, theirs_over in rows:
        missed = ("both" if mine > target and theirs > target else setup if mine > target
                  else "corun" if theirs > target else "-")
        lines.append(f"| {name} | {jobs} | {mine:.3f} | {theirs:.3f} | {'yes' if mine > theirs else 'no'} | {missed} "
                     f"| {share(mine_over)}, {share(theirs_over)} |")
    above = sum(r[2] > r[3] for r in rows)
    p = sign_test(above, sum(r[2] != r[3] for r in rows))
    only_mine = sum(r[2] > target >= r[3] for r in rows)
    only_theirs = sum(r[3] > target >= r[2] for r in rows)
    lines.append(f"\n{setup} with stop in every measured HP job, {len(rows)} cell(s): p99 above corun's in {above} "
                 f"(sign test p {'-' if p is None else f'{p:.3f}'}); missed p99 <= {target:.2f} where corun met it "
                 f"in {only_mine}, corun where {setup} met it in {only_theirs}")
    met = [r[5] for r in rows if r[3] <= target and r[5] is not None]
    if met:
        lines.append(f"chance: corun's rounds resampled (invocations, then rounds) land over {target:.2f} in a share "
                     f"of the resamples; summed over the {len(met)} cell(s) where corun met it, {sum(met):.2f}: the "
                     f"misses expected, by chance alone, of a setup whose tail is corun's, rerun once. A lower bound: "
                     f"a resample holds only the slow jobs measured, never a rarer one (a share near 0.5 says a "
                     f"cell's p99 rests on one round)")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.stop_cost", description=__doc__.splitlines()[0])
    p.add_argument("--setups", default="guarded,arm:stop",
                   help="the setups whose stop rounds are set beside corun's (default guarded,arm:stop)")
    p.add_argument("--tails", action="store_true",
                   help="per cell where a setup ran every measured HP job under stop, its HP p99 beside corun's")
    p.add_argument("folders", nargs="+", metavar="FOLDER")
    args = p.parse_args(argv)
    setups = [s for s in args.setups.split(",") if s]
    if not setups or "corun" in setups:
        p.error(f"--setups {args.setups}: setups other than corun, separated by commas")
    try:
        if args.tails:
            tables = [t for t in (tail_report(args.folders, setup) for setup in setups) if t]
            if not tables:
                raise StopCostError(f"no cell where {' or '.join(setups)} ran every measured HP job under stop "
                                    f"beside corun in {', '.join(args.folders)}")
            print("\n\n".join(tables))
        else:
            print(report(args.folders, setups))
    except (StopCostError, raw_record.RawRecordError) as e:
        print(f"stop_cost: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
