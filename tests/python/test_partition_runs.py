"""bench/gpu/partition_runs.py end to end on fake programs (no GPU): a fake expcontroller (serve,
status --json, create) and a fake partition-bench whose LP writes the records a partition, corun
or drain run would give around the fake HP's jobs. Checks the runs' plumbing (segments served and
stopped, the LP's ready line and records, the status counter, the files removed), the proof and
the sweep's outputs, and the one-line refusals: a build without the partition policy, a hook
without the partition_launches counter."""
import json
import os
import stat
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FAKE_EXPCONTROLLER = r'''#!/usr/bin/env python3
import json, os, signal, sys, time
state = os.environ["FAKE_STATE"]
cmd, rest = sys.argv[1], sys.argv[2:]
opt = {rest[i]: rest[i + 1] for i in range(len(rest) - 1) if rest[i].startswith("--") and rest[i] != "--json"}
tag = opt.get("--name", "default")
if cmd == "create":
    if opt.get("--policy") == "partition" and os.environ.get("FAKE_NO_PARTITION"):
        print("expcontroller: --policy takes drain or corun, not 'partition'", file=sys.stderr)
        sys.exit(2)
    sys.exit(0)
if cmd == "remove":
    sys.exit(0)
if cmd == "serve":
    if opt.get("--policy") == "partition" and os.environ.get("FAKE_NO_PARTITION"):
        print("expcontroller: --policy takes drain or corun, not 'partition'", file=sys.stderr)
        sys.exit(2)
    open(os.path.join(state, tag + ".policy"), "w").write(opt["--policy"])
    open(os.path.join(state, tag + ".served"), "w").write(str(os.getpid()))
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print("/gpuyield-0-" + tag, flush=True)
    while not stop:
        time.sleep(0.01)
    os.remove(os.path.join(state, tag + ".served"))
    sys.exit(0)
if cmd == "status":
    policy = open(os.path.join(state, tag + ".policy")).read()
    proc = {"pid": 1, "priority": 0, "launches": 10}
    if not os.environ.get("FAKE_NO_COUNTER"):
        proc["partition_launches"] = 7 if policy == "partition" else 0
    print(json.dumps({"segment": tag, "policy": policy, "mps": True, "processes": [proc]}))
    sys.exit(0)
sys.exit(2)
'''

FAKE_BENCH = r'''#!/usr/bin/env python3
import json, os, signal, sys, time
from array import array
state, tag = os.environ["FAKE_STATE"], os.environ["GPUYIELD_SHM"]
role, arg = sys.argv[1], sys.argv[2]
MS, BASE = 1_000_000, 1_000_000_000
windows_path = os.path.join(state, tag + ".windows")
if role == "hp":
    jobs = int(arg)
    first = [BASE + j * 10 * MS for j in range(jobs)]
    last = [s + MS + (j % 3) * 100_000 for j, s in enumerate(first)]
    json.dump(list(zip(first, last)), open(windows_path, "w"))
    print(json.dumps({"role": "hp", "jobs": jobs, "timeouts": 0, "first_marker_ns": first, "last_marker_ns": last,
                      "begin_ns": [0] * jobs, "end_ns": [2 * MS] * jobs, "wait_ns": [0] * jobs}))
    sys.exit(0)
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
print("ready", flush=True)
while not stop:
    time.sleep(0.01)
windows = json.load(open(windows_path)) if os.path.exists(windows_path) else []
policy = open(os.path.join(state, tag + ".policy")).read()
n = int(os.environ["GPUYIELD_PARTITION_SMS"])
record = sys.argv[sys.argv.index("--record-blocks") + 1] == "1"
blocks, kernels, t = 40, [], BASE - 5 * MS
def launch(sms):
    global t
    sms = sorted(sms)
    starts = [t + i * 1000 for i in range(blocks)]
    kernels.append((starts, [sms[i % len(sms)] for i in range(blocks)]))
    t += 200_000
whole = lambda: range(len(kernels) % 4, 132, 4)
end = windows[-1][1] + 5 * MS if windows else BASE + 400 * MS
for ws, we in windows:
    while t < ws:
        launch(whole())
    launch(whole())  # queued before the job
    if policy == "partition":
        while t <= we:
            launch(range(40, 40 + n))
    else:
        t = we + 100_000
while t < end:
    launch(whole())
launches, starts, smids = array("Q"), array("Q"), array("I")
for i, (s, m) in enumerate(kernels):
    launches.extend([i, s[0], s[-1] + 200_000, blocks])
    starts.extend(s)
    smids.extend(m)
open(arg + ".launches.bin", "wb").write(launches.tobytes())
if record:
    open(arg + ".starts.bin", "wb").write(starts.tobytes())
    open(arg + ".smids.bin", "wb").write(smids.tobytes())
meta = {"role": "lp", "launches": len(kernels), "blocks": blocks, "record_blocks": record}
open(arg + ".json", "w").write(json.dumps(meta))
print(json.dumps(meta))
'''


def fake_build(tmp_path):
    build = tmp_path / "build"
    (build / "bin").mkdir(parents=True)
    (build / "bench").mkdir()
    (build / "lib").mkdir()
    (build / "lib" / "libgpuyield.so").write_text("")  # not loaded: LD_PRELOAD ignores it with a warning
    for name, text in (("expcontroller", FAKE_EXPCONTROLLER), ("partition-bench", FAKE_BENCH)):
        path = build / ("bin" if name == "expcontroller" else "bench") / name
        path.write_text(text.replace("/usr/bin/env python3", sys.executable, 1))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    state = tmp_path / "state"
    state.mkdir()
    return build, state


def run(tmp_path, command, *extra, env_extra=None):
    build, state = fake_build(tmp_path)
    out, raw = tmp_path / "out", tmp_path / "raw"
    env = dict(os.environ, FAKE_STATE=str(state), **(env_extra or {}))
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([sys.executable, "-m", "bench.gpu.partition_runs", command, "--build", str(build), "--out", str(out), "--pipe",
                        str(tmp_path / "pipe"), "--raw", str(raw), "--iters", "100", "--sm-total", "132", *extra],
                       capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)
    return p, out, raw, state


def test_proof_runs_the_four_setups_and_proves_the_partition(tmp_path):
    p, out, raw, state = run(tmp_path, "proof", "--jobs", "20", "--sms", "16")
    assert p.returncode == 0, p.stdout + p.stderr
    result = json.load(open(out / "proof.json"))
    assert result["ok"] and list(result["setups"]) == ["alone", "drain", "corun", "partition"]
    proof = result["proofs"]["partition"]
    assert proof["ok"] and proof["jobs_in_records"] == 20 and proof["partition_set_size"] == 16
    assert proof["distinct_sms_outside_jobs"] == 132
    assert not result["proofs"]["drain"]["proven"]  # the contrast: nothing on a partition
    assert result["setups"]["partition"]["partition_launches"] == 7
    assert result["setups"]["alone"]["p50_ratio"] == 1.0
    assert result["setups"]["partition"]["lp_throughput"]["launches_per_s"] > 0
    assert not list(raw.iterdir())  # the LP's large records are removed once read
    assert not [f for f in os.listdir(state) if f.endswith(".served")]  # every serve stopped


def test_sweep_interleaves_rounds_and_writes_the_table(tmp_path):
    p, out, raw, state = run(tmp_path, "sweep", "--jobs", "10", "--rounds", "2", "--sizes", "8,16", "--lp-alone-s", "0.1")
    assert p.returncode == 0, p.stdout + p.stderr
    table = json.load(open(out / "sweep.json"))
    order = [(r["round"], r["setup"]) for r in table["runs"]]
    assert order == [(1, "hp_alone"), (1, "lp_alone"), (1, "partition_8"), (1, "partition_16"),
                     (2, "partition_16"), (2, "partition_8"), (2, "lp_alone"), (2, "hp_alone")]
    assert set(table["sizes"]) == {"8", "16"} and table["sizes"]["16"]["jobs"] == 20
    assert table["sizes"]["8"]["partition_launches"] == [7, 7]
    assert table["lp_alone"]["blocks_per_s"] > 0 and table["suggested_default"]["sms"] in (8, 16)
    assert "suggested GPUYIELD_PARTITION_SMS default" in p.stdout
    assert not list(raw.iterdir())


def test_a_build_without_the_partition_policy_is_one_line_and_nothing_measured(tmp_path):
    p, out, raw, state = run(tmp_path, "proof", "--jobs", "5", env_extra={"FAKE_NO_PARTITION": "1"})
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "--policy partition" in lines[0] and "was refused" in lines[0]
    assert "takes drain or corun" in lines[0] and "nothing is measured" in lines[0]
    assert not (out / "proof.json").exists() and not os.listdir(state)  # no run was served


def test_a_hook_without_the_partition_counter_fails_the_proof(tmp_path):
    p, out, raw, state = run(tmp_path, "proof", "--jobs", "5", env_extra={"FAKE_NO_COUNTER": "1"})
    assert p.returncode == 1
    assert "no partition_launches" in p.stdout
    assert json.load(open(out / "proof.json"))["ok"] is False
