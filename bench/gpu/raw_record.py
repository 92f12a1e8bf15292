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
