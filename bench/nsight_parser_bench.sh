#!/usr/bin/env bash
# How long nsight-parser takes on a large report: synthesises an Nsight Systems SQLite export
# with N kernels (default 1,000,000; two processes, 2 API calls per kernel, N/100 NVTX ranges),
# then times the parser on it (best of RUNS, default 3) and prints wall time and peak memory.
#   bench/nsight_parser_bench.sh [N]      env: NSIGHT_PARSER (default build/bin/nsight-parser),
#                                         PYTHON (default /usr/bin/python3), RUNS, TMPDIR
# Runs on the CPU: no GPU needed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-1000000}
PARSER=${NSIGHT_PARSER:-$ROOT/build/bin/nsight-parser}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-3}
if [ ! -x "$PARSER" ]; then
    echo "nsight_parser_bench: $PARSER not found: build it (./make.sh) or set NSIGHT_PARSER" >&2
    exit 1
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nsight-parser-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
echo "synthesising $N kernels into $WORK/report.sqlite ..."
start=$(date +%s.%N)
"$PYTHON" "$ROOT/bench/nsight_parser_synth.py" "$WORK/report.sqlite" "$N"
echo "synthesised in $(echo "$(date +%s.%N) - $start" | bc) s, $(du -m "$WORK/report.sqlite" | cut -f1) MiB"
best=
for run in $(seq "$RUNS"); do
    rm -rf "$WORK/out"
    /usr/bin/time -f '%e %M' -o "$WORK/time" "$PARSER" "$WORK/report.sqlite" -o "$WORK/out" >/dev/null
    read -r secs kib <"$WORK/time"
    echo "run $run: ${secs} s wall, peak RSS $((kib / 1024)) MiB"
    if [ -z "$best" ] || [ "$(echo "$secs < $best" | bc)" = 1 ]; then best=$secs; fi
done
kernels=$("$PYTHON" -c 'import json,sys; print(sum(m["kernels"] for m in json.load(open(sys.argv[1]))["models"]))' "$WORK/out/summary.json")
echo "nsight-parser: $kernels kernels parsed; best of $RUNS: $best s"
