#!/usr/bin/env bash
# Smoke test of run_exp on the GPU machine: exp_configs/input_control.json (control, two models)
# for 8 s; run_exp's own summary is the result.
#   bash bench/gpu/smoke.sh BUILD RESULTS_DIR       (run_all.sh stage smoke)
set -u
. bench/gpu/env.sh
B=$1; D=$2
"$PY" - <<'PY'
import json
cfg = json.load(open("exp_configs/input_control.json")); cfg["exp_dur"] = 8
json.dump(cfg, open("/tmp/smoke.json", "w"))
PY
"$B/bin/run_exp" -f /tmp/smoke.json --out "$D" 2>&1 | tail -25
