#!/usr/bin/env bash
# The HP model of exp_configs/input_control.json alone for 8 s (a job every 0.2 s) under Nsight,
# through nsight_input_control.sh into R/nsight-alone: its kernels with nothing beside it.
#   bash bench/gpu/nsight_alone.sh BUILD R       (run_all.sh stage nsight-alone)
set -u
. bench/gpu/env.sh
B=$1; R=$2
"$PY" -c "import json; c=json.load(open('exp_configs/input_control.json')); c['exp_dur']=8; c['models']=[c['models'][1]]; c['models'][0]['sleep_time']=0.2; json.dump(c, open('/tmp/hp8.json','w'))"
CONFIG=/tmp/hp8.json RUN=/tmp/nsight-alone OUT=$R/nsight-alone BUILD=$B bash bench/gpu/nsight_input_control.sh 2>&1 | grep -v '^\[\|Processing' | tail -8
