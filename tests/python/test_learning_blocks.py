"""bench/gpu/learning_blocks.py: a guarded learning's arms against the stop jobs of the same stretch."""
import json
import math

import pytest

from bench.gpu import learning_blocks


def learning(svc, arms, cpus=None, setup="guarded_learn"):
    r = {"ok": True, "svc_ms": svc, "arms": arms}
    if cpus is not None:
        r["cpus"] = cpus
    return {"hp": "small", "lp": "gemm", "load": "poisson-25", "setup": setup, "round": -1, "hp_result": r}


def test_a_shift_of_the_hp_moves_every_median_and_keeps_the_ratio_an_arms_cost_moves_the_ratio():
    # block 0: stop 4.0, 64 SMs 4.0; block 1: the HP faster (stop 3.0), 64 SMs 3.3 (a cost there only)
    svc = [4.0, 4.0, 4.0, 4.0] + [3.0, 3.3, 3.0, 3.3]
    arms = ["stop", "partition:64"] * 4
    (b0, r0), (b1, r1) = learning_blocks.blocks(learning(svc, arms)["hp_result"], 4)
    assert (b0, b1) == (0, 4)
    assert r0["stop"] == (2, 4.0, None) and r0["partition:64"] == (2, 4.0, 1.0)
    assert r1["stop"][1] == 3.0 and r1["partition:64"][2] == pytest.approx(1.1)


def test_jobs_without_an_arm_count_as_stop_and_a_block_without_stop_has_no_ratio():
    (_, row), (_, lone) = learning_blocks.blocks({"svc_ms": [2.0, 3.0, 5.0], "arms": [None, "partition:16", "partition:16"]}, 2)
    assert row["stop"] == (1, 2.0, None) and row["partition:16"][2] == pytest.approx(1.5)
    assert lone == {"partition:16": (1, 5.0, None)}


def test_by_cpu_compares_each_arm_with_the_stop_jobs_on_the_same_cpu():
    svc, arms, cpus = [4.0, 4.4, 3.0, 3.0], ["stop", "partition:64", "stop", "partition:64"], [2, 2, 3, 3]
    ((_, row),) = learning_blocks.blocks({"svc_ms": svc, "arms": arms, "cpus": cpus}, 4, by_cpu=True)
    assert row[(2, "partition:64")][2] == pytest.approx(1.1) and row[(3, "partition:64")][2] == pytest.approx(1.0)


def test_main_prints_each_learning_and_leaves_out_the_rounds(tmp_path, capsys):
    rounds = dict(learning([9.0] * 4, ["stop"] * 4, setup="guarded"), round=0)
    seg = learning([4.0, 4.4] * 6, ["stop", "partition:64"] * 6, setup="guarded_depth_learn")
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [rounds, seg]}))
    assert learning_blocks.main([str(tmp_path), "--block", "6", "--min-jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "guarded_depth_learn" in out and "12 jobs in blocks of 6" in out and "guarded (" not in out
    lines = [l for l in out.splitlines() if l.startswith("  ")]
    assert len(lines) == 2 and all("partition:64 3 4.400 x1.100" in l for l in lines)


def test_a_folder_without_a_learning_or_a_bad_block_is_a_clear_error(tmp_path):
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [dict(learning([1.0], ["stop"], setup="corun"), round=0)]}))
    with pytest.raises(SystemExit, match="no learning segment with HP jobs"):
        learning_blocks.main([str(tmp_path)])
    with pytest.raises(SystemExit):
        learning_blocks.main([str(tmp_path), "--block", "0"])


def test_speed_finds_a_cost_that_grows_as_the_hp_speeds_up_and_none_where_there_is_none():
    import random
    rng = random.Random(5)
    def learning_with(dependence):
        svc, arms = [], []
        for b in range(40):  # blocks of 100 jobs, the HP's speed drifting between them
            level = math.exp(rng.gauss(0, 0.15))
            cost = 1.02 * math.exp(-dependence * math.log(level))  # faster HP (level < 1): costlier arm
            for j in range(100):
                arm = "stop" if j % 2 else "partition:64"
                svc.append(4.0 * level * (cost if arm != "stop" else 1.0) * math.exp(rng.gauss(0, 0.1)))
                arms.append(arm)
        return {"svc_ms": svc, "arms": arms}
    flat = learning_blocks.slope(learning_blocks.speed_points(learning_with(0.0), 100, 10))
    steep = learning_blocks.slope(learning_blocks.speed_points(learning_with(0.5), 100, 10))
    assert flat[1][0] < 0 < flat[1][1], flat  # no dependence: the interval holds 0
    assert steep[1][1] < 0 and steep[0] == pytest.approx(-0.5, abs=0.15), steep
    # a depth's jobs ("@") and blocks with too few stop jobs give no point
    assert learning_blocks.speed_points({"svc_ms": [1.0, 2.0], "arms": ["stop", "partition:16@2000us"]}, 2, 1) == []
    assert learning_blocks.slope([(0.0, 0.0), (0.0, 1.0)]) is None


def test_main_speed_prints_one_slope_per_hp_kind_and_all(tmp_path, capsys):
    seg = learning([4.0, 4.4, 3.0, 3.3, 5.0, 5.5] * 40, ["stop", "partition:64"] * 120)
    (tmp_path / "raw.json").write_text(json.dumps({"segments": [seg]}))
    assert learning_blocks.main([str(tmp_path), "--speed", "--block", "6", "--min-jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "slope of log ratio on log speed" in out and "  small " in out and "  all " in out
