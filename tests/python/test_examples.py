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
