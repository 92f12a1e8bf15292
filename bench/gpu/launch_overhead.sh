#!/usr/bin/env bash
# Launch overhead: launches/s of an empty kernel without the hook, with it in mode none, and in
# event:N / sync:N, interleaved (A B C A B C ...) so drift hits every variant alike.
# usage: bench/gpu/launch_overhead.sh BUILD_DIR OUT_JSONL [ROUNDS]
set -euo pipefail
B=$1; OUT=$2; ROUNDS=${3:-3}
TAG=bench-launch-$$
"$B/bin/expcontroller" create --name "$TAG" > /dev/null
trap '"$B/bin/expcontroller" remove --name "$TAG" > /dev/null 2>&1 || true' EXIT
: > "$OUT"
for round in $(seq "$ROUNDS"); do
    for variant in nohook none event:8 event:64 sync:64; do
        if [ "$variant" = nohook ]; then
            line=$("$B/bench/launch-rate" 200000 5)
        else
            line=$(LD_PRELOAD="$B/lib/libgpuyield.so" GPUYIELD_SHM="$TAG" GPUYIELD_MODE="$variant" \
                   "$B/bench/launch-rate" 200000 5)
        fi
        echo "{\"round\": $round, \"variant\": \"$variant\", \"result\": $line}" | tee -a "$OUT"
    done
done
