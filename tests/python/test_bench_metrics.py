"""The pure-Python parts of the GPU benchmarks, on synthetic inputs: the contention metrics
(bench/gpu/contention.py), the paired launch-overhead table (bench/gpu/summarize.py) and the
gating proof over an Nsight export (bench/gpu/gating_proof.py)."""
import json
import random
import sqlite3

from bench.gpu import contention, corun_verdict, gating_proof, summarize


def role(jct, span_s, drains=None):
    return {"jobs": len(jct), "span_s": span_s, "throughput": len(jct) / span_s,
            "jct_ms": {"p50": contention.nearest_rank(jct, 50), "p90": contention.nearest_rank(jct, 90),
                       "p99": contention.nearest_rank(jct, 99)},
            "drain_ms": {"p50": 0.1, "p99": 0.2, "timeouts": 0} if drains else None}


def test_percentiles_are_nearest_rank_p50_included():
    assert contention.nearest_rank([10, 20, 30, 40], 50) == 20
    assert contention.nearest_rank(list(range(1, 101)), 99) == 99
    assert contention.nearest_rank(list(range(1, 91)), 99) == 90  # under 100 values: the maximum


def test_ratios_harvest_and_the_p99_flag():
    alone_hp = role([10.0] * 50, 10.0)
    alone_lp = role([100.0] * 100, 10.0)  # 10 jobs/s alone
    # Under contention: HP 50 jobs of 10 ms at its own speed = 0.5 s of 10 s -> idle fraction 0.95;
    # the LP does 9.5 jobs/s: a harvest of exactly 1.
    results = {"alone_hp": {"hp": alone_hp}, "alone_lp": {"lp": alone_lp},
               "event:8": {"hp": role([11.0] * 50, 10.0, drains=True), "lp": role([100.0] * 95, 10.0)}}
    d = contention.derive(results)["event:8"]
    assert abs(d["hp_p50_ratio"] - 1.1) < 1e-9 and abs(d["hp_p99_ratio"] - 1.1) < 1e-9
    assert abs(d["lp_harvest"] - 1.0) < 1e-9
    assert d["hp_p99_is_max"] is True  # 50 jobs: the p99 is one job's JCT


def test_a_repeated_round_compares_with_its_own_baseline():
    r = {"hp_alone_off": {"hp": role([4.0] * 9, 1)}, "hp_alone_none": {"hp": role([4.4] * 9, 1)},
         "hp_alone_off_r2": {"hp": role([8.0] * 9, 1)}, "hp_alone_none_r2": {"hp": role([8.8] * 9, 1)}}
    d = contention.derive(r)
    assert abs(d["cost_hp_alone_none"]["jct_p50_ratio"] - 1.1) < 1e-9
    assert abs(d["cost_hp_alone_none_r2"]["jct_p50_ratio"] - 1.1) < 1e-9  # not 2.2 against round 1


def test_launch_overhead_is_paired_by_round(tmp_path, capsys):
    path = tmp_path / "launch.jsonl"
    rows = []
    for rnd, (base, hooked) in enumerate([(4000, 4010), (4600, 4612), (3600, 3614)], 1):
        rows.append({"round": rnd, "variant": "nohook", "result": {"ns_per_launch": base, "host_ns_per_launch": 2000}})
        rows.append({"round": rnd, "variant": "none", "result": {"ns_per_launch": hooked, "host_ns_per_launch": 2025}})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summarize.launch(str(path))
    out = capsys.readouterr().out
    # Unpaired medians would say +10 (4010 - 4000); per round the hook adds 10, 12 and 14.
    assert "+12.0 [+10.0, +14.0]" in out, out
    assert "+25.0 [+25.0, +25.0]" in out, out


def export(path, lp_kernels, hp_jobs, copies=()):
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE NVTX_EVENTS (globalTid INTEGER, start INTEGER, end INTEGER, text TEXT)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (globalPid INTEGER, start INTEGER, end INTEGER)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (globalPid INTEGER, start INTEGER, end INTEGER, bytes INTEGER)")
    lp, hp = 100 << 24, 200 << 24
    db.execute("INSERT INTO NVTX_EVENTS VALUES (?, 0, 1, 'model_A job 1')", (lp,))
    for i, (s, e) in enumerate(hp_jobs, 1):
        db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?)", (hp, s, e, "model_B job %d" % i))
        db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?)", (hp, s + 1, e - 1))
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?)", [(lp, s, e) for s, e in lp_kernels])
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, 1000)", [(lp, s, e) for s, e in copies])
    db.commit()
    db.close()


def gating(tmp_path, **kw):
    export(tmp_path / "r.sqlite", **kw)
    (tmp_path / "pids.json").write_text(json.dumps([["a", 100], ["b", 200]]))
    (tmp_path / "cfg.json").write_text(json.dumps({"models": [{"output_file_name": "model_A", "priority": 0},
                                                              {"output_file_name": "model_B", "priority": 1}]}))
    rc = gating_proof.main(str(tmp_path / "r.sqlite"), str(tmp_path / "pids.json"), str(tmp_path / "cfg.json"),
                           str(tmp_path / "out.json"))
    return rc, json.load(open(tmp_path / "out.json"))


SHORT = [(10 * i, 10 * i + 5) for i in range(200)]  # LP kernels 0..2000 ns, none after 2000


def test_gating_proof_passes_a_clean_run(tmp_path):
    rc, out = gating(tmp_path, lp_kernels=SHORT, hp_jobs=[(3000, 4000), (5000, 6000)])
    assert rc == 0 and out["violations"] == 0 and out["checked_jobs"] == 2


def test_gating_proof_finds_a_long_kernel_started_long_before(tmp_path):
    # Started before 199 others and still running when the second job begins.
    rc, out = gating(tmp_path, lp_kernels=[(0, 5500)] + SHORT[1:], hp_jobs=[(3000, 4000), (5000, 6000)])
    assert rc == 1 and out["violations"] == 2


def test_gating_proof_counts_overlapping_copies(tmp_path):
    rc, out = gating(tmp_path, lp_kernels=SHORT, hp_jobs=[(3000, 4000)], copies=[(3500, 3600)])
    assert rc == 1 and out["violations"] == 1
    assert out["processes"]["model_B"]["cupti_activity_kind_memcpy_overlapping"]["count"] == 1


def phased_run():
    """A phased run in ms units: LP bursts [0, 3000] and [5000, 8000] ms (jobs of 100 ms back to
    back), HP jobs of 10 ms every 50 ms, 20 ms inside bursts."""
    ms = 1_000_000
    lp_s = [b + 100 * i for b in (0, 5000) for i in range(30)]
    lp = {"start_ns": [s * ms for s in lp_s], "end_ns": [(s + 100) * ms for s in lp_s], "jct": [100.0] * 60}
    hp_s = list(range(0, 9000, 50))
    in_burst = [any(b <= s < b + 3000 for b in (0, 5000)) for s in hp_s]
    jct = [20.0 if busy else 10.0 for busy in in_burst]
    hp = {"start_ns": [s * ms for s in hp_s], "end_ns": [(s + j) * ms for s, j in zip(hp_s, jct)], "jct": jct}
    return hp, lp


def test_phased_bursts_join_back_to_back_jobs_only():
    hp, lp = phased_run()
    spans = corun_verdict.bursts(lp["start_ns"], lp["end_ns"], 1.0)
    assert spans == [[0, 3000 * 1_000_000], [5000 * 1_000_000, 8000 * 1_000_000]]


def test_phased_split_keeps_guard_and_drops_the_edges():
    hp, lp = phased_run()
    contended, alone, lp_jct, burst_s = corun_verdict.split_phased(hp, lp, 1.0, 0.25)
    assert contended == [20.0] * 120 and burst_s == 6.0 and lp_jct == lp["jct"]
    # alone: 3250..4750 and 8250..8950 ms (start >= end of burst + 250, end <= next start - 250)
    assert alone == [10.0] * (len(range(3250, 4741, 50)) + len(range(8250, 9000, 50)))


def test_phased_verdict_uses_the_in_run_baseline():
    hp, lp = phased_run()
    v = corun_verdict.verdict_for({"hp": dict(hp, span_s=9.0), "lp": dict(lp, span_s=8.0)},
                                  [5.0] * 100, [100.0] * 50, random.Random(1), (1.0, 0.25))
    assert v["hp_p50_ratio"]["value"] == 2.0 and v["hp_p50_ratio"]["ci95"] == [2.0, 2.0]
    assert v["hp_alone_p50_ms"] == 10.0 and v["lp_burst_s"] == 6.0
    # 120 contended jobs x 10 ms (in-run alone p50) = 1.2 s of 6 s of bursts -> 0.8 left; the LP did
    # 10 jobs/s there as alone: harvest 1 / 0.8.
    assert abs(v["lp_harvest"]["value"] - 1.25) < 1e-3
    # without the split, the pooled standalone rounds (5 ms) are the baseline
    pooled = corun_verdict.verdict_for({"hp": dict(hp, span_s=9.0), "lp": dict(lp, span_s=8.0)},
                                       [5.0] * 100, [100.0] * 50, random.Random(1))
    assert pooled["hp_p50_ratio"]["value"] == 4.0  # every HP job (p50 20 ms) over 5 ms


def test_phased_split_that_leaves_no_baseline_is_an_error():
    hp, lp = phased_run()
    v = corun_verdict.verdict_for({"hp": dict(hp, span_s=9.0), "lp": dict(lp, span_s=8.0)},
                                  [5.0], [100.0], random.Random(1), (1.0, 10.0))
    assert "error" in v and "0 alone" in v["error"]
