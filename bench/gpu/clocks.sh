#!/usr/bin/env bash
# SM clock and power while a command runs: is a job slower under contention because the GPU
# clocks down under the other job's load? usage: bench/gpu/clocks.sh OUT.csv COMMAND...
OUT=$1; shift
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,temperature.gpu --format=csv,noheader,nounits -lms 200 > "$OUT" &
SMI=$!
"$@"; rc=$?
kill "$SMI"; wait "$SMI" 2>/dev/null
python3 - "$OUT" <<'PY'
import sys, statistics
rows = [l.split(", ") for l in open(sys.argv[1]) if l.count(",") >= 5]
busy = [r for r in rows if r[4].strip() not in ("0", "[N/A]")]
def med(i, rs): return statistics.median(float(r[i]) for r in rs) if rs else float("nan")
print(f"clocks {sys.argv[1]}: samples {len(rows)} (busy {len(busy)}): SM MHz median {med(1, busy):.0f} "
      f"(min {min((float(r[1]) for r in busy), default=0):.0f}), power W median {med(3, busy):.0f}, util % median {med(4, busy):.0f}")
PY
exit $rc
