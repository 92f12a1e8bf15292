#!/usr/bin/env bash
# Issue 3's gating proof: exp_configs/input_control.json (drain, no MPS) for 8 s with the HP every
# 0.2 s under Nsight (nsight_input_control.sh into R/nsight), then gating_proof.py over the export:
# no lower kernel, copy or memset overlaps an HP job. Writes R/gating_proof.json; the proof's exit
# status is this script's.
# With `auto` (stage gating-auto, issue 27): the same with the HP unmarked, "jobs": "auto" (the
# hook opens its jobs, GPUYIELD_JOBS=auto, at the default idle time) and "policy": "drain" said
# outright; the proof takes its jobs from the hook's "gpuyield auto-job" NVTX ranges. Into
# R/nsight-auto and R/gating_auto_proof.json.
#   bash bench/gpu/gating.sh BUILD R [auto]     (run_all.sh stages gating, gating-auto)
set -u
. bench/gpu/env.sh
B=$1; R=$2; VARIANT=${3:-marked}
case $VARIANT in
marked) CONFIG=/tmp/ic8.json RUN=/tmp/gating NS_OUT=$R/nsight PROOF=$R/gating_proof.json ;;
auto) CONFIG=/tmp/ic8auto.json RUN=/tmp/gating-auto NS_OUT=$R/nsight-auto PROOF=$R/gating_auto_proof.json ;;
*) echo "gating.sh: unknown variant '$VARIANT' (marked or auto)" >&2; exit 2 ;;
esac
"$PY" - "$VARIANT" "$CONFIG" <<'PY'
import json, sys
c = json.load(open("exp_configs/input_control.json"))
c["exp_dur"] = 8
c["models"][1]["sleep_time"] = 0.2
if sys.argv[1] == "auto":
    c["models"][1]["jobs"] = "auto"
    c["policy"] = "drain"
json.dump(c, open(sys.argv[2], "w"))
PY
CONFIG=$CONFIG RUN=$RUN OUT=$NS_OUT BUILD=$B bash bench/gpu/nsight_input_control.sh 2>&1 | grep -v '^\[\|Processing' | tail -25
"$PY" -m bench.gpu.gating_proof "$RUN/nsight_report.sqlite" "$RUN/models_pid.json" "$CONFIG" "$PROOF"
