#!/usr/bin/env bash
# Stops the job's serve started by prolog.sh; it removes the segment (--remove-on-exit: the
# segment ends with the job).
set -eu
RUN=/run/gpuyield
pidfile=$RUN/job$SLURM_JOB_ID.pid
if [ -f "$pidfile" ]; then
    kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
fi
