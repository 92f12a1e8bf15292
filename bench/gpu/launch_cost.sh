#!/usr/bin/env bash
# Launch cost of the hook, call by call and paired inside each process (launch-cost paired:
# hooked and direct cuLaunchKernel alternate): rounds of (no hook = A/A check, mode none, event:8,
# time:1000), each variant a fresh process, interleaved so drift hits every variant alike;
# optionally the same modes with an earlier build's hook library side by side (OLD_LIB). Then the
# driver-level components once, without the hook. Writes JSON lines; summarize with
#   python3 -m bench.gpu.summarize launch-cost OUT_JSONL RESULT_JSON DEVICE
# VARIANTS replaces the list (stage launch-cost-auto: "nohook none auto"). Variant `auto`: mode
# none at GPUYIELD_PRIORITY=1 under GPUYIELD_JOBS=auto (issue 27): the warm-up's first launch
# opens an auto job and the launches back to back (a few us apart, idle time 2000 us) keep it
# open, so the paired launches run inside it; `none` (priority 0, explicit jobs) runs outside
# any job. Each hooked row records jobs_opened, the segment's job_epoch moved by that process (its
# own segment, nobody else in it): 1 for auto = one job held from the warm-up to the exit, 0 for
# the others.
# usage: bench/gpu/launch_cost.sh BUILD_DIR OUT_JSONL [ROUNDS] [LAUNCHES]
set -euo pipefail
B=$1; OUT=$2; ROUNDS=${3:-7}; LAUNCHES=${4:-20480}
OLD_LIB=${OLD_LIB:-}
TAG=bench-cost-$$
"$B/bin/expcontroller" create --name "$TAG" > /dev/null
trap '"$B/bin/expcontroller" remove --name "$TAG" > /dev/null 2>&1 || true' EXIT
epoch() { "$B/bin/expcontroller" status --name "$TAG" --json | sed -n 's/.*"job_epoch": \([0-9]*\).*/\1/p'; }
: > "$OUT"
variants=${VARIANTS:-nohook none event:8 event:64 time:1000}
if [ -n "$OLD_LIB" ]; then
    # An earlier build joins only a segment of its own layout version: check before timing anything.
    if LD_PRELOAD="$OLD_LIB" GPUYIELD_SHM="$TAG" GPUYIELD_MODE=none "$B/bench/launch-cost" paired 16 > /dev/null; then
        variants="$variants old:none old:event:8 old:event:64 old:time:1000"
    else
        echo "launch_cost: OLD_LIB=$OLD_LIB cannot join this build's segment (see above): its variants are left out" >&2
    fi
fi
for round in $(seq "$ROUNDS"); do
    for variant in $variants; do
        lib=$B/lib/libgpuyield.so mode=$variant jobs=explicit priority=0
        case $variant in
        old:*) lib=$OLD_LIB mode=${variant#old:} ;;
        auto) mode=none jobs=auto priority=1 ;;
        esac
        if [ "$variant" = nohook ]; then
            line=$("$B/bench/launch-cost" paired "$LAUNCHES")
            echo "{\"round\": $round, \"variant\": \"$variant\", \"result\": $line}" | tee -a "$OUT"
            continue
        fi
        before=$(epoch)
        if [ "$jobs" = auto ]; then
            line=$(LD_PRELOAD="$lib" GPUYIELD_SHM="$TAG" GPUYIELD_MODE="$mode" GPUYIELD_PRIORITY=$priority \
                GPUYIELD_JOBS=auto "$B/bench/launch-cost" paired "$LAUNCHES")
        else  # as before auto jobs existed: no GPUYIELD_JOBS (an OLD_LIB may predate it)
            line=$(LD_PRELOAD="$lib" GPUYIELD_SHM="$TAG" GPUYIELD_MODE="$mode" "$B/bench/launch-cost" paired "$LAUNCHES")
        fi
        echo "{\"round\": $round, \"variant\": \"$variant\", \"jobs_opened\": $(($(epoch) - before)), \"result\": $line}" \
            | tee -a "$OUT"
    done
done
line=$("$B/bench/launch-cost" components "$((LAUNCHES * 5))")
echo "{\"round\": 0, \"variant\": \"components\", \"result\": $line}" | tee -a "$OUT"
