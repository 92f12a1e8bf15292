#!/usr/bin/env bash
# Suite 40: the Python extension. Builds the gpuyield package for $PYTHON into $BUILD/python, runs
# tests/python/test_pyext.py with it, and ends with "N passed, N failed" converted from pytest's
# summary (errors count as failures; no test collected, or a pytest that died, counts as one).
set -uo pipefail
ROOT=${ROOT:?"set ROOT to the repository root (make.sh does)"}
BUILD=${BUILD:-$ROOT/build}
PYTHON=${PYTHON:-/usr/bin/python3}
cd "$ROOT"

if [ ! -f "$BUILD/lib/libgycontrol.a" ]; then
    echo "40-pyext: $BUILD/lib/libgycontrol.a is missing: build first (./make.sh)"
    echo "0 passed, 1 failed"
    exit 1
fi
if ! PYTHON_BIN=$PYTHON bash pyext/build_ext.sh "$BUILD"; then
    echo "40-pyext: building the extension for $PYTHON failed (see above)"
    echo "0 passed, 1 failed"
    exit 1
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
# No cache or bytecode in the shared working tree; BUILD lets a test find expcontroller.
PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 BUILD="$BUILD" \
    "$PYTHON" -m pytest -q -p no:cacheprovider tests/python/test_pyext.py 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}

summary=$(grep -E '^=*[ ]*[0-9]+ (passed|failed|error|errors|skipped)|no tests ran' "$log" | tail -n 1)
count() { echo "$summary" | grep -Eo "[0-9]+ $1" | head -n 1 | grep -Eo '[0-9]+' || echo 0; }
passed=$(count passed)
failed=$(( $(count failed) + $(count 'errors?') ))
if [ "$rc" -eq 5 ]; then
    echo "40-pyext: pytest collected no tests"
    failed=$((failed + 1))
elif [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
    echo "40-pyext: pytest exited with status $rc without a failure count"
    failed=1
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
