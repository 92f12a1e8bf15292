"""Fault injection: SIGKILL at chosen or random moments of each role of a simulated experiment
(run_exp --simulate: stand-in workers on the fake driver, gated by the real hook), many rounds.

    fault_injection.py --build BUILD --root ROOT [--rounds N] [--seed S] [--real]

--real: on a GPU machine, real Python workers (torch, random weights) instead of --simulate;
rounds then take ~20 s each (model loading). bench/gpu/fault_injection.sh runs it there.

Roles, each killed in every round:
  hp_in_job     the high-priority worker while one of its jobs is in progress
  lp_blocked    the low-priority worker while its launches are blocked
  lp_draining   the low-priority worker while its helper drains (else at a random moment)
  run_exp       run_exp itself, at a random moment
  serve         `expcontroller serve` that owns the segment run_exp joined (--shm)
Checks after each: no survivor stays blocked past a bound; high-priority jobs never wait past
the drain timeout; workers do not outlive run_exp; `expcontroller clean` removes what is left;
every CSV row written is whole. Prints one line per check and "N passed, N failed".
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

DRAIN_TIMEOUT_S = 2.0  # run_exp's segments: the controller's default
SURVIVOR_BOUND_S = 3.0  # a blocked survivor must be free this soon after the killing (reaping: 0.1 s)
RUN_BOUND_S = 25.0  # run_exp must be done this long after the killing
CSV_FIELDS = 8  # JOB_CSV_HEADER in run_exp/protocol.h

passed = failed = 0


def check(ok, name, why=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}", flush=True)
    else:
        failed += 1
        print(f"FAIL {name}: {why}", flush=True)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def children_by_model(parent):
    """Worker pids of a run_exp (its direct children), by --name."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        if b"--name" in args:
            found[args[args.index(b"--name") + 1].decode()] = int(entry)
    return found


class Env:
    def __init__(self, build, root, tmp, real):
        self.build, self.root, self.tmp, self.real = build, root, tmp, real
        self.exp = os.path.join(build, "bin", "expcontroller")
        self.uid = os.getuid()

    def status(self, segment):
        r = subprocess.run([self.exp, "status", "--name", segment, "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def config(self, out_dir, path):
        subprocess.run([sys.executable, os.path.join(self.root, "tests/run_exp/make_config.py"), path, "--image",
                        os.path.join(self.root, "exp_configs/images/street.png"), "--out-dir", out_dir,
                        "--set", "exp_dur=8", "--set", "models.0.control.control=true",
                        "--set", "models.1.control.control=true", "--set", "models.0.resize=true",
                        "--set", "models.0.resize_size=[1440, 2560]", "--set", "models.1.sleep_time=0.1"]
                       + (["--del", "models.0.model_weight", "--del", "models.1.model_weight"] if self.real else []),
                       check=True)

    def start_run(self, cfg, log, shm=None):
        if self.real:
            env = dict(os.environ)
            cmd = [os.path.join(self.build, "bin", "run_exp"), "-f", cfg]
        else:
            env = dict(os.environ, FAKE_GPUS="0", PATH=os.path.join(self.root, "tests/run_exp/bin") + ":" +
                       os.environ["PATH"])
            cmd = [os.path.join(self.build, "bin", "run_exp"), "-f", cfg, "--simulate"]
        if shm:
            cmd += ["--shm", shm]
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_ready(env, run, log_path, timeout):
    """Both workers loaded and released ("all models ready"): {model: pid}, or None."""
    until = time.monotonic() + timeout
    while time.monotonic() < until and run.poll() is None:
        with open(log_path) as f:
            ready = "all models ready" in f.read()
        workers = children_by_model(run.pid)
        if ready and len(workers) == 2:
            return workers
        time.sleep(0.02)
    return None


def wait_for_state(env, segment, pid, states, timeout):
    """Polls status until the process pid has a slot in one of states (or a job of level 1 is in
    progress when states is 'job'). True when seen."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        st = env.status(segment)
        if st:
            if states == "job" and st["jobs"][1] > 0:
                return True
            if any(p["pid"] == pid and p["state"] in states for p in st["processes"]):
                return True
        time.sleep(0.003)
    return False


def survivors_free(env, segment, dead_pid, bound):
    """After a kill: within bound, no slot of the dead process is left in the segment and no
    survivor is blocked, or the segment is gone (run_exp ended). Returns (ok, why)."""
    until = time.monotonic() + bound
    last = None
    while time.monotonic() < until:
        st = env.status(segment)
        if st is None:
            return True, ""
        dead_slots = [p for p in st["processes"] if p["pid"] == dead_pid]
        blocked = [p for p in st["processes"] if p["state"] == "blocked"]
        # Blocked is legitimate while a live job is above it; with the high worker dead no job remains.
        if not dead_slots and (not blocked or any(st["jobs"][lvl] for lvl in range(1, 8))):
            return True, ""
        last = st
        time.sleep(0.05)
    return False, f"after {bound} s: {json.dumps(last)[:400]}"


def csv_whole(path):
    """Every row has the header's field count and ends with a newline. Returns (ok, why, rows)."""
    if not os.path.exists(path):
        return True, "", []  # killed before the worker wrote it
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        return False, f"{path} ends with half a row: {data[-80:]!r}", []
    rows = [line.split(b",") for line in data.splitlines()]
    bad = [r for r in rows if len(r) != CSV_FIELDS]
    if bad:
        return False, f"{path}: a row of {len(bad[0])} fields: {b','.join(bad[0])[:120]!r}", []
    return True, "", rows[1:]


def hp_drain_bounded(out_dir):
    ok, why, rows = csv_whole(os.path.join(out_dir, "model_B.csv"))
    if not ok:
        return ok, why
    waits = [int(r[4]) for r in rows if r[4].strip().isdigit()]
    worst = max(waits, default=0) / 1e9
    return worst <= DRAIN_TIMEOUT_S + 0.5, f"a high-priority job waited {worst:.2f} s for the drain"


def finish_run(run, bound):
    try:
        return run.wait(timeout=bound)
    except subprocess.TimeoutExpired:
        run.kill()
        run.wait()
        return None


def clean(env):
    """expcontroller clean under the lock of tests/lib/suite.sh: a run beside ours may hold a
    segment whose creator has exited (made by `expcontroller create`)."""
    lock = os.environ.get("CLEAN_LOCK", f"/tmp/gpuyield-{os.getuid()}-clean.lock")
    subprocess.run(["flock", lock, env.exp, "clean"], capture_output=True)


def cleanup_segment(env, tag):
    subprocess.run([env.exp, "remove", "--name", tag], capture_output=True)


def one_round(env, role, rnd, rng, stats):
    name = f"{role}_{rnd}"
    out = os.path.join(env.tmp, name)
    cfg = os.path.join(env.tmp, f"{name}.json")
    env.config(out, cfg)
    log_path = os.path.join(env.tmp, f"{name}.log")
    log = open(log_path, "w")
    serve = None
    shm = None
    if role == "serve":
        shm = f"test-fi-{os.getpid()}-{rnd}"
        serve = subprocess.Popen([env.exp, "serve", "--name", shm], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        until = time.monotonic() + 5
        while not os.path.exists(f"/dev/shm/gpuyield-{env.uid}-{shm}") and time.monotonic() < until:
            time.sleep(0.02)
    run = env.start_run(cfg, log, shm)
    segment = shm or f"exp{run.pid}"
    workers = wait_ready(env, run, log_path, 240.0 if env.real else 60.0)
    if not workers or set(workers) != {"model_A", "model_B"}:
        check(False, f"{name}_started", f"workers not found: {workers}")
        run.kill(), run.wait()
        if serve:
            serve.kill(), serve.wait()
            cleanup_segment(env, shm)
        return
    lp, hp = workers["model_A"], workers["model_B"]
    time.sleep(rng.uniform(0.1, 4.0 if env.real else 1.2))  # a random moment of the run
    how = "random"
    if role == "hp_in_job":
        how = "in a job" if wait_for_state(env, segment, hp, "job", 2.0) else "random"
        victim = hp
    elif role == "lp_blocked":
        how = "blocked" if wait_for_state(env, segment, lp, ("blocked",), 2.0) else "random"
        victim = lp
    elif role == "lp_draining":
        how = "draining" if wait_for_state(env, segment, lp, ("draining",), 2.0) else "random"
        victim = lp
    elif role == "run_exp":
        victim = run.pid
    else:
        victim = serve.pid
    # exp_dur (8 s) outlasts the moment chosen (at most 3.2 s): a victim gone means a slow machine
    # let the run end first; that round tested nothing, which is a failure, not a crash.
    try:
        os.kill(victim, signal.SIGKILL)
    except ProcessLookupError:
        check(False, f"{name}_killed_during_the_run", f"{role} (pid {victim}) had exited before its kill")
        run.kill(), run.wait()
        if serve:
            serve.kill(), serve.wait()
            cleanup_segment(env, shm)
        log.close()
        return
    killed_at = time.monotonic()
    stats.setdefault(role, {}).setdefault(how, 0)
    stats[role][how] += 1

    if role in ("hp_in_job", "lp_blocked", "lp_draining"):
        ok, why = survivors_free(env, segment, victim, SURVIVOR_BOUND_S)
        check(ok, f"{name}_survivor_not_blocked ({how})", why)
    if role == "run_exp":
        run.wait()
        until = time.monotonic() + SURVIVOR_BOUND_S
        while time.monotonic() < until and (alive(lp) or alive(hp)):
            time.sleep(0.05)
        check(not alive(lp) and not alive(hp), f"{name}_workers_do_not_outlive_run_exp",
              f"still alive {time.monotonic() - killed_at:.1f} s later: " +
              " ".join(str(p) for p in (lp, hp) if alive(p)))
        for p in (lp, hp):
            if alive(p):
                os.kill(p, signal.SIGKILL)
        seg = f"/dev/shm/gpuyield-{env.uid}-{segment}"
        left = os.path.exists(seg)
        clean(env)
        check(not os.path.exists(seg), f"{name}_clean_removes_the_segment",
              f"{seg} {'was left and ' if left else ''}is still there after expcontroller clean")
        for f in os.listdir(tempfile.gettempdir()):
            if f == f"gpuyield-sim-{env.uid}-{run.pid}.dev":
                os.unlink(os.path.join(tempfile.gettempdir(), f))
    else:
        rc = finish_run(run, RUN_BOUND_S)
        check(rc is not None, f"{name}_run_exp_finishes", f"still running {RUN_BOUND_S} s after the kill")
        if role == "serve":
            check(rc == 0, f"{name}_run_unharmed_by_serve_death", f"run_exp exited {rc}")
        until = time.monotonic() + SURVIVOR_BOUND_S
        while time.monotonic() < until and (alive(lp) or alive(hp)):
            time.sleep(0.05)
        check(not alive(lp) and not alive(hp), f"{name}_no_worker_left",
              " ".join(str(p) for p in (lp, hp) if alive(p)))
        ok, why = hp_drain_bounded(out)
        check(ok, f"{name}_hp_never_waits_past_the_drain_timeout", why)
        if role != "serve":
            seg = f"/dev/shm/gpuyield-{env.uid}-{segment}"
            check(not os.path.exists(seg), f"{name}_run_exp_removed_its_segment", f"{seg} was left")
    for model in ("model_A", "model_B"):
        ok, why, rows = csv_whole(os.path.join(out, f"{model}.csv"))
        stats["rows"] = stats.get("rows", 0) + len(rows)
        check(ok, f"{name}_{model}_rows_whole", why)
    if serve:
        serve.wait()
        seg = f"/dev/shm/gpuyield-{env.uid}-{shm}"
        clean(env)
        check(not os.path.exists(seg), f"{name}_clean_removes_the_dead_serve_segment", f"{seg} is still there")
        cleanup_segment(env, shm)
    log.close()


def side_by_side(env):
    """Isolation end to end: two experiments of this user at once; each segment lists only its own
    workers, both complete."""
    runs = []
    for which in ("left", "right"):
        out, cfg = os.path.join(env.tmp, f"side_{which}"), os.path.join(env.tmp, f"side_{which}.json")
        env.config(out, cfg)
        log_path = os.path.join(env.tmp, f"side_{which}.log")
        log = open(log_path, "w")
        runs.append((env.start_run(cfg, log), log, log_path))
    workers = [wait_ready(env, run, log_path, 240.0 if env.real else 15.0) for run, _, log_path in runs]
    seen = [set(), set()]
    until = time.monotonic() + 1.5
    while time.monotonic() < until and all(w for w in workers):
        for i, (run, _, _) in enumerate(runs):
            st = env.status(f"exp{run.pid}")
            if st:
                seen[i] |= {p["pid"] for p in st["processes"]}
        time.sleep(0.05)
    codes = [finish_run(run, RUN_BOUND_S) for run, _, _ in runs]
    for _, log, _ in runs:
        log.close()
    mine = [set(w.values()) if w else set() for w in workers]
    check(all(workers) and seen[0] == mine[0] and seen[1] == mine[1], "side_by_side_segments_list_only_their_own",
          f"workers {mine}, segments listed {seen}")
    check(codes == [0, 0], "side_by_side_both_complete", f"exit statuses {codes}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--real", action="store_true", help="real workers on a GPU instead of --simulate")
    a = ap.parse_args()
    needs = [os.path.join(a.build, p) for p in ("bin/run_exp", "bin/expcontroller", "lib/libgpuyield.so") +
             (() if a.real else ("bin/gpuyield-standin", "fakecuda/libcuda.so.1"))]
    missing = [p for p in needs if not os.path.exists(p)]
    if missing:
        check(False, "fault_injection_prerequisites", "missing " + " ".join(missing) + ": build them")
        print(f"{passed} passed, {failed} failed")
        return 1
    seed = a.seed if a.seed is not None else int(time.time())
    rng = random.Random(seed)
    stats = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gpuyield-fi-") as tmp:
        env = Env(a.build, a.root, tmp, a.real)
        side_by_side(env)
        for rnd in range(a.rounds):
            for role in ("hp_in_job", "lp_blocked", "lp_draining", "run_exp", "serve"):
                one_round(env, role, rnd, rng, stats)
    rows = stats.pop("rows", 0)
    kills = sum(sum(v.values()) for v in stats.values())
    print(f"fault injection ({'real workers on the GPU' if a.real else 'simulated: fake driver'}): "
          f"seed {seed}, {a.rounds} rounds x 5 roles = {kills} SIGKILLs in "
          f"{time.monotonic() - t0:.0f} s; {rows} CSV rows checked; moments: " +
          "; ".join(f"{r}: " + ", ".join(f"{n} {h}" for h, n in v.items()) for r, v in stats.items()))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
