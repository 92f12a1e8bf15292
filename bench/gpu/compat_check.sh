#!/usr/bin/env bash
# On the GPU machine (through `bash bench/gpu/run_all.sh compat`): the drop-in for the original
# experiment, end to end on the GPU.
#  1. `run_exp --layout-compat $L`, then bench/gpu/compat_harness.py copied to $L/gpu-tester/run_exp.py
#     and run from there, the original way (ctypes by relative path, SUFFIX/ID, LD_PRELOAD of
#     ../intercept-lib/build/lib/libcuinterpose_event.so): resnet50 batch 1 at high priority (a job
#     every SLEEP s, setMem(1)/waitForEmptyGPU()/setMem(0) around each) beside resnet152 batch 32 at
#     low priority, back to back. Three phases: hp_alone (the high-priority model alone, with
#     control), nocontrol (both, no library at all), control (both, the drop-in).
#  2. The original Nsight command line on a short run of the control phase (DUR_NSYS s), the
#     SQLite export, its tables (osrt, sampling, kernels must be present; cudnn, cublas reported), nsight-parser on it.
# Checks that fail loudly (exit 1, a line "FAIL ..."): every CSV has exactly the original's columns
# and >= 10 jobs; in the control phase the workers joined the segment compat<suffix> at priorities
# 1 and 0 with mode event:N (their GPUYIELD_VERBOSE lines and the segment's status), the high job
# was drained; the export has the tables; nsight-parser exits 0 with a table per model.
# Results in $OUT: compat_summary.json, compat_check.txt, logs (CSVs, .log, status.json, parser
# outputs) under $OUT/compat-logs.
#   env: BUILD (.gpu-build), OUT (/tmp/out), DUR (20), DUR_NSYS (4), SLEEP (0.1), EG (2), LP_BATCH (32)
set -uo pipefail
. bench/gpu/env.sh
BUILD=${BUILD:-${GPU_BUILD:-$PWD/.gpu-build}}
BUILD=$(cd "$BUILD" && pwd) || { echo "FAIL compat: no build directory $BUILD"; exit 1; }
OUT=${OUT:-/tmp/out}
DUR=${DUR:-20} DUR_NSYS=${DUR_NSYS:-4} SLEEP=${SLEEP:-0.1} EG=${EG:-2} LP_BATCH=${LP_BATCH:-32}
L=/tmp/gy-compat-layout
LOGS=$OUT/compat-logs
HERE=$PWD
mkdir -p "$OUT" "$LOGS"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
note() { echo "ok   $*"; }
exec > >(tee "$OUT/compat_check.txt") 2>&1

rm -rf "$L"
if ! "$BUILD/bin/run_exp" --layout-compat "$L"; then echo "FAIL run_exp --layout-compat $L"; exit 1; fi
mkdir -p "$L/gpu-tester"
cp bench/gpu/compat_harness.py "$L/gpu-tester/run_exp.py"

# config PHASE CONTROL(true/false) WITH_LP(1/0) DUR -> $L/gpu-tester/PHASE.json (the original format)
config() {
    "$PY" - "$@" <<'PY'
import json, sys
phase, control, with_lp, dur = sys.argv[1], sys.argv[2] == "true", sys.argv[3] == "1", float(sys.argv[4])
import os
sleep, eg, lp_batch, logs = float(os.environ["SLEEP"]), int(os.environ["EG"]), int(os.environ["LP_BATCH"]), os.environ["LOGS"]
def model(name, out, prio, sleep_time, batch, event):
    return {"model_name": name, "model_weight": "", "sleep_time": sleep_time, "input_file_path": "",
            "output_file_path": os.path.join(logs, phase), "output_file_name": out, "priority": prio,
            "resize": True, "resize_size": [224, 224], "batch_size": batch,
            "control": {"control": control, "controlsync": False, "controlEvent": control and event,
                        "queue_limit": {"sync": 1, "event_group": eg}}}
models = []
if with_lp:
    models.append(model("resnet152", "model_A", 0, 0, lp_batch, True))
models.append(model("resnet50", "model_B", 1, sleep, 1, False))
json.dump({"models": models, "exp_dur": dur, "device_id": 0}, open("%s.json" % phase, "w"), indent=1)
PY
}

export SLEEP EG LP_BATCH LOGS
export GPUYIELD_VERBOSE=1 EXPCONTROLLER=$BUILD/bin/expcontroller
unset GPUYIELD_SHM GPUYIELD_PRIORITY GPUYIELD_MODE
cd "$L/gpu-tester" || exit 1
for spec in hp_alone:true:0 nocontrol:false:1 control:true:1; do
    IFS=: read -r phase control with_lp <<< "$spec"
    echo "=== phase $phase ($(date -u +%H:%M:%S))"
    config "$phase" "$control" "$with_lp" "$DUR" || { fail "$phase: config"; continue; }
    COMPAT_STATUS=$LOGS/$phase/status.json timeout $((DUR * 3 + 300)) "$PY" run_exp.py -f "$phase.json"
    rc=$?
    [ "$rc" -eq 0 ] || fail "$phase: the harness exited $rc (logs in $LOGS/$phase)"
    for f in "$LOGS/$phase"/*.log; do echo "--- $f"; tail -n 5 "$f"; done
done
cd "$HERE" || exit 1

# Checks and the summary.
"$PY" - "$LOGS" "$EG" "$OUT/compat_summary.json" <<'PY' || fails=$((fails + 1))
import csv, glob, json, os, sys
logs, eg, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
COLUMNS = ["start_timestamp_ns", "end_timestamp_ns", "jct_ms", "max_allocated_gpu_memory_allocated_byte",
           "max_reserved_gpu_memory_byte"]
bad = []
def pct(v, q):
    v = sorted(v)
    return v[max(0, min(len(v) - 1, -(-len(v) * q // 100) - 1))] if v else None
summary = {"event_group_size": eg, "phases": {}}
for phase in ["hp_alone", "nocontrol", "control"]:
    ph = summary["phases"][phase] = {}
    for name in ["model_A", "model_B"]:
        path = os.path.join(logs, phase, name + ".csv")
        if phase == "hp_alone" and name == "model_A":
            continue
        if not os.path.exists(path):
            bad.append("%s: %s.csv is missing" % (phase, name)); continue
        rows = list(csv.reader(open(path)))
        if not rows or rows[0] != COLUMNS:
            bad.append("%s: %s.csv header %r is not the original's %r" % (phase, name, rows[:1], COLUMNS)); continue
        jct = [float(r[2]) for r in rows[1:]]
        if len(jct) < 10:
            bad.append("%s: %s has %d jobs (< 10)" % (phase, name, len(jct)))
        span = (int(rows[-1][1]) - int(rows[1][0])) / 1e9 if len(rows) > 2 else None
        ph[name] = {"jobs": len(jct), "jct_p50_ms": pct(jct, 50), "jct_p90_ms": pct(jct, 90), "jct_p99_ms": pct(jct, 99),
                    "jobs_per_s": len(jct) / span if span else None}
    logs_text = {n: open(p).read() for n in ["model_A", "model_B"]
                 for p in [os.path.join(logs, phase, n + ".log")] if os.path.exists(p)}
    ph["verbose_lines"] = {n: [l for l in t.splitlines() if l.startswith("gpuyield:")] for n, t in logs_text.items()}
    try:
        ph["status"] = json.load(open(os.path.join(logs, phase, "status.json")))
    except Exception as e:
        ph["status"] = {"error": str(e)}
ctl = summary["phases"]["control"]
want = {"model_A": "at priority 0, queue mode event:%d" % eg, "model_B": "at priority 1, queue mode none"}
for name, tail in want.items():
    lines = ctl["verbose_lines"].get(name, [])
    if not any("gates its kernel launches through /gpuyield-" in l and "-compat" in l and l.endswith(tail) for l in lines):
        bad.append("control: %s did not join compat<suffix> %s (its lines: %r)" % (name, tail, lines))
for name in ["model_A", "model_B"]:
    if summary["phases"]["nocontrol"]["verbose_lines"].get(name):
        bad.append("nocontrol: %s loaded the hook library: %r" % (name, summary["phases"]["nocontrol"]["verbose_lines"][name]))
st = ctl["status"]
procs = st.get("processes", [])
if not any(p["priority"] == 0 and p["launches"] > 0 and p["drains"] > 0 for p in procs):
    bad.append("control: no low-priority process with launches and drains in the segment's status: %r" % st)
if not st.get("segment", "").split("-")[-1].startswith("compat"):
    bad.append("control: status of an unexpected segment: %r" % st.get("segment"))
alone = summary["phases"]["hp_alone"].get("model_B", {}).get("jct_p50_ms")
for phase in ["nocontrol", "control"]:
    b = summary["phases"][phase].get("model_B", {})
    if alone and b.get("jct_p50_ms"):
        b["p50_over_alone"] = b["jct_p50_ms"] / alone
        b["p99_over_alone"] = b["jct_p99_ms"] / summary["phases"]["hp_alone"]["model_B"]["jct_p99_ms"]
summary["problems"] = bad
json.dump(summary, open(out, "w"), indent=1)
for phase in ["hp_alone", "nocontrol", "control"]:
    for name, m in summary["phases"][phase].items():
        if name.startswith("model_"):
            print("%-9s %s jobs %4d  JCT p50 %7.2f ms  p99 %7.2f ms  %s" % (phase, name, m["jobs"], m["jct_p50_ms"] or -1,
                  m["jct_p99_ms"] or -1, "x%.2f of alone (p50)" % m["p50_over_alone"] if "p50_over_alone" in m else ""))
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad else 0)
PY

# The original Nsight command line, on a short control run.
echo "=== nsight ($(date -u +%H:%M:%S))"
if [ -z "${NSYS:-}" ] || [ ! -x "$NSYS" ]; then
    fail "nsight: no nsys (bench/gpu/env.sh found '${NSYS:-}')"
else
    NS=/tmp/gy-compat-nsys
    rm -rf "$NS"; mkdir -p "$NS"
    cd "$L/gpu-tester" || exit 1
    LOGS=$NS/logs config nsys true 1 "$DUR_NSYS"
    # Exactly the original's options (README of the original experiment); --cudabacktrace=true is
    # the original's spelling, which newer nsys may refuse: then it is retried as =all, and said so.
    nsys_line=(profile -w true -t cuda,nvtx,osrt,cudnn,cublas -s cpu --cudabacktrace=true -x true -o "$NS/nsight_report" -f true)
    timeout 900 "$NSYS" "${nsys_line[@]}" "$PY" run_exp.py -f nsys.json > "$NS/nsys.txt" 2>&1
    rc=$?
    if [ ! -f "$NS/nsight_report.nsys-rep" ] && grep -qi "cudabacktrace" "$NS/nsys.txt"; then
        echo "note: this nsys refuses --cudabacktrace=true (the original's spelling): retrying with --cudabacktrace=all"
        grep -i "cudabacktrace" "$NS/nsys.txt" | head -3
        nsys_line=(profile -w true -t cuda,nvtx,osrt,cudnn,cublas -s cpu --cudabacktrace=all -x true -o "$NS/nsight_report" -f true)
        timeout 900 "$NSYS" "${nsys_line[@]}" "$PY" run_exp.py -f nsys.json > "$NS/nsys.txt" 2>&1
        rc=$?
    fi
    cd "$HERE" || exit 1
    echo "nsys ${nsys_line[*]} python run_exp.py -f nsys.json: exit $rc"
    tail -n 15 "$NS/nsys.txt"
    ls -la "$NS"
    cp "$NS/nsys.txt" "$LOGS/nsys.txt"
    if [ ! -f "$NS/nsight_report.nsys-rep" ]; then
        fail "nsight: no report made (exit $rc; output in $LOGS/nsys.txt)"
    elif ! timeout 900 "$NSYS" export --type sqlite -o "$NS/nsight_report.sqlite" -f true "$NS/nsight_report.nsys-rep" > "$NS/export.txt" 2>&1; then
        fail "nsight: nsys export failed: $(tail -n 3 "$NS/export.txt")"
    else
        "$PY" - "$NS/nsight_report.sqlite" "$OUT/compat_nsys_tables.json" <<'PY' || fails=$((fails + 1))
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
tables = {n: db.execute('SELECT count(*) FROM "%s"' % n).fetchone()[0]
          for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
json.dump(tables, open(sys.argv[2], "w"), indent=1, sort_keys=True)
need = {"osrt": ["OSRT_API"], "sampling": ["COMPOSITE_EVENTS", "SAMPLING_CALLCHAINS"],
        "kernels": ["CUPTI_ACTIVITY_KIND_KERNEL"]}
# nsys writes CUDNN_EVENTS / CUBLAS_EVENTS only when it recorded such calls: on the H100 machine
# (nsys 2025.3, PyTorch's own cuDNN 9 / cuBLAS) it recorded none, with no warning (2026-11-23).
# Nothing of ours reads them: reported, not failed.
maybe = {"cudnn": ["CUDNN_EVENTS"], "cublas": ["CUBLAS_EVENTS"]}
bad = 0
for what, names in list(need.items()) + list(maybe.items()):
    have = {n: tables.get(n) for n in names}
    ok = all(v for v in have.values())
    print("%s %-8s %s" % ("ok  " if ok else "FAIL" if what in need else "none", what, have))
    bad += not ok and what in need
sys.exit(1 if bad else 0)
PY
        if "$BUILD/bin/nsight-parser" "$NS/nsight_report.sqlite" -p "$NS/logs/nsys/models_pid.json" -o "$NS/kernels" > "$NS/parser.txt" 2>&1; then
            cat "$NS/parser.txt"
            n=$(ls "$NS/kernels"/model_*.csv 2>/dev/null | wc -l)
            if [ "$n" -eq 2 ]; then note "nsight-parser: a kernel table per model ($n)"; else fail "nsight-parser: $n model tables, expected 2"; fi
            mkdir -p "$LOGS/nsight-parser"
            cp "$NS/kernels/summary.json" "$NS/kernels/summary.log" "$LOGS/nsight-parser/" 2>/dev/null
        else
            fail "nsight-parser exited non-zero: $(tail -n 5 "$NS/parser.txt")"
        fi
        ls -la "$NS/nsight_report.nsys-rep" "$NS/nsight_report.sqlite"
    fi
    rm -rf "$NS"/*.qdstrm
fi
rm -rf "$L"
echo "compat check: $fails failure(s)"
[ "$fails" -eq 0 ]
