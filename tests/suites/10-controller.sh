#!/usr/bin/env bash
# The controller library (plain, ASan+UBSan, TSan) and expcontroller's command line.
set -u
. "$ROOT/tests/lib/suite.sh"

run_counted controller "$BUILD/tests/test_controller"
run_counted controller-asan "$BUILD/asan/tests/test_controller"
TSAN_OPTIONS="halt_on_error=1" run_counted controller-tsan "$BUILD/tsan/tests/test_controller"
run_counted guarded "$BUILD/tests/test_guarded"
run_counted guarded-asan "$BUILD/asan/tests/test_guarded"
TSAN_OPTIONS="halt_on_error=1" run_counted guarded-tsan "$BUILD/tsan/tests/test_guarded"

EXP=$BUILD/bin/expcontroller
TAG=test-cli-$$
NAME=/gpuyield-$(id -u)-$TAG

expect cli_no_command 2 'missing command' "$EXP"
expect cli_unknown_command 2 "unknown command 'frob'" "$EXP" frob
expect cli_unknown_option 2 "unknown or incomplete option '--bogus'" "$EXP" status --bogus
expect cli_missing_option_value 2 "incomplete option" "$EXP" status --name
expect cli_bad_tag 2 "tag 'a b' is invalid" "$EXP" status --name 'a b'
expect cli_json_needs_status 2 "--json goes with 'status'" "$EXP" create --json
expect cli_bad_watch 2 "--watch takes seconds" "$EXP" status --watch 0
for bad in nan inf -1 ""; do # issue 19: NaN passed both range comparisons
    expect "cli_bad_watch_${bad:-empty}" 2 "--watch takes seconds" "$EXP" status --watch="$bad"
done
expect cli_bad_drain_timeout 2 "--drain-timeout-ms takes" "$EXP" create --drain-timeout-ms -5
expect cli_clean_takes_no_name 2 "takes no --name" "$EXP" clean --name x
expect cli_extra_argument 2 "unexpected argument 'extra'" "$EXP" remove extra
expect cli_help 0 'usage: expcontroller' "$EXP" --help
check cli_help_names_the_policies bash -c "\"$EXP\" --help | grep -q -- '--policy drain|corun|partition' && ! \"$EXP\" --help | grep -q '%s'"
expect cli_version 0 "^expcontroller \(gpuyield\) $(cat "$ROOT/VERSION")\$" "$EXP" --version
clean_lock # from create to remove: a created segment has no live creator
expect cli_status_missing 1 "no segment $NAME" "$EXP" status --name "$TAG"
expect cli_remove_missing 1 "no segment $NAME to remove" "$EXP" remove --name "$TAG"
expect cli_create_prints_name 0 "^$NAME\$" "$EXP" create --name "$TAG" --drain-timeout-ms 500
expect cli_create_twice 1 "already exists" "$EXP" create --name "$TAG"
expect cli_status_table 0 'no registered processes' "$EXP" status --name "$TAG"
expect cli_status_json 0 "^\{\"segment\": \"$NAME\", \"timestamp\": \"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z\", \"policy\": \"drain\", \"mps\": false, \"jobs\": \[0, 0, 0, 0, 0, 0, 0, 0\].*\"processes\": \[\]\}\$" "$EXP" status --name "$TAG" --json
expect cli_default_tag_from_env 0 "\"segment\": \"$NAME\"" env GPUYIELD_SHM="$TAG" "$EXP" status --json
expect cli_status_json_parses 0 '^ok$' bash -c "\"$EXP\" status --name $TAG --json | \"$PYTHON\" -c 'import json,sys; d=json.load(sys.stdin); assert len(d[\"jobs\"])==8; print(\"ok\")'"
expect cli_watch_stops_on_sigint 0 '"segment"' timeout --preserve-status -s INT 3 "$EXP" status --name "$TAG" --json --watch 0.2
# status --watch ends, one line and exit 1, when its segment is removed (it went on showing it).
"$EXP" status --name "$TAG" --watch 0.1 > "/tmp/watch-$$.out" 2> "/tmp/watch-$$.err" &
WATCH=$!
wait_until 60 grep -q "^segment $NAME" "/tmp/watch-$$.out"
"$EXP" remove --name "$TAG" > /dev/null
wait_until 30 gone "$WATCH"; wait "$WATCH"; rc=$?
check cli_watch_ends_when_removed_exit_1 test "$rc" -eq 1
check cli_watch_says_removed grep -q "^expcontroller: $NAME was removed: nothing more to watch\$" "/tmp/watch-$$.err"
rm -f "/tmp/watch-$$.out" "/tmp/watch-$$.err"
"$EXP" create --name "$TAG" > /dev/null
# Usage errors: one line naming the fault and where the options are, exit 2 (not the whole help).
for args in "" "bogus" "status --bogus" "status --watch x" "create --policy nope" "serve --metrics"; do
    out=$("$EXP" $args 2>&1); rc=$?
    if [ "$rc" -eq 2 ] && [ "$(wc -l <<< "$out")" -eq 1 ] && grep -q "^expcontroller: .* (expcontroller --help lists the commands and options)\$" <<< "$out"; then
        pass "cli_usage_one_line_${args// /_}"
    else
        fail "cli_usage_one_line_${args// /_}" "exit $rc: $out"
    fi
done
expect cli_remove 0 "removed $NAME" "$EXP" remove --name "$TAG"
check cli_remove_left_nothing test ! -e "/dev/shm${NAME}"
# the guarded policy's flags: stored in the segment, shown by status; bad values one line, exit 2
for bad in nan -0.1 1.5 "" 0.02x; do
    expect "cli_bad_guard_p50_${bad:-empty}" 2 "^expcontroller: --guard-p50 takes a fraction 0..1" "$EXP" create --name "$TAG" --policy guarded --guard-p50="$bad"
done
expect cli_bad_guard_p99 2 "^expcontroller: --guard-p99 takes a fraction 0..1" "$EXP" serve --name "$TAG" --policy guarded --guard-p99 x
expect cli_guard_needs_guarded 2 "^expcontroller: --guard-p50 and --guard-p99 go with the policy guarded \(--policy guarded, or the default under MPS" "$EXP" create --name "$TAG" --policy corun --guard-p50 0.1
# without MPS the default is drain: the flags need the policy named
expect cli_guard_without_mps_needs_guarded 2 "^expcontroller: --guard-p50 and --guard-p99 go with the policy guarded" "$EXP" create --name "$TAG" --guard-p50 0.1
expect cli_guard_not_for_status 2 "go with 'create' or 'serve', not 'status'" "$EXP" status --name "$TAG" --guard-p99 0.1
expect cli_guard_depth_needs_guarded 2 "^expcontroller: --guard-depth goes with the policy guarded" "$EXP" create --name "$TAG" --policy corun --guard-depth
expect cli_guard_depth_not_for_status 2 "^expcontroller: --guard-depth goes with 'create' or 'serve', not 'status'" "$EXP" status --name "$TAG" --guard-depth
check cli_guard_bad_values_made_nothing test ! -e "/dev/shm${NAME}"
expect cli_create_guarded 0 "^$NAME\$" "$EXP" create --name "$TAG" --policy guarded --guard-p50 0.03 --guard-p99 0.08
expect cli_status_guarded_table 0 "guarded: arm in force stop \(start: .*bound p50 \+3.0 %, p99 \+8.0 %.*within at >= 2.50, from 256 jobs a window" "$EXP" status --name "$TAG"
expect cli_status_guarded_json 0 '^ok$' bash -c "\"$EXP\" status --name $TAG --json | \"$PYTHON\" -c 'import json,sys; g=json.load(sys.stdin)[\"guarded\"]; assert g[\"in_force\"]==\"stop\" and g[\"reason\"]==\"start\" and g[\"eps_p50\"]==0.03 and g[\"eps_p99\"]==0.08 and g[\"trial\"] is None and list(g[\"arms\"])==[\"stop\",\"partition:16\",\"partition:32\",\"partition:64\",\"disjoint:64\",\"partition:96\",\"partition:120\",\"disjoint:120\"], g; print(\"ok\")'"
expect cli_status_guard_depth_off 0 '^ok$' bash -c "\"$EXP\" status --name $TAG --json | \"$PYTHON\" -c 'import json,sys; d=json.load(sys.stdin)[\"guarded\"][\"queue_depth\"]; assert d[\"on\"] is False and d[\"in_force_us\"]==0, d; print(\"ok\")'"
expect cli_create_guard_depth 0 "^/gpuyield-[0-9]*-${TAG}d\$" "$EXP" create --name "${TAG}d" --policy guarded --guard-depth
expect cli_status_guard_depth_on 0 '^ok$' bash -c "\"$EXP\" status --name ${TAG}d --json | \"$PYTHON\" -c 'import json,sys; d=json.load(sys.stdin)[\"guarded\"][\"queue_depth\"]; assert d[\"on\"] is True and d[\"in_force_us\"]==0 and d[\"trying_us\"] is None and d[\"trial\"] is None, d; print(\"ok\")'"
expect cli_remove_guard_depth 0 "removed" "$EXP" remove --name "${TAG}d"
expect cli_guard_force 0 "^pinned arm disjoint:120 in force on $NAME" "$EXP" guard-force --name "$TAG" --arm disjoint:120
expect cli_guard_force_shown 0 "guarded: arm in force disjoint:120, pinned until a guard-reset \(forced" "$EXP" status --name "$TAG"
expect cli_guard_force_json 0 '^ok$' bash -c "\"$EXP\" status --name $TAG --json | \"$PYTHON\" -c 'import json,sys; g=json.load(sys.stdin)[\"guarded\"]; assert g[\"in_force\"]==\"disjoint:120\" and g[\"reason\"]==\"forced\" and g[\"pinned\"] is True, g; print(\"ok\")'"
expect cli_guard_force_bad_arm 2 "--arm takes stop, partition:16\|32\|64\|96\|120 or disjoint:64\|120, not 'partition:48'" \
    "$EXP" guard-force --name "$TAG" --arm partition:48
expect cli_guard_force_needs_arm 2 "guard-force needs --arm ARM" "$EXP" guard-force --name "$TAG"
expect cli_arm_only_for_guard_force 2 "--arm goes with 'guard-force', not 'status'" "$EXP" status --name "$TAG" --arm stop
expect cli_guard_reset 0 "^reset the guarded policy of $NAME: stop in force\$" "$EXP" guard-reset --name "$TAG"
expect cli_guard_reset_shown 0 "guarded: arm in force stop \(reset by an operator" "$EXP" status --name "$TAG"
expect cli_remove_guarded 0 "removed $NAME" "$EXP" remove --name "$TAG"
expect cli_guard_reset_not_guarded 1 "^expcontroller: $NAME runs policy corun, not guarded: there is nothing learned to reset" \
    bash -c "\"$EXP\" create --name $TAG --policy corun >/dev/null && \"$EXP\" guard-reset --name $TAG; rc=\$?; \"$EXP\" remove --name $TAG >/dev/null; exit \$rc"
expect cli_guard_reset_no_segment 1 "^expcontroller: .*$NAME" "$EXP" guard-reset --name "$TAG"
expect cli_guard_force_not_guarded 1 "^expcontroller: $NAME runs policy corun, not guarded: it has no arms to force" \
    bash -c "\"$EXP\" create --name $TAG --policy corun >/dev/null && \"$EXP\" guard-force --name $TAG --arm stop; rc=\$?; \"$EXP\" remove --name $TAG >/dev/null; exit \$rc"
clean_unlock

# serve: creates, reaps, and removes on SIGTERM
"$EXP" serve --name "$TAG" > /tmp/serve-$$.out 2>&1 &
SERVE=$!
for _ in $(seq 600); do [ -e "/dev/shm$NAME" ] && break; sleep 0.1; done # a crowded machine: up to 60 s
check serve_creates test -e "/dev/shm$NAME"
kill -TERM "$SERVE"; wait "$SERVE"; rc=$?
check serve_exits_143_on_sigterm test "$rc" -eq 143
check serve_removes_on_sigterm test ! -e "/dev/shm$NAME"
check serve_says_removed grep -q "removed $NAME" /tmp/serve-$$.out
rm -f /tmp/serve-$$.out

# at_exit (tests/lib/suite.sh) runs its action in the suite's shell only: 200 children killed
# right after their fork, before they exec, must not run it (unguarded, most of them did).
AT_EXIT_DIR=$(mktemp -d)
ROOT=$ROOT AT_EXIT_DIR=$AT_EXIT_DIR bash -c '. "$ROOT/tests/lib/suite.sh"
    at_exit "touch \"\$AT_EXIT_DIR/ran-\$BASHPID\""
    for _ in $(seq 200); do sleep 5 & kill -TERM $!; wait $! 2>/dev/null; done
    echo "$BASHPID" > "$AT_EXIT_DIR/shell"' 2> /dev/null
check at_exit_runs_in_the_suite_shell_only test "$(ls "$AT_EXIT_DIR")" = "$(printf 'ran-%s\nshell' "$(cat "$AT_EXIT_DIR/shell")")"
rm -rf "$AT_EXIT_DIR"

# serve stopped early: a SIGTERM that comes while it is still setting up ends it with exit 143 and
# nothing left behind (the segment, the MPS daemon and its pipe directory; the log directory
# keeps the daemon's log by design). The stand-in MPS daemon
# (tests/run_exp/bin) logs its starts and quits.
EARLY=$(mktemp -d /tmp/serve-early.XXXXXX)
EARLY_NAME=/gpuyield-$(id -u)-$TAG-early
early_cleanup() {
    local pid; for pid in $(awk '$1 == "start" {print $2}' "$EARLY/mps.log" 2>/dev/null); do kill "$pid" 2>/dev/null; done
    rm -f "/dev/shm$EARLY_NAME" "/dev/shm$NAME"-stamp-*; rm -rf "$EARLY"
}
at_exit early_cleanup
# Certain, not raced: a preloaded shm_open sends SIGTERM the moment the segment exists (before the
# fix that killed serve, exit 143, and the segment stayed).
PATH=$ROOT/tests/run_exp/bin:$PATH FAKE_MPS_LOG=$EARLY/mps.log LD_PRELOAD=$BUILD/tests/libgy_term_after_create.so \
    "$EXP" serve --name "$TAG-early" --mps --mps-dir "$EARLY/mps" > "$EARLY/out" 2>&1
rc=$?
check serve_sigterm_at_create_exits_143 test "$rc" -eq 143
check serve_sigterm_at_create_removes_segment test ! -e "/dev/shm$EARLY_NAME"
check serve_sigterm_at_create_quits_mps grep -qs "^quit " "$EARLY/mps.log"
check serve_sigterm_at_create_removes_mps_pipe_dir test ! -e "$EARLY/mps/pipe"
rm -f "/dev/shm$EARLY_NAME"
# Raced: 30 starts, each sent SIGTERM 0-20 ms after it was spawned. One killed before main() runs
# has made nothing and dies of the signal (143); any other exits 143 too. Nothing may stay behind.
bad=
for i in $(seq 30); do
    PATH=$ROOT/tests/run_exp/bin:$PATH FAKE_MPS_LOG=$EARLY/mps.log \
        "$EXP" serve --name "$TAG-early" --mps --mps-dir "$EARLY/mps-$i" > "$EARLY/out" 2>&1 &
    pid=$!
    sleep "$(printf '0.%03d' $((RANDOM % 21)))"
    kill -TERM "$pid"; wait "$pid"; rc=$?
    if [ "$rc" -ne 143 ]; then bad="$bad start $i: exit $rc ($(head -c 300 "$EARLY/out"));"; fi
    [ -e "/dev/shm$EARLY_NAME" ] && { bad="$bad start $i: segment left (exit $rc);"; rm -f "/dev/shm$EARLY_NAME"; }
    [ -e "$EARLY/mps-$i/pipe" ] && bad="$bad start $i: MPS pipe directory left (exit $rc);"
done
for pid in $(awk '$1 == "start" {print $2}' "$EARLY/mps.log" 2>/dev/null); do
    grep -q "^quit $pid " "$EARLY/mps.log" || bad="$bad MPS daemon $pid never quit;"
done
if [ -z "$bad" ]; then pass serve_early_sigterm_30_starts_leave_nothing; else fail serve_early_sigterm_30_starts_leave_nothing "$bad"; fi
early_cleanup; trap - EXIT

# clean: removes this user's segments whose creator is dead, leaves live and foreign ones
clean_lock # our clean runs unwrapped below: we hold the lock
"$EXP" create --name "$TAG-stale" > /dev/null
"$EXP" serve --name "$TAG-live" > /dev/null 2>&1 &
LIVE=$!
for _ in $(seq 600); do [ -e "/dev/shm/gpuyield-$(id -u)-$TAG-live" ] && break; sleep 0.1; done
FOREIGN=/dev/shm/gpuyield-4242-$TAG-foreign
"$EXP" create --name "/gpuyield-4242-$TAG-foreign" > /dev/null 2>&1 || true
[ "$(id -u)" -eq 0 ] && [ -e "$FOREIGN" ] && chown 4242 "$FOREIGN"
expect clean_reports 0 "removed /gpuyield-$(id -u)-$TAG-stale" "$EXP" clean
check clean_removed_stale test ! -e "/dev/shm/gpuyield-$(id -u)-$TAG-stale"
check clean_kept_live test -e "/dev/shm/gpuyield-$(id -u)-$TAG-live"
check clean_kept_foreign test -e "$FOREIGN"
expect open_foreign_refused 1 "not by you|another user" "$EXP" status --name "/gpuyield-4242-$TAG-foreign"
rm -f "$FOREIGN"
# make.sh's leak check, on copies in a private directory (a run beside ours must not see them):
# reported only when neither the test process named in it nor its creator lives.
SHMDIR=$(mktemp -d)
DEAD=$(sh -c 'echo $$') # a pid whose process is gone
U=$(id -u)
keep_copy() { cp "/dev/shm/gpuyield-$U-$1" "$SHMDIR/gpuyield-$U-$2"; }
"$EXP" create --name "$TAG-leak" > /dev/null # its creator exits at once
keep_copy "$TAG-leak" "test-cli-$DEAD-dead"
keep_copy "$TAG-leak" "$TAG-named"            # creator dead, but this shell is the pid in the name
keep_copy "$TAG-live" "test-cli-$DEAD-served" # creator: the serve still running
"$EXP" remove --name "$TAG-leak" > /dev/null
printf 'garbage' > "$SHMDIR/gpuyield-$U-test-cli-$DEAD-corrupt" # no header: the name's pid decides
leaked=$("$PYTHON" "$ROOT/tests/lib/leaked_segments.py" --dir "$SHMDIR"); rc=$?
want=$(printf 'gpuyield-%s-test-cli-%s-corrupt\ngpuyield-%s-test-cli-%s-dead' "$U" "$DEAD" "$U" "$DEAD")
if [ "$rc" -eq 1 ] && [ "$leaked" = "$want" ]; then pass leak_check_reports_dead; else fail leak_check_reports_dead "exit $rc: $leaked"; fi
leaked=$("$PYTHON" "$ROOT/tests/lib/leaked_segments.py" --dir "$SHMDIR" --except "gpuyield-$U-test-cli-$DEAD-dead" "gpuyield-$U-test-cli-$DEAD-corrupt"); rc=$?
if [ "$rc" -eq 0 ] && [ -z "$leaked" ]; then pass leak_check_keeps_live_and_excepted; else fail leak_check_keeps_live_and_excepted "exit $rc: $leaked"; fi
rm -rf "$SHMDIR"
clean_unlock
kill -INT "$LIVE"; wait "$LIVE"

# ---- issue 19 ------------------------------------------------------------------------------
# Under umask 0777 the owner's segment still gets mode 0600 (fchmod after create), so the
# owner's other processes open it.
clean_lock
(umask 0777; "$EXP" create --name "$TAG-umask" > /dev/null)
check umask_0777_segment_mode_0600 test "$(stat -c %a "/dev/shm/gpuyield-$(id -u)-$TAG-umask" 2>/dev/null)" = 600
"$EXP" remove --name "$TAG-umask" > /dev/null 2>&1
clean_unlock
# A squatted name (our prefix, another user's file): one line naming the owner, exit 1.
if [ "$(id -u)" -eq 0 ] && id nobody > /dev/null 2>&1; then
    SQUAT=/dev/shm/gpuyield-0-$TAG-squat
    : > "$SQUAT" && chown nobody "$SQUAT" && chmod 600 "$SQUAT"
    expect squatted_create_names_owner 1 "belongs to uid [0-9]+ \(nobody\)" "$EXP" create --name "$TAG-squat"
    expect squatted_serve_names_owner 1 "(belongs to|owned by) uid [0-9]+ \(nobody\)" "$EXP" serve --name "$TAG-squat"
    expect squatted_status_names_owner 1 "owned by uid [0-9]+ \(nobody\)" "$EXP" status --name "$TAG-squat"
    rm -f "$SQUAT"
else
    echo "skip squatted_*: needs root and the user 'nobody' to plant another user's segment"
fi
check serve_removes_on_sigint test ! -e "/dev/shm/gpuyield-$(id -u)-$TAG-live"

# The layout stamp (controller/layout_stamp.h) is computed from the layout: builds whose layouts
# differ refuse each other's segments with one line (what, which segment, how to fix), builds of
# the same layout agree, and a member without its row in layout_stamp.h fails here.
expect layout_rows_name_every_field 0 '^ok [0-9]+ fields$' "$PYTHON" "$ROOT/tests/lib/layout_rows.py" "$ROOT/controller"
STAMP=$EARLY/stamp
# variant NAME SED_SCRIPT: expcontroller built from a copy of controller/ and service/ whose
# segment_layout.h the script edits (it must change it, unless NAME is "same").
variant() {
    local dir=$STAMP/$1
    mkdir -p "$dir" && cp -r "$ROOT/controller" "$ROOT/service" "$dir/" && sed -i "$2" "$dir/controller/segment_layout.h" &&
        { [ "$1" = same ] || ! cmp -s "$ROOT/controller/segment_layout.h" "$dir/controller/segment_layout.h"; } &&
        gcc -std=c11 -D_GNU_SOURCE -O1 -pthread -DGY_VERSION='"0.0.0"' -I"$dir/controller" -I"$dir/service" \
            "$dir"/controller/*.c "$dir"/service/*.c -o "$dir/expcontroller"
}
STAMP_REFUSED="was made by a different gpuyield build \(layout stamp [0-9a-f]{8}, this build's [0-9a-f]{8}\): remove it with .expcontroller remove --name"
clean_lock
# A newer build with one more per-process counter (the slots keep their size, the fields after it move).
if variant counter 's/^\(#define GY_PROC_COUNTERS(X)\).*$/\1 \\\n    X(test_added, "a counter of a newer build") \\/'; then
    NEW=$STAMP/counter/expcontroller
    expect stamp_new_build_creates 0 "^$NAME-stamp-new\$" "$NEW" create --name "$TAG-stamp-new"
    expect stamp_old_build_refuses_new_segment 1 "^expcontroller: segment $NAME-stamp-new $STAMP_REFUSED $NAME-stamp-new. or restart the experiment\$" \
        "$EXP" status --name "$TAG-stamp-new"
    expect stamp_refused_segment_can_be_removed 0 "removed $NAME-stamp-new" "$EXP" remove --name "$TAG-stamp-new"
    "$EXP" create --name "$TAG-stamp-old" > /dev/null
    expect stamp_new_build_refuses_old_segment 1 "segment $NAME-stamp-old $STAMP_REFUSED" "$NEW" status --name "$TAG-stamp-old"
    "$EXP" remove --name "$TAG-stamp-old" > /dev/null
else
    fail stamp_counter_variant_builds
fi
# A resized table (the segment's size changes: refused with the same line, not just "truncated").
# (a smaller table: a larger one no longer fits the 64 KiB the layout asserts, with guarded's statistics)
if variant devices 's/^#define GY_MAX_DEVICES 16\b/#define GY_MAX_DEVICES 15/'; then
    "$STAMP/devices/expcontroller" create --name "$TAG-stamp-size" > /dev/null
    expect stamp_old_build_refuses_resized_segment 1 "segment $NAME-stamp-size $STAMP_REFUSED" "$EXP" status --name "$TAG-stamp-size"
    "$EXP" remove --name "$TAG-stamp-size" > /dev/null
else
    fail stamp_devices_variant_builds
fi
# The same layout built apart (other flags, other directory): the same stamp, so it joins.
if variant same 's/^//'; then
    "$STAMP/same/expcontroller" create --name "$TAG-stamp-same" > /dev/null
    expect stamp_same_layout_joins 0 "no registered processes" "$EXP" status --name "$TAG-stamp-same"
    "$EXP" remove --name "$TAG-stamp-same" > /dev/null
else
    fail stamp_same_variant_builds
fi
clean_unlock
mkdir -p "$STAMP/unlisted" && cp -r "$ROOT/controller" "$STAMP/unlisted/"
sed -i 's/^struct gy_proc_slot {$/&\n    uint32_t test_added;/' "$STAMP/unlisted/controller/segment_layout.h"
expect layout_rows_catch_an_unlisted_field 1 "struct gy_proc_slot has the members \\[.test_added." \
    "$PYTHON" "$ROOT/tests/lib/layout_rows.py" "$STAMP/unlisted/controller"

finish
