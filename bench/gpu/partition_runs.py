"""The partition policy's H100 runs: an LP and an HP partition-bench side by side under one MPS
daemon that the caller started (bench/gpu/partition_proof.sh), each run in a segment of its own
served by `expcontroller serve --mps-pipe`.

  python3 bench/gpu/partition_runs.py proof --build B --out DIR --pipe PIPE [--sms 16] [--jobs 300] ...
      HP alone, then beside the LP under drain, corun and partition: the HP's job time (first marker
      to last) in each, and the SM-id proof (partition_records.sm_proof) of the partition run, with
      the LP's partition_launches from `expcontroller status --json`. Writes DIR/proof.json; exit 1
      when the proof fails or the partition was never used.
  python3 bench/gpu/partition_runs.py sweep --build B --out DIR --pipe PIPE [--sizes 8,16,24,32,48]
      [--rounds 3] [--jobs 150] ...
      Per round (order reversed every other round): HP alone, LP alone, and HP beside the LP under
      partition with each GPUYIELD_PARTITION_SMS. Writes DIR/sweep.json and prints the table.
Both first check that the build knows the partition policy and stop with one line if not.
"""
import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time

from bench.gpu import partition_records as pr

RUN_OVERHEAD_S = 4.0  # process starts under MPS, the LP's warm-up, its records written


class RunError(Exception):
    pass


def read_line(proc, timeout_s, what):
    """The next stdout line of proc within timeout_s, else RunError."""
    deadline = time.time() + timeout_s
    buf = b""
    fd = proc.stdout.fileno()
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, min(0.5, deadline - time.time())))
        if ready:
            chunk = os.read(fd, 1)
            if not chunk:
                break
            if chunk == b"\n":
                return buf.decode()
            buf += chunk
        elif proc.poll() is not None:
            break
    raise RunError(f"{what}: no line within {timeout_s:.0f} s (exit status {proc.poll()})")


def stop(proc, timeout_s):
    """SIGTERM, then SIGKILL after timeout_s; returns the exit status."""
    if proc is None or proc.poll() is not None:
        return None if proc is None else proc.returncode
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def tail(path, n=600):
    try:
        return open(path, errors="replace").read()[-n:].strip()
    except OSError:
        return ""


def policy_supported(build, pipe):
    """None if `expcontroller serve --policy partition` under the MPS daemon of pipe starts, else
    the line saying why not (a build without the partition policy refuses the value)."""
    tag = f"pp-check-{os.getpid()}"
    serve = subprocess.Popen([os.path.join(build, "bin", "expcontroller"), "serve", "--name", tag, "--policy", "partition",
                              "--mps-pipe", pipe], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        read_line(serve, 10, "serve")
        return None
    except RunError:
        stop(serve, 5)
        why = (serve.stderr.read().decode(errors="replace").strip().splitlines() or ["no message"])[0][:300]
        return (f"`expcontroller serve --policy partition --mps-pipe {pipe}` was refused ({why}): without the "
                f"partition policy in this build (merge issue18-partition and rebuild) nothing is measured")
    finally:
        stop(serve, 5)


def run_setup(label, policy, args, *, sms, lp, hp_jobs, record_blocks=False, lp_seconds=0.0, seed=1):
    """One run in its own segment. Returns {"label", "hp": HP JSON or None, "lp": LP meta or None,
    "lp_prefix", "partition_launches", "status"}; raises RunError with the reason."""
    tag = f"pp-{os.getpid()}-{label}"
    run_dir = os.path.join(args.out, "runs")
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(args.raw, exist_ok=True)
    # The tools are in bin/, the benchmark programs in bench/.
    exe = lambda name: os.path.join(args.build, "bench" if name == "partition-bench" else "bin", name)
    env = dict(os.environ, LD_PRELOAD=os.path.join(args.build, "lib", "libgpuyield.so"), GPUYIELD_SHM=tag,
               CUDA_MPS_PIPE_DIRECTORY=args.pipe, GPUYIELD_PARTITION_SMS=str(sms), GPUYIELD_VERBOSE="1")
    serve_err = os.path.join(run_dir, label + ".serve.err")
    lp_err, hp_err = (os.path.join(run_dir, f"{label}.{r}.err") for r in ("lp", "hp"))
    lp_prefix = os.path.join(args.raw, label)
    serve = lpp = None
    logs = [open(p, "w") for p in (serve_err, lp_err, hp_err)]
    out = {"label": label, "policy": policy, "sms": sms, "hp": None, "lp": None, "lp_prefix": lp_prefix,
           "partition_launches": None}
    try:
        serve = subprocess.Popen([exe("expcontroller"), "serve", "--name", tag, "--policy", policy, "--mps-pipe",
                                  args.pipe, "--drain-timeout-ms", "3000"],
                                 stdout=subprocess.PIPE, stderr=logs[0])
        try:
            read_line(serve, 10, f"{label}: expcontroller serve")
        except RunError as e:
            raise RunError(f"{e}: {tail(serve_err, 300)}")
        if lp:
            lpp = subprocess.Popen([exe("partition-bench"), "lp", lp_prefix, "--record-blocks", "1" if record_blocks else "0",
                                    "--spin-us", str(args.lp_spin_us), "--ring", str(args.ring)],
                                   stdout=subprocess.PIPE, stderr=logs[1],
                                   env=dict(env, GPUYIELD_PRIORITY="0", GPUYIELD_MODE=args.lp_mode))
            try:
                read_line(lpp, 60, f"{label}: the LP's first launch")
            except RunError as e:
                raise RunError(f"{e}: {tail(lp_err, 300)}")
            time.sleep(0.3)  # its queue fills
        if hp_jobs:
            hp_cmd = [exe("partition-bench"), "hp", str(hp_jobs), "--kernels", str(args.kernels), "--iters", str(args.iters),
                      "--idle-ms", args.idle_ms, "--seed", str(seed)]
            try:
                p = subprocess.run(hp_cmd, stdout=subprocess.PIPE, stderr=logs[2], text=True,
                                   env=dict(env, GPUYIELD_PRIORITY="1"), timeout=60 + hp_jobs * 0.2)
            except subprocess.TimeoutExpired:
                raise RunError(f"{label}: the HP did not finish in time ({tail(hp_err, 300)})")
            if p.returncode != 0:
                raise RunError(f"{label}: the HP exited {p.returncode}: {tail(hp_err, 300)}")
            out["hp"] = json.loads(p.stdout.strip().splitlines()[-1])
        else:
            time.sleep(lp_seconds)
        st = subprocess.run([exe("expcontroller"), "status", "--name", tag, "--json"], capture_output=True, text=True)
        if st.returncode == 0:
            status = json.loads(st.stdout)
            out["status_policy"] = status.get("policy")
            lows = [p for p in status.get("processes", []) if p.get("priority") == 0]
            if lows:
                out["partition_launches"] = lows[0].get("partition_launches")
                out["lp_launches_counted"] = lows[0].get("launches")
        if lpp:
            rc = stop(lpp, 120)
            if rc != 0:
                raise RunError(f"{label}: the LP exited {rc}: {tail(lp_err, 300)}")
            out["lp"] = json.loads(lpp.stdout.read().decode().strip().splitlines()[-1])
            lpp = None
        out["lp_verbose"] = tail(lp_err, 400)
        return out
    finally:
        stop(lpp, 10)
        stop(serve, 10)
        for f in logs:
            f.close()


def check_partition_used(run):
    """RunError unless the hook reported partition launches for the LP of a partition run."""
    n = run.get("partition_launches")
    if n is None:
        raise RunError(f"{run['label']}: `expcontroller status --json` has no partition_launches for the LP: the "
                       f"hook does not know the partition policy; LP stderr: {run.get('lp_verbose', '')[-200:]}")
    if n <= 0:
        raise RunError(f"{run['label']}: the LP sent 0 launches to the partition (fallback? LP stderr: "
                       f"{run.get('lp_verbose', '')[-300:]})")


def eta_line(what, runs, jobs, args):
    per_job_s = (sum(float(v) for v in args.idle_ms.split(",")) / 2 + 2.0) / 1e3
    return f"{what}: {runs} runs, about {runs * (RUN_OVERHEAD_S + jobs * per_job_s):.0f} s"


def cmd_proof(args):
    setups = [("alone", "corun", False), ("drain", "drain", True), ("corun", "corun", True),
              ("partition", "partition", True)]
    print(eta_line("partition proof", len(setups), args.jobs, args), flush=True)
    result = {"sms": args.sms, "lp_mode": args.lp_mode, "jobs": args.jobs, "kernels": args.kernels, "iters": args.iters,
              "setups": {}, "proofs": {}}
    failures = []
    for label, policy, with_lp in setups:
        t0 = time.time()
        run = run_setup(label, policy, args, sms=args.sms, lp=with_lp, hp_jobs=args.jobs, record_blocks=with_lp)
        d = pr.hp_durations(run["hp"])
        entry = {"policy": policy, "lp": with_lp, "job_ms": pr.summary(d["job_ms"]), "host_ms": pr.summary(d["host_ms"]),
                 "wait_ms": pr.summary(d["wait_ms"]), "timeouts": run["hp"]["timeouts"],
                 "partition_launches": run["partition_launches"], "status_policy": run.get("status_policy")}
        if with_lp:
            meta, launches, kernels = pr.read_lp(run["lp_prefix"])
            windows = pr.hp_windows(run["hp"])
            entry["lp_meta"] = meta
            entry["lp_throughput"] = pr.lp_throughput(launches, windows[0][0], windows[-1][1])
            entry["lp_throughput_inside_jobs"] = pr.lp_throughput_inside(launches, windows)
            proof = pr.sm_proof(kernels, windows, args.sms, sm_total=args.sm_total or None)
            result["proofs"][label] = proof
            name = label if label == "partition" else f"{label} (for contrast: the verdict is the partition run's)"
            for line in pr.proof_lines(name, proof):
                print(line, flush=True)
            pr.remove_lp_files(run["lp_prefix"])
        result["setups"][label] = entry
        j = entry["job_ms"]
        print(f"{label}: HP job p50 {j['p50']} ms p99 {j['p99']} ms (host p50 {entry['host_ms']['p50']} ms), "
              f"{time.time() - t0:.0f} s", flush=True)
        if label == "partition":
            try:
                check_partition_used(run)
            except RunError as e:
                failures.append(str(e))
    alone = result["setups"]["alone"]["job_ms"]
    for label, entry in result["setups"].items():
        entry["p50_ratio"] = round(entry["job_ms"]["p50"] / alone["p50"], 4)
        entry["p99_ratio"] = round(entry["job_ms"]["p99"] / alone["p99"], 4)
    proof = result["proofs"]["partition"]
    if not proof["ok"]:
        failures.append(f"the SM-id proof failed: {proof['violation_count']} violations, proven {proof['proven']}")
    result["ok"] = not failures
    result["failures"] = failures
    with open(os.path.join(args.out, "proof.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("HP job (first marker to last), ratio to alone: " + ", ".join(
        f"{k} p50 x{v['p50_ratio']} p99 x{v['p99_ratio']}" for k, v in result["setups"].items()), flush=True)
    for line in failures:
        print(f"partition proof: FAILED: {line}", flush=True)
    return 0 if not failures else 1


def cmd_sweep(args):
    sizes = [int(s) for s in args.sizes.split(",")]
    order = [("hp_alone", None)] + [("lp_alone", None)] + [(f"partition_{n}", n) for n in sizes]
    print(eta_line("partition sweep", args.rounds * len(order), args.jobs, args), flush=True)
    runs, failures = [], []
    for rnd in range(1, args.rounds + 1):
        for setup, n in (order if rnd % 2 else list(reversed(order))):
            t0 = time.time()
            label = f"{setup}_r{rnd}"
            if setup == "hp_alone":
                run = run_setup(label, "corun", args, sms=sizes[0], lp=False, hp_jobs=args.jobs, seed=rnd)
            elif setup == "lp_alone":
                run = run_setup(label, "corun", args, sms=sizes[0], lp=True, hp_jobs=0, lp_seconds=args.lp_alone_s)
            else:
                run = run_setup(label, "partition", args, sms=n, lp=True, hp_jobs=args.jobs, seed=rnd)
                try:
                    check_partition_used(run)
                except RunError as e:
                    failures.append(str(e))
            row = {"setup": setup, "round": rnd, "job_ms": [], "lp": None, "partition_launches": run["partition_launches"]}
            if run["hp"]:
                row["job_ms"] = pr.hp_durations(run["hp"])["job_ms"]
            if run["lp"]:
                _, launches, _ = pr.read_lp(run["lp_prefix"])
                if run["hp"]:
                    windows = pr.hp_windows(run["hp"])
                    row["lp"] = pr.lp_throughput(launches, windows[0][0], windows[-1][1])
                    row["lp_inside_jobs"] = pr.lp_throughput_inside(launches, windows)
                else:
                    span = pr.lp_alone_span(launches)
                    row["lp"] = pr.lp_throughput(launches, *span) if span else None
                pr.remove_lp_files(run["lp_prefix"])
            runs.append(row)
            p50 = pr.summary(row["job_ms"])["p50"] if row["job_ms"] else "-"
            print(f"round {rnd} {setup}: HP p50 {p50} ms, LP {row['lp']['blocks_per_s'] if row['lp'] else '-'} blocks/s, "
                  f"partition launches {run['partition_launches']} ({time.time() - t0:.0f} s)", flush=True)
    table = pr.sweep_table(runs, sizes)
    table.update(rounds=args.rounds, jobs_per_run=args.jobs, lp_mode=args.lp_mode, kernels=args.kernels,
                 iters=args.iters, failures=failures, runs=runs)
    with open(os.path.join(args.out, "sweep.json"), "w") as f:
        json.dump(table, f, indent=1)
    for line in pr.sweep_lines(table):
        print(line, flush=True)
    for line in failures:
        print(f"partition sweep: FAILED: {line}", flush=True)
    return 0 if not failures else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["proof", "sweep"])
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pipe", required=True, help="CUDA_MPS_PIPE_DIRECTORY of the running MPS daemon")
    ap.add_argument("--raw", default="/tmp/gy-partition-raw", help="where the LP's (large) records go; removed after reading")
    ap.add_argument("--sms", type=int, default=16, help="proof: GPUYIELD_PARTITION_SMS")
    ap.add_argument("--sizes", default="8,16,24,32,48", help="sweep: the GPUYIELD_PARTITION_SMS values")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=0, help="HP jobs per run (default: proof 300, sweep 150)")
    ap.add_argument("--kernels", type=int, default=10, help="HP work kernels per job")
    ap.add_argument("--iters", type=int, required=True, help="the work kernel's iterations (partition-bench calibrate)")
    ap.add_argument("--idle-ms", default="5,20", help="HP idle between jobs, MIN,MAX ms")
    ap.add_argument("--lp-mode", default="time:500", help="the LP's GPUYIELD_MODE (bounds what is queued at a job's begin)")
    ap.add_argument("--lp-spin-us", type=int, default=200)
    ap.add_argument("--lp-alone-s", type=float, default=2.0)
    ap.add_argument("--ring", type=int, default=32768, help="LP launch records kept (the latest)")
    ap.add_argument("--sm-total", type=int, default=0, help="the GPU's SM count, for the whole-GPU check outside jobs")
    args = ap.parse_args()
    # A timeout's SIGTERM unwinds like an error: the runs' finally blocks stop the LP and serve.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not args.jobs:
        args.jobs = 300 if args.command == "proof" else 150
    try:
        sizes_ok = all(int(s) > 0 for s in args.sizes.split(","))
    except ValueError:
        sizes_ok = False
    if not sizes_ok or args.sms <= 0 or args.rounds <= 0 or args.jobs <= 0:
        ap.error("--sizes takes positive integers separated by commas; --sms, --rounds and --jobs must be positive")
    os.makedirs(args.out, exist_ok=True)
    why = policy_supported(args.build, args.pipe)
    if why:
        print(f"partition_runs: {why}", file=sys.stderr)
        return 1
    try:
        return cmd_proof(args) if args.command == "proof" else cmd_sweep(args)
    except RunError as e:
        print(f"partition_runs: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
