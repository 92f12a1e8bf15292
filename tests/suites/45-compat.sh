#!/usr/bin/env bash
# Suite 45: the drop-in for the original experiment. libgeek.so through ctypes, the way the
# original's scripts use it (tests/python/test_libgeek.py: exports, round trip, NULL and unknown
# suffixes, a forked worker, a real drain of a libcuinterpose_event.so worker on the fake driver).
# Ends with "N passed, N failed" converted from pytest's summary.
set -uo pipefail
ROOT=${ROOT:?"set ROOT to the repository root (make.sh does)"}
BUILD=${BUILD:-$ROOT/build}
PYTHON=${PYTHON:-/usr/bin/python3}
cd "$ROOT"

for f in lib/libgeek.so lib/libcuinterpose_event.so bin/expcontroller tests/hooks/cuda_worker fakecuda/libcuda.so.1; do
    if [ ! -e "$BUILD/$f" ]; then
        echo "45-compat: $BUILD/$f is missing: build first (./make.sh)"
        echo "0 passed, 1 failed"
        exit 1
    fi
done

log=$(mktemp)
trap 'rm -f "$log"' EXIT
PYTHONDONTWRITEBYTECODE=1 BUILD="$BUILD" \
    "$PYTHON" -m pytest -q -p no:cacheprovider tests/python/test_libgeek.py 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

summary=$(grep -E '^=*[ ]*[0-9]+ (passed|failed|error|errors|skipped)|no tests ran' "$log" | tail -n 1)
count() { echo "$summary" | grep -Eo "[0-9]+ $1" | head -n 1 | grep -Eo '[0-9]+' || echo 0; }
passed=$(count passed)
failed=$(( $(count failed) + $(count 'errors?') ))
if [ "$rc" -eq 5 ]; then
    echo "45-compat: pytest collected no tests"
    failed=$((failed + 1))
elif [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "45-compat: pytest exited with status $rc without a failure count"
    failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
