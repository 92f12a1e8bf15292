"""Issue 3's gating proof from an Nsight Systems export of a run_exp experiment with control: no
low-priority kernel runs while a high-priority job runs. A high-priority job's NVTX range
("<name> job N", pushed by the worker inside `with seg.job(p)`, i.e. after the drained begin)
must contain no kernel, copy or memset of a lower-priority process: none starting inside it,
none still running when it starts. Exit status 1 on any such overlap.

A model with "jobs": "auto" (issue 27) marks nothing: its worker's "<name> job N" ranges are its
requests, which begin before the hook opens the job (and before the drain). Its jobs are the
hook's own NVTX process ranges, "gpuyield auto-job p<P> d<D>" (hooks/auto_jobs.c: from the
opening launch, after the drained begin, to just before the job ends, ended by the closer
thread); a range never ended (a job open at exit) is not checked, and counted. Also counted for
such a model: its kernels outside every auto-job range (the jobs should hold all of its work).
  python3 -m bench.gpu.gating_proof REPORT.sqlite models_pid.json CONFIG.json OUT.json
"""
import bisect
import json
import sqlite3
import sys

AUTO_RANGE = "gpuyield auto-job "  # hooks/auto_jobs.c: "gpuyield auto-job p<priority> d<device>"


def nvtx_rows(db):
    """(pid, start, end, text) of every NVTX event with a text: in the `text` column, or in
    StringIds through `textId` where the export keeps it there."""
    cols = {r[1] for r in db.execute("PRAGMA table_info(NVTX_EVENTS)")}
    if "textId" in cols and db.execute("SELECT 1 FROM sqlite_master WHERE name = 'StringIds'").fetchone():
        return db.execute("SELECT (n.globalTid >> 24) & 0xFFFFFF, n.start, n.end, COALESCE(n.text, s.value) "
                          "FROM NVTX_EVENTS AS n LEFT JOIN StringIds AS s ON n.textId = s.id").fetchall()
    return db.execute("SELECT (globalTid >> 24) & 0xFFFFFF, start, end, text FROM NVTX_EVENTS").fetchall()


def main(db_path, pids_path, config_path, out_path):
    db = sqlite3.connect(db_path)
    config = json.load(open(config_path))
    pids = {name: pid for name, pid in json.load(open(pids_path))}
    prio_by_output = {m["output_file_name"]: m["priority"] for m in config["models"]}
    auto_outputs = {m["output_file_name"] for m in config["models"] if m.get("jobs") == "auto"}
    # models_pid names processes after their model; map each to its output name through the
    # NVTX range text "<output_file_name> job N" its worker emits (under auto jobs too).
    ranges, auto_ranges, auto_unended = {}, {}, {}
    for pid_, start, end, text in nvtx_rows(db):
        if not text:
            continue
        if text.startswith(AUTO_RANGE):
            if end is None:
                auto_unended[pid_] = auto_unended.get(pid_, 0) + 1
            else:
                auto_ranges.setdefault(pid_, []).append((start, end))
        elif " job " in text and end is not None:
            name = text.rsplit(" job ", 1)[0]
            ranges.setdefault((pid_, name), []).append((start, end))
    procs = {pid_: name for (pid_, name) in ranges}
    result = {"report": db_path, "processes": {}, "violations": 0, "checked_jobs": 0}
    job_intervals = {}  # HP output name -> the intervals checked
    kernels = {}
    for pid_ in procs:
        kernels[pid_] = sorted(db.execute(
            "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE (globalPid >> 24) & 0xFFFFFF = ?", (pid_,)))
    for hp_pid, hp_name in procs.items():
        hp_prio = prio_by_output.get(hp_name, 0)
        if hp_prio == 0:
            continue
        lower = [p for p, n in procs.items() if prio_by_output.get(n, 0) < hp_prio]
        auto = hp_name in auto_outputs
        jobs = sorted(auto_ranges.get(hp_pid, [])) if auto else ranges[(hp_pid, hp_name)]
        job_intervals[hp_name] = jobs
        if auto and not jobs:
            print(f"gating proof: {hp_name} runs with \"jobs\": \"auto\" but its process (pid {hp_pid}) has no "
                  f"'{AUTO_RANGE}...' NVTX range: a hook built without the NVTX headers emits none; nothing to check")
        bad = []
        starts = {lp: [k[0] for k in kernels[lp]] for lp in lower}
        # running_end[i]: the latest end among kernels 0..i (by start). Kernels that started
        # before a job and may still run at its start are those from the first index whose
        # running end passes the job's start: however long, on whatever stream.
        running_end = {}
        for lp in lower:
            latest, ends = 0, []
            for (_, ke) in kernels[lp]:
                latest = max(latest, ke)
                ends.append(latest)
            running_end[lp] = ends
        for (js, je) in jobs:
            for lp in lower:
                lo = bisect.bisect_right(running_end[lp], js)
                hi = bisect.bisect_left(starts[lp], je)
                for (ks, ke) in kernels[lp][lo:hi]:
                    if ks < je and ke > js:  # overlaps the job
                        bad.append({"lp_pid": lp, "kernel_start": ks, "kernel_end": ke, "job": [js, je]})
        result["processes"][hp_name] = {"pid": hp_pid, "priority": hp_prio, "jobs": len(jobs),
                                        "lower_pids": lower,
                                        "lower_kernels": sum(len(kernels[l]) for l in lower),
                                        "overlapping_lower_kernels": len(bad), "examples": bad[:5]}
        if auto:
            # The jobs are the hook's ranges; the worker's are its requests. Its own kernels
            # outside every auto job (none expected: no launch runs outside its job, and the job
            # ends after the work completed; a few at the exit, in the job that never ended).
            starts_j = [js for js, _ in jobs]
            outside = 0
            for ks, ke in kernels[hp_pid]:
                i = bisect.bisect_right(starts_j, ks) - 1
                outside += not (i >= 0 and ke <= jobs[i][1])
            result["processes"][hp_name].update({
                "jobs_from": "hook auto-job ranges (GPUYIELD_JOBS=auto)",
                "requests": len(ranges[(hp_pid, hp_name)]), "unended_auto_ranges": auto_unended.get(hp_pid, 0),
                "own_kernels": len(kernels[hp_pid]), "own_kernels_outside_auto_jobs": outside})
        result["violations"] += len(bad)
        result["checked_jobs"] += len(jobs)
    # Copies and memsets are not kernel launches: count the lower ones that overlap a job too.
    for table in ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        try:
            rows = db.execute(f"SELECT (globalPid >> 24) & 0xFFFFFF, start, end, bytes FROM {table}").fetchall()
        except sqlite3.Error:
            continue
        for hp_name, r in result["processes"].items():
            jobs = job_intervals[hp_name]
            overlapping = [(s, e, b) for (p, s, e, b) in rows if p in r["lower_pids"]
                           and any(s < je and e > js for (js, je) in jobs)]
            result["violations"] += len(overlapping)
            r[table.lower() + "_overlapping"] = {"count": len(overlapping),
                                                 "bytes": sum(b or 0 for (_, _, b) in overlapping),
                                                 "ns": sum(e - s for (s, e, _) in overlapping)}
            print(f"gating proof: {hp_name}: {len(overlapping)} lower-priority {table[21:].lower()} operations "
                  f"overlap its jobs ({sum(b or 0 for (_, _, b) in overlapping) / 1e6:.1f} MB, "
                  f"{sum(e - s for (s, e, _) in overlapping) / 1e6:.2f} ms)")
    json.dump(result, open(out_path, "w"), indent=1)
    for name, r in result["processes"].items():
        print(f"gating proof: {name} (pid {r['pid']}, priority {r['priority']}): {r['jobs']} jobs, "
              f"{r['lower_kernels']} lower-priority kernels, {r['overlapping_lower_kernels']} overlap a job")
        if "jobs_from" in r:
            print(f"gating proof: {name}: auto jobs from the hook's NVTX ranges: {r['jobs']} jobs for {r['requests']} "
                  f"requests ({r['unended_auto_ranges']} never ended: not checked); {r['own_kernels_outside_auto_jobs']} "
                  f"of its {r['own_kernels']} kernels outside every auto job")
    return 0 if result["violations"] == 0 and result["checked_jobs"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
