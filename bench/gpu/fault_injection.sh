#!/usr/bin/env bash
# Issue 7's fault injection with real workers, on the GPU machine, from the repository root after
# ./make.sh: SIGKILL of each role (high-priority worker inside a job, low-priority worker blocked
# and draining, run_exp, expcontroller serve), ROUNDS rounds (2 by default: 10 kills, ~4 min), with
# the checks of tests/reliability/fault_injection.py (no survivor blocked past 3 s, high-priority
# drain waits within the drain timeout, no worker outlives run_exp, clean removes what is left,
# whole CSV rows).
#   env: BUILD (build), OUT (/tmp/out: what comes back), ROUNDS (2), PY (python3 with torch)
# Record: the last lines of $OUT/fault_injection.txt go to bench/results/fault_injection.md.
set -uo pipefail
. bench/gpu/env.sh
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
export GPUYIELD_PYTHON=${GPUYIELD_PYTHON:-$(command -v "$PY")}
"$PY" tests/reliability/fault_injection.py --build "$BUILD" --root "$PWD" --rounds "${ROUNDS:-2}" --real \
    2>&1 | tee "$OUT/fault_injection.txt"
status=${PIPESTATUS[0]}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> "$OUT/fault_injection.txt" 2>&1 || true
exit "$status"
