#!/usr/bin/env bash
# Issue 3's gating proof: exp_configs/input_control.json (drain, no MPS) for 8 s with the HP every
# 0.2 s under Nsight (nsight_input_control.sh into R/nsight), then gating_proof.py over the export:
# no lower kernel, copy or memset overlaps an HP job. Writes R/gating_proof.json; the proof's exit
# status is this script's.
#   bash bench/gpu/gating.sh BUILD R       (run_all.sh stage gating)
set -u
. bench/gpu/env.sh
B=$1; R=$2
"$PY" -c "import json; c=json.load(open('exp_configs/input_control.json')); c['exp_dur']=8; c['models'][1]['sleep_time']=0.2; json.dump(c, open('/tmp/ic8.json','w'))"
CONFIG=/tmp/ic8.json RUN=/tmp/gating OUT=$R/nsight BUILD=$B bash bench/gpu/nsight_input_control.sh 2>&1 | grep -v '^\[\|Processing' | tail -25
"$PY" -m bench.gpu.gating_proof /tmp/gating/nsight_report.sqlite /tmp/gating/models_pid.json /tmp/ic8.json "$R/gating_proof.json"
