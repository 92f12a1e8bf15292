"""gpuyield.plot: figures from real files written here (run_exp per-job CSVs, an nsight-parser
OUTDIR, a sweep RESULTS.json), checked through the Figure objects the functions return, and the
CLI's PNGs and exit statuses. Needs gpuyield on PYTHONPATH (tests/suites/70-plot.sh sets it)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpuyield import plot

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JCT_HEADER = "job,start_ns,end_ns,jct_ms,drain_wait_ns,drained,gpu_mem_peak_bytes,gpu_mem_reserved_peak_bytes\n"


def write_jct(path, starts_ns, jcts_ms):
    rows = [f"{i},{s},{s + int(j * 1e6)},{j},0,1,100,200\n" for i, (s, j) in enumerate(zip(starts_ns, jcts_ms))]
    path.write_text(JCT_HEADER + "".join(rows))
    return path


def write_parser_outdir(outdir, models):
    """models: {(name, pid): [(issue_start, issue_end, exec_start, exec_end), ...]} -> nsight-parser's layout."""
    outdir.mkdir()
    summary = {"models": []}
    for (name, pid), kernels in models.items():
        lines = ["IssueStart,IssueEnd,ExecutionStart,ExecutionEnd,KernelDur,QueueDelay,Stream,Name"]
        for i0, i1, e0, e1 in kernels:
            issued = i0 is not None
            lines.append(f"{i0 if issued else ''},{i1 if issued else ''},{e0},{e1},{e1 - e0},"
                         f"{e0 - i1 if issued else ''},7,\"void k<1, 2>(int)\"")
        (outdir / f"{name}_{pid}.csv").write_text("\n".join(lines) + "\n")
        summary["models"].append({"name": name, "pid": pid, "kernels": len(kernels)})
    (outdir / "summary.json").write_text(json.dumps(summary))
    return outdir


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "gpuyield.plot", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=os.environ.copy())


def is_png(path):
    return path.is_file() and path.read_bytes()[:8] == PNG_MAGIC


# ---------------------------------------------------------------- jct / cdf

def test_jct_figure_one_series_per_file_from_the_earliest_start(tmp_path):
    a = write_jct(tmp_path / "model_A.csv", [5_000_000_000, 6_000_000_000, 7_500_000_000], [30.0, 31.5, 29.0])
    b = write_jct(tmp_path / "model_B.csv", [4_000_000_000, 5_000_000_000], [18.0, 40.25])
    fig = plot.jct_figure([a, b])
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["model_A", "model_B"]
    assert np.allclose(lines[0].get_xdata(), [1.0, 2.0, 3.5])      # seconds after B's first job
    assert np.allclose(lines[1].get_xdata(), [0.0, 1.0])
    assert np.allclose(lines[0].get_ydata(), [30.0, 31.5, 29.0])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["model_A", "model_B"]


def test_cdf_figure(tmp_path):
    a = write_jct(tmp_path / "hp.csv", [1, 2, 3, 4], [4.0, 1.0, 3.0, 2.0])
    fig = plot.cdf_figure([a])
    (line,) = fig.axes[0].get_lines()
    assert np.allclose(line.get_xdata(), [1, 2, 3, 4]) and np.allclose(line.get_ydata(), [0.25, 0.5, 0.75, 1.0])
    assert "p50 2.0 ms" in line.get_label() and "p99 4.0 ms" in line.get_label()


def test_jct_and_cdf_cli_write_pngs(tmp_path):
    a = write_jct(tmp_path / "model_A.csv", [1_000, 2_000_000], [3.0, 4.0])
    b = write_jct(tmp_path / "model_B.csv", [500, 3_000_000], [1.0, 2.0])
    for command in ("jct", "cdf"):
        out = tmp_path / "plots" / f"{command}.png"
        r = run_cli(command, a, b, "-o", out)
        assert r.returncode == 0, r.stderr
        assert is_png(out)


def write_summary(outdir, simulated, models):
    """run_exp's summary.json (the keys the plots read): models = [(name, priority), ...]."""
    summary = {"config": "/x/exp.json", "simulated": simulated, "outcome": "completed",
               "models": [{"name": n, "priority": p, "csv": f"relative/dir/{n}.csv", "jobs": 2} for n, p in models]}
    if simulated:
        summary["note"] = "simulated: a stand-in worker on the fake GPU driver"
    (outdir / "summary.json").write_text(json.dumps(summary))


def figure_texts(fig):
    return [t.get_text() for t in fig.texts]


@pytest.mark.parametrize("figure", ["jct", "cdf"])
def test_simulated_run_says_so_and_legend_gives_priorities(tmp_path, figure):
    """issue 28: a plot of a simulated run says "simulated"; the legend gives each model's priority
    (both from run_exp's summary.json beside the CSVs)."""
    a = write_jct(tmp_path / "model_A.csv", [1_000, 2_000_000], [3.0, 4.0])
    b = write_jct(tmp_path / "model_B.csv", [500, 3_000_000], [1.0, 2.0])
    write_summary(tmp_path, True, [("model_A", 0), ("model_B", 1)])
    fig = (plot.jct_figure if figure == "jct" else plot.cdf_figure)([a, b])
    ax = fig.axes[0]
    assert "SIMULATED" in ax.get_title()
    assert any("SIMULATED" in t and "fake GPU driver" in t for t in figure_texts(fig)), figure_texts(fig)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("model_A (priority 0") and legend[1].startswith("model_B (priority 1"), legend
    if figure == "cdf":
        assert legend[1] == "model_B (priority 1, p50 1.0 ms, p99 2.0 ms)", legend


def test_measured_run_is_not_marked_simulated(tmp_path):
    a = write_jct(tmp_path / "model_A.csv", [1_000, 2_000_000], [3.0, 4.0])
    write_summary(tmp_path, False, [("model_A", 3)])
    fig = plot.jct_figure([a])
    assert fig.axes[0].get_title() == "Job completion time" and figure_texts(fig) == []
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["model_A (priority 3)"]


def test_mixed_simulated_and_measured_series(tmp_path):
    (tmp_path / "sim").mkdir(), (tmp_path / "gpu").mkdir()
    a = write_jct(tmp_path / "sim" / "hp.csv", [1_000, 2_000_000], [3.0, 4.0])
    b = write_jct(tmp_path / "gpu" / "hp.csv", [500, 3_000_000], [1.0, 2.0])
    c = write_jct(tmp_path / "other.csv", [500, 3_000_000], [1.0, 2.0])     # no summary.json: the stem alone
    write_summary(tmp_path / "sim", True, [("hp", 1)])
    write_summary(tmp_path / "gpu", False, [("hp", 1)])
    fig = plot.jct_figure([a, b, c])
    assert "some series SIMULATED" in fig.axes[0].get_title()
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [
        "hp (priority 1, simulated)", "hp (priority 1)", "other"]


@pytest.mark.parametrize("summary", ["{", "[]", '{"models": 3}', '{"simulated": true, "models": [{"name": "x"}]}'])
def test_unusable_summary_is_ignored(tmp_path, summary):
    a = write_jct(tmp_path / "model_A.csv", [1_000, 2_000_000], [3.0, 4.0])
    (tmp_path / "summary.json").write_text(summary)
    fig = plot.jct_figure([a])
    assert fig.axes[0].get_title() == "Job completion time"
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["model_A"]


@pytest.mark.parametrize("content,message", [
    (None, "no such file"),
    ("", "empty file"),
    (JCT_HEADER, "no jobs"),
    ("a,b,c\n1,2,3\n", "lacks column"),
    (JCT_HEADER + "0,abc,2,3.0,0,1,0,0\n", "not a number"),
    (JCT_HEADER + "0,1\n", "fewer than the header"),
])
@pytest.mark.parametrize("command", ["jct", "cdf"])
def test_bad_jct_inputs_exit_2(tmp_path, content, message, command):
    path = tmp_path / "bad.csv"
    if content is not None:
        path.write_text(content)
    out = tmp_path / "out.png"
    r = run_cli(command, path, "-o", out)
    assert r.returncode == 2
    assert message in r.stderr and str(path) in r.stderr
    assert not out.exists()
    with pytest.raises(plot.PlotInputError):
        (plot.jct_figure if command == "jct" else plot.cdf_figure)([path])


# ---------------------------------------------------------------- kernels

def test_kernels_in_flight_counts():
    table = {"IssueStart": np.array([0.0, 5.0, np.nan]), "ExecutionStart": np.array([10.0, 20.0, 25.0]),
             "ExecutionEnd": np.array([20.0, 30.0, 26.0])}
    times, counts = plot.kernels_in_flight(table)
    # issued at 0 and 5; the third (no launch call) counts from its start, 25; finishes at 20, 26, 30
    assert list(times) == [0, 5, 20, 25, 26, 30]
    assert list(counts) == [1, 2, 1, 2, 1, 0]


def test_kernels_figures(tmp_path):
    outdir = write_parser_outdir(tmp_path / "parsed", {
        ("model_A", 11): [(0, 10, 50, 150), (20, 30, 150, 400), (40, 45, 400, 410)],
        ("model_B", 22): [(None, None, 500, 520), (600, 610, 700, 900)],
    })
    figures = plot.kernels_figures(outdir)
    assert set(figures) == {"kernels_in_flight", "queue_delay", "kernel_duration_cdf"}
    in_flight = figures["kernels_in_flight"].axes[0].get_lines()
    assert [line.get_label() for line in in_flight] == ["model_A_11", "model_B_22"]
    assert max(in_flight[0].get_ydata()) == 3
    queue = figures["queue_delay"].axes[0].get_lines()
    assert len(queue) == 2
    assert np.allclose(queue[0].get_ydata(), np.array([40, 120, 355]) / 1e6)
    assert np.allclose(queue[1].get_ydata(), np.array([90]) / 1e6)       # B's first kernel has no launch call
    cdf = figures["kernel_duration_cdf"].axes[0].get_lines()
    assert len(cdf) == 2 and np.allclose(cdf[0].get_xdata(), np.array([10, 100, 250]) / 1e3)


def test_kernels_cli(tmp_path):
    outdir = write_parser_outdir(tmp_path / "parsed", {("m", 1): [(0, 1, 2, 3), (1, 2, 3, 9)]})
    r = run_cli("kernels", outdir, "-o", tmp_path / "plots")
    assert r.returncode == 0, r.stderr
    for name in ("kernels_in_flight", "queue_delay", "kernel_duration_cdf"):
        assert is_png(tmp_path / "plots" / f"{name}.png")


def test_kernels_on_real_nsight_parser_output(tmp_path):
    """End to end through nsight-parser when it is built (build/bin or $NSIGHT_PARSER)."""
    parser = Path(os.environ.get("NSIGHT_PARSER", ROOT / "build" / "bin" / "nsight-parser"))
    if not parser.is_file():
        pytest.skip(f"{parser} not built")
    sys.path.insert(0, str(ROOT / "tests" / "python"))
    from nsys_report import Report
    rep = Report()
    rep.process(77, "python3")
    for i in range(50):
        rep.launch(77, i * 1000, i * 1000 + 100, corr=i + 1)
        rep.kernel(77, i * 1000 + 150 + i, i * 1000 + 900, corr=i + 1)
    rep.write(tmp_path / "rep.sqlite")
    r = subprocess.run([parser, tmp_path / "rep.sqlite", "-o", tmp_path / "parsed"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    figures = plot.kernels_figures(tmp_path / "parsed")
    (queue,) = figures["queue_delay"].axes[0].get_lines()
    assert np.allclose(queue.get_ydata(), (np.arange(50) + 50) / 1e6)


def test_bad_kernels_inputs_exit_2(tmp_path):
    r = run_cli("kernels", tmp_path / "missing", "-o", tmp_path / "plots")
    assert r.returncode == 2 and "no such directory" in r.stderr
    (tmp_path / "empty").mkdir()
    r = run_cli("kernels", tmp_path / "empty", "-o", tmp_path / "plots")
    assert r.returncode == 2 and "summary.json" in r.stderr
    outdir = write_parser_outdir(tmp_path / "parsed", {("m", 1): [(0, 1, 2, 3)]})
    (outdir / "m_1.csv").write_text("IssueStart,IssueEnd,ExecutionStart,ExecutionEnd,KernelDur,QueueDelay\n")
    r = run_cli("kernels", outdir, "-o", tmp_path / "plots")
    assert r.returncode == 2 and "no kernels" in r.stderr
    two = write_parser_outdir(tmp_path / "two", {("m", 1): [(0, 1, 2, 3)], ("n", 2): [(0, 1, 2, 3)]})
    (two / "n_2.csv").unlink()
    r = run_cli("kernels", two, "-o", tmp_path / "plots")
    assert r.returncode == 2 and "n_2.csv" in r.stderr
    assert not (tmp_path / "plots").exists()


# ---------------------------------------------------------------- sweep

def sweep_points():
    points = []
    for n, (p50, p99, thr, harvest) in {1: (1.05, 1.2, 10.0, 0.3), 4: (1.2, 1.5, 20.0, 0.6),
                                        16: (1.6, 2.4, 30.0, 0.9)}.items():
        points.append({"mode": "sync", "n": n, "hp_p50_ratio": p50, "hp_p99_ratio": p99, "lp_throughput": thr,
                       "lp_harvest": harvest})
    for n in (2, 8):
        points.append({"mode": "event", "n": n, "hp_p50_ratio": 1.1, "hp_p99_ratio": 1.3 + n / 10,
                       "lp_throughput": 25.0 + n, "lp_harvest": 0.8})
    return points


def test_sweep_figure(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"points": sweep_points()[::-1]}))      # any order: sorted by N
    fig = plot.sweep_figure(path)
    trade = fig.axes[0]
    labels = [line.get_label() for line in trade.get_lines() if not line.get_label().startswith("_")]
    assert labels == ["sync: HP p99", "sync: HP p50", "event: HP p99", "event: HP p50"]
    sync_p99 = trade.get_lines()[0]
    assert list(sync_p99.get_xdata()) == [10.0, 20.0, 30.0] and list(sync_p99.get_ydata()) == [1.2, 1.5, 2.4]
    assert sorted(t.get_text() for t in trade.texts) == sorted(["N=1", "N=4", "N=16", "N=2", "N=8"])
    by_n = fig.axes[1]
    assert [list(line.get_xdata()) for line in by_n.get_lines()] == [[1, 4, 16], [2, 8]]


def test_sweep_cli(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"points": sweep_points()}))
    r = run_cli("sweep", path, "-o", tmp_path / "sweep.png")
    assert r.returncode == 0, r.stderr
    assert is_png(tmp_path / "sweep.png")


@pytest.mark.parametrize("content,message", [
    (None, "no such file"),
    ("", "empty file"),
    ('{"points": [', "invalid JSON"),
    ('{"points": []}', "at least one point"),
    ('[1, 2]', "at least one point"),
    ('{"points": [{"mode": "sync", "n": 1}]}', "lacks hp_p50_ratio"),
    ('{"points": [{"mode": "fast", "n": 1, "hp_p50_ratio": 1, "hp_p99_ratio": 1, "lp_throughput": 1, '
     '"lp_harvest": 1}]}', "mode"),
    ('{"points": [{"mode": "sync", "n": 0, "hp_p50_ratio": 1, "hp_p99_ratio": 1, "lp_throughput": 1, '
     '"lp_harvest": 1}]}', "points[0].n"),
    ('{"points": [{"mode": "sync", "n": 2, "hp_p50_ratio": "x", "hp_p99_ratio": 1, "lp_throughput": 1, '
     '"lp_harvest": 1}]}', "points[0].hp_p50_ratio"),
])
def test_bad_sweep_inputs_exit_2(tmp_path, content, message):
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content)
    r = run_cli("sweep", path, "-o", tmp_path / "sweep.png")
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert not (tmp_path / "sweep.png").exists()


def test_usage_errors_exit_2(tmp_path):
    assert run_cli().returncode == 2
    assert run_cli("jct", "-o", tmp_path / "x.png").returncode == 2        # no CSV
    assert run_cli("bogus").returncode == 2
