#!/usr/bin/env bash
# Suite 60: nsight-parser. Its unit tests, then tests/python/test_nsight_parser.py against the plain build and the
# ASan+UBSan build (a leak or undefined behaviour fails a run). Ends with "N passed, N failed"
# converted from pytest's summaries (errors count as failures; a pytest that died counts as one).
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
PYTHON=${PYTHON:-/usr/bin/python3}
. "$ROOT/tests/lib/suite.sh"
cd "$ROOT"

run_counted units "$BUILD/tests/test_nsight_units"
if [ -x "$BUILD/asan/tests/test_nsight_units" ]; then run_counted units-asan "$BUILD/asan/tests/test_nsight_units"; fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
for variant in plain asan; do
    if [ "$variant" = plain ]; then bin=$BUILD/bin/nsight-parser; else bin=$BUILD/$variant/bin/nsight-parser; fi
    if [ ! -x "$bin" ]; then
        if [ "$variant" = plain ]; then fail "nsight-parser-built" "$bin is missing: build first (./make.sh)"
        else echo "60-nsight: $bin is missing: the $variant run is skipped (./make.sh test builds it)"; fi
        continue
    fi
    echo "-- nsight-parser ($variant): $bin"
    NSIGHT_PARSER=$bin PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -m pytest -q -p no:cacheprovider \
        tests/python/test_nsight_parser.py 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    summary=$(grep -E '^=*[ ]*[0-9]+ (passed|failed|error|errors|skipped)|no tests ran' "$log" | tail -n 1)
    count() { echo "$summary" | grep -Eo "[0-9]+ $1" | head -n 1 | grep -Eo '[0-9]+' || echo 0; }
    p=$(count passed); f=$(( $(count failed) + $(count 'errors?') ))
    SUITE_PASSED=$((SUITE_PASSED + p)); SUITE_FAILED=$((SUITE_FAILED + f))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then fail "pytest-$variant" "exit status $rc without a failure count"; fi
done
finish
