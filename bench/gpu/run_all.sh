#!/usr/bin/env bash
# The one entry point on the GPU machine. Carry the build made on the build machine
# (`make -f build.mk O=.gpu-build CUDA_HOME=/usr/local/cuda all`, C programs run there as they
# are) and .nsys-libs; this builds the Python extension there, runs the named stages, and packs
# every raw result into $OUT/results.tgz (the device returns at most 8 files).
#   bash bench/gpu/run_all.sh STAGE...
# stages: matrix pyext hookcount launch launch-cost gating preempt preempt-quick smoke proof nsight
#         nsight-alone fixture faults compat partition-proof probe
#   recheck = pyext hookcount launch gating preempt-quick: the re-proof after a change to the hooks
#   or the gate.
set -u
export GPU_BUILD=${GPU_BUILD:-$PWD/.gpu-build}
B=$GPU_BUILD
. bench/gpu/env.sh
OUT=${OUT:-/tmp/out}
R=/tmp/gy-results
mkdir -p "$OUT" "$R"
export GPUYIELD_BUILD=$B GPUYIELD_PYTHON=$(command -v "$PY")
PYTHON_BIN=$PY bash pyext/build_ext.sh "$B" || { echo "run_all: the extension did not build"; exit 1; }
export PYTHONPATH=$B/python
stage_log() { echo "=== $1 $(date -u +%H:%M:%S)"; }
stages=()
for stage in "$@"; do
    if [ "$stage" = recheck ]; then stages+=(pyext hookcount launch gating preempt-quick); else stages+=("$stage"); fi
done
for stage in "${stages[@]}"; do
    stage_log "$stage"
    case $stage in
    pyext) bash pyext/check_on_gpu_machine.sh "$(command -v "$PY")" > "$R/pyext_check.txt" 2>&1; echo "pyext check exit $?"; tail -5 "$R/pyext_check.txt" ;;
    hookcount) bash bench/gpu/hook_count.sh "$B" "$R/hookcount" 5 2>&1 | grep -v '^\[\|Processing\|^$' | tail -15 ;;
    launch) bash bench/gpu/launch_overhead.sh "$B" "$R/launch_overhead.jsonl" 3 > /dev/null; "$PY" -m bench.gpu.summarize launch "$R/launch_overhead.jsonl" ;;
    launch-cost)
        OLD_LIB=${OLD_LIB:-} bash bench/gpu/launch_cost.sh "$B" "$R/launch_cost.jsonl" "${ROUNDS:-7}" > /dev/null
        "$PY" -m bench.gpu.summarize launch-cost "$R/launch_cost.jsonl" "$R/launch_cost.json" \
            "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)" ;;
    matrix)  # issue 25's matrix, one invocation (MX_ARGS: more flags, e.g. --hp-kinds gemm,small --rounds 2)
        "$PY" -m bench.gpu.matrix --build "$B" --out "$R/matrix" --commit "${COMMIT:-unknown}" \
            --device "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)" ${MX_ARGS:-}
        echo "matrix exit $?"
        cp "$R/matrix/matrix.json" "$R/matrix/heatmap.png" "$OUT/" 2>/dev/null ;;
    preempt) bash bench/gpu/preempt_latency.sh "$B" "$R/preempt.jsonl" ;;
    preempt-quick) bash bench/gpu/preempt_latency.sh "$B" "$R/preempt.jsonl" "500" "none sync:1 event:1 event:4" 20 ;;
    smoke)
        "$PY" - <<'PY'
import json
cfg = json.load(open("exp_configs/input_control.json")); cfg["exp_dur"] = 8
json.dump(cfg, open("/tmp/smoke.json", "w"))
PY
        "$B/bin/run_exp" -f /tmp/smoke.json --out "$R/smoke" 2>&1 | tail -25 ;;
    proof) BUILD=$B OUT=$R/proof DUR=${DUR:-30} bash bench/gpu/run_exp_proof.sh 2>&1 | tail -40 ;;
    nsight) OUT=$R/nsight BUILD=$B bash bench/gpu/nsight_input_control.sh 2>&1 | tail -30 ;;
    gating)
        "$PY" -c "import json; c=json.load(open('exp_configs/input_control.json')); c['exp_dur']=8; c['models'][1]['sleep_time']=0.2; json.dump(c, open('/tmp/ic8.json','w'))"
        CONFIG=/tmp/ic8.json RUN=/tmp/gating OUT=$R/nsight BUILD=$B bash bench/gpu/nsight_input_control.sh 2>&1 | grep -v '^\[\|Processing' | tail -25
        "$PY" -m bench.gpu.gating_proof /tmp/gating/nsight_report.sqlite /tmp/gating/models_pid.json /tmp/ic8.json "$R/gating_proof.json" ;;
    nsight-alone)
        "$PY" -c "import json; c=json.load(open('exp_configs/input_control.json')); c['exp_dur']=8; c['models']=[c['models'][1]]; c['models'][0]['sleep_time']=0.2; json.dump(c, open('/tmp/hp8.json','w'))"
        CONFIG=/tmp/hp8.json RUN=/tmp/nsight-alone OUT=$R/nsight-alone BUILD=$B bash bench/gpu/nsight_input_control.sh 2>&1 | grep -v '^\[\|Processing' | tail -8 ;;
    fixture)
        "$PY" - <<'PY'
import json
base = json.load(open("exp_configs/input_controlevent.json"))
lp, hp = base["models"]
lp.update(model_name="resnet50", resize_size=[224, 224], sleep_time=0, batch_size=16, output_file_name="lp_resnet50")
hp.update(model_name="resnet18", resize=True, resize_size=[224, 224], sleep_time=0.1, output_file_name="hp_resnet18")
base["exp_dur"] = 1
json.dump(base, open("/tmp/fixture.json", "w"), indent=1)
PY
        "$B/bin/run_exp" -f /tmp/fixture.json --out /tmp/fixture --nsys --min-jobs 10 2>&1 | grep -v '^\[\|Processing' | tail -8
        mkdir -p "$R/fixture"; cp /tmp/fixture/nsight_report.sqlite "$R/fixture/two_models_control.sqlite"
        cp /tmp/fixture/models_pid.json "$R/fixture/two_models_control.models_pid.json"; cp /tmp/fixture.json "$R/fixture/two_models_control.config.json"
        ls -la "$R/fixture" ;;
    faults) ROUNDS=${ROUNDS:-2} OUT=$R/faults BUILD=$B bash bench/gpu/fault_injection.sh 2>&1 | tail -15 ;;
    compat) OUT=$R/compat BUILD=$B bash bench/gpu/compat_check.sh 2>&1 | grep -v '^\[\|Processing' | tail -40
            echo "compat check exit ${PIPESTATUS[0]}" ;;
    partition-proof) PY=$PY bash bench/gpu/partition_proof.sh "$B" "$R/partition-proof" "$OUT" 2>&1
            echo "partition-proof exit $?" ;;
    probe) OUT=$R/probe bash bench/gpu/probe.sh 2>&1 | tail -20 ;;
    *) echo "run_all: unknown stage '$stage'" ;;
    esac
done
find "$R" -name '*.nsys-rep' -size +8M -delete
tar czf "$OUT/results.tgz" -C /tmp gy-results
ls -la "$OUT"
