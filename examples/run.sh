#!/usr/bin/env bash
# The quick start: an inference server (high priority) and a training job (low priority) on one
# GPU. Run from anywhere after ./make.sh: `bash examples/run.sh`.
#   the controller:   expcontroller serve holds the segment and reaps dead processes
#   every process:    LD_PRELOAD of the hook, GPUYIELD_SHM (the segment), GPUYIELD_PRIORITY
#   the trainer:      priority 0 and a queue bound (GPUYIELD_MODE), unchanged code
#   the server:       priority 1, marks each request with `with seg.job(1)` (examples/infer.py)
# At the end it prints `expcontroller status` (STATUS_JSON=FILE: also writes it as JSON there):
# the trainer's `waits` and `drains` count the times it yielded to a request.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$HERE/../build}
PYTHON=${PYTHON:-python3}
HOOK=${HOOK:-$BUILD/lib/libgpuyield.so}  # after make install: PREFIX/lib/libgpuyield.so
TAG=${GPUYIELD_SHM:-quickstart-$$}

"$BUILD/bin/expcontroller" serve --name "$TAG" &
serve=$!
train=
trap 'kill $train $serve 2> /dev/null; wait $serve 2> /dev/null || true' EXIT  # on an error too
for _ in $(seq 100); do "$BUILD/bin/expcontroller" status --name "$TAG" > /dev/null 2>&1 && break; sleep 0.1; done

export GPUYIELD_SHM=$TAG LD_PRELOAD=$HOOK PYTHONPATH=$BUILD/python:$HERE
GPUYIELD_PRIORITY=0 GPUYIELD_MODE=time:1000 GPUYIELD_MODEL=train "$PYTHON" "$HERE/train.py" &
train=$!
sleep "${WARMUP_S:-1}"  # let the trainer fill the GPU
GPUYIELD_PRIORITY=1 GPUYIELD_MODEL=infer "$PYTHON" "$HERE/infer.py" "$@"

unset LD_PRELOAD
"$BUILD/bin/expcontroller" status --name "$TAG"
[ -z "${STATUS_JSON:-}" ] || "$BUILD/bin/expcontroller" status --name "$TAG" --json > "$STATUS_JSON"
kill -TERM "$train"
wait "$train"
