#!/usr/bin/env bash
# The graph-split check on a GPU (hooks/graph_split.h): the same CUDA graphs replayed by a lower
# process (priority 0, time:500, on a corun segment) launched whole (GPUYIELD_GRAPH_SPLIT=off) and
# in parts (auto), twice each (off, auto, off, auto); outputs compared bit for bit, replay times
# side by side, and the hook's VERBOSE line of each cut graph. Then the twins (hooks/graph_twin.h),
# twice: the same process on a guarded segment under its own MPS daemon, arm partition:16 pinned;
# it replays its graphs outside any job first (graph split times and cuts the long ones), then a
# priority-1 process holds a job open while it measures, so that every launch of a part goes to
# the 16-SM partition as that part's twin; outputs compared with off-1's, and the hook's lines (a
# graph with no twin says why).
#   bash bench/gpu/graph_split_check.sh BUILD OUTDIR
set -u
B=${1:?usage: graph_split_check.sh BUILD OUTDIR}
OUTDIR=${2:?usage: graph_split_check.sh BUILD OUTDIR}
PY=${PY:-python3}
mkdir -p "$OUTDIR"
TAG=gysplit$$
TWIN_TAG=gytwin$$
MPS_DIR=/tmp/gy-twin-mps-$$
HOLDER=
. "$(dirname "$0")/mps_daemon.sh"
"$B/bin/expcontroller" create --name "$TAG" --policy corun > "$OUTDIR/create.txt" 2>&1 || { cat "$OUTDIR/create.txt"; exit 1; }
cleanup() {
    [ -n "$HOLDER" ] && kill "$HOLDER" 2> /dev/null && wait "$HOLDER" 2> /dev/null
    "$B/bin/expcontroller" remove --name "$TAG" > /dev/null 2>&1
    "$B/bin/expcontroller" remove --name "$TWIN_TAG" > /dev/null 2>&1
    mps_quit "$MPS_DIR" graph-split "$OUTDIR/mps-log"
    rm -rf "$MPS_DIR"
}
trap cleanup EXIT
rc=0
probe() { # VARIANT RUN SEGMENT: one probe process, its files OUTDIR/VARIANT-RUN.{json,txt,err}; fails with it
    local split=$1 ok=0
    [ "$1" = twin ] && split=auto
    env LD_PRELOAD="$B/lib/libgpuyield.so" GPUYIELD_SHM="$3" GPUYIELD_PRIORITY=0 GPUYIELD_MODE=time:500 \
        GPUYIELD_VERBOSE=1 GPUYIELD_GRAPH_SPLIT=$split \
        "$PY" bench/gpu/graph_split_probe.py "$OUTDIR/$1-$2.json" 30 \
        > "$OUTDIR/$1-$2.txt" 2> "$OUTDIR/$1-$2.err" || { echo "probe $1 $2 failed"; tail -5 "$OUTDIR/$1-$2.err"; rc=1; ok=1; }
    echo "== $1 run $2"; cat "$OUTDIR/$1-$2.txt"; grep "^gpuyield" "$OUTDIR/$1-$2.err" | head -12
    return $ok
}
# A priority-1 job of arm partition:16 held open on the twin segment (guarded still gives stop to a
# share of the jobs with an arm pinned: begun again until it is). It ends by itself after HOLD_S
# (150): a graph with no twin waits for it, and would otherwise wait for ever; the report then
# names it ("no twin"). Its lines go to OUTDIR/holder-RUN.txt.
start_holder() {
    "$PY" -c 'import gpuyield, signal, sys, time
seg = gpuyield.connect(sys.argv[1]); seg.register(priority=1)
for _ in range(200):
    job = seg.begin(priority=1)
    if job.guarded_arm == "partition:16":
        break
    seg.end(1)
print("job open, arm", job.guarded_arm, flush=True)
signal.signal(signal.SIGTERM, lambda *a: (seg.end(1), print("job closed", flush=True), sys.exit(0)))
time.sleep(float(sys.argv[2])); seg.end(1); print("job ended", flush=True)' "$TWIN_TAG" "${HOLD_S:-150}" \
        > "$OUTDIR/holder-$1.txt" 2>&1 &
    HOLDER=$!
    for _ in $(seq 50); do grep -q "job open" "$OUTDIR/holder-$1.txt" 2> /dev/null && break; sleep 0.2; done
    grep -q "job open, arm partition:16" "$OUTDIR/holder-$1.txt" ||
        { echo "the job holder has no job of arm partition:16: $(cat "$OUTDIR/holder-$1.txt")"; rc=1; }
}
# One twin run: the probe warms its graphs up outside any job (graph split times and cuts the long
# ones), then the job opens and the measured replays run inside it, as twins of the parts.
twin_run() {
    local ready=$OUTDIR/twin-$1.ready go=$OUTDIR/twin-$1.go
    rm -f "$ready" "$go"
    GY_PROBE_READY=$ready GY_PROBE_GO=$go probe twin "$1" "$TWIN_TAG" &
    local prober=$!
    for _ in $(seq 600); do [ -e "$ready" ] && break; kill -0 "$prober" 2> /dev/null || break; sleep 0.2; done
    [ -e "$ready" ] || { echo "graph-split: twin run $1: the probe never said it was warm"; rc=1; }
    start_holder "$1"
    touch "$go"
    wait "$prober" || rc=1
    grep -q "job ended" "$OUTDIR/holder-$1.txt" && { echo "graph-split: the job ended (HOLD_S) before twin run $1 did"; rc=1; }
    kill "$HOLDER" 2> /dev/null && wait "$HOLDER" 2> /dev/null
    HOLDER=
}
for run in 1 2; do
    for split in off auto; do
        probe "$split" "$run" "$TAG"
    done
done
# The twins: a guarded segment under MPS, partition:16 pinned, a job of priority 1 open through each
# twin run's measured replays.
if mps_start "$MPS_DIR" graph-split &&
    "$B/bin/expcontroller" create --name "$TWIN_TAG" --policy guarded --mps-pipe "$MPS_DIR/pipe" >> "$OUTDIR/create.txt" 2>&1 &&
    "$B/bin/expcontroller" guard-force --name "$TWIN_TAG" --arm partition:16 >> "$OUTDIR/create.txt" 2>&1; then
    for run in 1 2; do twin_run "$run"; done
    "$B/bin/expcontroller" status --name "$TWIN_TAG" --json > "$OUTDIR/twin_status.json" 2>&1
else
    echo "graph-split: no guarded segment under MPS for the twins: $(tail -3 "$OUTDIR/create.txt")"; rc=1
fi
"$PY" - "$OUTDIR" <<'PYEOF' || rc=1
import json, os, sys
d = sys.argv[1]
names = ("off-1", "auto-1", "off-2", "auto-2", "twin-1", "twin-2")
runs = {k: json.load(open(f"{d}/{k}.json")) for k in names if os.path.exists(f"{d}/{k}.json")}
report = {}
for name in runs["off-1"]:
    ref = runs["off-1"][name]["sha256"]
    report[name] = {k: {"equal_to_off_1": r[name]["sha256"] == ref,
                        "replay_ms_p50": round(r[name]["replay_ms_p50"], 4),
                        "back_to_back_ms": round(r[name]["back_to_back_ms"], 4)} for k, r in runs.items()}
cuts = {k: [l.strip() for l in open(f"{d}/{k}.err") if "CUDA graph" in l] for k in runs}
twins = {k: {"made": sum("as a twin" in l for l in v), "none": [l for l in v if "no twin" in l]}
         for k, v in cuts.items() if k.startswith("twin")}
report = {"graphs": report, "hook_lines": cuts, "twins": twins}
json.dump(report, open(f"{d}/graph_split_check.json", "w"), indent=1)
print(json.dumps(report, indent=1))
bad = [n for n, v in report["graphs"].items() if not all(x["equal_to_off_1"] for x in v.values())]
print("outputs equal in every run" if not bad else f"OUTPUTS DIFFER: {bad}")
# Equal outputs prove something only where graphs were cut: under auto the 0.7 ms and 11 ms graphs
# must be (time:500), under off none.
cut = {k: sum(" runs in " in l for l in v) for k, v in cuts.items()}
print(f"graphs cut per run: {cut}")
uncut = cut["auto-1"] < 2 or cut["auto-2"] < 2 or cut["off-1"] or cut["off-2"]
if uncut:
    print("NOT PROVEN: under auto the two long graphs were not both cut, or off cut one")
# The twin runs warmed up outside the job: their long graphs were cut there, so the job's replays
# ran as twins of the parts (since 9312079; before, as twins of whole graphs)
if any(cut.get(k, 0) < 2 for k in ("twin-1", "twin-2")):
    uncut = True
    print("NOT PROVEN: a twin run did not cut both long graphs before its job (its twins were of whole graphs)")
# Equal twin outputs prove something only where twins ran: the line of the first one made, in each run
# (a graph with no twin waited for the job, never ended: its probe would not have finished).
untwinned = len(twins) < 2 or any(not v["made"] for v in twins.values())
print(f"twins: {twins}")
if untwinned:
    print("NOT PROVEN: a twin run made no twin (or did not run)")
sys.exit(1 if bad or uncut or untwinned else 0)
PYEOF
exit $rc
