#!/usr/bin/env bash
# gpuyield.plot: tests/python/test_plot.py with the built package (BUILD/python). Also runs the
# kernels plot end to end through BUILD/bin/nsight-parser. Last line: "N passed, N failed".
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
PYTHON=${PYTHON:-/usr/bin/python3}
if [ ! -f "$BUILD/python/gpuyield/plot.py" ]; then
    echo "70-plot: $BUILD/python/gpuyield/plot.py is missing: build the package first (./make.sh)"
    echo "0 passed, 1 failed"
    exit 1
fi
out=$(PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH} NSIGHT_PARSER=$BUILD/bin/nsight-parser MPLBACKEND=Agg \
      "$PYTHON" -m pytest -q -p no:cacheprovider "$ROOT/tests/python/test_plot.py" 2>&1)
echo "$out"
last=$(printf '%s\n' "$out" | tail -n 1)
p=$(printf '%s' "$last" | grep -o '[0-9]* passed' | grep -o '[0-9]*' || true)
f=$(printf '%s' "$last" | grep -o '[0-9]* failed' | grep -o '[0-9]*' || true)
e=$(printf '%s' "$last" | grep -o '[0-9]* error' | grep -o '[0-9]*' || true)
if [ -z "$p$f$e" ]; then
    echo "70-plot: pytest gave no result line: counted as 1 failure"; f=1
fi
echo "${p:-0} passed, $(( ${f:-0} + ${e:-0} )) failed"
