"""bench.gpu.stats (the benchmarks' one statistics module) and partition_verdict's plan and
verdict shape, on synthetic inputs."""
import contextlib
import fcntl
import json
import os
import subprocess
import sys

import pytest

from bench.gpu import partition_verdict as pv
from bench.gpu import stats

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@contextlib.contextmanager
def clean_lock():
    """tests/lib/suite.sh's lock: the verdict's segments are made by `expcontroller create` and have
    no live creator, so an `expcontroller clean` of a run beside ours would remove them under it."""
    path = os.environ.get("CLEAN_LOCK") or f"/tmp/gpuyield-{os.getuid()}-clean.lock"
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def run_verdict(args, env):
    """partition_verdict run as a child; returns (returncode, output, its pid). The pid names its
    segments (verdict<pid>-<pair>-<policy>), so a check sees only this run's, not other runs' beside it."""
    with clean_lock():
        p = subprocess.Popen([sys.executable, "-m", "bench.gpu.partition_verdict", *args], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
    return p.returncode, out, p.pid


def segments_of_verdict(pid):
    return [n for n in os.listdir("/dev/shm") if f"-verdict{pid}-" in n]


def test_nearest_rank_on_known_inputs():
    assert stats.nearest_rank([40, 10, 30, 20], 50) == 20
    assert stats.nearest_rank(list(range(1, 101)), 99) == 99
    assert stats.nearest_rank(list(range(1, 91)), 99) == 90  # under 100 values: the maximum
    assert stats.nearest_rank([5.0], 0) == 5.0 and stats.nearest_rank([], 50) is None
    with pytest.raises(ValueError):
        stats.nearest_rank([1], 101)


def test_block_bootstrap_keeps_blocks_together():
    # Two blocks, each of one repeated value: a resample holds whole blocks, so the pooled
    # values come only in multiples of a block (never a mixture inside one block).
    blocks = [[1.0] * 5, [2.0] * 5]
    seen = set()

    def stat(strata):
        pooled = stats.pooled(strata[0], list)
        assert len(pooled) == 10 and pooled.count(1.0) % 5 == 0
        seen.add(pooled.count(1.0))
        return sum(pooled)

    stats.block_bootstrap([blocks], stat, resamples=200)
    assert seen == {0, 5, 10}


def test_ratio_interval_contains_the_point_and_is_deterministic():
    blocks = [{"n": [10 + i + r for i in range(20)], "d": [10 + i for i in range(20)]} for r in range(6)]
    a = stats.ratio_with_interval(blocks, stats.percentile_of(lambda b: b["n"], 50),
                                  stats.percentile_of(lambda b: b["d"], 50))
    b = stats.ratio_with_interval(blocks, stats.percentile_of(lambda b: b["n"], 50),
                                  stats.percentile_of(lambda b: b["d"], 50))
    assert a == b
    assert a["ci"][0] <= a["value"] <= a["ci"][1] and a["ci"][0] < a["ci"][1]
    other = stats.ratio_with_interval(blocks, stats.percentile_of(lambda b: b["n"], 50),
                                      stats.percentile_of(lambda b: b["d"], 50), seed=2)
    assert other["value"] == a["value"]


def test_rate_pools_counts_over_seconds():
    rate = stats.rate_of(lambda b: b)
    assert rate([(10, 1.0), (30, 3.0)]) == 10.0 and rate([(1, 0.0)]) is None


def test_consecutive_blocks_and_spread():
    assert stats.consecutive_blocks([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]
    assert stats.spread([1.02, None, 0.98]) == {"min": 0.98, "max": 1.02, "n": 2}


def test_schedule_runs_every_setup_once_per_round_in_a_seeded_order():
    plan = pv.schedule(3, 7)
    assert len(plan) == 3 * len(pv.SETUPS)
    for r in range(3):
        assert sorted(s for rr, s in plan if rr == r) == sorted(pv.SETUPS)
    assert plan == pv.schedule(3, 7)
    assert [s for _, s in plan[:6]] != [s for _, s in plan[6:12]] or [s for _, s in plan[6:12]] != [s for _, s in plan[12:]]


def segment(hp_ms, lp_jobs, lp_s):
    return {"hp_jct": hp_ms, "lp_jobs": lp_jobs, "lp_span_s": lp_s}


def fake_invocation(slow):
    rounds = []
    for r in range(3):
        rnd = {"hp_alone": segment([10.0 + r] * 100, 0, 0.0), "lp_alone": segment([], 100, 1.0)}
        for setup in pv.CONTENDED:
            rnd[setup] = segment([(10.0 + r) * slow] * 100, 60, 1.0)
        rounds.append(rnd)
    return {"device": "fake", "pairs": {"resnet": {"rounds": rounds, "latency": {"corun": [0.1, 0.2]}}}}


def test_verdict_has_the_issue_format_and_one_lp_denominator():
    result, summary = pv.verdict([fake_invocation(1.5)], "fake GPU", "method")
    assert set(result) == {"device", "method", "pairs"}
    assert set(result["pairs"]["resnet"]) == set(pv.CONTENDED)
    for v in result["pairs"]["resnet"].values():
        assert set(v) == {"hp_jobs", "invocations", "hp_p50_ratio", "hp_p99_ratio", "lp_throughput_ratio"}
        assert v["hp_jobs"] == 300 and v["invocations"] == 1
        assert v["hp_p50_ratio"]["value"] == 1.5 and v["lp_throughput_ratio"]["value"] == 0.6
        assert v["lp_throughput_ratio"]["ci"] == [0.6, 0.6]
    assert summary["resnet"]["latency_ms"]["corun"]["p99"] == 0.2


def test_merged_invocations_report_their_spread():
    result, summary = pv.verdict([fake_invocation(1.2), fake_invocation(1.4)], "fake GPU", "method")
    corun = result["pairs"]["resnet"]["corun"]
    assert corun["invocations"] == 2 and corun["hp_jobs"] == 600
    spread = summary["resnet"]["setups"]["corun"]["spread_between_invocations"]["hp_p50_ratio"]
    assert spread == {"min": 1.2, "max": 1.4, "n": 2}
    assert corun["hp_p50_ratio"]["ci"][0] >= 1.2 and corun["hp_p50_ratio"]["ci"][1] <= 1.4


def checked_invocation(slow, state="active", launches=500):
    inv = fake_invocation(slow)
    for rnd in inv["pairs"]["resnet"]["rounds"]:
        rnd["partition"]["lp_partition"] = {"state": state, "launches": launches}
    return inv


def test_a_partition_setup_that_fell_back_is_refused():
    assert pv.policy_problems(checked_invocation(1.0)) == []
    drained = pv.policy_problems(checked_invocation(1.0, state="fallback: no MPS (drain)"))
    assert len(drained) == 3 and "'fallback: no MPS (drain)', not 'active'" in drained[0]
    assert "sent no launch" in pv.policy_problems(checked_invocation(1.0, launches=0))[0]
    assert "no record" in pv.policy_problems(fake_invocation(1.0))[0]  # raw data of a harness without the check
    no_partition = fake_invocation(1.0)
    for rnd in no_partition["pairs"]["resnet"]["rounds"]:
        del rnd["partition"]
    assert pv.policy_problems(no_partition) == []


def test_merge_refuses_invocations_whose_partition_was_not_checked(tmp_path):
    for name, inv in (("good", checked_invocation(1.1)), ("old", fake_invocation(1.2))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "raw.json").write_text(json.dumps(inv))
    out = tmp_path / "merged"
    assert pv.main(["--merge", str(tmp_path / "good"), str(tmp_path / "old"), "--out", str(out)]) == 1
    assert not (out / "verdict.json").exists()
    assert pv.main(["--merge", str(tmp_path / "good"), "--out", str(out)]) == 0
    assert json.loads((out / "verdict.json").read_text())["pairs"]["resnet"]["partition"]["invocations"] == 1


def test_segments_under_mps_say_so():
    assert pv.create_words("t", "partition", "/m/pipe")[-2:] == ["--mps-pipe", "/m/pipe"]
    assert "--mps-pipe" not in pv.create_words("t", "drain", None)


def test_fewer_rounds_than_asked_say_so_in_the_method():
    args = pv.parse_args(["--out", "x", "--rounds", "2"])
    assert "FEWER THAN THE 3" in pv.method_text(args)
    with pytest.raises(SystemExit):
        pv.parse_args(["--out", "x", "--setups", "nocontrol,corun"])  # no alone baselines


def test_the_lp_mps_client_priority_is_a_choice_and_in_the_method():
    env = lambda *flags: pv.group_env(pv.parse_args(["--out", "x", *flags]), "partition", "lp", {}, ("/p", "/l"))
    assert env()["CUDA_MPS_CLIENT_PRIORITY"] == "1"  # as run_exp
    assert env("--lp-client-priority", "0")["CUDA_MPS_CLIENT_PRIORITY"] == "0"
    assert "CUDA_MPS_CLIENT_PRIORITY" not in env("--lp-client-priority", "unset")
    hp = pv.group_env(pv.parse_args(["--out", "x"]), "partition", "hp", {}, ("/p", "/l"))
    assert "CUDA_MPS_CLIENT_PRIORITY" not in hp
    assert "CUDA_MPS_CLIENT_PRIORITY unset" in pv.method_text(pv.parse_args(["--out", "x", "--lp-client-priority", "unset"]))
    with pytest.raises(SystemExit):
        pv.parse_args(["--out", "x", "--lp-client-priority", "2"])


def test_dry_run_end_to_end_with_a_stand_in_worker(tmp_path):
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    if not os.path.exists(os.path.join(build, "bin", "expcontroller")):
        pytest.skip("no build")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "bench"), os.path.join(build, "python"),
                                                       ROOT]))
    out = tmp_path / "v"
    rc, stdout, pid = run_verdict(["--build", build, "--out", str(out), "--worker-module", "fake_verdict_worker",
                                   "--no-mps", "--pairs", "resnet", "--setups", "hp_alone,lp_alone,nocontrol,corun",
                                   "--rounds", "2", "--contended-s", "0.3", "--hp-alone-s", "0.2", "--lp-alone-s", "0.2",
                                   "--latency-pairs", "resnet", "--latency-jobs", "5"], env)
    assert rc == 0, stdout
    verdict = json.loads((out / "verdict.json").read_text())
    assert set(verdict["pairs"]["resnet"]) == {"nocontrol", "corun"}
    assert verdict["pairs"]["resnet"]["corun"]["hp_jobs"] > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resnet"]["latency_ms"]["drain"]["jobs"] == 5
    assert summary["resnet"]["lp_kernels"][0]["longest_ms"] == 1.0
    assert "ETA" in stdout and "estimated" in stdout
    assert not segments_of_verdict(pid)  # its segments removed


def test_a_partition_that_falls_back_writes_no_verdict(tmp_path):
    """Under a stand-in MPS daemon the partition segment says MPS; the stand-in LP never launches
    (so never registers through the hook): the run ends in one error, no verdict, nothing left behind."""
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    if not os.path.exists(os.path.join(build, "bin", "expcontroller")):
        pytest.skip("no build")
    log = tmp_path / "mps.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "bench"), os.path.join(build, "python"),
                                                       ROOT]),
               PATH=os.path.join(ROOT, "tests", "run_exp", "bin") + os.pathsep + os.environ["PATH"], FAKE_MPS_LOG=str(log))
    out = tmp_path / "v"
    rc, stdout, pid = run_verdict(["--build", build, "--out", str(out), "--worker-module", "fake_verdict_worker",
                                   "--pairs", "resnet", "--setups", "hp_alone,lp_alone,partition", "--rounds", "1",
                                   "--contended-s", "0.3", "--hp-alone-s", "0.2", "--lp-alone-s", "0.2",
                                   "--latency-pairs="], env)
    assert rc == 1, stdout
    assert "did not run the partition policy" in stdout and "resnet round 0: the LP's partition state is 'the LP is not registered', not 'active'" in stdout
    assert not (out / "verdict.json").exists() and (out / "raw.json").exists()
    raw = json.loads((out / "raw.json").read_text())
    assert raw["pairs"]["resnet"]["rounds"][0]["partition"]["lp_partition"]["launches"] == 0
    started = [line.split()[1] for line in log.read_text().splitlines() if line.startswith("start ")]
    assert len(started) == 1 and f"quit {started[0]}" in log.read_text()  # the daemon was quit
    assert not segments_of_verdict(pid)
