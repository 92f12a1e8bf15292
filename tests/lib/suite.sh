# Helpers for the shell test suites: ok/fail counting and the closing "N passed, N failed" line,
# expect (exit status + output pattern), alive/gone (a process; a zombie is gone), wait_until.
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
# at_exit ACTION: run ACTION (shell text) when this suite's own shell exits, never in a child.
# For `cmd &` bash forks a copy of itself that still holds our EXIT trap until it execs cmd: a
# signal in that window (a test that sends SIGTERM 0-20 ms after a spawn) ran the trap in the child,
# which removed the suite's directory under it (CI, 10-controller, 2026-11-23).
at_exit() {
    SUITE_EXIT_ACTION=$1
    trap 'if [ "$BASHPID" = "$SUITE_SHELL_PID" ]; then eval "$SUITE_EXIT_ACTION"; fi' EXIT
}
SUITE_SHELL_PID=$BASHPID
# A segment made by `expcontroller create` outlives its creator: `expcontroller clean` in another
# worktree's suites running beside ours would remove it under us. Every clean a test runs and every
# stretch that holds such a segment take this lock (flock(1); CLEAN_LOCK for C and Python tests).
CLEAN_LOCK=/tmp/gpuyield-$(id -u)-clean.lock
export CLEAN_LOCK
clean_lock() { exec 9>> "$CLEAN_LOCK"; flock 9; }
clean_unlock() { flock -u 9; exec 9>&-; }
# expect NAME WANT_STATUS PATTERN COMMAND...: exit status and an (extended) pattern in stdout+stderr
expect() {
    local name=$1 want=$2 pattern=$3; shift 3
    local out rc; out=$("$@" 2>&1); rc=$?
    if [ "$rc" -ne "$want" ]; then fail "$name" "exit $rc, wanted $want: $out"
    elif ! grep -qE -- "$pattern" <<< "$out"; then fail "$name" "no '$pattern' in: $out"
    else pass "$name"; fi
}
# A zombie (dead, not yet reaped by whoever inherited it) counts as gone.
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
gone() { ! alive "$1"; }
# wait_until SECONDS COMMAND...: polls until COMMAND succeeds (a slow or crowded machine only
# takes longer); fails when it never does.
wait_until() { local end=$((SECONDS + $1)); shift; until "$@" > /dev/null 2>&1; do [ "$SECONDS" -ge "$end" ] && return 1; sleep 0.1; done; }
# run_pytest LABEL FILE...: pytest on FILE... with $PYTHON (environment: set it before the call,
# `VAR=value run_pytest ...`), its counts added to the suite's: errors count as failures, a run
# that collected no tests or exited non-zero without a failure count as one failure.
run_pytest() {
    local label=$1; shift
    local log rc summary p f e
    log=$(mktemp)
    PYTHONDONTWRITEBYTECODE=1 "${PYTHON:-/usr/bin/python3}" -m pytest -q -p no:cacheprovider "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    summary=$(grep -E '^=*[ ]*[0-9]+ (passed|failed|error|errors|skipped)|no tests ran' "$log" | tail -n 1)
    rm -f "$log"
    p=$(grep -Eo '[0-9]+ passed' <<< "$summary" | grep -Eo '[0-9]+' || echo 0)
    f=$(grep -Eo '[0-9]+ failed' <<< "$summary" | grep -Eo '[0-9]+' || echo 0)
    e=$(grep -Eo '[0-9]+ errors?' <<< "$summary" | grep -Eo '[0-9]+' || echo 0)
    SUITE_PASSED=$((SUITE_PASSED + p)); SUITE_FAILED=$((SUITE_FAILED + f + e))
    if [ "$rc" -eq 5 ]; then fail "$label" "pytest collected no tests"
    elif [ "$rc" -ne 0 ] && [ $((f + e)) -eq 0 ]; then fail "$label" "pytest exited with status $rc without a failure count"; fi
}
finish() { echo "$SUITE_PASSED passed, $SUITE_FAILED failed"; [ "$SUITE_FAILED" -eq 0 ]; }
