#!/usr/bin/env bash
# Per node instead of per job: slurmd's Prolog (root) starts one serve for the job's user on each of
# its nodes; epilog.sh stops it. Workers use GPUYIELD_SHM=job$SLURM_JOB_ID (set it in a TaskProlog
# or the job script) and LD_PRELOAD=/opt/gpuyield/lib/libgpuyield.so.
#   slurm.conf: Prolog=/etc/slurm/gpuyield/prolog.sh  Epilog=/etc/slurm/gpuyield/epilog.sh
set -eu
GY=${GY:-/opt/gpuyield}
RUN=/run/gpuyield
mkdir -p "$RUN"
# The segment belongs to the job's user: serve runs as that user, in the background.
setpriv --reuid="$SLURM_JOB_UID" --regid="$SLURM_JOB_GID" --init-groups -- \
    "$GY/bin/expcontroller" serve --name "job$SLURM_JOB_ID" --metrics "${GPUYIELD_METRICS_PORT:-9745}" --remove-on-exit \
    > "$RUN/job$SLURM_JOB_ID.log" 2>&1 < /dev/null &
echo $! > "$RUN/job$SLURM_JOB_ID.pid"
