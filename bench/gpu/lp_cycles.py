"""What each guarded arm gives the LP over a whole cycle: the HP's job under that arm and the gap
after it, until the next job starts, in the LP's own units (iterations): the check on the guard's
rule, which since 2026-11-25 12:30 UTC compares the LP's kernel launches over the same cycles (and
before compared its partition launches during the jobs only, so that work queued on a few SMs
that outlasted the job was never charged to the arm). Per cell, setup and arm (a setup without arms,
corun, counts as one arm "-"), from the segments whose LP recorded its units' ends (matrix runs
since 2026-11-25 11:30 UTC): the cycles, and the LP's units per second during the jobs, in the gaps
and over the cycles; then each arm's cycle rate over that of the stop jobs of the same segments,
with a 95 % interval that resamples the folders (invocations), then their segments.
    python3 -m bench.gpu.lp_cycles DIR [DIR ...]      (each with raw.json, raw.json.xz or raw.json.gz)
Learning segments (round -1) hold most of the cycles; they are shown apart from the rounds.
Where the rounds have an LP alone, a block says where each setup's LP loses against it: its rate in
the HP's gaps and during its jobs over alone's, and its loss over the cycles split into the two.
A unit's work is spread evenly over its duration: where units last longer than a cycle (the
FasterRCNN and ResNet-50 LPs beside a 4 ms HP), an arm's share is smeared over the cycles around
it, its difference from stop understated; the cell's header says so.
Where the HP worker recorded the LP launches the rule read at each begin (matrix runs since
8e4bcfb), a second table gives the rule's own measure per arm, exactly as it charged it, and split by
the previous job's arm: "after itself" rows compare runs of one arm with runs of stop, free of what
one cycle carries into the next. The same split in units is printed per cell and setup ("units
per second by the arm before"): on the H100 the GEMM LP completed 4-10 % more units in a stop cycle
that followed a 64- or 120-SM cycle than in one that followed stop, none more after 16 SMs (the
partition's work finishing late,
`bench/results/2026-11-25-lp-cycles/`); which way launches carry over is what the launch table is for.
Last, where a depth ran (guarded_depth), the rule's own launches by the depth each gap ran at:
over the cycles of the jobs that ran stop, each charged to the depth of the gap after its job (the
next job's: the rule publishes it at a job's begin for the gap before the next), against those
whose gap ran at the lower processes' own bound, with halves (first and second half of the
phase's cycles) for a feel of the noise. The per-arm tables above charge a cycle to its own job's
label, whose depth is the gap *before* it, so they mix the depths' gaps.
"""
import bisect
import collections
import functools
import sys

from bench.gpu.matrix_worker import units_inside
from bench.gpu import raw_record
from bench.gpu.stats import rate_of, ratio_two_stage


@functools.lru_cache(maxsize=None)
def load(folder):
    return raw_record.load_or_exit(folder, "lp_cycles")  # a folder's raw.json is read once (tens of MB)


def units_in_window(first, done, lo, hi):
    """units_inside over the units that can overlap [lo, hi) only (done is in order: a bisection,
    not a pass over every unit for every cycle)."""
    i = bisect.bisect_left(done, lo)
    j = bisect.bisect_left(done, hi)
    return units_inside(done[i - 1] if i > 0 else first, done[i:j + 1], lo, hi)


def cycles(seg):
    """[(arm, job_ms, gap_ms, units_in_job, units_in_gap)] of one segment: job i from its start to
    its end, its gap to the next job's start (the last job has no next: left out)."""
    hp, lp = seg.get("hp_result") or {}, seg.get("lp_result") or {}
    starts, svc, done = hp.get("start_ms"), hp.get("svc_ms"), lp.get("done_ms")
    if not (hp.get("ok") and lp.get("ok") and starts and done is not None):
        return []
    arms = hp.get("arms") or []
    first = lp.get("first_ms", 0.0)
    inside = units_in_window if all(a <= b for a, b in zip(done, done[1:])) else units_inside
    out = []
    for i in range(len(starts) - 1):
        begin, end, nxt = starts[i], starts[i] + svc[i], starts[i + 1]
        end = min(end, nxt)
        arm = (arms[i] if i < len(arms) else None) or "-"
        out.append((arm, end - begin, nxt - end, inside(first, done, begin, end), inside(first, done, end, nxt)))
    return out


def unit_cycles(seg):
    """cycles(seg) as [(arm, previous job's arm, cycle_ms, units)] ("-" before the first)."""
    rows = cycles(seg)
    return [(r[0], rows[i - 1][0] if i else "-", r[1] + r[2], r[3] + r[4]) for i, r in enumerate(rows)]


def launch_cycles(seg):
    """[(arm, previous job's arm, cycle_ms, launches)] of one segment from the LP launches the rule
    read at each job's begin (the HP worker's "lp_launches", matrix runs since 8e4bcfb):
    job i's cycle runs from its start to job i+1's, its launches the difference of the two counts,
    exactly what the rule charged to job i's arm (begin to begin: the start, taken just before the
    begin, stands for it). The first job has no previous arm ("-")."""
    hp = seg.get("hp_result") or {}
    starts, counts, arms = hp.get("start_ms") or [], hp.get("lp_launches") or [], hp.get("arms") or []
    out = []
    for i in range(min(len(starts), len(counts), len(arms)) - 1):
        if counts[i] is None or counts[i + 1] is None or starts[i + 1] <= starts[i]:
            continue
        prev = (arms[i - 1] or "-") if i > 0 else "-"
        out.append((arms[i] or "-", prev, starts[i + 1] - starts[i], counts[i + 1] - counts[i]))
    return out


def depth_of(label):
    """The depth in a job's label ("stop@2000us" -> "2000us"); "own" for none (the lower
    processes' own bound: a stop sample, or no depth in force)."""
    return label.split("@", 1)[1] if "@" in label else "own"


def gap_depth_launches(seg):
    """[(gap depth, cycle_ms, launches, index)] over the launch cycles (launch_cycles) whose job ran
    stop, each with the depth of the gap after that job: the next job's label's."""
    arms = (seg.get("hp_result") or {}).get("arms") or []
    out = []
    for i, (arm, _prev, ms, launches) in enumerate(launch_cycles(seg)):
        if arm.split("@", 1)[0] == "stop" and i + 1 < len(arms) and arms[i + 1]:
            out.append((depth_of(arms[i + 1]), ms, launches, i))
    return out


def by_gap_depth(folders):
    """{(phase, cell, setup): {depth: [[launches, ms] of the first half, of the second]}} over
    gap_depth_launches of every segment, the halves by a cycle's place in its segment."""
    out = collections.defaultdict(lambda: collections.defaultdict(lambda: [[0.0, 0.0], [0.0, 0.0]]))
    for folder in folders:
        for seg in load(folder)["segments"]:
            rows = gap_depth_launches(seg)
            if not rows or all(d == "own" for d, *_ in rows):
                continue
            key = ("learning" if seg.get("round", -1) < 0 else "rounds", (seg["hp"], seg["lp"], seg["load"]),
                   seg["setup"])
            middle = (rows[-1][3] + 1) / 2
            for depth, ms, launches, i in rows:
                half = out[key][depth][0 if i < middle else 1]
                half[0] += launches
                half[1] += ms
    return out


def by_previous(folders, per_segment):
    """{(phase, cell, setup): {(arm, before): [work, ms, cycles]}} over per_segment(seg)'s cycles,
    before "after stop", "after itself", "after another" or "first": what one cycle carries into
    the next lands on the next job's arm, so an arm's rate differs with the arm before it."""
    out = collections.defaultdict(lambda: collections.defaultdict(lambda: [0.0, 0.0, 0]))
    for folder in folders:
        for seg in load(folder)["segments"]:
            key = ("learning" if seg.get("round", -1) < 0 else "rounds", (seg["hp"], seg["lp"], seg["load"]),
                   seg["setup"])
            for arm, prev, ms, work in per_segment(seg):
                before = ("first" if prev == "-" else "after itself" if prev == arm else
                          "after stop" if prev == "stop" else "after another")
                acc = out[key][(arm, before)]
                acc[0] += work
                acc[1] += ms
                acc[2] += 1
    return out


def rate_by(rows, arm, befores):
    """An arm's work per second over the cycles of the given befores, and their count."""
    picked = [v for (a, b), v in rows.items() if a == arm and b in befores]
    return per_s(sum(v[0] for v in picked), sum(v[1] for v in picked)), sum(v[2] for v in picked)


def by_arm(folders):
    """{(phase, cell, setup, arm): [[block per segment] per folder]}, a block {"job_ms", "gap_ms",
    "job_units", "gap_units", "n"}; phase "learning" or "rounds"."""
    out = collections.defaultdict(lambda: [[] for _ in folders])
    for i, folder in enumerate(folders):
        for seg in load(folder)["segments"]:
            rows = cycles(seg)
            groups = collections.defaultdict(lambda: {"job_ms": 0.0, "gap_ms": 0.0, "job_units": 0.0,
                                                      "gap_units": 0.0, "n": 0})
            for arm, job_ms, gap_ms, ju, gu in rows:
                g = groups[arm]
                g["job_ms"] += job_ms
                g["gap_ms"] += gap_ms
                g["job_units"] += ju
                g["gap_units"] += gu
                g["n"] += 1
            phase = "learning" if seg.get("round", -1) < 0 else "rounds"
            cell = (seg["hp"], seg["lp"], seg["load"])
            for arm, g in groups.items():
                g["stop"] = groups.get("stop")  # the same segment's stop cycles: the ratio's denominator
                out[(phase, cell, seg["setup"], arm)][i].append(g)
    return out


def alone_rates(folders):
    """{cell: the LP's units per second alone (lp_alone, its counted units over its counted
    seconds, pooled over the rounds of every folder)}."""
    sums = collections.defaultdict(lambda: [0.0, 0.0])
    for folder in folders:
        for seg in load(folder)["segments"]:
            lp = seg.get("lp_result") or {}
            if seg.get("setup") == "lp_alone" and lp.get("ok") and lp.get("counted_secs"):
                acc = sums[(seg["hp"], seg["lp"], seg["load"])]
                acc[0] += lp["counted"]
                acc[1] += lp["counted_secs"]
    return {cell: u / secs for cell, (u, secs) in sums.items() if secs > 0}


def loss_split(table, alone):
    """[(cell, setup, in_jobs_share, gaps_of_alone, jobs_of_alone, loss_gaps, loss_jobs)] over the
    rounds' cycles of every setup (all its arms pooled) whose cell has an LP alone: the LP's loss
    against alone over the cycles, 1 - cycle rate / alone, is loss_gaps + loss_jobs, each the share
    of the cycles' time in gaps (jobs) times 1 - the LP's rate there over alone."""
    pooled = collections.defaultdict(lambda: {"job_ms": 0.0, "gap_ms": 0.0, "job_units": 0.0, "gap_units": 0.0})
    for (phase, cell, setup, _arm), invocations in table.items():
        if phase != "rounds" or cell not in alone:
            continue
        acc = pooled[(cell, setup)]
        for block in (b for inv in invocations for b in inv):
            for k in acc:
                acc[k] += block[k]
    out = []
    for (cell, setup), t in sorted(pooled.items()):
        total = t["job_ms"] + t["gap_ms"]
        if total <= 0:
            continue
        share = t["job_ms"] / total
        gaps = per_s(t["gap_units"], t["gap_ms"]) / alone[cell]
        jobs = per_s(t["job_units"], t["job_ms"]) / alone[cell]
        out.append((cell, setup, share, gaps, jobs, (1 - share) * (1 - gaps), share * (1 - jobs)))
    return out


def unit_and_cycle_ms(folders, cell):
    """The median LP unit and the median cycle (job + gap) of a cell, in ms, over its segments."""
    units, cyc = [], []
    for folder in folders:
        for seg in load(folder)["segments"]:
            if (seg["hp"], seg["lp"], seg["load"]) != cell:
                continue
            done = (seg.get("lp_result") or {}).get("done_ms") or []
            starts = (seg.get("hp_result") or {}).get("start_ms") or []
            units += [b - a for a, b in zip(done, done[1:]) if b > a]
            cyc += [b - a for a, b in zip(starts, starts[1:])]
    med = lambda v: sorted(v)[len(v) // 2] if v else 0.0  # noqa: E731
    return med(units), med(cyc)


def per_s(units, ms):
    return units * 1e3 / ms if ms > 0 else 0.0


def main(argv):
    if not argv:
        raise SystemExit(__doc__.strip().splitlines()[-2].strip())
    table = by_arm(argv)
    if not table:
        raise SystemExit("lp_cycles: no segment in " + " ".join(argv) + " has the LP's unit times (done_ms) and the "
                         "HP's start times (start_ms): a matrix run from before 2026-11-25 11:30 UTC has none")
    cycle_rate = rate_of(lambda b: (b["job_units"] + b["gap_units"], (b["job_ms"] + b["gap_ms"]) / 1e3))
    stop_rate = rate_of(lambda b: (b["stop"]["job_units"] + b["stop"]["gap_units"],
                                   (b["stop"]["job_ms"] + b["stop"]["gap_ms"]) / 1e3))
    last = None
    spans = {cell: unit_and_cycle_ms(argv, cell) for cell in {key[1] for key in table}}
    for (phase, cell, setup, arm), invocations in sorted(table.items()):
        if (phase, cell) != last:
            unit_ms, cycle_ms = spans[cell]
            note = (f"; units of {unit_ms:.0f} ms span cycles of {cycle_ms:.0f} ms: differences understated"
                    if unit_ms > cycle_ms else "")
            print(f"{' + '.join(cell[:2])}, {cell[2]}, {phase}   (LP units per second{note})")
            last = (phase, cell)
        blocks = [b for inv in invocations for b in inv]
        t = {k: sum(b[k] for b in blocks) for k in ("job_ms", "gap_ms", "job_units", "gap_units", "n")}
        line = (f"  {setup:<18} {arm:<16} {t['n']:>6} cycles  in jobs {per_s(t['job_units'], t['job_ms']):8.1f}  "
                f"in gaps {per_s(t['gap_units'], t['gap_ms']):8.1f}  "
                f"cycle {per_s(t['job_units'] + t['gap_units'], t['job_ms'] + t['gap_ms']):8.1f}")
        if arm != "stop" and any(b["stop"] for b in blocks):  # the segments with stop cycles beside it
            r = ratio_two_stage([[b for b in inv if b["stop"]] for inv in invocations], cycle_rate, stop_rate)
            ci = "[{:.3f}, {:.3f}]".format(*r["ci"]) if r["ci"] else "[no interval]"
            line += f"   cycle x stop {r['value']:.3f} {ci}"
        print(line)
    split = loss_split(table, alone_rates(argv))
    if split:
        print("where the LP's loss goes, rounds (its rate in the HP's gaps and jobs over alone's; the loss "
              "1 - cycle rate / alone split into the gaps' part and the jobs' part)")
    for cell, setup, share, gaps, jobs, loss_gaps, loss_jobs in split:
        print(f"  {' + '.join(cell[:2])}, {cell[2]}  {setup:<30} in jobs {share:.2f} of the time  gaps {gaps:.2f} "
              f"jobs {jobs:.2f} of alone  loss {loss_gaps + loss_jobs:.2f} = gaps {loss_gaps:.2f} + jobs {loss_jobs:.2f}")
    for (phase, cell, setup), rows in sorted(by_previous(argv, unit_cycles).items()):
        if all(arm in ("stop", "-") for arm, _ in rows):
            continue
        parts = [f"{arm} {before} {per_s(u, ms):.1f} ({n})" for (arm, before), (u, ms, n) in sorted(rows.items())
                 if before != "first"]
        print(f"{' + '.join(cell[:2])}, {cell[2]}, {phase}, {setup}: units per second by the arm before   " +
              "  ".join(parts))
    last, everything = None, ("first", "after itself", "after stop", "after another")
    for (phase, cell, setup), rows in sorted(by_previous(argv, launch_cycles).items()):
        if (phase, cell) != last:
            print(f"{' + '.join(cell[:2])}, {cell[2]}, {phase}   (LP launches per second over cycles, the rule's "
                  f"own count; after stop / after itself: cycles whose previous job ran stop / the same arm)")
            last = (phase, cell)
        stop_all, _ = rate_by(rows, "stop", everything)
        stop_runs, stop_n = rate_by(rows, "stop", ("after itself",))
        for arm in sorted({a for a, _ in rows}):
            all_rate, n = rate_by(rows, arm, everything)
            runs, nr = rate_by(rows, arm, ("after itself",))
            after_stop, ns = (runs, nr) if arm == "stop" else rate_by(rows, arm, ("after stop",))
            line = (f"  {setup:<18} {arm:<16} {n:>6} cycles  all {all_rate:9.1f}  after stop {after_stop:9.1f} ({ns})  "
                    f"after itself {runs:9.1f} ({nr})")
            if arm != "stop" and stop_all > 0:
                line += f"   x stop {all_rate / stop_all:.3f}"
                if stop_n and nr:
                    line += f", runs of itself x runs of stop {runs / stop_runs:.3f}"
            print(line)
    for (phase, cell, setup), depths in sorted(by_gap_depth(argv).items()):
        own = depths.get("own")
        if not own:
            continue
        own_rate = per_s(own[0][0] + own[1][0], own[0][1] + own[1][1])
        parts = []
        for depth in sorted((d for d in depths if d != "own"), key=lambda d: int(d.rstrip("us") or 0)):
            halves = depths[depth]
            rate = per_s(halves[0][0] + halves[1][0], halves[0][1] + halves[1][1])
            by_half = [per_s(*h) / per_s(*o) for h, o in zip(halves, own) if h[1] > 0 and o[1] > 0 and o[0] > 0]
            parts.append(f"{depth} x{rate / own_rate:.3f} (halves " + " ".join(f"{x:.3f}" for x in by_half) + ")"
                         if own_rate > 0 else f"{depth} (no own-depth launches)")
        print(f"{' + '.join(cell[:2])}, {cell[2]}, {phase}, {setup}: LP launches per second over stop jobs' cycles "
              f"by the depth of the gap after the job, x the own bound's ({own_rate:.1f}/s)   " + "  ".join(parts))


if __name__ == "__main__":
    main(sys.argv[1:])
