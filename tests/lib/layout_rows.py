#!/usr/bin/env python3
"""Checks that the rows of controller/layout_stamp.h (GY_SEGMENT_FIELDS, GY_DEVICE_SLOT_FIELDS,
GY_PROC_SLOT_FIELDS, the guard's) name every member of the shared structures of controller/segment_layout.h
(and guarded_layout.h, which it includes),
in their order. The layout stamp hashes the rows' offsets and sizes; C cannot list a structure's
members, so a field added without its row would otherwise leave the stamp blind to it.
  layout_rows.py [CONTROLLER_DIR]     prints "ok N fields", or each difference and exits 1
"""
import re
import sys

STRUCTS = {"gy_segment": "GY_SEGMENT_FIELDS", "gy_device_slot": "GY_DEVICE_SLOT_FIELDS",
           "gy_proc_slot": "GY_PROC_SLOT_FIELDS", "gy_guard": "GY_GUARD_FIELDS",
           "gy_guard_window": "GY_GUARD_WINDOW_FIELDS", "gy_guard_trial_end": "GY_GUARD_TRIAL_END_FIELDS"}


def without_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def members(layout, struct):
    """Member names of `struct NAME { ... };` in declaration order (one declarator each)."""
    m = re.search(r"^struct %s \{(.*?)^\}" % struct, layout, flags=re.S | re.M)
    if not m:
        sys.exit(f"layout_rows.py: no 'struct {struct} {{' in segment_layout.h")
    body = "\n".join(line for line in m.group(1).splitlines() if not line.lstrip().startswith("#"))
    names = []
    for decl in body.split(";"):
        decl = re.sub(r"__attribute__\s*\(\(.*?\)\)", " ", decl).strip()
        decl = re.sub(r"(\[[^\]]*\]\s*)+$", "", decl).strip()  # array dimensions
        if decl:
            names.append(re.findall(r"\w+", decl)[-1])
    return names


def rows(stamp, macro):
    m = re.search(r"#define %s\(X\)([^\n]*)" % macro, stamp.replace("\\\n", " "))  # continuation lines joined
    if not m:
        sys.exit(f"layout_rows.py: no {macro}(X) in layout_stamp.h")
    return re.findall(r"X\(\s*\w+\s*,\s*(\w+)\s*\)", m.group(1))


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "controller"
    layout = "\n".join(without_comments(open(f"{folder}/{name}").read())
                        for name in ("segment_layout.h", "guarded_layout.h"))
    stamp = without_comments(open(f"{folder}/layout_stamp.h").read())
    bad, count = [], 0
    for struct, macro in STRUCTS.items():
        have, listed = members(layout, struct), rows(stamp, macro)
        count += len(have)
        if have != listed:
            bad.append(f"struct {struct} has the members {have}\n  but {macro} (layout_stamp.h) lists {listed}:\n"
                       f"  give every member its row, in order, so that the layout stamp covers it")
    if bad:
        print("\n".join(bad))
        return 1
    print(f"ok {count} fields")
    return 0


if __name__ == "__main__":
    sys.exit(main())
