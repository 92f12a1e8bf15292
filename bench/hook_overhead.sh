#!/usr/bin/env bash
# CPU cost of the hook's launch path, against the fake driver (no GPU): ns per launch of a
# zero-length kernel without the hook, with it passing through (GPUYIELD_SHM unset), and gated
# in each mode; variants interleaved so machine noise hits all alike. The fake driver's own cost
# (a mutex, a clock read, a log-less submit) is in every number: compare differences.
# usage: bench/hook_overhead.sh [BUILD_DIR] [ROUNDS] [LAUNCHES]   (BUILD_DIR default build)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}; ROUNDS=${2:-3}; N=${3:-200000}
for f in "$B/lib/libgpuyield.so" "$B/tests/hooks/cuda_worker" "$B/bin/expcontroller"; do
    [ -e "$f" ] || { echo "hook_overhead: $f is missing: build first (./make.sh)" >&2; exit 1; }
done
TAG=bench-hook-$$
# serve, not create: a segment whose creator has exited may be removed by `expcontroller clean`.
"$B/bin/expcontroller" serve --name "$TAG" > /dev/null 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2> /dev/null; wait $SERVER 2> /dev/null || true' EXIT
for _ in $(seq 100); do [ -e "/dev/shm/gpuyield-$(id -u)-$TAG" ] && break; sleep 0.05; done
export LD_LIBRARY_PATH=$B/fakecuda
echo "variant            ns/launch (best of 5 x $N launches per run, $ROUNDS rounds)"
for round in $(seq "$ROUNDS"); do
    for variant in nohook passthrough none event:64 sync:64; do
        case $variant in
        nohook) line=$("$B/tests/hooks/cuda_worker" rate "$N") ;;
        passthrough) line=$(LD_PRELOAD=$B/lib/libgpuyield.so "$B/tests/hooks/cuda_worker" rate "$N") ;;
        *) line=$(LD_PRELOAD=$B/lib/libgpuyield.so GPUYIELD_SHM=$TAG GPUYIELD_MODE=$variant \
                  "$B/tests/hooks/cuda_worker" rate "$N") ;;
        esac
        printf '%-18s %s\n' "$variant" "$(echo "$line" | sed -n 's/^RATE \([0-9.]*\).*/\1/p')"
    done
done
