#!/usr/bin/env bash
# Fuzzes one target for a fixed time (not part of CI):
#   fuzz/run.sh TARGET SECONDS [OUT_DIR]      TARGET: segment_open | guard_state | run_exp_config | nsight_csv
# Builds with fuzz/build.sh first if needed. Starts from the committed seeds (fuzz/corpus/TARGET),
# grows a working corpus in OUT_DIR/work/TARGET (default build/fuzz), writes crashing inputs to
# OUT_DIR/artifacts/, and ends with one line: target, seconds, executions, corpus size, outcome.
# Exit status 0: nothing found; 1: a crash, leak, timeout or sanitizer report (see its artifact).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
usage() { echo "usage: fuzz/run.sh segment_open|guard_state|run_exp_config|nsight_csv SECONDS [OUT_DIR]" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
TARGET=$1 SECONDS_BUDGET=$2
case "$TARGET" in segment_open|guard_state|run_exp_config|nsight_csv) ;; *) echo "fuzz/run.sh: unknown target '$TARGET'" >&2; usage ;; esac
[[ "$SECONDS_BUDGET" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz/run.sh: SECONDS must be a positive integer, got '$SECONDS_BUDGET'" >&2; usage; }
OUT=${3:-$ROOT/build/fuzz}
FUZZER=$OUT/${TARGET}_fuzzer
if [ ! -x "$FUZZER" ]; then "$ROOT/fuzz/build.sh" "$OUT" || exit 1; fi
WORK=$OUT/work/$TARGET
mkdir -p "$WORK" "$OUT/artifacts"
LOG=$OUT/$TARGET.log
# stderr of the target is closed (-close_fd_mask=2: its own error messages are expected on bad
# input); libFuzzer's report still comes through.
"$FUZZER" "$WORK" "$ROOT/fuzz/corpus/$TARGET" -max_total_time="$SECONDS_BUDGET" -timeout=10 -rss_limit_mb=2048 \
    -max_len=32768 -close_fd_mask=2 -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$TARGET-" > "$LOG" 2>&1
rc=$?
# An input cut short (timeout, crash) leaves its segment or input file: remove those of dead
# fuzzer processes.
for seg in /dev/shm/gpuyield-$(id -u)-test-fuzz-*; do
    [ -e "$seg" ] && ! kill -0 "${seg##*-}" 2>/dev/null && rm -f "$seg"
done
for file in /tmp/gpuyield-fuzz-*.*; do
    pid=${file#/tmp/gpuyield-fuzz-}; pid=${pid%%.*}
    [ -e "$file" ] && ! kill -0 "$pid" 2>/dev/null && rm -f "$file"
done
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -n 1)
corpus=$(ls "$WORK" | wc -l)
if [ "$rc" -eq 0 ]; then outcome="no crash, leak, timeout or sanitizer report"
else outcome="FOUND a problem (exit $rc): $(grep -m1 -E 'ERROR|SUMMARY|timeout|crash' "$LOG")"; fi
echo "$TARGET: ${SECONDS_BUDGET} s, ${execs:-?} executions, corpus $corpus inputs: $outcome (log $LOG)"
[ "$rc" -eq 0 ]
