#!/usr/bin/env bash
# run_exp: every validation error, --dry-run, supervision with a stand-in Python (start, handshake,
# min jobs, a dying worker, SIGINT/SIGTERM, timeouts, --shm), and the whole --simulate pipeline on
# the fake driver with the hooks. Nothing may be left behind: no process, no segment.
set -u
. "$ROOT/tests/lib/suite.sh"

RUN_EXP=$BUILD/bin/run_exp
RUN_EXP_ASAN=$BUILD/asan/bin/run_exp
HERE=$ROOT/tests/run_exp
IMAGE=$ROOT/exp_configs/images/street.png
T=$(mktemp -d /tmp/run_exp-test.XXXXXX)
UIDN=$(id -u)
# A fake nvidia-smi (one GPU unless FAKE_GPUS says otherwise) so the GPU check is under test control.
export PATH=$HERE/bin:$PATH
export GPUYIELD_PYTHON=$HERE/fake_worker.sh

cleanup() { rm -rf "$T"; }
at_exit cleanup

cfg() { # cfg FILE [make_config args...]
    local out=$1; shift
    "$PYTHON" "$HERE/make_config.py" "$out" --image "$IMAGE" --out-dir "$T/out" "$@"
}
segments_of() { ls /dev/shm 2>/dev/null | grep -c "^gpuyield-$UIDN-exp$1\$"; }
# runx COMMAND...: output in $out, status in $rc, pid in $RUN_PID. run_exp names its segment and
# simulated device after its pid: checks look for this run's, not another worktree's beside it.
runx() { "$@" > "$T/runx.out" 2>&1 & RUN_PID=$!; wait "$RUN_PID"; rc=$?; out=$(cat "$T/runx.out"); }


# ---- validation: each error alone; exit 2; nothing created -----------------------------------
# invalid VALIDATION_NAME PATTERN [make_config args...]: plain and ASan builds both refuse it.
invalid() {
    local name=$1 pattern=$2; shift 2
    rm -rf "$T/out"
    cfg "$T/$name.json" "$@"
    expect "invalid_$name" 2 "$pattern" "$RUN_EXP" -f "$T/$name.json"
    if [ -e "$T/out" ]; then fail "invalid_${name}_created_nothing" "$T/out was created"; fi
    if [ -x "$RUN_EXP_ASAN" ]; then
        expect "invalid_${name}_asan" 2 "$pattern" "$RUN_EXP_ASAN" -f "$T/$name.json"
    fi
}

printf '{"models": [\n  {"model_name": "resnet50",}\n]}\n' > "$T/syntax.json"
expect invalid_json_has_line_column 2 "syntax.json:2:29: invalid JSON" "$RUN_EXP" -f "$T/syntax.json"
printf '{"exp_dur": 1, "exp_dur": 2}' > "$T/dupkey.json"
expect invalid_json_duplicate_key 2 "dupkey.json:1:[0-9]+: invalid JSON: duplicate object key" "$RUN_EXP" -f "$T/dupkey.json"
expect invalid_missing_file 2 "nope.json: cannot read the experiment file: No such file" "$RUN_EXP" -f "$T/nope.json"
echo '[1, 2]' > "$T/array.json"
expect invalid_top_level 2 "top level: must be an object" "$RUN_EXP" -f "$T/array.json"
invalid missing_model_name "models\[0\]\.model_name: required key is missing" --del models.0.model_name
invalid missing_control "models\[1\]\.control: required key is missing" --del models.1.control
invalid missing_exp_dur "exp_dur: required key is missing" --del exp_dur
invalid priority_type "models\[0\]\.priority: must be an integer 0\.\.7, got a string" --set 'models.0.priority="1"'
invalid priority_range "models\[1\]\.priority: must be 0\.\.7, got 9" --set models.1.priority=9
invalid exp_dur_zero "exp_dur: must be 0\.001\.\.86400, got 0" --set exp_dur=0
invalid device_id_negative "device_id: must be 0\.\.1023, got -1" --set device_id=-1
invalid sleep_negative "models\[0\]\.sleep_time: must be 0\.\.3600" --set models.0.sleep_time=-1
invalid models_empty "models: must be an array of 1\.\.32 model objects, got an array that is empty" --set 'models=[]'
invalid model_not_object "models\[0\]: must be an object" --set 'models.0=3'
invalid control_type "models\[0\]\.control\.control: must be true or false, got a string" --set 'models.0.control.control="yes"'
invalid unknown_model "models\[0\]\.model_name: 'fasterrcnn_resnet5' is not a torchvision.*did you mean: fasterrcnn_resnet50_fpn" --set 'models.0.model_name="fasterrcnn_resnet5"'
invalid output_name_path "models\[0\]\.output_file_name: 'a/b' is not a plain file name" --set 'models.0.output_file_name="a/b"'
invalid sync_zero "models\[0\]\.control\.queue_limit\.sync: must be 1\.\.1000000, got 0" --set models.0.control.control=true --set models.0.control.controlsync=true --set models.0.control.queue_limit.sync=0
invalid event_group_missing "models\[0\]\.control\.queue_limit\.event_group: required key is missing" --set models.0.control.control=true --set models.0.control.controlEvent=true --del models.0.control.queue_limit.event_group
invalid resize_without_size "models\[0\]\.resize_size: required when resize is true" --set models.0.resize=true --del models.0.resize_size
invalid resize_size_shape "models\[0\]\.resize_size: must be \[height, width\]" --set 'models.0.resize_size=[720]'
invalid batch_size_range "models\[0\]\.batch_size: must be 1\.\.1024, got 0" --set models.0.batch_size=0
invalid jobs_value "models\[1\]\.jobs: 'automatic' is not a way of making jobs; use \"explicit\"" --set 'models.1.jobs="automatic"'
invalid jobs_type "models\[1\]\.jobs: must be a string" --set 'models.1.jobs=true'
invalid jobs_auto_priority_0 "models\[0\]\.jobs: \"auto\" needs a priority of 1\.\.7" --set 'models.0.jobs="auto"'
invalid missing_image "models\[1\]\.input_file_path: input image '/nonexistent/x.png': cannot open it: No such file" --set 'models.1.input_file_path="/nonexistent/x.png"'
invalid image_not_image "models\[0\]\.input_file_path: .*not a PNG or JPEG image" --set "models.0.input_file_path=\"$HERE/make_config.py\""
invalid weights_file_missing "models\[0\]\.model_weight: weights file '/nonexistent/w.pth' cannot be read" --set 'models.0.model_weight="/nonexistent/w.pth"'
invalid duplicate_output "models\[1\]\.output_file_name: 'model_A' in .* is already used by models\[0\]" --set 'models.1.output_file_name="model_A"'
# The same directory spelled apart, before it exists: still one file for two models.
invalid duplicate_output_spelled_apart "models\[1\]\.output_file_name: 'model_A' in .* is already used by models\[0\]" \
    --set "models.0.output_file_path=\"$T/out/new\"" --set "models.1.output_file_path=\"$T/out/./new//\"" \
    --set 'models.1.output_file_name="model_A"'
mkdir -p "$T/adir"
expect invalid_config_is_a_directory 2 "adir is a directory; give -f the experiment's JSON file" "$RUN_EXP" -f "$T/adir"
touch "$T/a_file"
invalid output_unwritable "models\[0\]\.output_file_path: '$T/a_file/logs' cannot be an output directory: '$T/a_file' is not a directory" --set "models.0.output_file_path=\"$T/a_file/logs\""
FAKE_GPUS=2 invalid device_beyond_gpus "device_id: is 2 but this machine has 2 GPUs \(0\.\.1\)" --set device_id=2
invalid several_errors_reported_together "3 problems in" --set models.0.priority=9 --set exp_dur=-1 --set 'models.1.resize="no"'

# Unknown keys warn but do not stop.
cfg "$T/unknown.json" --set 'models.0.colour="red"'
expect unknown_key_warns 0 "warning: .*models\[0\]: unknown key 'colour' is ignored" "$RUN_EXP" -f "$T/unknown.json" --dry-run
# Options.
expect option_no_file 2 "no experiment file: give one with -f" "$RUN_EXP"
expect option_unknown 2 "unknown option '--bogus'" "$RUN_EXP" -f x --bogus
# issue 28: a usage error is one line, what is wrong and the pointer to --help, exit 2 (it printed
# the 25 lines of help after it).
for args in "" "-f x --bogus" "-f" "-f x --out" "-f x --min-jobs 0" "-f x extra" "-f x --policy nope" \
    "-f x --ready-timeout -1" "-f x -Z"; do
    out=$("$RUN_EXP" $args 2>&1); rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <<< "$out")" -eq 1 ] && grep -q "^run_exp: error: .* (run_exp --help lists the options)\$" <<< "$out"; then
        pass "option_usage_one_line_${args// /_}"
    else
        fail "option_usage_one_line_${args// /_}" "exit $rc: $out"
    fi
done
expect option_nsys_simulate 2 "--nsys and --simulate do not go together" "$RUN_EXP" -f x --nsys --simulate
cfg "$T/ok.json"
expect option_bad_min_jobs 2 "--min-jobs '0' must be an integer" "$RUN_EXP" -f "$T/ok.json" --min-jobs 0
expect option_help 0 "usage: run_exp -f CONFIG" "$RUN_EXP" --help
expect option_empty_out 2 "--out is empty" "$RUN_EXP" -f "$T/ok.json" --out ""
expect nsys_not_found 2 "Nsight Systems \(nsys\) is not on PATH.*--nsys-path" env PATH="$HERE/bin:/usr/bin:/bin" "$RUN_EXP" -f "$T/ok.json" --nsys
expect nsys_path_not_program 2 "--nsys-path /nonexistent/nsys is not an executable" "$RUN_EXP" -f "$T/ok.json" --nsys-path /nonexistent/nsys
expect shm_bad_name 2 "--shm: experiment tag 'a b' is invalid" "$RUN_EXP" -f "$T/ok.json" --shm 'a b'
# A segment that cannot be joined: one error, and no output directory left behind.
rm -rf "$T/out"
expect shm_missing 1 "no-such-experiment" "$RUN_EXP" -f "$T/ok.json" --shm no-such-experiment
check shm_missing_created_nothing test ! -e "$T/out"
# No GPU: one line pointing to --simulate.
rm -rf "$T/out"
out=$(FAKE_GPUS=0 "$RUN_EXP" -f "$T/ok.json" 2>&1); rc=$?
if [ "$rc" -eq 1 ] && [ "$(wc -l <<< "$out")" -eq 1 ] && grep -q "no GPU found here.*add --simulate" <<< "$out"; then
    pass no_gpu_points_to_simulate
else fail no_gpu_points_to_simulate "exit $rc: $out"; fi
check no_gpu_created_nothing test ! -e "$T/out"
# The guarded policy: by flag and file key, with its bound's keys; bad values exit 2, nothing made.
invalid guard_p50_range "guard_p50: must be a fraction 0\.\.1" --set 'policy="guarded"' --set guard_p50=1.5
invalid guard_p99_type "guard_p99: must be a fraction 0\.\.1 .*got a string" --set 'policy="guarded"' --set 'guard_p99="0.05"'
invalid guard_without_guarded "guard_p50: goes with \"policy\": \"guarded\"" --set 'policy="corun"' --set guard_p50=0.1
expect option_bad_guard_p50 2 "^run_exp: error: --guard-p50 'nan' must be a fraction 0\.\.1" "$RUN_EXP" -f "$T/ok.json" --guard-p50 nan
expect option_guard_needs_guarded 2 "--guard-p50 and --guard-p99 go with the policy guarded .*not corun" "$RUN_EXP" -f "$T/ok.json" --policy corun --guard-p50 0.1
expect option_policy_guarded 0 "policy: guarded" env FAKE_GPUS=0 "$RUN_EXP" -f "$T/ok.json" --policy guarded --guard-p99 0.1 --dry-run
cfg "$T/guarded.json" --set 'policy="guarded"' --set guard_p50=0.03 --set guard_p99=0.08
expect file_policy_guarded 0 "policy: guarded" env FAKE_GPUS=0 "$RUN_EXP" -f "$T/guarded.json" --dry-run
invalid guard_depth_without_guarded "guard_depth: goes with \"policy\": \"guarded\"" --set 'policy="corun"' --set guard_depth=true
invalid guard_depth_type "guard_depth: must be true or false, got a string" --set 'policy="guarded"' --set 'guard_depth="yes"'
expect option_guard_depth_needs_guarded 2 "--guard-depth, --guard-p50 and --guard-p99 go with the policy guarded .*not corun" "$RUN_EXP" -f "$T/ok.json" --policy corun --guard-depth
cfg "$T/guarded_depth.json" --set 'policy="guarded"' --set guard_depth=true
expect file_guard_depth 0 "policy: guarded" env FAKE_GPUS=0 "$RUN_EXP" -f "$T/guarded_depth.json" --dry-run

# ---- --dry-run -----------------------------------------------------------------------------------
cfg "$T/dry.json" --set models.0.control.control=true --set models.0.control.controlsync=true \
    --set models.0.control.controlEvent=true --set models.0.control.queue_limit.event_group=7 \
    --set models.1.control.control=true --set models.1.control.controlsync=true --set models.1.control.controlEvent=false \
    --set models.1.control.queue_limit.sync=3 --set 'models.0.resize=true' --set 'models.0.resize_size=[1440, 2560]' \
    --set 'models.1.batch_size=4'
rm -rf "$T/out"
out=$(FAKE_GPUS=0 "$RUN_EXP" -f "$T/dry.json" --dry-run 2>/dev/null); rc=$?
check dry_run_exit_zero_without_gpu test "$rc" -eq 0
dry() { grep -qE -- "$2" <<< "$out" && pass "dry_run_$1" || fail "dry_run_$1" "no '$2' in: $out"; }
dry says_nothing_started "dry run of .*nothing is started"
dry event_wins_over_sync "worker 0 'model_A': fasterrcnn_resnet50_fpn \(detection\), priority 0, mode event:7"
dry sync_mode "worker 1 'model_B': .*priority 1, mode sync:3 \(hooks on, each job marked"
dry command "command: .*fake_worker.sh -m gpuyield.worker --name model_A --model fasterrcnn_resnet50_fpn .*--resize 1440x2560 .*--priority 0 --device-id 0 --csv $T/out/model_A.csv"
dry batch_size "--batch-size 4"
dry ld_preload "env: LD_PRELOAD=$BUILD/lib/libgpuyield.so"
dry segment_env "GPUYIELD_SHM=/gpuyield-$UIDN-exp[0-9]+"
dry priority_env "GPUYIELD_PRIORITY=1"
dry mode_env "GPUYIELD_MODE=sync:3"
dry pythonpath_env "PYTHONPATH=$BUILD/python"
dry handshake_env "GPUYIELD_STATUS_FD=3"
dry device_not_checked "device_id 0 \(not checked: no GPU found here\)"
dry random_weights_notice "weights: random initialisation \(FasterRCNN_ResNet50_FPN_Weights needs a download"
check dry_run_created_nothing test ! -e "$T/out"
out=$("$RUN_EXP" -f "$T/ok.json" --dry-run 2>/dev/null)
dry uncontrolled_has_no_hooks "mode none \(uncontrolled: no hooks, jobs not marked\)"
if grep -q "LD_PRELOAD\|GPUYIELD_SHM" <<< "$out"; then fail dry_run_uncontrolled_env "hooks or segment in: $out"; else pass dry_run_uncontrolled_env; fi
out=$("$RUN_EXP" -f "$T/ok.json" --dry-run --simulate 2>/dev/null)
dry simulate_says_so "SIMULATED: stand-in workers"
dry simulate_uses_standin "command: $BUILD/bin/gpuyield-standin --name model_A"
dry simulate_fake_driver "LD_LIBRARY_PATH=$BUILD/fakecuda"
# The reference's files name device 1; the simulated GPU is device 0 whatever the machine has.
cfg "$T/dev1.json" --set device_id=1
out=$(FAKE_GPUS=0 "$RUN_EXP" -f "$T/dev1.json" --dry-run --simulate 2>&1)
dry simulate_any_device_id "device_id 1 \(simulated: runs on fake GPUs, one per device_id the models use, from 0\)"
dry simulate_runs_on_device_0 "gpuyield-standin .*--device-id 0"
dry simulate_one_fake_gpu "FAKECUDA_DEVICES=1"
# issue 20: a model's own device_id puts it on another GPU of the host (the reference's files,
# without it, keep every model on the experiment's device_id).
cfg "$T/pergpu.json" --set device_id=1 --set models.1.device_id=3
out=$(FAKE_GPUS=0 "$RUN_EXP" -f "$T/pergpu.json" --dry-run 2>&1)
dry per_model_gpu_default "  gpu: device_id 1$"
dry per_model_gpu_own "  gpu: device_id 3$"
dry per_model_gpu_command "--name model_B .*--device-id 3 "
out=$(FAKE_GPUS=0 "$RUN_EXP" -f "$T/pergpu.json" --dry-run --simulate 2>&1)
dry per_model_simulated "  gpu: device_id 3, simulated as fake GPU 1 of 2"
dry per_model_simulated_devices "FAKECUDA_DEVICES=2"
cfg "$T/badgpu.json" --set 'models.0.device_id="1"'
out=$(FAKE_GPUS=0 "$RUN_EXP" -f "$T/badgpu.json" --dry-run 2>&1)
dry per_model_gpu_type_error "models\[0\].device_id: must be an integer 0..1023"

# issue 27: "jobs": "auto" sets GPUYIELD_JOBS=auto for that worker (under control) and says so.
cfg "$T/autojobs.json" --set models.1.control.control=true --set 'models.1.jobs="auto"'
out=$(FAKE_GPUS=0 "$RUN_EXP" -f "$T/autojobs.json" --dry-run 2>&1)
dry auto_jobs_mode "worker 1 'model_B': .*priority 1, mode none \(hooks on, jobs opened by the hook at its priority \(GPUYIELD_JOBS=auto\)\)"
dry auto_jobs_env "GPUYIELD_JOBS=auto"
if grep -q "model_A.*GPUYIELD_JOBS\|GPUYIELD_JOBS=auto.*GPUYIELD_JOBS=auto" <<< "$out"; then fail dry_run_auto_jobs_one_model "$out"; else pass dry_run_auto_jobs_one_model; fi

# ---- runs with the stand-in Python (fake_worker.sh) ------------------------------------------
# csv_whole FILE MIN_ROWS: a header, then MIN_ROWS or more rows, each with 8 numeric fields.
csv_whole() {
    local f=$1 min=$2
    [ -f "$f" ] || { echo "no $f"; return 1; }
    [ "$(head -n 1 "$f")" = "job,start_ns,end_ns,jct_ms,drain_wait_ns,drained,gpu_mem_peak_bytes,gpu_mem_reserved_peak_bytes" ] || { echo "bad header in $f"; return 1; }
    local bad; bad=$(tail -n +2 "$f" | grep -cvE '^[0-9]+,[0-9]+,[0-9]+,[0-9.]+,[0-9]+,-?[01],[0-9]+,[0-9]+$')
    [ "$bad" -eq 0 ] || { echo "$bad malformed rows in $f"; return 1; }
    [ -z "$(tail -c 1 "$f")" ] || { echo "$f does not end with a newline"; return 1; }
    local rows; rows=$(($(wc -l < "$f") - 1))
    [ "$rows" -ge "$min" ] || { echo "$rows rows in $f, wanted >= $min"; return 1; }
}
pids_of() { "$PYTHON" -c 'import json,sys; print(" ".join(str(p) for _, p in json.load(open(sys.argv[1]))))' "$1"; }
none_alive() { local p; for p in "$@"; do alive "$p" && { echo "pid $p alive"; return 1; }; done; return 0; }
summary_field() { "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$T/out/summary.json" "$1"; }

rm -rf "$T/out"
cfg "$T/run.json" --set exp_dur=1 --set models.1.sleep_time=0.05 --set 'models.1.model_name="resnet50"' \
    --set 'models.1.resize=true' --set 'models.1.resize_size=[224, 224]'
# --min-jobs 10: the rows checked below do not depend on how fast the machine is.
FAKE_WORKER_MODE=env_dump runx "$RUN_EXP" -f "$T/run.json" --min-jobs 10
check run_exit_zero test "$rc" -eq 0
check run_waits_for_ready grep -q "waiting until every model is loaded and warmed up" <<< "$out"
check run_releases_together grep -q "all models ready; running for 1 s" <<< "$out"
check run_progress_line grep -qE "run_exp: \[ *[0-9.]+/1 s\]  model_A: [0-9]+ jobs  model_B: [0-9]+ jobs" <<< "$out"
check run_table_header grep -qE "^model +prio mode +jobs +jobs/s +JCT p50 +p90 +p99 ms +preempted +drain p50 +p99 ms" <<< "$out"
check run_table_rows grep -qE "^model_B +1 off +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +- +- +-" <<< "$out"
check run_csv_a_whole csv_whole "$T/out/model_A.csv" 10
check run_csv_b_whole csv_whole "$T/out/model_B.csv" 10
check run_log_is_stderr grep -q "fake worker model_A: pid" "$T/out/model_A.log"
check run_models_pid "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [n for n, _ in d] == ["fasterrcnn_resnet50_fpn", "resnet50_224"], d
assert all(isinstance(p, int) and p > 0 for _, p in d), d' "$T/out/models_pid.json"
check run_summary "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["outcome"] == "completed" and d["simulated"] is False, d
m = d["models"]
assert [x["name"] for x in m] == ["model_A", "model_B"] and all(x["jobs"] >= 10 for x in m), m
assert all(x["jct_ms"]["p50"] > 0 and x["throughput_jobs_per_s"] > 0 and x["exit"] == "exited with status 0" for x in m), m' "$T/out/summary.json"
check run_summary_provenance "$PYTHON" -c '
import json, re, sys
p = json.load(open(sys.argv[1]))["provenance"]
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", p["time"]), p
assert p["host"] and p["gpu"] == {"name": "Fake GPU", "driver": "999.99"}, p
assert p["gpuyield_version"] == open(sys.argv[2]).read().strip(), p
assert p["config"] == sys.argv[3], p
assert p["git_commit"] == (sys.argv[4] or None), p' "$T/out/summary.json" "$ROOT/VERSION" "$(realpath "$T/run.json")" \
    "$(git -C "$ROOT" rev-parse --verify -q HEAD 2>/dev/null)"
# Floats are rounded to 3 decimals and printed short: no 32.533999999999999.
check run_summary_floats_short bash -c "! grep -qE '[0-9]\.[0-9]{4,}' '$T/out/summary.json'"
check run_env_model_name grep -qx "GPUYIELD_MODEL=resnet50_224" "$T/out/model_B.csv.env"
check run_no_process_left none_alive $(pids_of "$T/out/models_pid.json")
check run_no_segment_left test "$(segments_of "$RUN_PID")" -eq 0
check run_env_priority grep -qx "GPUYIELD_PRIORITY=1" "$T/out/model_B.csv.env"
check run_env_mode grep -qx "GPUYIELD_MODE=none" "$T/out/model_B.csv.env"
check run_env_pythonpath grep -q "^PYTHONPATH=$BUILD/python" "$T/out/model_B.csv.env"
check run_env_uncontrolled_no_hooks bash -c "! grep -q '^LD_PRELOAD=.*libgpuyield\|^GPUYIELD_SHM=' '$T/out/model_A.csv.env'"

# The same run under ASan+UBSan (leaks included): supervision, results and summary are clean.
if [ -x "$RUN_EXP_ASAN" ]; then
    rm -rf "$T/out"
    out=$(GPUYIELD_BUILD=$BUILD "$RUN_EXP_ASAN" -f "$T/run.json" --min-jobs 10 2>&1); rc=$?
    check run_asan_clean test "$rc" -eq 0 || echo "$out" | tail -n 30
    check run_asan_csv csv_whole "$T/out/model_A.csv" 10
fi

# At least --min-jobs jobs, even when exp_dur is over before.
rm -rf "$T/out"
cfg "$T/min.json" --set exp_dur=0.2 --set models.0.sleep_time=0.1 --set models.1.sleep_time=0.1
out=$("$RUN_EXP" -f "$T/min.json" --min-jobs 12 2>&1); rc=$?
check min_jobs_exit_zero test "$rc" -eq 0
check min_jobs_a csv_whole "$T/out/model_A.csv" 12
check min_jobs_b csv_whole "$T/out/model_B.csv" 12

# --out overrides every output_file_path.
rm -rf "$T/out" "$T/elsewhere"
out=$("$RUN_EXP" -f "$T/min.json" --min-jobs 1 --out "$T/elsewhere" 2>&1); rc=$?
check out_dir_used test "$rc" -eq 0 -a -f "$T/elsewhere/model_A.csv" -a -f "$T/elsewhere/summary.json" -a ! -e "$T/out"

# A worker that dies: reported with its status and log path; the others stopped; exit 1.
rm -rf "$T/out"
cfg "$T/die.json" --set exp_dur=30 --set models.1.output_file_name='"dier"'
start=$(date +%s)
FAKE_WORKER_MODE=die_after=3 runx "$RUN_EXP" -f "$T/die.json"
check worker_death_exit_one test "$rc" -eq 1
check worker_death_reported grep -qE "error: worker '(model_A|dier)' \(pid [0-9]+\) exited with status 3 before the experiment ended; its log: $T/out/(model_A|dier)\.log" <<< "$out"
check worker_death_log_tail grep -q "| fake worker .*: dying on purpose" <<< "$out"
check worker_death_fast test $(($(date +%s) - start)) -lt 20
check worker_death_summary test "$(summary_field 'd["outcome"]')" = worker_failed
check worker_death_no_process_left none_alive $(pids_of "$T/out/models_pid.json")
check worker_death_no_segment test "$(segments_of "$RUN_PID")" -eq 0

# issue 19: a symbolic link planted at a worker's log: refused with one line, nothing written
# through it, exit 1.
rm -rf "$T/out"; mkdir -p "$T/out"; : > "$T/victim.txt"
ln -s "$T/victim.txt" "$T/out/model_A.log"
runx "$RUN_EXP" -f "$T/min.json" --min-jobs 1
check log_symlink_refused_exit test "$rc" -eq 1
check log_symlink_refused_line grep -q "model_A.log is a symbolic link: refused" <<< "$out"
check log_symlink_not_written_through test ! -s "$T/victim.txt"
check log_symlink_no_segment test "$(segments_of "$RUN_PID")" -eq 0
# issue 29: an output path of ~4090 bytes is refused at the check, where its files' paths would
# pass PATH_MAX (the run wrote a file named after the cut path); so is a component over NAME_MAX.
LONG=$("$PYTHON" -c 'import sys; d = sys.argv[1] + "/long"; print((d + ("/" + "d" * 200) * 21)[:4090].rstrip("/"))' "$T")
invalid output_path_too_long "models\[0\]\.output_file_path: '$T/long/d+\.\.\.' is 4090 bytes long: the paths of the files written in it .* would pass the system's limit of 4096 bytes \(PATH_MAX\)" \
    --set "models.0.output_file_path=\"$LONG\""
check output_path_too_long_nothing_written test ! -e "$T/long"
cfg "$T/long_out.json"
expect out_path_too_long 2 "models\[0\]\.output_file_path: --out '$T/long/d+\.\.\.' is 4090 bytes long" "$RUN_EXP" -f "$T/long_out.json" --out "$LONG"
check out_path_too_long_nothing_written test ! -e "$T/long"
invalid output_component_too_long "models\[0\]\.output_file_path: .* has a component of 300 bytes \('e{20}\.\.\.'\): a file or directory name is at most 255 bytes" \
    --set "models.0.output_file_path=\"$T/out/$(printf 'e%.0s' $(seq 300))\""
# Just under the bound: the run writes its files at their full names.
FITS=${LONG:0:$((4096 - 1 - 33 - 1))}; FITS=${FITS%/}
rm -rf "$T/long"
runx "$RUN_EXP" -f "$T/min.json" --min-jobs 1 --out "$FITS"
check output_path_at_the_bound_runs test "$rc" -eq 0
check output_path_at_the_bound_full_names test -f "$FITS/model_A.csv" -a -f "$FITS/model_B.log" -a -f "$FITS/summary.json"
rm -rf "$T/long"
# issue 29: another user pre-created this run's segment name (exp<pid>) and planted a link at its
# simulated GPU's file: the run takes other names, touches neither, and leaves nothing behind.
PLANT_UID=$UIDN; [ "$UIDN" -eq 0 ] && PLANT_UID=65534  # root here: the planted files are nobody's
# The shell plants at its own pid's names, then becomes run_exp (same pid, RUN_PID).
# plant UID OWNER VICTIM both|link COMMAND...: "both" plants the segment's name and the link.
PLANT='seg=/dev/shm/gpuyield-$1-exp$$; dev=${TMPDIR:-/tmp}/gpuyield-sim-$1-$$.dev
    if [ "$4" = both ]; then : > "$seg"; chown "$2" "$seg" 2>/dev/null; fi
    ln -s "$3" "$dev"; chown -h "$2" "$dev" 2>/dev/null
    shift 4; exec "$@"'
rm -rf "$T/out"; : > "$T/victim.dev"
FAKE_GPUS=0 runx bash -c "$PLANT" plant "$UIDN" "$PLANT_UID" "$T/victim.dev" both "$RUN_EXP" -f "$T/min.json" --simulate --min-jobs 2
check planted_segment_name_run_exit_zero test "$rc" -eq 0 || echo "$out" | tail -n 20
check planted_segment_name_says_so grep -q "segment /gpuyield-$UIDN-exp$RUN_PID is taken (another run's, or another user's): using /gpuyield-$UIDN-exp$RUN_PID-1" <<< "$out"
check planted_segment_name_ran csv_whole "$T/out/model_A.csv" 2
check planted_segment_name_used test "$(summary_field 'd["segment"]')" = "/gpuyield-$UIDN-exp$RUN_PID-1"
check planted_segment_untouched test -f "/dev/shm/gpuyield-$UIDN-exp$RUN_PID" -a ! -s "/dev/shm/gpuyield-$UIDN-exp$RUN_PID"
check planted_segment_own_removed test ! -e "/dev/shm/gpuyield-$UIDN-exp$RUN_PID-1"
check planted_device_link_not_followed test ! -s "$T/victim.dev"
check planted_device_own_removed test ! -e "${TMPDIR:-/tmp}/gpuyield-sim-$UIDN-$RUN_PID-1.dev"
rm -f "/dev/shm/gpuyield-$UIDN-exp$RUN_PID" "${TMPDIR:-/tmp}/gpuyield-sim-$UIDN-$RUN_PID.dev"
# The link alone (the segment's name free): the fake driver used to open it and size the file it
# points to.
rm -rf "$T/out"; : > "$T/victim.dev"
FAKE_GPUS=0 runx bash -c "$PLANT" plant "$UIDN" "$PLANT_UID" "$T/victim.dev" link "$RUN_EXP" -f "$T/min.json" --simulate --min-jobs 2
check planted_device_alone_run_exit_zero test "$rc" -eq 0 || echo "$out" | tail -n 20
check planted_device_alone_segment_own test "$(summary_field 'd["segment"]')" = "/gpuyield-$UIDN-exp$RUN_PID"
check planted_device_alone_link_not_followed test ! -s "$T/victim.dev"
check planted_device_alone_link_left test -L "${TMPDIR:-/tmp}/gpuyield-sim-$UIDN-$RUN_PID.dev"
check planted_device_alone_own_removed test ! -e "${TMPDIR:-/tmp}/gpuyield-sim-$UIDN-$RUN_PID-1.dev"
rm -f "${TMPDIR:-/tmp}/gpuyield-sim-$UIDN-$RUN_PID.dev"
# A huge experiment file is refused before it is read, with one line.
truncate -s 17M "$T/huge.json"
expect config_too_large 2 "huge.json is [0-9]+ bytes: an experiment file is at most 16 MiB" "$RUN_EXP" -f "$T/huge.json"
mkfifo "$T/fifo.json"
expect config_fifo_refused 2 "fifo.json is not a regular file" timeout 20 "$RUN_EXP" -f "$T/fifo.json"

# A worker that cannot be started at all. Both fail; either may be reaped (and reported) first.
rm -rf "$T/out"
expect worker_exec_fails 1 "worker '(model_A|model_B)' \(pid [0-9]+\) exited with status 127 before the experiment ended; its log" \
    "$RUN_EXP" -f "$T/ok.json" --python /nonexistent/python3
expect worker_exec_fails_says_why 1 "\| run_exp: cannot start the worker program '/nonexistent/python3': No such file" \
    "$RUN_EXP" -f "$T/ok.json" --python /nonexistent/python3

# Not ready in time.
rm -rf "$T/out"
expect ready_timeout 1 "worker 'model_A' \(pid [0-9]+\) was not ready after 1 s.*raise --ready-timeout" \
    env FAKE_WORKER_MODE=never_ready "$RUN_EXP" -f "$T/ok.json" --ready-timeout 1
check ready_timeout_no_process_left none_alive $(pids_of "$T/out/models_pid.json")
# Two workers of the same model at the same size: the reference's names would collide.
check models_pid_names_disambiguated "$PYTHON" -c '
import json, sys
names = [n for n, _ in json.load(open(sys.argv[1]))]
assert names == ["fasterrcnn_resnet50_fpn_model_A", "fasterrcnn_resnet50_fpn_model_B"], names' "$T/out/models_pid.json"

# What a worker started goes with it, even a child that ignores SIGTERM.
rm -rf "$T/out"
cfg "$T/short.json" --set exp_dur=0.3
expect leave_child_runs 0 "" env FAKE_WORKER_MODE=leave_child "$RUN_EXP" -f "$T/short.json" --min-jobs 1
check leave_child_recorded test -s "$T/out/model_A.csv.child"
check leave_child_no_process_left none_alive $(cat "$T"/out/*.csv.child 2>/dev/null)

# A worker that ignores "stop" is terminated after --stop-timeout.
rm -rf "$T/out"
cfg "$T/short.json" --set exp_dur=0.3
expect stop_timeout_terminates 0 "worker 'model_A' \(pid [0-9]+\) did not stop in time: terminating it" \
    env FAKE_WORKER_MODE=ignore_stop "$RUN_EXP" -f "$T/short.json" --min-jobs 1 --stop-timeout 1
check stop_timeout_no_process_left none_alive $(pids_of "$T/out/models_pid.json")

# SIGINT mid-run: workers stopped, rows whole, summary written, exit 130, nothing left.
sigrun() { # sigrun SIGNAL WAIT_FOR_PATTERN MODE: start run_exp, send SIGNAL once PATTERN is printed
    local sig=$1 pattern=$2 mode=$3
    rm -rf "$T/out"; : > "$T/sig.out"
    FAKE_WORKER_MODE=$mode "$RUN_EXP" -f "$T/die.json" > "$T/sig.out" 2>&1 &
    local pid=$! i
    wait_until 120 grep -q "$pattern" "$T/sig.out"; SIG_SEEN=$?
    SEG_DURING=$(ls /dev/shm | grep -c "^gpuyield-$UIDN-exp$pid\$")
    kill -"$sig" "$pid"
    local t0; t0=$(date +%s)
    wait "$pid"; SIG_RC=$?
    SIG_SECONDS=$(($(date +%s) - t0))
    SIG_PID=$pid
}
sigrun INT "model_A: [1-9][0-9]* jobs" normal
check sigint_sent_mid_run test "$SIG_SEEN" -eq 0
check sigint_segment_existed_during_run test "$SEG_DURING" -eq 1
check sigint_exit_130 test "$SIG_RC" -eq 130
check sigint_prompt test "$SIG_SECONDS" -lt 15
check sigint_says_interrupted grep -q "interrupted: stopping the workers" "$T/sig.out"
check sigint_csv_whole_a csv_whole "$T/out/model_A.csv" 1
check sigint_csv_whole_b csv_whole "$T/out/dier.csv" 1
check sigint_summary test "$(summary_field 'd["outcome"]')" = interrupted
check sigint_no_process_left none_alive $(pids_of "$T/out/models_pid.json")
check sigint_no_segment test "$(segments_of "$SIG_PID")" -eq 0
sigrun TERM "waiting until every model" never_ready
check sigterm_sent_while_loading test "$SIG_SEEN" -eq 0
# issue 28: SIGTERM exits 143 (128 + 15, as a shell reports it), not SIGINT's 130.
check sigterm_while_loading_exit_143 test "$SIG_RC" -eq 143
check sigterm_while_loading_prompt test "$SIG_SECONDS" -lt 10
check sigterm_while_loading_no_process_left none_alive $(pids_of "$T/out/models_pid.json")
check sigterm_while_loading_no_segment test "$(segments_of "$SIG_PID")" -eq 0

# run_exp killed outright: PR_SET_PDEATHSIG ends its workers.
rm -rf "$T/out"
"$RUN_EXP" -f "$T/die.json" > "$T/kill.out" 2>&1 &
pid=$!
wait_until 120 grep -q "all models ready" "$T/kill.out"
workers=$(pgrep -P "$pid" | tr '\n' ' ')
kill -KILL "$pid"; wait "$pid" 2>/dev/null
check sigkill_workers_found test -n "$workers"
# SIGTERM from PR_SET_PDEATHSIG: prompt, but a crowded machine may take a while to run them.
check sigkill_workers_die_with_run_exp wait_until 30 none_alive $workers
# The segment of a SIGKILLed run_exp stays (nobody can remove it): expcontroller clean does.
flock "$CLEAN_LOCK" "$BUILD/bin/expcontroller" clean > /dev/null 2>&1
check sigkill_segment_cleanable test "$(segments_of "$pid")" -eq 0

# --shm joins an existing segment and leaves it in place.
TAG=test-runexp-$$
# Made by a live serve: `expcontroller clean` (of a run beside this one) leaves it alone.
"$BUILD/bin/expcontroller" serve --name "$TAG" > /dev/null 2>&1 &
SERVE=$!
wait_until 60 test -e "/dev/shm/gpuyield-$UIDN-$TAG"
rm -rf "$T/out"
cfg "$T/join.json" --set exp_dur=0.2 --set models.1.control.control=true
# control: true on a fake (bash) worker would preload the hooks into bash: keep model_B's env only.
out=$(FAKE_WORKER_MODE=env_dump "$RUN_EXP" -f "$T/min.json" --shm "$TAG" --min-jobs 1 2>&1); rc=$?
check shm_join_runs test "$rc" -eq 0
check shm_join_left_in_place test -e "/dev/shm/gpuyield-$UIDN-$TAG"
kill -TERM "$SERVE"; wait "$SERVE" # removes the segment
expect shm_join_missing 1 "no segment /gpuyield-$UIDN-$TAG-none" "$RUN_EXP" -f "$T/min.json" --shm "$TAG-none"

# --nsys: the experiment runs under `nsys profile` (a stand-in here), the report is exported to sqlite.
rm -rf "$T/out"
out=$("$RUN_EXP" -f "$T/min.json" --min-jobs 1 --nsys-path "$HERE/nsys/nsys" 2>&1); rc=$?
check nsys_run_exit_zero test "$rc" -eq 0 || echo "$out" | tail -n 20
check nsys_tracing_options grep -qx " -t cuda,nvtx -s none --cpuctxsw=none -f true" "$T/out/nsight_report.args"
check nsys_runs_run_exp_without_nsys bash -c "grep -q 'bin/run_exp -f $T/min.json --min-jobs 1\$' '$T/out/nsight_report.command' && ! grep -q -- --nsys '$T/out/nsight_report.command'"
check nsys_sqlite_exported grep -q "fake sqlite of $T/out/nsight_report.nsys-rep" "$T/out/nsight_report.sqlite"
check nsys_experiment_ran csv_whole "$T/out/model_A.csv" 1
check nsys_says_where grep -q "Nsight Systems report $T/out/nsight_report.nsys-rep, sqlite $T/out/nsight_report.sqlite" <<< "$out"

# ---- --simulate: the stand-in worker on the fake driver, with the hooks --------------------
if [ ! -e "$BUILD/fakecuda/libcuda.so.1" ] || [ ! -e "$BUILD/lib/libgpuyield.so" ] || [ ! -x "$BUILD/bin/gpuyield-standin" ]; then
    fail simulate_pipeline "needs $BUILD/fakecuda/libcuda.so.1, $BUILD/lib/libgpuyield.so and $BUILD/bin/gpuyield-standin: build them"
else
    rm -rf "$T/out"
    # The reference's input_control.json, shortened: a heavy back-to-back job at priority 0 and a
    # light one at priority 1 every 0.1 s, both under control.
    cfg "$T/sim.json" --set exp_dur=3 --set models.0.control.control=true --set models.1.control.control=true \
        --set models.0.resize=true --set 'models.0.resize_size=[1440, 2560]' --set models.1.sleep_time=0.1
    FAKE_GPUS=0 runx "$RUN_EXP" -f "$T/sim.json" --simulate --min-jobs 10
    check simulate_exit_zero test "$rc" -eq 0 || echo "$out" | tail -n 20
    check simulate_says_so grep -q "SIMULATED run" <<< "$out"
    check simulate_table_says_so grep -q "^SIMULATED figures" <<< "$out"
    check simulate_csv_a csv_whole "$T/out/model_A.csv" 10
    check simulate_csv_b csv_whole "$T/out/model_B.csv" 10
    check simulate_summary "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["simulated"] is True and d["outcome"] == "completed" and "simulated" in d["note"], d
b = d["models"][1]
assert b["marked_jobs"] == b["jobs"] >= 10 and b["drain_timeouts"] == 0, b' "$T/out/summary.json"
    check simulate_hp_jobs_drained bash -c "tail -n +2 '$T/out/model_B.csv' | cut -d, -f6 | sort -u | grep -qx 1"
    check simulate_kernel_log test -s "$T/out/simulated_kernels.log"
    # Gating, end to end: no low-priority kernel runs inside a high-priority job's window.
    check simulate_lp_yields "$PYTHON" - "$T/out" <<'PY'
import csv, json, sys
out = sys.argv[1]
pids = dict((n, p) for n, p in json.load(open(f"{out}/models_pid.json")))
lp, hp = pids["fasterrcnn_resnet50_fpn_1440"], pids["fasterrcnn_resnet50_fpn"]
jobs = [(int(r["start_ns"]), int(r["end_ns"])) for r in csv.DictReader(open(f"{out}/model_B.csv"))]
kernels = {lp: [], hp: []}
for line in open(f"{out}/simulated_kernels.log"):
    f = line.split()
    assert f[1] != "VIOLATION", line
    if int(f[0]) in kernels:
        kernels[int(f[0])].append((int(f[2]), int(f[3]), int(f[4])))  # submit, start, end
assert kernels[lp] and kernels[hp], "kernels of both processes are logged"
overlaps = 0
for s, e in jobs:
    # The job's own kernels, from its first start to its last end, must run alone.
    mine = [(ks, ke) for sub, ks, ke in kernels[hp] if s <= sub <= e]
    assert mine, "a high-priority job without kernels"
    lo, hi = min(k[0] for k in mine), max(k[1] for k in mine)
    overlaps += sum(1 for _, ks, ke in kernels[lp] if ks < hi and ke > lo)
assert overlaps == 0, f"{overlaps} low-priority kernels ran inside high-priority jobs"
PY
    check simulate_no_segment test "$(segments_of "$RUN_PID")" -eq 0
    check simulate_no_device_file test ! -e "${TMPDIR:-/tmp}/gpuyield-sim-$UIDN-$RUN_PID.dev"
    check simulate_no_process_left none_alive $(pids_of "$T/out/models_pid.json")
    if PYTHONPATH=$BUILD/python "$PYTHON" -c 'import gpuyield.plot' 2>/dev/null; then
        check simulate_plot_jct env PYTHONPATH="$BUILD/python" "$PYTHON" -m gpuyield.plot jct "$T/out/model_A.csv" "$T/out/model_B.csv" -o "$T/out/jct.png"
        check simulate_plot_png test -s "$T/out/jct.png"
        # issue 28: the plot of a simulated run says so, and its legend gives each model's priority.
        check simulate_plot_says_simulated env PYTHONPATH="$BUILD/python" "$PYTHON" -c '
import sys
from gpuyield import plot
for make in (plot.jct_figure, plot.cdf_figure):
    fig = make(sys.argv[1:])
    assert "SIMULATED" in fig.axes[0].get_title() and any("SIMULATED" in t.get_text() for t in fig.texts), make
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend[0].startswith("model_A (priority 0") and legend[1].startswith("model_B (priority 1"), legend' \
            "$T/out/model_A.csv" "$T/out/model_B.csv"
    else
        echo "note: gpuyield.plot is not there yet: the plot step of the pipeline is not tested"
    fi
    # issue 28: a signal mid-run of a simulated experiment (a scheduler's SIGTERM, a Ctrl-C, a
    # second signal that kills the workers at once): exit 128 + the signal, workers gone, no
    # segment or device file left, and every file whole (CSV rows, kernel-log lines, the JSON
    # written or not there, no temporary file).
    cfg "$T/simsig.json" --set exp_dur=120 --set models.0.control.control=true --set models.1.control.control=true \
        --set models.1.sleep_time=0.05
    # simsig SIGNAL [SIGNAL...]: start the run, send the signals once both models have rows.
    simsig() {
        rm -rf "$T/out"
        FAKE_GPUS=0 "$RUN_EXP" -f "$T/simsig.json" --simulate > "$T/simsig.out" 2>&1 &
        local pid=$! sig
        wait_until 120 bash -c "[ \$(wc -l < '$T/out/model_A.csv') -ge 3 ] && [ \$(wc -l < '$T/out/model_B.csv') -ge 3 ]"
        SIG_SEEN=$?
        SEG_DURING=$(segments_of "$pid")
        SIG_WORKERS=$(pgrep -P "$pid" | tr '\n' ' ')
        for sig in "$@"; do kill -"$sig" "$pid"; sleep 0.05; done
        wait "$pid"; SIG_RC=$?
        SIG_PID=$pid
    }
    # Every line of the kernel log whole: a newline at the end, five fields or more on each.
    kernel_log_whole() {
        local f=$T/out/simulated_kernels.log
        [ -s "$f" ] && [ -z "$(tail -c 1 "$f")" ] && ! awk 'NF < 5 { bad = 1 } END { exit !bad }' "$f"
    }
    files_whole() {
        csv_whole "$T/out/model_A.csv" 1 && csv_whole "$T/out/model_B.csv" 1 && kernel_log_whole &&
            "$PYTHON" -c 'import json,sys; [json.load(open(f)) for f in sys.argv[1:]]' "$T/out/summary.json" "$T/out/models_pid.json" &&
            [ -z "$(find "$T/out" -name '*.tmp*')" ]
    }
    for sigs in TERM INT "TERM TERM"; do
        name=${sigs// /_}; name=${name,,}
        simsig $sigs
        want=143; [ "$sigs" = INT ] && want=130
        check "simulate_sig${name}_sent_mid_run" test "$SIG_SEEN" -eq 0 -a "$SEG_DURING" -eq 1 -a -n "$SIG_WORKERS"
        if [ "$SIG_RC" -eq "$want" ]; then pass "simulate_sig${name}_exit_$want"; else fail "simulate_sig${name}_exit_$want" "exit $SIG_RC: $(tail -n 5 "$T/simsig.out")"; fi
        check "simulate_sig${name}_says_interrupted" grep -q "interrupted: stopping the workers" "$T/simsig.out"
        check "simulate_sig${name}_summary" test "$(summary_field 'd["outcome"]')" = interrupted
        check "simulate_sig${name}_no_process_left" none_alive $SIG_WORKERS $(pids_of "$T/out/models_pid.json")
        check "simulate_sig${name}_no_segment" test "$(segments_of "$SIG_PID")" -eq 0
        check "simulate_sig${name}_no_device_file" test ! -e "${TMPDIR:-/tmp}/gpuyield-sim-$UIDN-$SIG_PID.dev"
        check "simulate_sig${name}_files_whole" files_whole
    done
    # The same under corun: the stand-in writes drained=2 (co-run, run_exp/protocol.h), and a
    # begin that does not wait is no drain timeout.
    rm -rf "$T/out"
    cfg "$T/simcorun.json" --set exp_dur=1 --set models.0.control.control=true --set models.1.control.control=true \
        --set models.1.sleep_time=0.1
    FAKE_GPUS=0 runx "$RUN_EXP" -f "$T/simcorun.json" --simulate --min-jobs 3 --policy corun
    check simulate_corun_exit_zero test "$rc" -eq 0 || echo "$out" | tail -n 20
    check simulate_corun_drained_2 bash -c "tail -n +2 '$T/out/model_B.csv' | cut -d, -f6 | sort -u | grep -qx 2"
    check simulate_corun_no_timeouts "$PYTHON" -c '
import json, sys
b = json.load(open(sys.argv[1]))["models"][1]
assert b["marked_jobs"] == b["jobs"] >= 3 and b["drain_timeouts"] == 0, b' "$T/out/summary.json"
    # issue 27: the light model with "jobs": "auto": its worker marks nothing, the hook opens its
    # jobs, and still no low-priority kernel runs inside one of its jobs.
    rm -rf "$T/out"
    cfg "$T/simauto.json" --set exp_dur=2 --set models.0.control.control=true --set models.1.control.control=true \
        --set models.0.resize=true --set 'models.0.resize_size=[1440, 2560]' --set models.1.sleep_time=0.1 \
        --set 'models.1.jobs="auto"'
    FAKE_GPUS=0 runx "$RUN_EXP" -f "$T/simauto.json" --simulate --min-jobs 5
    check simulate_auto_exit_zero test "$rc" -eq 0 || echo "$out" | tail -n 20
    check simulate_auto_unmarked "$PYTHON" -c '
import json, sys
b = json.load(open(sys.argv[1]))["models"][1]
assert b["marked_jobs"] == 0 and b["jobs"] >= 5, b' "$T/out/summary.json"
    check simulate_auto_lp_yields "$PYTHON" - "$T/out" <<'PY'
import csv, json, sys
out = sys.argv[1]
pids = dict((n, p) for n, p in json.load(open(f"{out}/models_pid.json")))
lp, hp = pids["fasterrcnn_resnet50_fpn_1440"], pids["fasterrcnn_resnet50_fpn"]
jobs = [(int(r["start_ns"]), int(r["end_ns"])) for r in csv.DictReader(open(f"{out}/model_B.csv"))]
kernels = {lp: [], hp: []}
for line in open(f"{out}/simulated_kernels.log"):
    f = line.split()
    assert f[1] != "VIOLATION", line
    if int(f[0]) in kernels:
        kernels[int(f[0])].append((int(f[2]), int(f[3]), int(f[4])))
assert kernels[lp] and kernels[hp], "kernels of both processes are logged"
overlaps = between = 0
for s, e in jobs:
    mine = [(ks, ke) for sub, ks, ke in kernels[hp] if s <= sub <= e]
    assert mine, "a high-priority job without kernels"
    lo, hi = min(k[0] for k in mine), max(k[1] for k in mine)
    overlaps += sum(1 for _, ks, ke in kernels[lp] if ks < hi and ke > lo)
for (_, e0), (s1, _) in zip(jobs, jobs[1:]):
    between += sum(1 for _, ks, ke in kernels[lp] if ks > e0 and ke < s1)
assert overlaps == 0, f"{overlaps} low-priority kernels ran inside the auto jobs"
assert between > 0, "the low-priority model never ran between the auto jobs"
PY
fi

# ---- --layout-compat: the drop-in for the original experiment's harness ------------------------
L=$T/layout
expect layout_usage_no_dir 2 "takes one directory" "$RUN_EXP" --layout-compat
expect layout_usage_extra_option 2 "takes one directory" "$RUN_EXP" --layout-compat "$L" -f x.json
expect layout_missing_build 1 "libgeek.so is missing: build it" env GPUYIELD_BUILD=$T/nobuild "$RUN_EXP" --layout-compat "$L"
expect layout_uncreatable_dir 1 "cannot create directory" "$RUN_EXP" --layout-compat /proc/gy-no-such/dir
expect layout_places_the_files 0 "pytcppexp/libgeek.so" "$RUN_EXP" --layout-compat "$L"
want="intercept-lib/build/lib/libcuinterpose.so
intercept-lib/build/lib/libcuinterpose_event.so
intercept-lib/build/lib/libcuinterpose_sync.so
pytcppexp/libgeek.so"
got=$(cd "$L" && find . -type f | sed 's|^\./||' | sort)
check layout_exactly_the_four_files test "$got" = "$want"
same=1
for f in $want; do cmp -s "$L/$f" "$BUILD/lib/$(basename "$f")" || same=0; done
check layout_files_are_this_builds test "$same" = 1
printf 'stale' > "$L/pytcppexp/libgeek.so"
"$RUN_EXP" --layout-compat "$L" >/dev/null 2>&1
check layout_again_replaces_stale_files cmp -s "$L/pytcppexp/libgeek.so" "$BUILD/lib/libgeek.so"
# The original harness's way, from DIR/gpu-tester: relative ctypes load, SUFFIX/ID env, LD_PRELOAD.
mkdir -p "$L/gpu-tester"
cp "$HERE/original/harness.py" "$L/gpu-tester/run_exp.py"
for lib_mode in libcuinterpose_sync.so:sync:2 libcuinterpose_event.so:event:3 libcuinterpose.so:none; do
    lib=${lib_mode%%:*} mode=${lib_mode#*:}
    out=$(cd "$L/gpu-tester" && env -u GPUYIELD_SHM -u GPUYIELD_MODE -u GPUYIELD_PRIORITY GPUYIELD_VERBOSE=1 \
        LD_LIBRARY_PATH="$BUILD/fakecuda" "$PYTHON" run_exp.py "$lib" "$BUILD/tests/hooks/cuda_worker" plain 3 2>&1)
    rc=$?
    suffix=$(head -n 1 <<< "$out")
    if [ "$rc" -eq 0 ] && grep -q "gates its kernel launches through /gpuyield-$UIDN-compat$suffix (slot [0-9]*) at priority 0, queue mode $mode\$" <<< "$out" &&
        [ "$(wc -l <<< "$out")" -eq 2 ] && [ ! -e "/dev/shm/gpuyield-$UIDN-compat$suffix" ]; then
        pass "layout_original_harness_$lib"
    else
        fail "layout_original_harness_$lib" "exit $rc: $out"
    fi
done

# ---- the Python worker's logic (no torch: the job is a stand-in) -----------------------------
PYTHONPATH="$BUILD/python" run_pytest worker_py "$HERE/test_worker.py"

finish
