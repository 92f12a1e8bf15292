#!/usr/bin/env bash
# Suite 40: the Python extension. Builds the gpuyield package for $PYTHON into $BUILD/python, runs
# tests/python/test_pyext.py and tests/python/test_examples.py (examples/, the README's quick start,
# on the fake driver) with it, and ends with "N passed, N failed" converted from pytest's
# summary (errors count as failures; no test collected, or a pytest that died, counts as one).
set -uo pipefail
ROOT=${ROOT:?"set ROOT to the repository root (make.sh does)"}
BUILD=${BUILD:-$ROOT/build}
PYTHON=${PYTHON:-/usr/bin/python3}
. "$ROOT/tests/lib/suite.sh"
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

# The extension exports its module init alone (pyext/exports.map) and carries the protocol and the
# status view (status_merge.c, utf8_clean.c) only: none of the service room's other code (the metrics
# server, the MPS daemon manager, private directories).
EXT=$(ls "$BUILD"/python/gpuyield/_gpuyield*.so | head -n 1)
check pyext_exports_only_its_init test "$(nm -D --defined-only "$EXT" | awk '{print $3}')" = PyInit__gpuyield
check pyext_links_no_service_code bash -c "! nm '$EXT' | grep -E ' (gy_metrics_|gy_mps_|gy_private_|gy_runtime_base)'"

# BUILD lets a test find expcontroller.
PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" BUILD="$BUILD" run_pytest pyext tests/python/test_pyext.py tests/python/test_examples.py
finish
