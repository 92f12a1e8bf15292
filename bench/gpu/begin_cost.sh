#!/usr/bin/env bash
# Times begin()/end() of a hooked, marking HP on a corun segment under its own MPS daemon,
# nothing beside it (bench/gpu/begin_cost.py says what each condition tells).
#   bash bench/gpu/begin_cost.sh BUILD OUTDIR
set -u
B=$1; R=$2
. bench/gpu/env.sh
mkdir -p "$R"
MPS=$(mktemp -d /tmp/gy-begin-mps.XXXXXX); chmod 700 "$MPS"
export CUDA_MPS_PIPE_DIRECTORY=$MPS CUDA_MPS_LOG_DIRECTORY=$MPS
nvidia-cuda-mps-control -d
NAME=$("$B/bin/expcontroller" create --name begincost$$ --policy corun --mps-pipe "$MPS")
cleanup() { "$B/bin/expcontroller" remove --name begincost$$ >/dev/null 2>&1; echo quit | nvidia-cuda-mps-control; rm -rf "$MPS"; }
trap cleanup EXIT
# runs 1-3: hooked and marking (hp_ctl_alone); 4-5: marking without the hook (hp_mark_alone)
for i in 1 2 3 4 5; do
    hook=$B/lib/libgpuyield.so; [ "$i" -gt 3 ] && hook=
    GPUYIELD_SHM=$NAME LD_PRELOAD=$hook GPUYIELD_PRIORITY=1 GPUYIELD_MODE=none \
        PYTHONPATH=$B/python:$PWD "$PY" -m bench.gpu.begin_cost child "$R/begin_cost_$i.json" > "$R/begin_cost_$i.log" 2>&1
    echo "begin-cost run $i exit $?"
    # one line a run with every figure that matters, so the record survives without the JSON files
    "$PY" -c 'import json, sys; r = json.load(open(sys.argv[1]))
p = lambda k, part="begin": r[k][part]["p50_us"]
print("  p50 us: hot %s  sleep %s  spin %s  null-after-sleep %s  split enter %s wait %s (device=all: enter %s)  job begin %s end %s  marked/unmarked %s" % (
    p("hot"), p("sleep"), p("spin"), p("sleep_null"), p("sleep_split", "enter"), p("sleep_split", "wait"),
    p("sleep_split_all", "enter"), p("job"), p("job", "end"), r["job"]["marked_over_unmarked"]))' "$R/begin_cost_$i.json"
done
