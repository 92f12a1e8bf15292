#!/usr/bin/env bash
# The worker interpreter for run_exp --python in the co-run benchmark: the low-priority worker
# (the one run with `--name lp`) gets, where set, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$LP_SM_PERCENT
# (MPS reads it when the process creates its context: the mps_lpN setups) and the worker option
# `--duty $LP_DUTY` (ON,OFF seconds: --phased runs); every other worker runs as is.
# REAL_PYTHON is the interpreter to run.
prev= lp=
for arg in "$@"; do
    if [ "$prev" = --name ] && [ "$arg" = lp ]; then lp=1; fi
    prev=$arg
done
if [ -n "$lp" ]; then
    [ -n "${LP_SM_PERCENT:-}" ] && export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$LP_SM_PERCENT
    [ -n "${LP_DUTY:-}" ] && set -- "$@" --duty "$LP_DUTY"
fi
exec "${REAL_PYTHON:?}" "$@"
