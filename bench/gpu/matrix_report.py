"""The cell table of a matrix record, in Markdown, from what the runs wrote: per cell the HP p50
ratio with its interval, the p99 ratio with its interval, the LP's throughput ratio and its share of the GPU time the
HP leaves, for each named setup; beside each guarded setup named (guarded, guarded_auto,
guarded_depth), the arm in force at the cell's end, why, and how many HP jobs of the cell (learning
and rounds) each arm other than stop ran.
Then per setup the issue's targets counted over the cells, the launch-bound HPs' LP target among
them, the cells where it missed the HP target that corun met in the same rounds (what making it the
default must not do), and how many HP jobs the p99s stand on (a nearest-rank p99 of 150 jobs is the second slowest:
one burst of queued jobs moves it). Give every folder of one record at once (each one matrix invocation: matrix.json, and
raw.json, raw.json.xz or raw.json.gz for the guarded states):
    python3 -m bench.gpu.matrix_report DIR [DIR ...] [--setups corun,guarded,guarded_auto]
A cell measured in two folders is listed from each (merge invocations with `matrix --merge`)."""
import argparse
import collections
import json
import os
import sys

from bench.gpu import matrix, raw_record

# Issue 26's LP target where the HP leaves most of the GPU idle inside its job (launch-bound):
# at the lower load the LP keeps this much of its alone throughput and of the GPU time left.
LAUNCH_BOUND_BUSY = 0.5  # an HP kind is launch-bound when the GPU is busy under this share of its job
# The issue names the FasterRCNN 720p HP among the launch-bound cells whatever its measured share
# (on the H200 its GPU was busy 0.51 of its job: bench/results/2026-12-02-h200-matrix-coverage/).
LAUNCH_BOUND_BY_NAME = ("frcnn720",)
TARGET_LP_ALONE, TARGET_LP_SHARE = 0.60, 0.8


class ReportError(Exception):
    pass


def load_matrix(folder):
    path = os.path.join(folder, "matrix.json")
    try:
        with open(path) as f:
            m = json.load(f)
    except (OSError, ValueError) as e:
        raise ReportError(f"cannot read {path}: {e} (give the folder of a matrix invocation)") from e
    if not isinstance(m, dict) or not isinstance(m.get("cells"), list):
        raise ReportError(f"{path} has no list of cells: not a matrix.json")
    return m


def launch_bound_kinds(m):
    """The HP kinds whose job keeps the GPU busy under LAUNCH_BOUND_BUSY of its service time, and
    those the issue names launch-bound (LAUNCH_BOUND_BY_NAME)."""
    out = set()
    for kind, v in (m.get("hp_kinds") or {}).items():
        if kind in LAUNCH_BOUND_BY_NAME:
            out.add(kind)
        elif v.get("svc_p50_ms") and v.get("busy_ms") is not None and v["busy_ms"] < LAUNCH_BOUND_BUSY * v["svc_p50_ms"]:
            out.add(kind)
    return out


GUARDED_SETUPS = ("guarded", "guarded_auto", "guarded_depth", "guarded@twin", "guarded_depth@twin")


def guarded_states(raw, setup="guarded"):
    """{(hp, lp, load): (in_force, reason, trying, {arm: jobs} for arms other than stop)}: the state
    in the status of each cell's last measured segment of SETUP (guarded, guarded_auto,
    guarded_depth), and the arms of the HP jobs of the cell's learning and rounds (the status counts
    jobs over the segment's life, and one guarded segment serves every cell of an HP kind). An HP
    that does not mark its jobs (guarded_auto) knows no job's arm: its cell's arms are then the
    guard's own counts in that last status less those in the last status of the cells before it
    (the guard counts over the segment's life), flagged so."""
    out, last_round, seen, before = {}, {}, set(), {}
    jobs = collections.defaultdict(collections.Counter)
    latest = collections.Counter()  # the guard's counts in the last status seen, in time order
    segs = [g for g in (raw or {}).get("segments", []) if g.get("setup") in (setup, f"{setup}_learn")]
    if all("wall_start" in g for g in segs):
        segs.sort(key=lambda g: g["wall_start"])
    for seg in segs:
        key = (seg["hp"], seg["lp"], seg["load"])
        before.setdefault(key, collections.Counter(latest))  # the counts when the cell began
        arms = (seg.get("hp_result") or {}).get("arms") or []
        seen.update([key] if any(arms) else [])
        jobs[key].update(a for a in arms if a and a != "stop")
        st = (seg.get("guarded_status") or {}).get("guarded")
        counts = collections.Counter({a: v.get("jobs", 0) for a, v in ((st or {}).get("arms") or {}).items()
                                      if isinstance(v, dict)})
        latest = counts or latest
        if seg["setup"] != setup or not st or seg.get("round", -1) < last_round.get(key, -2):
            continue
        last_round[key] = seg.get("round", -1)
        reason = st.get("reason")
        if st.get("on_confirmation"):  # promoted, measured again in force (since 2026-11-28)
            reason = f"{reason} (on confirmation)"
        counted = {a: n for a, n in (counts - before[key]).items() if a != "stop"}
        last = st.get("last_trial")  # how the last trial ended (status since 2026-12-01)
        if last and last.get("arm") and last.get("outcome"):
            reason = f"{reason}; last trial {last['arm']} {last['outcome']}"
            if last.get("lp_cycle_ratio"):
                reason += f" (LP x{last['lp_cycle_ratio']:.2f})"
        # the queue depth (guarded_depth): in force beside the arm, and a depth's trial beside an arm's
        depth = st.get("queue_depth") or {}
        in_force = f"{st.get('in_force')}" + (f" at {depth['in_force_us']} us" if depth.get("in_force_us") else "")
        trying = " and ".join(t for t in (st.get("trying"), depth.get("trying_us") and f"depth {depth['trying_us']} us")
                              if t) or None
        out[key] = (in_force, reason, trying, counted)
    return {k: (f, r, t, dict(jobs[k]) if k in seen else c, k not in seen) for k, (f, r, t, c) in out.items()}


def fmt_setup(row):
    if not row or not row.get("hp_jobs"):
        return "-"
    p50, p99 = row.get("hp_p50_ratio") or {}, row.get("hp_p99_ratio") or {}
    lp = (row.get("lp_throughput_ratio") or {}).get("value")
    ci = p50.get("ci")
    txt = "-" if p50.get("value") is None else f"{p50['value']:.2f}"
    if ci:
        txt += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    txt += " · " + ("-" if p99.get("value") is None else f"{p99['value']:.2f}")
    if p99.get("value") is not None and p99.get("ci"):
        txt += f" [{p99['ci'][0]:.2f}, {p99['ci'][1]:.2f}]"
    if lp is not None:
        share = row.get("lp_share_of_left")
        txt += f" · LP {lp:.2f}" + (f" ({share:.2f})" if share is not None else "")
    if not row.get("meets_hp_target", True):
        txt += " ✗HP"
    if not row.get("meets_lp_target", True):
        txt += " ✗LP"
        diff, ci = row.get("lp_minus_corun"), row.get("lp_minus_corun_ci")
        if diff is not None:
            txt += f" ({diff:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "") + " of corun's)"
    return txt


def lp_shown_under(row):
    """Whether the LP's difference to corun's is under the bound beyond its interval (the whole
    interval below -0.02, on enough paired rounds to say so), not only by its point."""
    ci = row.get("lp_minus_corun_ci")
    return (bool(ci) and ci[1] < -matrix.TARGET_LP_BELOW_CORUN
            and row.get("lp_paired_rounds", 0) >= matrix.LP_PAIRED_ROUNDS_MIN)


def fmt_state(state):
    if not state:
        return "-"
    in_force, reason, trying, jobs, guards_count = state
    txt = f"{in_force}, {reason}"
    if trying:
        txt += f", {trying} in trial"
    arms = ", ".join(f"{a.replace('partition:', '')}: {n}" for a, n in sorted(jobs.items(), key=lambda kv: -kv[1]))
    if not arms:
        return txt + "; no other arm"
    return txt + ("; the guard's counts: " if guards_count else "; ") + arms


def report(folders, setups):
    lines, summary = [], {s: {"hp": [0, 0], "lp": [0, 0], "lb": [0, 0, 0], "worse": [], "beside": 0, "under": []}
                          for s in setups}
    p99_jobs = []  # the HP jobs each p99 shown stands on
    # each guarded setup (guarded, guarded_auto, guarded_depth) named gets its state at the end
    stated = [s for s in setups if s in GUARDED_SETUPS]
    head = ("| cell | GPU time left | " + " | ".join(setups)
            + "".join(f" | {s} at the end (arm, reason; HP jobs per arm)" for s in stated) + " |")
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    # the lower load of the cells of every folder named: one invocation may hold only the higher
    # load's cells (a record split across device calls by load)
    matrices = [load_matrix(f) for f in folders]
    lower_load = min((c["load"] for m in matrices for c in m["cells"]),
                     key=lambda ld: matrix.LOADS.get(ld, float("inf")), default=None)
    for folder, m in zip(folders, matrices):
        try:
            raw = raw_record.load(folder) if stated else None
            states = {s: guarded_states(raw, s) for s in stated}
        except raw_record.RawRecordError:
            states = {}  # the table without the guarded states: matrix.json alone still gives the cells
        lb = launch_bound_kinds(m)
        for c in m["cells"]:
            key = (c["hp"], c["lp"], c["load"])
            left = c.get("gpu_time_left")
            row = f"| {c['hp']} + {c['lp']}, {c['load']} | " + ("-" if left is None else f"{left:.2f}")
            for s in setups:
                r = c["setups"].get(s)
                row += " | " + fmt_setup(r)
                if not r or not r.get("hp_jobs"):
                    continue
                if (r.get("hp_p99_ratio") or {}).get("value") is not None:
                    p99_jobs.append(r["hp_jobs"])
                t = summary[s]
                if "meets_hp_target" in r:
                    t["hp"][0] += r["meets_hp_target"]
                    t["hp"][1] += 1
                    corun = c["setups"].get("corun") or {}
                    if s != "corun" and "meets_hp_target" in corun:  # the default's test: no cell lost to corun
                        t["beside"] += 1
                        if corun["meets_hp_target"] and not r["meets_hp_target"]:
                            t["worse"].append(f"{c['hp']} + {c['lp']}, {c['load']}")
                if "meets_lp_target" in r:
                    t["lp"][0] += r["meets_lp_target"]
                    t["lp"][1] += 1
                    if lp_shown_under(r):
                        t["under"].append(f"{c['hp']} + {c['lp']}, {c['load']}")
                lp = (r.get("lp_throughput_ratio") or {}).get("value")
                if c["hp"] in lb and c["load"] == lower_load and lp is not None:
                    t["lb"][0] += lp >= TARGET_LP_ALONE
                    t["lb"][1] += (r.get("lp_share_of_left") or 0) >= TARGET_LP_SHARE
                    t["lb"][2] += 1
            for s in stated:
                row += " | " + fmt_state(states.get(s, {}).get(key))
            lines.append(row + " |")
    lines.append("")
    for s in setups:
        t = summary[s]
        if not t["hp"][1]:
            continue
        line = f"- {s}: HP target in {t['hp'][0]} of {t['hp'][1]} cells"
        if t["lp"][1]:
            line += f"; LP within {matrix.TARGET_LP_BELOW_CORUN:.2f} of corun's or above in {t['lp'][0]} of {t['lp'][1]}"
            line += (f" (under it beyond the paired interval in {len(t['under'])} of {t['lp'][1]}"
                     + (f": {'; '.join(t['under'])})" if t["under"] else ")"))
        if t["lb"][2]:
            line += (f"; launch-bound HPs at the lower load: LP >= {TARGET_LP_ALONE:.2f} of alone in {t['lb'][0]} of "
                     f"{t['lb'][2]}, >= {TARGET_LP_SHARE:.1f} of the time left in {t['lb'][1]} of {t['lb'][2]}")
        if t["beside"]:
            line += (f"; missed the HP target where corun met it in {len(t['worse'])} of {t['beside']}"
                     + (f" ({'; '.join(t['worse'])})" if t["worse"] else ""))
        lines.append(line)
    lines += kind_lines(matrices, setups)
    if p99_jobs:
        lo, hi = min(p99_jobs), max(p99_jobs)
        first, last = slowest_rank(lo), slowest_rank(hi)
        which = ordinal(first) + (f" to {ordinal(last)}" if last != first else "")
        lines.append(f"- each p99 stands on {lo}" + (f"-{hi}" if hi != lo else "") + " HP jobs of a setup (nearest rank: "
                     f"the {which} slowest of them)".replace("the 1st slowest", "the slowest"))
    return "\n".join(lines)


def kind_lines(matrices, setups):
    """Per cell of an HP of several kinds of job, each named setup's ratios per kind (matrix.json's
    by_kind): the pooled p50 is the common kind's and the p99 the rare one's, so the table alone
    cannot say which kind a setup slowed."""
    out = []
    for m in matrices:
        shares = {k: v.get("variant_shares") for k, v in (m.get("hp_kinds") or {}).items()}
        for c in m["cells"]:
            parts, kind_shares = [], shares.get(c["hp"]) or []
            for s in setups:
                kinds = (c["setups"].get(s) or {}).get("by_kind")
                if not kinds:
                    continue
                each = []
                for k, r in sorted(kinds.items(), key=lambda kv: int(kv[0])):
                    share = kind_shares[int(k)] if int(k) < len(kind_shares) else None
                    name = f"kind {k}" + (f" ({share:.0%} of jobs)" if share is not None else "")
                    each.append(f"{name}, {r['hp_jobs']} jobs: " + fmt_setup(r))
                parts.append(f"{s}: " + "; ".join(each))
            if parts:
                out.append(f"- by kind of job, {c['hp']} + {c['lp']}, {c['load']}: " + " | ".join(parts))
    return out


def slowest_rank(n):
    """Which slowest job a nearest-rank p99 of n jobs is (1: the slowest)."""
    return n - -(-99 * n // 100) + 1


def ordinal(k):
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.matrix_report", description=__doc__.split("\n")[0])
    p.add_argument("folders", nargs="+", metavar="DIR")
    p.add_argument("--setups", default="corun,guarded", help="comma-separated setups, one column each")
    args = p.parse_args(argv)
    setups = [s for s in args.setups.split(",") if s]
    if not setups:
        p.error("--setups: name at least one setup (e.g. corun,guarded)")
    try:
        print(report(args.folders, setups))
    except ReportError as e:
        print(f"matrix_report: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
