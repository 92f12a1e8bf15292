"""One long-lived process of the matrix benchmark (bench.gpu.matrix): it loads a workload kind on
command and runs it when told, so that a whole matrix needs one process per role and setup group,
not one per cell (loading torch and a model costs 10-15 s a process).

  python3 -m bench.gpu.matrix_worker --role hp|lp [--backend MODULE:CLASS]

Commands come on stdin, one JSON object a line; each gets one JSON reply line on the original
stdout (whatever the libraries print goes to stderr). Times are CLOCK_MONOTONIC, which every
process of the machine shares, so the harness can start an HP and an LP at the same instant t0.
  {"cmd": "load", "kind": K}                 build and warm up kind K (each of its variants) -> {"ok", "load_s"}
  {"cmd": "calib", "jobs": N, "gap": G[, "seed": S]}  HP: N jobs, each followed by G x its own service
        time idle (G = 3: the pace of a 25 % load; 0: back to back) -> {"svc_ms": [...]}; a unit of
        several kinds of job (variants) runs each kind its share of the N jobs, in an order shuffled
        with S (default 0), and also says which ran: "variant": [index per job]
  {"cmd": "busy", "jobs": N}                 HP: GPU-busy ms per job alone (profiler) -> {"busy_ms", "wall_ms"};
        a unit with variants: each profiled over N jobs of its own, the means weighed by the shares,
        and "variants": [{"share", "busy_ms", "wall_ms"}, ...]
  {"cmd": "hp", "t0", "seconds", "rate", "seed", "mark"}
        Poisson arrivals at `rate` jobs/s from t0 for `seconds`; a job starts at its arrival or when
        the previous one ends (one server, FIFO), so latency counts queueing. A unit that draws its
        kind of job (reseed) draws from `seed` anew, so that every process given the same command runs
        the same kind at the same arrival. mark: begin/end each job
        at priority 1 in $GPUYIELD_SHM's segment. -> {"lat_ms", "svc_ms", "start_ms", "launch_ms",
        "launch_cpu_ms", "begin_us", "end_us", "arms", "lp_launches", "late"[, "variant"]} (start_ms: each
        job's start after t0; variant: from a unit that draws its kind, the index in its variants that
        each job ran (unit.last), so that the harness can check every setup of a round ran the same; arms: per marked job its guarded arm, None where it got none; lp_launches: the
        lower processes' kernel and graph launches as the rule read them at the job's begin, None
        where it got no arm (two jobs' difference: what the rule charged to the first one's cycle);
        launch_ms: the job's first launch to its last one's return, launch_cpu_ms: the CPU time the
        launching thread used meanwhile, so that a slower job can be told host-side from GPU-side;
        cpus: the CPU that thread was on at its last launch's return, None where unknown; rusage:
        per job the serving thread's [user ms, system ms, minor faults, voluntary and involuntary
        context switches] from just before its start to just after its end (getrusage of the thread,
        outside the timed span), so that the job-to-job spread of a host-bound HP's CPU time can be
        told apart: in user code, in the kernel, in faults or in preemptions (bench.gpu.hp_noise))
  {"cmd": "lp", "t0", "seconds", "count_from", "count_to", "unit_times"}
        LP: units back to back from t0 for `seconds`, then the GPU synchronised -> {"units", "secs",
        "counted", "counted_secs"}: the GPU work of units done in [count_from, count_to) (the HP's
        window; each unit's end timed by an event after it) and that window's length; with
        unit_times also "first_ms" and "done_ms": its start and each unit's end after count_from,
        so that its progress can be split by the HP's jobs (bench.gpu.lp_cycles)
  {"cmd": "quit"}
"""
import argparse
import importlib
import json
import os
import random
import resource
import sys
import time


def _sched_getcpu():
    """libc's sched_getcpu (Python has none), or None where it cannot be called."""
    try:
        import ctypes
        fn = ctypes.CDLL(None, use_errno=True).sched_getcpu
        fn.restype = ctypes.c_int
        fn.argtypes = []
        return fn
    except (OSError, AttributeError):
        return None


_GETCPU = _sched_getcpu()


def current_cpu():
    """The CPU the calling thread runs on now, or None where the C library cannot say."""
    cpu = _GETCPU() if _GETCPU else -1
    return cpu if cpu >= 0 else None


def thread_usage():
    """The calling thread's (user s, system s, minor faults, voluntary, involuntary context switches)."""
    u = resource.getrusage(resource.RUSAGE_THREAD)
    return (u.ru_utime, u.ru_stime, u.ru_minflt, u.ru_nvcsw, u.ru_nivcsw)


def usage_delta(before, after):
    """[user ms, system ms, minor faults, voluntary, involuntary switches] between two thread_usage()."""
    return [round((after[0] - before[0]) * 1e3, 3), round((after[1] - before[1]) * 1e3, 3)] + \
        [a - b for a, b in zip(after[2:], before[2:])]


def log(msg):
    print(f"matrix_worker[{os.getpid()}]: {msg}", file=sys.stderr, flush=True)


def sleep_until(t):
    while True:
        left = t - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(left, 0.002) if left < 0.004 else left - 0.002)


# Units of more than one kind of job (bench.gpu.matrix_kinds._mixed) carry
#   unit.reseed(seed): restart the draw of each job's kind from `seed`, and
#   unit.variants: ((share, job), ...), each kind of job apart with its share of the jobs.
# `hp` reseeds from its command's seed before its first arrival, `calib` from a fixed one: a stream
# drawn over a process's whole life gave each setup of a round other kinds of job over the same
# arrivals (the H100 on 2026-12-07: the mixed HP's plain alone ran 18-24 long jobs a round, corun's
# 11-13, guarded's 14-18, of 139-167), so that their ratios were not paired. `busy` and `calib`
# weigh the variants by their shares: the 10 profiled jobs had drawn no long one (0.7 ms busy a
# job, the GPU time left 0.97-0.98 where it is about 0.75).
CALIB_SEED = 0


def draw_seed(what, seed):
    """The seed of a unit's own draws for command `what` given its seed: a string, not the number,
    so that the kinds' stream is not the arrivals' random.Random(seed) (the same uniform numbers would
    tie each job's kind to the gap before it: a long job after a short gap)."""
    return f"{what}:{seed}"


def apportion(shares, n):
    """n jobs split by shares (largest remainder): the counts sum to n."""
    total = float(sum(shares))
    exact = [sh / total * n for sh in shares]
    counts = [int(x) for x in exact]
    for i in sorted(range(len(shares)), key=lambda i: counts[i] - exact[i])[:n - sum(counts)]:
        counts[i] += 1
    return counts


def arrivals(t0, seconds, rate, seed):
    """Poisson arrival times in [t0, t0 + seconds), seeded: every setup of a round sees the same."""
    rng, t, out = random.Random(seed), t0, []
    while True:
        t += rng.expovariate(rate)
        if t >= t0 + seconds:
            return out
        out.append(t)


class Worker:
    def __init__(self, role, backend):
        self.role, self.backend, self.unit, self.kind, self.segment = role, backend, None, None, None

    def job(self):
        self.unit()
        self.backend.sync()

    def variants(self):
        """The unit's ((share, job), ...), or () for a unit of one kind of job."""
        return tuple(getattr(self.unit, "variants", None) or ())

    def reseed(self, seed):
        """Restart the unit's draws of its kinds of job from `seed`, where it draws any."""
        fn = getattr(self.unit, "reseed", None)
        if fn is not None:
            fn(seed)

    def load(self, cmd):
        t = time.monotonic()
        self.unit = None
        self.backend.release()
        self.unit = self.backend.build(cmd["kind"], self.role)
        self.kind = cmd["kind"]
        # each kind of job warmed, not only those the first draws give (the mixed HP's first five
        # draws hold no long job: its first one would have been calibrated or profiled cold)
        for fn in [job for _, job in self.variants()] or [self.unit]:
            for _ in range(int(cmd.get("warmup", 5))):
                fn()
        self.backend.sync()
        return {"ok": True, "load_s": round(time.monotonic() - t, 3)}

    def calib(self, cmd):
        # Paced, not back to back: a host-bound job runs slower after idle time (measured on the
        # H100: the launch-bound HP 2.4-3.4 ms back to back, 3.5-5.7 ms under Poisson arrivals), and
        # a rate set from the back-to-back time overloads the plain alone process at 60 %.
        # A unit of several kinds of job runs each kind its exact share of the jobs, shuffled: the
        # mean (the load's rate, bench.gpu.matrix.load_rate) then carries no draw's luck (200 draws
        # at one in ten hold 20 +- 4 long jobs, +-16 % on the mixed HP's mean).
        out, jobs, seed = [], int(cmd["jobs"]), cmd.get("seed", CALIB_SEED)
        gap = float(cmd.get("gap", 0))
        self.reseed(draw_seed("calib", seed))
        variants = self.variants()
        order = None
        if variants:
            order = [i for i, c in enumerate(apportion([sh for sh, _ in variants], jobs)) for _ in range(c)]
            random.Random(draw_seed("calib-order", seed)).shuffle(order)
        for i in order if order is not None else [None] * jobs:
            t = time.perf_counter_ns()
            if i is None:
                self.job()
            else:
                variants[i][1]()
                self.backend.sync()
            ms = (time.perf_counter_ns() - t) / 1e6
            out.append(ms)
            if gap > 0:
                time.sleep(gap * ms / 1000.0)
        reply = {"ok": True, "svc_ms": out}
        if order is not None:
            reply["variant"] = order
        return reply

    def busy(self, cmd):
        jobs = int(cmd["jobs"])
        variants = self.variants()
        if not variants:
            self.reseed(draw_seed("busy", CALIB_SEED))  # the same draws in every profile
            busy_ms, wall_ms = self.backend.busy_ms_per_job(self.job, jobs)
            return {"ok": True, "busy_ms": busy_ms, "wall_ms": wall_ms}
        # each kind of job profiled over `jobs` of its own, weighed by its share: a few draws of
        # the mix miss its rare long kind (see the comment above CALIB_SEED)
        parts = []
        for share, fn in variants:
            def job(fn=fn):
                fn()
                self.backend.sync()
            busy_ms, wall_ms = self.backend.busy_ms_per_job(job, jobs)
            parts.append({"share": share, "busy_ms": busy_ms, "wall_ms": wall_ms})
        total = float(sum(p["share"] for p in parts))
        return {"ok": True, "busy_ms": sum(p["share"] * p["busy_ms"] for p in parts) / total,
                "wall_ms": sum(p["share"] * p["wall_ms"] for p in parts) / total, "variants": parts}

    def marker(self):
        if self.segment is None:
            name = os.environ.get("GPUYIELD_SHM")
            if not name:
                raise RuntimeError("mark asked but GPUYIELD_SHM is not set")
            import gpuyield
            self.segment = gpuyield.connect(name)
        return self.segment

    def hp(self, cmd):
        seg = self.marker() if cmd.get("mark") else None
        lat, svc, start_ms, launch_ms, launch_cpu_ms, begin_us, end_us, arms, lp_launches, cpus, rusage, kinds = (
            [] for _ in range(12))
        drawn = bool(self.variants()) and hasattr(self.unit, "reseed")  # a unit that draws its kind of job
        late = 0
        # the i-th arrival's kind of job from this command's seed alone: the same in every setup of
        # the round, whatever each process ran before (warmup, calibration, profile, learning)
        self.reseed(draw_seed("hp", cmd["seed"]))
        for arrival in arrivals(cmd["t0"], cmd["seconds"], cmd["rate"], cmd["seed"]):
            now = time.monotonic()
            if now < arrival:
                sleep_until(arrival)
            else:
                late += 1
            usage0 = thread_usage()
            start = time.monotonic()
            start_ms.append(round((start - cmd["t0"]) * 1e3, 3))
            if seg:
                job = seg.begin(1)
                began = time.monotonic()
                arm, depth = getattr(job, "guarded_arm", None), getattr(job, "guarded_depth_us", None)
                # guarded: which arm each job ran under (and the LP's queue depth before it, when raised)
                arms.append(f"{arm}@{depth}us" if arm is not None and depth else arm)
                lp_launches.append(getattr(job, "guarded_lower_launches", None))
            cpu0, unit_start = time.thread_time(), time.monotonic()
            self.unit()
            launched, cpu1 = time.monotonic(), time.thread_time()
            if drawn:
                kinds.append(getattr(self.unit, "last", None))
            cpus.append(current_cpu())
            self.backend.sync()
            launch_ms.append((launched - unit_start) * 1e3)
            launch_cpu_ms.append((cpu1 - cpu0) * 1e3)
            if seg:
                ending = time.monotonic()
                seg.end(1)
                begin_us.append((began - start) * 1e6)
                end_us.append((time.monotonic() - ending) * 1e6)
            done = time.monotonic()
            rusage.append(usage_delta(usage0, thread_usage()))
            lat.append((done - arrival) * 1e3)
            svc.append((done - start) * 1e3)
        reply = {"ok": True, "lat_ms": lat, "svc_ms": svc, "start_ms": start_ms, "launch_ms": launch_ms,
                 "launch_cpu_ms": launch_cpu_ms, "cpus": cpus, "rusage": rusage,
                 "begin_us": begin_us, "end_us": end_us, "arms": arms, "lp_launches": lp_launches, "late": late}
        if drawn:  # which of the unit's variants each job ran: the harness checks the setups ran the same
            reply["variant"] = kinds
        return reply

    def lp(self, cmd):
        """Units back to back; each unit's completion is timed on the GPU (an event after it), so
        the units done inside [count_from, count_to) are counted, a unit cut by an edge in part."""
        self.backend.sync()
        sleep_until(cmd["t0"])
        host0, ev0 = time.monotonic(), self.backend.mark()
        end, marks = host0 + cmd["seconds"], []
        while time.monotonic() < end:
            self.unit()
            marks.append(self.backend.mark())
        self.backend.sync()
        done = [host0 + self.backend.elapsed_ms(ev0, m) / 1000.0 for m in marks]
        lo, hi = cmd.get("count_from", host0), cmd.get("count_to", end)
        out = {"ok": True, "units": len(marks), "secs": time.monotonic() - host0,
               "counted": units_inside(host0, done, lo, hi), "counted_secs": hi - lo}
        if cmd.get("unit_times"):
            out["first_ms"] = round((host0 - lo) * 1e3, 3)
            out["done_ms"] = [round((d - lo) * 1e3, 3) for d in done]
        return out


def units_inside(start, done, lo, hi):
    """Units completed inside [lo, hi): unit i ran from done[i-1] (start for the first) to done[i];
    the share of it inside the window counts."""
    total, prev = 0.0, start
    for d in done:
        if d > prev:
            total += max(0.0, min(d, hi) - max(prev, lo)) / (d - prev)
        elif lo <= d < hi:
            total += 1.0
        prev = max(prev, d)
    return total


def load_backend(spec):
    module, _, cls = spec.partition(":")
    return getattr(importlib.import_module(module), cls)()


def main(argv=None):
    p = argparse.ArgumentParser(prog="matrix_worker", description=__doc__.split("\n\n")[0])
    p.add_argument("--role", choices=("hp", "lp"), required=True)
    p.add_argument("--backend", default="bench.gpu.matrix_kinds:TorchBackend")
    args = p.parse_args(argv)
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the libraries print must not corrupt the replies
    worker = Worker(args.role, load_backend(args.backend))
    replies.write(json.dumps({"ok": True, "ready": True, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "quit":
            break
        try:
            reply = getattr(worker, cmd["cmd"])(cmd)
        except Exception as e:  # the harness names the worker and stops the run
            log(f"{cmd['cmd']} failed: {e!r}")
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        replies.write(json.dumps(reply) + "\n")
    if worker.segment is not None:
        worker.segment.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
