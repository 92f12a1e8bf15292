# Sourced by tests/suites/30-hooks.sh (uses its ok/bad counters): the hook library under the
# original experiment's names, configured by the original's environment, against the fake driver.
#   compat_env_tests NAME OUT_DIR PRELOAD_FIRST
# Checks: the three libcuinterpose*.so are libgpuyield.so (same bytes, same exports); SUFFIX/ID
# and the name-chosen mode reach the segment, priority and queue mode (the library's own
# GPUYIELD_VERBOSE line, its counters in the segment and the fake driver's log); GPUYIELD_*
# win; libgpuyield.so ignores the original's variables; every bad value exits 2 with one line
# naming the variable, before any kernel runs.

compat_env_tests() {
    local name=$1 out=$2 first=$3
    local lib=$out/lib worker=$out/tests/hooks/cuda_worker fake=$out/fakecuda
    local suffix="envtest$$" other="envtestother$$" dir
    dir=$(mktemp -d "/tmp/gy-compat-env-$$-XXXXXX")
    local f
    for f in libcuinterpose.so libcuinterpose_sync.so libcuinterpose_event.so; do
        if [ -f "$lib/$f" ] && cmp -s "$lib/$f" "$lib/libgpuyield.so"; then
            ok "$name: $f is libgpuyield.so (same bytes)"
        else
            bad "$name: $f is missing or differs from libgpuyield.so"
        fi
    done
    [ -f "$lib/libcuinterpose_event.so" ] && check_exports "$lib/libcuinterpose_event.so" "$name libcuinterpose_event.so" "$out"
    # Segments held by a live `serve` (a segment whose creator is dead may be removed by an
    # `expcontroller clean` of a test run beside this one).
    local serve1 serve2 i
    "$out/bin/expcontroller" serve --name "compat$suffix" >/dev/null 2>&1 &
    serve1=$!
    "$out/bin/expcontroller" serve --name "$other" >/dev/null 2>&1 &
    serve2=$!
    for i in $(seq 100); do
        [ -e "/dev/shm/gpuyield-$(id -u)-compat$suffix" ] && [ -e "/dev/shm/gpuyield-$(id -u)-$other" ] && break
        sleep 0.05
    done
    if [ ! -e "/dev/shm/gpuyield-$(id -u)-compat$suffix" ] || [ ! -e "/dev/shm/gpuyield-$(id -u)-$other" ]; then
        bad "$name: cannot create the test segments"
        kill "$serve1" "$serve2" 2>/dev/null; wait "$serve1" "$serve2" 2>/dev/null
        rm -rf "$dir"
        return
    fi

    # run LIB ENV... -- ARGS...: the worker under LIB with only the given variables of ours;
    # leaves rc, $dir/out, $dir/err, $dir/log (the fake driver's log).
    run() {
        local preload=$lib/$1; shift
        local envs=() args=()
        while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
        shift
        args=("$@")
        rm -f "$dir/log"
        env -u GPUYIELD_SHM -u GPUYIELD_PRIORITY -u GPUYIELD_MODE -u GPUYIELD_VERBOSE -u SUFFIX -u ID \
            -u SYNC_KERNELS -u EVENT_GROUP_SIZE \
            LD_PRELOAD="${first:+$first:}$preload" LD_LIBRARY_PATH="$fake" FAKECUDA_LOG="$dir/log" \
            ASAN_OPTIONS=detect_leaks=0 "${envs[@]}" timeout 60 "$worker" "${args[@]}" >"$dir/out" 2>"$dir/err"
        rc=$?
    }
    kernels() { [ -f "$dir/log" ] && grep -c " kernel " "$dir/log" || echo 0; }
    counter() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" "$dir/out" | tail -n 1; }
    expect_line() { # TEST_NAME WANTED_STDERR_LINE
        if [ "$rc" -eq 0 ] && grep -qxF "$2" <(sed 's/^gpuyield: pid [0-9]* /gpuyield: pid P /; s/ (slot [0-9]*)//' "$dir/err"); then
            ok "$name: $1"
        else
            bad "$name: $1: exit $rc, stderr: $(cat "$dir/err")"
        fi
    }
    local seg="/gpuyield-$(id -u)-compat$suffix" want

    run libcuinterpose.so SUFFIX="$suffix" ID=1 GPUYIELD_VERBOSE=1 -- plain 4
    expect_line "libcuinterpose.so: SUFFIX and ID give segment and priority, mode none" \
        "gpuyield: pid P gates its kernel launches through $seg at priority 1, queue mode none"
    if [ "$(counter launches)" = 4 ] && [ "$(counter slot)" = 1 ]; then ok "$name: its 4 launches counted in compat$suffix"; else
        bad "$name: counters in compat$suffix: $(cat "$dir/out")"; fi

    run libcuinterpose_sync.so SUFFIX="$suffix" ID=0 SYNC_KERNELS=1 GPUYIELD_VERBOSE=1 -- plain 6
    expect_line "libcuinterpose_sync.so: SYNC_KERNELS gives sync:N" \
        "gpuyield: pid P gates its kernel launches through $seg at priority 0, queue mode sync:1"
    if [ "$(counter sync_points)" = 6 ]; then ok "$name: sync:1 from SYNC_KERNELS=1 synchronized after each of 6 kernels"; else
        bad "$name: sync_points after 6 kernels with SYNC_KERNELS=1: $(cat "$dir/out")"; fi

    # 100 kernels of 200 us on a stream, 100 on the per-thread one: event:2 keeps at most 4 queued
    # per stream; the same under libcuinterpose.so (mode none) queues dozens.
    local maxq maxq_none
    run libcuinterpose.so SUFFIX="$suffix" ID=0 -- bound 200 100
    maxq_none=$(awk '$7 == "kernel" && $6 > m { m = $6 } END { print m + 0 }' "$dir/log" 2>/dev/null)
    run libcuinterpose_event.so SUFFIX="$suffix" ID=0 EVENT_GROUP_SIZE=2 GPUYIELD_VERBOSE=1 -- bound 200 100
    expect_line "libcuinterpose_event.so: EVENT_GROUP_SIZE gives event:N" \
        "gpuyield: pid P gates its kernel launches through $seg at priority 0, queue mode event:2"
    maxq=$(awk '$7 == "kernel" && $6 > m { m = $6 } END { print m + 0 }' "$dir/log" 2>/dev/null)
    if [ "$(kernels)" = 200 ] && [ "${maxq:-99}" -le 4 ] && [ "${maxq_none:-0}" -gt 8 ]; then
        ok "$name: event:2 from EVENT_GROUP_SIZE bounds the queue (at most $maxq queued, $maxq_none in mode none)"; else
        bad "$name: EVENT_GROUP_SIZE=2: $(kernels) kernels, at most ${maxq:-?} queued (want 200, <= 4; mode none ${maxq_none:-?}, want > 8)"; fi

    run libcuinterpose_event.so SUFFIX="$suffix" ID=1 EVENT_GROUP_SIZE=x GPUYIELD_SHM="$other" GPUYIELD_PRIORITY=3 \
        GPUYIELD_MODE=sync:5 GPUYIELD_VERBOSE=1 -- plain 2
    expect_line "GPUYIELD_SHM, GPUYIELD_PRIORITY and GPUYIELD_MODE win over SUFFIX, ID and EVENT_GROUP_SIZE" \
        "gpuyield: pid P gates its kernel launches through /gpuyield-$(id -u)-$other at priority 3, queue mode sync:5"

    run libgpuyield.so SUFFIX="$suffix" ID=1 SYNC_KERNELS=1 GPUYIELD_VERBOSE=1 -- plain 2
    expect_line "libgpuyield.so ignores the original's variables" \
        "gpuyield: pid P passes kernel launches straight to the driver (GPUYIELD_SHM unset)"

    run libcuinterpose_sync.so ID=1 SYNC_KERNELS=2 GPUYIELD_VERBOSE=1 -- plain 2
    expect_line "no SUFFIX: launches pass straight through" \
        "gpuyield: pid P passes kernel launches straight to the driver (GPUYIELD_SHM unset)"

    local long; long=$(printf 'x%.0s' $(seq 1 35))
    local cases=(
        "SUFFIX libcuinterpose.so SUFFIX="
        "SUFFIX libcuinterpose.so SUFFIX=a/b"
        "SUFFIX libcuinterpose.so SUFFIX=$long"
        "ID libcuinterpose.so SUFFIX=$suffix ID=8"
        "ID libcuinterpose.so SUFFIX=$suffix ID=12"
        "ID libcuinterpose.so SUFFIX=$suffix ID=x"
        "ID libcuinterpose.so SUFFIX=$suffix ID="
        "SYNC_KERNELS libcuinterpose_sync.so SUFFIX=$suffix ID=0"
        "SYNC_KERNELS libcuinterpose_sync.so SUFFIX=$suffix ID=0 SYNC_KERNELS=0"
        "SYNC_KERNELS libcuinterpose_sync.so SUFFIX=$suffix ID=0 SYNC_KERNELS=3x"
        "SYNC_KERNELS libcuinterpose_sync.so SUFFIX=$suffix ID=0 SYNC_KERNELS=-1"
        "EVENT_GROUP_SIZE libcuinterpose_event.so SUFFIX=$suffix ID=0"
        "EVENT_GROUP_SIZE libcuinterpose_event.so SUFFIX=$suffix ID=0 EVENT_GROUP_SIZE=1000001"
        "EVENT_GROUP_SIZE libcuinterpose_event.so SUFFIX=$suffix ID=0 EVENT_GROUP_SIZE=two"
        "compatnosuch$$ libcuinterpose.so SUFFIX=nosuch$$ ID=0"
    )
    local c var l
    for c in "${cases[@]}"; do
        read -r var l rest <<<"$c"
        # shellcheck disable=SC2086
        run "$l" $rest -- plain 2
        if [ "$rc" -eq 2 ] && [ "$(wc -l <"$dir/err")" -eq 1 ] && grep -q "$var" "$dir/err" && [ "$(kernels)" = 0 ]; then
            ok "$name: $l $rest: exit 2, one line naming $var, no kernel ran"
        else
            bad "$name: $l $rest: exit $rc, $(kernels) kernels, stderr: $(cat "$dir/err")"
        fi
    done
    kill "$serve1" "$serve2" 2>/dev/null   # serve removes its segment on SIGTERM
    wait "$serve1" "$serve2" 2>/dev/null
    rm -rf "$dir"
}
