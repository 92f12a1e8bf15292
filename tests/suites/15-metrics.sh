#!/usr/bin/env bash
# Suite 15: expcontroller serve --metrics (GET /metrics over real HTTP, Prometheus text parsed by
# tests/metrics/scrape.py), --metrics-textfile, and their bad inputs.
set -u
. "$ROOT/tests/lib/suite.sh"
PYTHON=${PYTHON:-python3}
EXP=$BUILD/bin/expcontroller
TAG=test-metrics-$$
NAME=/gpuyield-$(id -u)-$TAG
T=$(mktemp -d)
SERVE=; AGENT=
cleanup() {
    [ -n "$AGENT" ] && kill -KILL "$AGENT" 2>/dev/null
    [ -n "$SERVE" ] && kill -TERM "$SERVE" 2>/dev/null && wait "$SERVE" 2>/dev/null
    rm -rf "$T"
}
at_exit cleanup

# The status view in C: names cleaned to UTF-8 byte by byte, one row per pid (plain and ASan).
run_counted status-view "$BUILD/tests/test_status_view"
run_counted status-view-asan "$BUILD/asan/tests/test_status_view"

# Bad inputs: one line, exit 2 (usage) or 1 (runtime), no segment left behind.
expect metrics_bad_address 2 "'1.2.3' is not an IPv4 address" "$EXP" serve --name "$TAG" --metrics 1.2.3:9400
expect metrics_bad_port 2 "the port must be a number 0..65535" "$EXP" serve --name "$TAG" --metrics 127.0.0.1:99999
expect metrics_only_with_serve 2 "go with 'serve', not 'status'" "$EXP" status --name "$TAG" --metrics 9400
expect metrics_textfile_empty 2 "--metrics-textfile is empty" "$EXP" serve --name "$TAG" --metrics-textfile ''
expect metrics_textfile_bad_dir 1 "cannot write $T/no/such/dir/gy.prom.tmp" "$EXP" serve --name "$TAG" --metrics-textfile "$T/no/such/dir/gy.prom"
check metrics_bad_inputs_leave_no_segment test ! -e "/dev/shm$NAME"

# The textfile is 0644 whatever the umask (node_exporter may run as another user).
(umask 077; exec "$EXP" serve --name "$TAG-mode" --metrics-textfile "$T/mode.prom" > /dev/null 2>&1) & MODE_SERVE=$!
wait_until 60 test -e "$T/mode.prom"
check metrics_textfile_0644_under_umask_077 test "$(stat -c %a "$T/mode.prom")" = 644
kill -TERM "$MODE_SERVE"; wait "$MODE_SERVE"
check metrics_textfile_mode_serve_cleaned_up test ! -e "/dev/shm$NAME-mode" -a ! -e "$T/mode.prom"

# Serve with both; port 0: the kernel picks one, the line says which (loopback by default).
"$EXP" serve --name "$TAG" --metrics 0 --metrics-textfile "$T/gy.prom" > "$T/serve.out" 2> "$T/serve.err" &
SERVE=$!
wait_until 60 grep -q "metrics at http://" "$T/serve.err"
URL=$(sed -n 's#.*metrics at \(http://[0-9.:]*\)/metrics#\1#p' "$T/serve.err")
check metrics_binds_loopback_by_default grep -q "^http://127\.0\.0\.1:[0-9][0-9]*\$" <<< "$URL"
PORT=${URL##*:}
expect metrics_port_in_use 1 "cannot listen: Address already in use" "$EXP" serve --name "$TAG-2" --metrics "$PORT"
check metrics_port_in_use_leaves_no_segment test ! -e "/dev/shm$NAME-2"

# An agent holding a job at level 3, named by GPUYIELD_MODEL, registered twice (issue 28): by the
# hook (5 launches on the fake driver) and by the extension (its begin). One process, one series.
GPUYIELD_MODEL=agent-model GPUYIELD_SHM=$TAG LD_PRELOAD=$BUILD/lib/libgpuyield.so LD_LIBRARY_PATH=$BUILD/fakecuda \
PYTHONPATH="$BUILD/python" "$PYTHON" -c '
import ctypes, sys, time, gpuyield
cuda = ctypes.CDLL("libcuda.so.1")
ctx, dev, mod, fn = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cuda.cuCtxSetCurrent(ctx) == 0
assert cuda.cuModuleLoadData(ctypes.byref(mod), b"fake image") == 0
assert cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b"spin_us:10") == 0
for _ in range(5):
    assert cuda.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, None, None, None) == 0
seg = gpuyield.connect(sys.argv[1]); seg.begin(3); print("in", flush=True); time.sleep(600)' "$TAG" > "$T/agent.out" &
AGENT=$!
wait_until 60 grep -q in "$T/agent.out"
check metrics_agent_has_two_slots bash -c "PYTHONPATH='$BUILD/python' '$PYTHON' -c '
import sys, gpuyield
st = gpuyield.connect(sys.argv[1])._status_slots()
sys.exit(0 if sum(p[\"pid\"] == int(sys.argv[2]) for p in st[\"processes\"]) == 2 else 1)' '$TAG' '$AGENT'"
expect metrics_scrape 0 "^ok [0-9]+ samples" "$PYTHON" "$ROOT/tests/metrics/scrape.py" "$URL" "$NAME" "$AGENT" 5
expect status_json_one_row_per_process 0 "^ok$" bash -c "'$EXP' status --name '$TAG' --json | '$PYTHON' -c '
import json, sys
st = json.load(sys.stdin)
rows = [p for p in st[\"processes\"] if p[\"pid\"] == int(sys.argv[1])]
assert len(rows) == 1 and rows[0][\"launches\"] == 5 and rows[0][\"name\"] == \"agent-model\", rows
print(\"ok\")' '$AGENT'"
expect status_table_names_the_model 0 "^ +$AGENT +agent-model +0 " "$EXP" status --name "$TAG"
check status_table_one_row_per_process test "$("$EXP" status --name "$TAG" | grep -c "^ *$AGENT ")" -eq 1
check metrics_textfile_parses wait_until 30 "$PYTHON" -c '
import sys
sys.path.insert(0, sys.argv[2])
from prom_text import parse
parse(open(sys.argv[1], "rb").read())' "$T/gy.prom" "$ROOT/tests/metrics"
run_pytest prom_text_parser "$ROOT/tests/metrics/test_prom_text.py"
# A request without an end (over 8 KiB of header) is refused, and the server goes on serving.
expect metrics_oversized_request 0 "^400 then 200$" "$PYTHON" -c '
import socket, sys, urllib.request
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"GET /metrics HTTP/1.0\r\nX-Filler: " + b"a" * 9000)
status = s.recv(64).split()[1].decode()
print(status, "then", urllib.request.urlopen(sys.argv[2] + "/metrics", timeout=30).status)' "$PORT" "$URL"
check metrics_textfile_written wait_until 30 grep -q "gpuyield_jobs_in_progress{segment=\"$NAME\",level=\"3\"} 1" "$T/gy.prom"
check metrics_textfile_no_temp_left bash -c "! ls '$T' | grep -q 'gy.prom.tmp'"

# Names that are not UTF-8 (a 0xff byte, a character cut at 63 bytes, a non-ASCII executable)
# leave /metrics, the textfile and status --json valid (issue 29 item 5).
expect metrics_names_stay_utf8 0 "^ok " "$PYTHON" "$ROOT/tests/metrics/names.py" "$URL" "$TAG" "$EXP" "$T/gy.prom" "$BUILD/python"
# No client stalls serve (issue 29 item 4): tricklers and 500 idle connections (bounds in stall.py).
expect metrics_trickling_clients_stall_nothing 0 "^ok " "$PYTHON" "$ROOT/tests/metrics/stall.py" trickle "$URL" "$TAG" "$BUILD/python"
expect metrics_idle_connections_stall_nothing 0 "^ok " "$PYTHON" "$ROOT/tests/metrics/stall.py" idle "$URL" "$TAG" "$BUILD/python"
# HEAD: the headers GET gives, with the body's length (issue 29 item 6).
expect metrics_head_content_length 0 "^ok$" "$PYTHON" -c '
import socket, sys
def ask(method):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
    s.sendall(method + b" /metrics HTTP/1.0\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
head, _, body = ask(b"GET").partition(b"\r\n\r\n")
hhead, _, hbody = ask(b"HEAD").partition(b"\r\n\r\n")
length = [int(l.split(b":")[1]) for l in hhead.split(b"\r\n") if l.lower().startswith(b"content-length:")][0]
assert hbody == b"" and abs(length - len(body)) < 4096 and length > 1000, (length, len(body), hbody[:80])
print("ok")' "$PORT"
kill -KILL "$AGENT"; wait "$AGENT" 2>/dev/null; AGENT=
# Reaping counts slots: the three names.py killed, the two stall.py killed, and this one's two
# (hook and extension).
check metrics_counts_the_reaped wait_until 30 bash -c "'$PYTHON' -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())' '$URL/metrics' | grep -q 'gpuyield_reaped_processes_total{segment=\"$NAME\"} 7'"
kill -TERM "$SERVE"; wait "$SERVE"; rc=$?; SERVE=
check metrics_serve_exits_143 test "$rc" -eq 143
check metrics_serve_removes_segment test ! -e "/dev/shm$NAME"
check metrics_serve_removes_textfile test ! -e "$T/gy.prom"
finish
