"""bench/gpu/stop_cost.py: a guarded segment's stop rounds against corun's, per HP kind, over records."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from bench.gpu import stop_cost  # noqa: E402


def seg(setup, r, svc, arms=None, rate=25.0, hp="bert"):
    res = {"lat_ms": svc, "svc_ms": svc}
    if arms is not None:
        res["arms"] = arms
    return {"hp": hp, "lp": "gemm", "load": "poisson-25", "setup": setup, "round": r, "rate": rate, "hp_result": res}


def write(folder, segments):
    folder.mkdir(parents=True)
    (folder / "raw.json").write_text(json.dumps({"commit": "abc", "segments": segments}))


def test_stop_rounds_set_beside_corun_s_per_hp_kind(tmp_path, capsys):
    segs = []
    for r, (g, c) in enumerate(((4.4, 4.0), (3.3, 3.0), (4.2, 4.0), (2.7, 3.0))):  # x1.10 x1.10 x1.05 x0.90
        segs += [seg("hp_alone", r, [4.0] * 30), seg("corun", r, [c] * 30), seg("guarded", r, [g] * 30, ["stop"] * 30)]
    segs += [seg("hp_alone", 4, [4.0] * 30), seg("corun", 4, [4.0] * 30),  # a partition in force: left out
             seg("guarded", 4, [9.0] * 30, ["stop"] * 20 + ["partition:16"] * 10)]
    segs += [seg("hp_alone", 5, [40.0] * 30), seg("corun", 5, [4.0] * 30),  # alone overloaded: 25/s x 40 ms
             seg("guarded", 5, [9.0] * 30, ["stop"] * 30)]
    segs += [seg("hp_alone", 6, [4.0] * 30), seg("corun", 6, [4.0] * 5), seg("guarded", 6, [9.0] * 5, ["stop"] * 5)]
    segs += [seg(s, 0, [3.0] * 30, ["stop"] * 30 if s == "arm:stop" else None, hp="gemm")
             for s in ("hp_alone", "corun", "arm:stop")]
    write(tmp_path / "rec" / "call1-a", segs)
    assert stop_cost.main([str(tmp_path / "rec")]) == 0
    out = capsys.readouterr().out
    assert "| guarded | bert | 4 | 1.075 [0.900, 1.100] | 3 | 0.625 |" in out, out
    assert "| arm:stop | gemm | 1 | 1.000 [1.000, 1.000] | 0 | - |" in out, out


def test_the_sign_test():
    assert stop_cost.sign_test(0, 0) is None
    assert stop_cost.sign_test(4, 4) == pytest.approx(0.125)
    assert stop_cost.sign_test(11, 16) == pytest.approx(0.2101, abs=1e-4)
    assert stop_cost.sign_test(8, 16) == 1.0


def test_nothing_to_set_beside_corun_and_bad_setups_exit_non_zero(tmp_path, capsys):
    write(tmp_path / "only-corun", [seg("hp_alone", 0, [4.0] * 30), seg("corun", 0, [4.0] * 30)])
    assert stop_cost.main([str(tmp_path / "only-corun")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("stop_cost: no round of guarded, arm:stop") and err.count("\n") == 1
    assert stop_cost.main([str(tmp_path / "nowhere")]) == 1 and "no such folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        stop_cost.main(["--setups", "corun", str(tmp_path)])
    assert e.value.code == 2
