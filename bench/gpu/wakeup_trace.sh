#!/usr/bin/env bash
# One matrix invocation (MX_ARGS, with --pin) under the kernel's ipi and sched_wakeup trace events,
# then per setup who is woken on the HP's CPUs and who sends them interrupts (wakeup_summary.py).
# Needs root and tracefs; changes no GPU setting, and turns the events off again on the way out.
#   bash bench/gpu/wakeup_trace.sh BUILD OUTDIR     (MX_ARGS, COMMIT from the environment)
set -u
B=$1; R=$2
. bench/gpu/env.sh
mkdir -p "$R"
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T 2> /dev/null
[ -d $T/events ] || T=/sys/kernel/debug/tracing
if [ ! -w $T/trace ] || [ ! -d $T/events/sched/sched_wakeup ]; then
    echo "wakeup-trace: no writable tracefs with sched_wakeup here ($T): nothing traced"
    exit 1
fi
FILTERS="sched/sched_wakeup ipi/ipi_send_cpu ipi/ipi_send_cpumask"
off() {
    echo 0 > $T/tracing_on; echo 0 > $T/events/ipi/enable 2> /dev/null; echo 0 > $T/events/sched/sched_wakeup/enable
    for e in $FILTERS; do echo 0 > $T/events/$e/filter 2> /dev/null; done
}
# the clock back only once the trace is read: setting trace_clock empties the buffer
trap 'off; echo local > $T/trace_clock' EXIT
uname -r > "$R/kernel.txt"
echo mono > $T/trace_clock
echo 32768 > $T/buffer_size_kb
echo > $T/trace
# Only what targets the HP's CPUs (the matrix's --pin plan) is kept: unfiltered, the busy LP CPUs'
# wake-ups fill the per-CPU buffers within a minute and the oldest windows are lost.
HP=$("$PY" -c 'import os; from bench.gpu.matrix import cpu_plan; k = ("x", "hp")
c = (cpu_plan([k], os.sched_getaffinity(0)) or {}).get(k); print(" ".join(map(str, c or [])))')
[ -n "$HP" ] || { echo "wakeup-trace: too few CPUs for the matrix's --pin plan"; exit 1; }
echo "$HP" > "$R/hp_cpus.txt"
filter() {  # EVENT FIELD: keep the events whose FIELD is one of the HP's CPUs; say so when the kernel will not
    local expr="" c
    for c in $HP; do expr="${expr:+$expr || }$2 == $c"; done
    [ "$2" = cpumask ] && expr="cpumask & CPUS{$(echo $HP | tr ' ' ,)}"
    echo "$expr" > $T/events/$1/filter 2> /dev/null || echo "wakeup-trace: $1 unfiltered (this kernel refused '$expr')"
}
filter sched/sched_wakeup target_cpu
filter ipi/ipi_send_cpu cpu
filter ipi/ipi_send_cpumask cpumask
echo 1 > $T/events/ipi/enable 2> /dev/null || echo "wakeup-trace: no ipi events in this kernel (wake-ups only)"
echo 1 > $T/events/sched/sched_wakeup/enable
echo 1 > $T/tracing_on
"$PY" -m bench.gpu.matrix --build "$B" --out "$R/matrix" --commit "${COMMIT:-unknown}" \
    --device "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)" ${MX_ARGS:-}
echo "matrix exit $?"
off
# events lost to a full buffer: the summary's rates are then too low for the earliest windows
LOST=$(cat $T/per_cpu/cpu*/stats 2> /dev/null | awk '/^overrun:/ {n += $2} END {print n + 0}')
echo "$LOST" > "$R/overrun.txt"
echo "trace: $LOST events overwritten (buffer full)"
OFFSET=$("$PY" -c 'import time; print(time.time() - time.monotonic())')
cat $T/trace > "$R/trace.txt"
echo "trace: $(wc -l < "$R/trace.txt") lines (clock offset $OFFSET s)"
"$PY" -m bench.gpu.wakeup_summary "$R/trace.txt" "$R/matrix" "$OFFSET" | tee "$R/wakeups.txt"
head -n 5000 "$R/trace.txt" > "$R/trace_head.txt"  # a sample: the whole trace is hundreds of MB
rm -f "$R/trace.txt"
