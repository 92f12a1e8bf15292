"""Why a setup of the partition verdict misses its targets, from an Nsight Systems export (issue 18:
"where a pair misses, the record says by how much and why (Nsight)").

The export is of one partition_verdict invocation run under nsys (run_all.sh stage
partition-explain): its workers name their jobs in NVTX ranges "<group>_<role> job N" (group plain,
mps, corun, partition; role hp or lp), so each process's kernels belong to one group and role. The
plain group's HP and LP give the alone figures (run with setups hp_alone,lp_alone and no
nocontrol, so that plain processes ran only alone). Per contention group, over its HP jobs:

  hp_job_ms_p50 / hp_alone_job_ms_p50       the job, beside the LP and alone
  hp_kernel_ms_per_job_p50 (and alone)      the HP's own kernel time per job (sum of durations)
  hp_kernel_time_ratio                      its kernels against the same kernels alone: per kernel
                                            name, count x median here over count x median alone
  hp_growth_in_kernels                      how much of the job's growth (p50 here - p50 alone)
                                            its kernels' growth covers; the rest is time the HP's
                                            GPU stood idle (launch, host or gating delays)
  lp_kernels_in_job_p50, lp_gpu_busy_in_job_p50
                                            the LP's kernels inside a job, and the share of the job
                                            its kernels kept running (union of their intervals)
  lp_kernel_time_ratio_in_job / _between_jobs
                                            the LP's kernels against the same kernels alone, inside
                                            jobs (on the partition's SMs) and between them
  lp_launch_calls_in_job_p50                share of the job the LP's host spent inside launch
                                            calls (the hook's waits happen there)
  lp_streams_in_job / _between_jobs         stream ids its kernels ran on (the partition stream is
                                            its own)
Where a name has no alone kernels it is left out; name_coverage says what share of the kernel time
was compared. One JSON object per group.

  python3 -m bench.gpu.partition_explain REPORT.sqlite [--out explain.json]
"""
import argparse
import json
import os
import re
import sqlite3
import statistics
import sys

from .intervals import covered, merged

JOB = re.compile(r"^(\w+)_(hp|lp) job \d+$")


def median(xs):
    return statistics.median(xs) if xs else None


def read(db_path):
    """{(group, role): {"jobs": [(s, e)], "kernels": [(s, e, name, stream)], "launches": [(s, e)]}}"""
    if not os.path.isfile(db_path):
        raise ValueError(f"{db_path}: no such file (the SQLite export of an nsys report)")
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for need in ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_KERNEL", "StringIds"):
        if need not in tables:
            raise ValueError(f"{db_path}: no {need} table: not an nsys export with CUDA and NVTX traced "
                             "(nsys profile -t cuda,nvtx, then nsys export --type sqlite)")
    strings = dict(db.execute("SELECT id, value FROM StringIds"))
    role_of_pid, out = {}, {}
    for start, end, text, text_id, tid in db.execute(
            "SELECT start, end, text, textId, globalTid FROM NVTX_EVENTS WHERE end IS NOT NULL"):
        m = JOB.match(text if text is not None else strings.get(text_id, ""))
        if not m:
            continue
        key = (m.group(1), m.group(2))
        role_of_pid[(tid >> 24) & 0xFFFFFF] = key
        out.setdefault(key, {"jobs": [], "kernels": [], "launches": []})["jobs"].append((start, end))
    for start, end, gpid, short, stream in db.execute(
            "SELECT start, end, globalPid, shortName, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        key = role_of_pid.get((gpid >> 24) & 0xFFFFFF)
        if key:
            out[key]["kernels"].append((start, end, strings.get(short, str(short)), stream))
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        launch_ids = {i for i, v in strings.items() if "Launch" in v}
        for start, end, tid, name in db.execute(
                "SELECT start, end, globalTid, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
            key = role_of_pid.get((tid >> 24) & 0xFFFFFF)
            if key and name in launch_ids:
                out[key]["launches"].append((start, end))
    db.close()
    for v in out.values():
        v["jobs"].sort()
        v["kernels"].sort()
    return out


def medians_by_name(kernels):
    by = {}
    for s, e, name, _ in kernels:
        by.setdefault(name, []).append(e - s)
    return {n: statistics.median(d) for n, d in by.items()}


def time_ratio(kernels, alone_medians):
    """(ratio, coverage): per name, count x median here over count x median alone; coverage is the
    share of the kernels' time whose names have alone kernels."""
    by = {}
    for s, e, name, _ in kernels:
        by.setdefault(name, []).append(e - s)
    num = den = compared = total = 0
    for name, durations in by.items():
        total += sum(durations)
        if name in alone_medians and alone_medians[name] > 0:
            num += len(durations) * statistics.median(durations)
            den += len(durations) * alone_medians[name]
            compared += sum(durations)
    return (round(num / den, 4) if den else None), (round(compared / total, 4) if total else None)


def kernel_ms_per_job(jobs, kernels):
    """Per job, the sum of the durations (ms) of the kernels that start inside it."""
    out, k = [], 0
    for s, e in jobs:
        while k < len(kernels) and kernels[k][0] < s:
            k += 1
        j, total = k, 0
        while j < len(kernels) and kernels[j][0] < e:
            total += kernels[j][1] - kernels[j][0]
            j += 1
        out.append(total / 1e6)
    return out


def inside(kernels, jobs):
    """Kernels that start inside a job, and the others."""
    ins, outs, j = [], [], 0
    for k in kernels:
        while j < len(jobs) and jobs[j][1] <= k[0]:
            j += 1
        (ins if j < len(jobs) and jobs[j][0] <= k[0] else outs).append(k)
    return ins, outs


def r4(x):
    return None if x is None else round(x, 4)


def explain_group(hp, lp, hp_alone, lp_alone):
    jobs = hp["jobs"]
    lengths = [(e - s) / 1e6 for s, e in jobs]
    alone_lengths = [(e - s) / 1e6 for s, e in hp_alone["jobs"]] if hp_alone else []
    hp_k = kernel_ms_per_job(jobs, hp["kernels"])
    hp_k_alone = kernel_ms_per_job(hp_alone["jobs"], hp_alone["kernels"]) if hp_alone else []
    hp_ratio, hp_cov = time_ratio(hp["kernels"], medians_by_name(hp_alone["kernels"])) if hp_alone else (None, None)
    out = {"hp_jobs": len(jobs), "hp_job_ms_p50": r4(median(lengths)), "hp_alone_job_ms_p50": r4(median(alone_lengths)),
           "hp_kernel_ms_per_job_p50": r4(median(hp_k)), "hp_alone_kernel_ms_per_job_p50": r4(median(hp_k_alone)),
           "hp_kernel_time_ratio": hp_ratio, "hp_name_coverage": hp_cov, "hp_growth_in_kernels": None}
    if lengths and alone_lengths and hp_k and hp_k_alone:
        growth = median(lengths) - median(alone_lengths)
        if growth > 0:
            out["hp_growth_in_kernels"] = r4((median(hp_k) - median(hp_k_alone)) / growth)
    if lp is None:
        return out
    lp_merged = merged([(s, e) for s, e, _, _ in lp["kernels"]])
    launches = merged(lp["launches"])
    ins, outs = inside(lp["kernels"], jobs)
    per_job_count = []
    for s, e in jobs:
        per_job_count.append(sum(1 for k in ins if s <= k[0] < e))
    alone_medians = medians_by_name(lp_alone["kernels"]) if lp_alone else {}
    in_ratio, in_cov = time_ratio(ins, alone_medians) if lp_alone else (None, None)
    out_ratio, out_cov = time_ratio(outs, alone_medians) if lp_alone else (None, None)
    out.update({
        "lp_kernels_in_job_p50": median(per_job_count),
        "lp_gpu_busy_in_job_p50": r4(median([covered(lp_merged, s, e) / max(1, e - s) for s, e in jobs])),
        "lp_kernel_time_ratio_in_job": in_ratio, "lp_name_coverage_in_job": in_cov,
        "lp_kernel_time_ratio_between_jobs": out_ratio, "lp_name_coverage_between_jobs": out_cov,
        "lp_launch_calls_in_job_p50": r4(median([covered(launches, s, e) / max(1, e - s) for s, e in jobs]))
        if lp["launches"] else None,
        "lp_streams_in_job": sorted({k[3] for k in ins}), "lp_streams_between_jobs": sorted({k[3] for k in outs}),
    })
    return out


def explain(db_path):
    data = read(db_path)
    hp_alone, lp_alone = data.get(("plain", "hp")), data.get(("plain", "lp"))
    groups = sorted({g for g, r in data if r == "hp" and g != "plain"})
    if not groups:
        raise ValueError(f"{db_path}: no HP jobs of a contention group (NVTX '<group>_hp job N' with group "
                         "mps, corun or partition): was partition_verdict run under nsys with such a setup?")
    return {g: explain_group(data[(g, "hp")], data.get((g, "lp")), hp_alone, lp_alone) for g in groups}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report", help="the SQLite export of the nsys report")
    ap.add_argument("--out", help="write the JSON here too")
    args = ap.parse_args(argv)
    try:
        result = explain(args.report)
    except (ValueError, sqlite3.Error) as e:
        print(f"partition_explain: {e}", file=sys.stderr)
        return 1
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
