"""Who disturbs the HP's CPUs, per matrix setup: from a kernel trace (tracefs, trace_clock mono) of
ipi:ipi_send_cpu / ipi_send_cpumask and sched:sched_wakeup taken over one matrix invocation, the
wake-ups of tasks on the HP's CPUs by woken task name, and the interrupts sent to those CPUs by
sender and call site, each per second of the setup's windows (a window: one segment's wall_start
to wall_end in raw.json). The HP's CPUs are raw.json's cpus of the *_hp workers (a --pin run).
    python3 -m bench.gpu.wakeup_summary TRACE RAW_DIR OFFSET_S
OFFSET_S: CLOCK_REALTIME minus CLOCK_MONOTONIC on the traced machine (wakeup_trace.sh records it),
which turns the trace's monotonic stamps into raw.json's wall times.
"""
import collections
import re
import sys

from bench.gpu import raw_record

LINE = re.compile(r"^\s*(?P<comm>.*?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+(?P<ts>\d+\.\d+): "
                  r"(?P<event>ipi_send_cpu|ipi_send_cpumask|sched_wakeup): (?P<rest>.*)$")
FIELD = re.compile(r"(\w+)=(\S+)")


def cpus_of_mask(text):
    """'2-3,8' -> {2, 3, 8}."""
    out = set()
    for part in text.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.update(range(int(lo), int(hi) + 1))
        elif part.isdigit():
            out.add(int(part))
    return out


def targets(event, fields):
    if event == "ipi_send_cpu":
        return {int(fields.get("cpu", -1))}
    if event == "ipi_send_cpumask":
        return cpus_of_mask(fields.get("cpumask", ""))
    return {int(fields.get("target_cpu", -1))}


def windows(raw):
    """[(wall_start, wall_end, setup)] of the measured windows, in time order."""
    return sorted((s["wall_start"], s["wall_end"], s["setup"]) for s in raw["segments"]
                  if s.get("round", -1) >= 0 and "wall_start" in s and "wall_end" in s)


def summarize(trace_lines, raw, offset_s):
    """{setup: {"seconds": s, "wakeups": Counter(woken comm), "ipis": Counter((sender, callsite))}}
    counting only what targets the HP's CPUs."""
    hp_cpus = {c for k, v in (raw.get("cpus") or {}).items() if k.endswith("_hp") for c in v}
    wins = windows(raw)
    out = {}
    for start, end, setup in wins:
        s = out.setdefault(setup, {"seconds": 0.0, "wakeups": collections.Counter(), "ipis": collections.Counter()})
        s["seconds"] += end - start
    for line in trace_lines:
        m = LINE.match(line)
        if not m:
            continue
        fields = dict(FIELD.findall(m.group("rest")))
        if not hp_cpus & targets(m.group("event"), fields):
            continue
        t = float(m.group("ts")) + offset_s
        setup = next((w[2] for w in wins if w[0] <= t < w[1]), None)
        if setup is None:
            continue  # between windows: calibration, loading, the harness
        if m.group("event") == "sched_wakeup":
            out[setup]["wakeups"][fields.get("comm", "?")] += 1
        else:
            callsite = fields.get("callsite", "?").split("+")[0]
            out[setup]["ipis"][(m.group("comm").strip(), callsite)] += 1
    return out


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__.strip().splitlines()[-3].strip())
    trace, folder, offset = argv[0], argv[1], float(argv[2])
    raw = raw_record.load_or_exit(folder, "wakeup_summary")
    if not any(k.endswith("_hp") for k in (raw.get("cpus") or {})):
        raise SystemExit(f"wakeup_summary: {folder}'s raw.json names no HP CPUs: run the matrix with --pin")
    with open(trace, errors="replace") as f:
        result = summarize(f, raw, offset)
    for setup, s in sorted(result.items()):
        sec = s["seconds"] or 1.0
        print(f"{setup}: {s['seconds']:.1f} s of windows; on the HP's CPUs, per second:")
        print("  woken: " + ", ".join(f"{c} {n / sec:.0f}" for c, n in s["wakeups"].most_common(8)))
        print("  IPIs:  " + ", ".join(f"{c} via {site} {n / sec:.0f}" for (c, site), n in s["ipis"].most_common(6)))


if __name__ == "__main__":
    main(sys.argv[1:])
