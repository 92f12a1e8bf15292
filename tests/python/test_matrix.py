"""bench.gpu.matrix (issue 25's matrix benchmark): its plan, its statistics and its verdict on
synthetic raw records, the LP's completion counting, and a dry run end to end with a stand-in
backend (sleeping units, no torch, no GPU, no MPS)."""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import pytest

from bench.gpu import host_counters, matrix, matrix_report, stats
from bench.gpu.matrix_worker import arrivals, units_inside

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_auto_setup_runs_an_unmarked_hp_with_auto_jobs_on_a_corun_segment_of_its_own():
    args = argparse.Namespace(build="/b", lp_mode="time:500", partition_sms=16)
    segments = {"corun": "s-corun", "corunauto": "s-corunauto"}
    hp = matrix.group_env(args, "corunauto", "hp", segments, ("/pipe", "/log"))
    lp = matrix.group_env(args, "corunauto", "lp", segments, ("/pipe", "/log"))
    assert matrix.SETUP["corun_auto"] == ("corunauto", ("hp", "lp"), False)  # the HP marks nothing
    assert hp["GPUYIELD_JOBS"] == "auto" and hp["GPUYIELD_PRIORITY"] == "1" and hp["GPUYIELD_SHM"] == "s-corunauto"
    assert "GPUYIELD_JOBS" not in lp and lp["GPUYIELD_MODE"] == "time:500" and lp["CUDA_MPS_CLIENT_PRIORITY"] == "1"
    assert "GPUYIELD_JOBS" not in matrix.group_env(args, "corun", "hp", segments, ("/pipe", "/log"))


def test_cells_put_the_higher_load_beside_one_lp_only():
    out = matrix.cells(["gemm", "small"], ["gemm", "graph"], ["poisson-25", "poisson-60"], "graph")
    assert out == [("gemm", "gemm", "poisson-25"), ("gemm", "graph", "poisson-25"), ("gemm", "graph", "poisson-60"),
                   ("small", "gemm", "poisson-25"), ("small", "graph", "poisson-25"), ("small", "graph", "poisson-60")]


def test_schedule_alternates_alone_with_every_setup_in_each_round():
    plan = matrix.schedule(["hp_alone", "lp_alone", "corun", "mps"], 3, seed=7)
    assert len(plan) == 12
    for r in range(3):
        assert sorted(s for rr, s in plan if rr == r) == ["corun", "hp_alone", "lp_alone", "mps"]
    assert plan == matrix.schedule(["hp_alone", "lp_alone", "corun", "mps"], 3, seed=7)
    assert plan != matrix.schedule(["hp_alone", "lp_alone", "corun", "mps"], 3, seed=8)


def test_cost_setups_only_in_the_first_cell_of_an_hp_kind():
    assert matrix.cell_setups(["hp_alone", "lp_alone"], True, True)[-3:] == list(matrix.COST_SETUPS)
    assert matrix.cell_setups(["hp_alone", "lp_alone"], False, True) == ["hp_alone", "lp_alone"]
    assert matrix.cell_setups(["hp_alone", "lp_alone"], True, False) == ["hp_alone", "lp_alone"]


def test_arrivals_are_poisson_seeded_and_inside_the_window():
    a = arrivals(100.0, 50.0, 40.0, seed=3)
    assert a == arrivals(100.0, 50.0, 40.0, seed=3) and a != arrivals(100.0, 50.0, 40.0, seed=4)
    assert all(100.0 < t < 150.0 for t in a)
    assert 1800 < len(a) < 2200  # 40/s for 50 s
    gaps = [b - x for x, b in zip(a, a[1:])]
    mean = sum(gaps) / len(gaps)
    assert 0.023 < mean < 0.027
    assert sum(g > 2 * mean for g in gaps) / len(gaps) == pytest.approx(0.135, abs=0.03)  # e^-2: exponential


def test_units_inside_counts_the_share_of_each_unit_in_the_window():
    # units end at 1, 2, 3, 4 (each 1 s long, from 0); window [1.5, 3.25): half of unit 2, unit 3, a quarter of 4
    assert units_inside(0.0, [1.0, 2.0, 3.0, 4.0], 1.5, 3.25) == pytest.approx(1.75)
    assert units_inside(0.0, [1.0, 2.0], 5.0, 6.0) == 0
    assert units_inside(0.0, [], 0.0, 1.0) == 0


def test_the_progress_lines_eta_counts_a_cells_learning_once_not_per_segment():
    """A cell's 80 s of learning and 2 s segments: after its first of 12 segments 11 x 2 s are left,
    not 11 x 82 (the ETA of 886 s a 104-s H200 run printed, 2026-12-03); a second cell to come
    adds the first's 80 s and its own 12 segments."""
    from bench.gpu.matrix import eta_s
    assert eta_s(2.0, 1, 12, 80.0, 1, 0) == pytest.approx(22.0)
    assert eta_s(2.0, 1, 24, 80.0, 1, 1) == pytest.approx(2.0 * 23 + 80.0)
    assert eta_s(0.0, 0, 12, 0.0, 0, 1) == 0.0


def test_lp_cycles_bisected_windows_count_what_the_full_pass_counts():
    # lp_cycles looks only at the units that can overlap a window (a run has thousands of units and
    # cycles); on units in order, zero-length ones and windows on their edges included, the same sums
    import random
    from bench.gpu.lp_cycles import units_in_window
    rng = random.Random(7)
    done, t = [], 0.0
    for _ in range(300):
        t += rng.choice([0.0, rng.uniform(0.1, 5.0)])
        done.append(t)
    edges = done[::17] + [rng.uniform(-1.0, t + 1.0) for _ in range(200)]
    for lo in edges:
        hi = lo + rng.choice([0.0, 0.5, 3.0, 40.0])
        assert units_in_window(-0.5, done, lo, hi) == pytest.approx(units_inside(-0.5, done, lo, hi))


def test_two_stage_bootstrap_widens_over_rounds_that_share_an_invocation():
    # Two invocations whose rounds agree inside each but differ between them: resampling rounds as
    # if independent hides that; the two-stage interval shows it.
    inv_a = [{"x": [1.0]}, {"x": [1.0]}, {"x": [1.0]}]
    inv_b = [{"x": [2.0]}, {"x": [2.0]}, {"x": [2.0]}]
    mean = lambda bs: sum(b["x"][0] for b in bs) / len(bs)
    two = stats.two_stage_bootstrap([inv_a, inv_b], mean)
    flat = stats.block_bootstrap([inv_a + inv_b], lambda s: mean(s[0]))
    assert two[0] == 1.0 and two[1] == 2.0
    assert flat[1] - flat[0] < two[1] - two[0]
    assert stats.two_stage_bootstrap([], mean) is None
    r = stats.ratio_two_stage([inv_a, inv_b], mean, lambda bs: 1.0)
    assert r["value"] == 1.5 and r["ci"] == [1.0, 2.0]


def synthetic_raw(slow=1.0, lp_share=0.5, rounds=2, commit="abc"):
    """One invocation: one cell, hp_alone at 10 ms, corun at 10 ms x slow, the LP at lp_share."""
    segs = []
    for r in range(rounds):
        for setup, hp, lp in (("hp_alone", [10.0] * 100, None), ("lp_alone", None, (100.0, 1.0)),
                              ("corun", [10.0 * slow] * 99 + [30.0], (100.0 * lp_share, 1.0)),
                              ("hp_ctl_alone", [10.0 * slow] * 100, None)):
            seg = {"hp": "gemm", "lp": "graph", "load": "poisson-25", "setup": setup, "round": r, "rate": 25.0}
            if hp:
                seg["hp_result"] = {"lat_ms": hp, "svc_ms": hp, "begin_us": [], "end_us": [], "late": 0}
            if lp:
                seg["lp_result"] = {"units": lp[0], "secs": 1.0, "counted": lp[0], "counted_secs": lp[1]}
            segs.append(seg)
    return {"device": "test GPU", "commit": commit, "started": "2026-11-24T00:00:00+00:00",
            "hp_kinds": {"gemm": {"svc_p50_ms": 10.0, "busy_ms": 8.0, "wall_ms": 10.0}}, "segments": segs}


def test_verdict_has_the_issue_format_with_one_denominator_per_cell():
    m = matrix.analyze([synthetic_raw(slow=1.02, lp_share=0.6)])
    assert m["device"] == "test GPU" and m["commit"] == "abc" and "two-stage" in m["method"]
    (cell,) = m["cells"]
    assert (cell["hp"], cell["lp"], cell["load"]) == ("gemm", "graph", "poisson-25")
    assert set(cell["setups"]) == {"corun", "hp_ctl_alone"}  # alone setups are the denominators
    corun = cell["setups"]["corun"]
    assert corun["hp_jobs"] == 200 and corun["invocations"] == 1
    assert corun["hp_p50_ratio"]["value"] == pytest.approx(1.02)
    assert corun["hp_p99_ratio"]["value"] == pytest.approx(1.02)  # one 30 ms job in 100 is the p100, not p99
    assert corun["lp_throughput_ratio"]["value"] == pytest.approx(0.6)
    # the HP leaves 1 - 25/s x 8 ms = 0.8 of the GPU: the LP took 0.6 / 0.8 of it
    assert cell["gpu_time_left"] == pytest.approx(0.8) and corun["lp_share_of_left"] == pytest.approx(0.75)
    # guarded's learning segment runs at a higher rate: it neither counts nor sets the GPU time left
    raw = synthetic_raw(slow=1.02, lp_share=0.6)
    raw["segments"].insert(0, {"hp": "gemm", "lp": "graph", "load": "poisson-25", "setup": "guarded_learn", "round": -1,
                               "rate": 90.0, "hp_result": {"lat_ms": [50.0]}, "lp_result": {"counted": 1, "counted_secs": 1}})
    again = matrix.analyze([raw])["cells"][0]
    assert again["gpu_time_left"] == pytest.approx(0.8) and "guarded_learn" not in again["setups"]
    assert corun["meets_hp_target"] is True
    assert "lp_throughput_ratio" not in cell["setups"]["hp_ctl_alone"]


def test_a_harvesting_setup_is_held_to_corun_s_lp_in_the_same_cell():
    raw = synthetic_raw(slow=1.0, lp_share=0.6)
    for setup, share in (("guarded", 0.59), ("partition", 0.55)):  # 0.01 and 0.05 under corun's 0.6
        for r in range(2):
            raw["segments"].append({"hp": "gemm", "lp": "graph", "load": "poisson-25", "setup": setup, "round": r,
                                    "rate": 25.0, "hp_result": {"lat_ms": [10.0] * 100, "svc_ms": [10.0] * 100},
                                    "lp_result": {"units": 100 * share, "secs": 1.0, "counted": 100 * share,
                                                  "counted_secs": 1.0}})
    m = matrix.analyze([raw])
    setups = m["cells"][0]["setups"]
    assert setups["guarded"]["lp_minus_corun"] == pytest.approx(-0.01) and setups["guarded"]["meets_lp_target"]
    assert setups["partition"]["lp_minus_corun"] == pytest.approx(-0.05) and not setups["partition"]["meets_lp_target"]
    assert "lp_minus_corun" not in setups["corun"] and "lp_minus_corun" not in setups["hp_ctl_alone"]
    # the differences' intervals, paired by round: every round the same, so the interval is the point
    assert setups["guarded"]["lp_minus_corun_ci"] == pytest.approx([-0.01, -0.01])
    assert setups["partition"]["lp_minus_corun_ci"] == pytest.approx([-0.05, -0.05])
    assert "lp_minus_corun_ci" not in setups["corun"]
    lines = matrix.target_lines(m)
    assert "corun: HP target in 1 of 1 cells" in lines
    assert any(ln.startswith("partition: HP target in 1 of 1 cells; LP within 0.02 of corun's or above in 0 of 1 "
                             "(lowest -0.05: gemm+graph poisson-25)") for ln in lines), lines


def test_the_hp_p99_difference_to_corun_is_paired_by_round():
    """The p99 of a round's few slow jobs moves with the round (the same arrivals for every setup):
    paired by round, a setup whose tail is corun's plus 0.2 in every round shows +0.2 with an
    interval of its own width, not the rounds' spread; corun itself and alone setups carry none."""
    raw = synthetic_raw(slow=1.0, lp_share=0.6, rounds=4)
    for seg in raw["segments"]:
        if seg["setup"] == "corun":  # round r: two slow jobs of 10 x (1 + 0.3 r) ms, the p99 of 100
            seg["hp_result"]["lat_ms"] = [10.0] * 98 + [10.0 * (1 + 0.3 * seg["round"])] * 2
    for r in range(4):
        lat = [10.0] * 98 + [10.0 * (1.2 + 0.3 * r)] * 2
        raw["segments"].append({"hp": "gemm", "lp": "graph", "load": "poisson-25", "setup": "guarded", "round": r,
                                "rate": 25.0, "hp_result": {"lat_ms": lat, "svc_ms": lat},
                                "lp_result": {"units": 60.0, "secs": 1.0, "counted": 60.0, "counted_secs": 1.0}})
    setups = matrix.analyze([raw])["cells"][0]["setups"]
    g = setups["guarded"]
    lo, hi = g["hp_p99_ratio"]["ci"]
    assert hi - lo > 0.5  # the ratio alone: the rounds' spread
    assert g["hp_p99_minus_corun"] == pytest.approx(0.2)
    assert g["hp_p50_minus_corun"] == pytest.approx(0.0) and g["hp_p50_minus_corun_ci"] == pytest.approx([0.0, 0.0])
    lo, hi = g["hp_p99_minus_corun_ci"]
    assert 0.0 < lo <= 0.2 <= hi < 0.5, (lo, hi)
    assert "hp_p99_minus_corun" not in setups["corun"] and "hp_p99_minus_corun" not in setups["hp_ctl_alone"]
    # no corun in the cell: nothing to pair
    raw["segments"] = [s for s in raw["segments"] if s["setup"] != "corun"]
    assert "hp_p99_minus_corun" not in matrix.analyze([raw])["cells"][0]["setups"]["guarded"]


def test_the_lp_difference_to_corun_is_paired_by_round():
    """A round slow for every setup (the machine's noise) moves corun's LP and the setup's alike: the
    difference's interval, paired by round, stays narrow where each ratio's own interval is wide; a
    setup always 0.03 under corun's is shown under beyond doubt."""
    raw = synthetic_raw(slow=1.0, lp_share=0.6, rounds=4)
    for seg in raw["segments"]:
        if seg["setup"] == "corun":  # rounds at 0.45, 0.6, 0.75, 0.9 of the LP alone
            seg["lp_result"]["units"] = seg["lp_result"]["counted"] = 100 * (0.45 + 0.15 * seg["round"])
    for r in range(4):
        raw["segments"].append({"hp": "gemm", "lp": "graph", "load": "poisson-25", "setup": "guarded", "round": r,
                                "rate": 25.0, "hp_result": {"lat_ms": [10.0] * 100, "svc_ms": [10.0] * 100},
                                "lp_result": {"units": 100 * (0.42 + 0.15 * r), "secs": 1.0,
                                              "counted": 100 * (0.42 + 0.15 * r), "counted_secs": 1.0}})
    g = matrix.analyze([raw])["cells"][0]["setups"]["guarded"]
    lo, hi = g["lp_throughput_ratio"]["ci"]
    assert hi - lo > 0.2  # each ratio alone: the rounds' spread
    assert g["lp_minus_corun"] == pytest.approx(-0.03) and g["lp_minus_corun_ci"] == pytest.approx([-0.03, -0.03])
    assert g["lp_paired_rounds"] == 4
    # a second invocation with the same round numbers and other noise: paired by invocation and round
    other = json.loads(json.dumps(raw))
    for seg in other["segments"]:
        if "lp_result" in seg and seg["setup"] != "lp_alone":
            lp = seg["lp_result"]["units"] / 100 + (0.2 if seg["round"] % 2 else -0.2)
            seg["lp_result"]["units"] = seg["lp_result"]["counted"] = 100 * lp
    g = matrix.analyze([raw, other])["cells"][0]["setups"]["guarded"]
    assert g["lp_minus_corun_ci"] == pytest.approx([-0.03, -0.03]) and g["lp_paired_rounds"] == 8
    # a round corun lacks: the point and its interval stand on the rounds both ran
    raw["segments"] = [s for s in raw["segments"] if not (s["setup"] == "corun" and s["round"] == 3)]
    g = matrix.analyze([raw])["cells"][0]["setups"]["guarded"]
    assert g["lp_minus_corun"] == pytest.approx(-0.03) and g["lp_paired_rounds"] == 3
    from bench.gpu import matrix_report
    assert matrix_report.lp_shown_under(g) and "✗LP (-0.03 [-0.03, -0.03] of corun's)" in matrix_report.fmt_setup(g)
    g["lp_minus_corun_ci"] = [-0.05, 0.01]
    assert not matrix_report.lp_shown_under(g)
    g["lp_minus_corun_ci"], g["lp_paired_rounds"] = [-0.05, -0.04], 2  # two rounds: too few to say
    assert not matrix_report.lp_shown_under(g)


def test_a_slow_hp_misses_the_target_and_merging_pools_invocations():
    m = matrix.analyze([synthetic_raw(slow=1.2, commit="a"), synthetic_raw(slow=1.0, commit="b")])
    corun = m["cells"][0]["setups"]["corun"]
    assert corun["invocations"] == 2 and corun["hp_jobs"] == 400
    assert corun["meets_hp_target"] is False
    lo, hi = corun["hp_p50_ratio"]["ci"]
    assert lo == pytest.approx(1.0) and hi == pytest.approx(1.2)  # the invocations disagree: the interval says so
    assert m["commit"] == "a,b" and len(m["invocations"]) == 2


def test_a_partition_that_fell_back_is_refused():
    raw = synthetic_raw()
    raw["segments"].append({"hp": "gemm", "lp": "graph", "load": "poisson-25", "setup": "partition", "round": 0,
                            "lp_partition": {"state": "no MPS", "launches": 0}})
    assert matrix.policy_problems(raw) == ["gemm+graph poisson-25 round 0: the LP's partition state is 'no MPS', not 'active'"]
    raw["segments"][-1]["lp_partition"] = {"state": "active", "launches": 0}
    assert matrix.policy_problems(raw) == []  # a graph LP's graphs never go to the partition: they wait
    raw["segments"][-1]["lp_partition"] = {"state": "-", "launches": 0}
    assert matrix.policy_problems(raw) == []  # ... and it may never have made the partition at all
    raw["segments"][-1]["lp"] = "gemm"
    assert matrix.policy_problems(raw) == ["gemm+gemm poisson-25 round 0: the LP's partition state is '-', not 'active'"]
    raw["segments"][-1]["lp_partition"] = {"state": "active", "launches": 0}
    assert matrix.policy_problems(raw) == ["gemm+gemm poisson-25 round 0: the LP sent no launch to the partition"]


@pytest.mark.parametrize("argv,message", [
    (["--hp-kinds", "gemm,nope"], "unknown HP kind 'nope'"),
    (["--setups", "corun,lp_alone"], "must hold hp_alone and lp_alone"),
    (["--rounds", "0"], "--rounds 0: must be >= 1"),
    (["--loads", "poisson-99"], "unknown load 'poisson-99'"),
    (["--setups", "hp_alone,lp_alone,corun_auto_short", "--auto-idle-us", "0"], "--auto-idle-us 0: must be 1..10000000"),
    (["--auto-idle-us", "300"], "add corun_auto_short to --setups"),
    (["--learn-load", "1.5"], "--learn-load 1.5: must be 0..1"),
    (["--pin-workers-only"], "--pin-workers-only qualifies --pin"),
    (["--no-park"], "--no-park qualifies --pin"),
    (["--hp-evt-cpus", "lp"], "--hp-evt-cpus lp needs --pin with parking"),
    (["--pin", "--no-park", "--hp-evt-cpus", "tools"], "--hp-evt-cpus tools needs --pin with parking"),
    (["--hp-main-cpu"], "--hp-main-cpu needs --pin with parking"),
    (["--pin", "--pin-workers-only", "--hp-main-cpu"], "--hp-main-cpu needs --pin with parking"),
    (["--hp-kinds", "small", "--lp-kinds", "gemm", "--learn-jobs", "8000", "--budget-s", "60"],
     "--budget-s 60: the plan needs about"),
])
def test_bad_arguments_are_one_clear_error(tmp_path, argv, message):
    r = subprocess.run([sys.executable, "-m", "bench.gpu.matrix", "--build", str(tmp_path), "--out", str(tmp_path / "o")]
                       + argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert r.returncode == 2 and message in r.stdout
    assert not (tmp_path / "o").exists()


def test_merge_of_a_missing_folder_is_one_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "bench.gpu.matrix", "--merge", str(tmp_path / "none"), "--out",
                        str(tmp_path / "o")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    assert r.returncode == 2 and "no raw.json, raw.json.xz or raw.json.gz in" in r.stdout and "none" in r.stdout
    assert r.stdout.count("\n") == 1 and not (tmp_path / "o").exists()


def test_the_trial_ends_the_hp_says_are_read_back_per_segment(tmp_path):
    """The matrix keeps each learning's trial ends from the HP's GPUYIELD_VERBOSE lines: made here by
    the real library (a guarded segment, an MPS pipe stand-in, a marking HP and no LP: its first
    trial gives the lower processes nothing and ends after one block), read back by trial_ends."""
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    tool = os.path.join(build, "bin", "expcontroller")
    if not os.access(tool, os.X_OK) or not os.path.isdir(os.path.join(build, "python", "gpuyield")):
        pytest.skip("no build with the extension")
    pipe = tmp_path / "mps"
    pipe.mkdir()
    (pipe / "control").touch()  # what create checks for: a daemon's control socket (no GPU here)
    tag = f"test-trial-lines-{os.getpid()}"
    made = subprocess.run([tool, "create", "--name", tag, "--policy", "guarded", "--mps-pipe", str(pipe)],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    try:
        code = ("import gpuyield, sys, time\n"
                "seg = gpuyield.connect(sys.argv[1])\n"
                "for _ in range(200):\n"
                "    seg.begin(1); time.sleep(0.0005); seg.end(1)\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"), GPUYIELD_VERBOSE="1")
        out = subprocess.run([sys.executable, "-c", code, tag], capture_output=True, text=True, timeout=120, env=env)
        assert out.returncode == 0, out.stderr[-2000:]
    finally:
        subprocess.run([tool, "remove", "--name", tag], capture_output=True, timeout=60)
    log = tmp_path / "guarded_hp.log"
    log.write_text("gpuyield: pid 1 gates its kernel launches through /x (slot 0)\n" + out.stderr + "partial line")
    worker = matrix.Proc.__new__(matrix.Proc)
    worker.log_path, worker.read_at = str(log), 0
    ends = matrix.trial_ends(worker.new_lines())
    assert ends and ends[0] == {"arm": "partition:64", "against": "stop", "jobs": 16, "outcome": "nothing", "z": None,
                                "ratio_p50": None, "lp_cycle_ratio": None}, out.stderr
    assert len(ends) == out.stderr.count("guarded trial of")
    assert worker.new_lines() == []  # read once; the unfinished last line waits for its newline
    assert matrix.trials_said(ends).startswith(", trials: 64 nothing after 16")


def test_a_depth_trials_end_is_read_back_beside_the_arms():
    """A queue depth's trial that ended out of the bound is one HP line (its format pinned by
    tests/controller/test_guarded.c a_depth_trial_end_is_one_verbose_line); trial_ends keeps it in
    order among the arms' ends, and the learning's line names it."""
    lines = [
        "gpuyield: pid 7: /s: guarded trial of queue depth 2000 us ended after 384 of its jobs: rejected: out of "
        "half the p50 bound of stop or the p99 bound, its test leaning over it, or undecided at its cap "
        "(p50 x1.012, p99 x1.031 of stop; the depth in force stays 0 us)",
        "gpuyield: pid 7: /s: guarded trial of partition:64 against stop ended after 16 of its jobs: fallback (its "
        "recent jobs left the bound of stop (the fast fallback); no test had judged it; its cycles gave the LP x1.199 "
        "of stop's)",
        "gpuyield: pid 7: /s: guarded trial of queue depth 4000 us ended after 16 of its jobs: fallback: a block of "
        "its jobs clearly left the bound of stop (p50 x1.300, p99 x1.500 of stop; the depth in force stays 2000 us)",
        "gpuyield: pid 7: /s: guarded trial of queue depth 1000 us ended after 64 of its jobs: no-gain: its gaps gave "
        "the LP less than the gain promotion needs over the depth in force's gaps (p50 x1.004, p99 x1.010 of stop; "
        "the depth in force stays 0 us)",
    ]
    ends = matrix.trial_ends(lines)
    assert [(t["arm"], t["against"], t["jobs"], t["outcome"], t["ratio_p50"]) for t in ends] == [
        ("depth:2000us", "depth:0us", 384, "rejected", 1.012), ("partition:64", "stop", 16, "fallback", None),
        ("depth:4000us", "depth:2000us", 16, "fallback", 1.3), ("depth:1000us", "depth:0us", 64, "no-gain", 1.004)]
    assert matrix.trials_said(ends) == (", trials: depth:2000us rejected after 384, 64 fallback after 16 (LP x1.20), "
                                        "depth:4000us fallback after 16, depth:1000us no-gain after 64")


def test_the_twin_setups_run_a_second_builds_rule_beside_the_first(tmp_path):
    """guarded@twin and guarded_depth@twin: --twin-build's library and extension on segments of
    their own (made by --build's expcontroller, --guard-depth for the depth's), learning and measured
    in the same rounds as the first build's; a clear error without the build or without the setups;
    its commit read from make_twin.sh's COMMIT file, kept in raw.json."""
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    if not os.path.exists(os.path.join(build, "bin", "expcontroller")) or \
            not os.path.isdir(os.path.join(build, "python", "gpuyield")):
        pytest.skip("no build with the extension")
    twin = tmp_path / "twin"  # a stand-in for make_twin.sh's folder: the same build, its own COMMIT
    twin.mkdir()
    os.symlink(os.path.join(build, "lib"), twin / "lib")
    os.symlink(os.path.join(build, "python"), twin / "python")
    (twin / "COMMIT").write_text("abc1234\n")
    base = ["--build", build, "--out", str(tmp_path / "o"), "--setups", "hp_alone,lp_alone,guarded_depth@twin"]
    for argv, says in ((base, "name it with --twin-build DIR"),
                       (base[:5] + ["hp_alone,lp_alone,guarded", "--twin-build", str(twin)], "add guarded@twin"),
                       (base + ["--twin-build", str(tmp_path)], "no lib/libgpuyield.so there")):
        code, text = refused(matrix.parse_args, argv)
        assert code == 2 and says in text, text
    args = matrix.parse_args(base + ["--twin-build", str(twin)])
    assert args.twin_commit == "abc1234"
    segments = {g: f"/seg-{g}" for g in matrix.POLICY_GROUPS}
    twin_env = matrix.group_env(args, "guardeddepthtwin", "hp", segments, None)
    first_env = matrix.group_env(args, "guardeddepth", "hp", segments, None)
    assert twin_env["LD_PRELOAD"] == os.path.join(str(twin), "lib", "libgpuyield.so")
    assert twin_env["PYTHONPATH"].split(os.pathsep)[:2] == [os.path.join(str(twin), "python"), os.path.join(build, "python")]
    assert first_env["LD_PRELOAD"] == os.path.join(build, "lib", "libgpuyield.so")
    assert twin_env["GPUYIELD_SHM"] == "/seg-guardeddepthtwin" and twin_env["GPUYIELD_VERBOSE"] == "1"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "bench"),
                                                       os.path.join(build, "python"), ROOT]), MPLBACKEND="Agg")
    out = tmp_path / "m"
    r = subprocess.run([sys.executable, "-m", "bench.gpu.matrix", "--build", build, "--out", str(out), "--backend",
                        "fake_matrix_backend:FakeBackend", "--no-mps", "--hp-kinds", "gemm", "--lp-kinds", "graph",
                        "--setups", "hp_alone,lp_alone,guarded_depth,guarded_depth@twin", "--twin-build", str(twin),
                        "--no-cost", "--rounds", "2", "--jobs", "8", "--min-seconds", "0.3", "--max-seconds", "0.4",
                        "--lp-lead-s", "0.1", "--learn-jobs", "20"],
                       cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
    assert r.returncode == 0, r.stdout
    assert "guarded_depth@twin learned for" in r.stdout
    (cell,) = json.loads((out / "matrix.json").read_text())["cells"]
    assert {"guarded_depth", "guarded_depth@twin"} <= set(cell["setups"])
    raw = json.loads((out / "raw.json").read_text())
    assert raw["args"]["twin_commit"] == "abc1234"
    twins = [s for s in raw["segments"] if s["setup"].startswith("guarded_depth@twin")]
    assert {s["setup"] for s in twins} == {"guarded_depth@twin_learn", "guarded_depth@twin"}
    assert all(s["guarded_status"]["guarded"]["queue_depth"]["on"] for s in twins)
    assert all(s["guarded_status"]["segment"].endswith("-guardeddepthtwin") for s in twins)


def refused(parse, argv):
    """An argparse refusal: its exit status and what it printed (stderr)."""
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as e:
        parse(argv)
    return e.value.code, err.getvalue()


def test_dry_run_end_to_end_with_a_stand_in_backend(tmp_path):
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    if not os.path.exists(os.path.join(build, "bin", "expcontroller")):
        pytest.skip("no build")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "bench"),
                                                       os.path.join(build, "python"), ROOT]), MPLBACKEND="Agg")
    out = tmp_path / "m"
    proc = subprocess.Popen([sys.executable, "-m", "bench.gpu.matrix", "--build", build, "--out", str(out), "--backend",
                        "fake_matrix_backend:FakeBackend", "--no-mps", "--hp-kinds", "gemm", "--lp-kinds", "graph",
                        "--setups", "hp_alone,lp_alone,nocontrol,corun,hp_ctl_alone", "--rounds", "2", "--jobs", "8",
                        "--min-seconds", "0.3", "--max-seconds", "0.4", "--lp-lead-s", "0.1"],
                       cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    stdout, _ = proc.communicate(timeout=180)
    r = subprocess.CompletedProcess(proc.args, proc.returncode, stdout)
    assert r.returncode == 0, r.stdout
    assert "ETA" in r.stdout and "estimated" in r.stdout
    m = json.loads((out / "matrix.json").read_text())
    (cell,) = m["cells"]
    assert set(cell["setups"]) == {"nocontrol", "corun", "hp_ctl_alone"} | set(matrix.COST_SETUPS)
    assert cell["setups"]["corun"]["hp_jobs"] > 0 and cell["setups"]["corun"]["lp_throughput_ratio"]["value"] > 0
    raw = json.loads((out / "raw.json").read_text())
    marked = [s for s in raw["segments"] if s["setup"] in ("corun", "hp_ctl_alone", "hp_mark_alone")]
    # every marked job timed its begin and end; a short window on a loaded machine may hold no
    # arrival at all (Poisson), so only the whole run must have marked jobs
    assert marked and all(len(s["hp_result"]["begin_us"]) == len(s["hp_result"]["lat_ms"]) for s in marked)
    # every HP job's launch span and its CPU time, which cannot exceed the job
    hp_segs = [s for s in raw["segments"] if (s.get("hp_result") or {}).get("svc_ms")]
    assert hp_segs and all(len(s["hp_result"]["launch_ms"]) == len(s["hp_result"]["svc_ms"]) for s in hp_segs)
    assert all(0 <= l <= v for s in hp_segs for l, v in zip(s["hp_result"]["launch_ms"], s["hp_result"]["svc_ms"]))
    # every window's per-CPU host counters (Linux: /proc/stat), shares between 0 and 1
    assert all(s["host"] and all(0 <= c["busy"] <= 1 for c in s["host"].values()) for s in raw["segments"])
    # the CPU each HP job's launches ended on, one a job, among the CPUs the machine has; its cores
    allowed = os.sched_getaffinity(0)
    assert all(len(s["hp_result"]["cpus"]) == len(s["hp_result"]["svc_ms"]) and
               set(s["hp_result"]["cpus"]) <= allowed for s in hp_segs)
    assert {int(c) for c in raw["cpu_siblings"]} >= allowed
    assert all(int(c) in sib for c, sib in raw["cpu_siblings"].items())
    # each job's thread rusage: user and system ms, faults, voluntary and involuntary switches
    assert all(len(s["hp_result"]["rusage"]) == len(s["hp_result"]["svc_ms"]) and
               all(len(u) == 5 and u[0] >= 0 and u[1] >= 0 and all(isinstance(c, int) and c >= 0 for c in u[2:])
                   for u in s["hp_result"]["rusage"]) for s in hp_segs)
    assert sum(u[0] + u[1] for s in hp_segs for u in s["hp_result"]["rusage"]) > 0
    # each marked job's guarded arm (none here: corun, and no MPS)
    assert all(s["hp_result"]["arms"] == [None] * len(s["hp_result"]["lat_ms"]) for s in marked)
    assert all(s["hp_result"]["lp_launches"] == [None] * len(s["hp_result"]["lat_ms"]) for s in marked)
    assert sum(len(s["hp_result"]["begin_us"]) for s in marked) > 0
    unmarked = [s for s in raw["segments"] if s["setup"] in ("hp_alone", "hp_hook_alone")]
    assert unmarked and all(not s["hp_result"]["begin_us"] for s in unmarked)
    # each job's start after t0, in order; beside a marked HP the LP's unit ends, after its start
    assert all(len(s["hp_result"]["start_ms"]) == len(s["hp_result"]["svc_ms"]) and
               s["hp_result"]["start_ms"] == sorted(s["hp_result"]["start_ms"]) for s in hp_segs)
    with_lp = [s for s in raw["segments"] if s.get("lp_result") and s.get("hp_result")]
    assert with_lp and all(("done_ms" in s["lp_result"]) == (s["setup"] == "corun") for s in with_lp)
    timed = [s["lp_result"] for s in with_lp if s["setup"] == "corun"]
    assert all(t["done_ms"] and t["first_ms"] < 0 and t["done_ms"] == sorted(t["done_ms"]) and
               len(t["done_ms"]) == t["units"] for t in timed)  # the LP starts --lp-lead-s before t0
    assert (out / "heatmap.png").exists() and (out / "latency_cdfs.png").exists()
    # its segments (named after the harness's pid) removed; other runs' segments are not its business
    assert not [n for n in os.listdir("/dev/shm") if n.startswith(f"gpuyield-{os.getuid()}-matrix{proc.pid}-")]


def test_a_round_whose_plain_alone_queued_is_left_out_for_every_setup(tmp_path):
    # round 1's plain HP alone took 36 ms a job at 25 jobs/s: 90 % busy, its latency mostly waiting
    raw = synthetic_raw(slow=1.02, lp_share=0.6)
    for seg in raw["segments"]:
        if seg["setup"] == "hp_alone" and seg["round"] == 1:
            seg["hp_result"]["svc_ms"] = [36.0] * 100
            seg["hp_result"]["lat_ms"] = [300.0] * 100
    (cell,) = matrix.analyze([raw])["cells"]
    assert cell["alone_overloaded_rounds"] == 1 and cell["alone_busy_max"] == pytest.approx(0.9)
    corun = cell["setups"]["corun"]
    assert corun["hp_jobs"] == 100  # round 0 only
    assert corun["hp_p50_ratio"]["value"] == pytest.approx(1.02)  # not 10.2 / 300
    assert cell["setups"]["hp_ctl_alone"]["hp_jobs"] == 100
    # both rounds queued: the cell has no setup left to judge, and says why
    for seg in raw["segments"]:
        if seg["setup"] == "hp_alone":
            seg["hp_result"]["svc_ms"] = [36.0] * 100
    (cell,) = matrix.analyze([raw])["cells"]
    assert cell["setups"] == {} and cell["alone_overloaded_rounds"] == 2
    row = matrix.summary_table(matrix.analyze([raw])).splitlines()[-1]
    assert row.startswith("gemm+graph poisson-25") and "queued in every round, up to 90% busy: no verdict" in row
    # its --merge says so and draws its figures without an empty grid (no matplotlib warning)
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "raw.json").write_text(json.dumps(raw))
    r = subprocess.run([sys.executable, "-m", "bench.gpu.matrix", "--merge", str(tmp_path / "rec"), "--out",
                        str(tmp_path / "out")], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=120, env=dict(os.environ, MPLBACKEND="Agg"))
    assert r.returncode == 0 and "no verdict" in r.stdout and "Warning" not in r.stdout, r.stdout
    assert (tmp_path / "out" / "heatmap.png").stat().st_size > 0


def test_a_round_whose_setups_ran_different_kinds_of_job_is_left_out_for_every_setup(tmp_path):
    # an HP of two kinds of job: every setup's hp reply says which kind each job ran; in round 1
    # corun ran a long job where the plain alone ran a short one, so its ratios would not be paired
    raw = synthetic_raw(slow=1.02, lp_share=0.6)
    for seg in raw["segments"]:
        if seg.get("hp_result"):
            seg["hp_result"]["variant"] = [0] * 99 + [1]
            if seg["setup"] == "corun" and seg["round"] == 1:
                seg["hp_result"]["variant"] = [1] + [0] * 98 + [1]
    (cell,) = matrix.analyze([raw])["cells"]
    assert cell["unpaired_rounds"] == 1 and cell["alone_overloaded_rounds"] == 0
    assert cell["setups"]["corun"]["hp_jobs"] == 100 and cell["setups"]["hp_ctl_alone"]["hp_jobs"] == 100  # round 0
    row = matrix.summary_table(matrix.analyze([raw])).splitlines()[-1]
    assert "round(s) left out: 1 the setups ran different kinds of job" in row and "no verdict" not in row, row
    # both rounds so: no verdict, and why
    for seg in raw["segments"]:
        if seg["setup"] == "corun":
            seg["hp_result"]["variant"] = [1] * 100
    (cell,) = matrix.analyze([raw])["cells"]
    assert cell["setups"] == {} and cell["unpaired_rounds"] == 2
    row = matrix.summary_table(matrix.analyze([raw])).splitlines()[-1]
    assert "2 the setups ran different kinds of job; no verdict" in row, row
    # replies without kinds (one kind of job, or a record before 2026-12-07): every round as before
    for seg in raw["segments"]:
        if seg.get("hp_result"):
            seg["hp_result"].pop("variant")
    (cell,) = matrix.analyze([raw])["cells"]
    assert cell["unpaired_rounds"] == 0 and cell["setups"]["corun"]["hp_jobs"] == 200


def test_an_hp_of_several_kinds_of_job_gets_ratios_per_kind(tmp_path):
    # 90 short jobs and 10 long ones a round, the same kinds in every setup: corun runs the short
    # ones 0.8 of alone (an MPS client) and the long ones 1.1: the pooled p50 is the short jobs'
    # and the pooled p99 the long jobs', so only the ratios per kind say which kind it slowed
    raw = synthetic_raw()
    kinds = [0] * 90 + [1] * 10
    for seg in raw["segments"]:
        if seg.get("hp_result"):
            f = {"hp_alone": (1.0, 1.0), "corun": (0.8, 1.1), "hp_ctl_alone": (1.0, 1.0)}[seg["setup"]]
            lat = [10.0 * f[0]] * 90 + [70.0 * f[1]] * 10
            seg["hp_result"].update(lat_ms=lat, svc_ms=lat, variant=kinds)
    raw["hp_kinds"]["gemm"]["busy_variants"] = [{"share": 0.9, "busy_ms": 1.0}, {"share": 0.1, "busy_ms": 69.0}]
    m = matrix.analyze([raw])
    corun = m["cells"][0]["setups"]["corun"]
    assert corun["hp_p50_ratio"]["value"] == pytest.approx(0.8) and corun["hp_p99_ratio"]["value"] == pytest.approx(1.1)
    short, long_ = corun["by_kind"]["0"], corun["by_kind"]["1"]
    assert (short["hp_jobs"], long_["hp_jobs"]) == (180, 20)
    assert short["hp_p50_ratio"]["value"] == pytest.approx(0.8) and short["hp_p99_ratio"]["value"] == pytest.approx(0.8)
    assert long_["hp_p50_ratio"]["value"] == pytest.approx(1.1) and long_["hp_p50_ratio"]["ci"] == [1.1, 1.1]
    assert m["cells"][0]["setups"]["hp_ctl_alone"]["by_kind"]["1"]["hp_p50_ratio"]["value"] == pytest.approx(1.0)
    assert m["hp_kinds"]["gemm"]["variant_shares"] == [0.9, 0.1]
    # the report says it per kind, with the shares
    (tmp_path / "matrix.json").write_text(json.dumps(m))
    text = matrix_report.report([str(tmp_path)], ["corun"])
    (line,) = [x for x in text.splitlines() if x.startswith("- by kind of job")]
    assert ("gemm + graph, poisson-25: corun: kind 0 (90% of jobs), 180 jobs: 0.80 [0.80, 0.80] · 0.80"
            in line and "kind 1 (10% of jobs), 20 jobs: 1.10 [1.10, 1.10] · 1.10" in line), line
    # an HP of one kind of job, or replies that do not say which: no ratios per kind, no line
    for seg in raw["segments"]:
        if seg.get("hp_result"):
            seg["hp_result"]["variant"] = [0] * 100
    assert "by_kind" not in matrix.analyze([raw])["cells"][0]["setups"]["corun"]
    for seg in raw["segments"]:
        if seg.get("hp_result"):
            seg["hp_result"].pop("variant")
    m = matrix.analyze([raw])
    assert "by_kind" not in m["cells"][0]["setups"]["corun"]
    (tmp_path / "matrix.json").write_text(json.dumps(m))
    assert "by kind" not in matrix_report.report([str(tmp_path)], ["corun"])


def test_the_load_rate_comes_from_the_mean_service_of_the_calibration():
    # an HP of two kinds of job (the mixed kind: 2.2 ms, one in ten 70 ms) is busy by its mean
    kind = {"svc_p50_ms": 2.2, "svc_mean_ms": 9.0}
    assert matrix.load_rate(kind, 0.25) == pytest.approx(0.25 / 0.009)
    assert matrix.load_rate({"svc_p50_ms": 4.0}, 0.25) == pytest.approx(62.5)  # a record before 2026-12-07
    assert matrix.parse_args(["--merge", "d", "--out", "o"]).calib_jobs == matrix.CALIB_JOBS >= 200


def test_a_round_whose_plain_alone_is_busy_by_a_few_long_jobs_is_left_out():
    # 25 jobs/s; nine jobs in ten 10 ms, one in ten 300 ms: median 10 ms (0.25 busy), mean 39 ms (0.975)
    raw = synthetic_raw(slow=1.02, lp_share=0.6)
    for seg in raw["segments"]:
        if seg["setup"] == "hp_alone" and seg["round"] == 1:
            seg["hp_result"]["svc_ms"] = [10.0] * 90 + [300.0] * 10
    (cell,) = matrix.analyze([raw])["cells"]
    assert cell["alone_overloaded_rounds"] == 1 and cell["alone_busy_max"] == pytest.approx(0.975)
    assert cell["setups"]["corun"]["hp_jobs"] == 100  # round 0 only


def test_no_share_of_the_time_left_where_the_hps_gpu_work_fills_the_gpu():
    raw = synthetic_raw(slow=1.0, lp_share=0.6)
    raw["hp_kinds"]["gemm"]["busy_ms"] = 60.0  # 25 jobs/s x 60 ms: 1.5 of the GPU
    (cell,) = matrix.analyze([raw])["cells"]
    assert cell["gpu_time_left"] == pytest.approx(-0.5)
    corun = cell["setups"]["corun"]
    assert corun["lp_throughput_ratio"]["value"] == pytest.approx(0.6) and corun["lp_share_of_left"] is None


def test_a_load_the_hps_gpu_work_alone_cannot_meet_is_said_before_its_rounds(tmp_path):
    """The rate from the calibration's mean (raw: svc_mean_ms, each segment's rate); a rate at which
    the profiled GPU work of the HP's jobs fills over 85 % of the GPU gets a warning line."""
    out = tmp_path / "out"
    r = short_dry_run(out, "--hp-kinds", "gemm", "--lp-kinds", "graph", "--setups", "hp_alone,lp_alone,corun",
                      FAKE_BUSY_MS="8")  # 2 ms jobs at 25 %: 125 jobs/s x 8 ms = about 1.0 of the GPU
    assert r.returncode == 0, r.stdout
    assert re.search(r"matrix: warning: gemm\+graph poisson-25: the HP's GPU work alone fills (0\.9\d|1\.\d\d) "
                     r"of the GPU .* its rounds will queue", r.stdout), r.stdout
    raw = json.loads((out / "raw.json").read_text())
    kind = raw["hp_kinds"]["gemm"]
    assert len(kind["svc_alone_ms"]) == 30 and kind["svc_mean_ms"] == pytest.approx(
        sum(kind["svc_alone_ms"]) / 30, abs=1e-3)
    assert all(s["rate"] == pytest.approx(0.25 / (kind["svc_mean_ms"] / 1000)) for s in raw["segments"])
    r = short_dry_run(tmp_path / "quiet", "--hp-kinds", "gemm", "--lp-kinds", "graph", "--setups",
                      "hp_alone,lp_alone,corun")  # 1 ms busy a job: an eighth of the GPU
    assert r.returncode == 0 and "warning" not in r.stdout, r.stdout


def test_calibration_idles_after_each_job_in_proportion_to_it():
    from bench.gpu import matrix_worker
    stamps = []
    w = matrix_worker.Worker("hp", backend=None)
    w.unit = lambda: (stamps.append(time.perf_counter()), time.sleep(0.01))
    w.backend = type("B", (), {"sync": staticmethod(lambda: None)})()
    svc = w.calib({"jobs": 3, "gap": 3})["svc_ms"]
    assert len(svc) == 3 and min(svc) >= 10
    # each start comes at least its job plus 3x that job after the one before
    assert all(b - a >= 0.04 for a, b in zip(stamps, stamps[1:]))
    stamps.clear()
    w.calib({"jobs": 3})  # no gap asked: back to back
    assert all(b - a < 0.035 for a, b in zip(stamps, stamps[1:]))

def short_dry_run(out, *args, **env):
    """The harness on the stand-in backend (no GPU, no MPS, no cost cell), one short round: `args`
    name the kinds and setups; `env` more environment. Skips without a build."""
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    if not os.path.exists(os.path.join(build, "bin", "expcontroller")):
        pytest.skip("no build")
    penv = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "bench"),
                                                        os.path.join(build, "python"), ROOT]), MPLBACKEND="Agg", **env)
    return subprocess.run([sys.executable, "-m", "bench.gpu.matrix", "--build", build, "--out", str(out), "--backend",
                           "fake_matrix_backend:FakeBackend", "--no-mps", "--no-cost", "--rounds", "1", "--jobs", "4",
                           "--min-seconds", "0.2", "--max-seconds", "0.3", "--lp-lead-s", "0.05", "--calib-jobs", "30",
                           *args],
                          cwd=ROOT, env=penv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)


def test_auto_idle_us_reaches_the_short_auto_hp_only_beside_the_default_one(tmp_path):
    """--auto-idle-us: GPUYIELD_IDLE_US in corun_auto_short's HP and no other process (corun_auto's
    HP keeps the hook's default), both auto setups in the same rounds, the value in raw.json."""
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    if not os.path.exists(os.path.join(build, "bin", "expcontroller")):
        pytest.skip("no build")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests", "bench"),
                                                       os.path.join(build, "python"), ROOT]), MPLBACKEND="Agg",
               GPUYIELD_IDLE_US="999")  # the harness's own is never passed on
    out = tmp_path / "m"
    r = subprocess.run([sys.executable, "-m", "bench.gpu.matrix", "--build", build, "--out", str(out), "--backend",
                        "fake_matrix_backend:FakeBackend", "--no-mps", "--no-cost", "--hp-kinds", "gemm", "--lp-kinds",
                        "graph", "--setups", "hp_alone,lp_alone,corun,corun_auto,corun_auto_short", "--auto-idle-us",
                        "250", "--rounds", "2", "--jobs", "4", "--min-seconds", "0.2", "--max-seconds", "0.3",
                        "--lp-lead-s", "0.05"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=180)
    assert r.returncode == 0, r.stdout

    def env_of(group, role):
        lines = [l for l in (out / f"{group}_{role}.log").read_text().splitlines() if l.startswith("fake backend env ")]
        assert lines, f"{group}_{role} logged no environment"
        return json.loads(lines[-1][len("fake backend env "):])
    short, auto = env_of("corunautoshort", "hp"), env_of("corunauto", "hp")
    assert short["GPUYIELD_IDLE_US"] == "250" and short["GPUYIELD_JOBS"] == "auto"
    assert auto["GPUYIELD_JOBS"] == "auto" and "GPUYIELD_IDLE_US" not in auto
    assert short["GPUYIELD_SHM"] != auto["GPUYIELD_SHM"]  # a segment each
    others = [(g, role) for g in ("plain", "corun", "corunauto", "corunautoshort") for role in ("hp", "lp")
              if (g, role) != ("corunautoshort", "hp")]
    for g, role in others:
        assert "GPUYIELD_IDLE_US" not in env_of(g, role), (g, role)
    raw = json.loads((out / "raw.json").read_text())
    assert raw["args"]["auto_idle_us"] == 250
    for rnd in (0, 1):  # side by side: both in every round
        assert {s["setup"] for s in raw["segments"] if s["round"] == rnd} >= {"corun_auto", "corun_auto_short"}
    assert all("hp_auto_jobs" in s for s in raw["segments"] if s["setup"].startswith("corun_auto"))
    (cell,) = json.loads((out / "matrix.json").read_text())["cells"]
    assert {"corun", "corun_auto", "corun_auto_short"} <= set(cell["setups"])
    assert "corun_auto_short" in r.stdout  # the summary's column


def test_guarded_learns_at_the_set_load_or_the_cells_own():
    assert matrix.parse_args(["--merge", "d", "--out", "x"]).learn_load == 0.0  # the default: the cell's own load
    args = argparse.Namespace(learn_load=0.0)
    assert matrix.learn_load(args, "poisson-25") == matrix.LOADS["poisson-25"]
    args.learn_load = 0.9
    assert matrix.learn_load(args, "poisson-25") == 0.9


def test_pinning_puts_every_hp_worker_on_the_same_two_cpus_and_the_lps_on_the_rest():
    keys = [("plain", "hp"), ("plain", "lp"), ("corun", "hp"), ("corun", "lp"), ("markonly", "hp")]
    plan = matrix.cpu_plan(keys, set(range(16)))
    hp_cpus = [plan[k] for k in keys if k[1] == "hp"]
    assert all(c == [2, 3] for c in hp_cpus)  # every setup's HP on the same cores, the first two left free
    assert plan[("plain", "lp")] == plan[("corun", "lp")] == list(range(4, 16))
    assert plan[matrix.TOOLS_KEY] == [0, 1]  # the harness, the MPS daemon and expcontroller off the HP's cores
    assert matrix.cpu_plan(keys, set(range(5))) is not None and matrix.cpu_plan(keys, set(range(4))) is None


def test_the_cpus_taking_the_gpus_interrupts_go_to_the_harness_not_to_a_worker():
    keys = [("corun", "hp"), ("corun", "lp"), ("guarded", "hp"), ("guarded", "lp")]
    plan = matrix.cpu_plan(keys, set(range(16)), irq_cpus=[14])
    workers = [c for k in keys for c in plan[k]] + plan[matrix.IDLE_HP_KEY]
    assert 14 not in workers and plan[matrix.TOOLS_KEY] == [0, 1, 14]
    assert plan[("corun", "hp")] == [2, 3] and plan[("guarded", "lp")] == [4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15]
    # too few CPUs besides it: the plan without it, as before
    assert matrix.cpu_plan(keys, set(range(5)), irq_cpus=[3])[("corun", "hp")] == [2, 3]
    assert matrix.cpu_plan(keys, set(range(8)), irq_cpus=[30]) == matrix.cpu_plan(keys, set(range(8)))


def test_the_gpus_interrupt_cpus_are_read_from_proc_interrupts(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu 1 2 3 4 5 6 7 8\n" + "".join(f"cpu{i} 1 0 1 10 0 0 0 0\n" for i in range(4)))
    intr = tmp_path / "interrupts"
    intr.write_text("           CPU0       CPU1       CPU2       CPU3\n"
                    " 24:          3          0       9000          5   PCI-MSI 1-edge      nvidia\n"
                    " 25:         70         80         90        100   PCI-MSI 2-edge      virtio0-req.0\n"
                    "LOC:       1000       1000       1000       1000   Local timer interrupts\n")
    snap = host_counters.read(str(stat), str(intr))
    assert host_counters.busiest_cpus_of("nvidia", snap) == [2]
    assert host_counters.busiest_cpus_of("virtio0-req.0", snap) == [0, 1, 2, 3]
    assert host_counters.busiest_cpus_of("nvidia", {}) == []
    # the interrupt line's effective affinity wins over the counts since boot
    irq = tmp_path / "irq" / "24"
    irq.mkdir(parents=True)
    (irq / "effective_affinity_list").write_text("3\n")
    assert host_counters.gpu_irq_cpus(str(intr), str(tmp_path / "irq"), str(stat)) == [3]
    (irq / "effective_affinity_list").write_text("0-3\n")  # no narrow target: the counts
    assert host_counters.gpu_irq_cpus(str(intr), str(tmp_path / "irq"), str(stat)) == [2]
    assert host_counters.gpu_irq_cpus(str(intr), str(tmp_path / "none"), str(stat)) == [2]
    assert host_counters.cpu_list("0-2,8") == [0, 1, 2, 8] and host_counters.cpu_list("x") == []


def test_the_cpus_sharing_a_core_are_read_from_sysfs(tmp_path):
    for cpu, siblings in ((0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3"), (4, "4")):
        topo = tmp_path / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "thread_siblings_list").write_text(siblings + "\n")
    (tmp_path / "cpufreq").mkdir()  # not a CPU
    (tmp_path / "cpu5").mkdir()  # offline: no topology
    assert host_counters.cpu_siblings(str(tmp_path)) == {0: [0, 2], 1: [1, 3], 2: [0, 2], 3: [1, 3], 4: [4]}
    assert host_counters.cpu_siblings(str(tmp_path / "none")) == {}


def test_an_arm_setup_runs_on_a_guarded_segment_of_its_own_with_the_arm_pinned(tmp_path):
    """arm:ARM (issue 26: each arm measured alone): its own group and guarded segment, the arm pinned
    by guard-force at each cell's start, its status recorded with every segment."""
    assert matrix.SETUP["arm:disjoint:64"] == ("arm-disjoint64", ("hp", "lp"), True)
    args = argparse.Namespace(build="/b", lp_mode="event:2", partition_sms=16)
    env = matrix.group_env(args, "arm-disjoint64", "hp", {"arm-disjoint64": "s-arm"}, ("/pipe", "/log"))
    assert env["GPUYIELD_SHM"] == "s-arm" and env["GPUYIELD_PRIORITY"] == "1" and env["CUDA_MPS_PIPE_DIRECTORY"] == "/pipe"
    out = tmp_path / "m"
    r = short_dry_run(out, "--hp-kinds", "gemm", "--lp-kinds", "gemm,graph", "--setups",
                      "hp_alone,lp_alone,arm:disjoint:64,arm:partition:120,arm:stop")
    assert r.returncode == 0, r.stdout
    raw = json.loads((out / "raw.json").read_text())
    for setup, arm in (("arm:disjoint:64", "disjoint:64"), ("arm:partition:120", "partition:120"),
                       ("arm:stop", "stop")):  # stop pinned: guarded's machinery without a trial
        segs = [s for s in raw["segments"] if s["setup"] == setup]
        assert len(segs) == 2  # one per cell
        for s in segs:
            g = s["guarded_status"]["guarded"]
            assert (g["in_force"], g["reason"]) == (arm, "forced"), g
    cells = json.loads((out / "matrix.json").read_text())["cells"]
    assert all({"arm:disjoint:64", "arm:partition:120"} <= set(c["setups"]) for c in cells)
    assert "arm:disjoint:64" in r.stdout  # the summary's column


def test_a_green_depth_arm_setup_pins_its_arm_and_bounds_only_the_lps_green_stream(tmp_path):
    """arm:ARM@green:US: the arm pinned on a guarded segment of the group's own, the LP under
    GPUYIELD_PARTITION_US=US beside its own time:US, the HP without it."""
    assert matrix.SETUP["arm:partition:120@green:2000"] == ("arm-partition120-green2000", ("hp", "lp"), True)
    assert matrix.ARM_GROUPS["arm-partition120-green2000"] == "partition:120"
    assert matrix.SETUP["arm:partition:120"] == ("arm-partition120", ("hp", "lp"), True)  # the plain arm unchanged
    args = argparse.Namespace(build="/b", lp_mode="time:500", partition_sms=16)
    segments = {"arm-partition120-green2000": "s-green"}
    lp = matrix.group_env(args, "arm-partition120-green2000", "lp", segments, ("/pipe", "/log"))
    hp = matrix.group_env(args, "arm-partition120-green2000", "hp", segments, ("/pipe", "/log"))
    assert lp["GPUYIELD_PARTITION_US"] == "2000" and lp["GPUYIELD_MODE"] == "time:500" and lp["GPUYIELD_SHM"] == "s-green"
    assert "GPUYIELD_PARTITION_US" not in hp and hp["GPUYIELD_PRIORITY"] == "1"
    assert "GPUYIELD_PARTITION_US" not in matrix.group_env(args, "arm-partition120", "lp", {"arm-partition120": "s"},
                                                           ("/pipe", "/log"))
    out = tmp_path / "m"
    r = short_dry_run(out, "--hp-kinds", "gemm", "--lp-kinds", "gemm", "--setups",
                      "hp_alone,lp_alone,arm:partition:64,arm:partition:64@green:4000")
    assert r.returncode == 0, r.stdout
    raw = json.loads((out / "raw.json").read_text())
    segs = [s for s in raw["segments"] if s["setup"] == "arm:partition:64@green:4000"]
    assert segs and all((s["guarded_status"]["guarded"]["in_force"], s["guarded_status"]["guarded"]["reason"])
                        == ("partition:64", "forced") for s in segs)
    assert "arm:partition:64@green:4000" in r.stdout  # the summary's column


def test_the_hps_jobs_are_split_by_the_guarded_arm_they_ran_under():
    """by_arm: per setup, the HP's jobs grouped by their recorded guarded arm (a slow tail can be tied
    to the arm it ran under); no by_arm where no arm was recorded."""
    raw = synthetic_raw(1.0, 0.5, 2, "c1")
    for seg in raw["segments"]:
        if seg["setup"] == "corun":
            n = len(seg["hp_result"]["lat_ms"])
            seg["hp_result"]["arms"] = ["stop"] * 50 + ["partition:64"] * (n - 50)
    cell = matrix.analyze([raw])["cells"][0]
    by = cell["setups"]["corun"]["by_arm"]
    assert by["stop"]["jobs"] == 100 and by["partition:64"]["jobs"] == 100  # two rounds
    assert by["stop"]["svc_p50_ms"] == 10.0 and by["partition:64"]["lat_p99_ms"] == 30.0  # the slow job's arm
    assert "by_arm" not in cell["setups"]["hp_ctl_alone"]


def test_corun_block_is_corun_with_the_lps_waits_blocking_at_once():
    """corun_block (issue 26's blocking LP waits): a corun segment of its own, GPUYIELD_SPIN_US=0 in
    its LP only."""
    args = argparse.Namespace(build="/b", lp_mode="time:500", partition_sms=16)
    segments = {"corun": "s-corun", "corunblock": "s-block"}
    assert matrix.SETUP["corun_block"] == ("corunblock", ("hp", "lp"), True)
    lp = matrix.group_env(args, "corunblock", "lp", segments, ("/pipe", "/log"))
    hp = matrix.group_env(args, "corunblock", "hp", segments, ("/pipe", "/log"))
    assert lp["GPUYIELD_SPIN_US"] == "0" and lp["GPUYIELD_SHM"] == "s-block" and lp["GPUYIELD_MODE"] == "time:500"
    assert "GPUYIELD_SPIN_US" not in hp and hp["GPUYIELD_SHM"] == "s-block"
    assert "GPUYIELD_SPIN_US" not in matrix.group_env(args, "corun", "lp", segments, ("/pipe", "/log"))


def test_corun_whole_is_corun_with_the_lps_graphs_launched_whole():
    """corun_whole: a corun segment of its own, GPUYIELD_GRAPH_SPLIT=off in its LP only; corun's LP
    keeps the hook's default (graphs cut into parts)."""
    args = argparse.Namespace(build="/b", lp_mode="time:500", partition_sms=16)
    segments = {"corun": "s-corun", "corunwhole": "s-whole"}
    assert matrix.SETUP["corun_whole"] == ("corunwhole", ("hp", "lp"), True)
    lp = matrix.group_env(args, "corunwhole", "lp", segments, ("/pipe", "/log"))
    hp = matrix.group_env(args, "corunwhole", "hp", segments, ("/pipe", "/log"))
    assert lp["GPUYIELD_GRAPH_SPLIT"] == "off" and lp["GPUYIELD_SHM"] == "s-whole" and lp["GPUYIELD_MODE"] == "time:500"
    assert "GPUYIELD_GRAPH_SPLIT" not in hp and hp["GPUYIELD_PRIORITY"] == "1"
    assert "GPUYIELD_GRAPH_SPLIT" not in matrix.group_env(args, "corun", "lp", segments, ("/pipe", "/log"))


def test_lp_only_cost_setups_have_an_lp_ratio_and_no_hp_verdict():
    raw = synthetic_raw(slow=1.0, lp_share=0.6)
    for r in range(2):
        for setup, units in (("lp_mps_alone", 95.0), ("lp_ctl_alone", 80.0)):
            raw["segments"].append({"hp": "gemm", "lp": "graph", "load": "poisson-25", "setup": setup, "round": r,
                                    "rate": 25.0, "lp_result": {"units": units, "secs": 1.0, "counted": units,
                                                                "counted_secs": 1.0}})
    m = matrix.analyze([raw])
    cell = m["cells"][0]
    ctl, mps = cell["setups"]["lp_ctl_alone"], cell["setups"]["lp_mps_alone"]
    assert ctl["lp_throughput_ratio"]["value"] == pytest.approx(0.8)
    assert mps["lp_throughput_ratio"]["value"] == pytest.approx(0.95)
    assert ctl["hp_jobs"] == 0 and "hp_p50_ratio" not in ctl and "meets_hp_target" not in ctl
    assert "lp_share_of_left" not in ctl  # the HP left the whole GPU: no share of what it left
    line = next(ln for ln in matrix.summary_table(m).splitlines() if ln.startswith("gemm+graph"))
    assert "-/-/0.80" in line and "-/-/0.95" in line
    assert matrix.SETUP["lp_ctl_alone"] == ("corun", ("lp",), False)


def test_lp_only_setups_run_the_lp_alone_in_its_controlled_group(tmp_path):
    """The harness runs lp_ctl_alone's LP on the corun segment with no HP in the window: the segment
    records no HP job and the LP's units are counted."""
    out = tmp_path / "m"
    r = short_dry_run(out, "--hp-kinds", "gemm", "--lp-kinds", "gemm", "--setups",
                      "hp_alone,lp_alone,corun,lp_ctl_alone,lp_block_alone")
    assert r.returncode == 0, r.stdout
    raw = json.load(open(out / "raw.json"))
    segs = {s["setup"]: s for s in raw["segments"]}
    for setup in ("lp_ctl_alone", "lp_block_alone"):
        assert "hp_result" not in segs[setup] and segs[setup]["lp_result"]["counted"] > 0
    cell = json.load(open(out / "matrix.json"))["cells"][0]
    assert cell["setups"]["lp_ctl_alone"]["lp_throughput_ratio"]["value"] > 0


def test_mode_variants_run_the_lp_under_their_bound_on_a_corun_segment_of_their_own(tmp_path):
    """corun@MODE / lp_ctl@MODE: the LP's GPUYIELD_MODE is MODE (the HP's none), the segment is a
    corun one of the group's own; an LP-only group gets no HP worker."""
    args = argparse.Namespace(build="/b", lp_mode="time:500", partition_sms=16)
    segments = {"corun": "s-corun", "corun-time2000": "s-2000"}
    assert matrix.SETUP["corun@time:2000"] == ("corun-time2000", ("hp", "lp"), True)
    assert matrix.SETUP["lp_ctl@none"] == ("corun-none", ("lp",), False)
    lp = matrix.group_env(args, "corun-time2000", "lp", segments, ("/pipe", "/log"))
    hp = matrix.group_env(args, "corun-time2000", "hp", segments, ("/pipe", "/log"))
    assert lp["GPUYIELD_MODE"] == "time:2000" and lp["GPUYIELD_SHM"] == "s-2000" and lp["CUDA_MPS_CLIENT_PRIORITY"] == "1"
    assert hp["GPUYIELD_MODE"] == "none" and hp["GPUYIELD_PRIORITY"] == "1"
    assert matrix.group_env(args, "corun", "lp", segments, ("/pipe", "/log"))["GPUYIELD_MODE"] == "time:500"
    out = tmp_path / "m"
    r = short_dry_run(out, "--hp-kinds", "gemm", "--lp-kinds", "gemm", "--setups",
                      "hp_alone,lp_alone,corun,corun@time:2000,lp_ctl@none")
    assert r.returncode == 0, r.stdout
    logs = sorted(p.name for p in out.iterdir() if p.name.endswith(".log"))
    assert logs == ["corun-none_lp.log", "corun-time2000_hp.log", "corun-time2000_lp.log", "corun_hp.log",
                    "corun_lp.log", "plain_hp.log", "plain_lp.log"]
    cell = json.load(open(out / "matrix.json"))["cells"][0]
    assert {"corun", "corun@time:2000", "lp_ctl@none"} <= set(cell["setups"])
    assert "hp_p50_ratio" in cell["setups"]["corun@time:2000"] and "hp_p50_ratio" not in cell["setups"]["lp_ctl@none"]


def test_guarded_auto_runs_an_unmarked_hp_on_a_guarded_segment_that_learns_first(tmp_path):
    """guarded_auto: guarded for an unmodified server. Its HP preloaded under GPUYIELD_JOBS=auto and
    marking nothing, on a guarded segment of its own (not corun's, as the other auto setups), learning
    before the rounds as guarded does (guarded_auto_learn, left out of the verdict)."""
    assert matrix.SETUP["guarded_auto"] == ("guardedauto", ("hp", "lp"), False)
    args = argparse.Namespace(build="/b", lp_mode="time:500", partition_sms=16)
    segments = {"guardedauto": "s-ga"}
    hp = matrix.group_env(args, "guardedauto", "hp", segments, ("/pipe", "/log"))
    lp = matrix.group_env(args, "guardedauto", "lp", segments, ("/pipe", "/log"))
    assert hp["GPUYIELD_JOBS"] == "auto" and hp["GPUYIELD_PRIORITY"] == "1" and hp["GPUYIELD_SHM"] == "s-ga"
    assert hp["GPUYIELD_VERBOSE"] == "1"  # its changes of arm, in order, as guarded's HP
    assert "GPUYIELD_JOBS" not in lp and lp["GPUYIELD_PARTITION_SMS"] == "16" and lp["CUDA_MPS_CLIENT_PRIORITY"] == "1"
    out = tmp_path / "m"
    r = short_dry_run(out, "--hp-kinds", "gemm", "--lp-kinds", "gemm", "--setups",
                      "hp_alone,lp_alone,guarded_auto", "--learn-jobs", "20", "--learn-load", "0")
    assert r.returncode == 0, r.stdout
    raw = json.loads((out / "raw.json").read_text())
    learn = [s for s in raw["segments"] if s["setup"] == "guarded_auto_learn"]
    assert len(learn) == 1 and "guarded" in learn[0]["guarded_status"]  # a guarded segment's status
    auto = [s for s in raw["segments"] if s["setup"] in ("guarded_auto", "guarded_auto_learn")]
    assert auto and all(not s["hp_result"]["begin_us"] for s in auto)  # nothing marked
    cell = json.loads((out / "matrix.json").read_text())["cells"][0]
    assert "guarded_auto" in cell["setups"] and "guarded_auto_learn" not in cell["setups"]


def test_guarded_depth_learns_on_a_segment_of_its_own_made_with_guard_depth(tmp_path):
    """guarded_depth: a guarded segment created with --guard-depth, learning before the rounds beside
    guarded's own learning (setups guarded_learn and guarded_depth_learn, left out of the verdict)."""
    assert matrix.SETUP["guarded_depth"] == ("guardeddepth", ("hp", "lp"), True)
    out = tmp_path / "m"
    r = short_dry_run(out, "--hp-kinds", "gemm", "--lp-kinds", "gemm", "--setups",
                      "hp_alone,lp_alone,guarded,guarded_depth", "--learn-jobs", "20", "--learn-load", "0")
    assert r.returncode == 0, r.stdout
    raw = json.loads((out / "raw.json").read_text())
    learn = {s["setup"]: s for s in raw["segments"] if s["setup"].endswith("_learn")}
    assert set(learn) == {"guarded_learn", "guarded_depth_learn"}
    assert learn["guarded_depth_learn"]["guarded_status"]["guarded"]["queue_depth"]["on"] is True
    assert learn["guarded_learn"]["guarded_status"]["guarded"]["queue_depth"]["on"] is False
    cell = json.loads((out / "matrix.json").read_text())["cells"][0]
    assert {"guarded", "guarded_depth"} <= set(cell["setups"]) and not any(s.endswith("_learn") for s in cell["setups"])


def test_merge_reads_a_compressed_raw_record_like_a_plain_one(tmp_path):
    """Records keep large raw files compressed: --merge of a folder with raw.json.xz or raw.json.gz
    gives the verdict a folder with raw.json gives; a damaged one is named, exit 2."""
    import gzip
    import lzma
    plain, zipped, xzed = tmp_path / "plain", tmp_path / "zipped", tmp_path / "xzed"
    plain.mkdir(), zipped.mkdir(), xzed.mkdir()
    raw = synthetic_raw(slow=1.02, lp_share=0.6)
    (plain / "raw.json").write_text(json.dumps(raw))
    with gzip.open(zipped / "raw.json.gz", "wt") as f:
        json.dump(raw, f)
    with lzma.open(xzed / "raw.json.xz", "wt") as f:
        json.dump(raw, f)
    outs = []
    for d in (plain, zipped, xzed):
        out = tmp_path / f"out-{d.name}"
        r = subprocess.run([sys.executable, "-m", "bench.gpu.matrix", "--merge", str(d), "--out", str(out)], cwd=ROOT,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                           env=dict(os.environ, MPLBACKEND="Agg"))
        assert r.returncode == 0, r.stdout
        outs.append(json.loads((out / "matrix.json").read_text())["cells"])
    assert outs[0] == outs[1] == outs[2]
    for name, junk in (("raw.json.gz", b"not gzip"), ("raw.json.xz", b"not xz")):
        bad = tmp_path / f"bad-{name}"
        bad.mkdir()
        (bad / name).write_bytes(junk)
        r = subprocess.run([sys.executable, "-m", "bench.gpu.matrix", "--merge", str(bad), "--out", str(tmp_path / "o")],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        assert r.returncode == 2 and "cannot read" in r.stdout and name in r.stdout, r.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    r = subprocess.run([sys.executable, "-m", "bench.gpu.matrix", "--merge", str(empty), "--out", str(tmp_path / "o")],
                       cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert r.returncode == 2 and "no raw.json, raw.json.xz or raw.json.gz in" in r.stdout, r.stdout


def test_service_tails_pools_the_measured_rounds_and_compares_with_the_hp_alone(tmp_path, capsys):
    from bench.gpu import service_tails
    def seg(setup, rnd, svc):
        return {"hp": "gemm", "lp": "graph", "load": "poisson-60", "setup": setup, "round": rnd,
                "hp_result": {"ok": True, "svc_ms": svc}}
    raw = {"segments": [seg("hp_alone", 0, [1.0, 2.0, 3.0]), seg("hp_alone", 1, [4.0]),
                        seg("corun", 0, [2.0, 4.0]), seg("corun", 1, [6.0, 8.0]),
                        seg("corun", -1, [100.0]),  # learning: left out
                        {"hp": "gemm", "lp": "graph", "load": "poisson-60", "setup": "lp_alone", "round": 0}]}
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    t = service_tails.tails([str(tmp_path)])[("gemm", "graph", "poisson-60")]
    assert t["hp_alone"]["jobs"] == 4 and t["hp_alone"]["mean_ms"] == 2.5 and t["hp_alone"]["p50_ms"] == 2.0
    assert t["corun"]["jobs"] == 4 and t["corun"]["mean_ms"] == 5.0 and t["corun"]["p99_ms"] == 8.0
    service_tails.main([str(tmp_path)])
    assert "mean 2.000" in capsys.readouterr().out  # corun's mean over hp_alone's
    with pytest.raises(SystemExit, match="no raw.json"):
        service_tails.tails([str(tmp_path / "missing")])


def test_lp_cycles_splits_the_lps_loss_against_alone_into_the_gaps_and_the_jobs(tmp_path, capsys):
    """Jobs of 10 ms every 20 ms; the LP ends a unit every 2 ms in them and every 1 ms in the gaps,
    alone 1000 units/s: in jobs half the time, the gaps at 1.00 and the jobs at 0.50 of alone, its
    loss 0.25 = 0.00 in the gaps + 0.25 in the jobs. A cell without an LP alone has no split."""
    from bench.gpu import lp_cycles
    starts, done = [0.0, 20.0, 40.0, 60.0], []
    for begin in starts:
        done += [begin + 2.0 * k for k in range(1, 6)] + [begin + 10.0 + k for k in range(1, 11)]
    seg = {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "corun", "round": 0,
           "hp_result": {"ok": True, "svc_ms": [10.0] * 4, "start_ms": starts, "arms": [None] * 4},
           "lp_result": {"ok": True, "first_ms": 0.0, "done_ms": done}}
    alone = {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "lp_alone", "round": 0,
             "lp_result": {"ok": True, "counted": 1000.0, "counted_secs": 1.0}}
    other = dict(seg, lp="graph")  # no LP alone in its cell
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [seg, alone, other]}))
    split = lp_cycles.loss_split(lp_cycles.by_arm([str(tmp_path)]), lp_cycles.alone_rates([str(tmp_path)]))
    assert len(split) == 1
    cell, setup, share, gaps, jobs, loss_gaps, loss_jobs = split[0]
    assert (cell, setup) == (("small", "gemm", "poisson-25"), "corun")
    assert (share, gaps, jobs, loss_gaps, loss_jobs) == pytest.approx((0.5, 1.0, 0.5, 0.0, 0.25))
    lp_cycles.main([str(tmp_path)])
    line = next(l for l in capsys.readouterr().out.splitlines() if "loss 0.25" in l)
    assert "small + gemm" in line and "gaps 0.00 + jobs 0.25" in line


def test_lp_cycles_charges_each_arm_with_what_the_lp_did_during_its_job_and_in_the_gap_after(tmp_path, capsys):
    """A segment of 4 HP jobs of 10 ms, 20 ms apart: stop, partition:16, stop, partition:16. Around a
    stop job the LP's one unit spans the job and it then ends one every 1 ms in the gap; during a
    partition job it ends one every 2 ms, and in the gap after it only 3 (its backlog). A unit counts
    where it ran, from the previous unit's end to its own. The arm's cycle rate is 8 units / 20 ms
    against stop's 11 / 20, 0.727 of it, though it gives the LP more during the job."""
    from bench.gpu import lp_cycles
    starts = [0.0, 20.0, 40.0, 60.0]
    arms = ["stop", "partition:16", "stop", "partition:16"]
    done = []
    for begin, arm in zip(starts + [80.0], arms + ["stop"]):
        if arm == "partition:16":
            done += [begin + 2.0 * k for k in range(1, 6)] + [begin + 14.0, begin + 18.0, begin + 20.0]
        else:
            done += [begin + 10.0] + [begin + 10.0 + k for k in range(1, 11)]
    seg = {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "guarded", "round": -1,
           "hp_result": {"ok": True, "svc_ms": [10.0] * 4, "start_ms": starts, "arms": arms},
           "lp_result": {"ok": True, "first_ms": 0.0, "done_ms": done}}
    rows = lp_cycles.cycles(seg)
    assert [r[0] for r in rows] == arms[:3]  # the last job has no next start: no cycle
    assert rows[0][1:] == pytest.approx((10.0, 10.0, 1.0, 10.0)) and rows[1][3:] == pytest.approx((5.0, 3.0))
    rnd = dict(seg, round=0, setup="corun", hp_result=dict(seg["hp_result"], arms=[None] * 4))
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [seg, rnd]}))
    lp_cycles.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "small + gemm, poisson-25, learning" in out and "small + gemm, poisson-25, rounds" in out
    part = next(l for l in out.splitlines() if "partition:16" in l)
    assert "in jobs    500.0" in part and "in gaps    300.0" in part and "cycle x stop 0.727 [0.727, 0.727]" in part
    corun = next(l for l in out.splitlines() if l.strip().startswith("corun"))
    assert "cycle x stop" not in corun and "3 cycles" in corun  # no arms: one row, no ratio
    # by the arm before: the 16-SM cycle (8 units in 20 ms) followed stop, the second stop cycle (11)
    # followed 16 SMs; corun has no arms and no such line
    (carry,) = [l for l in out.splitlines() if "by the arm before" in l]
    assert "learning, guarded:" in carry and "partition:16 after stop 400.0 (1)" in carry
    assert "stop after another 550.0 (1)" in carry
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "raw.json").write_text(json.dumps({"segments": [dict(seg, lp_result={"ok": True})]}))
    with pytest.raises(SystemExit, match="no segment"):
        lp_cycles.main([str(tmp_path / "old")])


def test_lp_cycles_gives_the_rules_launch_count_per_arm_and_split_by_the_arm_before(tmp_path, capsys):
    """Six jobs 10 ms apart: stop, 16, 16, stop, stop, 16, with the LP launch counts the rule read at
    each begin. Cycle i is job i's start to job i+1's, its launches the difference: stop cycles 10,
    20 (after 16), 10 (after stop): 40 in 30 ms; 16-SM cycles 30 (after stop), 40 (after itself): 70
    in 20 ms. The last job has no next begin; a job without a count (no arm) breaks no other cycle."""
    from bench.gpu import lp_cycles
    arms = ["stop", "partition:16", "partition:16", "stop", "stop", "partition:16"]
    counts = [0, 10, 40, 80, 100, 110]
    seg = {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "guarded", "round": -1,
           "hp_result": {"ok": True, "svc_ms": [4.0] * 6, "start_ms": [10.0 * i for i in range(6)], "arms": arms,
                         "lp_launches": counts},
           "lp_result": {"ok": True, "first_ms": 0.0, "done_ms": [1.0 * k for k in range(1, 60)]}}
    assert lp_cycles.launch_cycles(seg) == [("stop", "-", 10.0, 10), ("partition:16", "stop", 10.0, 30),
                                           ("partition:16", "partition:16", 10.0, 40),
                                           ("stop", "partition:16", 10.0, 20), ("stop", "stop", 10.0, 10)]
    gap = dict(seg, hp_result=dict(seg["hp_result"], lp_launches=[0, 10, None, 80, 100, 110]))
    assert [c[0] for c in lp_cycles.launch_cycles(gap)] == ["stop", "stop", "stop"]  # cycles 1 and 2 have no count
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [seg]}))
    lp_cycles.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "the rule's own count" in out
    row = next(l for l in out.splitlines() if l.startswith("  guarded") and "partition:16" in l and " all " in l)
    stop = next(l for l in out.splitlines() if l.startswith("  guarded") and l.split()[1:2] == ["stop"] and " all " in l)
    assert "all    3500.0" in row and "after stop    3000.0 (1)" in row and "after itself    4000.0 (1)" in row
    assert "all    1333.3" in stop and "after stop    1000.0 (1)" in stop and "after itself    1000.0 (1)" in stop
    assert "x stop 2.625, runs of itself x runs of stop 4.000" in row


def test_lp_cycles_charges_each_gap_to_the_depth_it_ran_at_the_next_jobs(tmp_path, capsys):
    """Nine jobs 10 ms apart: stop samples and stop@2000us jobs, and one partition:64@2000us. The
    gap after job i runs at job i+1's depth, so a stop sample's cycle before a 2000-us job is
    2000 us's, a 2000-us job's before a stop sample the own bound's. The LP launches 20 in a cycle
    whose gap ran at 2000 us, 10 at its own bound: 2000 us x2.000 of it; the partition job's cycle is
    no stop job's and is not counted (it would be 100). A segment without any depth gives no line."""
    from bench.gpu import lp_cycles
    arms = ["stop", "stop@2000us", "stop@2000us", "stop", "stop", "partition:64@2000us", "stop@2000us", "stop",
            "stop@2000us"]
    counts, n = [], 0
    for i, arm in enumerate(arms):
        counts.append(n)
        if i + 1 < len(arms):
            n += 100 if arm.startswith("partition") else 20 if "@" in arms[i + 1] else 10
    seg = {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "guarded_depth", "round": -1,
           "hp_result": {"ok": True, "svc_ms": [4.0] * 9, "start_ms": [10.0 * i for i in range(9)], "arms": arms,
                         "lp_launches": counts},
           "lp_result": {"ok": True, "first_ms": 0.0, "done_ms": [1.0, 2.0]}}
    rows = lp_cycles.gap_depth_launches(seg)
    assert [(d, launches) for d, _ms, launches, _i in rows] == [
        ("2000us", 20), ("2000us", 20), ("own", 10), ("own", 10), ("2000us", 20), ("own", 10), ("2000us", 20)]
    assert lp_cycles.depth_of("partition:64@4000us") == "4000us" and lp_cycles.depth_of("stop") == "own"
    plain = dict(seg, setup="corun", hp_result=dict(seg["hp_result"], arms=["stop"] * 9))
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [seg, plain]}))
    lp_cycles.main([str(tmp_path)])
    (line,) = [l for l in capsys.readouterr().out.splitlines() if "by the depth of the gap" in l]
    assert "learning, guarded_depth:" in line and "(1000.0/s)" in line and "2000us x2.000 (halves 2.000 2.000)" in line


def test_arm_split_gives_the_arms_ratio_per_round_and_over_invocations_with_an_interval(tmp_path, capsys):
    """Two invocations: one round each where the arm's jobs take 1.10x its stop jobs', one more in the
    second at 1.00x; the ratio pools every round, the interval resamples invocations then rounds,
    and a round without stop jobs or a learning segment adds nothing."""
    from bench.gpu import arm_split
    def seg(rnd, stop_ms, arm_ms, n=5):
        return {"hp": "small", "lp": "resnet50train", "load": "poisson-25", "setup": "arm:partition:16", "round": rnd,
                "hp_result": {"ok": True, "svc_ms": [stop_ms] * n + [arm_ms] * n,
                              "arms": ["stop"] * n + ["partition:16"] * n}}
    lone = seg(1, 1.0, 2.0)
    lone["hp_result"]["arms"] = ["partition:16"] * 10  # no stop jobs in that round: no ratio
    folders = []
    for name, segs in (("a", [seg(0, 4.0, 4.4), seg(-1, 1.0, 9.0), lone]), ("b", [seg(0, 4.0, 4.4), seg(1, 4.0, 4.0)])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "raw.json").write_text(json.dumps({"segments": segs}))
        folders.append(str(tmp_path / name))
    ((cell, setup, arm, per_round, r),) = arm_split.arm_ratios(folders)
    assert (cell, setup, arm) == (("small", "resnet50train", "poisson-25"), "arm:partition:16", "partition:16")
    assert per_round == pytest.approx([1.1, 1.1, 1.0])
    assert r["value"] == pytest.approx(1.1)  # pooled: 10 of the 15 arm jobs at 4.4 over a stop median of 4.0
    assert r["ci"][0] == pytest.approx(1.0) and r["ci"][1] == pytest.approx(1.1)
    assert arm_split.arm_ratios(folders[:1])[0][4]["ci"] == [1.1, 1.1]  # one round: no spread to resample
    arm_split.main(folders)
    assert "svc x stop over 2 invocation(s), 3 rounds: 1.100 [1.000, 1.100]; rounds 1.100 1.100 1.000" in capsys.readouterr().out


def test_arm_split_gives_each_setups_service_per_launching_cpu_and_its_core(tmp_path, capsys):
    from bench.gpu import arm_split
    def seg(setup, rnd, svc, cpus):
        return {"hp": "bert", "lp": "gemm", "load": "poisson-25", "setup": setup, "round": rnd,
                "hp_result": {"ok": True, "svc_ms": svc, "launch_ms": [v - 0.1 for v in svc],
                              "launch_cpu_ms": [v - 0.1 for v in svc], "cpus": cpus}}
    raw = {"cpu_siblings": {"3": [3, 11], "4": [4], "11": [3, 11]}, "segments": [
        seg("corun", 0, [4.0, 4.2, 5.0], [3, 3, 4]),
        seg("corun", 1, [4.4, 5.2], [3, 4]),
        seg("guarded", 0, [6.0, 5.0], [4, None]),  # a job whose CPU is unknown: left out
        seg("guarded", -1, [9.0], [3]),  # learning: left out
        {"hp": "bert", "lp": "gemm", "load": "poisson-25", "setup": "hp_alone", "round": 0,
         "hp_result": {"ok": True, "svc_ms": [3.0], "launch_ms": [2.9], "launch_cpu_ms": [2.9]}}]}  # before cpus
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    cells, siblings = arm_split.by_cpu([str(tmp_path)])
    assert siblings == {3: [3, 11], 4: [4], 11: [3, 11]}
    cell = cells[("bert", "gemm", "poisson-25")]
    assert set(cell) == {"corun", "guarded"}
    assert cell["corun"] == {3: [4.0, 4.2, 4.4], 4: [5.0, 5.2]} and cell["guarded"] == {4: [6.0]}
    arm_split.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "svc by CPU, corun       3: 4.200 ms x3 (core shared with 11)  4: 5.000 ms x2" in out
    assert "svc by CPU, guarded     4: 6.000 ms x1" in out and "svc by CPU, hp_alone" not in out


def test_arm_split_tells_host_side_from_gpu_side_per_arm_against_the_same_setups_stop_jobs(tmp_path, capsys):
    from bench.gpu import arm_split
    def seg(rnd, svc, launch, cpu, arms):
        return {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "arm:partition:16", "round": rnd,
                "hp_result": {"ok": True, "svc_ms": svc, "launch_ms": launch, "launch_cpu_ms": cpu, "arms": arms}}
    raw = {"segments": [
        # stop jobs: 4 ms, 3 of it launching on 3 ms of CPU; partition jobs: the launches 1 ms longer on
        # the same CPU time (the thread waited), the rest as stop's
        seg(0, [4.0, 5.0], [3.0, 4.0], [3.0, 3.0], ["stop", "partition:16"]),
        seg(1, [4.0, 5.0], [3.0, 4.0], [3.0, 3.0], ["stop", "partition:16"]),
        seg(-1, [50.0], [49.0], [1.0], ["partition:16"]),  # learning: left out
        {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "hp_alone", "round": 0,
         "hp_result": {"ok": True, "svc_ms": [3.0]}}]}  # from before launch_ms: left out
    raw["cpus"] = {"arm-partition16_hp": [2, 3], "arm-partition16_lp": [4]}
    for s, busy in zip(raw["segments"][:2], (0.5, 0.7)):
        s["host"] = {f"cpu{c}": {"busy": busy if c < 4 else 1.0, "irq": 0.0, "steal": 0.0, "intr_per_s": 10.0 * c,
                                 "intr_top": {"RES": 10.0 * c} if c == 2 else {}} for c in range(6)}
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    h = arm_split.host([str(tmp_path)])[("small", "gemm", "poisson-25")]["arm:partition:16"]
    assert h["hp"]["busy"] == pytest.approx(0.6) and h["hp"]["intr_per_s"] == pytest.approx(25.0)  # CPUs 2-3, 2 rounds
    assert h["lp"] == {"busy": 1.0, "irq": 0.0, "steal": 0.0, "intr_per_s": 40.0}  # CPU 4 only
    assert h["hp"]["intr_top"] == {"RES": pytest.approx(10.0)}  # CPU 2's 20/s, CPU 3 none
    groups = arm_split.split([str(tmp_path)])[("small", "gemm", "poisson-25")]
    assert set(groups) == {("arm:partition:16", "stop"), ("arm:partition:16", "partition:16")}
    part = arm_split.medians(groups[("arm:partition:16", "partition:16")])
    assert part == {"svc_ms": 5.0, "launch_ms": 4.0, "launch_cpu_ms": 3.0, "rest_ms": 1.0}
    arm_split.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "x stop: svc 1.250 launch 1.333 launch_cpu 1.000 rest 1.000" in out
    assert "hp CPUs: busy 0.600" in out and "(RES 10)" in out
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "raw.json").write_text(json.dumps({"segments": raw["segments"][3:]}))
    with pytest.raises(SystemExit, match="no HP jobs with launch_ms or a guarded arm"):
        arm_split.main([str(tmp_path / "old")])


def test_host_counters_give_each_cpus_busy_irq_and_stolen_shares_and_interrupt_rate(tmp_path):
    from bench.gpu import host_counters
    def write(ticks, intr):
        (tmp_path / "stat").write_text("cpu  9 9 9 9 9 9 9 9 0 0\n" + "".join(
            f"cpu{i} {' '.join(str(t) for t in row)} 0 0\n" for i, row in enumerate(ticks)) + "intr 1 2 3\n")
        (tmp_path / "interrupts").write_text("           CPU0       CPU1\n" + "".join(
            f" {n}: {a} {b} PCI-MSI nvidia\n" for n, (a, b) in enumerate(intr)) + "ERR: 0\n")
        return host_counters.read(str(tmp_path / "stat"), str(tmp_path / "interrupts"))
    # user nice system idle iowait irq softirq steal
    before = write([[0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0]], [(0, 0), (0, 0)])
    after = write([[50, 0, 10, 30, 0, 5, 5, 0], [0, 0, 0, 90, 0, 0, 0, 10]], [(100, 5), (300, 15)])
    d = host_counters.delta(before, after, 2.0)
    assert d["cpu0"] == {"busy": 0.7, "irq": 0.1, "steal": 0.0, "intr_per_s": 200.0,
                         "intr_top": {"nvidia": 200.0}}  # rows 0 and 1 are both the nvidia device's
    assert d["cpu1"] == {"busy": 0.1, "irq": 0.0, "steal": 0.1, "intr_per_s": 10.0, "intr_top": {"nvidia": 10.0}}
    after = write([[50, 0, 10, 30, 0, 5, 5, 0], [0, 0, 0, 90, 0, 0, 0, 10]], [(100, 5), (300, 15)])
    (tmp_path / "interrupts").write_text((tmp_path / "interrupts").read_text() + "RES: 40 2 Rescheduling interrupts\n")
    d = host_counters.delta(before, host_counters.read(str(tmp_path / "stat"), str(tmp_path / "interrupts")), 2.0)
    assert d["cpu0"]["intr_top"] == {"nvidia": 200.0, "RES": 20.0} and d["cpu0"]["intr_per_s"] == 220.0
    assert host_counters.read(str(tmp_path / "missing"), str(tmp_path / "interrupts")) == {}
    assert host_counters.delta({}, after, 2.0) == {}


def test_no_park_keeps_the_harness_pinned_and_only_drops_the_parking():
    def flags(*argv):
        evt = next((a.split("=")[1] for a in argv if a.startswith("--hp-evt-cpus=")), "hp")
        return argparse.Namespace(pin=True, pin_workers_only="--pin-workers-only" in argv, no_park="--no-park" in argv,
                                  hp_evt_cpus=evt)
    placement, cpus = matrix.harness_placement(flags(), [0, 1], [4, 5])
    assert isinstance(placement, matrix.HpPlacement) and placement.park == [4, 5]
    assert cpus == {"harness": [0, 1], "hp_idle": [4, 5]}
    assert matrix.harness_placement(flags("--no-park"), [0, 1], [4, 5]) == (None, {"harness": [0, 1]})
    assert matrix.harness_placement(flags("--pin-workers-only"), [0, 1], [4, 5]) == (None, {})
    assert matrix.harness_placement(flags(), None, None) == (None, {})  # no --pin: nothing placed
    placement, cpus = matrix.harness_placement(flags("--hp-evt-cpus=lp"), [0, 1], [4, 5])
    assert placement.evt_cpus == [4, 5] and cpus["hp_evt"] == [4, 5]
    placement, cpus = matrix.harness_placement(flags("--hp-evt-cpus=tools"), [0, 1], [4, 5])
    assert placement.evt_cpus == [0, 1] and not any(k.endswith("_hp") for k in cpus)  # not counted as the HP's


def named_threads_worker(*names):
    """A worker script that starts a thread named each of NAMES (PR_SET_NAME: its comm in /proc),
    says "up" and waits."""
    starts = "".join(f"threading.Thread(target=named, args=({n!r},), daemon=True).start()\n" for n in names)
    return ("import threading, ctypes, sys\n"
            "def named(name):\n"
            "    ctypes.CDLL(None).prctl(15, name)\n"
            "    threading.Event().wait()\n" + starts + "print('up', flush=True); sys.stdin.read()\n")


def named_tids(pid, names):
    """{comm: tid} of process PID once a thread of each of NAMES is there (2 s at most)."""
    task = f"/proc/{pid}/task"
    for _ in range(100):
        found = {}
        for t in os.listdir(task):
            with open(f"{task}/{t}/comm") as f:
                found[f.read().strip()] = int(t)
        if set(names) <= set(found):
            return found
        time.sleep(0.02)
    raise AssertionError(f"threads {names} never appeared")


def test_the_measured_hps_event_handler_thread_alone_goes_to_its_own_cpus(tmp_path, monkeypatch):
    """--hp-evt-cpus: of the measured worker, only the thread named cuda-EvtHandlr leaves the HP's
    CPUs; a parked worker's goes with the rest of it."""
    placed = []
    monkeypatch.setattr(matrix.os, "sched_setaffinity", lambda tid, cpus: placed.append((tid, tuple(cpus))))
    code = named_threads_worker(matrix.EVT_THREAD.encode())
    placement = matrix.HpPlacement(park=[4, 5], evt_cpus=[0, 1])
    procs = [matrix.Proc(f"g{i}_hp", [sys.executable, "-c", code], dict(os.environ), str(tmp_path / f"g{i}.log"),
                         cpus=[2, 3], placement=placement) for i in range(2)]
    try:
        for p in procs:
            assert p.proc.stdout.readline().strip() == "up"
        evts = [named_tids(p.proc.pid, [matrix.EVT_THREAD])[matrix.EVT_THREAD] for p in procs]
        procs[0].send({"cmd": "hp"})
        where = dict(placed)
        assert where[evts[0]] == (0, 1)
        assert all(c == (2, 3) for t, c in where.items() if t != evts[0] and str(t) in os.listdir(f"/proc/{procs[0].proc.pid}/task"))
        assert where[evts[1]] == (4, 5)  # parked with its worker
    finally:
        for p in procs:
            p.proc.kill()
            p.proc.wait()


def test_hp_main_cpu_puts_the_measured_hps_main_thread_alone_on_the_first_hp_cpu(tmp_path, monkeypatch):
    """--hp-main-cpu: of the measured worker, the main thread (the one launching its jobs) on the
    first of the HP's CPUs, its other threads on both, the event handler still where --hp-evt-cpus
    says; a parked worker's threads all parked."""
    placed = []
    monkeypatch.setattr(matrix.os, "sched_setaffinity", lambda tid, cpus: placed.append((tid, tuple(cpus))))
    code = named_threads_worker(matrix.EVT_THREAD.encode(), b"helper")
    flags = argparse.Namespace(pin=True, pin_workers_only=False, no_park=False, hp_evt_cpus="lp", hp_main_cpu=True)
    placement, cpus = matrix.harness_placement(flags, [0, 1], [4, 5])
    assert cpus["hp_main"] == "first" and placement.main_on_first
    procs = [matrix.Proc(f"g{i}_hp", [sys.executable, "-c", code], dict(os.environ), str(tmp_path / f"g{i}.log"),
                         cpus=[3, 2], placement=placement) for i in range(2)]
    try:
        for p in procs:
            assert p.proc.stdout.readline().strip() == "up"
        names = [named_tids(p.proc.pid, ["helper", matrix.EVT_THREAD]) for p in procs]
        procs[1].send({"cmd": "hp"})
        where = dict(placed)
        assert where[procs[1].proc.pid] == (2,)  # the first of its CPUs, whatever their order
        assert where[names[1]["helper"]] == (3, 2) and where[names[1][matrix.EVT_THREAD]] == (4, 5)
        assert where[procs[0].proc.pid] == (4, 5) and where[names[0]["helper"]] == (4, 5)  # parked whole
    finally:
        for p in procs:
            p.proc.kill()
            p.proc.wait()


def test_pinning_parks_every_hp_worker_but_the_measured_one(tmp_path, monkeypatch):
    """--pin: the HP worker about to be measured on the HP's CPUs, the others on the LP's (on the
    H100 the idle workers' threads were woken on the HP's CPUs thousands of times a second)."""
    placed = []
    monkeypatch.setattr(matrix.os, "sched_setaffinity", lambda tid, cpus: placed.append((tid, tuple(cpus))))
    placement = matrix.HpPlacement(park=[4, 5])
    procs = [matrix.Proc(f"g{i}_hp", [sys.executable, "-c", "import sys; sys.stdin.read()"], dict(os.environ),
                         str(tmp_path / f"g{i}.log"), cpus=[2, 3], placement=placement) for i in range(3)]
    try:
        tids = [{int(t) for t in os.listdir(f"/proc/{p.proc.pid}/task")} for p in procs]
        procs[1].send({"cmd": "load", "kind": "gemm"})  # loading is not measured: nobody moves
        assert placed == []
        procs[1].send({"cmd": "hp"})
        home = {tid for tid, cpus in placed if cpus == (2, 3)}
        parked = {tid for tid, cpus in placed if cpus == (4, 5)}
        assert home == tids[1] and parked == tids[0] | tids[2]
        placed.clear()
        procs[1].send({"cmd": "calib"})  # the same worker again: no syscall
        assert placed == []
        procs[2].send({"cmd": "busy"})
        assert {tid for tid, cpus in placed if cpus == (2, 3)} == tids[2]
    finally:
        for p in procs:
            p.proc.kill()
            p.proc.wait()
            p.log.close()


def test_the_gpus_interrupts_moving_onto_an_lp_cpu_take_it_off_the_lp_and_parked_workers(monkeypatch, capsys):
    """IrqWatch: a CPU that starts taking the GPU's interrupts after the plan leaves the LP workers'
    and the parked HP workers' CPUs for the harness's, once, recorded in raw.json; the measured HP
    stays where it is and the line says when its CPUs are hit; no move, nothing done."""
    class FakeProc:
        def __init__(self, cpus):
            self.cpus, self.placed = cpus, []

        def place(self, cpus, by_name=None):
            self.placed.append(list(cpus))
    harness = []
    monkeypatch.setattr(matrix.os, "sched_setaffinity", lambda pid, cpus: harness.append(sorted(cpus)))
    lp, hp_on, hp_parked = FakeProc([4, 5, 6, 7]), FakeProc([2, 3]), FakeProc([2, 3])
    placement = matrix.HpPlacement(park=[4, 5, 6, 7])
    placement.workers, placement.active = [hp_on, hp_parked], hp_on
    procs = {("corun", "lp"): lp, ("corun", "hp"): hp_on, ("plain", "hp"): hp_parked}
    readings = iter([[0], [7], [7], [3, 7]])
    raw = {}
    watch = matrix.IrqWatch(procs, placement, [0, 1], [0], raw, read=lambda: next(readings))
    watch.check("the workers up")  # still CPU 0: nothing moves
    assert lp.placed == [] and harness == [] and "gpu_irq_moves" not in raw
    watch.check("before cell a")
    assert lp.cpus == [4, 5, 6] and lp.placed == [[4, 5, 6]]
    assert placement.park == [4, 5, 6] and hp_parked.placed == [[4, 5, 6]] and hp_on.placed == []
    assert harness == [[0, 1, 7]]
    watch.check("before cell b")  # the same CPU again: nothing more
    assert len(lp.placed) == 1 and len(raw["gpu_irq_moves"]) == 1
    watch.check("before cell c")  # onto an HP CPU: said, the HP not moved
    assert raw["gpu_irq_moves"][-1]["hp_cpus_hit"] == [3] and hp_on.placed == [] and hp_on.cpus == [2, 3]
    assert harness == [[0, 1, 7]]  # the harness never goes onto the HP's CPUs
    assert raw["gpu_irq_moves"][0] == {"at": "before cell a", "cpus": [7], "hp_cpus_hit": [],
                                       "lp_cpus": {"corun_lp": [4, 5, 6]}}
    out = capsys.readouterr().out
    assert "now land on CPU 7 (before cell a)" in out and "3 is one of the HP's CPUs" in out


def test_wakeup_summary_counts_what_reaches_the_hps_cpus_per_setup_window(tmp_path, capsys):
    from bench.gpu import wakeup_summary
    raw = {"cpus": {"corun_hp": [2, 3], "corun_lp": [4, 5], "harness": [0, 1], "hp_idle": [8, 9]},
           "segments": [{"setup": "corun", "round": 0, "wall_start": 1000.0, "wall_end": 1002.0},
                        {"setup": "hp_alone", "round": 0, "wall_start": 1003.0, "wall_end": 1004.0},
                        {"setup": "corun", "round": -1, "wall_start": 990.0, "wall_end": 999.0}]}  # learning: out
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    offset = 900.0  # trace stamps are monotonic: wall = stamp + 900
    lines = [
        "          <idle>-0       [008] d.h2.   100.500000: ipi_send_cpu: cpu=2 callsite=ttwu_queue_wakelist+0x11c/0x140 callback=x",
        "          <idle>-0       [008] d.h2.   101.000000: ipi_send_cpumask: cpumask=0-3 callsite=smp_call_function_many_cond+0x1/0x2 callback=y",
        "          <idle>-0       [008] d.h2.   101.100000: ipi_send_cpu: cpu=9 callsite=ttwu_queue_wakelist+0x11c/0x140 callback=x",  # parked HPs' CPU
        "          <idle>-0       [008] dNh2.   101.200000: sched_wakeup: comm=cuda-EvtHandlr pid=77 prio=120 target_cpu=003",
        "          python3-55     [004] d..2.   101.300000: sched_wakeup: comm=cuda-EvtHandlr pid=77 prio=120 target_cpu=002",
        "          python3-55     [004] d..2.   103.500000: sched_wakeup: comm=python3 pid=60 prio=120 target_cpu=002",  # hp_alone
        "          python3-55     [004] d..2.   102.500000: sched_wakeup: comm=python3 pid=60 prio=120 target_cpu=002",  # between
        "garbage line",
    ]
    s = wakeup_summary.summarize(lines, raw, offset)
    assert s["corun"]["seconds"] == 2.0 and s["hp_alone"]["seconds"] == 1.0
    assert s["corun"]["wakeups"] == {"cuda-EvtHandlr": 2}
    assert s["corun"]["ipis"] == {("<idle>", "ttwu_queue_wakelist"): 1, ("<idle>", "smp_call_function_many_cond"): 1}
    assert s["hp_alone"]["wakeups"] == {"python3": 1} and not s["hp_alone"]["ipis"]
    (tmp_path / "trace.txt").write_text("\n".join(lines) + "\n")
    wakeup_summary.main([str(tmp_path / "trace.txt"), str(tmp_path), str(offset)])
    out = capsys.readouterr().out
    assert "corun: 2.0 s of windows" in out and "cuda-EvtHandlr 1" in out  # 2 wake-ups in 2 s
    raw["cpus"] = {}
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    with pytest.raises(SystemExit, match="names no HP CPUs"):
        wakeup_summary.main([str(tmp_path / "trace.txt"), str(tmp_path), str(offset)])


def test_wakeup_trace_keeps_what_targets_the_hp_cpus_and_reads_it_before_resetting_the_clock(tmp_path):
    """bench/gpu/wakeup_trace.sh on this machine's tracefs with a stand-in matrix (sleeps on the HP's
    CPU): the summary finds them, the trace holds only wake-ups of that CPU, and the events, filters
    and clock are back as they were (the first GPU run read an empty buffer: the clock was reset,
    which empties it, before the trace was read)."""
    tracing = "/sys/kernel/tracing"
    if os.geteuid() != 0 or not os.access(os.path.join(tracing, "events/sched/sched_wakeup/filter"), os.W_OK):
        pytest.skip("needs root and a writable tracefs")
    if subprocess.run(["sh", "-c", "command -v taskset"], stdout=subprocess.DEVNULL).returncode:
        pytest.skip("no taskset")
    hp = sorted(os.sched_getaffinity(0))[-1]
    env = dict(os.environ, PY=os.path.join(ROOT, "tests", "bench", "wakeup_trace_python.sh"), WT_PYTHON=sys.executable,
               WT_CPUS=str(hp), PYTHONPATH=ROOT)
    r = subprocess.run(["bash", "bench/gpu/wakeup_trace.sh", "build", str(tmp_path)], cwd=ROOT, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert r.returncode == 0, r.stdout
    woken = next(l for l in r.stdout.splitlines() if l.strip().startswith("woken:"))
    assert "sleep" in woken, r.stdout
    lines = [l for l in (tmp_path / "trace_head.txt").read_text().splitlines() if "sched_wakeup:" in l]
    assert lines and all(f"target_cpu={hp:03d}" in l or f"target_cpu={hp} " in l + " " for l in lines), lines[:5]
    assert (tmp_path / "overrun.txt").read_text().strip().isdigit()
    with open(os.path.join(tracing, "trace_clock")) as f:
        assert "[local]" in f.read()
    for event in ("sched/sched_wakeup", "ipi/ipi_send_cpu"):
        with open(os.path.join(tracing, "events", event, "enable")) as f:
            assert f.read().strip() == "0", event
        with open(os.path.join(tracing, "events", event, "filter")) as f:
            assert f.read().strip() == "none", event


def test_the_host_only_lp_streams_memory_on_the_cpu_and_runs_only_when_named():
    """hostonly: a busy host neighbour without GPU work (the remaining ~1 % a partition arm cost the
    launch-bound HP, bench/results/2026-11-25-idle-hp-parking/, is a host hypothesis). Its unit
    needs no torch; the two kind lists agree; a default matrix leaves it out."""
    from bench.gpu import matrix_kinds
    assert matrix_kinds.LP_KINDS == matrix.LP_KINDS and "hostonly" not in matrix.DEFAULT_LP_KINDS
    unit = matrix_kinds._host_only()
    cpu0 = time.thread_time()
    assert unit() == sum(i * i for i in range(20000))
    assert time.thread_time() > cpu0  # it ran on this thread's CPU
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    if os.path.exists(os.path.join(build, "bin", "expcontroller")):
        assert matrix.parse_args(["--build", build, "--out", "o"]).lp_kinds == list(matrix.DEFAULT_LP_KINDS)
        assert matrix.parse_args(["--build", build, "--out", "o", "--lp-kinds", "hostonly"]).lp_kinds == ["hostonly"]


def test_the_learning_hp_says_each_change_of_arm_and_no_other_hp_is_verbose():
    """GPUYIELD_VERBOSE=1 in a learning group's HP: its log holds guarded's changes in order (the
    parking record had to infer them from counters); the corun HP stays quiet, every LP says its cuts."""
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    if not os.path.exists(os.path.join(build, "bin", "expcontroller")):
        pytest.skip("no build")
    args = matrix.parse_args(["--build", build, "--out", "o"])
    segments = {g: f"/seg-{g}" for g in matrix.POLICY_GROUPS}
    env = lambda g, role: matrix.group_env(args, g, role, segments, None)
    assert env("guarded", "hp")["GPUYIELD_VERBOSE"] == "1" and env("guardeddepth", "hp")["GPUYIELD_VERBOSE"] == "1"
    assert "GPUYIELD_VERBOSE" not in env("corun", "hp") and "GPUYIELD_VERBOSE" not in env("arm-partition16", "hp")
    assert env("corun", "lp")["GPUYIELD_VERBOSE"] == "1" and env("guarded", "lp")["GPUYIELD_VERBOSE"] == "1"


def _report_folder(tmp_path, name, cells, hp_kinds, segments):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "matrix.json").write_text(json.dumps({"cells": cells, "hp_kinds": hp_kinds}))
    (folder / "raw.json").write_text(json.dumps({"segments": segments}))
    return str(folder)


def test_matrix_report_gives_each_cells_setups_the_guarded_end_state_and_the_targets_counted(tmp_path, capsys):
    from bench.gpu import matrix_report

    def row(p50, ci, p99, lp, share, hp_ok, lp_ok=None):
        r = {"hp_jobs": 100, "hp_p50_ratio": {"value": p50, "ci": ci}, "hp_p99_ratio": {"value": p99},
             "lp_throughput_ratio": {"value": lp}, "lp_share_of_left": share, "meets_hp_target": hp_ok}
        if lp_ok is not None:
            r["meets_lp_target"] = lp_ok
        return r
    cells = [{"hp": "small", "lp": "gemm", "load": "poisson-25", "gpu_time_left": 0.95,
              "setups": {"corun": row(0.8, [0.7, 0.9], 1.0, 0.70, 0.74, True),
                         "guarded": row(0.81, [0.7, 0.9], 1.0, 0.79, 0.83, True, True)}},
             {"hp": "small", "lp": "gemm", "load": "poisson-60", "gpu_time_left": 0.85,
              "setups": {"corun": row(0.9, [0.8, 1.0], 1.0, 0.40, 0.47, True),
                         "guarded": row(1.1, [1.0, 1.2], 1.3, 0.35, 0.41, False, False)}},
             {"hp": "gemm", "lp": "gemm", "load": "poisson-25", "gpu_time_left": 0.75,
              "setups": {"corun": row(1.0, [1.0, 1.0], 1.0, 0.70, 0.93, True),
                         "guarded": row(1.0, [1.0, 1.0], 1.0, 0.71, 0.94, True, True)}}]
    kinds = {"small": {"svc_p50_ms": 4.0, "busy_ms": 0.3}, "gemm": {"svc_p50_ms": 4.0, "busy_ms": 3.9}}

    def status(in_force, arms, rnd, setup="guarded"):
        return {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": setup, "round": rnd,
                "hp_result": {"arms": arms},
                "guarded_status": {"guarded": {"in_force": in_force, "reason": "promoted", "trying": None,
                                               "arms": {"stop": {"jobs": 900}, "partition:64": {"jobs": 4000}}}}}
    # the last round's status is the cell's end state, whatever order the segments were written in;
    # the arms' jobs are the cell's own (learning and rounds), not the segment's lifetime counts
    folder = _report_folder(tmp_path, "a", cells, kinds, [
        status("stop", ["stop"] * 3 + ["partition:64"] * 2, -1, "guarded_learn"),
        status("partition:64", ["partition:64", "stop", "partition:16"], 1),
        status("stop", ["partition:64"], 0)])
    assert matrix_report.main([folder]) == 0
    out = capsys.readouterr().out
    lines = {ln.split(" | ")[0]: ln for ln in out.splitlines() if ln.startswith("| ")}
    first = lines["| small + gemm, poisson-25"]
    assert "0.80 [0.70, 0.90] · 1.00 · LP 0.70 (0.74)" in first and "partition:64, promoted; 64: 4, 16: 1 |" in first
    # guarded_depth: the depth in force beside the arm, a depth's trial beside an arm's
    deep = status("partition:64", ["partition:64@2000us", "stop"], 2, "guarded_depth")
    deep["guarded_status"]["guarded"].update(trying="partition:120",
                                             queue_depth={"in_force_us": 2000, "trying_us": 4000})
    assert matrix_report.main([_report_folder(tmp_path, "d", cells, kinds, [deep]), "--setups", "guarded_depth"]) == 0
    assert ("partition:64 at 2000 us, promoted, partition:120 and depth 4000 us in trial; 64@2000us: 1 |"
            in capsys.readouterr().out)
    assert "✗HP ✗LP" in lines["| small + gemm, poisson-60"]
    assert "- guarded: HP target in 2 of 3 cells; LP within 0.02 of corun's or above in 2 of 3" in out
    # the default's test: the cells where guarded missed what corun met in the same rounds, named
    assert "; missed the HP target where corun met it in 1 of 3 (small + gemm, poisson-60)\n" in out
    assert "- corun: HP target in 3 of 3 cells" in out and "corun met it" not in out.split("- corun:")[1].split("\n")[0]
    # only the launch-bound HP (small) at the lower load counts for the LP target: 0.79 and 0.83 meet it
    assert "launch-bound HPs at the lower load: LP >= 0.60 of alone in 1 of 1, >= 0.8 of the time left in 1 of 1" in out
    assert ">= 0.8 of the time left in 0 of 1" in out  # corun's 0.74
    # what the p99s stand on: 100 jobs a setup, so each is the slowest but one
    assert "- each p99 stands on 100 HP jobs of a setup (nearest rank: the 2nd slowest of them)" in out
    # a p99 with its interval shows it after the value
    with_ci = [dict(cells[0], setups={"corun": dict(cells[0]["setups"]["corun"],
                                                    hp_p99_ratio={"value": 1.22, "ci": [0.9, 1.5]})})]
    assert matrix_report.main([_report_folder(tmp_path, "ci", with_ci, kinds, []), "--setups", "corun"]) == 0
    assert "0.80 [0.70, 0.90] · 1.22 [0.90, 1.50] · LP 0.70 (0.74)" in capsys.readouterr().out
    assert [matrix_report.slowest_rank(n) for n in (1, 50, 99, 100, 101, 150, 200, 1000)] == [1, 1, 1, 2, 2, 2, 3, 11]
    few = [dict(cells[0], setups={"corun": dict(cells[0]["setups"]["corun"], hp_jobs=60),
                                  "guarded": dict(cells[0]["setups"]["guarded"], hp_jobs=300)})]
    assert matrix_report.main([_report_folder(tmp_path, "few", few, kinds, [])]) == 0
    assert "stands on 60-300 HP jobs of a setup (nearest rank: the 1st to 4th slowest of them)" in capsys.readouterr().out
    one = [dict(cells[0], setups={"corun": dict(cells[0]["setups"]["corun"], hp_jobs=60)})]
    assert matrix_report.main([_report_folder(tmp_path, "one", one, kinds, []), "--setups", "corun"]) == 0
    assert "stands on 60 HP jobs of a setup (nearest rank: the slowest of them)" in capsys.readouterr().out
    # an arm promoted and still on confirmation in force says so
    on_confirmation = status("partition:64", ["partition:64"], 1)
    on_confirmation["guarded_status"]["guarded"]["on_confirmation"] = True
    folder = _report_folder(tmp_path, "b", cells, kinds, [on_confirmation])
    assert matrix_report.main([folder]) == 0
    assert "partition:64, promoted (on confirmation); 64: 1 |" in capsys.readouterr().out
    # a folder of the higher load's cells alone, reported with one of the lower load: the lower load
    # is the lowest of all folders named, so the 60 % cell does not count for the LP target
    high = _report_folder(tmp_path, "c", [cells[1]], kinds, [])
    assert matrix_report.main([folder, high]) == 0
    out = capsys.readouterr().out
    assert "launch-bound HPs at the lower load: LP >= 0.60 of alone in 1 of 1" in out
    assert matrix_report.main([high]) == 0  # alone, its load is the lower one
    assert "LP >= 0.60 of alone in 0 of 1" in capsys.readouterr().out
    # a folder without matrix.json is one error naming it
    (tmp_path / "empty").mkdir()
    assert matrix_report.main([str(tmp_path / "empty")]) == 1
    assert "empty/matrix.json" in capsys.readouterr().err


def test_matrix_report_counts_the_frcnn720_hp_launch_bound_whatever_its_busy_share():
    from bench.gpu import matrix_report
    # the H200's 0.51 busy share (2026-12-02-h200-matrix-coverage) is over the threshold, but the
    # issue names FasterRCNN 720p among the launch-bound HPs; a GPU-bound kind by its share is not
    m = {"hp_kinds": {"frcnn720": {"svc_p50_ms": 14.7, "busy_ms": 7.5},
                      "gemm": {"svc_p50_ms": 4.0, "busy_ms": 3.9}, "small": {"svc_p50_ms": 2.7, "busy_ms": 0.7}}}
    assert matrix_report.launch_bound_kinds(m) == {"frcnn720", "small"}
    m["hp_kinds"]["gemm"]["busy_ms"] = 1.0
    assert matrix_report.launch_bound_kinds(m) == {"frcnn720", "small", "gemm"}


def test_matrix_report_counts_an_unmarked_hps_arms_from_the_guard_less_the_cells_before_it(tmp_path, capsys):
    from bench.gpu import matrix_report
    row = {"hp_jobs": 100, "hp_p50_ratio": {"value": 0.8, "ci": [0.7, 0.9]}, "hp_p99_ratio": {"value": 1.0},
           "lp_throughput_ratio": {"value": 0.7}, "lp_share_of_left": 0.74, "meets_hp_target": True}
    cells = [{"hp": "small", "lp": lp, "load": "poisson-25", "gpu_time_left": 0.9,
              "setups": {"corun": row, "guarded_auto": row}} for lp in ("gemm", "graph")]
    kinds = {"small": {"svc_p50_ms": 4.0, "busy_ms": 0.3}}

    def seg(lp, setup, rnd, t, counts, in_force="stop"):
        # an unmarked HP: its worker records no arm per job; the guard's counts are the segment's life's
        return {"hp": "small", "lp": lp, "load": "poisson-25", "setup": setup, "round": rnd, "wall_start": t,
                "hp_result": {"arms": []},
                "guarded_status": {"guarded": {"in_force": in_force, "reason": "kept", "trying": None,
                                               "arms": {a: {"jobs": n} for a, n in counts.items()}}}}
    segments = [seg("graph", "guarded_auto", 0, 40, {"stop": 900, "partition:32": 700, "partition:64": 500},
                    "partition:64"),
                seg("gemm", "guarded_auto_learn", -1, 10, {"stop": 300, "partition:32": 600}),
                seg("gemm", "guarded_auto", 0, 20, {"stop": 400, "partition:32": 650}),
                seg("graph", "guarded_auto_learn", -1, 30, {"stop": 800, "partition:32": 700, "partition:64": 400})]
    folder = _report_folder(tmp_path, "auto", cells, kinds, segments)
    assert matrix_report.main([folder, "--setups", "corun,guarded_auto"]) == 0
    out = capsys.readouterr().out
    assert "guarded_auto at the end (arm, reason; HP jobs per arm)" in out.splitlines()[0]
    lines = {ln.split(" | ")[0]: ln for ln in out.splitlines() if ln.startswith("| ")}
    # written out of order; in time order the gemm cell came first and the graph cell's counts start
    # from where it ended (32: 650), not from zero
    assert lines["| small + gemm, poisson-25"].endswith("| stop, kept; the guard's counts: 32: 650 |")
    assert lines["| small + graph, poisson-25"].endswith("| partition:64, kept; the guard's counts: 64: 500, 32: 50 |")
    # a status that keeps the last trial's end says how it ended
    segments[0]["guarded_status"]["guarded"]["last_trial"] = {"arm": "partition:120", "outcome": "no-gain",
                                                              "lp_cycle_ratio": 0.97}
    folder = _report_folder(tmp_path, "auto2", cells, kinds, segments)
    assert matrix_report.main([folder, "--setups", "corun,guarded_auto"]) == 0
    assert ("| partition:64, kept; last trial partition:120 no-gain (LP x0.97); the guard's counts: 64: 500, 32: 50 |"
            in capsys.readouterr().out)


def test_guard_replay_promotes_a_costless_arm_on_a_measured_trace_and_never_a_costly_one(tmp_path, capsys):
    import random
    from bench import guard_replay
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    rng = random.Random(3)
    svc = [4.0 * rng.lognormvariate(0, 0.05) for _ in range(900)]
    seg = {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "guarded_learn", "round": -1,
           "hp_result": {"ok": True, "svc_ms": svc + [9.9] * 100, "arms": ["stop"] * 900 + ["partition:64"] * 100}}
    short = dict(seg, lp="graph", hp_result={"ok": True, "svc_ms": svc[:100], "arms": ["stop"] * 100})
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [seg, short]}))
    # only the stop jobs make the trace (the arm's 9.9 ms jobs are left out), and a short trace no cell
    assert [(name, len(t)) for name, t in guard_replay.traces([str(tmp_path)])] == [("small + gemm, poisson-25", 900)]
    assert guard_replay.main(["--build", build, str(tmp_path), "--costs", "1,1.5", "--jobs", "2000", "--runs", "4"]) == 0
    out = capsys.readouterr().out
    row = [ln for ln in out.splitlines() if ln.startswith("| small + gemm")][0]
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[1] == "900" and cells[3] == "0/4"
    # the two axes per cost: jobs on partition arms, and the HP's time over the trace (the arms' cost)
    axes = [ln for ln in out.splitlines() if ln.startswith("| jobs on arms")][0]
    costless, costly = [re.fullmatch(r"([\d.]+) %, LP \+(-?[\d.]+) %, HP \+(-?[\d.]+) %", c.strip()).groups()
                        for c in axes.split("|")[3:5]]
    assert float(costless[0]) > 10 and float(costless[1]) > 0 and costless[2] == "0.00", axes
    assert float(costly[2]) > 0, axes  # its trials' jobs cost the HP
    assert int(cells[2].split("/")[0]) >= 3, row  # a costless arm in 5 % noise: promoted in most runs
    # how the trials ended: a costless arm's were promoted (or within, under the LP's gain), none over
    # the bound; the 1.5x arm's none promoted
    how = [ln for ln in out.splitlines() if ln.startswith("| trials ended, by how")][0].split("|")[3:5]
    assert "promoted" in how[0] and "over" not in how[0] and "promoted" not in how[1] and how[1].strip() != "none", how
    # an arm costless in its trial and 1.5x once in force: promoted, then dropped again in every run
    assert guard_replay.main(["--build", build, str(tmp_path), "--costs", "1.5", "--jobs", "4000", "--runs", "4",
                              "--in-force-only"]) == 0
    row = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| small + gemm")][0]
    promoted, dropped = row.split("|")[3].strip().split(", ")
    assert int(promoted.split("/")[0]) >= 3 and dropped.startswith(promoted.split("/")[0] + " ("), row
    # a cost on the trace's slowest tenth only (--tail-above): a row says how many of those jobs ran
    # on an arm and the HP's p99 over the trace's; costless, x1 exactly; 1.5x, higher, and never promoted
    assert guard_replay.main(["--build", build, str(tmp_path), "--costs", "1,1.5", "--jobs", "2000", "--runs", "4",
                              "--tail-above", "0.9"]) == 0
    out = capsys.readouterr().out
    row = [ln for ln in out.splitlines() if ln.startswith("| small + gemm")][0]
    assert [c.strip() for c in row.split("|")[1:-1]][3] == "0/4", row
    slow = [ln for ln in out.splitlines() if ln.startswith("| slow jobs (past the trace's q0.9) on arms")][0]
    costless, costly = [re.fullmatch(r"([\d.]+) %, x([\d.]+); x([\d.]+)", c.strip()).groups()
                        for c in slow.split("|")[3:5]]
    assert float(costless[0]) > 10 and costless[1] == costless[2] == "1.0000", slow
    assert 0 < float(costly[0]) < float(costless[0]) and 1 < float(costly[1]) <= float(costly[2]) <= 1.5, slow
    with pytest.raises(SystemExit):
        guard_replay.main(["--build", build, str(tmp_path), "--tail-above", "1.5"])
    assert "--tail-above 1.5: a quantile between 0 and 1" in capsys.readouterr().err
    # with the queue depth learnt too: a costless depth reaches force in some runs, a 1.5x one in none,
    # and a learning of guarded_depth is a cell of its own, named so
    seg_depth = dict(seg, setup="guarded_depth_learn")
    (tmp_path / "depth").mkdir()
    (tmp_path / "depth" / "raw.json").write_text(json.dumps({"segments": [seg, seg_depth]}))
    assert [name for name, _ in guard_replay.traces([str(tmp_path / "depth")])] == [
        "small + gemm, poisson-25", "small + gemm, poisson-25 (guarded_depth)"]
    for depth_cost, reached in ((1, True), (1.5, False)):
        assert guard_replay.main(["--build", build, str(tmp_path), "--costs", "1.5", "--jobs", "6000", "--runs", "4",
                                  "--depth-cost", str(depth_cost)]) == 0
        out = capsys.readouterr().out
        row = [ln for ln in out.splitlines() if ln.startswith("| small + gemm")][0]
        kept = int(re.search(r"; depth (\d+)/4", row).group(1))
        assert (kept > 0) == reached, row
        last = [ln for ln in out.splitlines() if ln.startswith("| depth in force at the end")][0]
        assert ("none" in last) != reached, last
    # a costless depth that gives the LP nothing in its gaps (--depth-gain 0, a CUDA-graph LP): in
    # force in no run (the rule promotes a depth by its gaps' gain since 2026-12-03)
    assert guard_replay.main(["--build", build, str(tmp_path), "--costs", "1.5", "--jobs", "6000", "--runs", "4",
                              "--depth-cost", "1", "--depth-gain", "0"]) == 0
    row = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| small + gemm, poisson-25 |")][0]
    assert re.search(r"; depth 0/4", row), row
    # the gaps' launches spread (--gap-spread, as on the H200): a depth giving the LP 4 % a step is
    # still promoted; the total row counts the runs that promoted one at all
    assert guard_replay.main(["--build", build, str(tmp_path), "--costs", "1.5", "--jobs", "6000", "--runs", "4",
                              "--depth-cost", "1", "--gap-spread", "0.4"]) == 0
    out = capsys.readouterr().out
    row = [ln for ln in out.splitlines() if ln.startswith("| small + gemm, poisson-25 |")][0]
    total = [ln for ln in out.splitlines() if ln.startswith("| all |")][0]
    kept, promoted = int(re.search(r"; depth (\d+)/4", row).group(1)), int(re.search(r"promoted in (\d+)", total).group(1))
    assert kept > 0 and promoted >= kept, (row, total)
    for bad_spread in (["--gap-spread", "0.4"], ["--depth-cost", "1", "--gap-spread", "2"]):
        with pytest.raises(SystemExit):
            guard_replay.main(["--build", build, str(tmp_path)] + bad_spread)
        assert "--gap-spread" in capsys.readouterr().err
    # a depth costing 1.5x only once in force (its trial costless): promoted (its median first
    # promotion a job number), then dropped again on its confirmation in all runs but one at most
    assert guard_replay.main(["--build", build, str(tmp_path), "--costs", "1.5", "--jobs", "6000", "--runs", "4",
                              "--depth-cost", "1.5", "--depth-in-force-only"]) == 0
    row = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| small + gemm, poisson-25 |")][0]
    kept, first = re.search(r"; depth (\d+)/4 \((-?\d+)\)", row).groups()
    assert int(kept) <= 1 and int(first) > 0, row  # without the confirmation 2 of 4 kept it
    with pytest.raises(SystemExit):
        guard_replay.main(["--build", build, str(tmp_path), "--depth-cost", "5"])
    assert "--depth-cost 5.0: a factor from 1 to 4" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        guard_replay.main(["--build", build, str(tmp_path), "--depth-in-force-only"])
    assert "--depth-in-force-only qualifies --depth-cost F" in capsys.readouterr().err
    for bad_gain in (["--depth-gain", "0.1"], ["--depth-cost", "1", "--depth-gain", "2"]):
        with pytest.raises(SystemExit):
            guard_replay.main(["--build", build, str(tmp_path)] + bad_gain)
        assert "--depth-gain" in capsys.readouterr().err
    trace = tmp_path / "trace.txt"
    trace.write_text("\n".join(["4000"] * 64))
    for extra in (["depth=9"], ["depth=1", "depth=1"], ["deep"], ["depth-in-force"], ["depth-gain=0"],
                  ["depth=1", "depth-gain=-1"], ["depth=1", "depth-gain=0", "depth-gain=0"], ["gap-spread=0.4"],
                  ["depth=1", "gap-spread=2"], ["depth=1", "gap-spread=0.1", "gap-spread=0.1"], ["tail=0"], ["tail=1"],
                  ["tail=x"], ["tail=0.9", "tail=0.9"]):
        bad = subprocess.run([os.path.join(build, "bench", "guard-replay"), str(trace), "1", "100", "2"] + extra,
                             capture_output=True, text=True)
        assert bad.returncode == 2 and "usage: guard-replay" in bad.stderr and bad.stderr.count("\n") == 2, (extra, bad.stderr)
    # a folder with no learning long enough is one error, not an empty table
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "raw.json").write_text(json.dumps({"segments": [short]}))
    assert guard_replay.main(["--build", build, str(tmp_path / "none")]) == 1
    assert "no guarded learning" in capsys.readouterr().err
    # a raw record that is not a matrix invocation's (no segments) is named, not a traceback
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "raw.json").write_text(json.dumps({"runs": []}))
    with pytest.raises(SystemExit, match="other: its raw record has no list of segments"):
        guard_replay.main(["--build", build, str(tmp_path / "other")])
    with pytest.raises(SystemExit):
        guard_replay.main(["--build", str(tmp_path), str(tmp_path)])  # no guard-replay there
    assert "no " in capsys.readouterr().err


def test_guard_replay_refuses_a_bad_trace_or_argument_with_one_line(tmp_path):
    binary = os.path.join(os.environ.get("BUILD", os.path.join(ROOT, "build")), "bench", "guard-replay")
    bad = tmp_path / "bad.txt"
    bad.write_text("4000\n" * 40 + "4.5 ms\n")
    good = tmp_path / "good.txt"
    good.write_text("4000\n" * 40)
    for args, message in (([str(bad), "1", "10", "1"], "not a job time"),
                          ([str(tmp_path / "missing.txt"), "1", "10", "1"], "cannot open"),
                          ([str(good), "0.9", "10", "1"], "COST must be"),
                          ([str(good), "1", "0", "1"], "JOBS and RUNS"),
                          ([str(good), "1"], "four arguments"),
                          ([str(good), "1", "10", "1", "in-forc"], "four arguments"),
                          ([str(good), "16=1/17=1.5", "10", "1"], "SMS=F pairs"),  # no arm of 17 SMs
                          ([str(good), "16=1/64=0.5", "10", "1"], "SMS=F pairs"),
                          ([str(good), "16=1,64=1.5", "10", "1"], "SMS=F pairs")):
        out = subprocess.run([binary] + args, capture_output=True, text=True)
        assert out.returncode == 2 and message in out.stderr and not out.stdout, (args, out.stderr)
    out = subprocess.run([binary, str(good), "1", "100", "2"], capture_output=True, text=True)
    assert out.returncode == 0 and "of 2 runs" in out.stdout


def test_guard_replay_takes_a_depths_recorded_jobs_with_depth_recorded(tmp_path, capsys):
    """A learning whose jobs at 2000 us ran 1.5x stop's: with --depth-recorded those times are
    replayed (the depth never in force though F says it costs nothing), without it the depth costs F
    (in force in some runs); a depth with too few recorded jobs costs F; bad arguments are refused."""
    import random
    from bench import guard_replay
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    rng = random.Random(7)
    stop = [4.0 * rng.lognormvariate(0, 0.03) for _ in range(1000)]
    deep = [6.0 * rng.lognormvariate(0, 0.03) for _ in range(300)]
    seg = {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "guarded_depth_learn", "round": -1,
           "hp_result": {"ok": True, "svc_ms": stop + deep + [9.0] * 10,
                         "arms": ["stop"] * 1000 + ["stop@2000us"] * 300 + ["stop@1000us"] * 10}}
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [seg]}))
    (name, trace, recorded), = guard_replay.traces([str(tmp_path)], depths=True)
    assert len(trace) == 1000 and sorted(recorded) == [2000] and len(recorded[2000]) == 300  # 1000 us: 10 < 64
    kept = {}
    for extra in ([], ["--depth-recorded"]):
        assert guard_replay.main(["--build", build, str(tmp_path), "--costs", "1.5", "--jobs", "6000", "--runs", "4",
                                  "--depth-cost", "1"] + extra) == 0
        out = capsys.readouterr().out
        row = [ln for ln in out.splitlines() if ln.startswith("| small + gemm")][0]
        assert ("(2000 us: 300)" in row) == bool(extra), row
        ends = [ln for ln in out.splitlines() if ln.startswith("| depth in force at the end")][0]
        kept[bool(extra)] = ends
    # costless by F the ladder's deepest reaches force; replayed as recorded 2000 us never does (and
    # 4000, costless by F, waits behind it), 1000 does
    assert re.search(r"\b(2000|4000): 4\b", kept[False]) and "2000:" not in kept[True] and "1000:" in kept[True], kept
    with pytest.raises(SystemExit):
        guard_replay.main(["--build", build, str(tmp_path), "--depth-recorded"])
    assert "--depth-recorded qualifies --depth-cost F" in capsys.readouterr().err
    times = tmp_path / "t.txt"
    times.write_text("4000\n" * 64)
    binary = os.path.join(build, "bench", "guard-replay")
    for extra, message in ((["depth=1", "depth-trace=3000:" + str(times)], "depth-trace=US:FILE"),
                           (["depth=1", "depth-trace=2000:" + str(times), "depth-trace=2000:" + str(times)],
                            "depth-trace=US:FILE"),
                           (["depth-trace=2000:" + str(times)], "qualify `depth=F`"),
                           (["depth=1", "depth-trace=2000:" + str(tmp_path / "none.txt")], "none.txt")):
        bad = subprocess.run([binary, str(times), "1", "100", "2"] + extra, capture_output=True, text=True)
        assert bad.returncode == 2 and message in bad.stderr and not bad.stdout, (extra, bad.stderr)


def test_guard_replay_gives_each_size_its_own_cost(tmp_path, capsys):
    """16 SMs free, every larger size 1.5x: the rule must end on 16 SMs (a size costing 1.5x never);
    with every size 1.5x, on none."""
    import random
    from bench import guard_replay
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    rng = random.Random(5)
    svc = [4.0 * rng.lognormvariate(0, 0.03) for _ in range(900)]
    seg = {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "guarded_learn", "round": -1,
           "hp_result": {"ok": True, "svc_ms": svc, "arms": ["stop"] * 900}}
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [seg]}))
    profile = "16=1/32=1.5/64=1.5/96=1.5/120=1.5"
    assert guard_replay.main(["--build", build, str(tmp_path), "--costs", f"{profile},1.5", "--jobs", "8000",
                              "--runs", "4"]) == 0
    out = capsys.readouterr().out
    ends = [ln for ln in out.splitlines() if ln.startswith("| in force at the end")][0].split("|")[3:5]
    assert re.fullmatch(r"16: [34]", ends[0].strip()) and ends[1].strip() == "none", out
    with pytest.raises(SystemExit):
        guard_replay.main(["--build", build, str(tmp_path), "--costs", "16=1/64=x"])
    assert "profile of SMS=F pairs" in capsys.readouterr().err


def test_learned_vs_rounds_compares_a_promoted_arm_in_learning_and_in_each_round(tmp_path, capsys):
    from bench.gpu import learned_vs_rounds

    def seg(setup, rnd, svc, arms, in_force=None, lp="gemm"):
        s = {"hp": "small", "lp": lp, "load": "poisson-25", "setup": setup, "round": rnd,
             "hp_result": {"ok": True, "svc_ms": svc, "arms": arms}}
        if in_force:
            s["guarded_status"] = {"guarded": {"in_force": in_force}}
        return s
    learn = seg("guarded_learn", -1, [4.0] * 100 + [4.0] * 100, ["stop"] * 100 + ["partition:64"] * 100,
                "partition:64")
    r0 = seg("guarded", 0, [4.0] * 10 + [4.2] * 20, ["stop"] * 10 + ["partition:64"] * 20)
    r1 = seg("guarded", 1, [4.0] * 10 + [4.0] * 20, ["stop"] * 10 + ["partition:64"] * 20)
    kept_stop = seg("guarded_learn", -1, [4.0] * 200, ["stop"] * 200, "stop", lp="graph")
    corun = dict(seg("corun", 0, [9.0] * 30, ["stop"] * 30), setup="corun")
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [learn, r0, r1, kept_stop, corun]}))
    rows = learned_vs_rounds.cells(json.loads((tmp_path / "raw.json").read_text()), 800)
    assert rows == [("small", "gemm", "poisson-25", "partition:64", 1.0, [1.05, 1.0])]
    assert learned_vs_rounds.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| partition:64 | 1.000 | 1.050 1.000 | 1.025 |" in out and "above the learning's in 1 of 1" in out
    with pytest.raises(SystemExit):
        learned_vs_rounds.main([str(tmp_path), "--tail", "10"])


def test_round_ratios_gives_each_round_its_own_denominators_and_counts_jobs_off_stop(tmp_path, capsys):
    from bench.gpu import round_ratios

    def seg(setup, rnd, lat=None, arms=None, lp=None):
        s = {"hp": "gemm", "lp": "resnet50train", "load": "poisson-60", "setup": setup, "round": rnd}
        if lat is not None:
            s["hp_result"] = {"ok": True, "lat_ms": lat, "svc_ms": [v / 2 for v in lat], "arms": arms}
        if lp is not None:
            s["lp_result"] = {"counted": lp, "counted_secs": 2.0}
        return s
    raw = {"segments": [
        seg("guarded_learn", -1, [50.0] * 4, ["partition:64"] * 4),  # learning: not a round
        seg("hp_alone", 0, [4.0, 4.0, 6.0]), seg("lp_alone", 0, lp=100),
        seg("corun", 0, [4.0, 5.0, 6.0], lp=40),
        seg("guarded", 0, [4.4, 4.4, 6.0], ["stop", "partition:64", "partition:64"], lp=50),
        seg("hp_alone", 1, [8.0, 8.0]), seg("lp_alone", 1, lp=200),
        seg("guarded", 1, [8.0, 16.0], ["stop", "stop"], lp=20)]}
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    cell = round_ratios.rounds(raw)[("gemm", "resnet50train", "poisson-60")]
    assert sorted(cell) == [0, 1]
    g0, c0, g1 = cell[0]["setups"]["guarded"], cell[0]["setups"]["corun"], cell[1]["setups"]["guarded"]
    assert g0["lat_ratio"] == pytest.approx(1.1) and g0["off_stop"] == 2 and g0["lp_ratio"] == pytest.approx(0.5)
    assert c0["lat_ratio"] == pytest.approx(1.25) and c0["off_stop"] == 0 and c0["lp_ratio"] == pytest.approx(0.4)
    assert g1["lat_ratio"] == pytest.approx(1.0) and g1["lp_ratio"] == pytest.approx(0.1)  # round 1's own alone
    assert cell[1]["alone_svc_p50_ms"] == 4.0
    assert round_ratios.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "2 of 3 off stop" in out[1] and "off stop" not in out[2] and "guarded 1.000 svc" in out[2]
    with pytest.raises(SystemExit, match="round_ratios: no raw.json"):
        round_ratios.main([str(tmp_path / "missing")])


def test_round_ratios_gives_the_lps_unit_after_the_window_and_the_gpu_interrupt_cpus_load():
    from bench.gpu import round_ratios
    seg = {"seconds": 1.0, "lp_result": {"done_ms": [900, 960, 1000, 1040, 1085, 1125]},
           "host": {"cpu3": {"busy": 0.05, "intr_top": {"nvidia": 10.0}},
                    "cpu14": {"busy": 0.37, "intr_top": {"nvidia": 3000.0, "LOC": 100.0}},
                    "cpu5": {"busy": 0.9, "intr_top": {"LOC": 200.0}}}}
    assert round_ratios.lp_tail_ms(seg) == 40  # units begun after 1 000 ms: 45 and 40 -> the lower median
    assert round_ratios.irq_cpu_busy(seg) == 0.37  # the CPU with the most nvidia interrupts, not the busiest
    assert round_ratios.lp_tail_ms({"seconds": 2.0, "lp_result": {"done_ms": [900, 1000]}}) is None
    assert round_ratios.irq_cpu_busy({"host": {"cpu0": {"busy": 0.5, "intr_top": {"LOC": 1.0}}}}) is None


def test_the_learning_line_says_where_the_trial_stands():
    """After a cell's learning, the arm still tried and how far it is from passing (status --json's
    guarded "trial"): so that a learning too short for that HP shows in the run's log."""
    assert matrix.trial_outlook({"trial": None}) == "" and matrix.trial_outlook({}) == ""
    t = {"arm": "partition:64", "jobs": 412, "z_now": 1.314, "passes_at_z": 2.5, "more_jobs_estimate": 716,
         "beyond_cap": False}
    assert matrix.trial_outlook({"trial": t}) == ", trying partition:64 (412 of its jobs, z 1.31 now: about 716 more of its jobs)"
    t.update(z_now=0.2, more_jobs_estimate=63000, beyond_cap=True)
    assert matrix.trial_outlook({"trial": t}).endswith("z 0.20 now: about 63000 more of its jobs, past its trial's cap)")
    t.update(z_now=-0.5, more_jobs_estimate=None, beyond_cap=False)
    assert matrix.trial_outlook({"trial": t}) == ", trying partition:64 (412 of its jobs, z -0.50 now)"
    t.update(slow_jobs_z=-1.234)  # the slow jobs' test, once judged
    assert matrix.trial_outlook({"trial": t}) == ", trying partition:64 (412 of its jobs, z -0.50 now, slowest tenth z -1.23)"
    t.update(z_now=None, slow_jobs_z=None)
    assert matrix.trial_outlook({"trial": t}) == ", trying partition:64 (412 of its jobs, not judged yet)"
    # a queue depth's trial (its own "trial" in "queue_depth"), with or without an arm's
    d = {"arm": "partition:16", "jobs": 2388, "z_now": 0.82, "passes_at_z": 2.5, "more_jobs_estimate": 22000,
         "beyond_cap": True}
    depth = {"queue_depth": {"trying_us": 2000, "trial": d}}
    assert matrix.trial_outlook(depth) == (", trying depth 2000 us (2388 of its jobs, z 0.82 now: about 22000 more of "
                                           "its jobs, past its trial's cap)")
    assert matrix.trial_outlook(dict(depth, trial=t)).startswith(", trying partition:64 (412 of its jobs, not judged yet)"
                                                                 ", trying depth 2000 us (")
    assert matrix.trial_outlook({"queue_depth": {"trying_us": None, "trial": None}}) == ""
    # with its gaps' gain shown against their spread (status since a39ef9f)
    depth["queue_depth"]["gain_z"] = 1.234
    assert matrix.trial_outlook(depth).endswith("past its trial's cap, gain z 1.23)")


def test_hp_noise_separates_drift_from_job_to_job_noise_and_names_the_host_side():
    """bench.gpu.hp_noise on synthetic learnings: a slow drift shows as lag-1 correlation and as
    variance that blocks of 16 remove; a job time that is its launch CPU time shows r_cpu 1; the
    rank test's job count follows 21 sd^2 in16 / ln(1 + eps)^2; only stop jobs of a learning count."""
    import math
    import random
    from bench.gpu import hp_noise
    rnd = random.Random(5)
    n = 2048
    # iid noise: no drift, so blocks keep about all the variance
    iid = [4.0 * math.exp(rnd.gauss(0, 0.1)) for _ in range(n)]
    # a level that steps every 64 jobs, plus small noise: consecutive jobs correlate, blocks remove most
    levels = [math.exp(rnd.gauss(0, 0.2)) for _ in range(n // 64)]
    drift = [4.0 * levels[i // 64] * math.exp(rnd.gauss(0, 0.03)) for i in range(n)]
    start = [10.0 * i for i in range(n)]

    def seg(svc, arms, setup="guarded_learn", cpu=None):
        return {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": setup, "round": -1,
                "hp_result": {"ok": True, "svc_ms": svc, "arms": arms, "start_ms": start,
                              "launch_cpu_ms": cpu or [v * 0.9 for v in svc]}}
    a = hp_noise.cell_noise(seg(iid, ["stop"] * n)["hp_result"], True, 0.02)
    d = hp_noise.cell_noise(seg(drift, ["stop"] * n)["hp_result"], True, 0.02)
    assert a["jobs_seen"] == n and abs(a["sd"] - 0.1) < 0.01 and abs(a["lag1"]) < 0.1 and a["in16"] > 0.85
    assert d["lag1"] > 0.8 and d["in16"] < 0.2  # blocks take the drift out
    assert a["r_cpu"] == pytest.approx(1.0) and a["r2_gap"] < 0.02  # the gap is regular here: explains nothing
    assert a["jobs_needed"] == pytest.approx(21 * a["sd"] ** 2 * a["in16"] / math.log(1.02) ** 2)
    assert d["jobs_needed"] < a["jobs_needed"] / 2
    # a CPU time that does not follow the job time: no correlation
    unrelated = hp_noise.cell_noise(seg(iid, ["stop"] * n, cpu=[rnd.uniform(1, 2) for _ in range(n)])["hp_result"],
                                    True, 0.02)
    assert abs(unrelated["r_cpu"]) < 0.1
    # only the stop jobs of a learning: the arm's (slower) jobs are not the HP's own noise
    arms = ["stop", "partition:64"] * (n // 2)
    mixed = [v * (1.5 if arm != "stop" else 1.0) for v, arm in zip(iid, arms)]
    m = hp_noise.cell_noise(seg(mixed, arms)["hp_result"], True, 0.02)
    assert m["jobs_seen"] == n // 2 and m["sd"] < 0.12
    # a job's time that depends on the idle gap before it: r2_gap sees it
    st, svc, end = [], [], 0.0
    for _ in range(n):
        gap = rnd.choice([0.5, 20.0])  # idle before the job: a long one makes it slower
        st.append(end + gap)
        svc.append(4.0 * (1.3 if gap > 10 else 1.0) * math.exp(rnd.gauss(0, 0.02)))
        end = st[-1] + svc[-1]
    r = hp_noise.cell_noise({"svc_ms": svc, "arms": ["stop"] * n, "start_ms": st}, True, 0.02)
    assert r["r2_gap"] > 0.9 and r["r_cpu"] is None and r["sys"] is None  # no rusage recorded
    # the thread's rusage: a spread that lives in the kernel's share shows in r_sys, not r_user
    usage = [[2.0, 1.0 * v / 4.0, 3, 1, 2 if i % 2 else 0] for i, v in enumerate(iid)]
    k = hp_noise.cell_noise({"svc_ms": iid, "arms": ["stop"] * n, "rusage": usage}, True, 0.02)
    assert k["r_sys"] == pytest.approx(1.0) and k["r_user"] is None  # a constant user time: no correlation
    assert k["sys"] == pytest.approx(1 / 3, abs=0.02) and k["ivcsw"] == pytest.approx(1.0) and k["faults"] == 3


def test_hp_noise_prints_a_row_per_segment_and_refuses_what_it_cannot_read(tmp_path, capsys):
    from bench.gpu import hp_noise
    svc = [4.0 + 0.01 * (i % 7) for i in range(300)]
    raw = {"segments": [
        {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "guarded_learn", "round": -1,
         "hp_result": {"ok": True, "svc_ms": svc, "arms": ["stop"] * 300}},
        {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "hp_alone", "round": 0,
         "hp_result": {"ok": True, "svc_ms": svc[:100]}},
        {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": "guarded_learn", "round": -1,
         "hp_result": {"ok": False}}]}
    (tmp_path / "raw.json").write_text(json.dumps(raw))
    assert hp_noise.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("| small + gemm, poisson-25 | -1 | 300 |") == 1 and "small: 1 segments" in out
    assert hp_noise.main([str(tmp_path), "--setup", "hp_alone"]) == 1  # 100 jobs, under --min-jobs
    assert "no hp_alone segment with 256" in capsys.readouterr().out
    assert hp_noise.main([str(tmp_path), "--setup", "hp_alone", "--min-jobs", "64"]) == 0
    assert "| 0 | 100 |" in capsys.readouterr().out
    for bad in (["--eps", "0"], ["--min-jobs", "8"]):
        with pytest.raises(SystemExit):
            hp_noise.main([str(tmp_path)] + bad)
    with pytest.raises(SystemExit, match="hp_noise: no raw.json"):
        hp_noise.main([str(tmp_path / "missing")])


def _fake_torch(sizes):
    """A stand-in torch for matrix_kinds' GEMM kinds: each matmul appends its size to `sizes`."""
    class Matrix:
        def __init__(self, n):
            self.n = n

        def __matmul__(self, other):
            sizes.append(self.n)
            return self

        def __truediv__(self, other):
            return self

    class FakeTorch:
        @staticmethod
        def randn(n, m, device=None):
            return Matrix(n)

        @staticmethod
        def tanh(x):
            return x
    return FakeTorch


def test_the_mixed_hp_is_a_small_job_or_now_and_then_a_long_one_and_runs_only_when_named():
    """mixed: two kinds of request (bench/gpu/matrix_kinds.py), the long one about one job in ten,
    drawn from the unit's own seeded stream, which reseed restarts whatever ran before; its
    variants are the two jobs with their shares. A stand-in torch records the size of each matmul
    of a job; the kind lists agree; a default matrix leaves it out."""
    from bench.gpu import matrix_kinds
    sizes = []
    small_job, long_job = (256,) * 100, (2048,) * 200

    def jobs_of(unit, count):
        seen = []
        for _ in range(count):
            del sizes[:]
            unit()
            seen.append(tuple(sizes))
        return seen

    unit = matrix_kinds._mixed(_fake_torch(sizes), None)
    seen = jobs_of(unit, 2000)
    assert set(seen) == {small_job, long_job}, "a job is the small one or the long GEMM chain, whole"
    long_jobs = seen.count(long_job)
    assert 150 <= long_jobs <= 250, f"{long_jobs} long jobs of 2000, not about one in ten"
    other = matrix_kinds._mixed(_fake_torch(sizes), None)
    jobs_of(other, 7)  # another history
    unit.reseed("hp:5")
    other.reseed("hp:5")
    assert jobs_of(unit, 50) == jobs_of(other, 50), "the same kinds in the same order after the same reseed"
    (s_share, s_fn), (l_share, l_fn) = unit.variants
    assert (s_share, l_share) == pytest.approx((1 - matrix_kinds.MIXED_LONG_SHARE, matrix_kinds.MIXED_LONG_SHARE))
    assert jobs_of(s_fn, 1) == [small_job] and jobs_of(l_fn, 1) == [long_job]
    assert matrix_kinds.HP_KINDS == matrix.HP_KINDS and "mixed" not in matrix.DEFAULT_HP_KINDS
    build = os.environ.get("BUILD", os.path.join(ROOT, "build"))
    if os.path.exists(os.path.join(build, "bin", "expcontroller")):
        assert matrix.parse_args(["--build", build, "--out", "o"]).hp_kinds == list(matrix.DEFAULT_HP_KINDS)
        assert matrix.parse_args(["--build", build, "--out", "o", "--hp-kinds", "mixed"]).hp_kinds == ["mixed"]


class _VariantBackend:
    """A stand-in backend whose HP unit is two kinds of job ("s" 9 in 10, "L"), drawn per job from
    the unit's own random.Random, as matrix_kinds._mixed; `ran` records each job's kind. The
    profiler reports per kind: "s" 0.7 ms busy and 2 ms wall, "L" 70 and 71 ms."""
    PROFILE = {"s": (0.7, 2.0), "L": (70.0, 71.0)}

    def __init__(self, variants=True):
        self.ran, self.profiled, self.with_variants = [], [], variants

    def build(self, kind, role):
        import random
        rng = random.Random(0)
        small, long = (lambda: self.ran.append("s")), (lambda: self.ran.append("L"))

        def unit():
            unit.last = 1 if rng.random() < 0.1 else 0
            return long() if unit.last else small()
        if self.with_variants:
            unit.reseed = rng.seed
            unit.variants = ((0.9, small), (0.1, long))
        return unit

    def sync(self):
        pass

    def release(self):
        pass

    def busy_ms_per_job(self, job, jobs):
        first = len(self.ran)
        for _ in range(jobs):
            job()
        kinds = set(self.ran[first:])
        self.profiled.append((tuple(sorted(kinds)), jobs))
        if len(kinds) != 1:  # a mix profiled whole: the mean of what it drew
            return sum(self.PROFILE[k][0] for k in self.ran[first:]) / jobs, 2.0
        return self.PROFILE[kinds.pop()]


def _hp_kinds_run(worker, seed, seconds=1.0, rate=200.0):
    """The kinds of job one `hp` command ran, its arrivals all in the past (no waiting)."""
    first = len(worker.backend.ran)
    r = worker.hp({"t0": time.monotonic() - 10, "seconds": seconds, "rate": rate, "seed": seed})
    kinds = worker.backend.ran[first:]
    assert len(kinds) == len(r["lat_ms"]) == len(arrivals(0.0, seconds, rate, seed))
    # the reply says which kind each job ran (the harness checks a round's setups ran the same)
    assert r.get("variant") == (["sL".index(k) for k in kinds] if worker.backend.with_variants else None)
    return kinds


def test_every_process_runs_the_same_kind_of_job_at_the_same_arrival_whatever_it_ran_before():
    """Pairing (2026-12-07 H100: the mixed HP's plain alone ran 18-24 long jobs a round, corun's
    11-13, over the same arrivals): two workers, one with a longer history (calibration, profile,
    a learning segment), given the same hp command run the same kinds in the same order."""
    from bench.gpu import matrix_worker
    a = matrix_worker.Worker("hp", _VariantBackend())
    b = matrix_worker.Worker("hp", _VariantBackend())
    for w in (a, b):
        w.load({"kind": "mixed"})
    a.calib({"jobs": 30})
    a.busy({"jobs": 10})
    _hp_kinds_run(a, 7)  # a learning segment at another seed
    b.backend.build("mixed", "hp")()  # and b one stray job more of its own
    ka, kb = _hp_kinds_run(a, 3), _hp_kinds_run(b, 3)
    assert ka == kb and "L" in ka and "s" in ka
    assert _hp_kinds_run(b, 3) == ka, "the same again: the command's seed alone decides"
    assert _hp_kinds_run(b, 4) != ka, "another round's seed draws other kinds"
    import random
    rng = random.Random(3)
    assert ka != ["L" if rng.random() < 0.1 else "s" for _ in ka], "the kinds' stream is not the arrivals'"


def test_calibration_runs_each_kind_of_job_its_exact_share_in_a_reproducible_order():
    from bench.gpu import matrix_worker
    a = matrix_worker.Worker("hp", _VariantBackend())
    b = matrix_worker.Worker("hp", _VariantBackend())
    for w in (a, b):
        w.load({"kind": "mixed", "warmup": 2})
    assert a.backend.ran == ["s", "s", "L", "L"], "each kind warmed"
    _hp_kinds_run(a, 9)
    ra, rb = a.calib({"jobs": 200}), b.calib({"jobs": 200})
    assert ra["variant"] == rb["variant"] and ra["variant"].count(1) == 20 and len(ra["svc_ms"]) == 200
    assert a.backend.ran[-200:] == ["sL"[i] for i in ra["variant"]]
    assert matrix_worker.apportion([0.9, 0.1], 200) == [180, 20]
    assert matrix_worker.apportion([0.9, 0.1], 7) == [6, 1] and matrix_worker.apportion([1, 1, 1], 4) == [2, 1, 1]
    assert b.calib({"jobs": 30, "seed": 5})["variant"] != rb["variant"][:30]


def test_the_profile_of_an_hp_of_several_kinds_of_job_weighs_each_kind_by_its_share():
    """busy: each kind profiled over --busy-jobs jobs of its own (10 jobs of the mix drew no long
    one on 2026-12-07: 0.7 ms busy a job, the time left 0.97-0.98 where it is about 0.75)."""
    from bench.gpu import matrix_worker
    w = matrix_worker.Worker("hp", _VariantBackend())
    w.load({"kind": "mixed"})
    r = w.busy({"jobs": 10})
    assert r["busy_ms"] == pytest.approx(0.9 * 0.7 + 0.1 * 70.0)
    assert r["wall_ms"] == pytest.approx(0.9 * 2.0 + 0.1 * 71.0)
    assert w.backend.profiled == [(("s",), 10), (("L",), 10)]
    assert [(v["share"], v["busy_ms"], v["wall_ms"]) for v in r["variants"]] == [(0.9, 0.7, 2.0), (0.1, 70.0, 71.0)]


def test_a_unit_of_one_kind_of_job_is_loaded_calibrated_profiled_and_run_as_before():
    from bench.gpu import matrix_worker
    backend = _VariantBackend(variants=False)
    w = matrix_worker.Worker("hp", backend)
    w.load({"kind": "gemm", "warmup": 3})
    assert len(backend.ran) == 3
    r = w.calib({"jobs": 12})
    assert set(r) == {"ok", "svc_ms"} and len(r["svc_ms"]) == 12 and len(backend.ran) == 15
    r = w.busy({"jobs": 10})
    assert set(r) == {"ok", "busy_ms", "wall_ms"} and backend.profiled == [(backend.profiled[0][0], 10)]
    # no reseed: the unit's one stream goes on from job to job, as it did
    import random
    rng = random.Random(0)
    expected = ["L" if rng.random() < 0.1 else "s" for _ in range(len(backend.ran))]
    kinds = _hp_kinds_run(w, 3)
    expected += ["L" if rng.random() < 0.1 else "s" for _ in kinds]
    assert backend.ran == expected


def test_ratio_two_stage_says_the_share_of_resamples_over_a_bound():
    inv = [[{"x": 1.0}], [{"x": 3.0}]]  # one invocation, two rounds: a resample's mean is 1, 2 or 3
    mean = lambda bs: sum(b["x"] for b in bs) / len(bs)
    r = stats.ratio_two_stage([inv[0] + inv[1]], mean, lambda bs: 1.0, over=2.5)
    assert 0.2 < r["resamples_over"] < 0.3  # both rounds the 3.0 one: 1/4
    assert "resamples_over" not in stats.ratio_two_stage([inv[0] + inv[1]], mean, lambda bs: 1.0)
    assert stats.ratio_two_stage([inv[0] + inv[1]], mean, lambda bs: 1.0, over=5)["resamples_over"] == 0
