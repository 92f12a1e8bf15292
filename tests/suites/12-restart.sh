#!/usr/bin/env bash
# Suite 12: a controller restart loses nothing (issue 28 item 2). expcontroller serve stopped by
# SIGTERM (exit 143) leaves a segment that live processes use, and the next serve adopts it; a
# hooked worker on the fake driver and a Python HP worker go through 10 restarts with every job and
# launch counted and exit 0. With no user left, or with --remove-on-exit, serve removes it.
set -u
. "$ROOT/tests/lib/suite.sh"
PYTHON=${PYTHON:-python3}
EXP=$BUILD/bin/expcontroller
TAG=test-restart-$$
NAME=/gpuyield-$(id -u)-$TAG
T=$(mktemp -d)
SERVE=; LP=; HP=; AGENT=
cleanup() {
    for p in $LP $HP $AGENT; do kill -KILL "$p" 2>/dev/null; done
    [ -n "$SERVE" ] && kill -KILL "$SERVE" 2>/dev/null
    "$EXP" remove --name "$TAG" > /dev/null 2>&1
    rm -rf "$T"
}
at_exit cleanup

start_serve() { # $1: a log file; the segment is served once serve printed its name
    "$EXP" serve --name "$TAG" "${@:2}" > "$1.out" 2> "$1" &
    SERVE=$!
    wait_until 60 grep -q "^$NAME\$" "$1.out"
}

start_serve "$T/serve0"
check restart_first_serve_creates grep -q "serving $NAME (created" "$T/serve0"

# The LP: hooked, priority 0, launches on the fake driver until told to stop, then checks that the
# segment counted every launch. The HP: Python extension, 500 jobs at level 1, each with a launch
# of its own through the hook; then checks that no job is left counted.
GPUYIELD_SHM=$TAG GPUYIELD_MODEL=restart-lp LD_PRELOAD=$BUILD/lib/libgpuyield.so LD_LIBRARY_PATH=$BUILD/fakecuda \
PYTHONPATH="$BUILD/python" "$PYTHON" -c '
import ctypes, os, sys, gpuyield
cuda = ctypes.CDLL("libcuda.so.1")
ctx, dev, mod, fn = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cuda.cuCtxSetCurrent(ctx) == 0
assert cuda.cuModuleLoadData(ctypes.byref(mod), b"fake image") == 0
assert cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"spin_us:200") == 0
n = 0
while not os.path.exists(sys.argv[2]):
    assert cuda.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, None, None, None) == 0
    assert cuda.cuCtxSynchronize() == 0
    n += 1
mine = [p for p in gpuyield.connect(sys.argv[1]).status()["processes"] if p["pid"] == os.getpid()]
counted = sum(p["launches"] for p in mine)
print("lp launches %d counted %d" % (n, counted), flush=True)
sys.exit(0 if n > 0 and counted == n else 1)' "$TAG" "$T/stop" > "$T/lp.out" 2>&1 &
LP=$!
GPUYIELD_SHM=$TAG GPUYIELD_MODEL=restart-hp GPUYIELD_PRIORITY=1 PYTHONPATH="$BUILD/python" "$PYTHON" -c '
import sys, time, gpuyield
seg = gpuyield.connect(sys.argv[1])
done = 0
for _ in range(500):
    with seg.job(1):
        time.sleep(0.01)
    done += 1
st = seg.status()
print("hp jobs %d left counted %s" % (done, st["jobs"]), flush=True)
sys.exit(0 if done == 500 and st["jobs"] == [0] * 8 else 1)' "$TAG" > "$T/hp.out" 2>&1 &
HP=$!

# 10 restarts while both work: each stop exits 143 and leaves the segment, each start adopts it.
bad=
for i in $(seq 10); do
    sleep 0.3
    kill -TERM "$SERVE"; wait "$SERVE"; rc=$?; SERVE=
    [ "$rc" -eq 143 ] || bad="$bad stop $i: exit $rc;"
    [ -e "/dev/shm$NAME" ] || { bad="$bad stop $i: segment removed;"; break; }
    grep -q "left $NAME in place: [0-9]* registered process" "$T/serve$((i - 1))" || bad="$bad stop $i: not said;"
    start_serve "$T/serve$i" || bad="$bad start $i: never served;"
    grep -q "serving $NAME (already existed: adopted" "$T/serve$i" || bad="$bad start $i: not adopted;"
done
if [ -z "$bad" ]; then pass restart_10_times_keeps_and_adopts; else fail restart_10_times_keeps_and_adopts "$bad"; fi
wait "$HP"; rc=$?; HP=
check restart_hp_every_job_counted_exit_0 test "$rc" -eq 0
grep -q "^hp jobs 500 left counted \[0, 0, 0, 0, 0, 0, 0, 0\]" "$T/hp.out" || cat "$T/hp.out"
touch "$T/stop"
wait "$LP"; rc=$?; LP=
check restart_lp_every_launch_counted_exit_0 test "$rc" -eq 0
grep -q "^lp launches [1-9][0-9]* counted" "$T/lp.out" && sed 's/^/  /' "$T/lp.out" | head -3

# A run_exp experiment (--simulate: the stand-in workers on the fake driver, with the hooks) joined
# to the served segment (--shm) goes through 10 restarts and completes.
if [ -x "$BUILD/bin/run_exp" ] && [ -x "$BUILD/bin/gpuyield-standin" ] && [ -e "$BUILD/fakecuda/libcuda.so.1" ]; then
    "$PYTHON" "$ROOT/tests/run_exp/make_config.py" "$T/sim.json" --image "$ROOT/exp_configs/images/street.png" \
        --out-dir "$T/out" --set exp_dur=4 --set models.0.control.control=true --set models.1.control.control=true \
        --set models.1.sleep_time=0.1 > /dev/null
    PATH=$ROOT/tests/run_exp/bin:$PATH FAKE_GPUS=0 "$BUILD/bin/run_exp" -f "$T/sim.json" --simulate --shm "$TAG" \
        --min-jobs 10 > "$T/run_exp.out" 2>&1 &
    RUN=$!
    bad=
    for i in $(seq 11 20); do
        sleep 0.3
        kill -TERM "$SERVE"; wait "$SERVE"; rc=$?; SERVE=
        [ "$rc" -eq 143 ] || bad="$bad stop $i: exit $rc;"
        start_serve "$T/serve$i" || bad="$bad start $i: never served;"
    done
    wait "$RUN"; rc=$?
    if [ -z "$bad" ]; then pass restart_10_times_under_run_exp; else fail restart_10_times_under_run_exp "$bad"; fi
    check restart_run_exp_exit_0 test "$rc" -eq 0 || tail -n 20 "$T/run_exp.out"
    check restart_run_exp_completed "$PYTHON" -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["outcome"] == "completed", d["outcome"]
b = d["models"][1]
assert b["marked_jobs"] == b["jobs"] >= 10, b' "$T/out/summary.json"
    LAST=$T/serve20
else
    fail restart_run_exp "needs run_exp, gpuyield-standin and the fake driver in $BUILD"
    LAST=$T/serve10
fi

# Nobody registered any more: the stop removes it.
kill -TERM "$SERVE"; wait "$SERVE"; rc=$?; SERVE=
check restart_last_stop_exit_143 test "$rc" -eq 143
check restart_last_stop_removes_unused test ! -e "/dev/shm$NAME"
check restart_last_stop_says_removed grep -q "removed $NAME" "$LAST"

# --remove-on-exit removes it even while a process is registered.
start_serve "$T/serve-r" --remove-on-exit
PYTHONPATH="$BUILD/python" "$PYTHON" -c '
import sys, time, gpuyield
seg = gpuyield.connect(sys.argv[1]); seg.register(); print("in", flush=True); time.sleep(600)' "$TAG" > "$T/agent.out" &
AGENT=$!
wait_until 60 grep -q in "$T/agent.out"
kill -TERM "$SERVE"; wait "$SERVE"; rc=$?; SERVE=
check restart_remove_on_exit_exit_143 test "$rc" -eq 143
check restart_remove_on_exit_removes_used test ! -e "/dev/shm$NAME"
kill -KILL "$AGENT"; wait "$AGENT" 2>/dev/null; AGENT=
expect restart_remove_on_exit_only_for_serve 2 "^expcontroller: --remove-on-exit goes with 'serve', not 'create'" \
    "$EXP" create --name "$TAG" --remove-on-exit
check restart_bad_flag_made_nothing test ! -e "/dev/shm$NAME"
finish
