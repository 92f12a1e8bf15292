#!/usr/bin/env bash
# nsight-parser: tests/python/test_nsight_parser.py against the plain build and the ASan+UBSan
# build (leaks and undefined behaviour fail a run). Last line: "N passed, N failed".
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
PYTHON=${PYTHON:-/usr/bin/python3}
passed=0 failed=0
for variant in plain asan; do
    if [ "$variant" = plain ]; then bin=$BUILD/bin/nsight-parser; else bin=$BUILD/$variant/bin/nsight-parser; fi
    if [ ! -x "$bin" ]; then
        if [ "$variant" = plain ]; then
            echo "60-nsight: $bin is missing: build first (./make.sh)"; failed=$((failed + 1))
        else
            echo "60-nsight: $bin is missing: the $variant run is skipped (./make.sh test builds it)"
        fi
        continue
    fi
    echo "-- nsight-parser ($variant): $bin"
    out=$(NSIGHT_PARSER=$bin "$PYTHON" -m pytest -q -p no:cacheprovider "$ROOT/tests/python/test_nsight_parser.py" 2>&1)
    echo "$out"
    last=$(printf '%s\n' "$out" | tail -n 1)
    p=$(printf '%s' "$last" | grep -o '[0-9]* passed' | grep -o '[0-9]*' || true)
    f=$(printf '%s' "$last" | grep -o '[0-9]* failed' | grep -o '[0-9]*' || true)
    e=$(printf '%s' "$last" | grep -o '[0-9]* error' | grep -o '[0-9]*' || true)
    if [ -z "$p$f$e" ]; then
        echo "60-nsight: pytest gave no result line for the $variant run: counted as 1 failure"; f=1
    fi
    passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${e:-0}))
done
echo "$passed passed, $failed failed"
