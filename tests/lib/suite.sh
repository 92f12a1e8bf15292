# Helpers for the shell test suites: ok/fail counting and the closing "N passed, N failed" line.
# Source it, call `check NAME COMMAND...` or `pass NAME` / `fail NAME WHY`, and `finish` last.
SUITE_PASSED=0
SUITE_FAILED=0
pass() { SUITE_PASSED=$((SUITE_PASSED + 1)); echo "ok   $1"; }
fail() { SUITE_FAILED=$((SUITE_FAILED + 1)); echo "FAIL $1${2:+: $2}"; }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
# Adds a C test binary's own counts (its last line) to the suite's.
run_counted() {
    local label=$1; shift
    local out; out=$(mktemp)
    "$@" > "$out" 2>&1
    local rc=$?
    sed "s/^/  [$label] /" "$out" | grep -v '^  \[.*\] ok ' || true
    local line; line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    if [ -z "$line" ]; then
        fail "$label" "ended without a result line (exit $rc)"
    else
        local p f; read -r p _ f _ <<< "${line//,/}"
        SUITE_PASSED=$((SUITE_PASSED + p)); SUITE_FAILED=$((SUITE_FAILED + f))
        echo "$label: $line"
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then fail "$label" "exit status $rc"; fi
    fi
    rm -f "$out"
}
# A segment made by `expcontroller create` outlives its creator: `expcontroller clean` in another
# worktree's suites running beside ours would remove it under us. Every clean a test runs and every
# stretch that holds such a segment take this lock (flock(1); CLEAN_LOCK for C and Python tests).
CLEAN_LOCK=/tmp/gpuyield-$(id -u)-clean.lock
export CLEAN_LOCK
clean_lock() { exec 9>> "$CLEAN_LOCK"; flock 9; }
clean_unlock() { flock -u 9; exec 9>&-; }
finish() { echo "$SUITE_PASSED passed, $SUITE_FAILED failed"; [ "$SUITE_FAILED" -eq 0 ]; }
