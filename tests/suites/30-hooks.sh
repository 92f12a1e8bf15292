#!/usr/bin/env bash
# The hooks library (libgpuyield.so) against the fake driver, in the plain build, the ASan+UBSan
# build and the TSan build (the sanitizer runtime preloaded first). Ends with "N passed, N failed".
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
passed=0 failed=0

ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

# The intended dynamic symbols, exactly: dlsym and the hooks of the table (hooks/hooked_functions.h,
# printed by hooked_names), nothing else; the generated version script must list the same.
check_exports() {
    local lib=$1 name=$2 out=$3 want got map
    if [ ! -x "$out/tests/hooks/hooked_names" ] || [ ! -f "$out/gen/hooks/exports.map" ]; then
        bad "$name: not built ($out/tests/hooks/hooked_names, $out/gen/hooks/exports.map): run ./make.sh test"
        return
    fi
    want=$({ echo dlsym; "$out/tests/hooks/hooked_names"; } | sort)
    got=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
    if [ "$want" = "$got" ]; then ok "$name: nm -D lists exactly the hooks of the table"; else
        bad "$name: nm -D differs from the table:"; diff <(echo "$want") <(echo "$got") | sed 's/^/     /'; fi
    map=$(sed -n '/global:/,/local:/p' "$out/gen/hooks/exports.map" | tr ' ;' '\n\n' | grep -E '^(cu|dlsym)' | sort)
    if [ "$want" = "$map" ]; then ok "$name: exports.map lists exactly the hooks of the table"; else
        bad "$name: exports.map differs from the table:"; diff <(echo "$want") <(echo "$map") | sed 's/^/     /'; fi
    # Never glibc-private entry points (they are gone or hidden since glibc 2.34).
    if nm -D --undefined-only "$lib" | grep -Eq ' (__libc_dlsym|__libc_dlopen_mode|_dl_sym)$'; then
        bad "$name: uses glibc-private symbols"; else ok "$name: no glibc-private symbols"; fi
}

run_variant() {
    local name=$1 out=$2 first=${3:-}
    local lib=$out/lib/libgpuyield.so driver=$out/tests/hooks/test_hooks
    if [ ! -f "$lib" ] || [ ! -x "$driver" ] || [ ! -f "$out/fakecuda/libcuda.so.1" ]; then
        bad "$name: not built ($lib, $driver, $out/fakecuda/libcuda.so.1): run ./make.sh test"
        return
    fi
    check_exports "$lib" "$name" "$out"
    local log; log=$(mktemp)
    GY_HOOKS_LIB=$lib GY_FAKECUDA_DIR=$out/fakecuda GY_WORKER=$out/tests/hooks/cuda_worker GY_PRELOAD_FIRST=$first \
        timeout 600 "$driver" 2>&1 | sed "s/^/[$name] /" | tee "$log"
    local p f
    read -r p f < <(sed -n 's/^\[[a-z+]*\] \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed$/\1 \2/p' "$log" | tail -n 1)
    rm -f "$log"
    if [ -z "${p:-}" ]; then bad "$name: test_hooks ended without its summary line"; return; fi
    passed=$((passed + p)); failed=$((failed + f))
}

if [ -f "$BUILD/obj/hooks/cuda_abi_check.o" ]; then
    ok "cuda_abi.h agrees with cuda.h (hooks/cuda_abi_check.c compiled)"
else
    echo "skip cuda_abi.h check: CUDA_HOME was empty at build time (no cuda.h)"
fi
run_variant plain "$BUILD"
# A driver older than CUDA 12.8 has no cuEventElapsedTime_v2: time mode must still learn.
old_driver=$(GY_HOOKS_LIB=$BUILD/lib/libgpuyield.so GY_FAKECUDA_DIR=$BUILD/fakecuda-old \
    GY_WORKER=$BUILD/tests/hooks/cuda_worker timeout 120 "$BUILD/tests/hooks/test_hooks" time_mode 2>&1) || true
if grep -qx "1 passed, 0 failed" <<<"$old_driver"; then
    ok "time mode on a driver without cuEventElapsedTime_v2"
else
    echo "$old_driver" | sed 's/^/     /'
    bad "time mode on a driver without cuEventElapsedTime_v2"
fi
ASAN_RUNTIME=$(gcc -print-file-name=libasan.so)
export GY_NO_FORK_WHILE_ALLOCATING="ASan's allocator (gcc 12 libasan) keeps its lock across fork: a child forked while another thread allocates waits for good"
run_variant asan+ubsan "$BUILD/asan" "$ASAN_RUNTIME"
unset GY_NO_FORK_WHILE_ALLOCATING
# The original experiment's names and environment (libcuinterpose*.so: hooks/compat_env.c).
# shellcheck source=tests/lib/compat_env_tests.sh
. "$ROOT/tests/lib/compat_env_tests.sh"
compat_env_tests plain "$BUILD" ""
compat_env_tests asan+ubsan "$BUILD/asan" "$ASAN_RUNTIME"

# TSan: its runtime is preloaded first, like ASan's: as a mere dependency of the hook it comes
# after libc, whose malloc and pthread functions then win over its interceptors, and TSan, blind
# to the locks, reports races that are not there. Every process writes its reports into
# tsan_logs (halt_on_error: the first report ends it with exit 66): any file there fails the
# variant, whatever the exit status the test expected. No suppressions: none has been needed.
TSAN_RUNTIME=$(gcc -print-file-name=libtsan.so)
tsan_logs=$(mktemp -d "/tmp/gy-hooks-tsan-$$-XXXXXX")
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 log_path=$tsan_logs/report"
export GY_NO_THREADS_AFTER_FORK="ThreadSanitizer cannot start threads in a forked child of a threaded process (die_after_fork)"
run_variant tsan "$BUILD/tsan" "$TSAN_RUNTIME"
compat_env_tests tsan "$BUILD/tsan" "$TSAN_RUNTIME"
unset TSAN_OPTIONS GY_NO_THREADS_AFTER_FORK
if [ -z "$(ls -A "$tsan_logs")" ]; then
    ok "tsan: no ThreadSanitizer report from any process"
else
    bad "tsan: ThreadSanitizer reports:"
    for report in "$tsan_logs"/*; do sed 's/^/     /' "$report"; done
fi
rm -rf "$tsan_logs"
echo "$passed passed, $failed failed"
