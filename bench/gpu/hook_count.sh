#!/usr/bin/env bash
# Issue 3's launch-count proof, on the GPU machine: hook_count.py under libgpuyield and nsys;
# the hook's launch count (launches + graph launches of the process's slot) against the kernels
# of that pid in the Nsight report (CUPTI_ACTIVITY_KIND_KERNEL). Writes OUT_DIR/hook_count.json
# and prints a verdict line. Exit 0 when the counts are equal.
# usage (repo root, device run carrying build and .nsys-libs): bash bench/gpu/hook_count.sh BUILD_DIR OUT_DIR [PASSES]
set -euo pipefail
B=${1:?usage: hook_count.sh BUILD_DIR OUT_DIR [PASSES]}; OUT=${2:?usage: hook_count.sh BUILD_DIR OUT_DIR [PASSES]}
PASSES=${3:-5}
source bench/gpu/env.sh
mkdir -p "$OUT"
TAG=hookcount-$$
# serve, not create: a segment whose creator has exited may be removed by `expcontroller clean`.
"$B/bin/expcontroller" serve --name "$TAG" > /dev/null 2>&1 &
SERVER=$!
trap 'kill -TERM $SERVER 2> /dev/null; wait $SERVER 2> /dev/null || true' EXIT
for _ in $(seq 100); do [ -e "/dev/shm/gpuyield-$(id -u)-$TAG" ] && break; sleep 0.05; done
# The hook goes to the workload only (through env), not to nsys's own processes.
"$NSYS" profile -t cuda,nvtx -s none --cpuctxsw=none -o "$OUT/hook_count" -f true \
    env LD_PRELOAD="$B/lib/libgpuyield.so" GPUYIELD_SHM="$TAG" GPUYIELD_VERBOSE=1 EXPCONTROLLER="$B/bin/expcontroller" \
    "$PY" bench/gpu/hook_count.py --passes "$PASSES" | tee "$OUT/workload.json"
"$NSYS" export --type sqlite -o "$OUT/hook_count.sqlite" -f true "$OUT/hook_count.nsys-rep" > /dev/null
"$PY" - "$OUT" <<'PYEOF'
import json, sqlite3, sys
out = sys.argv[1]
run = json.loads([l for l in open(f"{out}/workload.json") if l.startswith("{")][-1])
db = sqlite3.connect(f"{out}/hook_count.sqlite")
# A process id sits in bits 24..47 of globalPid.
kernels = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE (globalPid >> 24) & 0xFFFFFF = ?",
                     (run["pid"],)).fetchone()[0]
hook = run["hook"] or {}
counted = hook.get("launches", 0) + hook.get("graph_launches", 0)
verdict = {"pid": run["pid"], "nsys_kernels": kernels, "hook_launches": hook.get("launches"),
           "hook_graph_launches": hook.get("graph_launches"), "equal": counted == kernels,
           "note": "graph launches count one unit each; eager PyTorch launches none", "workload": run}
json.dump(verdict, open(f"{out}/hook_count.json", "w"), indent=1)
print(f"hook_count: pid {run['pid']}: hook counted {counted}, nsys saw {kernels} kernels: "
      + ("EQUAL" if counted == kernels else "DIFFERENT"))
sys.exit(0 if counted == kernels else 1)
PYEOF
