"""The verdict a skeptic accepts (issue 18): per pair of models, the high-priority (HP) job beside
a busy low-priority (LP) process under nocontrol, mps, corun and partition, against the HP and
the LP each alone as plain processes, in interleaved rounds of one invocation.

  python3 -m bench.gpu.partition_verdict --build BUILD --out DIR [--pairs reference,resnet,bert_train]
      [--rounds 3] [--contended-s 6] [--hp-alone-s 4] [--lp-alone-s 3] [--partition-sms 16] ...
  python3 -m bench.gpu.partition_verdict --merge DIR1 DIR2 ... --out DIR   (verdict over invocations)

Processes: one set per kind, all started together per pair and kept for the whole pair, so that
the rounds do not pay model loading again (10-15 s a process): plain (HP and LP, no MPS, no hook,
no LD_PRELOAD: hp_alone, lp_alone and nocontrol), mps (both under the MPS daemon, no hook), corun
and partition (hooked, each with its own gpuyield segment of that policy, made with --mps-pipe so
that it says MPS, under the MPS daemon; the LP bounded by time:500), drain (hooked, no MPS; preemption latency only). The harness drives
each worker over run_exp's pipes (gpuyield.worker) and pauses every process outside its setup's
segments ("pause" waits for the job in flight), so exactly one setup runs at a time; the others'
processes sit idle with their contexts. After each partition segment the LP's partition state and
partition_launches are read from `expcontroller status --json`; a round whose LP was not `active`
or sent nothing to the partition makes the run (or a --merge) exit 1 without a verdict.

Rounds: each round runs every setup once, in an order shuffled with a seed per round; hp_alone
and lp_alone are in every round. Per HP job its JCT; contended jobs are those of a contention
setup's segments. Per setup:
  hp_p50_ratio, hp_p99_ratio  nearest-rank percentile of the setup's HP JCTs / the same of the
                              hp_alone JCTs (pooled over the rounds)
  lp_throughput_ratio         LP jobs/s in the setup / LP jobs/s in lp_alone: one denominator for
                              every setup of the pair
Intervals (bench.gpu.stats): 95 % block bootstrap resampling whole rounds (a round's numerator and
denominator jobs together), never single jobs; --merge resamples invocation x round blocks and
reports the spread (min, max) of the invocations' point values.

Also logged: GPU clocks and power (nvidia-smi every 200 ms, into DIR/clocks.csv; no setting is
changed), summarised per setup; preemption latency with random arrivals (--latency-jobs HP jobs
at exponential gaps, seeded) for drain, corun and partition beside the busy LP, and for the HP
alone (the probe's own round trip): from the job's begin to its first kernel, a one-thread probe
seen done on the host (why the host clock: gpuyield.worker.make_probe); against the LP's longest
kernel (torch.profiler over 3 LP jobs alone).
"""
import argparse
import csv
import datetime
import json
import os
import random
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time

from .contention import IMAGE, PAIRS as CONTENTION_PAIRS
from .stats import nearest_rank, percentile_of, rate_of, ratio_with_interval, spread

SETUPS = ("hp_alone", "lp_alone", "nocontrol", "mps", "corun", "partition")
CONTENDED = ("nocontrol", "mps", "corun", "partition")
MPS_GROUPS = ("mps", "corun", "partition")  # the process sets that run under the MPS daemon
LATENCY = ("alone", "drain", "corun", "partition")  # "alone": the HP alone, the probe's own cost
GROUP_OF = {"hp_alone": "plain", "lp_alone": "plain", "nocontrol": "plain", "mps": "mps", "corun": "corun",
            "partition": "partition"}
RUNS_IN = {"hp_alone": ("hp",), "lp_alone": ("lp",)}  # the others run both


def worker_spec(spec, train=False):
    out = {"model": spec["model_name"], "batch": spec.get("batch_size", 1), "train": train}
    if spec.get("resize"):
        out["resize"] = "%dx%d" % tuple(spec["resize_size"])
    return out


PAIRS = {
    "reference": {"hp": worker_spec(CONTENTION_PAIRS["reference"]["hp"]),
                  "lp": worker_spec(CONTENTION_PAIRS["reference"]["lp"]), "hp_sleep": 0.01},
    "resnet": {"hp": worker_spec(CONTENTION_PAIRS["resnet"]["hp"]),
               "lp": worker_spec(CONTENTION_PAIRS["resnet"]["lp"]), "hp_sleep": 0.01},
    # Inference beside training: a BERT-base-sized encoder, batch 1, sequence 128, at about half
    # load (the sleep between jobs about its alone job time), beside ResNet-50 SGD steps, batch 64.
    "bert_train": {"hp": {"model": "transformer_encoder", "batch": 1, "seq_len": 128, "train": False},
                   "lp": {"model": "resnet50", "batch": 64, "resize": "224x224", "train": True}, "hp_sleep": 0.005},
}


# ---- the plan ----------------------------------------------------------------------------------

def schedule(rounds, seed, setups=SETUPS):
    """[(round, setup)] in run order: every setup once per round, shuffled with seed + round."""
    plan = []
    for r in range(rounds):
        order = list(setups)
        random.Random(seed * 1000 + r).shuffle(order)
        plan += [(r, s) for s in order]
    return plan


def segment_seconds(setup, args):
    return {"hp_alone": args.hp_alone_s, "lp_alone": args.lp_alone_s}.get(setup, args.contended_s)


def estimate_s(args, pairs):
    """Planned seconds of the whole invocation (start-up, segments, latency, stop)."""
    total = 0.0
    for pair in pairs:
        total += args.startup_s + 5  # loading, and stopping at the end
        total += sum(segment_seconds(s, args) + PAUSE_S for _, s in schedule(args.rounds, args.seed, args.setups))
        if pair in args.latency_pairs:
            total += len(LATENCY) * args.latency_jobs * (args.latency_gap + 0.03) + 5
    return total


PAUSE_S = 0.5  # a pause waits for the job in flight; a few hundred ms with FasterRCNN


# ---- the processes ----------------------------------------------------------------------------

class Worker:
    """One gpuyield.worker process spoken to over run_exp's two pipes."""

    def __init__(self, name, argv, env, log_path):
        status_r, status_w = os.pipe()
        control_r, control_w = os.pipe()
        env = dict(env, GPUYIELD_STATUS_FD=str(status_w), GPUYIELD_CONTROL_FD=str(control_r))
        self.name, self.buf, self.words, self.jobs = name, b"", [], 0
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen(argv, env=env, pass_fds=(status_w, control_r), stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        os.close(status_w)
        os.close(control_r)
        self.status, self.control = status_r, control_w

    def send(self, line):
        try:
            os.write(self.control, (line + "\n").encode())
        except BrokenPipeError:
            pass

    def take(self, data):
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            word = line.decode(errors="replace").split(" ", 1)[0]
            if word == "job":
                self.jobs += 1
            else:
                self.words.append(word)

    def stop(self, timeout_s=30):
        self.send("stop")
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.status)
        os.close(self.control)


def pump(workers, timeout_s):
    """Read whatever the workers reported within timeout_s."""
    fds = {w.status: w for w in workers if w.proc.poll() is None or w.status is not None}
    ready, _, _ = select.select(list(fds), [], [], max(timeout_s, 0))
    for fd in ready:
        data = os.read(fd, 65536)
        if data:
            fds[fd].take(data)


def wait_words(workers, word, timeout_s, what):
    """Until every worker said word (consumed); SystemExit naming the late ones otherwise."""
    deadline = time.monotonic() + timeout_s
    while True:
        late = [w for w in workers if word not in w.words]
        if not late:
            for w in workers:
                w.words.remove(word)
            return
        dead = [w for w in late if w.proc.poll() is not None]
        if dead or time.monotonic() > deadline:
            names = ", ".join(f"{w.name} ({'exited ' + str(w.proc.returncode) if w.proc.poll() is not None else 'silent'})"
                              for w in (dead or late))
            raise SystemExit(f"partition_verdict: {what}: no '{word}' from {names}; see the logs in --out")
        pump(workers, 0.1)


def wait_jobs(workers, watched, n, timeout_s):
    """Until `watched` ran n more jobs (the others' reports are read meanwhile)."""
    target, deadline = watched.jobs + n, time.monotonic() + timeout_s
    while watched.jobs < target and time.monotonic() < deadline and watched.proc.poll() is None:
        pump(workers, 0.1)


def sleep_pumping(workers, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pump(workers, min(0.2, end - time.monotonic()))


# ---- one pair --------------------------------------------------------------------------------

def worker_argv(args, spec, role, priority, sleep_s, run_dir, group):
    argv = [args.python, "-m", args.worker_module, "--name", f"{group}_{role}", "--model", spec["model"],
            "--input", IMAGE, "--batch-size", str(spec["batch"]), "--sleep-time", str(sleep_s),
            "--priority", str(priority), "--csv", os.path.join(run_dir, f"{group}_{role}.csv")]
    if spec.get("resize"):
        argv += ["--resize", spec["resize"]]
    if spec.get("seq_len"):
        argv += ["--seq-len", str(spec["seq_len"])]
    if spec.get("train"):
        argv += ["--train"]
    if role == "hp":
        argv += ["--latency-csv", os.path.join(run_dir, f"{group}_hp.latency.csv")]
    if role == "lp" and group == "plain":
        argv += ["--kernel-profile", os.path.join(run_dir, "lp_kernels.trace.json")]
    return argv


def base_env(args):
    """The harness's environment without anything that would make a plain process less plain."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CUDA_MPS_", "GPUYIELD_")) and k != "LD_PRELOAD"}
    py = os.path.join(args.build, "python")
    env["PYTHONPATH"] = py + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def group_env(args, group, role, segments, mps_dirs):
    env = base_env(args)
    if group in MPS_GROUPS and mps_dirs:
        env["CUDA_MPS_PIPE_DIRECTORY"], env["CUDA_MPS_LOG_DIRECTORY"] = mps_dirs
        if role == "lp" and args.lp_client_priority is not None:  # default 1, as run_exp: below normal
            env["CUDA_MPS_CLIENT_PRIORITY"] = str(args.lp_client_priority)
    if group in segments:
        env["LD_PRELOAD"] = os.path.join(args.build, "lib", "libgpuyield.so")
        env["GPUYIELD_SHM"] = segments[group]
        env["GPUYIELD_PRIORITY"] = "1" if role == "hp" else "0"
        env["GPUYIELD_MODE"] = {"corun": args.corun_mode, "partition": args.partition_mode,
                                "drain": args.drain_mode}[group] if role == "lp" else "none"
        if group == "partition":
            env["GPUYIELD_PARTITION_SMS"] = str(args.partition_sms)
    return env


def create_words(name, policy, mps_pipe):
    """expcontroller's words for a segment of policy; mps_pipe: its workers use that MPS daemon."""
    return ["create", "--name", name, "--policy", policy] + (["--mps-pipe", mps_pipe] if mps_pipe else [])


def policy_problems(raw):
    """Where the partition setup did not run the partition policy: its LP fell back (to drain
    without MPS, to corun without green contexts) or sent nothing to the partition. Ratios of such
    rounds describe another policy, so the verdict refuses them."""
    problems = []
    for pair, data in raw["pairs"].items():
        for i, rnd in enumerate(data["rounds"]):
            if "partition" not in rnd:
                continue
            check = rnd["partition"].get("lp_partition")
            if check is None:
                problems.append(f"{pair} round {i}: no record of the LP's partition state (a harness before that check)")
            elif check["state"] != "active":
                problems.append(f"{pair} round {i}: the LP's partition state is '{check['state']}', not 'active'")
            elif check["launches"] <= 0:
                problems.append(f"{pair} round {i}: the LP sent no launch to the partition")
    return problems


class Tool:
    """The MPS daemon and the gpuyield segments of one pair, and their removal."""

    def __init__(self, args, tag):
        self.args, self.tag, self.segments, self.mps_dirs = args, tag, {}, None

    def expcontroller(self, *words):
        return subprocess.run([os.path.join(self.args.build, "bin", "expcontroller"), *words],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def create_segment(self, policy):
        """The segment of one policy; those whose workers run under the MPS daemon say so (a partition
        segment that says no MPS makes its LP drain: the verdict of 2026-11-23 measured that)."""
        name = f"{self.tag}-{policy}"
        r = self.expcontroller(*create_words(name, policy, self.mps_dirs[0] if self.mps_dirs and policy in MPS_GROUPS
                                              else None))
        if r.returncode != 0:
            raise SystemExit(f"partition_verdict: cannot create a '{policy}' segment: {r.stdout.strip()} "
                             "(leave the setup out with --setups, or build the policy)")
        self.segments[policy] = name

    def lp_policy_state(self, group):
        """The LP's partition state and partition_launches so far, from `expcontroller status --json`."""
        r = self.expcontroller("status", "--name", self.segments[group], "--json")
        try:
            procs = json.loads(r.stdout)["processes"]
        except (ValueError, KeyError):
            return {"state": f"status failed: {r.stdout.strip()[:200]}", "partition_launches": 0}
        lp = [p for p in procs if p["priority"] == 0]
        if not lp:
            return {"state": "the LP is not registered", "partition_launches": 0}
        hook = max(lp, key=lambda p: p["partition_launches"])  # a process with the extension too has 2 slots
        return {"state": hook["partition"], "partition_launches": hook["partition_launches"]}

    def start_mps(self):
        root = f"/tmp/gy-verdict-mps-{os.getpid()}"
        self.mps_dirs = (os.path.join(root, "pipe"), os.path.join(root, "log"))
        for d in self.mps_dirs:
            os.makedirs(d, exist_ok=True)
        env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=self.mps_dirs[0], CUDA_MPS_LOG_DIRECTORY=self.mps_dirs[1])
        r = subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            self.mps_dirs = None
            raise SystemExit(f"partition_verdict: the MPS daemon did not start: {r.stdout.strip()}")

    def close(self):
        for name in self.segments.values():
            self.expcontroller("remove", "--name", name)
        if self.mps_dirs:
            env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=self.mps_dirs[0], CUDA_MPS_LOG_DIRECTORY=self.mps_dirs[1])
            subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", env=env, text=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(os.path.dirname(self.mps_dirs[0]), ignore_errors=True)


def run_pair(pair, args, progress):
    spec = PAIRS[pair]
    run_dir = os.path.join(args.out, pair)
    os.makedirs(run_dir, exist_ok=True)
    groups = sorted({GROUP_OF[s] for s in args.setups})
    latency = pair in args.latency_pairs
    if latency:
        groups += [g for g in ("corun", "partition", "drain") if g not in groups
                   and (g == "drain" or g in args.setups)]
    tools = Tool(args, f"verdict{os.getpid()}-{pair}")
    workers = {}
    windows = []  # {"setup", "round", "start_ns", "end_ns", "wall_start", "wall_end"}
    try:
        if not args.no_mps and any(g in MPS_GROUPS for g in groups):
            tools.start_mps()
        for g in groups:
            if g in ("corun", "partition", "drain"):
                tools.create_segment(g)
        for g in groups:
            for role, prio in (("hp", 1), ("lp", 0)):
                argv = worker_argv(args, spec[role], role, prio, spec["hp_sleep"] if role == "hp" else 0, run_dir, g)
                workers[(g, role)] = Worker(f"{g}_{role}", argv, group_env(args, g, role, tools.segments, tools.mps_dirs),
                                            os.path.join(run_dir, f"{g}_{role}.log"))
        everyone = list(workers.values())
        t0 = time.monotonic()
        wait_words(everyone, "ready", args.ready_timeout, f"{pair}: loading")
        for w in everyone:  # one job each, then all idle: the segments start from quiet
            w.send("go")
            w.send("pause")
        wait_words(everyone, "paused", 120, f"{pair}: first pause")
        progress(pair, "start-up", "-", time.monotonic() - t0)

        launches_before = 0  # the LP's partition_launches at the end of the last partition segment

        def segment(setup, rnd, roles, group, seconds=None, hp_jobs=None, options="", lp_options=""):
            nonlocal launches_before
            running = [workers[(group, r)] for r in roles]
            wall0, start = time.time(), time.monotonic_ns()
            for w in running:
                w.send(("go " + (options if w.name.endswith("_hp") else lp_options)).strip())
            if hp_jobs:
                wait_jobs(everyone, workers[(group, "hp")], hp_jobs, args.latency_timeout)
            else:
                sleep_pumping(everyone, seconds)
            end = time.monotonic_ns()
            for w in running:
                w.send("pause")
            wait_words(running, "running", 30, f"{pair} {setup}: resume")
            wait_words(running, "paused", 120, f"{pair} {setup}: pause")
            window = {"setup": setup, "round": rnd, "group": group, "start_ns": start, "end_ns": end,
                      "wall_start": wall0, "wall_end": time.time()}
            if group == "partition" and "lp" in roles:  # did the policy run, or fall back?
                now = tools.lp_policy_state(group)
                window["lp_partition"] = {"state": now["state"],
                                          "launches": now["partition_launches"] - launches_before}
                launches_before = now["partition_launches"]
            windows.append(window)
            progress(pair, setup, rnd, (end - start) / 1e9)

        if "plain" in groups and not args.no_kernel_profile:  # the LP's kernels, alone: what a higher job can wait behind
            segment("lp_kernels", "-", ("lp",), "plain", seconds=0.2, lp_options="profile=1")
        for rnd, setup in schedule(args.rounds, args.seed, args.setups):
            segment(setup, rnd, RUNS_IN.get(setup, ("hp", "lp")), GROUP_OF[setup], segment_seconds(setup, args))
        if latency:
            opts = f"gap=exp:{args.latency_gap} seed={args.seed} probe=1"
            for policy in LATENCY:
                group = "plain" if policy == "alone" else policy
                if group in groups:
                    segment("latency_" + policy, "-", ("hp",) if policy == "alone" else ("hp", "lp"), group,
                            hp_jobs=args.latency_jobs, options=opts)
    finally:
        for w in workers.values():
            w.stop()
        tools.close()
    return collect(run_dir, workers, windows)


def read_rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def collect(run_dir, workers, windows):
    """Per window, the jobs that started inside it: HP JCTs; LP count and span; latency rows."""
    rows = {key: read_rows(os.path.join(run_dir, f"{key[0]}_{key[1]}.csv")) for key in workers}
    lat = {g: read_rows(os.path.join(run_dir, f"{g}_hp.latency.csv")) for g, r in workers if r == "hp"}
    out = {"rounds": {}, "latency": {}, "windows": windows}
    for win in windows:
        inside = lambda r, key: win["start_ns"] <= int(r[key]) < win["end_ns"]
        hp = [r for r in rows.get((win["group"], "hp"), []) if inside(r, "start_ns")]
        lp = [r for r in rows.get((win["group"], "lp"), []) if inside(r, "start_ns")]
        seg = {"hp_jct": [float(r["jct_ms"]) for r in hp], "lp_jobs": len(lp),
               "lp_span_s": (max(int(r["end_ns"]) for r in lp) - min(int(r["start_ns"]) for r in lp)) / 1e9 if lp else 0.0}
        if "lp_partition" in win:
            seg["lp_partition"] = win["lp_partition"]
        if win["setup"].startswith("latency_"):
            out["latency"][win["setup"][8:]] = [(int(r["first_kernel_ns"]) - int(r["begin_ns"])) / 1e6
                                                for r in lat.get(win["group"], []) if inside(r, "begin_ns")]
        elif win["setup"] in SETUPS:
            out["rounds"].setdefault(str(win["round"]), {})[win["setup"]] = seg
    out["rounds"] = [out["rounds"][k] for k in sorted(out["rounds"], key=int)]
    out["lp_kernels"] = longest_kernels(os.path.join(run_dir, "lp_kernels.trace.json"))
    return out


def longest_kernels(trace_path):
    """The LP's kernels from torch.profiler's Chrome trace: the longest, and the p99 (ms)."""
    try:
        with open(trace_path) as f:
            events = json.load(f).get("traceEvents", [])
    except (OSError, ValueError) as e:
        return {"error": f"no kernel trace ({e})"}
    kernels = [(e["dur"] / 1e3, e.get("name", "?")) for e in events if e.get("cat") == "kernel" and "dur" in e]
    if not kernels:
        return {"error": "the trace holds no kernels"}
    longest = max(kernels)
    return {"kernels": len(kernels), "longest_ms": round(longest[0], 4), "longest_name": longest[1][:120],
            "p99_ms": round(nearest_rank([k[0] for k in kernels], 99), 4), "method": "torch.profiler (CUPTI), 3 LP jobs alone"}


# ---- clocks ----------------------------------------------------------------------------------

CLOCK_FIELDS = "timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu"


def start_clocks(path):
    if not shutil.which("nvidia-smi"):
        return None
    with open(path, "w") as f:
        return subprocess.Popen(["nvidia-smi", f"--query-gpu={CLOCK_FIELDS}", "--format=csv", "-lms", "200"],
                                stdout=f, stderr=subprocess.DEVNULL)


def stop_clocks(proc):
    if proc:
        proc.terminate()
        proc.wait()


def read_clocks(path):
    """[(unix time, sm MHz, power W)] from nvidia-smi's CSV (units in the cells)."""
    samples = []
    try:
        lines = open(path).read().splitlines()[1:]
    except OSError:
        return samples
    for line in lines:
        cells = [c.strip() for c in line.split(",")]
        try:
            t = datetime.datetime.strptime(cells[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((t, float(cells[1].split()[0]), float(cells[3].split()[0])))
        except (ValueError, IndexError):
            continue
    return samples


def clocks_by_setup(samples, windows):
    out = {}
    for setup in sorted({w["setup"] for w in windows}):
        inside = [s for s in samples if any(w["setup"] == setup and w["wall_start"] <= s[0] < w["wall_end"]
                                            for w in windows)]
        out[setup] = ({"samples": len(inside), "sm_mhz_median": statistics.median(s[1] for s in inside),
                       "sm_mhz_min": min(s[1] for s in inside), "power_w_median": statistics.median(s[2] for s in inside)}
                      if inside else {"samples": 0})
    return out


# ---- the verdict -----------------------------------------------------------------------------

def metrics(blocks, setup):
    """The three ratios of one setup over blocks (each a round: {setup: segment data})."""
    have = [b for b in blocks if setup in b and "hp_alone" in b and "lp_alone" in b]
    hp = lambda s: (lambda b: b[s]["hp_jct"])
    lp = lambda s: (lambda b: (b[s]["lp_jobs"], b[s]["lp_span_s"]))
    return have, {
        "hp_p50_ratio": ratio_with_interval(have, percentile_of(hp(setup), 50), percentile_of(hp("hp_alone"), 50)),
        "hp_p99_ratio": ratio_with_interval(have, percentile_of(hp(setup), 99), percentile_of(hp("hp_alone"), 99)),
        "lp_throughput_ratio": ratio_with_interval(have, rate_of(lp(setup)), rate_of(lp("lp_alone"))),
    }


def verdict(invocations, device, method):
    """verdict.json (the issue's format) and the summary (spread between invocations, per-round
    medians, clocks, latency) from one or more invocations' raw data."""
    pairs, summary = {}, {}
    names = sorted({p for inv in invocations for p in inv["pairs"]})
    for pair in names:
        per_inv = [inv["pairs"][pair] for inv in invocations if pair in inv["pairs"]]
        blocks = [rnd for data in per_inv for rnd in data["rounds"]]  # invocation x round blocks
        pairs[pair], summary[pair] = {}, {"setups": {}}
        for setup in CONTENDED:
            have, m = metrics(blocks, setup)
            if not have:
                continue
            pairs[pair][setup] = {"hp_jobs": sum(len(b[setup]["hp_jct"]) for b in have),
                                  "invocations": sum(1 for d in per_inv if any(setup in b for b in d["rounds"])), **m}
            points = [metrics(d["rounds"], setup)[1] for d in per_inv]
            summary[pair]["setups"][setup] = {
                "spread_between_invocations": {k: spread([p[k]["value"] for p in points]) for k in m},
                "round_hp_p50_ms": [[nearest_rank(b[setup]["hp_jct"], 50) for b in d["rounds"] if setup in b]
                                    for d in per_inv],
                "rounds": len(have)}
        summary[pair]["round_hp_alone_p50_ms"] = [[nearest_rank(b["hp_alone"]["hp_jct"], 50) for b in d["rounds"]
                                                   if "hp_alone" in b] for d in per_inv]
        summary[pair]["round_lp_alone_jobs_per_s"] = [[round(b["lp_alone"]["lp_jobs"] / b["lp_alone"]["lp_span_s"], 3)
                                                       for b in d["rounds"] if "lp_alone" in b and b["lp_alone"]["lp_span_s"]]
                                                      for d in per_inv]
        summary[pair]["latency_ms"] = latency_summary(per_inv)
        summary[pair]["lp_kernels"] = [d.get("lp_kernels") for d in per_inv]
        summary[pair]["clocks"] = [d.get("clocks") for d in per_inv]
    return {"device": device, "method": method, "pairs": pairs}, summary


def latency_summary(per_inv):
    out = {}
    for policy in LATENCY:
        xs = [x for d in per_inv for x in d.get("latency", {}).get(policy, [])]
        if xs:
            out[policy] = {"jobs": len(xs), "p50": round(nearest_rank(xs, 50), 4), "p99": round(nearest_rank(xs, 99), 4),
                           "max": round(max(xs), 4)}
    return out


def method_text(args):
    short = args.rounds < 3
    return ("HP and LP each alone as plain processes (no MPS, no hook, no LD_PRELOAD) interleaved with the setups in "
            f"{args.rounds} round(s) per invocation{' (FEWER THAN THE 3 THE ISSUE ASKS: --rounds)' if short else ''}, "
            f"setup order shuffled per round (seed {args.seed}); segments {args.contended_s} s contended, "
            f"{args.hp_alone_s} s hp_alone, {args.lp_alone_s} s lp_alone; one process set per kind kept for the "
            "whole pair and paused outside its segments (idle contexts of the other sets stay resident); "
            f"corun: gpuyield corun under MPS, LP {args.corun_mode}; partition: gpuyield partition under MPS, "
            f"GPUYIELD_PARTITION_SMS={args.partition_sms}, LP {args.partition_mode}; LP CUDA_MPS_CLIENT_PRIORITY "
            f"{'unset' if args.lp_client_priority is None else args.lp_client_priority} under MPS; "
            "HP p50/p99 ratio = nearest-rank percentile of the setup's HP JCTs / of hp_alone's, pooled over rounds; "
            "LP throughput ratio = LP jobs/s in the setup / in lp_alone (one denominator per pair); "
            "ci: 95 % block bootstrap resampling whole rounds (invocation x round when merged), 2000 resamples, seed 1"
            + ("; MPS DAEMON NOT STARTED (--no-mps: a dry run)" if args.no_mps else ""))


# ---- command line ----------------------------------------------------------------------------

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", required=True)
    ap.add_argument("--pairs", default="reference,resnet,bert_train")
    ap.add_argument("--setups", default=",".join(SETUPS), help="a subset of " + ",".join(SETUPS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--contended-s", type=float, default=6.0, help="seconds of each contended segment")
    ap.add_argument("--hp-alone-s", type=float, default=4.0)
    ap.add_argument("--lp-alone-s", type=float, default=3.0)
    ap.add_argument("--partition-sms", type=int, default=16)
    ap.add_argument("--corun-mode", default="time:500")
    ap.add_argument("--partition-mode", default="time:500")
    ap.add_argument("--drain-mode", default="time:500")
    ap.add_argument("--latency-pairs", default="reference,bert_train", help="pairs with the latency segments ('' none)")
    ap.add_argument("--latency-jobs", type=int, default=100)
    ap.add_argument("--latency-gap", type=float, default=0.03, help="mean of the exponential gap between HP jobs, s")
    ap.add_argument("--latency-timeout", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--startup-s", type=float, default=30, help="the estimate's loading time per pair")
    ap.add_argument("--ready-timeout", type=float, default=300)
    ap.add_argument("--device", default="")
    ap.add_argument("--lp-client-priority", type=lambda v: None if v == "unset" else int(v), default=1,
                    choices=(None, 0, 1), metavar="0|1|unset",
                    help="CUDA_MPS_CLIENT_PRIORITY of the LP under MPS (default 1, as run_exp; 'unset': not set)")
    ap.add_argument("--no-kernel-profile", action="store_true",
                    help="skip the LP's torch.profiler segment (under nsys: both use CUPTI, not tried together)")
    ap.add_argument("--python", default=os.environ.get("GPUYIELD_PYTHON") or sys.executable)
    ap.add_argument("--worker-module", default="gpuyield.worker", help="tests: a stand-in worker")
    ap.add_argument("--no-mps", action="store_true", help="tests: start no MPS daemon")
    ap.add_argument("--merge", nargs="+", metavar="DIR", help="the verdict over these invocations' raw.json")
    args = ap.parse_args(argv)
    args.pairs = [p for p in args.pairs.split(",") if p]
    args.setups = [s for s in args.setups.split(",") if s]
    args.latency_pairs = [p for p in args.latency_pairs.split(",") if p]
    bad = [p for p in args.pairs + args.latency_pairs if p not in PAIRS] + [s for s in args.setups if s not in SETUPS]
    if bad:
        ap.error(f"unknown pairs or setups {bad}: pairs {', '.join(PAIRS)}; setups {', '.join(SETUPS)}")
    if args.rounds < 1 or min(args.contended_s, args.hp_alone_s, args.lp_alone_s) <= 0:
        ap.error("--rounds must be >= 1 and the segment lengths > 0")
    if not {"hp_alone", "lp_alone"} <= set(args.setups):
        ap.error("--setups must keep hp_alone and lp_alone: every ratio is against them")
    return args


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.merge:
        raws = []
        for d in args.merge:
            with open(os.path.join(d, "raw.json")) as f:
                raws.append(json.load(f))
        problems = [f"{d}: {p}" for d, r in zip(args.merge, raws) for p in policy_problems(r)]
        if problems:
            print("partition_verdict: error: these invocations' partition setup did not run the partition policy, "
                  "so no verdict was written:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 1
        result, summary = verdict(raws, args.device or raws[0].get("device", ""),
                                  raws[0].get("method", "") + f"; merged over {len(raws)} invocations")
        write_json(os.path.join(args.out, "verdict.json"), result)
        write_json(os.path.join(args.out, "summary.json"), summary)
        print_table(result)
        return 0
    total = estimate_s(args, args.pairs)
    print(f"partition_verdict: {len(args.pairs)} pairs x {args.rounds} rounds x {len(args.setups)} setups; "
          f"estimated {total / 60:.1f} min", flush=True)
    started = time.monotonic()
    done = [0.0]

    def progress(pair, setup, rnd, seconds):
        done[0] += seconds + (PAUSE_S if setup in SETUPS else 0)
        elapsed = time.monotonic() - started
        print(f"[{pair}] {setup} round {rnd}: {seconds:.1f} s; elapsed {elapsed:.0f} s, "
              f"ETA {max(0.0, total - elapsed):.0f} s", flush=True)

    clocks = start_clocks(os.path.join(args.out, "clocks.csv"))
    raw = {"device": args.device, "method": method_text(args), "args": {k: v for k, v in vars(args).items()},
           "pairs": {}}
    try:
        for pair in args.pairs:
            raw["pairs"][pair] = run_pair(pair, args, progress)
            write_json(os.path.join(args.out, "raw.json"), raw)  # a cut-off invocation keeps what it measured
    finally:
        stop_clocks(clocks)
    samples = read_clocks(os.path.join(args.out, "clocks.csv"))
    for data in raw["pairs"].values():
        data["clocks"] = clocks_by_setup(samples, data["windows"]) if samples else "no nvidia-smi samples"
    write_json(os.path.join(args.out, "raw.json"), raw)
    problems = [] if args.no_mps else policy_problems(raw)
    if problems:
        print("partition_verdict: error: the partition setup did not run the partition policy, so no verdict was "
              "written (raw.json keeps the data; GPUYIELD_VERBOSE=1 on the LP says why it fell back):\n  "
              + "\n  ".join(problems), file=sys.stderr)
        return 1
    result, summary = verdict([raw], args.device, raw["method"])
    write_json(os.path.join(args.out, "verdict.json"), result)
    write_json(os.path.join(args.out, "summary.json"), summary)
    print_table(result)
    for pair, s in summary.items():
        print(f"[{pair}] latency ms {json.dumps(s['latency_ms'])}; LP kernels {json.dumps(s['lp_kernels'])}")
    return 0


def print_table(result):
    print(f"{'pair':<11}{'setup':<10}{'hp_jobs':>8}  {'p50 ratio [ci]':<26}{'p99 ratio [ci]':<26}{'LP thr ratio [ci]':<26}")
    for pair, setups in result["pairs"].items():
        for setup, v in setups.items():
            cell = lambda m: f"{m['value']} {m['ci']}"
            print(f"{pair:<11}{setup:<10}{v['hp_jobs']:>8}  {cell(v['hp_p50_ratio']):<26}{cell(v['hp_p99_ratio']):<26}"
                  f"{cell(v['lp_throughput_ratio']):<26}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
