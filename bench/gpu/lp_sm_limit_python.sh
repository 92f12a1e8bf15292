#!/usr/bin/env bash
# The worker interpreter for run_exp --python in the co-run benchmark's mps_lpN setups: the
# low-priority worker (the one run with `--name lp`) gets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=
# $LP_SM_PERCENT (MPS reads it when the process creates its context), every other worker runs as is.
# REAL_PYTHON is the interpreter to run.
prev=
for arg in "$@"; do
    if [ "$prev" = --name ] && [ "$arg" = lp ]; then export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=${LP_SM_PERCENT:?}; fi
    prev=$arg
done
exec "${REAL_PYTHON:?}" "$@"
