"""Time intervals (ns) of kernels and jobs: their union, and how much of a window it covers."""


def merged(intervals):
    """The union of (start, end) intervals as sorted, disjoint [start, end] lists."""
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def covered(merged_intervals, lo, hi):
    """ns of [lo, hi) covered by merged, sorted intervals."""
    total = 0
    for s, e in merged_intervals:
        if e <= lo:
            continue
        if s >= hi:
            break
        total += min(e, hi) - max(s, lo)
    return total
