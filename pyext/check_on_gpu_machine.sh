#!/usr/bin/env bash
# Builds the gpuyield extension for the GPU machine's Python (3.12 in /opt/torch/.venv), imports it,
# runs its tests there, and takes one job around a real CUDA computation with torch loaded in the
# same process. Run from anywhere on that machine (nothing to install; gcc and the Python headers
# are there):
#   bash pyext/check_on_gpu_machine.sh [python]        # default /opt/torch/.venv/bin/python3
# Output goes to $GPUYIELD_CHECK_DIR (default /tmp/gpuyield-pyext-check), never to build/.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-/opt/torch/.venv/bin/python3}
OUT=${GPUYIELD_CHECK_DIR:-/tmp/gpuyield-pyext-check}

echo "== controller library, and the hook library (hook_path() finds it beside python/)"
make -s -f build.mk O="$OUT" SAN= CUDA_HOME= "$OUT/lib/libgycontrol.a" "$OUT/bin/expcontroller" "$OUT/lib/libgpuyield.so"
echo "== extension for $PY ($("$PY" -V 2>&1))"
PYTHON_BIN=$PY bash pyext/build_ext.sh "$OUT"
export PYTHONPATH=$OUT/python PYTHONDONTWRITEBYTECODE=1
"$PY" -c 'import gpuyield, sys; print("imported", gpuyield.__file__, "with Python", sys.version.split()[0])'
"$PY" -c 'import gpuyield; help(gpuyield)' >"$OUT/help.txt"
head -n 3 "$OUT/help.txt"

echo "== tests"
BUILD=$OUT "$PY" -m pytest -q -p no:cacheprovider tests/python/test_pyext.py

echo "== one job around a CUDA computation, torch in the same process"
"$PY" - <<'PYCODE'
import os, time
import torch
import gpuyield
tag = "test-gpucheck-%d" % os.getpid()
seg = gpuyield.create(tag)
try:
    x = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    with seg.job(1) as job:
        start = time.perf_counter()
        y = x @ x
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
    print("job: drained=%s timed_out=%s wait=%.1f us, matmul %.2f ms on %s"
          % (job.drained, job.timed_out, job.wait_ns / 1e3, elapsed * 1e3, torch.cuda.get_device_name()))
    assert job.drained and seg.status()["jobs"] == [0] * 8
finally:
    seg.close()
    gpuyield.remove(tag)
PYCODE
echo "pyext: all checks passed on $(hostname)"
