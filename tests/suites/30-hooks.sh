#!/usr/bin/env bash
# The hooks library (libgpuyield.so) against the fake driver, in the plain build and in the
# ASan+UBSan build (the sanitizer runtime preloaded first). Ends with "N passed, N failed".
set -u
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${BUILD:-$ROOT/build}
passed=0 failed=0

ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

# The intended dynamic symbols, exactly: the hooks, nothing else (hooks/exports.map).
INTENDED="cuGetProcAddress cuGetProcAddress_v2 cuGraphLaunch cuGraphLaunch_ptsz cuLaunchCooperativeKernel
cuLaunchCooperativeKernel_ptsz cuLaunchKernel cuLaunchKernelEx cuLaunchKernelEx_ptsz cuLaunchKernel_ptsz
cuStreamBeginCapture cuStreamBeginCaptureToGraph cuStreamBeginCaptureToGraph_ptsz cuStreamBeginCapture_ptsz
cuStreamBeginCapture_v2 cuStreamBeginCapture_v2_ptsz cuStreamEndCapture cuStreamEndCapture_ptsz dlsym
cuMemcpyAsync cuMemcpyAsync_ptsz cuMemcpyHtoDAsync_v2 cuMemcpyHtoDAsync_v2_ptsz cuMemcpyDtoHAsync_v2 cuMemcpyDtoHAsync_v2_ptsz cuMemcpyDtoDAsync_v2 cuMemcpyDtoDAsync_v2_ptsz cuMemsetD8Async cuMemsetD8Async_ptsz cuMemsetD16Async cuMemsetD16Async_ptsz cuMemsetD32Async cuMemsetD32Async_ptsz
cuEventRecord cuEventRecord_ptsz cuEventRecordWithFlags cuEventRecordWithFlags_ptsz cuStreamSynchronize cuStreamSynchronize_ptsz cuStreamQuery cuStreamQuery_ptsz cuStreamWaitEvent cuStreamWaitEvent_ptsz cuLaunchHostFunc cuLaunchHostFunc_ptsz cuStreamAddCallback cuStreamAddCallback_ptsz cuStreamDestroy_v2 cuStreamDestroy cuCtxSynchronize cuCtxSynchronize_v2 cuMemFree_v2 cuMemFreeAsync cuMemFreeAsync_ptsz cuMemcpy cuMemcpy_ptds cuMemcpyHtoD_v2 cuMemcpyHtoD_v2_ptds cuMemcpyDtoH_v2 cuMemcpyDtoH_v2_ptds cuMemcpyDtoD_v2 cuMemcpyDtoD_v2_ptds cuMemsetD8_v2 cuMemsetD8_v2_ptds cuMemsetD16_v2 cuMemsetD16_v2_ptds cuMemsetD32_v2 cuMemsetD32_v2_ptds"

check_exports() {
    local lib=$1 name=$2 want got
    want=$(echo $INTENDED | tr ' ' '\n' | sort)
    got=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
    if [ "$want" = "$got" ]; then ok "$name: nm -D lists exactly the hooks"; else
        bad "$name: nm -D differs from the intended list:"; diff <(echo "$want") <(echo "$got") | sed 's/^/     /'; fi
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
    check_exports "$lib" "$name"
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
run_variant asan+ubsan "$BUILD/asan" "$ASAN_RUNTIME"
# The original experiment's names and environment (libcuinterpose*.so: hooks/compat_env.c).
# shellcheck source=tests/lib/compat_env_tests.sh
. "$ROOT/tests/lib/compat_env_tests.sh"
compat_env_tests plain "$BUILD" ""
compat_env_tests asan+ubsan "$BUILD/asan" "$ASAN_RUNTIME"
echo "$passed passed, $failed failed"
