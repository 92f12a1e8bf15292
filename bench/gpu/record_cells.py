"""A record's folders from device calls of bench/gpu/cells.sh, as every matrix record keeps them:
    python3 -m bench.gpu.record_cells --out bench/results/NAME CALL_DIR [CALL_DIR ...]
Each CALL_DIR is what one call brought back (the run's files_at): per cell NAME/results.tgz and
NAME.log, and gpu_start.txt / gpu_end.txt where the call's command wrote them. The calls are
numbered in the order given; cell NAME of call N becomes callN-NAME/ with matrix.json, raw.json.xz
(xz -9), clocks.csv, run.log (the cell's log), worker_lines.log (every `gpuyield` line of the
cell's worker logs but the gate's start-up lines: each trial's end and each change), cells.md
(matrix_report over corun and every other setup the cell ran), round_ratios.txt, arm_split.txt and
lp_cycles.txt (those tools' output, or their one-line refusal); the calls' gpu_start_callN.txt and
gpu_end_callN.txt; and not_run_callN.txt where a FILL=1 call left cells for the next one. A cell
whose matrix did not finish (no raw.json: cut by its timeout, or failed) keeps its log alone, and
the output says so.
Everything is written in a folder beside OUT and moved into place at the end: a bad call folder
leaves nothing behind, and an existing OUT/callN-NAME is never overwritten.
The README (what ran, what it shows) stays the recorder's to write."""
import argparse
import glob
import io
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

from . import raw_record

ANALYSES = ("round_ratios", "arm_split", "lp_cycles")
ALONE = ("hp_alone", "lp_alone")


class RecordError(Exception):
    pass


def cells_of(call_dir):
    """[(name, results.tgz, log or None)] of a call folder, in name order."""
    if not os.path.isdir(call_dir):
        raise RecordError(f"{call_dir}: no such folder (give the folders a device call brought back)")
    found = sorted(glob.glob(os.path.join(call_dir, "*", "results.tgz")))
    if not found:
        raise RecordError(f"{call_dir}: no NAME/results.tgz in it: not the output of bench/gpu/cells.sh")
    out = []
    for tgz in found:
        name = os.path.basename(os.path.dirname(tgz))
        log = os.path.join(call_dir, f"{name}.log")
        out.append((name, tgz, log if os.path.exists(log) else None))
    return out


def matrix_folder(tgz, into):
    """Extract a cell's results.tgz into INTO and return its matrix folder (the one with raw.json)."""
    try:
        with tarfile.open(tgz) as t:
            members = [m for m in t.getmembers() if m.isfile() or m.isdir()]
            for m in members:
                if m.name.startswith("/") or ".." in m.name.split("/"):
                    raise RecordError(f"{tgz}: member {m.name!r} leaves the folder: refused")
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.12+ asks for one
            t.extractall(into, members=members, **safe)
    except (OSError, tarfile.TarError) as e:
        raise RecordError(f"{tgz}: cannot read it: {' '.join(str(e).split())}") from e  # one line
    raws = sorted(glob.glob(os.path.join(into, "**", "raw.json"), recursive=True))
    return os.path.dirname(raws[0]) if raws else None


def setups_of(folder):
    """corun and every other setup the cell ran but the alone ones and the learnings, in the order
    of the matrix's --setups (the segments run them shuffled)."""
    raw = raw_record.load(folder)
    ran = {seg["setup"] for seg in raw["segments"]}
    named = list((raw.get("args") or {}).get("setups") or []) + sorted(ran)
    seen = []
    for s in named:
        if s in ran and s not in ALONE and not s.endswith("_learn") and s not in seen:
            seen.append(s)
    return (["corun"] if "corun" in seen else []) + [s for s in seen if s != "corun"]


def tool_output(module, folder):
    """What python3 -m bench.gpu.MODULE FOLDER prints, or its refusal."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    r = subprocess.run([sys.executable, "-m", f"bench.gpu.{module}", folder], cwd=root,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    return r.stdout if r.returncode == 0 else f"{module}: exit {r.returncode}: {r.stdout.strip()}\n"


def worker_lines(folder):
    lines = []
    for log in sorted(glob.glob(os.path.join(folder, "*.log"))):
        with open(log, errors="replace") as f:
            lines += [ln for ln in f if "gpuyield" in ln and "gates its" not in ln]
    return "".join(lines)


def record_cell(src, log, dest):
    os.makedirs(dest)
    for name in ("matrix.json", "clocks.csv"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copy(os.path.join(src, name), dest)
    with open(os.path.join(src, "raw.json"), "rb") as f, lzma.open(os.path.join(dest, "raw.json.xz"), "wb",
                                                                    preset=9) as out:
        shutil.copyfileobj(f, out)
    if log:
        shutil.copy(log, os.path.join(dest, "run.log"))
    with open(os.path.join(dest, "worker_lines.log"), "w") as f:
        f.write(worker_lines(src))
    setups = setups_of(src)
    if os.path.exists(os.path.join(src, "matrix.json")) and setups:
        from . import matrix_report
        buf = io.StringIO()
        try:
            buf.write(matrix_report.report([src], setups) + "\n")
        except matrix_report.ReportError as e:
            buf.write(f"matrix_report: {e}\n")
        with open(os.path.join(dest, "cells.md"), "w") as f:
            f.write(buf.getvalue())
    for module in ANALYSES:
        with open(os.path.join(dest, f"{module}.txt"), "w") as f:
            f.write(tool_output(module, src))
    return setups


def record(call_dirs, out):
    plan = [(n, cells_of(d)) for n, d in enumerate(call_dirs, 1)]
    for n, cells in plan:
        for name, _, _ in cells:
            if os.path.exists(os.path.join(out, f"call{n}-{name}")):
                raise RecordError(f"{out}/call{n}-{name} exists: record into another folder, or remove it")
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".record-", dir=parent)
    done = []
    try:
        for (n, cells), call_dir in zip(plan, call_dirs):
            for side in ("start", "end"):
                src = os.path.join(call_dir, f"gpu_{side}.txt")
                if os.path.exists(src):
                    shutil.copy(src, os.path.join(stage, f"gpu_{side}_call{n}.txt"))
            if os.path.exists(os.path.join(call_dir, "not_run.txt")):
                shutil.copy(os.path.join(call_dir, "not_run.txt"), os.path.join(stage, f"not_run_call{n}.txt"))
            for name, tgz, log in cells:
                dest = os.path.join(stage, f"call{n}-{name}")
                with tempfile.TemporaryDirectory() as tmp:
                    src = matrix_folder(tgz, tmp)
                    if src is None:  # cut by its timeout, or failed: its log says where it stopped
                        os.makedirs(dest)
                        if log:
                            shutil.copy(log, os.path.join(dest, "run.log"))
                        done.append(f"call{n}-{name}: no raw.json, the cell's matrix did not finish: only its log "
                                    "kept (run.log); say so in the README")
                        continue
                    setups = record_cell(src, log, dest)
                done.append(f"call{n}-{name} ({', '.join(setups) or 'no setup'})")
        os.makedirs(out, exist_ok=True)
        for entry in sorted(os.listdir(stage)):
            os.replace(os.path.join(stage, entry), os.path.join(out, entry))
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return done


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.record_cells", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the record's folder, e.g. bench/results/2026-12-08-h100-sweep")
    p.add_argument("calls", nargs="+", metavar="CALL_DIR", help="what each device call brought back, in call order")
    args = p.parse_args(argv)
    try:
        done = record(args.calls, args.out)
    except (RecordError, raw_record.RawRecordError) as e:
        print(f"record_cells: {e}", file=sys.stderr)
        return 1
    for line in done:
        print(f"record_cells: {args.out}/{line}")
    print(f"record_cells: {len(done)} cell(s); the README (what ran, what it shows) is yours to write")
    return 0


if __name__ == "__main__":
    sys.exit(main())
