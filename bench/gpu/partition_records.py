"""The records of partition-bench and what they prove (pure Python: unit-tested on synthetic
records in tests/python/test_partition_records.py).

The LP side (partition-bench lp) writes, per launch, its first block start and last block end, and
with --record-blocks 1 every block's SM id (%smid) and start (%globaltimer, a GPU-wide clock). The
HP side (partition-bench hp) writes, per job, a marker at its first kernel and one after its last:
the job's window on the same clock.

The SM-id proof (sm_proof). A launch is a partition launch when its blocks ran on at most N SMs
(N = GPUYIELD_PARTITION_SMS). The LP kernels fill the whole GPU many times over (4 blocks an SM,
48 KB of shared memory each), so a launch on the whole GPU cannot fit on N SMs even while an HP job
holds most of the others: a launch on <= N SMs went to the partition. Then, with the LP's launches
in stream order:
  - every partition launch ran inside one fixed set of <= N SMs (else: "not one fixed set");
  - inside a job's window, once a partition launch has started, no launch on the whole GPU starts
    (else: a violation, with its time). Launches on the whole GPU that start inside a window
    before its first partition launch are the work queued before the job began: the hook lets
    that run (bounded by GPUYIELD_MODE) and orders the partition stream after it; they are
    counted and timed ("spill"), not violations;
  - blocks that start outside every window use about the whole GPU.
Nothing is proven when no partition block starts inside a window: that fails too.
"""
import bisect
import json
import os
from array import array
from collections import namedtuple

from .stats import nearest_rank

# One LP launch: its launch number, first and last block start (ns), its SMs, and per block the
# start (ns) and SM id (sequences in block order; empty when blocks were not recorded).
Kernel = namedtuple("Kernel", "launch_no t0 t1 sms starts smids")
# One LP launch's summary: launch number, first block start, last block end, blocks.
Launch = namedtuple("Launch", "launch_no first_start last_end blocks")


def read_lp(prefix):
    """partition-bench lp's files: (meta, launches sorted by launch number, kernels or None)."""
    meta = json.load(open(prefix + ".json"))
    raw = array("Q")
    with open(prefix + ".launches.bin", "rb") as f:
        raw.frombytes(f.read())
    slots = [Launch(*raw[i:i + 4]) for i in range(0, len(raw), 4)]
    launches = sorted((s for s in slots if s.last_end and s.blocks), key=lambda s: s.launch_no)
    kernels = None
    if meta.get("record_blocks"):
        starts, smids = array("Q"), array("I")
        with open(prefix + ".starts.bin", "rb") as f:
            starts.frombytes(f.read())
        with open(prefix + ".smids.bin", "rb") as f:
            smids.frombytes(f.read())
        kernels = kernels_from_blocks(slots, starts, smids, meta["blocks"])
    return meta, launches, kernels


def kernels_from_blocks(slots, starts, smids, blocks):
    """Kernel tuples from the per-block arrays (slot by slot); slots never run are skipped."""
    kernels = []
    for i, slot in enumerate(slots):
        if not slot.last_end:
            continue
        s, m = starts[i * blocks:(i + 1) * blocks], smids[i * blocks:(i + 1) * blocks]
        if len(s) < blocks or min(s) == 0:
            continue
        kernels.append(Kernel(slot.launch_no, min(s), max(s), frozenset(m), s, m))
    return kernels


def hp_windows(hp):
    """[(first marker, last marker)] of the HP's jobs, in time order."""
    return sorted(zip(hp["first_marker_ns"], hp["last_marker_ns"]))


def summary(values):
    """p50, p99 (nearest rank), mean and count of a list; None when empty."""
    if not values:
        return None
    return {"p50": round(nearest_rank(values, 50), 4), "p99": round(nearest_rank(values, 99), 4),
            "mean": round(sum(values) / len(values), 4), "n": len(values)}


def hp_durations(hp):
    """Per job: GPU time from the first marker to the last (ms), host begin->end (ms), begin wait (ms)."""
    return {"job_ms": [(b - a) / 1e6 for a, b in zip(hp["first_marker_ns"], hp["last_marker_ns"])],
            "host_ms": [(b - a) / 1e6 for a, b in zip(hp["begin_ns"], hp["end_ns"])],
            "wait_ms": [w / 1e6 for w in hp["wait_ns"]]}


def lp_throughput(launches, start_ns, end_ns):
    """LP launches and blocks completed per second between two GPU times."""
    span = (end_ns - start_ns) / 1e9
    done = [l for l in launches if start_ns <= l.last_end <= end_ns]
    if span <= 0:
        return None
    return {"launches_per_s": round(len(done) / span, 2), "blocks_per_s": round(sum(l.blocks for l in done) / span, 1),
            "span_s": round(span, 3)}


def lp_throughput_inside(launches, windows):
    """LP launches and blocks completed per second of HP job time (ends inside a job's window)."""
    total = sum(we - ws for ws, we in windows) / 1e9
    if total <= 0:
        return None
    starts = [w[0] for w in windows]
    done = []
    for l in launches:
        i = bisect.bisect_right(starts, l.last_end) - 1
        if i >= 0 and l.last_end <= windows[i][1]:
            done.append(l)
    return {"launches_per_s": round(len(done) / total, 2), "blocks_per_s": round(sum(l.blocks for l in done) / total, 1),
            "job_s": round(total, 4)}


def lp_alone_span(launches, settle_ns=200_000_000):
    """The span an LP-alone run is measured over: from settle_ns after its first launch to its last end."""
    if not launches:
        return None
    a = launches[0].first_start + settle_ns
    b = max(l.last_end for l in launches)
    return (a, b) if b > a else None


def sm_proof(kernels, windows, partition_sms, sm_total=None, max_listed=20):
    """The SM-id proof (see the module's text). Returns a dict; "ok" is the verdict."""
    kernels = sorted(kernels, key=lambda k: (k.t0, k.launch_no))
    windows = sorted(windows)
    wstarts = [w[0] for w in windows]

    def window_of(t):
        i = bisect.bisect_right(wstarts, t) - 1
        return i if i >= 0 and t <= windows[i][1] else None

    def overlaps_window(k):
        i = bisect.bisect_right(wstarts, k.t1) - 1  # the last window starting at or before t1
        return i >= 0 and windows[i][1] >= k.t0

    on_partition = lambda k: len(k.sms) <= partition_sms
    partition_set = set()
    for k in kernels:
        if on_partition(k):
            partition_set |= k.sms
    lo = min((k.t0 for k in kernels), default=0)
    hi = max((k.t1 for k in kernels), default=0)
    covered = [i for i, (ws, we) in enumerate(windows) if ws >= lo and we <= hi]

    violations = []
    inside = {"partition": 0, "spill": 0}
    inside_sms = {"partition": set(), "spill": set()}
    outside_blocks, outside_sms = 0, set()
    first_partition = {}  # window -> t0 of its first partition launch
    spill = {}  # window -> [launches on the whole GPU starting in it before the switch, last block start]
    for k in kernels:
        w = window_of(k.t0)
        if w is not None:
            if on_partition(k):
                first_partition.setdefault(w, k.t0)
            elif w in first_partition:
                violations.append({"what": f"a launch on {len(k.sms)} SMs started inside HP job {w} after the "
                                           f"switch to the partition", "time_ns": k.t0, "launch_no": k.launch_no,
                                   "job_window_ns": list(windows[w])})
            else:
                entry = spill.setdefault(w, [0, 0])
                entry[0] += 1
                entry[1] = max(entry[1], k.t1 - windows[w][0])
        if not overlaps_window(k):
            outside_blocks += len(k.starts)
            outside_sms |= k.sms
            continue
        kind = "partition" if on_partition(k) else "spill"
        for start, sm in zip(k.starts, k.smids):
            if window_of(start) is None:
                outside_blocks += 1
                outside_sms.add(sm)
            else:
                inside[kind] += 1
                inside_sms[kind].add(sm)
    if len(partition_set) > partition_sms:
        violations.append({"what": f"launches on <= {partition_sms} SMs used {len(partition_set)} distinct SMs in "
                                   f"all: not one fixed set", "sms": sorted(partition_set)})
    delays = [(first_partition[w] - windows[w][0]) / 1e3 for w in covered if w in first_partition]
    spills = [spill.get(w, [0, 0]) for w in covered]
    result = {
        "partition_sms": partition_sms, "kernels": len(kernels), "jobs": len(windows), "jobs_in_records": len(covered),
        "partition_launches": sum(1 for k in kernels if on_partition(k)),
        "partition_set": sorted(partition_set), "partition_set_size": len(partition_set),
        "blocks_inside_jobs": inside["partition"] + inside["spill"],
        "blocks_inside_jobs_on_partition": inside["partition"],
        "blocks_inside_jobs_queued_before": inside["spill"],
        "distinct_sms_inside_jobs_on_partition": len(inside_sms["partition"]),
        "distinct_sms_inside_jobs_queued_before": len(inside_sms["spill"]),
        "blocks_outside_jobs": outside_blocks, "distinct_sms_outside_jobs": len(outside_sms),
        "jobs_without_partition_launch": sum(1 for w in covered if w not in first_partition),
        "switch_delay_us": summary(delays),
        "queued_before_launches_per_job": {"max": max((s[0] for s in spills), default=0),
                                           "mean": round(sum(s[0] for s in spills) / len(spills), 3) if spills else 0},
        "queued_before_last_start_us_max": round(max((s[1] for s in spills), default=0) / 1e3, 1),
        "violation_count": len(violations), "violations": violations[:max_listed],
    }
    if sm_total:
        result["sm_total"] = sm_total
        result["outside_jobs_uses_whole_gpu"] = len(outside_sms) >= 0.9 * sm_total
    result["proven"] = inside["partition"] > 0
    result["ok"] = not violations and result["proven"]
    return result


def fmt(s):
    """p50/p99/n of a summary, or '-'."""
    return f"p50 {s['p50']} p99 {s['p99']} (n {s['n']})" if s else "-"


def proof_lines(name, r):
    """Human-readable lines for one proof result."""
    lines = [f"{name}: {r['jobs_in_records']} HP jobs within the LP's records, {r['kernels']} LP launches, "
             f"{r['partition_launches']} on <= {r['partition_sms']} SMs (set of {r['partition_set_size']}: "
             f"{r['partition_set']})",
             f"  blocks starting inside jobs: {r['blocks_inside_jobs_on_partition']} on the partition "
             f"({r['distinct_sms_inside_jobs_on_partition']} distinct SMs), {r['blocks_inside_jobs_queued_before']} "
             f"queued before the job ({r['distinct_sms_inside_jobs_queued_before']} SMs); outside jobs: "
             f"{r['blocks_outside_jobs']} blocks on {r['distinct_sms_outside_jobs']} SMs",
             f"  switch delay (job start -> first partition launch) {fmt(r['switch_delay_us'])} us; launches queued "
             f"before a job starting inside it: max {r['queued_before_launches_per_job']['max']}, last start "
             f"{r['queued_before_last_start_us_max']} us into the job; jobs without a partition launch "
             f"{r['jobs_without_partition_launch']}"]
    for v in r["violations"]:
        lines.append(f"  VIOLATION: {v['what']}" + (f" at {v['time_ns']} ns" if "time_ns" in v else ""))
    if not r["proven"]:
        lines.append("  NOT PROVEN: no LP block on the partition started inside an HP job")
    return lines


def sweep_table(runs, sizes):
    """The sweep's summary. runs: [{"setup", "round", "job_ms": [...], "lp": throughput or None,
    "partition_launches"}], setups hp_alone, lp_alone and partition_<N>. HP p50/p99 pooled over
    rounds against the pooled HP alone; LP throughput per round against the LP alone's mean."""
    by = {}
    for r in runs:
        by.setdefault(r["setup"], []).append(r)
    alone = [x for r in by.get("hp_alone", []) for x in r["job_ms"]]
    lp_alone = [r["lp"]["blocks_per_s"] for r in by.get("lp_alone", []) if r.get("lp")]
    lp_alone_mean = sum(lp_alone) / len(lp_alone) if lp_alone else None
    a50, a99 = (nearest_rank(alone, 50), nearest_rank(alone, 99)) if alone else (None, None)
    table = {"hp_alone": {"jobs": len(alone), "job_ms": summary(alone)},
             "lp_alone": {"blocks_per_s": round(lp_alone_mean, 1) if lp_alone_mean else None, "rounds": len(lp_alone)},
             "sizes": {}}
    for n in sizes:
        rs = by.get(f"partition_{n}", [])
        jobs = [x for r in rs for x in r["job_ms"]]
        thr = [r["lp"]["blocks_per_s"] for r in rs if r.get("lp")]
        inside = [r["lp_inside_jobs"]["blocks_per_s"] for r in rs if r.get("lp_inside_jobs")]
        row = {"jobs": len(jobs), "job_ms": summary(jobs),
               "round_p50_ms": [round(nearest_rank(r["job_ms"], 50), 4) for r in rs if r["job_ms"]],
               "partition_launches": [r.get("partition_launches") for r in rs],
               "lp_blocks_per_s": round(sum(thr) / len(thr), 1) if thr else None,
               "lp_blocks_per_s_inside_jobs": round(sum(inside) / len(inside), 1) if inside else None}
        if jobs and a50:
            row["hp_p50_ratio"] = round(nearest_rank(jobs, 50) / a50, 4)
            row["hp_p99_ratio"] = round(nearest_rank(jobs, 99) / a99, 4)
        if thr and lp_alone_mean:
            row["lp_ratio"] = round(row["lp_blocks_per_s"] / lp_alone_mean, 4)
        table["sizes"][str(n)] = row
    table["suggested_default"] = suggest(table["sizes"])
    return table


def suggest(sizes, p50_max=1.02, p99_max=1.05):
    """The size with the highest LP throughput among those that keep the HP within p50_max and
    p99_max of alone; else the one with the lowest HP p50 ratio. None without data."""
    # ties go to the smaller partition: the same LP throughput for less risk to the HP
    ok = [(row.get("lp_blocks_per_s") or 0, -int(n)) for n, row in sizes.items()
          if row.get("hp_p50_ratio") is not None and row["hp_p50_ratio"] <= p50_max and row["hp_p99_ratio"] <= p99_max]
    if ok:
        return {"sms": -max(ok)[1], "rule": f"highest LP throughput with HP p50 <= {p50_max} and p99 <= {p99_max} of alone"}
    rated = [(row["hp_p50_ratio"], int(n)) for n, row in sizes.items() if row.get("hp_p50_ratio") is not None]
    if rated:
        return {"sms": min(rated)[1], "rule": f"no size kept HP p50 <= {p50_max} and p99 <= {p99_max}: the lowest HP p50 ratio"}
    return None


def sweep_lines(table):
    a = table["hp_alone"]["job_ms"] or {}
    lines = [f"HP alone: {table['hp_alone']['jobs']} jobs, p50 {a.get('p50')} ms, p99 {a.get('p99')} ms; "
             f"LP alone {table['lp_alone']['blocks_per_s']} blocks/s",
             f"{'SMs':>4} {'jobs':>5} {'p50 ms':>8} {'p99 ms':>8} {'p50 x':>7} {'p99 x':>7} {'LP blk/s':>11} {'LP x':>6} {'in jobs':>11}  partition launches"]
    for n, row in table["sizes"].items():
        j = row["job_ms"] or {}
        lines.append(f"{n:>4} {row['jobs']:>5} {j.get('p50', '-')!s:>8} {j.get('p99', '-')!s:>8} "
                     f"{row.get('hp_p50_ratio', '-')!s:>7} {row.get('hp_p99_ratio', '-')!s:>7} "
                     f"{row.get('lp_blocks_per_s', '-')!s:>11} {row.get('lp_ratio', '-')!s:>6} "
                     f"{row.get('lp_blocks_per_s_inside_jobs') or '-'!s:>11}  {row['partition_launches']}")
    s = table.get("suggested_default")
    lines.append(f"suggested GPUYIELD_PARTITION_SMS default: {s['sms']} ({s['rule']})" if s else "no suggestion: no data")
    return lines


def remove_lp_files(prefix):
    for ext in (".json", ".launches.bin", ".starts.bin", ".smids.bin"):
        try:
            os.remove(prefix + ext)
        except FileNotFoundError:
            pass
