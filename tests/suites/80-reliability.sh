#!/usr/bin/env bash
# Reliability: the gate under load (plain, ASan+UBSan, TSan), corrupted segments, isolation,
# the fuzz corpora replayed, fault injection on the fake driver with the real hook.
set -u
. "$ROOT/tests/lib/suite.sh"

# Load: 64 processes at 8 levels; smaller under the sanitizers (each process is slower there).
run_counted load "$BUILD/tests/reliability/load_test" 64 8
# issue 29: a loaded machine (2 busy loops) and a 50 ms drain timeout: no end lost, counts true.
run_counted load-hogs "$BUILD/tests/reliability/load_test" 24 8 50 2
run_counted load-asan "$BUILD/asan/tests/reliability/load_test" 32 3
TSAN_OPTIONS="halt_on_error=1" run_counted load-tsan "$BUILD/tsan/tests/reliability/load_test" 16 3

# The hook (and the fake driver) and the Python extension, for the parts that go through them.
export GY_CUDA_WORKER=$BUILD/tests/hooks/cuda_worker GY_HOOK_LIB=$BUILD/lib/libgpuyield.so \
    GY_FAKECUDA_DIR=$BUILD/fakecuda GY_PYTHON=$PYTHON GY_PYTHONPATH=$BUILD/python

# Untrusted contents: every reader on corrupted segments (plain and ASan+UBSan; the CLI and a
# hooked CUDA program too).
EXPCONTROLLER=$BUILD/bin/expcontroller run_counted corrupt "$BUILD/tests/reliability/corrupt_test"
EXPCONTROLLER=$BUILD/asan/bin/expcontroller run_counted corrupt-asan "$BUILD/asan/tests/reliability/corrupt_test"

# Isolation: side by side, a full table (controller, hook, Python), another user (two run_exp
# side by side are in the fault injection script).
run_counted isolation "$BUILD/tests/reliability/isolation_test"

# Fuzz corpora (fuzz/corpus/<target>) replayed through each target built as a plain program,
# plain and ASan+UBSan. Fuzzing itself is fuzz/run.sh's, not CI's.
replay() { # replay LABEL PROGRAM CORPUS
    local log; log=$(mktemp)
    if "$2" "$3" > "$log" 2>&1; then pass "$1 ($(tail -n 1 "$log"))"
    else fail "$1" "$(tail -n 15 "$log")"; fi
    rm -f "$log"
}
# The libFuzzer build itself under clang, so that it cannot rot (issue 29: -Wstring-plus-int).
if command -v clang > /dev/null 2>&1; then
    fuzz_out=$(mktemp -d)
    if bash "$ROOT/fuzz/build.sh" "$fuzz_out" > "$fuzz_out.log" 2>&1; then pass fuzz_build_clang
    else fail fuzz_build_clang "$(tail -n 15 "$fuzz_out.log")"; fi
    rm -rf "$fuzz_out" "$fuzz_out.log"
fi
for target in segment_open guard_state run_exp_config nsight_csv; do
    replay "fuzz_replay_$target" "$BUILD/fuzz/replay_$target" "$ROOT/fuzz/corpus/$target"
    replay "fuzz_replay_${target}_asan" "$BUILD/asan/fuzz/replay_$target" "$ROOT/fuzz/corpus/$target"
done

# Fault injection: SIGKILL of each role (high worker in a job, low worker blocked / draining,
# run_exp, expcontroller serve), 3 rounds on the fake driver with the real hook. More rounds for
# the record: tests/reliability/fault_injection.py --build build --root . --rounds 40
out=$(mktemp)
"$PYTHON" "$ROOT/tests/reliability/fault_injection.py" --build "$BUILD" --root "$ROOT" --rounds 3 > "$out" 2>&1
grep -v '^ok ' "$out" | sed 's/^/  [fault] /'
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
if [ -z "$line" ]; then fail fault_injection "ended without a result line: $(tail -n 5 "$out")"
else read -r p _ f _ <<< "${line//,/}"; SUITE_PASSED=$((SUITE_PASSED + p)); SUITE_FAILED=$((SUITE_FAILED + f)); fi
rm -f "$out"

finish
