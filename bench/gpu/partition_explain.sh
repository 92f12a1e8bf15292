#!/usr/bin/env bash
# Nsight evidence for the partition verdict's misses (issue 18): per pair, one short
# partition_verdict invocation (one round of hp_alone, lp_alone, corun, partition; no latency
# segments, no torch.profiler segment: it and nsys both use CUPTI, never tried together) under nsys, exported to
# SQLite and read by bench.gpu.partition_explain.
#   bash bench/gpu/partition_explain.sh BUILD RESULTS_DIR OUT_DIR [PAIRS] [CONTENDED_S]
# Writes OUT_DIR/explain_<pair>.json and RESULTS_DIR/<pair>/ (nsys and verdict logs, the verdict's
# own JSON of that invocation: its ratios are of one round, a cross-check, not the verdict).
# PE_VERDICT_ARGS: more partition_verdict flags (the tests' stand-in worker, --no-mps).
# PE_TAG: a suffix for this variant's files (explain_<pair>_<tag>.json, RESULTS_DIR/<pair>_<tag>/).
set -u
B=$1 R=$2 OUT=$3 PAIRS=${4:-reference resnet bert_train} SECONDS_EACH=${5:-4}
NSYS=${NSYS:?NSYS: where nsys is (bench/gpu/env.sh finds it)}
PY=${PY:-python3}
device=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)
status=0
for pair in $PAIRS; do
    name=$pair${PE_TAG:+_$PE_TAG}
    d=$R/$name
    mkdir -p "$d"
    echo "partition-explain: $name: nsys around one round ($(date -u +%H:%M:%S))"
    # -s none --cpuctxsw=none: no CPU sampling (a tiny PyTorch script made a 2 GB .qdstrm with it).
    "$NSYS" profile -t cuda,nvtx -s none --cpuctxsw=none -o "$d/rep" -f true \
        "$PY" -m bench.gpu.partition_verdict --build "$B" --out "$d/verdict" --pairs "$pair" --rounds 1 \
        --setups hp_alone,lp_alone,corun,partition --contended-s "$SECONDS_EACH" --hp-alone-s "$SECONDS_EACH" \
        --lp-alone-s 2 --latency-pairs= --no-kernel-profile --device "$device" ${PE_VERDICT_ARGS:-} > "$d/nsys_profile.log" 2>&1
    echo "partition-explain: $name: profile exit $?; $(grep -c . "$d/nsys_profile.log") log lines"
    if ! "$NSYS" export --type sqlite -o "$d/rep.sqlite" -f true "$d/rep.nsys-rep" > "$d/nsys_export.log" 2>&1; then
        echo "partition-explain: $name: nsys export failed: $(tail -n 3 "$d/nsys_export.log")"; status=1; continue
    fi
    if ! "$PY" -m bench.gpu.partition_explain "$d/rep.sqlite" --out "$OUT/explain_$name.json"; then status=1; fi
    rm -f "$d/rep.sqlite" "$d/rep.nsys-rep" # hundreds of MB; the figures are in explain_<pair>.json
done
exit $status
