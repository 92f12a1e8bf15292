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

for variant in plain asan; do
    if [ "$variant" = plain ]; then bin=$BUILD/bin/nsight-parser; else bin=$BUILD/$variant/bin/nsight-parser; fi
    if [ ! -x "$bin" ]; then
        if [ "$variant" = plain ]; then fail "nsight-parser-built" "$bin is missing: build first (./make.sh)"
        else echo "60-nsight: $bin is missing: the $variant run is skipped (./make.sh test builds it)"; fi
        continue
    fi
    echo "-- nsight-parser ($variant): $bin"
    NSIGHT_PARSER=$bin run_pytest "pytest-$variant" tests/python/test_nsight_parser.py
done
finish
