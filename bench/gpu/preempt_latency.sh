#!/usr/bin/env bash
# Preemption latency: a low-priority process issuing spin kernels of a fixed duration under
# each mode, a high-priority process beginning jobs 20 ms + a random 0..40 ms apart (the jitter
# spans the longest low-priority cycle tested, 16 x 2 ms, so begins land anywhere in it);
# begin->drained and begin->own-kernel-done, p50, p99 and the maximum.
# usage: bench/gpu/preempt_latency.sh BUILD_DIR OUT_JSONL "DURS_US" "MODES" [JOBS]
set -uo pipefail
B=$1; OUT=$2; DURS=${3:-"100 500 2000"}; MODES=${4:-"sync:1 sync:2 sync:4 sync:8 sync:16 event:1 event:2 event:4 event:8 event:16 time:500 time:1000 time:2000"}
JOBS=${5:-100}
: > "$OUT"
for dur in $DURS; do
    for mode in $MODES; do
        TAG=bench-preempt-$$
        "$B/bin/expcontroller" create --name "$TAG" --drain-timeout-ms 3000 > /dev/null
        LD_PRELOAD="$B/lib/libgpuyield.so" GPUYIELD_SHM="$TAG" GPUYIELD_PRIORITY=0 GPUYIELD_MODE="$mode" \
            "$B/bench/preempt-bench" lp "$dur" 30 > /tmp/lp.json 2>/tmp/lp.err &
        LP=$!
        sleep 1.5   # CUDA init and a full queue
        hp=$(LD_PRELOAD="$B/lib/libgpuyield.so" GPUYIELD_SHM="$TAG" GPUYIELD_PRIORITY=1 \
             "$B/bench/preempt-bench" hp "$JOBS" 20 40 2>/tmp/hp.err)
        kill "$LP" 2>/dev/null; wait "$LP" 2>/dev/null
        "$B/bin/expcontroller" remove --name "$TAG" > /dev/null
        echo "{\"dur_us\": $dur, \"mode\": \"$mode\", \"hp\": ${hp:-null}}" >> "$OUT"
        python3 - "$dur" "$mode" <<PY
import json,sys
r=json.loads(open("$OUT").read().splitlines()[-1])
hp=r["hp"]
if not hp: print(sys.argv[1], sys.argv[2], "no result", open("/tmp/hp.err").read()[-300:]); sys.exit()
def pct(v,q):
    v=sorted(v); return v[max(0,-(-len(v)*q//100)-1)]
d=[x/1e6 for x in hp["drain_ns"]]; t=[x/1e6 for x in hp["done_ns"]]
print(f"dur {int(sys.argv[1])/1000:5.1f} ms {sys.argv[2]:>9}: drain p50 {pct(d,50):7.2f} p99 {pct(d,99):7.2f} max {max(d):7.2f} ms | job p50 {pct(t,50):7.2f} p99 {pct(t,99):7.2f} ms | timeouts {hp['timeouts']}", flush=True)
PY
    done
done
