#!/usr/bin/env bash
# Issue 8's proof, on the GPU machine, from the repository root after ./make.sh: the four reference
# experiments (exp_configs/input.json, input_control, input_controlsync, input_controlevent; exp_dur
# DUR, 30 by default) and each of their two models alone, in one batch; then per run the JCT plot
# and summary, and proof.md: the tables and whether the outcome matches the reference (without
# control the high-priority JCT is inflated; with control, sync and event groups it approaches its
# standalone JCT). About 6 minutes.
#   env: BUILD (build), OUT (/tmp/out: what comes back), RUN (scratch), DUR (30),
#        RUN_EXP_FLAGS (e.g. --simulate to try the script without a GPU: simulated figures)
# Record: copy $OUT to bench/results/<date>-run_exp/ (proof.md, *_summary.json, *.png, *.txt).
set -euo pipefail
. bench/gpu/env.sh
BUILD=${BUILD:-build}
OUT=${OUT:-/tmp/out}
RUN=${RUN:-/tmp/run_exp_proof}
DUR=${DUR:-30}
mkdir -p "$OUT"
rm -rf "$RUN"
mkdir -p "$RUN"
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
export GPUYIELD_PYTHON=${GPUYIELD_PYTHON:-$(command -v "$PY")}

# The experiment files at DUR seconds, and each model of input.json alone (no control).
"$PY" - "$RUN" "$DUR" <<'PY'
import json, sys
run, dur = sys.argv[1], float(sys.argv[2])
for exp in ("input", "input_control", "input_controlsync", "input_controlevent"):
    cfg = json.load(open(f"exp_configs/{exp}.json"))
    cfg["exp_dur"] = dur
    json.dump(cfg, open(f"{run}/{exp}.json", "w"), indent=2)
base = json.load(open("exp_configs/input.json"))
for i, name in enumerate(("alone_A", "alone_B")):
    json.dump(dict(base, models=[base["models"][i]], exp_dur=dur), open(f"{run}/{name}.json", "w"), indent=2)
PY

RUNS="alone_A alone_B input input_control input_controlsync input_controlevent"
for exp in $RUNS; do
    echo "== $exp"
    status=0
    "$BUILD/bin/run_exp" -f "$RUN/$exp.json" --out "$RUN/$exp" ${RUN_EXP_FLAGS:-} > "$OUT/$exp.txt" 2>&1 || status=$?
    tail -n 8 "$OUT/$exp.txt"
    [ "$status" -eq 0 ] || { echo "run_exp failed ($status) for $exp: see $OUT/$exp.txt"; tail -n 30 "$RUN/$exp"/*.log; exit 1; }
    cp "$RUN/$exp/summary.json" "$OUT/${exp}_summary.json"
    "$PY" -m gpuyield.plot jct "$RUN/$exp"/*.csv -o "$OUT/${exp}_jct.png" || echo "plot failed for $exp"
done
"$PY" -m gpuyield.plot cdf "$RUN"/{input,input_control,input_controlsync,input_controlevent}/model_B.csv \
    -o "$OUT/hp_cdf.png" || echo "cdf plot failed"

"$PY" - "$OUT" "$DUR" <<'PY' | tee "$OUT/proof.md"
import json, subprocess, sys
out, dur = sys.argv[1], sys.argv[2]
S = {e: json.load(open(f"{out}/{e}_summary.json")) for e in
     ("alone_A", "alone_B", "input", "input_control", "input_controlsync", "input_controlevent")}
def model(run, name):
    return next(m for m in S[run]["models"] if m["name"] == name)
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
except OSError:
    gpu = "no GPU"
if S["input"].get("simulated"):
    gpu += " (SIMULATED: fake driver and stand-in workers, not a GPU's figures)"
print(f"# run_exp proof: the four reference experiments on {gpu}, exp_dur {dur} s\n")
print("model_A: FasterRCNN 1440x2560, priority 0, back to back. model_B: FasterRCNN 720x1280, priority 1, "
      "one job a second. Random weights (same kernels and time as trained ones).\n")
print("| run | B jobs | B JCT p50 | B p90 | B p99 ms | B p50 / alone | A jobs/s | A jobs/s / alone | A preempted launches | B drain p50 / p99 ms |")
print("|---|---|---|---|---|---|---|---|---|---|")
a0 = model("alone_A", "model_A")["throughput_jobs_per_s"]
b0 = model("alone_B", "model_B")["jct_ms"]["p50"]
ratios = {}
def f(x, digits=1):
    return "-" if x is None else f"{x:.{digits}f}"
for run in S:
    names = [m["name"] for m in S[run]["models"]]
    b = model(run, "model_B") if "model_B" in names else None
    a = model(run, "model_A") if "model_A" in names else None
    ratios[run] = b["jct_ms"]["p50"] / b0 if b else None
    a_tput = a["throughput_jobs_per_s"] if a else None
    cells = [run, b["jobs"] if b else "-", f(b and b["jct_ms"]["p50"]), f(b and b["jct_ms"]["p90"]),
             f(b and b["jct_ms"]["p99"]), f(ratios[run], 2), f(a_tput, 2), f(a_tput and a_tput / a0, 2),
             a["preempted_launches"] if a else "-",
             f"{f(b and b['drain_wait_ms']['p50'])} / {f(b and b['drain_wait_ms']['p99'])}"]
    print("| " + " | ".join(str(c) for c in cells) + " |")
print()
inflated = ratios["input"] > 1.2
closer = all(ratios[r] < ratios["input"] for r in ("input_control", "input_controlsync", "input_controlevent"))
print(f"- without control the high-priority JCT is inflated (p50 x{ratios['input']:.2f} of alone): "
      f"{'yes' if inflated else 'NO'}")
print(f"- with control, sync and event groups it is closer to standalone "
      f"(x{ratios['input_control']:.2f}, x{ratios['input_controlsync']:.2f}, x{ratios['input_controlevent']:.2f}): "
      f"{'yes' if closer else 'NO'}")
print(f"- matches the reference: {'yes' if inflated and closer else 'NO'}")
PY
