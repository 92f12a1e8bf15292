#!/usr/bin/env bash
# An unmodified inference server made high-priority by its environment alone (issue 27): the
# server (auto_server.py) imports nothing of gpuyield; GPUYIELD_JOBS=auto makes the preloaded hook
# open a priority-1 job at the first kernel of each request and close it once the request's work
# has completed and GPUYIELD_IDLE_US passed with no kernel. The training script (train.py) is the
# low-priority process, as in run.sh. Run from anywhere after ./make.sh: `bash examples/run_auto.sh`.
# Options go to auto_load.py (--requests N --interval S). At the end it prints `expcontroller
# status` (STATUS_JSON=FILE: also as JSON there): the server's auto_jobs and ms_auto, the
# trainer's waits and drains.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$HERE/../build}
PYTHON=${PYTHON:-python3}
HOOK=${HOOK:-$BUILD/lib/libgpuyield.so}  # after make install: PREFIX/lib/libgpuyield.so
TAG=${GPUYIELD_SHM:-autojobs-$$}
PORT_FILE=$(mktemp -u "${TMPDIR:-/tmp}/gpuyield-auto-port.XXXXXX")

"$BUILD/bin/expcontroller" serve --name "$TAG" &
serve=$!
train= server=
trap 'kill $server $train $serve 2> /dev/null; wait $serve 2> /dev/null || true; rm -f "$PORT_FILE"' EXIT
for _ in $(seq 100); do "$BUILD/bin/expcontroller" status --name "$TAG" > /dev/null 2>&1 && break; sleep 0.1; done

export GPUYIELD_SHM=$TAG PYTHONPATH=$HERE
LD_PRELOAD=$HOOK GPUYIELD_PRIORITY=0 GPUYIELD_MODE=time:1000 GPUYIELD_MODEL=train "$PYTHON" "$HERE/train.py" &
train=$!
sleep "${WARMUP_S:-1}"  # let the trainer fill the GPU
# The server: nothing but its environment makes it high-priority.
LD_PRELOAD=$HOOK GPUYIELD_PRIORITY=1 GPUYIELD_JOBS=auto GPUYIELD_MODEL=auto_server \
    "$PYTHON" "$HERE/auto_server.py" --port-file "$PORT_FILE" &
server=$!
for _ in $(seq 600); do [ -s "$PORT_FILE" ] && break; kill -0 "$server" 2> /dev/null || break; sleep 0.1; done
[ -s "$PORT_FILE" ] || { echo "run_auto.sh: the server did not start listening" >&2; exit 1; }
port=$(cat "$PORT_FILE")
"$PYTHON" "$HERE/auto_load.py" --port "$port" --no-quit "$@"  # no hook: it touches no GPU
sleep 0.5  # past the last request's idle time: its auto job is closed and counted

# The status while the server is still registered (at its exit its slot goes).
"$BUILD/bin/expcontroller" status --name "$TAG"
[ -z "${STATUS_JSON:-}" ] || "$BUILD/bin/expcontroller" status --name "$TAG" --json > "$STATUS_JSON"
"$PYTHON" "$HERE/auto_load.py" --port "$port" --requests 0  # POST /quit
wait "$server"
server=
kill -TERM "$train"
wait "$train"
