#!/usr/bin/env bash
# On the GPU machine, from the repository root after ./make.sh: exp_configs/input_control.json
# under Nsight Systems (run_exp --nsys), then nsight-parser on its SQLite export (and on the
# .nsys-rep, to prove that path too) and the kernel-level and JCT plots. What comes back in $OUT
# (at most 8 files): run_exp.txt, nsight_parser.txt (summary.log inside), kernels_summary.json,
# the three kernel PNGs and jct.png.
#   env: CONFIG (default exp_configs/input_control.json), BUILD (build), OUT (/tmp/out), RUN (scratch)
set -euo pipefail
. bench/gpu/env.sh
CONFIG=${CONFIG:-exp_configs/input_control.json}
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/out}
RUN=${RUN:-/tmp/nsight_input_control}
mkdir -p "$OUT"
rm -rf "$RUN"
"$BUILD/bin/run_exp" -f "$CONFIG" --out "$RUN" --nsys ${NSYS:+--nsys-path "$NSYS"} 2>&1 | tee "$OUT/run_exp.txt"
{
    echo "== nsight-parser on the SQLite export"
    time "$BUILD/bin/nsight-parser" "$RUN/nsight_report.sqlite" -p "$RUN/models_pid.json" -o "$RUN/kernels"
    cat "$RUN/kernels/summary.log"
    echo "== nsight-parser on the .nsys-rep (exported through nsys)"
    time "$BUILD/bin/nsight-parser" "$RUN/nsight_report.nsys-rep" ${NSYS:+--nsys "$NSYS"} -p "$RUN/models_pid.json" \
        -o "$RUN/kernels-rep"
    same=yes
    for f in "$RUN"/kernels/*.csv "$RUN/kernels/summary.json"; do
        cmp -s "$f" "$RUN/kernels-rep/${f##*/}" || { same=no; echo "DIFFERS: ${f##*/}"; }
    done
    echo "same tables and summary.json from both inputs: $same"
} 2>&1 | tee "$OUT/nsight_parser.txt"
cp "$RUN/kernels/summary.json" "$OUT/kernels_summary.json"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
$PY -m gpuyield.plot kernels "$RUN/kernels" -o "$OUT"
csvs=$(ls "$RUN"/*.csv)
$PY -m gpuyield.plot jct $csvs -o "$OUT/jct.png"
