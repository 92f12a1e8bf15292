#!/usr/bin/env bash
# Stands in for `python3 -m gpuyield.worker` in run_exp's tests (given with --python): speaks the
# handshake of run_exp/protocol.h on fds 3 and 4 and writes the per-job CSV, without torch or a GPU.
# FAKE_WORKER_MODE picks a behaviour:
#   normal (default) jobs of FAKE_WORKER_JOB_S seconds (default 0.01) until "stop"
#   die_after=N      exit 3 after N jobs          never_ready  load forever
#   ignore_stop      keep running after "stop"   env_dump     also write its environment to <csv>.env
#   leave_child      start a child that ignores SIGTERM (its pid in <csv>.child), then run normally
set -u
shift 2 # "-m gpuyield.worker"
csv= name= sleep_time=0
while [ $# -gt 0 ]; do
    case $1 in
        --csv) csv=$2; shift 2 ;;
        --name) name=$2; shift 2 ;;
        --sleep-time) sleep_time=$2; shift 2 ;;
        *) shift ;;
    esac
done
mode=${FAKE_WORKER_MODE:-normal}
job_s=${FAKE_WORKER_JOB_S:-0.01}
echo "fake worker $name: pid $$, mode $mode" >&2
[ "$mode" = env_dump ] && env > "$csv.env"
if [ "$mode" = leave_child ]; then (trap '' TERM; exec sleep 1000) & echo $! > "$csv.child"; fi
if [ "$mode" = never_ready ]; then while :; do sleep 1; done; fi
echo "job,start_ns,end_ns,jct_ms,drain_wait_ns,drained,gpu_mem_peak_bytes,gpu_mem_reserved_peak_bytes" > "$csv"
echo ready >&3
read -r cmd <&4 || exit 0
[ "$cmd" = go ] || exit 0
now_ns() { local t; t=$(date +%s%N); echo "$t"; }
job=0
stopped=0
while :; do
    job=$((job + 1))
    start=$(now_ns)
    sleep "$job_s"
    end=$(now_ns)
    printf '%d,%d,%d,%d.000,0,-1,0,0\n' "$job" "$start" "$end" $(((end - start) / 1000000)) >> "$csv"
    echo "job $job" >&3
    case $mode in die_after=*) [ "$job" -ge "${mode#die_after=}" ] && { echo "fake worker $name: dying on purpose" >&2; exit 3; } ;; esac
    if [ "$stopped" = 0 ] && read -r -t "$sleep_time" cmd <&4; then stopped=1; fi
    if [ "$stopped" = 0 ] && [ "$sleep_time" = 0 ] && read -r -t 0.001 cmd <&4; then stopped=1; fi
    # read returns non-zero on EOF too: tell timeout (>128) from EOF
    if [ "$stopped" = 1 ] && [ "$mode" != ignore_stop ]; then exit 0; fi
done
