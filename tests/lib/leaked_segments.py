#!/usr/bin/env python3
"""Lists this user's test segments (/dev/shm/gpuyield-<uid>-test*) that are really leaked: no
process that made one is alive. A segment is still in use while the test process named in it
(test-<kind>-<pid>...) or its creator (the header's creator_pid and creator_start_time) lives, so
another worktree's suites running beside ours are not counted. Exit 1 when something is leaked.
  leaked_segments.py [--dir DIR] [--except NAME...]
--except: names (as in /dev/shm) left out, e.g. there before the run; --dir: look there instead of
/dev/shm (its own test uses copies, so that a live run beside it never sees them).
"""
import os
import re
import struct
import sys

# The header of struct gy_segment (controller/segment_layout.h, offsets asserted there).
MAGIC = 0x444C454959555047
HEADER = struct.Struct("<QIIIiQ")  # magic, layout_stamp, segment_size, owner_uid, creator_pid, creator_start_time


def start_time(pid):
    """/proc/<pid>/stat's start time (field 22), as controller/proc_identity.c reads it; None
    for a process that is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return int(fields[19]) or 1  # 0 means "absent" in the segment


def alive(pid, started=None):
    if pid <= 0:
        return False
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def leaked(shm_dir, name):
    m = re.match(r"gpuyield-\d+-test-[A-Za-z_]+-(\d+)", name)
    if m and alive(int(m.group(1))):
        return False
    try:
        with open(os.path.join(shm_dir, name), "rb") as f:
            head = f.read(HEADER.size)
    except OSError:
        return False  # removed meanwhile
    if len(head) == HEADER.size:
        magic, _, _, _, pid, started = HEADER.unpack(head)
        if magic == MAGIC and alive(pid, started):
            return False
    return True  # a header we cannot trust has only the name's pid to go by


def main(argv):
    skip = set(argv[argv.index("--except") + 1:]) if "--except" in argv else set()
    shm_dir = argv[argv.index("--dir") + 1] if "--dir" in argv else "/dev/shm"
    prefix = f"gpuyield-{os.getuid()}-test"
    found = sorted(n for n in os.listdir(shm_dir) if n.startswith(prefix) and n not in skip and leaked(shm_dir, n))
    for name in found:
        print(name)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
