"""A record's folders from device calls of bench/gpu/cells.sh, as every matrix record keeps them:
    python3 -m bench.gpu.record_cells --out bench/results/NAME CALL_DIR [CALL_DIR ...]
Each CALL_DIR is what one call brought back (the run's files_at): cells.tar (cells.sh packs every
cell's NAME/results.tgz and NAME.log in it) or those files unpacked, and gpu_start.txt / gpu_end.txt
where the call's command wrote them. The calls are
numbered in the order given; cell NAME of call N becomes callN-NAME/ with matrix.json, raw.json.xz
(xz -9), clocks.csv, run.log (the cell's log), worker_lines.log (every `gpuyield` line of the
cell's worker logs but the gate's start-up lines: each trial's end and each change), cells.md
(matrix_report over corun and every other setup the cell ran), round_ratios.txt, arm_split.txt and
lp_cycles.txt (those tools' output, or their one-line refusal); the calls' gpu_start_callN.txt and
gpu_end_callN.txt; not_run_callN.txt where a FILL=1 call left cells for the next one; callN.log
(the call's output, where its command teed it) and gate_bench_callN.json (gate-bench on the host). A cell
whose matrix did not finish (no raw.json: cut by its timeout, or failed) keeps its log alone, and
the output says so.
Everything is written in a folder beside OUT and moved into place at the end: a bad call folder
leaves nothing behind, and nothing in OUT is overwritten (a sweep recorded in batches numbers the
next batch's calls on with --first-call N).
The README (what ran, what it shows) stays the recorder's to write."""
import argparse
import glob
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

from . import matrix_report, raw_record

ANALYSES = ("round_ratios", "arm_split", "lp_cycles")
ALONE = ("hp_alone", "lp_alone")


class RecordError(Exception):
    pass


def cells_of(call_dir, label=None):
    """[(name, results.tgz or None, log or None)] of a call folder, in name order: every NAME/ that
    cells.sh made with its results.tgz or its NAME.log (run_all.sh can stop before it packs).
    LABEL names the folder in errors (the call's, where CALL_DIR is its cells.tar unpacked)."""
    label = label or call_dir
    if not os.path.isdir(call_dir):
        raise RecordError(f"{call_dir}: no such folder (give the folders a device call brought back)")
    out = []
    for name in cell_names(call_dir):
        tgz, log = os.path.join(call_dir, name, "results.tgz"), os.path.join(call_dir, f"{name}.log")
        if os.path.exists(tgz) or os.path.exists(log):
            out.append((name, tgz if os.path.exists(tgz) else None, log if os.path.exists(log) else None))
    if not out:
        raise RecordError(f"{label}: no NAME/results.tgz or NAME.log of a cell in it: not the output of "
                          "bench/gpu/cells.sh")
    return out


CALL_FILES = ("call.log",)  # the call's own log (its command tees cells.sh's output there), not a cell's


def cell_names(folder):
    """The cells a call folder holds, in name order: every NAME/ folder and every NAME.log (a cell cut
    before run_all.sh made its folder's results.tgz has its log alone)."""
    names = set()
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        if os.path.isdir(path):
            names.add(entry)
        elif entry.endswith(".log") and entry not in CALL_FILES:
            names.add(entry[:-len(".log")])
    return sorted(names)


def extract(archive, into):
    """Extract ARCHIVE's files and folders into INTO, refusing a member that would leave it."""
    try:
        with tarfile.open(archive) as t:
            members = [m for m in t.getmembers() if m.isfile() or m.isdir()]
            for m in members:
                if m.name.startswith("/") or ".." in m.name.split("/"):
                    raise RecordError(f"{archive}: member {m.name!r} leaves the folder: refused")
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.12+ asks for one
            t.extractall(into, members=members, **safe)
    except (OSError, tarfile.TarError) as e:
        raise RecordError(f"{archive}: cannot read it: {' '.join(str(e).split())}") from e  # one line


def unpacked(call_dir, into):
    """The folder holding a call's cells: its cells.tar extracted into INTO where it has one (a device
    call brings back at most 8 files, so cells.sh packs them), else CALL_DIR itself."""
    archive = os.path.join(call_dir, "cells.tar")
    if not os.path.exists(archive):
        return call_dir
    os.makedirs(into)
    extract(archive, into)
    # a cell cells.sh could not append stays beside the archive, unpacked: taken too, never dropped
    packed = set(cell_names(into))
    for name in cell_names(call_dir):
        if name in packed:
            continue
        if os.path.isdir(os.path.join(call_dir, name)):
            shutil.copytree(os.path.join(call_dir, name), os.path.join(into, name))
        if os.path.exists(os.path.join(call_dir, f"{name}.log")):
            shutil.copyfile(os.path.join(call_dir, f"{name}.log"), os.path.join(into, f"{name}.log"))
    return into


def matrix_folder(tgz, into):
    """Extract a cell's results.tgz into INTO and return its matrix folder (the one with raw.json)."""
    extract(tgz, into)
    raws = sorted(glob.glob(os.path.join(into, "**", "raw.json"), recursive=True))
    return os.path.dirname(raws[0]) if raws else None


def setups_of(raw):
    """corun and every other setup the cell ran but the alone ones and the learnings, in the order
    of the matrix's --setups (the segments run them shuffled)."""
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


def record_cell(src, raw, log, dest):
    os.makedirs(dest)
    for name in ("matrix.json", "clocks.csv"):
        if os.path.exists(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(dest, name))
    with open(os.path.join(src, "raw.json"), "rb") as f, lzma.open(os.path.join(dest, "raw.json.xz"), "wb",
                                                                    preset=9) as out:
        shutil.copyfileobj(f, out)
    if log:
        shutil.copyfile(log, os.path.join(dest, "run.log"))
    with open(os.path.join(dest, "worker_lines.log"), "w") as f:
        f.write(worker_lines(src))
    setups = setups_of(raw)
    if os.path.exists(os.path.join(src, "matrix.json")) and setups:
        try:
            table = matrix_report.report([src], setups)
        except matrix_report.ReportError as e:
            table = f"matrix_report: {e}"
        with open(os.path.join(dest, "cells.md"), "w") as f:
            f.write(table + "\n")
    for module in ANALYSES:
        with open(os.path.join(dest, f"{module}.txt"), "w") as f:
            f.write(tool_output(module, src))
    return setups


# A call's own files, kept under the call's number where it brought them back: its GPU states, the
# cells it left for the next call (FILL=1), its output, the host CPU's gate-bench figures.
CALL_KEPT = (("gpu_start.txt", "gpu_start_call{n}.txt"), ("gpu_end.txt", "gpu_end_call{n}.txt"),
             ("not_run.txt", "not_run_call{n}.txt"), ("call.log", "call{n}.log"),
             ("gate_bench.json", "gate_bench_call{n}.json"))


def entries(plan):
    """The names a record's calls write, per call: its own files kept, its cells."""
    return [name for n, cells in plan for name in
            [kept.format(n=n) for _, kept in CALL_KEPT] + [f"call{n}-{cell}" for cell, _, _ in cells]]


def unfinished(dest, log, why, done, label):
    """A cell whose matrix did not finish: its log alone, and a line saying so."""
    os.makedirs(dest)
    if log:
        shutil.copyfile(log, os.path.join(dest, "run.log"))
    done.append(f"{label}: {why}: only its log kept (run.log); say so in the README")


def record(call_dirs, out, first=1):
    with tempfile.TemporaryDirectory() as unpack:
        for d in call_dirs:
            if not os.path.isdir(d):
                raise RecordError(f"{d}: no such folder (give the folders a device call brought back)")
        cell_dirs = [unpacked(d, os.path.join(unpack, str(n))) for n, d in enumerate(call_dirs)]
        return record_unpacked(call_dirs, cell_dirs, out, first)


def record_unpacked(call_dirs, cell_dirs, out, first):
    plan = [(n, cells_of(d, label)) for n, (d, label) in enumerate(zip(cell_dirs, call_dirs), first)]
    if os.path.exists(out) and not os.path.isdir(out):
        raise RecordError(f"--out {out} is a file: name the record's folder")
    taken = [e for e in entries(plan) if os.path.exists(os.path.join(out, e))]
    if taken:
        raise RecordError(f"{out} already holds {', '.join(taken)}: record into another folder, or number these "
                          f"calls on with --first-call")
    parent = os.path.dirname(os.path.abspath(out))
    made_parent = not os.path.exists(parent)
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".record-", dir=parent)
    done, moved = [], False
    try:
        for (n, cells), call_dir, cell_dir in zip(plan, call_dirs, cell_dirs):
            for name, kept in CALL_KEPT:
                if os.path.isfile(os.path.join(call_dir, name)):
                    shutil.copyfile(os.path.join(call_dir, name), os.path.join(stage, kept.format(n=n)))
            for name, tgz, log in cells:
                dest, label = os.path.join(stage, f"call{n}-{name}"), f"call{n}-{name}"
                if tgz is None:  # run_all.sh stopped before it packed
                    unfinished(dest, log, "no results.tgz", done, label)
                    continue
                with tempfile.TemporaryDirectory() as tmp:
                    try:
                        src = matrix_folder(tgz, tmp)
                    except RecordError as e:  # named as the call brought it, not by the unpacked copy
                        raise RecordError(str(e).replace(os.path.join(cell_dir, ""), os.path.join(call_dir, "cells.tar: "))
                                          if cell_dir != call_dir else str(e)) from e
                    if src is None:  # cut by its timeout, or failed: its log says where it stopped
                        unfinished(dest, log, "no raw.json, the cell's matrix did not finish", done, label)
                        continue
                    try:
                        raw = raw_record.load(src)
                    except raw_record.RawRecordError as e:  # written while it was cut
                        unfinished(dest, log, f"its raw.json cannot be read ({' '.join(str(e).split())[-120:]})",
                                   done, label)
                        continue
                    setups = record_cell(src, raw, log, dest)
                done.append(f"{label} ({', '.join(setups) or 'no setup'})")
        os.makedirs(out, exist_ok=True)
        moved = True
        for entry in sorted(os.listdir(stage)):
            os.replace(os.path.join(stage, entry), os.path.join(out, entry))
    finally:
        shutil.rmtree(stage, ignore_errors=True)
        if not moved and made_parent:
            shutil.rmtree(parent, ignore_errors=True)
    return done


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.record_cells", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the record's folder, e.g. bench/results/2026-12-08-h100-sweep")
    p.add_argument("--first-call", type=int, default=1, metavar="N",
                   help="the number of the first call given (a sweep recorded in batches: the next batch's)")
    p.add_argument("calls", nargs="+", metavar="CALL_DIR", help="what each device call brought back, in call order")
    args = p.parse_args(argv)
    if args.first_call < 1:
        p.error(f"--first-call {args.first_call}: calls are numbered from 1")
    try:
        done = record(args.calls, args.out, args.first_call)
    except (RecordError, raw_record.RawRecordError) as e:
        print(f"record_cells: {e}", file=sys.stderr)
        return 1
    except (OSError, subprocess.SubprocessError) as e:
        print(f"record_cells: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    for line in done:
        print(f"record_cells: {args.out}/{line}")
    print(f"record_cells: {len(done)} cell(s); the README (what ran, what it shows) is yours to write")
    return 0


if __name__ == "__main__":
    sys.exit(main())
