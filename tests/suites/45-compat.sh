#!/usr/bin/env bash
# Suite 45: the drop-in for the original experiment. libgeek.so through ctypes, the way the
# original's scripts use it (tests/python/test_libgeek.py: exports, round trip, NULL and unknown
# suffixes, a forked worker, a real drain of a libcuinterpose_event.so worker on the fake driver).
# Ends with "N passed, N failed" converted from pytest's summary.
set -uo pipefail
ROOT=${ROOT:?"set ROOT to the repository root (make.sh does)"}
BUILD=${BUILD:-$ROOT/build}
PYTHON=${PYTHON:-/usr/bin/python3}
. "$ROOT/tests/lib/suite.sh"
cd "$ROOT"

for f in lib/libgeek.so lib/libcuinterpose_event.so bin/expcontroller tests/hooks/cuda_worker fakecuda/libcuda.so.1; do
    if [ ! -e "$BUILD/$f" ]; then
        echo "45-compat: $BUILD/$f is missing: build first (./make.sh)"
        echo "0 passed, 1 failed"
        exit 1
    fi
done

BUILD="$BUILD" run_pytest libgeek tests/python/test_libgeek.py
finish
