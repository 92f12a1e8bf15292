#!/usr/bin/env bash
# A stand-in python for bench/gpu/wakeup_trace.sh (tests/python/test_matrix.py): the HP's CPUs are
# $WT_CPUS, and "the matrix" is 50 short sleeps on the first of them and a raw.json with one window
# around them; every other call goes to the real python ($WT_PYTHON).
if [ "$1" = -m ] && [ "$2" = bench.gpu.matrix ]; then
    while [ $# -gt 0 ] && [ "$1" != --out ]; do shift; done
    out=$2; mkdir -p "$out"
    now() { "$WT_PYTHON" -c 'import time; print(time.time())'; }
    t0=$(now)
    for _ in $(seq 50); do taskset -c "${WT_CPUS%% *}" sleep 0.01; done
    t1=$(now)
    cpus=$(echo "$WT_CPUS" | tr ' ' ,)
    echo "{\"cpus\": {\"corun_hp\": [$cpus]}, \"segments\": [{\"round\": 0, \"setup\": \"corun\", \"wall_start\": $t0, \"wall_end\": $t1}]}" > "$out/raw.json"
    exit 0
fi
if [ "$1" = -c ] && [[ "$2" == *cpu_plan* ]]; then echo "$WT_CPUS"; exit 0; fi
exec "$WT_PYTHON" "$@"
