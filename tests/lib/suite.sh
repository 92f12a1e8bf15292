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
finish() { echo "$SUITE_PASSED passed, $SUITE_FAILED failed"; [ "$SUITE_FAILED" -eq 0 ]; }
