"""Each measured round of each cell on its own: the HP's latency p50 over the plain HP alone's of the
same round, its service median, how many of its jobs ran under an arm other than stop (guarded),
and the LP's throughput over lp_alone's of the same round. A cell's pooled ratio can miss because
of one round; this says which round, and whether an arm ran in it or every job ran stop (then the
miss is the HP's drift between segments, not a cost of the policy). Two host-side facts per setup:
the LP's median unit after the HP's window (the GPU to itself: a slower LP there is the LP's own
process, not the policy's gate) and how busy the CPU taking the GPU's interrupts was (on the H200 a
worker thread that landed there ran its units 7-18 % slower: 2026-11-29-h200-graph-green).
    python3 -m bench.gpu.round_ratios DIR [DIR ...]     (each with raw.json, raw.json.xz or raw.json.gz)
"""
import collections
import sys

from bench.gpu import raw_record
from bench.gpu.stats import nearest_rank


def lp_rate(seg):
    """LP units per second in the HP's window (None without an LP reply that counted)."""
    r = (seg or {}).get("lp_result") or {}
    if not r.get("counted_secs"):
        return None
    return r["counted"] / r["counted_secs"]


def lp_tail_ms(seg):
    """The LP's median unit time (ms) after the HP's window ended, or None (no unit ends there)."""
    r = (seg or {}).get("lp_result") or {}
    done, end = r.get("done_ms") or [], (seg or {}).get("seconds", 0) * 1000
    tail = sorted(b - a for a, b in zip(done, done[1:]) if a > end)
    return tail[(len(tail) - 1) // 2] if tail else None


def irq_cpu_busy(seg):
    """How busy (share) the CPU serving most of the GPU's (nvidia) interrupts was in the window, or None."""
    host = (seg or {}).get("host") or {}
    top = max(host.values(), key=lambda c: c.get("intr_top", {}).get("nvidia", 0), default=None)
    return top["busy"] if top and top.get("intr_top", {}).get("nvidia", 0) > 0 else None


def rounds(raw):
    """{(hp, lp, load): {round: {setup: row}}}; a row: lat_ratio, svc_p50_ms, jobs, off_stop, lp_ratio
    (ratios None where the round lacks its denominator)."""
    by = collections.defaultdict(lambda: collections.defaultdict(dict))
    for seg in raw.get("segments", []):
        if seg.get("round", -1) >= 0:
            by[(seg["hp"], seg["lp"], seg["load"])][seg["round"]][seg["setup"]] = seg
    out = {}
    for cell, per_round in sorted(by.items()):
        out[cell] = {}
        for rnd, setups in sorted(per_round.items()):
            alone = (setups.get("hp_alone") or {}).get("hp_result") or {}
            alone_lat = nearest_rank(alone.get("lat_ms") or [], 50)
            lp_alone = lp_rate(setups.get("lp_alone"))
            rows = {}
            for setup, seg in sorted(setups.items()):
                r = seg.get("hp_result") or {}
                if setup in ("hp_alone", "lp_alone") or not r.get("ok") or not r.get("lat_ms"):
                    continue
                lat = nearest_rank(r["lat_ms"], 50)
                lp = lp_rate(seg)
                rows[setup] = {"lat_ratio": lat / alone_lat if alone_lat else None,
                               "svc_p50_ms": nearest_rank(r.get("svc_ms") or [], 50),
                               "jobs": len(r["lat_ms"]),
                               "off_stop": sum(1 for a in r.get("arms") or [] if a and a != "stop"),
                               "lp_ratio": lp / lp_alone if lp is not None and lp_alone else None,
                               "lp_tail_ms": lp_tail_ms(seg), "irq_cpu_busy": irq_cpu_busy(seg)}
            out[cell][rnd] = {"alone_svc_p50_ms": nearest_rank(alone.get("svc_ms") or [], 50), "setups": rows}
    return out


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def main(argv):
    if not argv:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    for folder in argv:
        for cell, per_round in rounds(raw_record.load_or_exit(folder, "round_ratios")).items():
            print(" + ".join(cell[:2]) + f", {cell[2]}   (latency p50 x alone's of the round; service median, ms)")
            for rnd, row in per_round.items():
                parts = [f"  r{rnd}  alone svc {fmt(row['alone_svc_p50_ms'], '.3f')}"]
                for setup, s in row["setups"].items():
                    arms = f", {s['off_stop']} of {s['jobs']} off stop" if s["off_stop"] else ""
                    parts.append(f"{setup} {fmt(s['lat_ratio'], '.3f')} svc {fmt(s['svc_p50_ms'], '.3f')} "
                                 f"LP {fmt(s['lp_ratio'], '.2f')} (tail {fmt(s['lp_tail_ms'], '.1f')} ms, "
                                 f"irq CPU {fmt(s['irq_cpu_busy'], '.2f')} busy){arms}")
                print(" | ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
