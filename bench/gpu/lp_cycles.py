"""What each guarded arm gives the LP over a whole cycle: the HP's job under that arm and the gap
after it, until the next job starts. Guarded's rule compares the LP's partition launches during
the HP's jobs only, so work the LP queued on a few SMs that outlasts the job, or a slower start
after it, is never charged to the arm; here it is. Per cell, setup and arm (a setup without arms,
corun, counts as one arm "-"), from the segments whose LP recorded its units' ends (matrix runs
since 2026-11-25 11:30 UTC): the cycles, and the LP's units per second during the jobs, in the gaps
and over the cycles; then each arm's cycle rate over that of the stop jobs of the same segments,
with a 95 % interval that resamples the folders (invocations), then their segments.
    python3 -m bench.gpu.lp_cycles DIR [DIR ...]      (each with raw.json or raw.json.gz)
Learning segments (round -1) hold most of the cycles; they are shown apart from the rounds.
"""
import collections
import sys

from bench.gpu.matrix_worker import units_inside
from bench.gpu.service_tails import load
from bench.gpu.stats import rate_of, ratio_two_stage


def cycles(seg):
    """[(arm, job_ms, gap_ms, units_in_job, units_in_gap)] of one segment: job i from its start to
    its end, its gap to the next job's start (the last job has no next: left out)."""
    hp, lp = seg.get("hp_result") or {}, seg.get("lp_result") or {}
    starts, svc, done = hp.get("start_ms"), hp.get("svc_ms"), lp.get("done_ms")
    if not (hp.get("ok") and lp.get("ok") and starts and done is not None):
        return []
    arms = hp.get("arms") or []
    first = lp.get("first_ms", 0.0)
    out = []
    for i in range(len(starts) - 1):
        begin, end, nxt = starts[i], starts[i] + svc[i], starts[i + 1]
        end = min(end, nxt)
        arm = (arms[i] if i < len(arms) else None) or "-"
        out.append((arm, end - begin, nxt - end, units_inside(first, done, begin, end),
                    units_inside(first, done, end, nxt)))
    return out


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
    for (phase, cell, setup, arm), invocations in sorted(table.items()):
        if (phase, cell) != last:
            print(f"{' + '.join(cell[:2])}, {cell[2]}, {phase}   (LP units per second)")
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


if __name__ == "__main__":
    main(sys.argv[1:])
