"""bench.gpu.partition_explain on synthetic nsys exports whose slowdowns are known
(partition_explain_report.py), and its stage script end to end with a stand-in nsys."""
import fcntl
import json
import os
import subprocess
import sys

import pytest

from bench.gpu import partition_explain
from nsys_report import Report
from partition_explain_report import synthetic


def test_the_known_slowdowns_come_out(tmp_path):
    out = partition_explain.explain(synthetic(str(tmp_path / "r.sqlite")))
    g = out["partition"]
    assert list(out) == ["partition"] and g["hp_jobs"] == 20
    assert g["hp_job_ms_p50"] == 1.2 and g["hp_alone_job_ms_p50"] == 1.0
    assert g["hp_kernel_ms_per_job_p50"] == 0.36 and g["hp_alone_kernel_ms_per_job_p50"] == 0.3
    assert g["hp_kernel_time_ratio"] == 1.2 and g["hp_name_coverage"] == 1.0
    assert g["hp_growth_in_kernels"] == 0.3  # 60 us of the 200 us the job grew
    assert g["lp_kernels_in_job_p50"] == 2
    assert g["lp_gpu_busy_in_job_p50"] == round(800 / 1200, 4)
    assert g["lp_kernel_time_ratio_in_job"] == 8.0 and g["lp_kernel_time_ratio_between_jobs"] == 1.0
    assert g["lp_launch_calls_in_job_p50"] == 0.5
    assert g["lp_streams_in_job"] == [99] and g["lp_streams_between_jobs"] == [7]


def test_a_job_as_fast_as_alone_has_no_growth_to_explain(tmp_path):
    g = partition_explain.explain(synthetic(str(tmp_path / "r.sqlite"), hp_kernel_us=100, job_us=1000))["partition"]
    assert g["hp_kernel_time_ratio"] == 1.0 and g["hp_growth_in_kernels"] is None


def test_without_runtime_rows_the_launch_share_is_unknown(tmp_path):
    g = partition_explain.explain(synthetic(str(tmp_path / "r.sqlite"), with_launches=False))["partition"]
    assert g["lp_launch_calls_in_job_p50"] is None


def test_the_command_writes_the_json_and_bad_inputs_say_why(tmp_path, capsys):
    db = synthetic(str(tmp_path / "r.sqlite"))
    assert partition_explain.main([db, "--out", str(tmp_path / "x.json")]) == 0
    assert json.load(open(tmp_path / "x.json"))["partition"]["hp_jobs"] == 20
    capsys.readouterr()
    assert partition_explain.main([str(tmp_path / "missing.sqlite")]) == 1
    assert "no such file" in capsys.readouterr().err and not (tmp_path / "missing.sqlite").exists()
    empty = Report()
    empty.nvtx(1, 0, 10, "plain_hp job 1")
    empty.write(str(tmp_path / "alone_only.sqlite"))
    assert partition_explain.main([str(tmp_path / "alone_only.sqlite")]) == 1
    assert "no HP jobs of a contention group" in capsys.readouterr().err


def test_an_export_without_kernels_is_refused(tmp_path):
    r = Report()
    r.nvtx(1, 0, 10, "partition_hp job 1")
    r.write(str(tmp_path / "r.sqlite"), kernels=False)
    with pytest.raises(ValueError, match="no CUPTI_ACTIVITY_KIND_KERNEL table"):
        partition_explain.explain(str(tmp_path / "r.sqlite"))


def test_the_stage_script_runs_the_verdict_under_nsys_and_explains(tmp_path):
    """bench/gpu/partition_explain.sh end to end on CPU: a stand-in nsys (tests/bench/fake_nsys)
    around a real partition_verdict invocation with the stand-in worker, its export read."""
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    build = os.environ.get("BUILD", os.path.join(root, "build"))
    if not os.path.exists(os.path.join(build, "bin", "expcontroller")):
        pytest.skip("no build")
    env = dict(os.environ, NSYS=os.path.join(root, "tests", "bench", "fake_nsys"), PY=sys.executable,
               PATH=os.path.join(root, "tests", "run_exp", "bin") + os.pathsep + os.environ["PATH"],
               PE_VERDICT_ARGS="--worker-module fake_verdict_worker --no-mps", FAKE_NSYS_PIDS=str(tmp_path / "pids"),
               PYTHONPATH=os.pathsep.join([os.path.join(root, "tests", "bench"), os.path.join(build, "python"), root]))
    results, out = tmp_path / "results", tmp_path / "out"
    out.mkdir()
    # tests/lib/suite.sh's lock: the verdict's segments (made by `expcontroller create`) have no live
    # creator, so an `expcontroller clean` of a run beside ours would remove them under it.
    with open(os.environ.get("CLEAN_LOCK") or f"/tmp/gpuyield-{os.getuid()}-clean.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        r = subprocess.run(["bash", "bench/gpu/partition_explain.sh", build, str(results), str(out), "resnet", "0.3"],
                           cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    explained = json.loads((out / "explain_resnet.json").read_text())
    assert explained["partition"]["lp_kernel_time_ratio_in_job"] == 8.0
    verdict = json.loads((results / "resnet" / "verdict" / "verdict.json").read_text())
    assert set(verdict["pairs"]["resnet"]) == {"corun", "partition"}
    summary = json.loads((results / "resnet" / "verdict" / "summary.json").read_text())
    assert "no kernel trace" in summary["resnet"]["lp_kernels"][0]["error"]  # no torch.profiler under nsys
    assert not list(results.glob("resnet/rep*"))  # the big files are gone
    # The verdict's segments (verdict<pid>-...) are gone; other runs' beside this one are not ours to judge.
    pids = (tmp_path / "pids").read_text().split()
    assert pids and not [n for n in os.listdir("/dev/shm") for pid in pids if f"-verdict{pid}-" in n]
