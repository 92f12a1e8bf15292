"""The pure-Python parts of the GPU benchmarks' launch and gating stages, on synthetic inputs: the
paired launch-overhead table (bench/gpu/summarize.py) and the gating proof over an Nsight export
(bench/gpu/gating_proof.py)."""
import json
import sqlite3

from bench.gpu import gating_proof, summarize


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


def test_launch_cost_keeps_the_jobs_each_auto_process_opened(tmp_path, capsys):
    path, rows = tmp_path / "cost.jsonl", []
    for rnd, (aa, none, auto) in enumerate([(2, 40, 45), (-3, 44, 52), (0, 38, 41)], 1):
        for variant, diff in (("nohook", aa), ("none", none), ("auto", auto)):
            row = {"round": rnd, "variant": variant,
                   "result": {"direct": {"median": 3600}, "pair_diff": {"median": diff}}}
            if variant != "nohook":
                row["jobs_opened"] = 1 if variant == "auto" else 0
            rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summarize.launch_cost(str(path), str(tmp_path / "cost.json"), "test GPU")
    added = json.load(open(tmp_path / "cost.json"))["added_ns"]
    assert added["auto"]["median"] == 45 and added["auto"]["jobs_opened_per_round"] == [1, 1, 1]
    assert added["none"]["median"] == 40 and added["none"]["jobs_opened_per_round"] == [0, 0, 0]
    assert added["nohook_aa_check"]["median"] == 0 and "jobs_opened_per_round" not in added["nohook_aa_check"]


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


def auto_gating(tmp_path, lp_kernels, requests, auto_jobs, hp_kernels, unended=(), text_ids=False):
    """An export of an auto-jobs run: the HP's worker ranges are its requests, the hook's
    "gpuyield auto-job p1 d0" process ranges its jobs (end None: never ended)."""
    db = sqlite3.connect(tmp_path / "r.sqlite")
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    db.execute("CREATE TABLE NVTX_EVENTS (globalTid INTEGER, start INTEGER, end INTEGER, text TEXT, textId INTEGER)")
    db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (globalPid INTEGER, start INTEGER, end INTEGER)")
    lp, hp = 100 << 24, 200 << 24

    def nvtx(tid, s, e, text):
        if text_ids:  # the text in StringIds, as some exports keep it
            sid = db.execute("INSERT INTO StringIds (value) VALUES (?)", (text,)).lastrowid
            db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, NULL, ?)", (tid, s, e, sid))
        else:
            db.execute("INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, NULL)", (tid, s, e, text))
    nvtx(lp, 0, 1, "model_A job 1")
    for i, (s, e) in enumerate(requests, 1):
        nvtx(hp, s, e, "model_B job %d" % i)
    for s, e in auto_jobs:
        nvtx(hp + 7, s, e, "gpuyield auto-job p1 d0")  # another thread of the HP's process
    for s in unended:
        nvtx(hp, s, None, "gpuyield auto-job p1 d0")
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?)", [(hp, s, e) for s, e in hp_kernels])
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?)", [(lp, s, e) for s, e in lp_kernels])
    db.commit()
    db.close()
    (tmp_path / "pids.json").write_text(json.dumps([["a", 100], ["b", 200]]))
    (tmp_path / "cfg.json").write_text(json.dumps({"models": [{"output_file_name": "model_A", "priority": 0},
                                                              {"output_file_name": "model_B", "priority": 1,
                                                               "jobs": "auto"}]}))
    rc = gating_proof.main(str(tmp_path / "r.sqlite"), str(tmp_path / "pids.json"), str(tmp_path / "cfg.json"),
                           str(tmp_path / "out.json"))
    return rc, json.load(open(tmp_path / "out.json"))


def test_gating_proof_takes_an_auto_hps_jobs_from_the_hooks_ranges(tmp_path):
    # The request begins at 1500 with LP kernels still queued (they drain until 2000); the hook's
    # job begins after the drain, at 2100, and ends after the request's work, at 2900.
    rc, out = auto_gating(tmp_path, lp_kernels=SHORT, requests=[(1500, 2800)], auto_jobs=[(2100, 2900)],
                          hp_kernels=[(2200, 2400), (2500, 2700)], unended=[5000])
    hp = out["processes"]["model_B"]
    assert rc == 0 and out["violations"] == 0 and out["checked_jobs"] == 1
    assert hp["jobs_from"].startswith("hook auto-job") and hp["requests"] == 1 and hp["unended_auto_ranges"] == 1
    assert hp["own_kernels"] == 2 and hp["own_kernels_outside_auto_jobs"] == 0


def test_gating_proof_finds_a_lower_kernel_inside_an_auto_job(tmp_path):
    rc, out = auto_gating(tmp_path, lp_kernels=SHORT + [(2500, 2600)], requests=[(1500, 2800)],
                          auto_jobs=[(2100, 2900)], hp_kernels=[(2200, 2400), (2950, 3000)], text_ids=True)
    hp = out["processes"]["model_B"]
    assert rc == 1 and out["violations"] == 1 and hp["overlapping_lower_kernels"] == 1
    assert hp["own_kernels_outside_auto_jobs"] == 1  # the one after its job ended


def test_gating_proof_of_an_auto_hp_without_ranges_checks_nothing_and_fails(tmp_path):
    rc, out = auto_gating(tmp_path, lp_kernels=SHORT, requests=[(1500, 2800)], auto_jobs=[],
                          hp_kernels=[(2200, 2400)])
    assert rc == 1 and out["checked_jobs"] == 0
