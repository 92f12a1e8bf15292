#!/usr/bin/env bash
# run_all.sh stage partition-proof (the partition policy on the GPU machine, about 1.5 minutes on the H100, 2026-11-23-partition/call1_log.txt):
#   1. green-probe, without MPS and under MPS: the green-context facts the hook relies on;
#   2. the SM-id proof: HP alone and beside the LP under drain, corun and partition
#      (bench/gpu/partition_runs.py proof);
#   3. the partition-size sweep (partition_runs.py sweep).
# Starts its own MPS daemon (pipe and log under /tmp; root) and quits it at the end, on error too;
# logs SM/memory clocks and power every 500 ms through the stage (changes no setting).
#   bash bench/gpu/partition_proof.sh BUILD RESULTS_DIR OUT_DIR
# Environment: PARTITION_SMS (16), PP_JOBS (proof 300), PP_SWEEP_JOBS (150), PP_ROUNDS (3),
# PP_SIZES (8,16,24,32,48), PY (python3).
# Writes RESULTS_DIR/{probe_plain,probe_mps,proof,sweep}.json, clocks.csv and logs; copies
# partition_probe.json, partition_proof.json and partition_sweep.json to OUT_DIR. Exit 1 when a
# part fails (a build without the partition policy: one line, only the probe runs).
set -uo pipefail
B=${1:?usage: partition_proof.sh BUILD RESULTS_DIR OUT_DIR}
D=${2:?usage: partition_proof.sh BUILD RESULTS_DIR OUT_DIR}
OUT=${3:?usage: partition_proof.sh BUILD RESULTS_DIR OUT_DIR}
PY=${PY:-python3}
SMS=${PARTITION_SMS:-16}
JOBS=${PP_JOBS:-300}
SWEEP_JOBS=${PP_SWEEP_JOBS:-150}
ROUNDS=${PP_ROUNDS:-3}
SIZES=${PP_SIZES:-8,16,24,32,48}
for prog in bench/green-probe bench/partition-bench bin/expcontroller; do
    if [ ! -x "$B/$prog" ]; then
        echo "partition-proof: $B/$prog is missing: build with 'make -f build.mk O=.gpu-build CUDA_HOME=/usr/local/cuda all'"
        exit 1
    fi
done
mkdir -p "$D" "$OUT"
MPS_DIR=/tmp/gy-partition-mps-$$
RAW=/tmp/gy-partition-raw-$$
CLOCKS_PID=
rc=0

. "$(dirname "$0")/mps_daemon.sh"
cleanup() {
    mps_quit "$MPS_DIR" partition-proof "$D/mps-log"
    [ -n "$CLOCKS_PID" ] && kill "$CLOCKS_PID" 2> /dev/null
    rm -rf "$RAW" "$MPS_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

eta=$(( 15 + 4 * (4 + JOBS * 15 / 1000) + ROUNDS * ($(echo "$SIZES" | tr ',' '\n' | wc -l) + 2) * (4 + SWEEP_JOBS * 15 / 1000) ))
echo "partition-proof: probe, proof ($JOBS jobs x 4 runs), sweep (sizes $SIZES, $ROUNDS rounds of $SWEEP_JOBS jobs): ETA about $eta s"

nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv -lms 500 > "$D/clocks.csv" 2> /dev/null &
CLOCKS_PID=$!

# 1. The probe without MPS, before the daemon starts.
timeout 30 "$B/bench/green-probe" "$SMS" > "$D/probe_plain.json" 2> "$D/probe_plain.err" || { echo "partition-proof: green-probe (no MPS) failed: $(tail -c 300 "$D/probe_plain.err")"; rc=1; }

mps_start "$MPS_DIR" partition-proof || exit 1
timeout 30 "$B/bench/green-probe" "$SMS" > "$D/probe_mps.json" 2> "$D/probe_mps.err" || { echo "partition-proof: green-probe (MPS) failed: $(tail -c 300 "$D/probe_mps.err")"; rc=1; }
"$PY" - "$D" "$OUT/partition_probe.json" <<'PY'
import json, os, sys
d, out = sys.argv[1:3]
probe = {}
for kind in ("plain", "mps"):
    try:
        probe[kind] = json.load(open(os.path.join(d, f"probe_{kind}.json")))
    except (OSError, ValueError) as e:
        probe[kind] = {"error": str(e)}
json.dump(probe, open(out, "w"), indent=1)
for kind, p in probe.items():
    if "error" in p:
        print(f"probe ({kind}): no result ({p['error']})")
        continue
    if "primary_sync_waits_for_green" not in p:
        print(f"probe ({kind}): incomplete result: {json.dumps(p)[:300]}")
        continue
    sync = p["primary_sync_waits_for_green"]
    print(f"probe ({kind}): {p['green_sms']}-SM green context: cuLaunchKernel on {p['cuLaunchKernel_green']['distinct_sms']} SMs, "
          f"cuLaunchKernelEx {p['cuLaunchKernelEx_green']['distinct_sms']}, graph {p['cuGraphLaunch_green']['distinct_sms']} "
          f"(ordinary stream {p['ordinary_stream']['distinct_sms']}); events order both ways: {p['events']['order']}; "
          f"cuCtxSynchronize waits for the green stream: {sync['cuCtxSynchronize_waits']}, cudaDeviceSynchronize: "
          f"{sync['cudaDeviceSynchronize_waits']}; split groups: "
          + ", ".join(f"{g['min_count']}->{g.get('group_sms', 'error')}" for g in p["split_by_count"]) + f"; ok {p['ok']}")
PY

# The rest needs the partition policy in this build.
why=$("$PY" -c "from bench.gpu import partition_runs; import sys; print(partition_runs.policy_supported(*sys.argv[1:3]) or '')" "$B" "$MPS_DIR/pipe")
if [ -n "$why" ]; then
    echo "partition-proof: $why"
    exit 1
fi
sm_total=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1])).get('sm_count', 0))" "$D/probe_plain.json" 2> /dev/null || echo 0)
iters=$(timeout 30 "$B/bench/partition-bench" calibrate 100 2> "$D/calibrate.err" | tee "$D/calibrate.json" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['iters'])" 2> /dev/null)
if [ -z "$iters" ]; then
    echo "partition-proof: calibrating the HP's work kernel failed: $(tail -c 300 "$D/calibrate.err")"
    exit 1
fi
echo "partition-proof: HP work kernel: $(cat "$D/calibrate.json")"

common=(--build "$B" --out "$D" --pipe "$MPS_DIR/pipe" --raw "$RAW" --iters "$iters" --sm-total "${sm_total:-0}")
timeout 150 "$PY" -m bench.gpu.partition_runs proof "${common[@]}" --sms "$SMS" --jobs "$JOBS" 2>&1 | tee "$D/proof.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
timeout 300 "$PY" -m bench.gpu.partition_runs sweep "${common[@]}" --sizes "$SIZES" --rounds "$ROUNDS" --jobs "$SWEEP_JOBS" 2>&1 | tee "$D/sweep.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
cp "$D/proof.json" "$OUT/partition_proof.json" 2> /dev/null
cp "$D/sweep.json" "$OUT/partition_sweep.json" 2> /dev/null
echo "partition-proof: exit $rc"
exit $rc
