"""Where an HP job's extra time under a guarded arm goes: per cell, setup and arm, the medians of the
HP's service time, of its launch span (first launch to the last one's return, host side), of the
CPU time the launching thread used in that span, and of the rest (the span's end to the job's end:
what the GPU still had to do, the sync and the job's end), pooled over the measured rounds; each
arm's medians also as a ratio to those of the stop jobs of the same setup, which ran in the same
segments at the same time. A longer launch span with the same CPU time: the thread waited
(preempted, or blocked in a launch); more CPU time too: the same work ran slower on the host; only
the rest longer: GPU side. Then, from runs with per-CPU host counters (since 2026-11-25), the HP's
and the LP's CPUs per setup: busy share, share in interrupt handlers, share stolen by the
hypervisor, interrupts per second. Last, per arm, its service-time ratio to stop per round and over
all rounds with a 95 % interval that resamples the folders (each one invocation) and then their
rounds (stats.ratio_two_stage): give every invocation of one configuration at once. Where the
workers recorded the CPU each job's launches ended on (since 67244a4, 2026-11-29), each setup's
service median per launching CPU, and which CPUs share a core with it (raw.json cpu_siblings).
    python3 -m bench.gpu.arm_split DIR [DIR ...]     (each with raw.json, raw.json.xz or raw.json.gz of a matrix run
                                                     whose workers recorded launch_ms, since 2026-11-25)
"""
import collections
import sys

from bench.gpu import raw_record
from bench.gpu.stats import nearest_rank, percentile_of, ratio_two_stage

FIELDS = ("svc_ms", "launch_ms", "launch_cpu_ms", "rest_ms")


def split(folders):
    """{(hp, lp, load): {(setup, arm): {field: [values]}}} over the measured rounds of every folder."""
    out = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    for folder in folders:
        for seg in raw_record.load_or_exit(folder, "arm_split")["segments"]:
            r = seg.get("hp_result") or {}
            if seg.get("round", -1) < 0 or not r.get("ok") or not r.get("launch_ms"):
                continue  # learning, LP-only or failed segments, and runs from before launch_ms
            arms = r.get("arms") or [None] * len(r["svc_ms"])
            for i, svc in enumerate(r["svc_ms"]):
                arm = arms[i] if i < len(arms) and arms[i] else "-"
                rows = out[(seg["hp"], seg["lp"], seg["load"])][(seg["setup"], arm)]
                rows["svc_ms"].append(svc)
                rows["launch_ms"].append(r["launch_ms"][i])
                rows["launch_cpu_ms"].append(r["launch_cpu_ms"][i])
                rows["rest_ms"].append(svc - r["launch_ms"][i])
    return out


def by_cpu(folders):
    """({(hp, lp, load): {setup: {cpu: [svc]}}} over the measured rounds, {cpu: [its core's CPUs]}):
    the HP's service time per CPU its launching thread ended its launches on."""
    out = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    siblings = {}
    for folder in folders:
        raw = raw_record.load_or_exit(folder, "arm_split")
        siblings.update({int(c): s for c, s in (raw.get("cpu_siblings") or {}).items()})
        for seg in raw["segments"]:
            r = seg.get("hp_result") or {}
            if seg.get("round", -1) < 0 or not r.get("ok") or not r.get("cpus"):
                continue
            for svc, cpu in zip(r["svc_ms"], r["cpus"]):
                if cpu is not None:
                    out[(seg["hp"], seg["lp"], seg["load"])][seg["setup"]][cpu].append(svc)
    return out, siblings


def cpu_line(setup, cpus, siblings):
    """One setup's service medians per launching CPU, the CPUs sharing each one's core named."""
    def shared(cpu):
        others = [c for c in siblings.get(cpu, []) if c != cpu]
        return f" (core shared with {','.join(map(str, others))})" if others else ""
    return f"  svc by CPU, {setup:<11} " + "  ".join(
        f"{cpu}: {nearest_rank(v, 50):.3f} ms x{len(v)}{shared(cpu)}" for cpu, v in sorted(cpus.items()))


def round_blocks(folders):
    """{(cell, setup, arm): [[{"arm": [svc], "stop": [svc]} per round] per folder]}: the blocks of
    the invocation-then-round bootstrap, one round's arm jobs with the stop jobs of its segment."""
    out = collections.defaultdict(lambda: [[] for _ in folders])
    for i, folder in enumerate(folders):
        for seg in raw_record.load_or_exit(folder, "arm_split")["segments"]:
            r = seg.get("hp_result") or {}
            if seg.get("round", -1) < 0 or not r.get("ok") or not r.get("arms"):
                continue
            by_arm = collections.defaultdict(list)
            for svc, arm in zip(r["svc_ms"], r["arms"]):
                if arm:
                    by_arm[arm].append(svc)
            for arm, jobs in by_arm.items():
                if arm != "stop" and by_arm.get("stop"):
                    key = ((seg["hp"], seg["lp"], seg["load"]), seg["setup"], arm)
                    out[key][i].append({"arm": jobs, "stop": by_arm["stop"]})
    return out


def arm_ratios(folders):
    """[(cell, setup, arm, per-round ratios, {"value", "ci"})]: the arm's median service time over
    the stop jobs' median, pooled over every round of every folder, with its two-stage interval."""
    rows = []
    for (cell, setup, arm), invocations in sorted(round_blocks(folders).items()):
        per_round = [nearest_rank(b["arm"], 50) / nearest_rank(b["stop"], 50) for inv in invocations for b in inv]
        rows.append((cell, setup, arm, per_round,
                     ratio_two_stage(invocations, percentile_of(lambda b: b["arm"], 50),
                                     percentile_of(lambda b: b["stop"], 50))))
    return rows


def host(folders):
    """{(hp, lp, load): {setup: {"hp": means, "lp": means}}}: the per-CPU host counters of each
    window (bench.gpu.host_counters), averaged over the HP's CPUs and over the LP's CPUs of the
    setup's group (--pin runs: raw.json's cpus) and over the measured rounds."""
    from bench.gpu.matrix import SETUP
    acc = collections.defaultdict(lambda: collections.defaultdict(lambda: collections.defaultdict(list)))
    for folder in folders:
        raw = raw_record.load_or_exit(folder, "arm_split")
        cpus = raw.get("cpus") or {}
        for seg in raw["segments"]:
            if seg.get("round", -1) < 0 or not seg.get("host") or seg["setup"] not in SETUP:
                continue
            group = SETUP[seg["setup"]][0]
            for role in ("hp", "lp"):
                for c in cpus.get(f"{group}_{role}", []):
                    if f"cpu{c}" in seg["host"]:
                        acc[(seg["hp"], seg["lp"], seg["load"])][seg["setup"]][role].append(seg["host"][f"cpu{c}"])
    out = collections.defaultdict(dict)
    for cell, setups in acc.items():
        for setup, roles in setups.items():
            out[cell][setup] = {role: mean_counters(v) for role, v in roles.items()}
    return out


def mean_counters(rows):
    """The mean of per-CPU counter dicts; interrupt sources (intr_top) averaged per source, a source
    missing from a CPU's top counting 0 there."""
    out = {k: sum(x[k] for x in rows) / len(rows) for k in rows[0] if k != "intr_top"}
    sources = {src for x in rows for src in x.get("intr_top", {})}
    if sources:
        out["intr_top"] = {src: sum(x.get("intr_top", {}).get(src, 0) for x in rows) / len(rows) for src in sources}
    return out


def medians(rows):
    return {f: nearest_rank(rows[f], 50) for f in FIELDS}


def main(argv):
    if not argv:
        raise SystemExit(__doc__.strip().splitlines()[-2].strip())
    cells, ratios = split(argv), arm_ratios(argv)
    cpus, siblings = by_cpu(argv)
    if not cells and not ratios:
        raise SystemExit("arm_split: no HP jobs with launch_ms or a guarded arm in " + " ".join(argv)
                         + ": a matrix run from before 2026-11-25 10:00 UTC has no launch_ms")
    for cell, groups in sorted(cells.items()):
        print(" + ".join(cell[:2]) + f", {cell[2]}   (medians, ms; x stop: the ratio to the stop jobs of the same setup)")
        for (setup, arm), rows in sorted(groups.items()):
            m = medians(rows)
            stop = groups.get((setup, "stop"))
            rel = ""
            if stop and arm != "stop":
                s = medians(stop)
                rel = "   x stop: " + " ".join(f"{f[:-3]} {m[f] / s[f]:.3f}" for f in FIELDS if s[f] > 0)
            print(f"  {setup:<18} {arm:<14} {len(rows['svc_ms']):>5} jobs  " +
                  "  ".join(f"{f[:-3]} {m[f]:.3f}" for f in FIELDS) + rel)
        for setup, per_cpu in sorted(cpus.get(cell, {}).items()):
            print(cpu_line(setup, per_cpu, siblings))
        for setup, roles in sorted(host(argv).get(cell, {}).items()):
            print(f"  host, {setup:<12} " + "   ".join(
                f"{role} CPUs: busy {v['busy']:.3f} irq {v['irq']:.4f} steal {v['steal']:.4f} "
                f"intr/s {v['intr_per_s']:.0f}" + (" (" + " ".join(
                    f"{src} {n:.0f}" for src, n in sorted(v["intr_top"].items(), key=lambda x: (-x[1], x[0]))[:4]) + ")"
                    if v.get("intr_top") else "") for role, v in sorted(roles.items())))
    for cell, setup, arm, per_round, r in ratios:
        ci = "[{:.3f}, {:.3f}]".format(*r["ci"]) if r["ci"] else "[no interval]"
        print(f"{' + '.join(cell[:2])}, {cell[2]}  {setup} {arm} svc x stop over {len(argv)} invocation(s), "
              f"{len(per_round)} rounds: {r['value']:.3f} {ci}; rounds " + " ".join(f"{x:.3f}" for x in per_round))


if __name__ == "__main__":
    main(sys.argv[1:])
