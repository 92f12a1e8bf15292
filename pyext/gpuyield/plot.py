"""Plots of gpuyield runs (matplotlib, Agg backend: no display needed).

    python3 -m gpuyield.plot jct CSV... -o jct.png        JCT over time, one colour per model
    python3 -m gpuyield.plot cdf CSV... -o cdf.png        JCT CDF per model
    python3 -m gpuyield.plot kernels OUTDIR -o DIR        from nsight-parser's OUTDIR: kernels in
                                                          flight over time, queue delay, kernel
                                                          duration CDF (one PNG each in DIR)
    python3 -m gpuyield.plot sweep RESULTS.json -o sweep.png
                                                          high-priority latency vs low-priority
                                                          throughput as the queue bound N varies

CSV is run_exp's per-job file (header job,start_ns,end_ns,jct_ms,...); the legend is the file's
stem, with the model's priority where run_exp's summary.json lies beside the CSV, and a run that
summary.json says was simulated (run_exp --simulate) is marked so in the title and under the plot.
Every *_figure function returns the matplotlib Figure, so it can be used without the CLI.
Bad inputs: a message saying what and where, exit status 2.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, Union

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PathLike = Union[str, "os.PathLike[str]"]

try:
    import matplotlib
    import numpy as np
except ImportError as missing:  # a clear line, not a traceback, for the commonest set-up slip
    sys.exit(f"gpuyield.plot: {missing.name} is not installed for {sys.executable}: install it "
             f"(Debian: python3-matplotlib python3-numpy; pip: matplotlib numpy), or run the plot "
             f"with a python3 that has it")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

JCT_COLUMNS = ("job", "start_ns", "jct_ms")
KERNEL_COLUMNS = ("IssueStart", "IssueEnd", "ExecutionStart", "ExecutionEnd", "KernelDur", "QueueDelay")
SWEEP_KEYS = ("mode", "n", "hp_p50_ratio", "hp_p99_ratio", "lp_throughput", "lp_harvest")
SWEEP_MODES = ("sync", "event", "time")
# Step plots of a million kernels are thinned to this many points (keeping each bin's peak).
MAX_STEP_POINTS = 20000


class PlotInputError(Exception):
    """An input file is missing, empty or malformed; the message says which and how."""


# ---------------------------------------------------------------- reading inputs

def _open_csv(path, required, what):
    path = Path(path)
    if not path.is_file():
        raise PlotInputError(f"{path}: no such file (expected {what})")
    f = open(path, newline="")
    reader = csv.reader(f)
    header = next(reader, None)
    if header is None:
        f.close()
        raise PlotInputError(f"{path}: empty file (expected {what} with a header line)")
    header = [h.strip() for h in header]
    missing = [c for c in required if c not in header]
    if missing:
        f.close()
        raise PlotInputError(f"{path}:1: header lacks column(s) {', '.join(missing)} (expected {what})")
    return f, reader, {name: header.index(name) for name in header}


def _number(text, path, line, column, allow_empty=False):
    text = text.strip()
    if text == "" and allow_empty:
        return math.nan
    try:
        value = float(text)
    except ValueError:
        raise PlotInputError(f"{path}:{line}: column {column} holds {text!r}, not a number") from None
    if not math.isfinite(value):
        raise PlotInputError(f"{path}:{line}: column {column} holds {text!r}, not a finite number")
    return value


def read_jct_csv(path: PathLike) -> dict[str, np.ndarray]:
    """run_exp's per-job CSV -> {"start_ns": array, "jct_ms": array}, rows in file order."""
    what = "run_exp's per-job CSV: job,start_ns,end_ns,jct_ms,..."
    f, reader, col = _open_csv(path, JCT_COLUMNS, what)
    starts, jcts = [], []
    with f:
        for line, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) <= max(col[c] for c in JCT_COLUMNS):
                raise PlotInputError(f"{path}:{line}: {len(row)} fields, fewer than the header's")
            starts.append(_number(row[col["start_ns"]], path, line, "start_ns"))
            jcts.append(_number(row[col["jct_ms"]], path, line, "jct_ms"))
    if not starts:
        raise PlotInputError(f"{path}: no jobs (only a header): was the run long enough to finish a job?")
    return {"start_ns": np.array(starts), "jct_ms": np.array(jcts)}


def read_kernel_table(path: PathLike) -> dict[str, np.ndarray]:
    """One of nsight-parser's <name>_<pid>.csv -> dict of float arrays (NaN where empty)."""
    what = "a table written by nsight-parser"
    f, reader, col = _open_csv(path, KERNEL_COLUMNS, what)
    values = {c: [] for c in KERNEL_COLUMNS}
    with f:
        for line, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) <= max(col[c] for c in KERNEL_COLUMNS):
                raise PlotInputError(f"{path}:{line}: {len(row)} fields, fewer than the header's")
            for c in KERNEL_COLUMNS:
                empty_ok = c in ("IssueStart", "IssueEnd", "QueueDelay")
                values[c].append(_number(row[col[c]], path, line, c, allow_empty=empty_ok))
    if not values["ExecutionStart"]:
        raise PlotInputError(f"{path}: no kernels (only a header)")
    return {c: np.array(v) for c, v in values.items()}


def read_parser_outdir(outdir: PathLike) -> list[tuple[str, dict[str, np.ndarray]]]:
    """nsight-parser's OUTDIR -> [(label, table)], in summary.json's model order."""
    outdir = Path(outdir)
    if not outdir.is_dir():
        raise PlotInputError(f"{outdir}: no such directory (expected nsight-parser's OUTDIR)")
    summary = outdir / "summary.json"
    if not summary.is_file():
        raise PlotInputError(f"{outdir}: no summary.json: not an nsight-parser OUTDIR (run nsight-parser -o {outdir})")
    try:
        models = json.loads(summary.read_text())["models"]
        stems = [f"{m['name']}_{m['pid']}" for m in models]
    except (ValueError, KeyError, TypeError) as e:
        raise PlotInputError(f"{summary}: malformed ({e}): expected nsight-parser's summary.json") from None
    tables = {p.stem: p for p in outdir.glob("*.csv")}
    if not tables:
        raise PlotInputError(f"{outdir}: no <model>_<pid>.csv tables")
    # summary.json's names are raw; file names were made safe: match on the pid suffix.
    ordered = []
    for stem, model in zip(stems, models):
        match = tables.get(stem) or next((p for s, p in sorted(tables.items())
                                          if s.endswith(f"_{model['pid']}")), None)
        if match is None:
            raise PlotInputError(f"{outdir}: summary.json names {stem} but there is no {stem}.csv")
        ordered.append((stem, read_kernel_table(match)))
    return ordered


def read_sweep(path: PathLike) -> list[dict]:
    """RESULTS.json -> list of point dicts, validated."""
    path = Path(path)
    if not path.is_file():
        raise PlotInputError(f"{path}: no such file (expected a sweep RESULTS.json)")
    text = path.read_text()
    if not text.strip():
        raise PlotInputError(f"{path}: empty file (expected {{\"points\": [...]}})")
    try:
        data = json.loads(text)
    except ValueError as e:
        raise PlotInputError(f"{path}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}") from None
    points = data.get("points") if isinstance(data, dict) else None
    if not isinstance(points, list) or not points:
        raise PlotInputError(f"{path}: expected {{\"points\": [{{\"mode\", \"n\", \"hp_p50_ratio\", ...}}, ...]}} "
                             "with at least one point")
    for i, p in enumerate(points):
        if not isinstance(p, dict):
            raise PlotInputError(f"{path}: points[{i}] is not an object")
        missing = [k for k in SWEEP_KEYS if k not in p]
        if missing:
            raise PlotInputError(f"{path}: points[{i}] lacks {', '.join(missing)}")
        if p["mode"] not in SWEEP_MODES:
            raise PlotInputError(f"{path}: points[{i}].mode is {p['mode']!r}: expected \"sync\", \"event\" or \"time\" (n: kernels, or microseconds for time)")
        if not isinstance(p["n"], int) or isinstance(p["n"], bool) or p["n"] < 1:
            raise PlotInputError(f"{path}: points[{i}].n is {p['n']!r}: expected an integer >= 1")
        for k in SWEEP_KEYS[2:]:
            v = p[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise PlotInputError(f"{path}: points[{i}].{k} is {v!r}: expected a finite number")
    return points


def run_meta(path: PathLike) -> dict | None:
    """What run_exp's summary.json beside a per-job CSV says of that CSV's model:
    {"simulated": bool, "priority": int or None}; None where there is no summary.json, it does not
    parse, or it names no model writing a CSV of that name (run_exp's output file names are unique
    within a directory)."""
    path = Path(path)
    try:
        summary = json.loads((path.parent / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict) or not isinstance(summary.get("models"), list):
        return None
    for model in summary["models"]:
        if isinstance(model, dict) and isinstance(model.get("csv"), str) and Path(model["csv"]).name == path.name:
            priority = model.get("priority")
            return {"simulated": summary.get("simulated") is True,
                    "priority": priority if isinstance(priority, int) and not isinstance(priority, bool) else None}
    return None


SIMULATED_NOTE = "SIMULATED: stand-in workers on the fake GPU driver (run_exp --simulate); not a GPU's figures"


# ---------------------------------------------------------------- figures

def _labels(paths, metas, extra=None):
    """Each series' label: the file's stem, then in parentheses its model's priority where known,
    ", simulated" on a simulated series only when the figure mixes simulated and measured ones, and
    the series' own extra notes (extra[i], a list of strings)."""
    mixed = len({bool(m and m["simulated"]) for m in metas}) > 1
    labels = []
    for i, (p, m) in enumerate(zip(paths, metas)):
        notes = []
        if m and m["priority"] is not None:
            notes.append(f"priority {m['priority']}")
        if mixed and m and m["simulated"]:
            notes.append("simulated")
        notes += extra[i] if extra else []
        labels.append(f"{Path(p).stem} ({', '.join(notes)})" if notes else Path(p).stem)
    return labels


def _mark_simulated(fig, ax, title, metas):
    """The title, and where any series comes from a simulated run, SIMULATED in it and a note
    under the plot."""
    simulated = [bool(m and m["simulated"]) for m in metas]
    if any(simulated):
        ax.set_title(f"{title}: SIMULATED" if all(simulated) else f"{title}: some series SIMULATED")
        fig.text(0.5, 0.01, SIMULATED_NOTE, ha="center", va="bottom", fontsize=8, color="tab:red")
        fig.tight_layout(rect=(0, 0.05, 1, 1))
    else:
        ax.set_title(title)
        fig.tight_layout()


def jct_figure(paths: Sequence[PathLike]) -> Figure:
    """JCT (ms) of every job against its start, seconds from the earliest start of all files."""
    if not paths:
        raise PlotInputError("no CSV given")
    runs = [read_jct_csv(p) for p in paths]
    metas = [run_meta(p) for p in paths]
    t0 = min(r["start_ns"].min() for r in runs)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for label, r in zip(_labels(paths, metas), runs):
        ax.plot((r["start_ns"] - t0) / 1e9, r["jct_ms"], marker=".", linewidth=0.8, label=label)
    ax.set_xlabel("job start (s since the first job)")
    ax.set_ylabel("JCT (ms)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    _mark_simulated(fig, ax, "Job completion time", metas)
    return fig


def _cdf(values):
    x = np.sort(np.asarray(values, dtype=float))
    return x, np.arange(1, len(x) + 1) / len(x)


def _nearest_rank(sorted_values, q):
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def cdf_figure(paths: Sequence[PathLike]) -> Figure:
    """Empirical CDF of each file's JCTs; the legend gives p50 and p99."""
    if not paths:
        raise PlotInputError("no CSV given")
    runs = [read_jct_csv(p) for p in paths]
    metas = [run_meta(p) for p in paths]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    cdfs = [_cdf(r["jct_ms"]) for r in runs]
    extra = [[f"p50 {_nearest_rank(x, 0.5):.1f} ms", f"p99 {_nearest_rank(x, 0.99):.1f} ms"] for x, _ in cdfs]
    for label, (x, y) in zip(_labels(paths, metas, extra), cdfs):
        ax.step(x, y, where="post", label=label)
    ax.set_xlabel("JCT (ms)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend()
    _mark_simulated(fig, ax, "JCT distribution", metas)
    return fig


def kernels_in_flight(table: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(times_ns, counts): kernels issued and not yet finished, after each launch or completion.
    A kernel's issue is its launch call's start (its execution start if the call is unknown)."""
    issue = np.where(np.isnan(table["IssueStart"]), table["ExecutionStart"], table["IssueStart"])
    times = np.concatenate([issue, table["ExecutionEnd"]])
    deltas = np.concatenate([np.ones(len(issue)), -np.ones(len(issue))])
    order = np.lexsort((deltas, times))     # at equal times, finish before issue
    return times[order], np.cumsum(deltas[order])


def _thin_steps(times, counts):
    """At most MAX_STEP_POINTS points, each bin keeping its highest count (peaks stay visible)."""
    if len(times) <= MAX_STEP_POINTS:
        return times, counts
    edges = np.linspace(times[0], times[-1], MAX_STEP_POINTS + 1)
    starts = np.unique(np.searchsorted(times, edges[:-1], side="left"))
    starts = starts[starts < len(times)]
    return times[starts], np.maximum.reduceat(counts, starts)


def kernels_figures(outdir: PathLike) -> dict[str, Figure]:
    """From nsight-parser's OUTDIR: {"kernels_in_flight", "queue_delay", "kernel_duration_cdf"}."""
    models = read_parser_outdir(outdir)
    t0 = min(np.nanmin(np.concatenate([t["IssueStart"], t["ExecutionStart"]])) for _, t in models)
    figures = {}

    fig, ax = plt.subplots(figsize=(10, 4.5))
    for label, table in models:
        times, counts = _thin_steps(*kernels_in_flight(table))
        ax.step((times - t0) / 1e9, counts, where="post", linewidth=0.8, label=label)
    ax.set_xlabel("time (s since the first kernel)")
    ax.set_ylabel("kernels issued, not finished")
    ax.set_title("Queued kernels per model")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    figures["kernels_in_flight"] = fig

    fig, ax = plt.subplots(figsize=(10, 4.5))
    plotted = 0
    for label, table in models:
        known = ~np.isnan(table["QueueDelay"])
        if known.any():
            ax.plot((table["ExecutionStart"][known] - t0) / 1e9, table["QueueDelay"][known] / 1e6, ".",
                    markersize=2, label=label)
            plotted += 1
    if not plotted:
        ax.text(0.5, 0.5, "no launch calls in the report: queue delay unknown", ha="center",
                transform=ax.transAxes)
    ax.set_xlabel("kernel start (s since the first kernel)")
    ax.set_ylabel("queue delay (ms): start - launch call end")
    ax.set_title("Kernel queue delay")
    ax.grid(alpha=0.3)
    if plotted:
        ax.legend(markerscale=5)
    fig.tight_layout()
    figures["queue_delay"] = fig

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, table in models:
        x, y = _cdf(table["KernelDur"] / 1e3)
        ax.step(x, y, where="post", label=f"{label} (median {np.median(x):.1f} us)")
    ax.set_xscale("log")
    ax.set_xlabel("kernel duration (us)")
    ax.set_ylabel("fraction of kernels")
    ax.set_ylim(0, 1.02)
    ax.set_title("Kernel duration CDF")
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    fig.tight_layout()
    figures["kernel_duration_cdf"] = fig
    return figures


def sweep_figure(path: PathLike) -> Figure:
    """Left: HP JCT ratio (p50 dashed, p99 solid) against LP throughput, one curve per mode, each
    point labelled with N. Right: the same against N, with LP harvest on a second axis."""
    points = read_sweep(path)
    fig, (trade, by_n) = plt.subplots(1, 2, figsize=(12, 4.8))
    harvest_axis = by_n.twinx()
    for mode, colour in zip(SWEEP_MODES, ("tab:blue", "tab:orange", "tab:green")):
        pts = sorted((p for p in points if p["mode"] == mode), key=lambda p: p["n"])
        if not pts:
            continue
        n = [p["n"] for p in pts]
        thr = [p["lp_throughput"] for p in pts]
        p50 = [p["hp_p50_ratio"] for p in pts]
        p99 = [p["hp_p99_ratio"] for p in pts]
        trade.plot(thr, p99, "-o", color=colour, label=f"{mode}: HP p99")
        trade.plot(thr, p50, "--s", color=colour, alpha=0.7, label=f"{mode}: HP p50")
        for x, y, k in zip(thr, p99, n):
            trade.annotate(f"N={k}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        by_n.plot(n, p99, "-o", color=colour, label=f"{mode}: HP p99 ratio")
        harvest_axis.plot(n, [p["lp_harvest"] for p in pts], ":^", color=colour, label=f"{mode}: LP harvest")
    trade.axhline(1.0, color="grey", linewidth=0.8)
    trade.set_xlabel("low-priority throughput (jobs/s)")
    trade.set_ylabel("high-priority JCT / standalone JCT")
    trade.set_title("Latency vs throughput as N varies")
    trade.grid(alpha=0.3)
    trade.legend(fontsize=8)
    by_n.set_xscale("log", base=2)
    by_n.set_xlabel("queue bound N (kernels; microseconds for time)")
    by_n.set_ylabel("high-priority p99 JCT ratio")
    harvest_axis.set_ylabel("low-priority harvest")
    by_n.set_title("Effect of N")
    by_n.grid(alpha=0.3)
    lines = by_n.get_lines() + harvest_axis.get_lines()
    by_n.legend(lines, [line.get_label() for line in lines], fontsize=8)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- writing and CLI

def save_figure(fig: Figure, path: PathLike) -> Path:
    """Writes a PNG atomically (a temporary file renamed), so a failure leaves no partial file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".png", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            fig.savefig(f, format="png", dpi=120)
        umask = os.umask(0)     # mkstemp made it 0600: give it the mode a plain open() would
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    finally:
        plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m gpuyield.plot", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("jct", "JCT over time per model"), ("cdf", "JCT CDF per model")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("csv", nargs="+", help="run_exp's per-job CSV files")
        p.add_argument("-o", "--output", required=True, help="PNG to write")
    p = sub.add_parser("kernels", help="kernel-level plots from nsight-parser's OUTDIR")
    p.add_argument("outdir", help="nsight-parser's output directory")
    p.add_argument("-o", "--output", required=True, help="directory for the PNGs")
    p = sub.add_parser("sweep", help="HP latency vs LP throughput as N varies")
    p.add_argument("results", help='RESULTS.json: {"points": [{"mode", "n", "hp_p50_ratio", ...}]}')
    p.add_argument("-o", "--output", required=True, help="PNG to write")
    args = parser.parse_args(argv)
    try:
        if args.command == "jct":
            written = [save_figure(jct_figure(args.csv), args.output)]
        elif args.command == "cdf":
            written = [save_figure(cdf_figure(args.csv), args.output)]
        elif args.command == "sweep":
            written = [save_figure(sweep_figure(args.results), args.output)]
        else:
            out = Path(args.output)
            if out.exists() and not out.is_dir():
                raise PlotInputError(f"-o {out}: exists and is not a directory (kernels writes several PNGs)")
            written = [save_figure(fig, out / f"{name}.png") for name, fig in kernels_figures(args.outdir).items()]
    except PlotInputError as e:
        print(f"gpuyield.plot {args.command}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"gpuyield.plot {args.command}: cannot write {e.filename or args.output}: {e.strerror}",
              file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
