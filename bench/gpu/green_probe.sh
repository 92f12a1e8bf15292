#!/usr/bin/env bash
# The green-context probe on a GPU (issue 26, bench/gpu/green_probe.py): a lower process's units per
# second (three work kinds, with and without an event after every unit) on the whole GPU, and in a
# pinned K-SM partition (K = 16, 64, 120) while a priority-1 process holds a job open, idle in it or
# launching the matrix's small HP unit through it; and the same LP as a plain MPS client beside that
# HP unhooked; then the same on a partition-policy segment at GPUYIELD_PARTITION_SMS 112 and 128
# (sizes the guarded arms do not have: a grid of 256 blocks two to an SM fills 128 SMs in one wave
# and needs two on 120). Tells what caps the LP inside the launch-bound HP's jobs: the partition's
# SMs (the rate follows K and the kind's waves: the 2048^2 GEMM back to whole at 128), the HP's
# launches beside it (green-busy under green-idle), or the fork and join of every unit (marks
# under nomarks only in the partition).
#   bash bench/gpu/green_probe.sh BUILD OUTDIR [SECONDS]
# Writes OUTDIR/<phase>.json per LP run, OUTDIR/hp-<phase>.txt, OUTDIR/green_probe.json (every
# run's rates and each one's ratio to the whole GPU's) and OUTDIR/clocks.csv (SM and memory clocks
# every 500 ms through the stage, nothing set; each phase's "done" line has its UTC time, to match
# them). Needs root (MPS) and a GPU.
set -u
B=${1:?usage: green_probe.sh BUILD OUTDIR [SECONDS]}
OUTDIR=${2:?usage: green_probe.sh BUILD OUTDIR [SECONDS]}
SECS=${3:-2}
PY=${PY:-python3}
mkdir -p "$OUTDIR"
TAG=gygreen$$
PTAG=gygreenp$$
MPS_DIR=/tmp/gy-green-mps-$$
HOLDER=
CLOCKS_PID=
. "$(dirname "$0")/mps_daemon.sh"
cleanup() {
    [ -n "$CLOCKS_PID" ] && kill "$CLOCKS_PID" 2> /dev/null
    [ -n "$HOLDER" ] && touch "$OUTDIR/stop" && wait "$HOLDER" 2> /dev/null
    "$B/bin/expcontroller" remove --name "$TAG" > /dev/null 2>&1
    "$B/bin/expcontroller" remove --name "$PTAG" > /dev/null 2>&1
    mps_quit "$MPS_DIR" green-probe "$OUTDIR/mps-log"
    rm -rf "$MPS_DIR" "$OUTDIR/stop" "$OUTDIR/ready"
}
trap cleanup EXIT
rc=0
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw --format=csv -lms 500 > "$OUTDIR/clocks.csv" 2> /dev/null &
CLOCKS_PID=$!
mps_start "$MPS_DIR" green-probe || exit 1
"$B/bin/expcontroller" create --name "$TAG" --policy guarded --mps-pipe "$MPS_DIR/pipe" > "$OUTDIR/create.txt" 2>&1 ||
    { cat "$OUTDIR/create.txt"; exit 1; }
lp() { # PHASE hooked|plain [SEGMENT SMS]: one LP process, OUTDIR/PHASE.json (SEGMENT: default the guarded one)
    local hook=()
    [ "$2" = hooked ] && hook=(LD_PRELOAD="$B/lib/libgpuyield.so" GPUYIELD_SHM="${3:-$TAG}" GPUYIELD_PRIORITY=0
        GPUYIELD_MODE=time:500 GPUYIELD_VERBOSE=1 ${4:+GPUYIELD_PARTITION_SMS=$4})
    env ${hook[@]+"${hook[@]}"} CUDA_MPS_CLIENT_PRIORITY=1 "$PY" bench/gpu/green_probe.py lp "$OUTDIR/$1.json" "$SECS" \
        > "$OUTDIR/$1.txt" 2>&1 || { echo "green-probe: LP run $1 failed: $(tail -3 "$OUTDIR/$1.txt")"; rc=1; }
    echo "green-probe: $1 done $(date -u +%H:%M:%S)"
}
hp_start() { # PHASE ARM idle|busy|plain [SEGMENT]: the holder, until hp_stop; waits for its job to open
    rm -f "$OUTDIR/ready" "$OUTDIR/stop"
    "$PY" bench/gpu/green_probe.py hp "${4:-$TAG}" "$2" "$3" "$OUTDIR/ready" "$OUTDIR/stop" > "$OUTDIR/hp-$1.txt" 2>&1 &
    HOLDER=$!
    for _ in $(seq 300); do [ -e "$OUTDIR/ready" ] && return 0; kill -0 "$HOLDER" 2> /dev/null || break; sleep 0.1; done
    echo "green-probe: the holder for $1 never opened its job: $(cat "$OUTDIR/hp-$1.txt")"
    rc=1
    return 1
}
hp_stop() {
    touch "$OUTDIR/stop"
    wait "$HOLDER" 2> /dev/null
    HOLDER=
}
lp whole hooked
lp mps-alone plain
for k in 16 64 120; do
    "$B/bin/expcontroller" guard-force --name "$TAG" --arm "partition:$k" >> "$OUTDIR/create.txt" 2>&1 ||
        { echo "green-probe: cannot pin partition:$k: $(tail -1 "$OUTDIR/create.txt")"; rc=1; continue; }
    for how in idle busy; do
        if hp_start "green$k-$how" "partition:$k" "$how"; then
            lp "green$k-$how" hooked
            hp_stop
            grep -q "run on a green context of $k of" "$OUTDIR/green$k-$how.txt" ||
                { echo "green-probe: green$k-$how: the LP never said it ran on $k SMs"; rc=1; }
        fi
    done
done
if "$B/bin/expcontroller" create --name "$PTAG" --policy partition --mps-pipe "$MPS_DIR/pipe" >> "$OUTDIR/create.txt" 2>&1; then
    for k in 112 128; do
        for how in idle busy; do
            if hp_start "green$k-$how" any "$how" "$PTAG"; then
                lp "green$k-$how" hooked "$PTAG" "$k"
                hp_stop
                grep -q "run on a green context of $k of" "$OUTDIR/green$k-$how.txt" ||
                    { echo "green-probe: green$k-$how: the LP never said it ran on $k SMs"; rc=1; }
            fi
        done
    done
else
    echo "green-probe: no partition segment: $(tail -1 "$OUTDIR/create.txt")"; rc=1
fi
if hp_start mps-busy none plain; then
    lp mps-busy plain
    hp_stop
fi
"$B/bin/expcontroller" status --name "$TAG" --json > "$OUTDIR/status.json" 2>&1
"$PY" - "$OUTDIR" <<'PYEOF' || rc=1
import json, os, sys
d = sys.argv[1]
phases = ["whole", "mps-alone"] + [f"green{k}-{h}" for k in (16, 64, 120, 112, 128) for h in ("idle", "busy")] + ["mps-busy"]
runs = {p: json.load(open(f"{d}/{p}.json")) for p in phases if os.path.exists(f"{d}/{p}.json")}
if "whole" not in runs:
    sys.exit("green-probe: no whole-GPU run to compare with")
report = {}
for p, r in runs.items():
    report[p] = {kind: {mode: dict(v, of_whole=round(v["units_per_s"] / runs["whole"][kind][mode]["units_per_s"], 3))
                        for mode, v in modes.items()} for kind, modes in r.items()}
json.dump(report, open(f"{d}/green_probe.json", "w"), indent=1)
print(f"{'phase':<14}" + "".join(f"{k + ' ' + m:>22}" for k in runs["whole"] for m in ("nomarks", "marks")))
for p, r in report.items():
    print(f"{p:<14}" + "".join(f"{r[k][m]['units_per_s']:>13.1f} ({r[k][m]['of_whole']:.2f})" for k in runs["whole"]
                                for m in ("nomarks", "marks")))
PYEOF
echo "green-probe exit $rc"
exit $rc
