"""bench/gpu/run_all.sh (the one GPU runner) against bench/gpu/README.md (its stage table): the same
stages, the same recheck, every script the table names exists, and every file of bench/gpu is named
in the README, so that the two cannot drift apart and no script is left outside the runner; and a
run cut by a timeout still packs what it measured."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPU = os.path.join(ROOT, "bench", "gpu")


def runner():
    return open(os.path.join(GPU, "run_all.sh")).read()


def readme():
    return open(os.path.join(GPU, "README.md")).read()


def runner_stages():
    body = runner()
    body = body[body.index("case $stage in"):body.index("esac")]
    labels = re.findall(r"^    ([a-z][a-z0-9|-]*)\)", body, re.M)
    return [s for label in labels for s in label.split("|")]


def table_rows():
    """(stage, script cell) of every row of the README's stage table."""
    text = readme()
    section = text[text.index("## Stages"):text.index("## Shared by the stages")]
    rows = []
    for line in section.splitlines():
        m = re.match(r"\| `([a-z][a-z0-9-]*)` \|[^|]*\| ([^|]*) \|", line)
        if m:
            rows.append((m.group(1), m.group(2)))
    return rows


def test_the_readme_lists_exactly_the_runners_stages_in_its_order():
    stages = runner_stages()
    assert len(stages) == len(set(stages)), stages
    assert [s for s, _ in table_rows()] == stages


def test_the_recheck_is_the_same_in_both():
    expansion = re.search(r'stages\+=\(([a-z -]+)\); else', runner()).group(1).split()
    said = re.search(r"`recheck` = `([a-z -]+)`", readme()).group(1).split()
    assert said == expansion and all(s in runner_stages() for s in expansion)


def test_every_script_the_table_names_exists():
    for stage, cell in table_rows():
        names = re.findall(r"`([^`]+\.(?:sh|py|cu))`", cell)
        assert names, f"stage {stage}: no script named"
        for name in names:
            path = os.path.join(ROOT, name) if "/" in name else os.path.join(GPU, name)
            assert os.path.exists(path), f"stage {stage}: {name} does not exist"


def test_the_runner_calls_each_stages_script():
    body = runner()
    for stage, cell in table_rows():
        script = re.search(r"`([^`]+\.(?:sh|py))`", cell).group(1)
        call = script if "/" in script else "bench/gpu/" + script
        if call.endswith(".py"):
            call = call[:-3].replace("/", ".")
        arm = re.search(r"^    (?:[a-z|-]+\|)?" + re.escape(stage) + r"(?:\|[a-z|-]+)?\)(.*?);;", body, re.M | re.S)
        assert arm and call in arm.group(1), f"stage {stage} does not run {call}"


def test_every_file_of_bench_gpu_is_named_in_the_readme():
    text = readme()
    files = [f for f in os.listdir(GPU) if os.path.isfile(os.path.join(GPU, f))]
    left_out = [f for f in files if f not in ("__init__.py", "README.md") and not f.endswith(".pyc")
                and not re.search(r"`" + re.escape(f) + r"`|`" + re.escape(os.path.splitext(f)[0]) + r"\.", text)]
    assert not left_out, f"not in bench/gpu/README.md: {left_out}"


def test_the_runner_is_valid_bash():
    assert subprocess.run(["bash", "-n", os.path.join(GPU, "run_all.sh")]).returncode == 0


def test_a_terminated_run_still_packs_what_it_measured(tmp_path):
    """A timeout's TERM mid-stage: the stage unwinds, then the runner packs results.tgz anyway
    (a device lease returns only $OUT). The runner is run in a copy of the tree whose extension
    build and smoke stage are stand-ins: the stage writes a result, then sleeps."""
    tree = tmp_path / "tree"
    (tree / "bench" / "gpu").mkdir(parents=True)
    (tree / "pyext").mkdir()
    shutil.copy(os.path.join(GPU, "run_all.sh"), tree / "bench" / "gpu" / "run_all.sh")
    (tree / "bench" / "gpu" / "env.sh").write_text("PY=python3\n")
    (tree / "pyext" / "build_ext.sh").write_text("exit 0\n")
    (tree / "bench" / "gpu" / "smoke.sh").write_text('mkdir -p "$2" && echo measured > "$2/part.txt"\nexec sleep 30\n')
    out, results = tmp_path / "out", tmp_path / "gy-results"
    env = dict(os.environ, OUT=str(out), GY_RESULTS=str(results), GPU_BUILD=str(tmp_path / "build"))
    started = time.monotonic()
    proc = subprocess.run(["timeout", "-s", "TERM", "2", "bash", "bench/gpu/run_all.sh", "smoke"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 124 and time.monotonic() - started < 20, proc.stdout + proc.stderr  # timeout timed it out
    assert "packing what was measured" in proc.stdout
    with tarfile.open(out / "results.tgz") as tar:
        part = tar.extractfile("gy-results/smoke/part.txt")
        assert part.read() == b"measured\n"


def test_call_size_counts_what_a_device_call_carries(tmp_path):
    """bench/gpu/call_size.py: tracked + untracked-not-ignored + carried, ignored files left out;
    exit 1 over the limit, 2 outside a checkout."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
    git("init", "-q")
    (repo / ".gitignore").write_text("ignored/\nbuild/\n")
    (repo / "tracked.bin").write_bytes(b"t" * 3_000_000)
    git("add", ".gitignore", "tracked.bin")
    (repo / "new.bin").write_bytes(b"u" * 1_000_000)  # untracked, not ignored: carried
    (repo / "ignored").mkdir()
    (repo / "ignored" / "big.bin").write_bytes(b"i" * 5_000_000)  # ignored: not carried
    (repo / "build").mkdir()
    (repo / "build" / "lib.so").write_bytes(b"c" * 2_000_000)  # ignored but named in --carry
    run = lambda *a: subprocess.run([sys.executable, "-m", "bench.gpu.call_size", "--root", str(repo), *a], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    r = run("--carry", "build", "--limit-mib", "6")
    assert r.returncode == 0, r.stdout
    assert "tracked 3.0 MB" in r.stdout and "untracked, not ignored 1.0 MB" in r.stdout and "(build) 2.0 MB" in r.stdout
    assert "= 6.0 MB of 6 MiB" in r.stdout and "left" in r.stdout
    r = run("--carry", "build", "ignored", "--limit-mib", "6")
    assert r.returncode == 1 and "OVER by" in r.stdout and "refused" in r.stdout, r.stdout
    r = run("--root", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "not a git checkout" in r.stdout, r.stdout


def _cells(tmp_path, plan_text, **env_extra):
    """bench/gpu/cells.sh on a plan, with a stand-in runner that records what each cell got."""
    plan = tmp_path / "plan.txt"
    plan.write_text(plan_text)
    stub = tmp_path / "run_all_stub.sh"
    stub.write_text('echo "$* | $MX_ARGS | $GY_RESULTS | $OUT" >> "$CELLS_CALLS"; sleep "${STUB_SLEEP:-0}"\n'
                    'mkdir -p "$OUT" && touch "$OUT/heatmap.png" "$OUT/matrix.json" "$OUT/results.tgz"\n'
                    'echo "[worker noise]"; echo "$MX_WARNING"; for i in 1 2 3 4; do echo "line $i"; done\n'
                    'echo "matrix exit ${MX_EXIT:-0}"\n')
    out, calls = tmp_path / "out", tmp_path / "calls.txt"
    env = dict(os.environ, OUT=str(out), RUN_ALL=str(stub), CELLS_CALLS=str(calls), **env_extra)
    proc = subprocess.run(["bash", os.path.join(GPU, "cells.sh"), str(plan)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    return proc, out, (calls.read_text().splitlines() if calls.exists() else [])


def test_cells_runs_each_cell_of_a_plan_as_one_matrix_invocation(tmp_path):
    proc, out, calls = _cells(tmp_path, "# two cells\n"
                              "gemm-r50 gemm resnet50train hp_alone,lp_alone,corun,guarded_depth 8000 3 205 225 1\n\n"
                              "mixed-gemm mixed gemm corun,guarded 3000 2 300 330 7 --loads poisson-50  # a comment\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("cells.sh: 2 cell(s), at most 555 s\n")
    assert "[worker noise]" not in proc.stdout and "cells.sh: mixed-gemm done at" in proc.stdout
    assert "warning" not in proc.stdout  # none given
    assert len(calls) == 2
    stage, args, results, cell_out = calls[0].split(" | ")
    assert stage == "matrix" and results == str(out / "gemm-r50" / "gy-results") and cell_out == str(out / "gemm-r50")
    assert args == ("--hp-kinds gemm --lp-kinds resnet50train --setups hp_alone,lp_alone,corun,guarded_depth "
                    "--learn-jobs 8000 --rounds 3 --budget-s 205 --seed 1 --no-cost --pin --loads poisson-25")
    assert calls[1].split(" | ")[1].endswith("--seed 7 --no-cost --pin --loads poisson-25 --loads poisson-50")
    # each cell's log and results.tgz in one archive (a call brings back 8 files), nothing else left
    assert sorted(os.listdir(out)) == ["cells.tar"]
    with tarfile.open(out / "cells.tar") as t:
        assert t.getnames() == ["gemm-r50.log", "gemm-r50/results.tgz", "mixed-gemm.log", "mixed-gemm/results.tgz"]
        assert t.extractfile("gemm-r50.log").read().decode().startswith("[worker noise]")
    # a second call into the same folder would mix two calls' cells: refused, the archive kept
    proc, out, again = _cells(tmp_path, "c gemm gemm corun 100 1 50 60 1\n")
    assert proc.returncode == 2 and "cells.tar exists (an earlier call's cells)" in proc.stderr, proc.stderr
    assert len(again) == 2 and sorted(os.listdir(out)) == ["cells.tar"]


def test_cells_says_a_matrix_warning_again_after_the_cells_tail(tmp_path):
    """The matrix warns before a cell's rounds (its HP's GPU work fills the GPU at the rate): the call's
    output shows a cell's last lines only, so cells.sh repeats the warning after them."""
    warning = "matrix: warning: mixed+gemm poisson-25: the HP's GPU work alone fills 1.67 of the GPU"
    proc, out, calls = _cells(tmp_path, "mixed-gemm mixed gemm corun,guarded 3000 2 300 330 7\n", MX_WARNING=warning)
    assert proc.returncode == 0 and len(calls) == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert f"cells.sh: mixed-gemm: {warning}" in lines and lines.index(f"cells.sh: mixed-gemm: {warning}") > \
        lines.index("matrix exit 0"), proc.stdout


def test_cells_refuses_a_bad_plan_before_running_any_cell(tmp_path):
    good = "a gemm gemm corun 100 1 50 60 1\n"
    for plan, message in ((good + "b gemm gemm corun 100 1 50\n", ":2: 7 fields, a cell needs 9"),
                          (good + "b gemm gemm corun 100 x 50 60 1\n", ":2: field 6 'x' must be a whole number"),
                          (good + "b gemm gemm corun 0 1 50 60 1\n", ":2: field 5 '0' must be a whole number"),
                          (good + "b gemm gemm corun 100 1 60 60 1\n", ":2: budget 60 s must be under the timeout 60 s"),
                          (good + "a gemm gemm corun 100 1 50 60 1\n", ":2: the name 'a' is taken"),
                          ("../a gemm gemm corun 100 1 50 60 1\n", ":1: name '../a'"),
                          ("-x gemm gemm corun 100 1 50 60 1\n", ":1: name '-x'"),  # tar would read an option
                          ("# nothing\n\n", "holds no cell"),
                          (good + "b gemm gemm corun 100 1 500 520 1\n", "sum to 580 s, past the call's 570 s")):
        proc, out, calls = _cells(tmp_path, plan)
        assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count("\n") == 1, (plan, proc.stderr)
        assert calls == [] and not out.exists(), plan
    proc, _, calls = _cells(tmp_path, good + "b gemm gemm corun 100 1 500 520 1\n", CALL_LIMIT_S="600")
    assert proc.returncode == 0 and len(calls) == 2, proc.stderr  # the limit is the caller's to raise
    before = len(calls)
    for env, message in (({"CALL_LIMIT_S": "abc"}, "CALL_LIMIT_S=abc: a whole number of seconds above 0"),
                         ({"CALL_LIMIT_S": "0"}, "CALL_LIMIT_S=0: a whole number")):
        proc, _, calls = _cells(tmp_path, good, **env)
        assert proc.returncode == 2 and message in proc.stderr and len(calls) == before, proc.stderr
    for name in ("a.log", "not_run.txt", "gpu_start.txt", "cells.tar", "call"):
        proc, _, calls = _cells(tmp_path, f"{name} gemm gemm corun 100 1 50 60 1\n")
        assert proc.returncode == 2 and f"name '{name}' is taken by the call's files" in proc.stderr, proc.stderr
    proc, _, calls = _cells(tmp_path, good + "b gemm gemm corun 100 1 500 580 1\n", FILL="1")
    assert proc.returncode == 2 and ":2: timeout 580 s is past the call's 570 s" in proc.stderr and len(calls) == before
    for env, message in (({"FILL": "yes"}, "FILL=yes: 1 (fill the call from a longer plan) or 0"),
                         ({"FROM": "c"}, "FROM=c: ")):
        proc, _, calls = _cells(tmp_path, good, **env)
        assert proc.returncode == 2 and message in proc.stderr and len(calls) == before, proc.stderr
    missing = subprocess.run(["bash", os.path.join(GPU, "cells.sh"), str(tmp_path / "none.txt")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_cells_fills_a_call_from_a_longer_plan_and_says_where_the_next_one_starts(tmp_path):
    """FILL=1: cells start in order while the time used plus the next one's timeout fits the call;
    the rest are named (output and not_run.txt) and FROM=NAME runs them in the next call."""
    plan = "".join(f"{n} gemm gemm corun 100 1 1 3 {i}\n" for i, n in enumerate("abcd"))
    # each cell takes 2 s (3 s by the shell's whole seconds): a (0 + 3 <= 6) and b (2-3 + 3 <= 6)
    # run, then c would end past 6 s
    proc, out, calls = _cells(tmp_path, plan, FILL="1", CALL_LIMIT_S="6", MX_WARNING="", STUB_SLEEP="2")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("cells.sh: 4 cell(s), their timeouts 12 s: as many as fit the call's 6 s (FILL=1)\n")
    assert [c.split(" | ")[1].split("--seed ")[1].split()[0] for c in calls] == ["0", "1"]
    assert re.search(r"cells.sh: not run, [45] s used and c's timeout 3 s would pass the call's 6 s: c d\n",
                     proc.stdout), proc.stdout
    assert f"cells.sh: next: FILL=1 FROM=c bash bench/gpu/cells.sh {tmp_path / 'plan.txt'}" in proc.stdout
    assert (out / "not_run.txt").read_text() == "c\nd\n" and not (out / "c").exists()
    with tarfile.open(out / "cells.tar") as t:
        assert [n for n in t.getnames() if n.endswith(".log")] == ["a.log", "b.log"]
    os.rename(out / "cells.tar", tmp_path / "call1.tar")  # brought back
    proc, out, calls = _cells(tmp_path, plan, FILL="1", FROM="c", CALL_LIMIT_S="6", MX_WARNING="")
    assert proc.returncode == 0 and proc.stdout.startswith("cells.sh: 2 cell(s), at most 6 s\n"), proc.stdout
    assert [c.split(" | ")[1].split("--seed ")[1].split()[0] for c in calls[-2:]] == ["2", "3"] and len(calls) == 4
    # a lease's last minutes: CALL_LIMIT_S lowered under a later cell's timeout (no call could run it
    # at 570 s) runs what fits from FROM, and refuses a call whose first cell cannot fit
    long_plan = "a gemm gemm corun 100 1 1 3 0\nb gemm gemm corun 100 1 5 8 1\nc gemm gemm corun 100 1 1 3 2\n"
    os.rename(out / "cells.tar", tmp_path / "call2.tar")
    proc, out, calls = _cells(tmp_path, long_plan, FILL="1", FROM="c", CALL_LIMIT_S="6", MX_WARNING="")
    assert proc.returncode == 0 and proc.stdout.startswith("cells.sh: 1 cell(s), at most 3 s\n"), proc.stderr
    assert calls[-1].split("--seed ")[1].split()[0] == "2" and len(calls) == 5
    os.rename(out / "cells.tar", tmp_path / "call3.tar")
    proc, out, calls = _cells(tmp_path, long_plan, FILL="1", FROM="b", CALL_LIMIT_S="6", MX_WARNING="")
    assert proc.returncode == 2 and len(calls) == 5, proc.stderr
    assert proc.stderr == ("cells.sh: the first cell, b, has a timeout of 8 s, past the call's 6 s (CALL_LIMIT_S): "
                           "nothing would run; raise CALL_LIMIT_S, or run a plan of the cells that fit\n"), proc.stderr
    assert not (out / "cells.tar").exists()
    # without FILL the same plan is refused as before: its timeouts pass the call
    proc, _, _ = _cells(tmp_path, plan, CALL_LIMIT_S="6")
    assert proc.returncode == 2 and "sum to 12 s, past the call's 6 s (CALL_LIMIT_S): split it, or FILL=1" in proc.stderr


def _call_dir(tmp_path, call, cells, raw=True):
    """What a cells.sh call brings back: NAME/results.tgz (gy-results/matrix/ inside) and NAME.log
    per cell, and the GPU's state before and after."""
    import json
    from bench.gpu import matrix
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_matrix import synthetic_raw
    d = tmp_path / call
    d.mkdir()
    (d / "gpu_start.txt").write_text("name, clocks\nTest GPU, 345 MHz\n")
    (d / "gpu_end.txt").write_text("name, clocks\nTest GPU, 1980 MHz\n")
    for name in cells:
        m = tmp_path / f"{call}-{name}-src" / "gy-results" / "matrix"
        m.mkdir(parents=True)
        r = synthetic_raw(slow=1.02, lp_share=0.6)
        r["args"] = {"setups": ["hp_alone", "lp_alone", "hp_ctl_alone", "corun"]}
        if raw:
            (m / "raw.json").write_text(json.dumps(r))
        (m / "matrix.json").write_text(json.dumps(matrix.analyze([r])))
        (m / "clocks.csv").write_text("2026/12/07 15:00:00.000, 1980, 2619, 300.0, 50, 90\n")
        (m / "corun_hp.log").write_text("gpuyield: pid 1: gates its launches\ngpuyield: pid 1: guarded trial ended\nother\n")
        (d / name).mkdir()
        with tarfile.open(d / name / "results.tgz", "w:gz") as t:
            t.add(tmp_path / f"{call}-{name}-src" / "gy-results", arcname="gy-results")
        (d / f"{name}.log").write_text(f"=== matrix\nmatrix exit 0 ({name})\n")
    return d


def test_record_cells_makes_a_records_folders_from_device_calls(tmp_path):
    from bench.gpu import record_cells
    one = _call_dir(tmp_path, "c1", ["gemm-a", "gemm-b"])
    two = _call_dir(tmp_path, "c2", ["gemm-a"])
    (two / "not_run.txt").write_text("gemm-c\n")
    with tarfile.open(two / "cells.tar", "w") as t:  # as cells.sh brings a call's cells back
        for entry in ("gemm-a.log", "gemm-a/results.tgz"):
            t.add(two / entry, arcname=entry)
    shutil.rmtree(two / "gemm-a")
    os.remove(two / "gemm-a.log")
    (two / "call.log").write_text("cells.sh: 1 cell(s)\n")  # the call's own log: not a cell, kept
    (one / "gate_bench.json").write_text('{"launch_check_ns": 1.0}\n')  # the host's gate-bench: kept
    out = tmp_path / "rec"
    assert record_cells.main(["--out", str(out), str(one), str(two)]) == 0
    assert sorted(os.listdir(out)) == ["call1-gemm-a", "call1-gemm-b", "call2-gemm-a", "call2.log",
                                       "gate_bench_call1.json", "gpu_end_call1.txt",
                                       "gpu_end_call2.txt", "gpu_start_call1.txt", "gpu_start_call2.txt",
                                       "not_run_call2.txt"]
    assert (out / "call2.log").read_text() == "cells.sh: 1 cell(s)\n"
    cell = out / "call2-gemm-a"
    assert sorted(os.listdir(cell)) == ["arm_split.txt", "cells.md", "clocks.csv", "lp_cycles.txt", "matrix.json",
                                        "raw.json.xz", "round_ratios.txt", "run.log", "worker_lines.log"]
    import lzma, json
    assert json.loads(lzma.open(cell / "raw.json.xz").read())["args"]["setups"][3] == "corun"
    assert (cell / "worker_lines.log").read_text() == "gpuyield: pid 1: guarded trial ended\n"
    assert (cell / "run.log").read_text().endswith("matrix exit 0 (gemm-a)\n")
    # the table's columns: corun first, then the other setups in --setups order
    assert (cell / "cells.md").read_text().startswith("| cell | GPU time left | corun | hp_ctl_alone |")
    assert "r0  alone svc 10.000" in (cell / "round_ratios.txt").read_text()
    assert (out / "gpu_end_call1.txt").read_text().endswith("1980 MHz\n")
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".record-")]
    # again into the same folder: refused before anything is written, whatever it would clash with
    assert record_cells.main(["--out", str(out), str(one)]) == 1
    assert len(os.listdir(out)) == 10
    three = _call_dir(tmp_path, "c3", ["gemm-d"])
    assert record_cells.main(["--out", str(out), str(three)]) == 1  # gpu_start_call1.txt is there
    assert len(os.listdir(out)) == 10
    # the next batch of a sweep numbers its calls on
    assert record_cells.main(["--out", str(out), "--first-call", "3", str(three)]) == 0
    assert {"call3-gemm-d", "gpu_start_call3.txt"} <= set(os.listdir(out)) and len(os.listdir(out)) == 13
    # an --out that is a file: one line, nothing written
    (tmp_path / "afile").write_text("x")
    assert record_cells.main(["--out", str(tmp_path / "afile"), str(three)]) == 1


def test_record_cells_takes_a_cell_left_beside_the_archive(tmp_path):
    """cells.sh leaves a cell unpacked when it cannot append it to cells.tar: the record takes it
    with the archive's cells, the archive's copy first where a name is in both."""
    from bench.gpu import record_cells
    call = _call_dir(tmp_path, "c", ["gemm-a", "gemm-b"])
    with tarfile.open(call / "cells.tar", "w") as t:
        for entry in ("gemm-a.log", "gemm-a/results.tgz"):
            t.add(call / entry, arcname=entry)
    (call / "gemm-a.log").write_text("a stale copy beside the archive\n")
    assert record_cells.main(["--out", str(tmp_path / "rec"), str(call)]) == 0
    assert sorted(os.listdir(tmp_path / "rec"))[:2] == ["call1-gemm-a", "call1-gemm-b"]
    assert (tmp_path / "rec" / "call1-gemm-b" / "raw.json.xz").exists()
    assert (tmp_path / "rec" / "call1-gemm-a" / "run.log").read_text().endswith("matrix exit 0 (gemm-a)\n")


def test_record_cells_refuses_a_bad_call_folder_and_leaves_nothing(tmp_path, capsys):
    from bench.gpu import record_cells
    good = _call_dir(tmp_path, "good", ["gemm-a"])
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "gemm-z").mkdir()
    (tmp_path / "bad" / "gemm-z" / "results.tgz").write_text("not a tar file")
    (tmp_path / "badtar").mkdir()
    (tmp_path / "badtar" / "cells.tar").write_text("not a tar file")
    (tmp_path / "emptytar").mkdir()
    tarfile.open(tmp_path / "emptytar" / "cells.tar", "w").close()
    (tmp_path / "badcell").mkdir()
    with tarfile.open(tmp_path / "badcell" / "cells.tar", "w") as t:  # a bad results.tgz inside the archive
        (tmp_path / "junk.tgz").write_text("not a tar file")
        t.add(tmp_path / "junk.tgz", arcname="gemm-j/results.tgz")
    for calls, message in (([good, tmp_path / "empty"], "no NAME/results.tgz or NAME.log of a cell in it"),
                           ([good, tmp_path / "badcell"], "badcell/cells.tar: gemm-j/results.tgz: cannot read it"),
                           ([good, tmp_path / "badtar"], "badtar/cells.tar: cannot read it"),
                           ([good, tmp_path / "emptytar"], "emptytar: no NAME/results.tgz or NAME.log of a cell"),
                           ([good, tmp_path / "bad"], "gemm-z/results.tgz: cannot read it"),
                           ([good, tmp_path / "nowhere"], "no such folder")):
        out = tmp_path / "rec"
        assert record_cells.main(["--out", str(out)] + [str(c) for c in calls]) == 1
        err = capsys.readouterr().err
        assert err.startswith("record_cells: ") and message in err and err.count("\n") == 1, err
        assert not out.exists() and not [n for n in os.listdir(tmp_path) if n.startswith(".record-")]
    # a cell whose matrix did not finish (cut by its timeout): its log kept, the others recorded
    unfinished = _call_dir(tmp_path, "unfinished", ["gemm-x", "gemm-y"], raw=False)
    os.remove(unfinished / "gemm-y" / "results.tgz")
    _call_dir(tmp_path, "half", ["gemm-y"])
    shutil.move(str(tmp_path / "half" / "gemm-y" / "results.tgz"), str(unfinished / "gemm-y" / "results.tgz"))
    out = tmp_path / "rec"
    assert record_cells.main(["--out", str(out), str(unfinished)]) == 0
    said = capsys.readouterr().out
    assert "call1-gemm-x: no raw.json, the cell's matrix did not finish: only its log kept (run.log)" in said, said
    assert os.listdir(out / "call1-gemm-x") == ["run.log"] and (out / "call1-gemm-y" / "raw.json.xz").exists()
    # run_all.sh stopped before it packed (a log, no results.tgz), and a raw.json cut while written
    cut = _call_dir(tmp_path, "cut", ["gemm-p", "gemm-q"])
    os.remove(cut / "gemm-p" / "results.tgz")
    src = tmp_path / "cut-gemm-q-src" / "gy-results"
    (src / "matrix" / "raw.json").write_text('{"segments": [{"hp": ')
    with tarfile.open(cut / "gemm-q" / "results.tgz", "w:gz") as t:
        t.add(src, arcname="gy-results")
    out = tmp_path / "rec2"
    assert record_cells.main(["--out", str(out), str(cut)]) == 0
    said = capsys.readouterr().out
    assert "call1-gemm-p: no results.tgz: only its log kept" in said and "call1-gemm-q: its raw.json cannot be read" in said
    assert os.listdir(out / "call1-gemm-p") == ["run.log"] and os.listdir(out / "call1-gemm-q") == ["run.log"]


def test_cells_says_which_cell_did_not_finish_and_exits_1(tmp_path):
    """run_all.sh packs and exits 0 whatever the matrix did: a cell whose matrix failed (its log's
    `matrix exit N`) or that its timeout cut is named, the cells after it still run, and the call
    exits 1; an earlier call's not_run.txt in the same folder is removed."""
    plan = "a gemm gemm corun 100 1 1 2 1\nb gemm gemm corun 100 1 1 2 2\n"
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "not_run.txt").write_text("old\n")
    proc, out, calls = _cells(tmp_path, plan, MX_EXIT="3", MX_WARNING="")
    assert proc.returncode == 1 and len(calls) == 2, proc.stdout
    with tarfile.open(out / "cells.tar") as t:  # a failed cell's log packed like the others
        assert t.getnames() == ["a.log", "a/results.tgz", "b.log", "b/results.tgz"]
    os.remove(out / "cells.tar")
    assert "cells.sh: a: its matrix exited 3 at" in proc.stdout and "cells.sh: b: its matrix exited 3" in proc.stdout
    assert proc.stdout.rstrip().endswith("cells.sh: 2 cell(s) did not finish: a b") and not (out / "not_run.txt").exists()
    proc, out, calls = _cells(tmp_path, plan, STUB_SLEEP="3", MX_WARNING="")  # past its 2-s timeout
    assert proc.returncode == 1 and "cells.sh: a cut by its timeout 2 s at" in proc.stdout, proc.stdout
    with tarfile.open(out / "cells.tar") as t:  # cut before run_all packed: its log alone
        assert t.getnames() == ["a.log", "b.log"]
    # the record of such a call: each cell named, its log kept (no cell dropped for want of a folder)
    from bench.gpu import record_cells
    (tmp_path / "call.log").write_text("the call's own output\n")
    shutil.move(str(out / "cells.tar"), str(tmp_path / "cells.tar"))
    call = tmp_path / "cutcall"
    call.mkdir()
    for f in ("cells.tar", "call.log"):
        shutil.move(str(tmp_path / f), str(call / f))
    assert record_cells.main(["--out", str(tmp_path / "cutrec"), str(call)]) == 0
    assert sorted(os.listdir(tmp_path / "cutrec")) == ["call1-a", "call1-b", "call1.log"]
    assert os.listdir(tmp_path / "cutrec" / "call1-a") == ["run.log"]
    proc, out, calls = _cells(tmp_path, plan, MX_WARNING="")
    assert proc.returncode == 0 and "did not finish" not in proc.stdout, proc.stdout


def test_every_plan_cell_is_one_the_matrix_accepts(tmp_path):
    """A plan's cell that the matrix refuses (an unknown setup, a budget under its estimate) costs a
    device call its time: each cell of bench/gpu/plans/*.txt, with the arguments cells.sh gives it,
    parses (bench.gpu.matrix.parse_args, which checks the budget against the plan's estimate)."""
    from bench.gpu import matrix
    plans = sorted(glob.glob(os.path.join(GPU, "plans", "*.txt")))
    assert plans, "no plan in bench/gpu/plans"
    build = tmp_path / "build"  # what the parse looks for in a build: its expcontroller
    (build / "bin").mkdir(parents=True)
    (build / "bin" / "expcontroller").write_text("#!/bin/sh\n")
    (build / "bin" / "expcontroller").chmod(0o755)
    for plan in plans:
        with open(plan) as f:
            text = f.read()
        where = tmp_path / os.path.basename(plan)
        where.mkdir()
        proc, _, calls = _cells(where, text, CALL_LIMIT_S="100000", MX_WARNING="")
        assert proc.returncode == 0, (plan, proc.stderr)
        assert calls, plan
        for call in calls:
            args = call.split(" | ")[1].split()
            try:
                matrix.parse_args(["--build", str(build), "--out", str(tmp_path / "m")] + args)
            except SystemExit:
                raise AssertionError(f"{plan}: the matrix refuses {' '.join(args)}")
