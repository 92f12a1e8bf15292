"""What the HP's own job-to-job noise is made of, per cell of matrix records: the stop jobs of each
guarded learning (the rule's baseline, in the order they ran), or with --setup every job of another
setup's segments (hp_alone, corun, ...). Guarded's test can show an arm within its bound only
through this noise, so it sets how long a learning must be (docs/guarded.md, Limits):
  sd       the standard deviation of the log of the service time;
  lag1     the correlation of consecutive jobs' logs (drift between stretches of jobs);
  in16     the share of that variance left within blocks of 16 consecutive jobs (what a test
           stratified by stretches of time still sees);
  r_cpu    the correlation of log service with the log of the CPU time of the job's launch span
           (near 1: the job's time is its host's work, and so is its noise);
  r2_gap   the share of the variance the idle gap before the job explains (log gap, quadratic):
           a covariate that no arm changes, as the arrivals are random;
  sys, r_user, r_sys, ivcsw, faults  where the worker recorded each job's thread rusage (since
           2026-12-01): the median share of its CPU time in the kernel, the correlations of log
           service with log user and log system time, and the mean involuntary context switches and
           minor page faults a job: where a host-bound HP's spread lives;
  jobs     about how many jobs a side a rank test needs to show a costless arm within --eps at
           one-sided 1 % with 80 % power: 21 x (sd^2 x in16) / ln(1 + eps)^2 (normal approximation,
           the rank test's 0.955 efficiency).
    python3 -m bench.gpu.hp_noise DIR [DIR ...] [--setup guarded_learn] [--eps 0.02] [--min-jobs 256]
Each DIR a matrix invocation's folder (raw.json, raw.json.xz or raw.json.gz)."""
import argparse
import math
import statistics
import sys

from bench.gpu import raw_record

BLOCK = 16       # guarded's blocks (GY_GUARD_RECENT)
RANK_FACTOR = 21  # 2 (z_0.99 + z_0.80)^2 / 0.955: jobs a side per (sd / margin)^2


def _corr(x, y):
    if len(x) < 3:
        return None
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx, syy = sum((a - mx) ** 2 for a in x), sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def _within_blocks(x, block=BLOCK):
    """The share of x's variance left within consecutive blocks (None when x has no variance)."""
    total = statistics.variance(x)
    if not total:
        return None
    left, n = 0.0, 0
    for s in range(0, len(x) - block + 1, block):
        b = x[s:s + block]
        m = statistics.fmean(b)
        left += sum((v - m) ** 2 for v in b)
        n += block - 1
    return left / n / total if n else None


def _r2_quadratic(y, g):
    """R^2 of y on (1, g, g^2) by least squares (None when the fit is degenerate)."""
    n = len(y)
    cols = [[1.0] * n, g, [v * v for v in g]]
    # normal equations, 3x3, solved by Gaussian elimination
    a = [[sum(ci[k] * cj[k] for k in range(n)) for cj in cols] for ci in cols]
    b = [sum(ci[k] * y[k] for k in range(n)) for ci in cols]
    for i in range(3):
        piv = max(range(i, 3), key=lambda r: abs(a[r][i]))
        if abs(a[piv][i]) < 1e-12:
            return None
        a[i], a[piv], b[i], b[piv] = a[piv], a[i], b[piv], b[i]
        for r in range(i + 1, 3):
            f = a[r][i] / a[i][i]
            a[r] = [x - f * z for x, z in zip(a[r], a[i])]
            b[r] -= f * b[i]
    coef = [0.0] * 3
    for i in (2, 1, 0):
        coef[i] = (b[i] - sum(a[i][j] * coef[j] for j in range(i + 1, 3))) / a[i][i]
    fit = [coef[0] + coef[1] * v + coef[2] * v * v for v in g]
    total = statistics.pvariance(y)
    return 1 - statistics.pvariance([u - f for u, f in zip(y, fit)]) / total if total else None


def cell_noise(result, stop_only, eps):
    """The noise of one segment's HP jobs (None when it has fewer than 3 to look at)."""
    svc, arms = result.get("svc_ms") or [], result.get("arms")
    start, cpu = result.get("start_ms"), result.get("launch_cpu_ms")
    keep = [i for i in range(len(svc)) if svc[i] > 0 and (not stop_only or (arms and arms[i] == "stop"))]
    if len(keep) < 3:
        return None
    y = [math.log(svc[i]) for i in keep]
    sd = statistics.stdev(y)
    lag1 = _corr(y[:-1], y[1:])
    in16 = _within_blocks(y) if len(y) >= 2 * BLOCK else None
    r_cpu = None
    if cpu and len(cpu) == len(svc):
        pairs = [(v, math.log(cpu[i])) for v, i in zip(y, keep) if cpu[i] and cpu[i] > 0]
        r_cpu = _corr([p[0] for p in pairs], [p[1] for p in pairs])
    r2_gap = None
    if start and len(start) == len(svc):
        # the idle time since the job before it (of any arm) ended; 10 us for a job that queued
        rows = [(v, math.log(max(start[i] - start[i - 1] - svc[i - 1], 0.01))) for v, i in zip(y, keep) if i > 0]
        if len(rows) >= 8:
            r2_gap = _r2_quadratic([r[0] for r in rows], [r[1] for r in rows])
    usage = {"sys": None, "r_user": None, "r_sys": None, "ivcsw": None, "faults": None}
    rusage = result.get("rusage")
    if rusage and len(rusage) == len(svc):
        rows = [(v, rusage[i]) for v, i in zip(y, keep) if rusage[i] and rusage[i][0] + rusage[i][1] > 0]
        if len(rows) >= 3:
            usage["sys"] = statistics.median(r[1] / (r[0] + r[1]) for _, r in rows)
            usage["r_user"] = _corr([v for v, _ in rows], [math.log(max(r[0], 1e-3)) for _, r in rows])
            usage["r_sys"] = _corr([v for v, _ in rows], [math.log(max(r[1], 1e-3)) for _, r in rows])
            usage["ivcsw"] = statistics.fmean(r[4] for _, r in rows)
            usage["faults"] = statistics.fmean(r[2] for _, r in rows)
    jobs = None
    if in16 is not None:
        jobs = RANK_FACTOR * sd * sd * in16 / math.log(1 + eps) ** 2
    return {"jobs_seen": len(y), "sd": sd, "lag1": lag1, "in16": in16, "r_cpu": r_cpu, "r2_gap": r2_gap,
            "jobs_needed": jobs, **usage}


def cells(raw, setup, eps, min_jobs):
    """[(hp, lp, load, round, noise dict)] of one invocation's segments of that setup."""
    out = []
    for seg in raw.get("segments", []):
        r = seg.get("hp_result") or {}
        if seg.get("setup") != setup or not r.get("ok"):
            continue
        noise = cell_noise(r, setup == "guarded_learn", eps)
        if noise and noise["jobs_seen"] >= min_jobs:
            out.append((seg.get("hp"), seg.get("lp"), seg.get("load"), seg.get("round"), noise))
    return out


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.hp_noise", description=__doc__.split("\n")[0])
    p.add_argument("folders", nargs="+", metavar="DIR")
    p.add_argument("--setup", default="guarded_learn",
                   help="whose HP jobs: guarded_learn (its stop jobs, the default) or another setup (all its jobs)")
    p.add_argument("--eps", type=float, default=0.02, help="the p50 bound the jobs column is for (default 0.02)")
    p.add_argument("--min-jobs", type=int, default=256, help="segments with fewer jobs are left out (default 256)")
    args = p.parse_args(argv)
    if not 0 < args.eps <= 1:
        p.error(f"--eps {args.eps}: a fraction above 0, at most 1 (0.02 is 2 %)")
    if args.min_jobs < 2 * BLOCK:
        p.error(f"--min-jobs {args.min_jobs}: at least {2 * BLOCK} (two blocks)")
    rows = []
    for folder in args.folders:
        raw = raw_record.load_or_exit(folder, "hp_noise")
        rows += [(folder,) + c for c in cells(raw, args.setup, args.eps, args.min_jobs)]
    if not rows:
        print(f"hp_noise: no {args.setup} segment with {args.min_jobs} HP jobs or more in {' '.join(args.folders)}")
        return 1
    print("| folder | cell | round | jobs | sd | lag1 | in16 | r_cpu | r2_gap | jobs a side for a costless arm "
          "| sys | r_user | r_sys | ivcsw | faults |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    by_hp = {}
    for folder, hp, lp, load, rnd, n in rows:
        by_hp.setdefault(hp, []).append(n)
        print(f"| {folder} | {hp} + {lp}, {load} | {rnd} | {n['jobs_seen']} | {n['sd']:.3f} | {_fmt(n['lag1'], '.2f')} | "
              f"{_fmt(n['in16'], '.2f')} | {_fmt(n['r_cpu'], '.2f')} | {_fmt(n['r2_gap'], '.2f')} | "
              f"{_fmt(n['jobs_needed'], '.0f')} | {_fmt(n['sys'], '.2f')} | {_fmt(n['r_user'], '.2f')} | "
              f"{_fmt(n['r_sys'], '.2f')} | {_fmt(n['ivcsw'], '.1f')} | {_fmt(n['faults'], '.1f')} |")
    print("\nmedians by HP kind (sd, in16, r_cpu, r2_gap, jobs a side):")
    for hp, ns in sorted(by_hp.items()):
        def med(k):
            vals = [n[k] for n in ns if n[k] is not None]
            return statistics.median(vals) if vals else None
        print(f"  {hp}: {len(ns)} segments, sd {med('sd'):.3f}, in16 {_fmt(med('in16'), '.2f')}, "
              f"r_cpu {_fmt(med('r_cpu'), '.2f')}, r2_gap {_fmt(med('r2_gap'), '.2f')}, "
              f"jobs {_fmt(med('jobs_needed'), '.0f')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
