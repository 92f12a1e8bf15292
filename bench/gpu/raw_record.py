"""A matrix invocation's raw record in a folder: raw.json as the run wrote it, or compressed as the
records keep it (raw.json.xz since 2026-11-25 16:00 UTC, about a fifth smaller than gzip: every
tracked file travels with each device call, which takes at most 64 MiB; raw.json.gz before)."""
import gzip
import json
import lzma
import os

NAMES = (("raw.json", open), ("raw.json.xz", lzma.open), ("raw.json.gz", gzip.open))


class RawRecordError(Exception):
    """No raw record in the folder, or one that cannot be read (the message says which and why)."""


def raw_path(folder):
    """The folder's raw record: the first of raw.json, raw.json.xz, raw.json.gz there."""
    for name, _ in NAMES:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    raise RawRecordError(f"no raw.json, raw.json.xz or raw.json.gz in {folder}: give a matrix invocation's folder")


def invocation_folders(folder):
    """FOLDER itself where it holds a raw record, else its sub-folders that do (one level down: a
    record of several invocations, as bench.gpu.record_cells writes them)."""
    if not os.path.isdir(folder):
        raise RawRecordError(f"{folder}: no such folder (give matrix invocations' folders or a record of them)")
    holds = lambda d: any(os.path.exists(os.path.join(d, name)) for name, _ in NAMES)
    if holds(folder):
        return [folder]
    found = sorted(os.path.join(folder, n) for n in os.listdir(folder) if holds(os.path.join(folder, n)))
    if not found:
        raise RawRecordError(f"{folder}: no raw.json or raw.json.xz in it or one level down: not a matrix record")
    return found


def load(folder):
    path = raw_path(folder)
    opener = dict((name, o) for name, o in NAMES)[os.path.basename(path)]
    try:
        with opener(path, "rt") as f:
            return json.load(f)
    except (OSError, ValueError, EOFError, lzma.LZMAError) as e:
        raise RawRecordError(f"cannot read {path}: {e}") from e


def load_or_exit(folder, tool):
    """load() for a command-line tool: a missing or unreadable record ends it with one line naming
    the tool (exit 1)."""
    try:
        return load(folder)
    except RawRecordError as e:
        raise SystemExit(f"{tool}: {e}")
