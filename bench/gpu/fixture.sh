#!/usr/bin/env bash
# The two-model Nsight fixture (tests/fixtures/nsys/): resnet50 batch 16 (LP) beside resnet18
# every 0.1 s (HP) under control (event), 1 s and at least 10 jobs, run_exp --nsys; the SQLite
# export, models_pid.json and the config go to R/fixture/two_models_control.* (the tests keep the
# export as `xz -9` of it, tests/fixtures/nsys/two_models_control.sqlite.xz: the working tree travels
# to the GPU machine under a size limit).
#   bash bench/gpu/fixture.sh BUILD R       (run_all.sh stage fixture)
set -u
. bench/gpu/env.sh
B=$1; R=$2
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
ls -la "$R/fixture"
