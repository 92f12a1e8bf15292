#!/usr/bin/env bash
# First look at the GPU machine: what is there, whether nsys works, a single-model fixture.
set -u
. bench/gpu/env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{
date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
$PY -c 'import sys, torch, torchvision; print(sys.version); print(torch.__version__, torchvision.__version__, torch.cuda.get_device_name(0))'
for h in /usr/include/jansson.h /usr/include/sqlite3.h /usr/include/python3.12/Python.h; do [ -e $h ] && echo "have $h" || echo "MISSING $h"; done
ls /usr/lib/x86_64-linux-gnu/ | grep -E 'libjansson|libsqlite3' ; gcc --version | head -1; echo "nsys=$NSYS"; $NSYS --version
nproc; free -g | head -2
} 2>&1 | tee "$OUT/probe.txt"
PASSES=30 $PY bench/gpu/single_model.py | tee -a "$OUT/probe.txt"
cd /tmp && PASSES=5 $NSYS profile -t cuda,nvtx -s none --cpuctxsw=none -o single -f true $PY "$OLDPWD/bench/gpu/single_model.py" > nsys.log 2>&1; tail -5 nsys.log
$NSYS export --type sqlite -o /tmp/single.sqlite -f true /tmp/single.nsys-rep 2>&1 | tail -2
ls -la /tmp/single.*; cp /tmp/single.sqlite "$OUT/" 2>/dev/null
sqlite3 /tmp/single.sqlite 'select count(*) from CUPTI_ACTIVITY_KIND_KERNEL' 2>&1 || $PY -c "import sqlite3; print(sqlite3.connect('/tmp/single.sqlite').execute('select count(*) from CUPTI_ACTIVITY_KIND_KERNEL').fetchone())"
