"""examples/ (the README's quick start) runs as written, on the fake driver: examples/run.sh starts
the controller, the training script under the hook at priority 0 and the inference script at
priority 1 on one simulated GPU (FAKECUDA_DEVICE_FILE: the two processes contend for it). Without
PyTorch the scripts launch spin kernels through the driver API (examples/workload.py). The gating
must show in the trainer's counters from `expcontroller status --json`: it waited behind the
requests and drained for them; and every request found its work to drain."""
import json
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD") or os.path.join(ROOT, "build")
FAKE = os.path.join(BUILD, "fakecuda")


def run_example(tmp_path, requests, extra_env=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUYIELD_") and k != "LD_PRELOAD"}
    env.update(BUILD=BUILD, LD_LIBRARY_PATH=FAKE, FAKECUDA_DEVICE_FILE=str(tmp_path / "gpu"),
               STATUS_JSON=str(tmp_path / "status.json"), GPUYIELD_SHM=f"test-examples-{os.getpid()}",
               WARMUP_S="0.5", **(extra_env or {}))
    out = subprocess.run(["bash", os.path.join(ROOT, "examples", "run.sh"), "--requests", str(requests),
                          "--interval", "0.02"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout, json.loads((tmp_path / "status.json").read_text())


@pytest.fixture
def fake_driver():
    if not os.path.exists(os.path.join(FAKE, "libcuda.so.1")):
        pytest.skip(f"no fake driver in {FAKE} (build first: ./make.sh)")


def test_quick_start_gates_the_trainer_for_every_request(fake_driver, tmp_path):
    stdout, status = run_example(tmp_path, requests=15)
    line = re.search(r"infer: (\d+) requests, .* (\d+) found lower-priority work to drain", stdout)
    assert line, stdout
    assert int(line.group(1)) == 15
    assert int(line.group(2)) >= 1, stdout  # a drained job: the trainer had work queued when it began
    assert re.search(r"^train: [1-9]\d* steps$", stdout, re.M), stdout
    trainers = [p for p in status["processes"] if p["name"] == "train"]
    assert len(trainers) >= 1, status
    train = {k: sum(p[k] for p in trainers) for k in ("launches", "waits", "drains", "sync_points")}
    assert all(p["priority"] == 0 for p in trainers)
    assert train["launches"] > 0
    assert train["waits"] >= 1, train   # its launches blocked behind a request
    assert train["drains"] >= int(line.group(2)), train  # it drained for every request that found its work
    assert train["sync_points"] > 0, train  # GPUYIELD_MODE=time:1000 bounded its queue
    assert status["job_epoch"] == 15 and status["jobs"] == [0] * 8
    assert not os.path.exists(f"/dev/shm/gpuyield-{os.getuid()}-test-examples-{os.getpid()}")  # serve removed it


def test_without_the_hook_nothing_is_gated(fake_driver, tmp_path):
    """The counters above come from the hook: with a library that is not the hook preloaded (here
    none: LD_PRELOAD names a missing file, which the loader ignores with a warning) the trainer is
    not registered at all."""
    stdout, status = run_example(tmp_path, requests=3, extra_env={"HOOK": str(tmp_path / "none.so")})
    assert not [p for p in status["processes"] if p["name"] == "train"], status


def test_an_unmodified_server_is_high_priority_by_its_environment(fake_driver, tmp_path):
    """examples/run_auto.sh (issue 27): auto_server.py imports nothing of gpuyield; under
    GPUYIELD_JOBS=auto the hook opens one job per request (requests 20 ms apart, idle 2 ms), and the
    trainer waits and drains for them as it does for marked jobs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUYIELD_") and k != "LD_PRELOAD"}
    env.update(BUILD=BUILD, LD_LIBRARY_PATH=FAKE, FAKECUDA_DEVICE_FILE=str(tmp_path / "gpu"),
               STATUS_JSON=str(tmp_path / "status.json"), GPUYIELD_SHM=f"test-examples-auto-{os.getpid()}",
               WARMUP_S="0.5")
    out = subprocess.run(["bash", os.path.join(ROOT, "examples", "run_auto.sh"), "--requests", "12",
                          "--interval", "0.02"], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"^auto_load: 12 requests, latency p50 ", out.stdout, re.M), out.stdout
    assert re.search(r"^auto_server: 12 requests served$", out.stdout, re.M), out.stdout
    with open(os.path.join(ROOT, "examples", "auto_server.py")) as f:
        assert "gpuyield" not in "".join(line for line in f if line.startswith(("import", "from"))), "it imports gpuyield"
    status = json.loads((tmp_path / "status.json").read_text())
    servers = [p for p in status["processes"] if p["name"] == "auto_server"]
    trainers = [p for p in status["processes"] if p["name"] == "train"]
    assert len(servers) == 1 and trainers, status
    server = servers[0]
    assert server["priority"] == 1 and server["launches"] > 0
    # One job per request: each request's kernels are one burst, 20 ms from the next.
    assert server["auto_jobs"] == 12, server
    assert server["auto_job_ns"] > 12 * 2_000_000, server  # each open at least its idle time
    assert status["job_epoch"] == 12 and status["jobs"] == [0] * 8, status
    train = {k: sum(p[k] for p in trainers) for k in ("launches", "waits", "drains", "auto_jobs")}
    assert train["launches"] > 0 and train["auto_jobs"] == 0, train
    assert train["waits"] >= 1, train   # its launches blocked behind the server's auto jobs
    assert train["drains"] >= 1, train  # and it drained its queue for them
