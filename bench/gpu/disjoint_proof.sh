#!/usr/bin/env bash
# run_all.sh stage disjoint-proof: `part` of cuDevSmResourceSplitByCount(K) in one process and
# `rest` of the same call in another are disjoint SM sets, proved by occupancy under MPS
# (bench/gpu/disjoint_probe.cu says how). For each K of DP_SIZES:
#   1. disjoint-probe probe K --alone: every target one wave of T (the sanity of the measurement);
#   2. disjoint-probe fill K 30 in the background, after its "ready" disjoint-probe probe K: a wave
#      on rest takes ~T (the filler is not there) and one on part waits for the filler (the control),
#      then the filler is stopped (SIGTERM) and waited for.
# Before the MPS daemon starts, one probe alone without MPS (K DP_PLAIN_K; sanity only). About 4 s
# on the H100 for the three default sizes (a trial run, 2026-11-24).
# Starts its own MPS daemon (pipe and log under /tmp; root) and quits it at the end, on error too;
# logs SM/memory clocks and power every 500 ms through the stage (changes no setting).
#   bash bench/gpu/disjoint_proof.sh BUILD RESULTS_DIR OUT_DIR
# Environment: DP_SIZES (16,64,120), DP_REPS (20), DP_PLAIN_K (64; empty: no run without MPS),
# PY (python3).
# Writes RESULTS_DIR/{alone_K,disjoint_K,plain_alone_K}.json, fill_K.{out,err,rc}, clocks.csv and
# disjoint_proof.json (per K: verdict, medians), copied to OUT_DIR. Prints one line per K; exit 1
# when a K's verdict fails or a run gives no result.
set -uo pipefail
B=${1:?usage: disjoint_proof.sh BUILD RESULTS_DIR OUT_DIR}
D=${2:?usage: disjoint_proof.sh BUILD RESULTS_DIR OUT_DIR}
OUT=${3:?usage: disjoint_proof.sh BUILD RESULTS_DIR OUT_DIR}
PY=${PY:-python3}
SIZES=${DP_SIZES:-16,64,120}
REPS=${DP_REPS:-20}
PLAIN_K=${DP_PLAIN_K-64}
PROBE=$B/bench/disjoint-probe
if [ ! -x "$PROBE" ]; then
    echo "disjoint-proof: $PROBE is missing: build with 'make -f build.mk O=.gpu-build CUDA_HOME=/usr/local/cuda all'"
    exit 1
fi
IFS=, read -ra KS <<< "$SIZES"
for k in "${KS[@]}" ${PLAIN_K:+"$PLAIN_K"}; do
    [[ $k =~ ^[1-9][0-9]*$ ]] || { echo "disjoint-proof: DP_SIZES/DP_PLAIN_K take positive integers, not '$k'"; exit 2; }
done
mkdir -p "$D" "$OUT"
MPS_DIR=/tmp/gy-disjoint-mps-$$
CLOCKS_PID=
FILL_PID=
rc=0

# SIGTERM lets the filler end its launches and exit 0; SIGKILL only if it has not in 10 s.
stop_filler() {
    [ -n "$FILL_PID" ] || return 0
    kill -TERM "$FILL_PID" 2> /dev/null
    for _ in $(seq 100); do kill -0 "$FILL_PID" 2> /dev/null || break; sleep 0.1; done
    if kill -0 "$FILL_PID" 2> /dev/null; then
        echo "disjoint-proof: the filler (pid $FILL_PID) did not exit 10 s after SIGTERM: SIGKILL"
        kill -KILL "$FILL_PID" 2> /dev/null
    fi
    wait "$FILL_PID"
    local status=$?
    FILL_PID=
    return $status
}

. "$(dirname "$0")/mps_daemon.sh"
cleanup() {
    stop_filler
    mps_quit "$MPS_DIR" disjoint-proof "$D/mps-log"
    [ -n "$CLOCKS_PID" ] && kill "$CLOCKS_PID" 2> /dev/null
    rm -rf "$MPS_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "disjoint-proof: K in $SIZES, $REPS waves per target, alone and beside a filler of part under MPS: ETA about $(( 3 + 2 * ${#KS[@]} )) s"

nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv -lms 500 > "$D/clocks.csv" 2> /dev/null &
CLOCKS_PID=$!

# The probe alone without MPS, before the daemon starts: sanity only (the proof needs two clients).
if [ -n "$PLAIN_K" ]; then
    timeout 60 "$PROBE" probe "$PLAIN_K" --alone --reps "$REPS" > "$D/plain_alone_$PLAIN_K.json" 2> "$D/plain_alone_$PLAIN_K.err"
    echo "disjoint-proof: probe alone without MPS, K $PLAIN_K: exit $? $(tail -c 300 "$D/plain_alone_$PLAIN_K.err")"
fi

mps_start "$MPS_DIR" disjoint-proof || exit 1

for k in "${KS[@]}"; do
    timeout 60 "$PROBE" probe "$k" --alone --reps "$REPS" > "$D/alone_$k.json" 2> "$D/alone_$k.err"
    status=$?
    [ "$status" -le 1 ] || { echo "disjoint-proof: K $k: the probe alone failed (exit $status): $(tail -c 300 "$D/alone_$k.err")"; rc=1; }

    rm -f "$D/disjoint_$k.json"
    : > "$D/fill_$k.out" # before the filler's own redirection: the wait below reads it at once
    "$PROBE" fill "$k" 30 > "$D/fill_$k.out" 2> "$D/fill_$k.err" &
    FILL_PID=$!
    ready=0
    for _ in $(seq 200); do
        grep -qx ready "$D/fill_$k.out" && { ready=1; break; }
        kill -0 "$FILL_PID" 2> /dev/null || break
        sleep 0.1
    done
    if [ "$ready" = 1 ]; then
        timeout 60 "$PROBE" probe "$k" --reps "$REPS" > "$D/disjoint_$k.json" 2> "$D/disjoint_$k.err"
        status=$?
        [ "$status" -le 1 ] || echo "disjoint-proof: K $k: the probe beside the filler failed (exit $status): $(tail -c 300 "$D/disjoint_$k.err")"
    else
        echo "disjoint-proof: K $k: the filler was not ready (it exited, or 20 s passed): $(tail -c 300 "$D/fill_$k.err")"
    fi
    stop_filler
    echo $? > "$D/fill_$k.rc"
done

"$PY" - "$D" "$OUT/disjoint_proof.json" "$SIZES" "$PLAIN_K" <<'PY' || rc=1
import json, os, sys
d, out, sizes, plain_k = sys.argv[1:5]

def load(name):
    try:
        return json.load(open(os.path.join(d, name)))
    except (OSError, ValueError) as e:
        return {"error": f"{name}: {e}"}

def medians(p):
    return {t: v["median_us"] for t, v in p["targets"].items()} if "targets" in p else p

def fill_line(k):
    try:
        lines = open(os.path.join(d, f"fill_{k}.out")).read().split("\n")
        info = json.loads(next(l for l in lines if l.startswith("{")))
    except (OSError, ValueError, StopIteration):
        info = {}
    try:
        info["rc"] = int(open(os.path.join(d, f"fill_{k}.rc")).read())
    except (OSError, ValueError):
        info["rc"] = None
    return info

summary = {"sizes": [], "rule": "beside the filler: median(rest) <= 1.5 T and median(part) >= 2 T"}
for k in sizes.split(","):
    alone, beside = load(f"alone_{k}.json"), load(f"disjoint_{k}.json")
    for p in (alone, beside):
        for key in ("device", "sm_count", "t_us", "blocks_per_sm", "block_threads"):
            if key in p:
                summary.setdefault(key, p[key])
    row = {"k": int(k), "part_sms": beside.get("part_sms", alone.get("part_sms")),
           "rest_sms": beside.get("rest_sms", alone.get("rest_sms")),
           "verdict": beside.get("disjoint") is True,
           "beside_filler_median_us": medians(beside), "alone_median_us": medians(alone),
           "alone_all_about_t": alone.get("all_about_t"), "filler": fill_line(k)}
    summary["sizes"].append(row)
if plain_k:
    plain = load(f"plain_alone_{plain_k}.json")
    summary["no_mps_alone"] = {"k": int(plain_k), "median_us": medians(plain), "all_about_t": plain.get("all_about_t")}
summary["ok"] = all(r["verdict"] for r in summary["sizes"])
json.dump(summary, open(os.path.join(d, "disjoint_proof.json"), "w"), indent=1)
json.dump(summary, open(out, "w"), indent=1)

def fmt(m):
    return ", ".join(f"{t} {v}" for t, v in m.items()) if "error" not in m else m["error"]

t = summary.get("t_us", "?")
for r in summary["sizes"]:
    print(f"K {r['k']}: part {r['part_sms']} SMs, rest {r['rest_sms']}: beside the filler (median us; T {t}): "
          f"{fmt(r['beside_filler_median_us'])}; alone: {fmt(r['alone_median_us'])} (all ~T: {r['alone_all_about_t']}); "
          f"filler launches {r['filler'].get('launches')}, exit {r['filler']['rc']}; "
          f"{'DISJOINT' if r['verdict'] else 'NOT SHOWN DISJOINT'}")
if "no_mps_alone" in summary:
    p = summary["no_mps_alone"]
    print(f"without MPS, K {p['k']}, alone: {fmt(p['median_us'])} (all ~T: {p['all_about_t']})")
sys.exit(0 if summary["ok"] else 1)
PY
echo "disjoint-proof: exit $rc"
exit $rc
