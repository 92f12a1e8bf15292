#!/usr/bin/env bash
# Runs the test suites N times in a row (no rebuild: run ./make.sh test once first) and counts the
# failures per test name, to find tests that depend on timing or on which process runs first.
#   bench/reliability_loop.sh N [LOGDIR] [PREFIX...]
# PREFIX is a command to run each round under, e.g. `nice -n 19 taskset -c 0`.
# Each round's output goes to LOGDIR/run-K.log; the last lines are the tallies.
set -u
cd "$(dirname "$0")/.."
n=${1:?"usage: bench/reliability_loop.sh N [LOGDIR] [PREFIX...]"}
logs=${2:-$(mktemp -d /tmp/gpuyield-reliability.XXXXXX)}
shift $(($# >= 2 ? 2 : 1))
mkdir -p "$logs"
bad_runs=0
for i in $(seq "$n"); do
    t0=$(date +%s)
    if "$@" ./make.sh suites > "$logs/run-$i.log" 2>&1; then rc=0; else rc=$?; bad_runs=$((bad_runs + 1)); fi
    echo "run $i: exit $rc, $(($(date +%s) - t0)) s, $(tail -n 1 "$logs/run-$i.log")"
    # The failing checks by name (a suite's own FAIL lines, prefixed ones from C binaries too).
    grep -hE '^(  \[[^]]*\] )?(\[[a-z+]*\] )?FAIL ' "$logs/run-$i.log" | sed 's/^ *//' | sed 's/: .*//' >> "$logs/failures"
    grep -h '^make.sh: ' "$logs/run-$i.log" | grep -v '^make.sh: built' >> "$logs/failures" || true
done
echo "$n runs, $bad_runs with a failure (logs in $logs)"
[ -s "$logs/failures" ] && sort "$logs/failures" | uniq -c | sort -rn
true
