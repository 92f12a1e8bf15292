#!/usr/bin/env bash
# MPS as a managed component and the segment policies, on the CPU: a stand-in for
# nvidia-cuda-mps-control (tests/run_exp/bin) logs every start and quit. expcontroller serve --mps
# and run_exp --mps start a daemon before any worker and quit it at the end, on failure and on a
# signal; a daemon that cannot start is one clear line, exit 1, nothing left behind; the policy
# (drain | corun | partition) is checked, stored in the segment and shown by status and summary.json.
set -u
. "$ROOT/tests/lib/suite.sh"

EXP=$BUILD/bin/expcontroller
RUN_EXP=$BUILD/bin/run_exp
HERE=$ROOT/tests/run_exp
IMAGE=$ROOT/exp_configs/images/street.png
T=$(mktemp -d /tmp/mps-test.XXXXXX)
UIDN=$(id -u)
export PATH=$HERE/bin:$PATH
export GPUYIELD_PYTHON=$HERE/fake_worker.sh
export FAKE_MPS_LOG=$T/mps.log
cleanup() {
    # A daemon stand-in a failed check left running: its pid is in the log.
    local pid; for pid in $(awk '$1 == "start" {print $2}' "$FAKE_MPS_LOG" 2>/dev/null); do kill "$pid" 2>/dev/null; done
    rm -rf "$T"
}
at_exit cleanup

started_pid() { awk '$1 == "start" {p = $2} END {print p}' "$FAKE_MPS_LOG"; }
quit_logged() { grep -q "^quit $1 " "$FAKE_MPS_LOG"; }
json_field() { "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$1" "$2"; }

# ---- expcontroller ---------------------------------------------------------------------------
expect cli_policy_bad 2 "--policy takes drain, corun, partition or guarded, not 'fast'" "$EXP" create --policy fast
expect cli_policy_needs_create_or_serve 2 "--policy goes with 'create' or 'serve'" "$EXP" status --policy corun
expect cli_mps_needs_serve 2 "mps" "$EXP" create --mps

TAG=test-mps-$$
clean_lock # a created segment outlives its creator: no clean beside us may take it
expect cli_create_corun 0 "gpuyield-$UIDN-$TAG" "$EXP" create --name "$TAG" --policy corun
expect cli_status_corun 0 "\"policy\": \"corun\", \"mps\": false" "$EXP" status --name "$TAG" --json
expect cli_status_table_corun 0 "policy corun" "$EXP" status --name "$TAG"
"$EXP" remove --name "$TAG" > /dev/null 2>&1
expect cli_create_partition 0 "gpuyield-$UIDN-$TAG" "$EXP" create --name "$TAG" --policy partition
expect cli_status_partition 0 "\"policy\": \"partition\", \"mps\": false" "$EXP" status --name "$TAG" --json
expect cli_status_table_partition 0 "policy partition" "$EXP" status --name "$TAG"
"$EXP" remove --name "$TAG" > /dev/null 2>&1
# A partition segment that says no MPS makes its workers drain: create says so where it is made
# (the partition verdict of 2026-11-23 ran such a segment and measured drain, unnoticed).
expect cli_create_partition_without_mps_warns 0 "warning: .*policy partition but no MPS: its lower processes will drain" \
    "$EXP" create --name "$TAG" --policy partition
"$EXP" remove --name "$TAG" > /dev/null 2>&1
# create --mps-pipe DIR: the segment says MPS (guarded is then the default), checked against DIR first.
mkdir -p "$T/joined" && : > "$T/joined/control"
expect cli_create_mps_pipe 0 "^/gpuyield-$UIDN-$TAG\$" "$EXP" create --name "$TAG" --policy partition --mps-pipe "$T/joined"
"$EXP" remove --name "$TAG" > /dev/null 2>&1
"$EXP" create --name "$TAG" --policy partition --mps-pipe "$T/joined" > "$T/create.out" 2>&1
check cli_create_mps_pipe_no_warning bash -c "grep -q gpuyield '$T/create.out' && ! grep -q warning '$T/create.out'"
expect cli_create_mps_pipe_status 0 "\"policy\": \"partition\", \"mps\": true" "$EXP" status --name "$TAG" --json
"$EXP" remove --name "$TAG" > /dev/null 2>&1
"$EXP" create --name "$TAG" --mps-pipe "$T/joined" > /dev/null 2>&1
expect cli_create_mps_pipe_default_guarded 0 "\"policy\": \"guarded\", \"mps\": true.*\"eps_p50\": 0.02, \"eps_p99\": 0.05" \
    "$EXP" status --name "$TAG" --json
"$EXP" remove --name "$TAG" > /dev/null 2>&1
# the guarded flags with the default under MPS, no --policy: taken, stored
"$EXP" create --name "$TAG" --mps-pipe "$T/joined" --guard-p50 0.04 > /dev/null 2>&1
expect cli_create_mps_pipe_default_guard_flags 0 "\"policy\": \"guarded\", \"mps\": true.*\"eps_p50\": 0.04, \"eps_p99\": 0.05" \
    "$EXP" status --name "$TAG" --json
"$EXP" remove --name "$TAG" > /dev/null 2>&1
"$EXP" create --name "$TAG" --policy guarded --guard-p50 0.04 --mps-pipe "$T/joined" > "$T/create.out" 2>&1
check cli_create_guarded_mps_no_warning bash -c "grep -q gpuyield '$T/create.out' && ! grep -q warning '$T/create.out'"
expect cli_create_guarded_mps_status 0 "\"policy\": \"guarded\", \"mps\": true.*\"guarded\": \{\"in_force\": \"stop\", \"reason\": \"start\".*\"eps_p50\": 0.04, \"eps_p99\": 0.05" "$EXP" status --name "$TAG" --json
"$EXP" remove --name "$TAG" > /dev/null 2>&1
expect cli_create_mps_pipe_missing_refused 1 "no control daemon serves $T/nothing" \
    "$EXP" create --name "$TAG" --policy partition --mps-pipe "$T/nothing"
check cli_create_mps_pipe_missing_left_nothing test ! -e "/dev/shm/gpuyield-$UIDN-$TAG"
expect cli_mps_pipe_needs_create_or_serve 2 "--mps-pipe goes with 'create' or 'serve', not 'status'" \
    "$EXP" status --mps-pipe "$T/joined"
clean_unlock

# serve --mps: the daemon starts before the segment is served and quits when serve stops.
: > "$FAKE_MPS_LOG"
"$EXP" serve --name "$TAG" --mps --mps-dir "$T/mpsdir" > "$T/serve.out" 2>&1 &
SERVE=$!
wait_until 60 grep -q "^start " "$FAKE_MPS_LOG"
wait_until 60 test -e "/dev/shm/gpuyield-$UIDN-$TAG"
DAEMON=$(started_pid)
check serve_mps_started test -n "$DAEMON"
check serve_mps_pipe_dir grep -q "^start $DAEMON $T/mpsdir/pipe $T/mpsdir/log" "$FAKE_MPS_LOG"
expect serve_mps_status_guarded 0 "\"policy\": \"guarded\", \"mps\": true" "$EXP" status --name "$TAG" --json
kill -TERM "$SERVE"; wait "$SERVE"; SERVE_RC=$?
check serve_mps_exit_143 test "$SERVE_RC" -eq 143 # killed by SIGTERM, as a shell says
check serve_mps_quit quit_logged "$DAEMON"
check serve_mps_daemon_gone wait_until 10 gone "$DAEMON"
check serve_mps_segment_gone test ! -e "/dev/shm/gpuyield-$UIDN-$TAG"

# A restart under serve --mps: with a live registered process the stop leaves the segment and the
# daemon (no quit), the next serve --mps with the same directory adopts both (no second start),
# and its stop, once nobody is registered, quits the daemon and removes the segment.
: > "$FAKE_MPS_LOG"
"$EXP" serve --name "$TAG" --mps --mps-dir "$T/mpsre" > "$T/re1.out" 2>&1 &
SERVE=$!
wait_until 60 test -e "/dev/shm/gpuyield-$UIDN-$TAG"
wait_until 60 grep -q "^start " "$FAKE_MPS_LOG"
DAEMON=$(started_pid)
PYTHONPATH="$BUILD/python" "${PYTHON:-python3}" -c '
import sys, time, gpuyield
seg = gpuyield.connect(sys.argv[1]); seg.register(); print("in", flush=True); time.sleep(600)' "$TAG" > "$T/re-agent.out" &
AGENT=$!
wait_until 60 grep -q in "$T/re-agent.out"
kill -TERM "$SERVE"; wait "$SERVE"; rc=$?
check serve_mps_restart_stop_exit_143 test "$rc" -eq 143
check serve_mps_restart_keeps_segment test -e "/dev/shm/gpuyield-$UIDN-$TAG"
check serve_mps_restart_keeps_daemon bash -c "! grep -q '^quit ' '$FAKE_MPS_LOG' && kill -0 $DAEMON"
check serve_mps_restart_says_left grep -q "left the MPS daemon (pid $DAEMON) at $T/mpsre/pipe running" "$T/re1.out"
"$EXP" serve --name "$TAG" --mps --mps-dir "$T/mpsre" > "$T/re2.out" 2>&1 &
SERVE=$!
check serve_mps_restart_adopts wait_until 60 grep -q "MPS daemon adopted at $T/mpsre/pipe" "$T/re2.out"
check serve_mps_restart_no_second_start test "$(grep -c '^start ' "$FAKE_MPS_LOG")" -eq 1
kill -KILL "$AGENT"; wait "$AGENT" 2>/dev/null
kill -TERM "$SERVE"; wait "$SERVE"; rc=$?
check serve_mps_restart_last_stop_exit_143 test "$rc" -eq 143
check serve_mps_restart_last_stop_quits quit_logged "$DAEMON"
check serve_mps_restart_last_stop_removes test ! -e "/dev/shm/gpuyield-$UIDN-$TAG"

# serve --mps --policy drain: MPS without co-running (a job still waits for the drain)
: > "$FAKE_MPS_LOG"
"$EXP" serve --name "$TAG" --mps --mps-dir "$T/mpsdir2" --policy drain > /dev/null 2>&1 &
SERVE=$!
wait_until 60 test -e "/dev/shm/gpuyield-$UIDN-$TAG"
wait_until 60 grep -q "^start " "$FAKE_MPS_LOG"
expect serve_mps_status_drain 0 "\"policy\": \"drain\", \"mps\": true" "$EXP" status --name "$TAG" --json
kill -INT "$SERVE"; wait "$SERVE"
check serve_mps_drain_quit_on_sigint quit_logged "$(started_pid)"

# A daemon that cannot start: one line, exit 1, no segment.
: > "$FAKE_MPS_LOG"
out=$(FAKE_MPS_FAIL=start "$EXP" serve --name "$TAG" --mps --mps-dir "$T/mpsdir3" 2>&1); rc=$?
check serve_mps_start_fails_exit_1 test "$rc" -eq 1
check serve_mps_start_fails_says_so grep -qi "mps" <<< "$out"
check serve_mps_start_fails_no_segment test ! -e "/dev/shm/gpuyield-$UIDN-$TAG"

# ---- issue 19: the MPS directories are private ------------------------------------------------
# Another user plants the directory first (the default name in /tmp is predictable): one line
# naming the owner, exit 1, no segment, nothing of the victim's touched. Needs a second user.
no_segment() { test ! -e "/dev/shm/gpuyield-$UIDN-$TAG"; }
if [ "$UIDN" -eq 0 ] && id nobody > /dev/null 2>&1; then
    mkdir "$T/planted" && chown nobody "$T/planted"
    expect mps_dir_planted_refused 1 "belongs to uid [0-9]+ \(nobody\)" timeout 30 "$EXP" serve --name "$TAG" --mps --mps-dir "$T/planted"
    check mps_dir_planted_no_segment no_segment
    DEFAULT_DIR=/tmp/gpuyield-mps-$UIDN-$TAG
    rm -rf "$DEFAULT_DIR"; mkdir -m 0700 "$DEFAULT_DIR" && chown nobody "$DEFAULT_DIR"
    expect mps_default_dir_planted_refused 1 "$DEFAULT_DIR belongs to uid [0-9]+ \(nobody\)" \
        timeout 30 env -u XDG_RUNTIME_DIR "$EXP" serve --name "$TAG" --mps
    check mps_default_dir_planted_no_segment no_segment
    rm -rf "$DEFAULT_DIR"
    # A pid file naming another user's live process is stale: serve starts a daemon.
    setpriv --reuid nobody --regid nogroup --clear-groups sleep 60 & FOREIGN=$!
    mkdir -m 0700 "$T/foreign" "$T/foreign/pipe"; echo "$FOREIGN" > "$T/foreign/pipe/nvidia-cuda-mps-control.pid"
    : > "$FAKE_MPS_LOG"
    "$EXP" serve --name "$TAG" --mps --mps-dir "$T/foreign" > /dev/null 2>&1 & SERVE=$!
    check mps_foreign_pid_file_not_refused wait_until 60 grep -q "^start " "$FAKE_MPS_LOG"
    kill -TERM "$SERVE"; wait "$SERVE"; rc=$?
    check mps_foreign_pid_file_serve_ok test "$rc" -eq 143
    check mps_foreign_process_untouched alive "$FOREIGN"
    kill "$FOREIGN"; wait "$FOREIGN" 2>/dev/null
else
    echo "skip mps_dir_planted_*: needs root and the user 'nobody' for a second user"
fi
# A 'pipe' symlink into a directory of the victim's: refused before anything is removed there.
mkdir -m 0700 "$T/linked" "$T/victim"; : > "$T/victim/control"; : > "$T/victim/log"
ln -s "$T/victim" "$T/linked/pipe"
expect mps_pipe_symlink_refused 1 "pipe is a symbolic link" timeout -s INT 30 "$EXP" serve --name "$TAG" --mps --mps-dir "$T/linked"
check mps_pipe_symlink_victim_intact test -e "$T/victim/control" -a -e "$T/victim/log"
check mps_pipe_symlink_no_segment no_segment
# A FIFO as the daemon's pid file: refused at once, never waited on.
mkdir -m 0700 "$T/fifo" "$T/fifo/pipe"; mkfifo "$T/fifo/pipe/nvidia-cuda-mps-control.pid"
expect mps_pid_fifo_refused 1 "not a regular file" timeout 20 "$EXP" serve --name "$TAG" --mps --mps-dir "$T/fifo"
check mps_pid_fifo_no_segment no_segment
# A directory of ours open to others: refused (files may have been planted in it).
mkdir -m 0777 "$T/open"; chmod 0777 "$T/open"
expect mps_dir_open_mode_refused 1 "mode 0777, not 0700" timeout 30 "$EXP" serve --name "$TAG" --mps --mps-dir "$T/open"
# A directory above it that others can change: they could move ours away and put theirs at the
# path the daemon and the workers are given. Refused before anything is made under it.
mkdir -m 0777 "$T/open-parent"; chmod 0777 "$T/open-parent"
expect mps_dir_parent_open_refused 1 "open-parent \(above .*\) has mode 0777: others can write to it without the sticky bit" \
    timeout 30 "$EXP" serve --name "$TAG" --mps --mps-dir "$T/open-parent/sub/mps"
check mps_dir_parent_open_nothing_made test -z "$(ls -A "$T/open-parent")"
check mps_dir_parent_open_no_segment no_segment
# With the sticky bit (as /tmp) others cannot rename what is ours: accepted. A relative directory
# is given to the workers as an absolute one.
mkdir -m 1777 "$T/sticky"; chmod 1777 "$T/sticky"; : > "$FAKE_MPS_LOG"
(cd "$T/sticky" && exec "$EXP" serve --name "$TAG" --mps --mps-dir rel/mps > "$T/sticky.out" 2>&1) & SERVE=$!
check mps_dir_parent_sticky_accepted wait_until 60 grep -q "^start " "$FAKE_MPS_LOG"
check mps_dir_relative_told_absolute grep -q "CUDA_MPS_PIPE_DIRECTORY=$T/sticky/rel/mps/pipe\$" "$T/sticky.out"
kill -TERM "$SERVE"; wait "$SERVE"; rc=$?
check mps_dir_parent_sticky_serve_ok test "$rc" -eq 143
if [ "$UIDN" -eq 0 ] && id nobody > /dev/null 2>&1; then
    mkdir -m 0755 "$T/foreign-parent"; chown nobody "$T/foreign-parent"
    expect mps_dir_parent_foreign_refused 1 "foreign-parent \(above .*\) belongs to uid [0-9]+ \(nobody\)" \
        timeout 30 "$EXP" serve --name "$TAG" --mps --mps-dir "$T/foreign-parent/mps"
    check mps_dir_parent_foreign_nothing_made test -z "$(ls -A "$T/foreign-parent")"
else
    echo "skip mps_dir_parent_foreign_refused: needs root and the user 'nobody' for a second user"
fi
# Made under umask 0777: still 0700 (fchmod after mkdir), and removed again when the start fails.
: > "$FAKE_MPS_LOG"
out=$(umask 0777; FAKE_MPS_FAIL=start timeout 30 "$EXP" serve --name "$TAG" --mps --mps-dir "$T/umask/mps" 2>&1); rc=$?
check mps_dir_umask_start_fails_exit_1 test "$rc" -eq 1
check mps_dir_umask_made_private grep -q "^start-failed $T/umask/mps/pipe" "$FAKE_MPS_LOG"

# ---- issue 29 item 2: the MPS directory's parents, walked with *at() calls ------------------
# The walk itself (a racing user made deterministic, links, umask, undo): C, in every variant.
run_counted private-dir "$BUILD/tests/test_private_dir"
run_counted private-dir-asan "$BUILD/asan/tests/test_private_dir"
TSAN_OPTIONS="halt_on_error=1" run_counted private-dir-tsan "$BUILD/tsan/tests/test_private_dir"
# The failed start under umask 0777 above leaves nothing: not the parent it made (it was left
# behind with mode 0000), not the directory.
check mps_dir_umask_failed_start_leaves_nothing test ! -e "$T/umask"
# A start that goes under umask 0777: every directory made, parents too, is 0700.
: > "$FAKE_MPS_LOG"
(umask 0777; exec "$EXP" serve --name "$TAG" --mps --mps-dir "$T/umask2/a/mps" > "$T/umask2.out" 2>&1) & SERVE=$!
check mps_dir_umask_parents_started wait_until 60 grep -q "^start " "$FAKE_MPS_LOG"
check mps_dir_umask_parents_0700 test "$(stat -c %a "$T/umask2" "$T/umask2/a" "$T/umask2/a/mps" | tr '\n' ' ')" = "700 700 700 "
kill -TERM "$SERVE"; wait "$SERVE"
# A link of ours on the way is followed (nobody else can re-point it): the daemon and the workers
# are told the directory as walked, the link resolved.
mkdir -m 0700 "$T/otarget"; ln -s otarget "$T/olink"; : > "$FAKE_MPS_LOG"
"$EXP" serve --name "$TAG" --mps --mps-dir "$T/olink/mps" > "$T/olink.out" 2>&1 & SERVE=$!
check mps_dir_own_symlink_followed wait_until 60 grep -q "^start [0-9]* $T/otarget/mps/pipe $T/otarget/mps/log" "$FAKE_MPS_LOG"
check mps_dir_own_symlink_told_resolved grep -q "CUDA_MPS_PIPE_DIRECTORY=$T/otarget/mps/pipe\$" "$T/olink.out"
kill -TERM "$SERVE"; wait "$SERVE"
if [ "$UIDN" -eq 0 ] && id nobody > /dev/null 2>&1; then
    # A parent reached through another user's link: they could re-point it after the start.
    mkdir -m 0755 "$T/ntarget"; ln -s "$T/ntarget" "$T/nlink"; chown -h nobody "$T/nlink"
    expect mps_dir_parent_foreign_symlink_refused 1 "nlink \(above .*\) is a symbolic link owned by uid [0-9]+ \(nobody\)" \
        timeout 30 "$EXP" serve --name "$TAG" --mps --mps-dir "$T/nlink/mps"
    check mps_dir_parent_foreign_symlink_nothing_made test -z "$(ls -A "$T/ntarget")"
    check mps_dir_parent_foreign_symlink_no_segment no_segment
    # A missing parent another user made first, in a sticky directory (where the race ends when
    # they win it; the race itself is test_private_dir's): refused, nothing made in theirs.
    mkdir -m 1777 "$T/race"; chmod 1777 "$T/race"
    mkdir -m 0777 "$T/race/missing"; chmod 0777 "$T/race/missing"; chown nobody "$T/race/missing"
    expect mps_dir_parent_made_by_another_refused 1 "race/missing \(above .*\) belongs to uid [0-9]+ \(nobody\)" \
        timeout 30 "$EXP" serve --name "$TAG" --mps --mps-dir "$T/race/missing/mps"
    check mps_dir_parent_made_by_another_nothing_made test -z "$(ls -A "$T/race/missing")"
else
    echo "skip mps_dir_parent_foreign_symlink_*, mps_dir_parent_made_by_another_*: needs root and the user 'nobody' for a second user"
fi

# ---- run_exp ---------------------------------------------------------------------------------
cfg() { local out=$1; shift; "$PYTHON" "$HERE/make_config.py" "$out" --image "$IMAGE" --out-dir "$T/out" "$@"; }
cfg "$T/run.json" --set exp_dur=0.3 --set models.0.sleep_time=0.05 --set models.1.sleep_time=0.05
expect run_mps_simulate_refused 2 "MPS needs a real GPU" "$RUN_EXP" -f "$T/run.json" --mps --simulate
expect run_policy_flag_bad 2 "--policy 'fast' must be drain, corun, partition or guarded" "$RUN_EXP" -f "$T/run.json" --policy fast
cfg "$T/badpolicy.json" --set 'policy="fast"'
expect run_policy_key_bad 2 "policy: must be \"drain\".*\"corun\".*\"partition\".*got \"fast\"" "$RUN_EXP" -f "$T/badpolicy.json"
expect run_partition_without_mps_warns 0 "warning: policy partition without MPS falls back to drain" "$RUN_EXP" -f "$T/run.json" --dry-run --policy partition
expect dry_run_says_partition_and_mps 0 "policy: partition; MPS: would start a daemon" "$RUN_EXP" -f "$T/run.json" --dry-run --mps --policy partition
cfg "$T/partition_key.json" --set 'mps=true' --set 'policy="partition"'
expect run_partition_key 0 "policy: partition; MPS: would start a daemon" "$RUN_EXP" -f "$T/partition_key.json" --dry-run
expect run_guarded_without_mps_warns 0 "warning: policy guarded without MPS falls back to drain" "$RUN_EXP" -f "$T/run.json" --dry-run --policy guarded
cfg "$T/guarded_key.json" --set 'mps=true' --set 'policy="guarded"' --set guard_p50=0.03
expect run_guarded_key 0 "policy: guarded; MPS: would start a daemon" "$RUN_EXP" -f "$T/guarded_key.json" --dry-run
expect run_mps_and_pipe_refused 2 "give one of them" "$RUN_EXP" -f "$T/run.json" --mps --mps-pipe /tmp/x
check run_bad_input_created_nothing test ! -e "$T/out"
expect run_corun_without_mps_warns 0 "warning: policy corun without MPS" "$RUN_EXP" -f "$T/run.json" --dry-run --policy corun
expect dry_run_says_policy_and_mps 0 "policy: guarded; MPS: would start a daemon, pipes in $T/out/mps/pipe" \
    "$RUN_EXP" -f "$T/run.json" --dry-run --mps
# guarded's flags with the default under MPS need no --policy; without MPS (drain) they are refused
expect dry_run_default_takes_guard_flags 0 "policy: guarded; MPS: would start a daemon" \
    "$RUN_EXP" -f "$T/run.json" --dry-run --mps --guard-p50 0.03
expect run_guard_flags_without_mps_refused 2 "go with the policy guarded .*not drain" \
    "$RUN_EXP" -f "$T/run.json" --dry-run --guard-p50 0.03
expect dry_run_join_has_no_log_dir 0 "CUDA_MPS_PIPE_DIRECTORY=/tmp/elsewhere" "$RUN_EXP" -f "$T/run.json" --dry-run --mps-pipe /tmp/elsewhere

# A whole run under MPS, policy from the file: the daemon under OUTDIR/mps, started before the
# workers and quit at the end; the lower worker at MPS client priority 1, the top one not.
: > "$FAKE_MPS_LOG"
rm -rf "$T/out"
cfg "$T/corun.json" --set exp_dur=0.3 --set models.0.sleep_time=0.05 --set models.1.sleep_time=0.05 \
    --set 'mps=true' --set 'policy="corun"'
out=$(FAKE_WORKER_MODE=env_dump "$RUN_EXP" -f "$T/corun.json" --min-jobs 3 2>&1); rc=$?
check run_mps_exit_zero test "$rc" -eq 0 || echo "$out" | tail -n 20
DAEMON=$(started_pid)
check run_mps_started_under_out grep -q "^start $DAEMON $T/out/mps/pipe $T/out/mps/log" "$FAKE_MPS_LOG"
check run_mps_quit_at_end quit_logged "$DAEMON"
check run_mps_says_so grep -q "run_exp: MPS daemon started, pipes in $T/out/mps/pipe; policy corun" <<< "$out"
check run_mps_env_pipe grep -qx "CUDA_MPS_PIPE_DIRECTORY=$T/out/mps/pipe" "$T/out/model_A.csv.env"
check run_mps_env_log grep -qx "CUDA_MPS_LOG_DIRECTORY=$T/out/mps/log" "$T/out/model_B.csv.env"
check run_mps_lower_client_priority grep -qx "CUDA_MPS_CLIENT_PRIORITY=1" "$T/out/model_A.csv.env"
check run_mps_top_normal_priority bash -c "grep -q '^CUDA_MPS_PIPE_DIRECTORY=' '$T/out/model_B.csv.env' && ! grep -q '^CUDA_MPS_CLIENT_PRIORITY=' '$T/out/model_B.csv.env'"
check run_mps_summary test "$(json_field "$T/out/summary.json" '(d["policy"], d["mps"])')" = "('corun', True)"
check run_mps_daemon_gone wait_until 10 gone "$DAEMON"

# An output directory reached through a link of ours: the daemon and the workers are told the
# same directory, as walked (the link resolved).
: > "$FAKE_MPS_LOG"
mkdir -m 0700 "$T/realout"; ln -s realout "$T/outlink"
"$PYTHON" "$HERE/make_config.py" "$T/linked.json" --image "$IMAGE" --out-dir "$T/outlink" --set exp_dur=0.3 \
    --set models.0.sleep_time=0.05 --set models.1.sleep_time=0.05 --set 'mps=true'
out=$(FAKE_WORKER_MODE=env_dump "$RUN_EXP" -f "$T/linked.json" --min-jobs 3 2>&1); rc=$?
check run_mps_linked_out_exit_zero test "$rc" -eq 0 || echo "$out" | tail -n 20
check run_mps_linked_out_daemon grep -q "^start [0-9]* $T/realout/mps/pipe $T/realout/mps/log" "$FAKE_MPS_LOG"
check run_mps_linked_out_workers_told grep -qx "CUDA_MPS_PIPE_DIRECTORY=$T/realout/mps/pipe" "$T/realout/model_A.csv.env"
check run_mps_linked_out_workers_told_log grep -qx "CUDA_MPS_LOG_DIRECTORY=$T/realout/mps/log" "$T/realout/model_B.csv.env"

# The drain policy under MPS gives no client priority: nothing co-runs with a job.
rm -rf "$T/out"
out=$("$RUN_EXP" -f "$T/run.json" --mps --policy drain --dry-run 2>&1)
check run_mps_drain_no_client_priority bash -c "grep -q CUDA_MPS_PIPE_DIRECTORY <<< '$out' && ! grep -q CUDA_MPS_CLIENT_PRIORITY <<< '$out'"

# The daemon cannot start: one line, exit 1, no segment, no mps directory, no worker started.
: > "$FAKE_MPS_LOG"
rm -rf "$T/out"
FAKE_MPS_FAIL=start "$RUN_EXP" -f "$T/run.json" --mps > "$T/fail.out" 2>&1 & RUN=$!
wait "$RUN"; rc=$?; out=$(cat "$T/fail.out")
check run_mps_start_fails_exit_1 test "$rc" -eq 1
check run_mps_start_fails_one_error test "$(grep -c 'run_exp: error' <<< "$out")" -eq 1
check run_mps_start_fails_no_mps_dir test ! -e "$T/out/mps"
check run_mps_start_fails_says_why grep -q "mps" <<< "$out"
check run_mps_start_fails_no_worker test ! -e "$T/out/models_pid.json"
check run_mps_start_fails_no_segment test "$(ls /dev/shm | grep -c "^gpuyield-$UIDN-exp$RUN\$")" -eq 0

# A subreaper parent (nsys is one) adopts the daemon when it detaches and reaps it only at its own
# end: the daemon that obeyed quit stays a zombie meanwhile, and counts as gone.
cat > "$T/subreaper.py" <<'PY'
import ctypes, subprocess, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
sys.exit(subprocess.run(sys.argv[1:]).returncode)  # waits for its own child only
PY
: > "$FAKE_MPS_LOG"
rm -rf "$T/out"
t0=$SECONDS
out=$("$PYTHON" "$T/subreaper.py" "$RUN_EXP" -f "$T/run.json" --mps --min-jobs 3 2>&1); rc=$?
check run_mps_zombie_daemon_has_quit test "$rc" -eq 0 || echo "$out" | tail -n 5
check run_mps_zombie_daemon_no_wait test $((SECONDS - t0)) -lt 10
check run_mps_zombie_daemon_quit_logged quit_logged "$(started_pid)"

# A signal mid-run: the workers stop and the daemon is quit.
: > "$FAKE_MPS_LOG"
rm -rf "$T/out"
cfg "$T/long.json" --set exp_dur=60 --set models.0.sleep_time=0.05 --set models.1.sleep_time=0.05
"$RUN_EXP" -f "$T/long.json" --mps > "$T/long.out" 2>&1 &
RUN=$!
wait_until 120 grep -q "model_A: [1-9][0-9]* jobs" "$T/long.out"
kill -TERM "$RUN"; wait "$RUN"; rc=$?
DAEMON=$(started_pid)
check run_mps_sigterm_exit test "$rc" -ne 0
check run_mps_sigterm_quit quit_logged "$DAEMON"
check run_mps_sigterm_daemon_gone wait_until 10 gone "$DAEMON"
check run_mps_sigterm_no_segment test "$(ls /dev/shm | grep -c "^gpuyield-$UIDN-exp$RUN\$")" -eq 0

finish
