"""The per-process counter names of the one table GY_PROC_COUNTERS (controller/segment_layout.h),
in order, as the tests that check status, the Python dict and /metrics against it read them."""
import os
import re

LAYOUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "controller", "segment_layout.h")


def table_counters():
    with open(LAYOUT) as f:
        text = f.read()
    table = text[text.index("#define GY_PROC_COUNTERS(X)"):]
    table = table[:table.index("\n\n")]
    return re.findall(r"X\((\w+),", table)
