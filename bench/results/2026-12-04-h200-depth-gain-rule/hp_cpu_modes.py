"""The FasterRCNN 720p HP's user CPU time per job (its worker's rusage, the first field: user ms) by
setup and round, over the frcnn720 invocations of this record: its median, the share of jobs over
1.4 x the fastest setup-round's median (the slow mode) and the mean length of a run of such jobs
(hp_cpu_modes.txt).  PYTHONPATH=. python3 bench/results/2026-12-04-h200-depth-gain-rule/hp_cpu_modes.py FOLDER..."""
import statistics
import sys

from bench.gpu import raw_record

for folder in sys.argv[1:]:
    raw = raw_record.load_or_exit(folder, "hp_cpu_modes")
    rows = []
    for seg in raw["segments"]:
        hp = seg.get("hp_result") or {}
        if seg.get("round", -1) < 0 or not hp.get("rusage") or seg.get("hp") != "frcnn720":
            continue
        user = [r[0] for r in hp["rusage"]]
        rows.append((seg["round"], seg["setup"], user, statistics.median(hp["svc_ms"])))
    if not rows:
        continue
    fast = min(statistics.median(u) for _, _, u, _ in rows)
    print(f"{folder.rstrip('/').split('/')[-1]}: slow = user CPU over {1.4 * fast:.1f} ms a job (1.4 x the fastest median, {fast:.1f})")
    for rnd, setup, user, svc in sorted(rows):
        slow = [u > 1.4 * fast for u in user]
        runs, n = [], 0
        for s in slow + [False]:
            if s:
                n += 1
            elif n:
                runs.append(n)
                n = 0
        mean_run = sum(runs) / len(runs) if runs else 0
        print(f"  r{rnd} {setup:14s} svc {svc:6.2f} ms  user {statistics.median(user):6.2f} ms  slow {sum(slow):3d} of {len(user):3d}"
              f" jobs  runs of {mean_run:4.1f} (longest {max(runs) if runs else 0})")
