#!/usr/bin/env bash
# The one entry point on the GPU machine. Carry the build made on the build machine
# (`make -f build.mk O=.gpu-build CUDA_HOME=/usr/local/cuda all`, C programs run there as they
# are) and .nsys-libs; this builds the Python extension there, runs the named stages, and packs
# every raw result into $OUT/results.tgz (the device returns at most 8 files).
#   bash bench/gpu/run_all.sh STAGE...
# The stages, what each measures, its script, its records and its device cost: bench/gpu/README.md
# (tests/python/test_bench_runner.py checks that its table and the stages below are the same).
#   recheck = pyext hookcount launch gating preempt-quick: the re-proof after a change to the hooks
#   or the gate.
set -u
export GPU_BUILD=${GPU_BUILD:-$PWD/.gpu-build}
B=$GPU_BUILD
. bench/gpu/env.sh
OUT=${OUT:-/tmp/out}
R=${GY_RESULTS:-/tmp/gy-results}  # what is packed (a test names another)
mkdir -p "$OUT" "$R"
export GPUYIELD_BUILD=$B GPUYIELD_PYTHON=$(command -v "$PY")
PYTHON_BIN=$PY bash pyext/build_ext.sh "$B" || { echo "run_all: the extension did not build"; exit 1; }
# a second build for the matrix's @twin setups (bench/gpu/make_twin.sh): its extension from its own sources
if [ -n "${TWIN_BUILD:-}" ]; then
    (cd "$TWIN_BUILD/src" && PYTHON_BIN=$PY bash pyext/build_ext.sh "$TWIN_BUILD") ||
        { echo "run_all: the twin build's extension did not build ($TWIN_BUILD/src)"; exit 1; }
fi
export PYTHONPATH=$B/python
stage_log() { echo "=== $1 $(date -u +%H:%M:%S)"; }
pack() {
    find "$R" -name '*.nsys-rep' -size +8M -delete
    tar czf "$OUT/results.tgz" -C "$(dirname "$R")" "$(basename "$R")"
    ls -la "$OUT"
}
# `timeout -s TERM N bash run_all.sh ...` signals the running stage too; once it has unwound (the
# matrix keeps what it measured in raw.json), what was measured is still packed, not lost with the lease.
trap 'echo "run_all: terminated: packing what was measured"; pack; exit 143' TERM
stages=()
for stage in "$@"; do
    if [ "$stage" = recheck ]; then stages+=(pyext hookcount launch gating preempt-quick); else stages+=("$stage"); fi
done
# The device as the records name it: model, driver and the card's UUID (on 2026-12-07 three H100
# leases ran on three cards, and the GEMM HP's plain alone ran 5-7 % apart between them).
device_line() { nvidia-smi --query-gpu=name,driver_version,uuid --format=csv,noheader | head -n 1; }
for stage in "${stages[@]}"; do
    stage_log "$stage"
    case $stage in
    pyext) bash pyext/check_on_gpu_machine.sh "$(command -v "$PY")" > "$R/pyext_check.txt" 2>&1; echo "pyext check exit $?"; tail -5 "$R/pyext_check.txt" ;;
    hookcount) bash bench/gpu/hook_count.sh "$B" "$R/hookcount" 5 2>&1 | grep -v '^\[\|Processing\|^$' | tail -15 ;;
    launch) bash bench/gpu/launch_overhead.sh "$B" "$R/launch_overhead.jsonl" 3 > /dev/null; "$PY" -m bench.gpu.summarize launch "$R/launch_overhead.jsonl" ;;
    launch-cost)
        OLD_LIB=${OLD_LIB:-} bash bench/gpu/launch_cost.sh "$B" "$R/launch_cost.jsonl" "${ROUNDS:-7}" > /dev/null
        "$PY" -m bench.gpu.summarize launch-cost "$R/launch_cost.jsonl" "$R/launch_cost.json" \
            "$(device_line)" ;;
    begin-cost) bash bench/gpu/begin_cost.sh "$B" "$R/begin-cost" ;;
    launch-cost-auto)  # issue 27: mode none inside an open auto job (auto) and outside jobs (none), paired
        VARIANTS="nohook none auto" bash bench/gpu/launch_cost.sh "$B" "$R/launch_cost_auto.jsonl" "${ROUNDS:-15}" > /dev/null
        "$PY" -m bench.gpu.summarize launch-cost "$R/launch_cost_auto.jsonl" "$R/launch_cost_auto.json" \
            "$(device_line)"
        cp "$R/launch_cost_auto.json" "$OUT/" 2>/dev/null ;;
    gating) bash bench/gpu/gating.sh "$B" "$R" ;;
    gating-auto) bash bench/gpu/gating.sh "$B" "$R" auto  # issue 27: the HP unmarked, its jobs opened by the hook
        cp "$R/gating_auto_proof.json" "$OUT/" 2>/dev/null ;;
    preempt) bash bench/gpu/preempt_latency.sh "$B" "$R/preempt.jsonl" ;;
    preempt-quick) bash bench/gpu/preempt_latency.sh "$B" "$R/preempt.jsonl" "500" "none sync:1 event:1 event:4" 20 ;;
    matrix)  # issue 25's matrix, one invocation (MX_ARGS: more flags, e.g. --hp-kinds gemm,small --rounds 2)
        "$PY" -m bench.gpu.matrix --build "$B" --out "$R/matrix" --commit "${COMMIT:-unknown}" \
            --device "$(device_line)" ${MX_ARGS:-}
        echo "matrix exit $?"
        cp "$R/matrix/matrix.json" "$R/matrix/heatmap.png" "$OUT/" 2>/dev/null ;;
    wakeups)  # the matrix (MX_ARGS, with --pin) under the kernel's ipi and sched_wakeup events
        # WAKE_TAG names a second invocation's folder (wakeups-TAG), e.g. an A/B of matrix flags
        W=wakeups${WAKE_TAG:+-$WAKE_TAG}
        COMMIT=${COMMIT:-unknown} bash bench/gpu/wakeup_trace.sh "$B" "$R/$W" 2>&1 | grep -v '^\[' | tail -40
        "$PY" -m bench.gpu.arm_split "$R/$W/matrix" > "$R/$W/arm_split.txt" 2>&1
        cp "$R/$W/wakeups.txt" "$OUT/$W.txt" 2>/dev/null; cp "$R/$W/arm_split.txt" "$OUT/arm_split-$W.txt" ;;
    partition-proof) PY=$PY bash bench/gpu/partition_proof.sh "$B" "$R/partition-proof" "$OUT" 2>&1
            echo "partition-proof exit $?" ;;
    disjoint-proof) PY=$PY bash bench/gpu/disjoint_proof.sh "$B" "$R/disjoint-proof" "$OUT" 2>&1
            echo "disjoint-proof exit $?" ;;
    green-probe) PY=$PY bash bench/gpu/green_probe.sh "$B" "$R/green-probe" 2>&1 | tail -30
            cp "$R/green-probe/green_probe.json" "$OUT/" 2>/dev/null ;;
    graph-split) PY=$PY bash bench/gpu/graph_split_check.sh "$B" "$R/graph-split" 2>&1 | tail -60
            echo "graph-split exit ${PIPESTATUS[0]}"; cp "$R/graph-split/graph_split_check.json" "$OUT/" 2>/dev/null ;;
    smoke) bash bench/gpu/smoke.sh "$B" "$R/smoke" ;;
    proof) BUILD=$B OUT=$R/proof DUR=${DUR:-30} bash bench/gpu/run_exp_proof.sh 2>&1 | tail -40 ;;
    nsight) OUT=$R/nsight BUILD=$B bash bench/gpu/nsight_input_control.sh 2>&1 | tail -30 ;;
    nsight-alone) bash bench/gpu/nsight_alone.sh "$B" "$R" ;;
    fixture) bash bench/gpu/fixture.sh "$B" "$R" ;;
    faults) ROUNDS=${ROUNDS:-2} OUT=$R/faults BUILD=$B bash bench/gpu/fault_injection.sh 2>&1 | tail -15 ;;
    compat) OUT=$R/compat BUILD=$B bash bench/gpu/compat_check.sh 2>&1 | grep -v '^\[\|Processing' | tail -40
            echo "compat check exit ${PIPESTATUS[0]}" ;;
    probe) OUT=$R/probe bash bench/gpu/probe.sh 2>&1 | tail -20 ;;
    *) echo "run_all: unknown stage '$stage'" ;;
    esac
done
pack
