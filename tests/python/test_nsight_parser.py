"""nsight-parser against SQLite exports with the real nsys schema: the expected tables and
statistics are computed here, independently (Python sqlite3 queries + statistics), from the same
files. Set NSIGHT_PARSER to the binary under test (default: build/bin/nsight-parser)."""
import csv
import glob
import json
import math
import os
import random
import shutil
import re
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import nsys_report  # noqa: E402
from nsys_report import MARK, PUSH_POP, START_END, Report  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PARSER = os.environ.get("NSIGHT_PARSER", str(ROOT / "build" / "bin" / "nsight-parser"))


def unpacked_fixtures():
    """The real exports (tests/fixtures/nsys/*.sqlite.xz: xz keeps the working tree, which travels to
    the GPU machine under a size limit, 6 MB smaller), unpacked once into the build folder with
    what lies beside each (<stem>.models_pid.json); again when an .xz is newer than its copy."""
    import lzma
    src = ROOT / "tests" / "fixtures" / "nsys"
    dest = Path(os.environ.get("BUILD", ROOT / "build")) / "fixtures" / "nsys"
    out = []
    for packed in sorted(src.glob("*.sqlite.xz")):
        dest.mkdir(parents=True, exist_ok=True)
        target = dest / packed.name[:-len(".xz")]
        if not target.exists() or target.stat().st_mtime < packed.stat().st_mtime:
            part = target.with_suffix(".part")
            with lzma.open(packed) as f, open(part, "wb") as g:
                shutil.copyfileobj(f, g)
            part.replace(target)
        for beside in src.glob(target.stem + ".*.json"):
            shutil.copy(beside, dest / beside.name)
        out.append(str(target))
    return out


FIXTURES = unpacked_fixtures()
COLUMNS = ["IssueStart", "IssueEnd", "ExecutionStart", "ExecutionEnd", "KernelDur", "QueueDelay", "Stream", "Name"]


def run(*args, env=None):
    return subprocess.run([PARSER, *map(str, args)], capture_output=True, text=True, timeout=120, env=env)


# ---------- expectations, computed from the SQLite file itself ----------

def table_exists(db, name):
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def expected_kernels(path):
    """{pid: [row dict, ...]} ordered by execution start, read with a window-function join."""
    db = sqlite3.connect(path)
    launches = ("SELECT (globalTid >> 24) & 16777215 AS pid, correlationId AS corr, start, end, "
                "row_number() OVER (PARTITION BY (globalTid >> 24) & 16777215, correlationId ORDER BY start) AS rn "
                "FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId IS NOT NULL")
    if not table_exists(db, "CUPTI_ACTIVITY_KIND_RUNTIME"):
        launches = "SELECT 0 AS pid, 0 AS corr, 0 AS start, 0 AS end, 0 AS rn WHERE 0"
    rows = db.execute(f"""
        WITH launch AS ({launches})
        SELECT (k.globalPid >> 24) & 16777215, l.start, l.end, k.start, k.end, k.streamId,
               coalesce(dn.value, sn.value)
        FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
        LEFT JOIN launch AS l ON l.rn = 1 AND l.corr = k.correlationId
                             AND l.pid = (k.globalPid >> 24) & 16777215
        LEFT JOIN StringIds AS dn ON dn.id = k.demangledName
        LEFT JOIN StringIds AS sn ON sn.id = k.shortName""").fetchall()
    db.close()
    by_pid = {}
    for pid, i0, i1, e0, e1, stream, name in rows:
        by_pid.setdefault(pid, []).append(dict(IssueStart=i0, IssueEnd=i1, ExecutionStart=e0, ExecutionEnd=e1,
                                               KernelDur=e1 - e0, QueueDelay=None if i1 is None else e0 - i1,
                                               Stream=stream, Name=name))
    for rows_of in by_pid.values():
        rows_of.sort(key=lambda r: (r["ExecutionStart"], r["ExecutionEnd"],
                                    -1 if r["IssueStart"] is None else r["IssueStart"]))
    return by_pid


def expected_nvtx(path):
    db = sqlite3.connect(path)
    out = {}
    if table_exists(db, "NVTX_EVENTS"):
        for gtid, start, end, text, text_id in db.execute(
                "SELECT globalTid, start, end, text, textId FROM NVTX_EVENTS "
                "WHERE eventType IN (59, 60) AND end IS NOT NULL AND globalTid IS NOT NULL"):
            if text is None and text_id is not None:
                text = db.execute("SELECT value FROM StringIds WHERE id = ?", (text_id,)).fetchone()[0]
            # Ranges numbered per job ("model_A job 17") are summed under the name without the number.
            name = re.sub(r"(?<=.) [0-9]+$", "", text or "[unnamed]")
            entry = out.setdefault((gtid >> 24) & 0xFFFFFF, {}).setdefault(name, {"count": 0, "total_ns": 0})
            entry["count"] += 1
            entry["total_ns"] += end - start
    db.close()
    return out


def nearest_rank_p99(values):
    ordered = sorted(values)
    return ordered[-(-99 * len(ordered) // 100) - 1]


def expected_model(name, pid, rows, nvtx):
    durations = [r["KernelDur"] for r in rows]
    queues = [r["QueueDelay"] for r in rows if r["QueueDelay"] is not None]
    return {
        "name": name, "pid": pid, "kernels": len(rows),
        "kernel_ns": {"median": statistics.median(durations), "p99": nearest_rank_p99(durations),
                      "mean": math.fsum(durations) / len(durations), "total": sum(durations)},
        "queue_ns": ({"median": statistics.median(queues), "p99": nearest_rank_p99(queues)} if queues
                     else {"median": None, "p99": None}),
        "nvtx": nvtx.get(pid, {}),
    }


def read_table(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS
        rows = []
        for r in reader:
            rows.append({k: (r[k] if k == "Name" else (None if r[k] == "" else int(r[k]))) for k in COLUMNS})
        return rows


def check_outputs(outdir, path, names):
    """names: {pid: model name}; checks every table and summary.json against the file."""
    kernels, nvtx = expected_kernels(path), expected_nvtx(path)
    assert set(kernels) == set(names)
    summary = json.loads((outdir / "summary.json").read_text())
    got = {m["pid"]: m for m in summary["models"]}
    assert set(got) == set(names)
    for pid, name in names.items():
        assert read_table(outdir / f"{name}_{pid}.csv") == kernels[pid]
        want = expected_model(name, pid, kernels[pid], nvtx)
        for section in ("kernel_ns", "queue_ns"):
            for key, value in want[section].items():
                assert got[pid][section][key] == pytest.approx(value, rel=1e-12, abs=1e-6) if value is not None \
                    else got[pid][section][key] is None, (pid, section, key)
        assert {k: got[pid][k] for k in ("name", "pid", "kernels", "nvtx")} == \
               {k: want[k] for k in ("name", "pid", "kernels", "nvtx")}
    log = (outdir / "summary.log").read_text()
    for pid, name in names.items():
        block = log.split(f"Model: {name} (pid {pid})")[1].split("Model:")[0]
        assert f"NumKernels: {len(kernels[pid])}\n" in block
        assert f"MedianKernelDur: {statistics.median(r['KernelDur'] for r in kernels[pid]):.1f}\n" in block
    return summary


# ---------- synthetic reports ----------

PID_A, PID_B, PID_IDLE = 41001, 41002, 41003


def two_model_report(seed=1, kernels_per_model=300):
    """Two processes sharing a GPU, correlation ids overlapping across processes as in real runs,
    plus the details real exports have: a graph launch (several kernels, one correlationId), a
    kernel without correlationId, API calls that launch nothing, preemption/sync NVTX ranges,
    a mark, a range named through textId, a process without kernels."""
    rng = random.Random(seed)
    rep = Report()
    rep.process(PID_A, "python3")
    rep.process(PID_B, "python3.12")
    rep.process(PID_IDLE, "nsys-launcher")
    t = 1_000_000
    for pid in (PID_A, PID_B):
        corr = 1
        clock = t + (0 if pid == PID_A else 777)
        for i in range(kernels_per_model):
            issue = clock
            issue_end = issue + rng.randint(2_000, 9_000)
            start = issue_end + rng.randint(-1_500, 400_000)   # negative: began before the call returned
            dur = rng.choice([rng.randint(1_000, 50_000), rng.randint(200_000, 900_000)])
            name = rng.choice(["void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
                               "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32",
                               'void "quoted"<1, 2>::kernel(int, float)'])
            rep.launch(pid, issue, issue_end, corr)
            rep.kernel(pid, start, start + dur, stream=7 + i % 3, corr=corr, name=name)
            corr += 1
            rep.launch(pid, issue_end + 10, issue_end + 500, corr, name="cudaStreamIsCapturing_v10000")
            corr += 1
            clock = issue_end + rng.randint(1_000, 30_000)
        rep.launch(pid, clock, clock + 5_000, corr, name="cudaGraphLaunch_v10000")
        for g in range(4):
            rep.kernel(pid, clock + 10_000 + g * 20_000, clock + 25_000 + g * 20_000, stream=20, corr=corr,
                       name="graph_node_kernel")
        rep.kernel(pid, clock + 200_000, clock + 260_000, stream=21, corr=None, name="no_correlation_kernel")
    for i in range(5):
        rep.nvtx(PID_B, t + i * 1_000_000, t + i * 1_000_000 + 300_000 + i, "preemption")
        rep.nvtx(PID_A, t + i * 1_000_000 + 10, t + i * 1_000_000 + 90_000 + 7 * i, "sync", event_type=START_END)
    rep.nvtx(PID_A, t, t + 123_456, "job", use_text_id=True)
    rep.nvtx(PID_A, t + 5, None, "a mark", event_type=MARK)
    rep.nvtx(PID_IDLE, t, t + 99, "preemption")
    return rep


@pytest.fixture
def work(tmp_path):
    return tmp_path


def test_two_models_named_by_pid_file(work):
    db = work / "rep.sqlite"
    two_model_report().write(db)
    (work / "models_pid.json").write_text(json.dumps([["model_A", PID_A], ["model_B", PID_B]]))
    r = run(db, "-p", work / "models_pid.json", "-o", work / "out")
    assert r.returncode == 0, r.stderr
    summary = check_outputs(work / "out", db, {PID_A: "model_A", PID_B: "model_B"})
    assert [m["name"] for m in summary["models"]] == ["model_A", "model_B"]
    b = summary["models"][1]
    assert b["nvtx"]["preemption"]["count"] == 5
    assert "sync" in summary["models"][0]["nvtx"] and "job" in summary["models"][0]["nvtx"]
    assert "a mark" not in summary["models"][0]["nvtx"]
    assert "warning" not in r.stderr


def test_names_from_processes_without_pid_file(work):
    db = work / "rep.sqlite"
    two_model_report(seed=2).write(db)
    r = run(db, "-o", work / "out")
    assert r.returncode == 0, r.stderr
    check_outputs(work / "out", db, {PID_A: "python3", PID_B: "python3.12"})


def test_pid_file_naming_an_absent_pid_warns(work):
    db = work / "rep.sqlite"
    two_model_report(seed=3).write(db)
    (work / "pids.json").write_text(json.dumps([["model_A", PID_A], ["ghost", 99999], ["idle", PID_IDLE]]))
    r = run(db, "-p", work / "pids.json", "-o", work / "out")
    assert r.returncode == 0, r.stderr
    assert "ghost" in r.stderr and "99999" in r.stderr and "idle" in r.stderr
    check_outputs(work / "out", db, {PID_A: "model_A", PID_B: "python3.12"})


def test_without_runtime_nvtx_and_processes_tables(work):
    db = work / "rep.sqlite"
    two_model_report(seed=4).write(db, runtime=False, nvtx=False, processes=False)
    r = run(db, "-o", work / "out")
    assert r.returncode == 0, r.stderr
    summary = check_outputs(work / "out", db, {PID_A: "process", PID_B: "process"})
    for m in summary["models"]:
        assert m["queue_ns"] == {"median": None, "p99": None} and m["nvtx"] == {}
    rows = read_table(work / "out" / f"process_{PID_A}.csv")
    assert all(r["IssueStart"] is None and r["QueueDelay"] is None for r in rows)


def test_extra_tables_of_the_original_command_line_change_nothing(work):
    """An export of `nsys profile -t cuda,nvtx,osrt,cudnn,cublas -s cpu --cudabacktrace=true` has
    OS runtime, cuDNN, cuBLAS, CPU sampling and backtrace tables beside the CUDA ones: the parser
    must read the same kernels, queue delays and NVTX ranges as without them, and say nothing."""
    plain, extra = work / "plain.sqlite", work / "extra.sqlite"
    two_model_report(seed=11).write(plain)
    two_model_report(seed=11).write(extra, extra_tables=True)
    with sqlite3.connect(extra) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert set(nsys_report.EXTRA_TABLES) <= tables
        assert db.execute("SELECT count(*) FROM OSRT_API").fetchone()[0] > 0
        assert db.execute("SELECT count(*) FROM COMPOSITE_EVENTS").fetchone()[0] > 0
    (work / "pids.json").write_text(json.dumps([["model_A", PID_A], ["model_B", PID_B]]))
    outs = {}
    for db in (plain, extra):
        r = run(db, "-p", work / "pids.json", "-o", work / db.stem)
        assert r.returncode == 0, r.stderr
        assert "warning" not in r.stderr, r.stderr
        summary = check_outputs(work / db.stem, db, {PID_A: "model_A", PID_B: "model_B"})
        outs[db.stem] = (summary["models"], {f.name: f.read_bytes() for f in (work / db.stem).glob("*.csv")})
    assert outs["plain"] == outs["extra"]
    assert outs["extra"][0][1]["nvtx"]["preemption"]["count"] == 5


def test_statistics_definitions(work):
    """Even count: the median is the mean of the two middle values; p99 is the nearest rank."""
    rep = Report()
    rep.process(PID_A, "python3")
    durations = list(range(1, 201))          # 200 kernels: median 100.5, p99 = value at rank 198
    random.Random(5).shuffle(durations)
    for i, d in enumerate(durations):
        start = 10_000 * (i + 1)
        rep.launch(PID_A, start - 300, start - 100 - (i % 2), corr=i + 1)   # queue 100 or 101 ns
        rep.kernel(PID_A, start, start + d, corr=i + 1)
    db = work / "rep.sqlite"
    rep.write(db)
    r = run(db, "-o", work / "out")
    assert r.returncode == 0, r.stderr
    m = json.loads((work / "out" / "summary.json").read_text())["models"][0]
    assert m["kernels"] == 200
    assert m["kernel_ns"] == {"median": 100.5, "p99": 198, "mean": 100.5, "total": 20100}
    assert m["queue_ns"] == {"median": 100.5, "p99": 101}


def test_nsys_stats_csv_input(work):
    rep = two_model_report(seed=6, kernels_per_model=120)
    db = work / "rep.sqlite"
    rep.write(db)
    rep.write_kern_exec_csv(work / "kern.csv")
    r = run(work / "kern.csv", "-o", work / "out")
    assert r.returncode == 0, r.stderr
    # The CSV holds only kernels with a launch call, and no stream.
    for pid in (PID_A, PID_B):
        want = [dict(row, Stream=None) for row in expected_kernels(db)[pid] if row["IssueStart"] is not None]
        assert read_table(work / "out" / f"process_{pid}.csv") == want
    summary = json.loads((work / "out" / "summary.json").read_text())
    assert [m["kernels"] for m in summary["models"]] == [len(read_table(work / "out" / f"process_{p}.csv"))
                                                         for p in (PID_A, PID_B)]


def test_nsys_rep_is_exported_with_the_given_nsys(work):
    db = work / "rep.sqlite"
    two_model_report(seed=7).write(db)
    fake = work / "nsys"
    log = work / "nsys-args"
    fake.write_text("#!/bin/sh\n"
                    f"echo \"$@\" > {log}\n"
                    "[ \"$1 $2 $3 $4\" = 'export --type sqlite --output' ] || exit 3\n"
                    f"cp {db} \"$5\"\n")
    fake.chmod(0o755)
    (work / "run.nsys-rep").write_bytes(b"not inspected by the parser")
    tmp = work / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    r = run(work / "run.nsys-rep", "--nsys", fake, "-o", work / "out", env=env)
    assert r.returncode == 0, r.stderr
    assert log.read_text().split()[-1] == str(work / "run.nsys-rep")
    check_outputs(work / "out", db, {PID_A: "python3", PID_B: "python3.12"})
    assert list(tmp.iterdir()) == []            # the temporary export is gone


def test_nsys_rep_export_failure_leaves_nothing(work):
    fake = work / "nsys"
    fake.write_text("#!/bin/sh\necho 'cannot import' >&2\nexit 1\n")
    fake.chmod(0o755)
    (work / "run.nsys-rep").write_bytes(b"x")
    tmp = work / "tmp"
    tmp.mkdir()
    r = run(work / "run.nsys-rep", "--nsys", fake, "-o", work / "out", env=dict(os.environ, TMPDIR=str(tmp)))
    assert r.returncode == 1
    assert "export" in r.stderr and "failed" in r.stderr
    assert list(tmp.iterdir()) == [] and not (work / "out").exists()


def test_nsys_rep_without_nsys_on_path(work):
    (work / "run.nsys-rep").write_bytes(b"x")
    r = run(work / "run.nsys-rep", "-o", work / "out", env=dict(os.environ, PATH=str(work)))
    assert r.returncode == 1
    assert "no nsys" in r.stderr and "--nsys" in r.stderr
    r = run(work / "run.nsys-rep", "--nsys", work / "missing-nsys", "-o", work / "out")
    assert r.returncode == 1 and "missing-nsys" in r.stderr
    assert not (work / "out").exists()


@pytest.mark.parametrize("content", [b"hello, world\n1,2,3\n", b"\x00\x01binary", b""])
def test_not_a_report(work, content):
    (work / "junk.txt").write_bytes(content)
    r = run(work / "junk.txt", "-o", work / "out")
    assert r.returncode == 1
    assert "not a report" in r.stderr
    assert not (work / "out").exists()


def test_sqlite_that_is_not_an_nsys_export(work):
    db = sqlite3.connect(work / "other.sqlite")
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    r = run(work / "other.sqlite", "-o", work / "out")
    assert r.returncode == 1 and "not a report" in r.stderr
    assert not (work / "out").exists()


@pytest.mark.parametrize("kernel_table", [True, False])
def test_report_without_kernels(work, kernel_table):
    rep = Report()
    rep.process(PID_A, "python3")
    rep.nvtx(PID_A, 0, 10, "job")
    rep.write(work / "rep.sqlite", kernels=kernel_table)
    r = run(work / "rep.sqlite", "-o", work / "out")
    assert r.returncode == 1 and "no" in r.stderr and "kernels" in r.stderr
    assert not (work / "out").exists()


def test_unwritable_outdir(work):
    db = work / "rep.sqlite"
    two_model_report(seed=8, kernels_per_model=10).write(db)
    (work / "file").write_text("x")
    r = run(db, "-o", work / "file" / "out")
    assert r.returncode == 1 and "not a directory" in r.stderr
    r = run(db, "-o", work / "file")
    assert r.returncode == 1 and "not a directory" in r.stderr
    if os.geteuid() != 0:                      # root writes anywhere
        (work / "ro").mkdir(mode=0o500)
        r = run(db, "-o", work / "ro" / "out")
        assert r.returncode == 1 and "not writable" in r.stderr


@pytest.mark.parametrize("content,expect", [
    ("[[\"a\", 1],", "invalid JSON"),
    ("{\"a\": 1}", "not an array"),
    ("[[\"a\", \"12\"]]", "entry 0"),
    ("[[\"\", 12]]", "entry 0"),
])
def test_bad_pid_file(work, content, expect):
    db = work / "rep.sqlite"
    two_model_report(seed=9, kernels_per_model=10).write(db)
    (work / "pids.json").write_text(content)
    r = run(db, "-p", work / "pids.json", "-o", work / "out")
    assert r.returncode == 1 and expect in r.stderr
    assert not (work / "out").exists()


def test_usage_errors(work):
    assert run().returncode == 2
    assert run(work / "x.sqlite").returncode == 2                      # no -o
    assert run("a", "b", "-o", work / "out").returncode == 2
    # issue 28: one line, what is wrong and the pointer to --help (not the whole help)
    for args, what in [((), "missing REPORT"), ((work / "x.sqlite",), "missing -o OUTDIR"),
                       (("a", "b", "-o", work / "out"), "more than one REPORT"),
                       (("--bogus", "a", "-o", work / "out"), "unknown option '--bogus'"),
                       (("a", "-Z", "-o", work / "out"), "unknown option '-Z'"),
                       (("a", "-o"), "option '-o' needs an argument")]:
        r = run(*args)
        assert r.returncode == 2 and r.stdout == "", (args, r)
        lines = r.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("nsight-parser: " + what), (args, r.stderr)
        assert lines[0].endswith(" (nsight-parser --help lists the options)"), (args, r.stderr)
    r = run(work / "missing.sqlite", "-o", work / "out")
    assert r.returncode == 1 and "missing.sqlite" in r.stderr


def test_model_names_are_made_safe_for_file_names(work):
    db = work / "rep.sqlite"
    two_model_report(seed=10, kernels_per_model=10).write(db)
    (work / "pids.json").write_text(json.dumps([["../evil/name", PID_A], ["ok.model-1", PID_B]]))
    r = run(db, "-p", work / "pids.json", "-o", work / "out")
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in (work / "out").iterdir())
    assert files == sorted([f"_._evil_name_{PID_A}.csv", f"ok.model-1_{PID_B}.csv", "summary.json", "summary.log"])
    names = [m["name"] for m in json.loads((work / "out" / "summary.json").read_text())["models"]]
    assert names == ["../evil/name", "ok.model-1"]


# ---------- real exports made on the H100 (tests/fixtures/nsys/*.sqlite.xz) ----------

def fixture_names(path):
    """Names from a models_pid.json beside the fixture (<stem>.models_pid.json), else PROCESSES."""
    pid_file = Path(path).with_suffix(".models_pid.json")
    if pid_file.exists():
        return {pid: name for name, pid in json.loads(pid_file.read_text())}, pid_file
    return None, None


@pytest.mark.skipif(not FIXTURES, reason="no real fixtures in tests/fixtures/nsys yet")
@pytest.mark.parametrize("path", FIXTURES, ids=[Path(p).name for p in FIXTURES])
def test_real_export(work, path):
    names, pid_file = fixture_names(path)
    args = [path, "-o", work / "out"] + (["-p", pid_file] if pid_file else [])
    r = run(*args)
    assert r.returncode == 0, r.stderr
    kernels = expected_kernels(path)
    db = sqlite3.connect(path)
    process_names = {}
    if table_exists(db, "PROCESSES"):
        for pid, pname in db.execute("SELECT pid, name FROM PROCESSES WHERE name IS NOT NULL ORDER BY rowid"):
            process_names.setdefault(pid, pname)      # the first name a pid had (it may exec later)
    db.close()
    want = {pid: (names or {}).get(pid) or process_names.get(pid) or "process" for pid in kernels}
    check_outputs(work / "out", path, want)


def write_kern_exec_csv_from_export(path, out):
    """What `nsys stats --report cuda_kern_exec_trace --format csv` prints for an export: one row per
    kernel joined to its launch call in the same process, times in ns."""
    db = sqlite3.connect(path)
    rows = db.execute("""
        SELECT r.start, r.end - r.start, k.start, k.end - k.start, (r.globalTid >> 24) & 16777215,
               r.globalTid & 16777215, k.deviceId, rn.value, coalesce(dn.value, sn.value)
        FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
        JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r
          ON k.correlationId = r.correlationId AND k.globalPid = (r.globalTid & -16777216)
        LEFT JOIN StringIds AS rn ON rn.id = r.nameId
        LEFT JOIN StringIds AS dn ON dn.id = k.demangledName
        LEFT JOIN StringIds AS sn ON sn.id = k.shortName
        ORDER BY r.start""").fetchall()
    db.close()
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["API Start (ns)", "API Dur (ns)", "Queue Start (ns)", "Queue Dur (ns)", "Kernel Start (ns)",
                    "Kernel Dur (ns)", "Total Dur (ns)", "PID", "TID", "DevId", "API Function", "GridXYZ",
                    "BlockXYZ", "Kernel Name"])
        for a0, ad, k0, kd, pid, tid, dev, api, name in rows:
            queued = k0 - (a0 + ad) >= 0
            w.writerow([a0, ad, a0 + ad if queued else "", k0 - (a0 + ad) if queued else "", k0, kd,
                        max(a0 + ad, k0 + kd) - a0, pid, tid, dev, api, "   1    1    1", "   1    1    1", name])
    return len(rows)


@pytest.mark.skipif(not FIXTURES, reason="no real fixtures in tests/fixtures/nsys yet")
@pytest.mark.parametrize("path", FIXTURES, ids=[Path(p).name for p in FIXTURES])
def test_real_export_as_nsys_stats_csv(work, path):
    """The same real report through the CSV input gives the same tables, less the streams."""
    n = write_kern_exec_csv_from_export(path, work / "kern.csv")
    assert n > 0
    r = run(work / "kern.csv", "-o", work / "from_csv")
    assert r.returncode == 0, r.stderr
    r = run(path, "-o", work / "from_sqlite")
    assert r.returncode == 0, r.stderr
    from_sqlite = {p.name.rsplit("_", 1)[1]: p for p in (work / "from_sqlite").glob("*.csv")}
    total = 0
    for table in (work / "from_csv").glob("*.csv"):
        pid_part = table.name.rsplit("_", 1)[1]
        want = [dict(row, Stream=None) for row in read_table(from_sqlite[pid_part]) if row["IssueStart"] is not None]
        got = read_table(table)
        assert got == want
        total += len(got)
    assert total == n


def test_interrupted_export_leaves_nothing(work):
    """Ctrl-C while nsys exports: the export is stopped, the temporary directory removed."""
    import signal
    import time
    fake = work / "nsys"
    started = work / "started"
    pid_file = work / "nsys.pid"
    fake.write_text(f"#!/bin/sh\n: > \"$5\"\necho $$ > {pid_file}\ntouch {started}\nexec sleep 60\n")
    fake.chmod(0o755)
    (work / "run.nsys-rep").write_bytes(b"x")
    tmp = work / "tmp"
    tmp.mkdir()
    p = subprocess.Popen([PARSER, str(work / "run.nsys-rep"), "--nsys", str(fake), "-o", str(work / "out")],
                         env=dict(os.environ, TMPDIR=str(tmp)), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the fake nsys never ran"
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=30)  # an nsys left running would hold the pipes open: a timeout
    assert p.returncode == -signal.SIGINT
    assert list(tmp.iterdir()) == [] and not (work / "out").exists()
    with pytest.raises(ProcessLookupError):  # stopped and reaped, never orphaned
        os.kill(int(pid_file.read_text()), 0)


@pytest.mark.skipif(not FIXTURES, reason="no real fixtures in tests/fixtures/nsys yet")
def test_degraded_exports_parse_and_say_what_is_lost(work):
    """A real export without StringIds, or whose kernel table lacks globalPid, still parses (exit 0)
    and one warning names what is lost."""
    source = FIXTURES[0]
    for what, sql, warning in (
            ("nostrings", "DROP TABLE StringIds", "no StringIds table: kernel names are reported as [unknown]"),
            ("nopid", "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN globalPid",
             "has no globalPid column: kernels cannot be told apart by process")):
        db_path = work / f"{what}.sqlite"
        shutil.copy(source, db_path)
        db = sqlite3.connect(db_path)
        db.execute(sql)
        db.commit()
        db.close()
        r = run(db_path, "-o", work / f"out_{what}")
        assert r.returncode == 0, r.stderr
        assert warning in r.stderr, r.stderr
    r = run(source, "-o", work / "out_whole")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
