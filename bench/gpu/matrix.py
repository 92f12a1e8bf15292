"""The matrix benchmark (issue 25): every HP kind x LP kind x load under every setup, against the
HP and the LP each alone as plain processes, alternated with the setups in every round (ABAB).

  python3 -m bench.gpu.matrix --build BUILD --out DIR [--hp-kinds gemm,small] [--lp-kinds ...]
      [--setups ...] [--rounds 2] [--jobs 50] [--device "NVIDIA H100 ..."]
  python3 -m bench.gpu.matrix --merge DIR1 DIR2 ... --out DIR   (the verdict over invocations)

Processes: one bench.gpu.matrix_worker per role (hp, lp) and setup group, alive for the whole
invocation; a cell only loads its kinds into them. Groups: plain (no MPS, no hook, no
LD_PRELOAD: hp_alone, lp_alone, nocontrol), mps (MPS clients, no hook), one hooked group per
policy (corun, partition, guarded: the HP preloaded at priority 1 marking each job in its own
segment made with --mps-pipe, the LP preloaded at priority 0 with --lp-mode, both MPS clients, the
LP at MPS client priority 1), markonly (cost cell only: the HP marking its jobs with no hook),
corunauto and corunautoshort (as corun, each on a corun segment of its own, the HP marking nothing:
GPUYIELD_JOBS=auto, at the hook's default idle time and at --auto-idle-us), guardedauto (as
guarded, learning first, the HP marking nothing under GPUYIELD_JOBS=auto: guarded for an
unmodified server; its HP results have no per-job arms, the segment's status has them).

Load: Poisson arrivals at a share of the HP's alone capacity (poisson-25: 25 %, poisson-60), the
rate set once per HP kind from its alone service time (the mean of --calib-jobs jobs, plain
process, each job followed by 3x its time idle: a host-bound job is slower after idle time than back
to back; the mean, not the median, since 2026-12-07: an HP with a few long jobs is busy by its mean;
an HP of several kinds of job runs each its exact share of the calibration's jobs, raw.json
svc_alone_variant saying which ran);
latency counts from arrival, queueing included. A round whose plain HP alone was over
85 % busy (rate x its mean service time) queued, so its latency is mostly waiting: it is left
out of the cell for every setup and counted (alone_overloaded_rounds). Every setup of a round uses the same
arrival seed, and an HP of several kinds of job (mixed) draws each job's kind from that seed anew
(matrix_worker: the same kind at the same arrival in every setup; until 2026-12-07 each process
drew from one stream over its life, and the setups' kinds differed); a round whose setups' hp
replies say they ran different kinds anyway is left out too (unpaired_rounds). The LP starts --lp-lead-s
before the HP's first arrival (its queue is full when the HP starts) and its units are counted over
the HP's window only.

Setups: hp_alone, lp_alone, nocontrol, mps, corun, partition, guarded, guarded_depth (guarded
created with --guard-depth: it also learns the LP's queue depth; it learns before each cell's
rounds as guarded does; not by default), guarded@twin and guarded_depth@twin (the same under
--twin-build's rule, its library and extension, on segments of their own: two builds of the rule
side by side in the same rounds; not by default), hp_ctl_alone (the HP
controlled, marking its jobs on the corun segment, the LP idle), corun_auto and corun_auto_short
(issue 27: the HP unmarked under GPUYIELD_JOBS=auto, idle time the hook's default (300 us; 2000 until 2026-11-24) and --auto-idle-us, default
300; not by default), arm:ARM for each guarded arm (arm:partition:64, arm:disjoint:120, ...: a guarded
segment with that arm pinned by `expcontroller guard-force`, stop still interleaved at a quarter of
the HP's jobs; each cell starts with a guard-reset and the pin; not by default), arm:ARM@green:US
for ARM partition:64 or partition:120 and US 1000, 2000, 4000 (the same with the LP's partition
stream bounded at US apart from its time:US, GPUYIELD_PARTITION_US; not by default), corun_block (corun on a
segment of its own, the LP's queue-bound waits blocking at once: GPUYIELD_SPIN_US=0; not by default),
corun_whole (corun on a segment of its own, the LP's CUDA graphs launched whole:
GPUYIELD_GRAPH_SPLIT=off, where the default cuts a long one into parts; not by default), lp_whole_alone
(that LP alone, hooked, the HP idle: beside lp_ctl_alone, what launching graphs in parts costs the LP;
not by default),
lp_mps_alone, lp_ctl_alone and lp_block_alone (the LP's own cost of control, the HP idle: an MPS
client at client priority 1 without the hook; hooked on the corun segment under --lp-mode; the same
with blocking waits; LP ratio only; not by default), corun@MODE and lp_ctl@MODE for MODE in
none, time:250, time:500, time:1000, time:2000, time:4000 (corun with the LP under that queue bound instead
of --lp-mode, on a corun segment of its own; and that LP alone, hooked; not by default);
in the first cell of each HP kind
also the cost setups hp_mps_alone (an MPS client, no hook), hp_hook_alone (hooked, not marking),
hp_mark_alone (marking, no hook).

Per cell and setup (matrix.json): hp_p50_ratio and hp_p99_ratio (nearest-rank percentile of the
setup's latencies / the same of hp_alone's, pooled over rounds), lp_throughput_ratio (LP units/s
in the setup / in lp_alone: one denominator per cell), each with a 95 % two-stage bootstrap
interval (invocations, then rounds inside them; bench.gpu.stats); lp_share_of_left: the LP ratio
over the GPU time the HP leaves, 1 - rate x (GPU-busy ms of one HP job alone, from the profiler;
an HP of several kinds of job: each kind profiled over --busy-jobs jobs of its own and weighed by
its share, raw.json busy_variants, since 2026-12-07);
by_arm (guarded setups): the HP's jobs grouped by the arm each ran under ("partition:16", or
"stop@2000us" after a gap at a raised LP queue depth; jobs, service p50,
latency p50 and p99), so that a slow tail can be tied to its arm; meets_hp_target (p50 <= 1.03,
its interval <= 1.06, p99 <= 1.10); beside corun, lp_minus_corun and meets_lp_target (no more than
0.02 under corun's LP; over the rounds both ran, paired by round), lp_minus_corun_ci (its interval) and
lp_paired_rounds; hp_p50_minus_corun, hp_p99_minus_corun and their _ci (the HP p50 and p99 ratios'
differences to corun's, paired by round the same way; reported, no target); hp_p99_ratio's
resamples_over (the share of its resamples over 1.10, a lower bound on a rerun's chance of missing).
After the table, per setup: the cells that met each target.
Also GPU clocks (nvidia-smi every 500 ms, nothing set) and the CPU load average per segment.
With --pin the CPUs taking the GPU's interrupts are read again after the workers are up and before
each cell, and a new one is taken off the LP workers' CPUs (raw.json gpu_irq_moves; IrqWatch).
"""
import argparse
import datetime
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time

from . import host_counters, raw_record
from .stats import nearest_rank, percentile_of, rate_of, ratio_two_stage, two_stage_bootstrap

DEFAULT_HP_KINDS = ("gemm", "small", "frcnn720", "bert")
HP_KINDS = DEFAULT_HP_KINDS + ("mixed",)  # two kinds of request: only when named (matrix_kinds.py)
DEFAULT_LP_KINDS = ("gemm", "resnet50train", "graph", "frcnn1440", "graphr50")
LP_KINDS = DEFAULT_LP_KINDS + ("hostonly",)  # a host-only neighbour: only when named (matrix_kinds.py)
LOADS = {"poisson-25": 0.25, "poisson-60": 0.60}
# setup: (process group, roles that run, does the HP mark its jobs)
SETUP = {
    "hp_alone": ("plain", ("hp",), False),
    "lp_alone": ("plain", ("lp",), False),
    "nocontrol": ("plain", ("hp", "lp"), False),
    "mps": ("mps", ("hp", "lp"), False),
    "corun": ("corun", ("hp", "lp"), True),
    "partition": ("partition", ("hp", "lp"), True),
    "guarded": ("guarded", ("hp", "lp"), True),
    # guarded that also learns the LP's queue depth between HP jobs (--guard-depth), side by side
    "guarded_depth": ("guardeddepth", ("hp", "lp"), True),
    # the same two under a second build's rule (--twin-build: its library and Python extension), on
    # segments of their own, in the same rounds: an A/B of two builds of the rule side by side
    "guarded@twin": ("guardedtwin", ("hp", "lp"), True),
    "guarded_depth@twin": ("guardeddepthtwin", ("hp", "lp"), True),
    "hp_ctl_alone": ("corun", ("hp",), True),
    "hp_mps_alone": ("mps", ("hp",), False),
    "hp_hook_alone": ("corun", ("hp",), False),
    "hp_mark_alone": ("markonly", ("hp",), True),
    # issue 27: the HP unmodified (no marking), high-priority by its environment alone
    # (GPUYIELD_JOBS=auto): its hook opens a job at its first launch after idle
    "corun_auto": ("corunauto", ("hp", "lp"), False),
    # the same with GPUYIELD_IDLE_US=--auto-idle-us (corun_auto keeps the hook's default: 2000 until 2026-11-24 20:00 UTC, 300 since): two
    # idle times side by side in the same rounds, each on a corun segment of its own
    "corun_auto_short": ("corunautoshort", ("hp", "lp"), False),
    # guarded for an unmodified server: the HP under GPUYIELD_JOBS=auto on a guarded segment of its
    # own, learning before the rounds as guarded does (the auto jobs' durations are what it measures)
    "guarded_auto": ("guardedauto", ("hp", "lp"), False),
    # issue 26's blocking LP waits: corun on a segment of its own, the LP's queue-bound waits
    # blocking at once (GPUYIELD_SPIN_US=0) instead of polling up to 1 ms first
    "corun_block": ("corunblock", ("hp", "lp"), True),
    # corun with the LP's CUDA graphs launched whole (GPUYIELD_GRAPH_SPLIT=off), on a segment of its
    # own: what cutting a graph into parts (the default) changes, side by side
    "corun_whole": ("corunwhole", ("hp", "lp"), True),
    # ... and that LP alone, hooked, the HP idle (lp_ctl_alone is the same with its graphs in parts)
    "lp_whole_alone": ("corunwhole", ("lp",), False),
    # The LP's own cost of being controlled, the HP idle (issue 26: corun's LP lost 0.06-0.16 more
    # than stopping during the HP's jobs explains): as an MPS client at client priority 1, no hook;
    # hooked on a corun segment (its queue bound, --lp-mode); the same with blocking waits.
    "lp_mps_alone": ("mps", ("lp",), False),
    "lp_ctl_alone": ("corun", ("lp",), False),
    "lp_block_alone": ("corunblock", ("lp",), False),
}
# Guarded with one arm pinned (expcontroller guard-force): each arm measured on its own beside the
# pair, stop still interleaved at a quarter of the HP's jobs as in the product (issue 26: every arm
# measured alone first). Setup "arm:disjoint:120", process group "arm-disjoint120".
# "arm:stop" pins stop itself: guarded's machinery with no trial, beside corun (2026-12-07 sweep: beside
# a BERT HP guarded with stop in force cost the LP 0.03-0.04 of corun's and the HP's launches more CPU).
GUARD_ARMS = ("stop", "partition:16", "partition:32", "partition:64", "disjoint:64", "partition:96",
              "partition:120", "disjoint:120")
ARM_GROUPS = {f"arm-{a.replace(':', '')}": a for a in GUARD_ARMS}  # group -> the arm it pins
for _group, _arm in ARM_GROUPS.items():
    SETUP[f"arm:{_arm}"] = (_group, ("hp", "lp"), True)
# The same partition arms with the green stream's queue bound apart from the LP's own (issue 26: LP
# units per second during the launch-bound HP's jobs on the H200 were the same on 64, 96 and 120
# SMs at time:500, about half of the gaps' rate): "arm:partition:64@green:2000" pins 64 SMs with the
# LP under GPUYIELD_PARTITION_US=2000 (group "arm-partition64-green2000").
GREEN_DEPTHS = ("1000", "2000", "4000")
GREEN_GROUPS, GREEN_SETUPS = {}, ()  # group -> the LP's GPUYIELD_PARTITION_US; the setups' names
for _arm in ("partition:64", "partition:120"):
    for _us in GREEN_DEPTHS:
        _group = f"arm-{_arm.replace(':', '')}-green{_us}"
        ARM_GROUPS[_group], GREEN_GROUPS[_group] = _arm, _us
        GREEN_SETUPS += (f"arm:{_arm}@green:{_us}",)
        SETUP[GREEN_SETUPS[-1]] = (_group, ("hp", "lp"), True)
# Corun with the LP under another queue bound than --lp-mode, each on a corun segment of its own:
# "corun@time:2000" (the pair) and "lp_ctl@time:2000" (the LP alone, hooked): how much the bound
# costs the LP and how much a deeper one costs the HP, side by side in the same rounds.
LP_MODE_VARIANTS = ("none", "time:250", "time:500", "time:1000", "time:2000", "time:4000")
MODE_GROUPS = {f"corun-{m.replace(':', '')}": m for m in LP_MODE_VARIANTS}  # group -> the LP's mode
for _group, _mode in MODE_GROUPS.items():
    SETUP[f"corun@{_mode}"] = (_group, ("hp", "lp"), True)
    SETUP[f"lp_ctl@{_mode}"] = (_group, ("lp",), False)
DEFAULT_SETUPS = ("hp_alone", "lp_alone", "nocontrol", "mps", "corun", "partition", "hp_ctl_alone")
COST_SETUPS = ("hp_mps_alone", "hp_hook_alone", "hp_mark_alone")
AUTO_GROUPS = ("corunauto", "corunautoshort", "guardedauto")  # the HP under GPUYIELD_JOBS=auto (corun segments, but guardedauto)
TWIN_GROUPS = ("guardedtwin", "guardeddepthtwin")  # workers on --twin-build's library and extension
DEPTH_GROUPS = ("guardeddepth", "guardeddepthtwin")  # segments created with --guard-depth
POLICY_GROUPS = (("corun", "partition", "guarded", "guardeddepth", "corunblock", "corunwhole") + AUTO_GROUPS + TWIN_GROUPS
                 + tuple(ARM_GROUPS) + tuple(MODE_GROUPS))
MPS_GROUPS = ("mps", "markonly") + POLICY_GROUPS
LEARNING_GROUPS = {"guarded": "guarded", "guardeddepth": "guarded_depth", "guardedauto": "guarded_auto",
                   "guardedtwin": "guarded@twin", "guardeddepthtwin": "guarded_depth@twin"}  # group -> its setup; they learn first
GUARDED_GROUPS = tuple(LEARNING_GROUPS) + tuple(ARM_GROUPS)  # segments of policy guarded (their status has arms)
PARTITIONING_GROUPS = ("partition",) + GUARDED_GROUPS
AUTO_IDLE_US_DEFAULT = 300  # corun_auto_short's GPUYIELD_IDLE_US unless --auto-idle-us says
# The targets of issues 25 and 26, for the summary's "meets" column.
TARGET_P50, TARGET_P50_CI, TARGET_P99 = 1.03, 1.06, 1.10
TARGET_LP_BELOW_CORUN = 0.02  # a harvesting setup's LP may fall this far under corun's in the cell (issue 26)
# the fewest paired rounds on which the LP difference's interval judges a cell: with one or two the
# round bootstrap draws one or two values, and "beyond the interval" says nothing
LP_PAIRED_ROUNDS_MIN = 3
# Calibration idles 3x each job's service time after it (the pace of a 25 % load).
CALIB_GAP = 3
# A round whose plain HP alone was busier than this (rate x its mean service time) queued: its
# latency is mostly waiting, a denominator that makes every setup look faster than alone. Such a
# round is left out of the cell for every setup (matrix.json counts them: alone_overloaded_rounds).
ALONE_BUSY_MAX = 0.85
# Calibration jobs by default: enough that an HP of two kinds of job shows its mix (the mixed HP's
# seeded draws held no long job in their first 30 and 16 in their first 200; since 2026-12-07 the
# worker runs each kind of such an HP its exact share of the jobs: 20 long ones in 200). On
# 2026-12-07 a rate from the median of 30 ran every mixed cell at 1.0-1.6 of its plain alone's time
# busy (bench/results/2026-12-07-h100-matrix).
CALIB_JOBS = 200


def load_rate(kind, share):
    """HP arrivals per second that keep its plain process alone busy `share` of the time: the
    share over its mean calibrated service time (raw records before 2026-12-07 hold the median only)."""
    return share / (kind.get("svc_mean_ms", kind["svc_p50_ms"]) / 1000.0)


def fail(msg, code=1):
    print(f"matrix: {msg}", file=sys.stderr, flush=True)
    raise SystemExit(code)


# ---- the plan ----------------------------------------------------------------------------------

def cells(hp_kinds, lp_kinds, loads, high_load_lp):
    """[(hp, lp, load)]: every pair at the first load; the other loads beside high_load_lp only."""
    out = []
    for hp in hp_kinds:
        for lp in lp_kinds:
            for i, load in enumerate(loads):
                if i == 0 or lp == high_load_lp:
                    out.append((hp, lp, load))
    return out


def cell_setups(setups, first_of_hp, cost):
    return list(setups) + ([s for s in COST_SETUPS if s not in setups] if first_of_hp and cost else [])


def schedule(setups, rounds, seed):
    """[(round, setup)]: every setup once per round, in an order shuffled with seed and round."""
    plan = []
    for r in range(rounds):
        order = list(setups)
        random.Random(seed * 1000 + r).shuffle(order)
        plan += [(r, s) for s in order]
    return plan


def window_s(args, rate):
    return min(max(args.jobs / rate, args.min_seconds), args.max_seconds)


# ---- the processes ------------------------------------------------------------------------------

def cpu_plan(keys, cpus, irq_cpus=()):
    """--pin: {(group, role): CPUs}, plus TOOLS_KEY: the first two CPUs, and IDLE_HP_KEY. Every HP
    worker on the same two CPUs (the third and fourth) while it runs, the LP workers on the rest,
    and the harness with what it starts (the MPS daemon and its server, expcontroller, nvidia-smi)
    on the first two, unless --pin-workers-only leaves those unpinned (every record before
    2026-11-25 08:45 UTC: then the MPS server could run on the HP's CPUs). An HP worker waiting for
    its turn is parked on the LP's CPUs (IDLE_HP_KEY; since 2026-11-25 09:45 UTC, not with
    --pin-workers-only): on the H100 the threads of every group's HP worker, idle ones included,
    were woken on the two HP CPUs a few thousand times a second while an LP ran
    (bench/results/2026-11-25-host-side-cost/, call 7). One setup runs at a time, so the HP of each
    setup, the plain one included, runs on the same cores and never beside another busy thread: a
    host-bound HP's speed is then the same for every setup it is compared across (on the H100
    machine, with each HP worker on CPUs of its own, the launch-bound HP's service time differed by
    up to 40 % between setups of one round; hypothesis: the cores, not the setups). `irq_cpus`,
    the CPUs the GPU's interrupts land on, go to the harness too when 5 others are left: on the
    H200 (2026-11-29, call 1) one group's LP worker ran a thread on the CPU taking ~3 000 nvidia
    interrupts a second in every round, its units 7-18 % slower than the other group's even with
    the GPU to itself, which made that setup look worse than it was. None when there are too few
    CPUs."""
    irq = sorted(set(irq_cpus) & set(cpus))
    others = sorted(set(cpus) - set(irq))
    if len(others) < 5:
        others, irq = sorted(cpus), []
        if len(others) < 5:
            return None
    plan = {k: (others[2:4] if k[1] == "hp" else others[4:]) for k in keys}
    plan[TOOLS_KEY] = sorted(others[:2] + irq)
    plan[IDLE_HP_KEY] = others[4:]
    return plan


TOOLS_KEY = ("tools", "harness")  # cpu_plan's entry for the harness and the processes it starts
IDLE_HP_KEY = ("idle", "hp")  # ... and for an HP worker waiting for its turn
HP_MEASURED = ("hp", "calib", "busy")  # the HP commands whose times are measured


def harness_placement(args, tool_cpus, park):
    """(the HpPlacement or None, raw.json's cpus so far) for the flags: the harness on `tool_cpus`
    unless --pin-workers-only (or no --pin), the waiting HP workers parked unless --no-park, the
    measured HP's event-handler thread on the LP's or the harness's CPUs with --hp-evt-cpus, its main
    thread on the first HP CPU with --hp-main-cpu."""
    if not tool_cpus or args.pin_workers_only:
        return None, {}
    if args.no_park:
        return None, {"harness": list(tool_cpus)}
    evt = {"lp": park, "tools": tool_cpus}.get(getattr(args, "hp_evt_cpus", "hp"))
    cpus = {"harness": list(tool_cpus), "hp_idle": list(park)}
    if evt:
        cpus["hp_evt"] = list(evt)  # not an *_hp key: wakeup_summary's HP CPUs stay the HP's own
    if getattr(args, "hp_main_cpu", False):
        cpus["hp_main"] = "first"  # each measured HP's main thread on the first of its CPUs
    return HpPlacement(park, evt, getattr(args, "hp_main_cpu", False)), cpus


EVT_THREAD = "cuda-EvtHandlr"  # the CUDA driver's event-handler thread (its name in /proc, 15 chars)


class HpPlacement:
    """--pin: the HP worker about to be measured on its CPUs, every other HP worker parked. Moves a
    process's threads only when the measured worker changes (a thread started later inherits its
    creator's CPUs). With `evt_cpus` the measured worker's CUDA event-handler thread goes there
    instead: on the H100 under MPS that thread of the HP was woken 3 500-4 100 times a second on the
    HP's CPUs while an LP ran, 10 with the LP idle (2026-11-25-idle-hp-parking, call 2). With
    `main_on_first` its main thread (the one that launches the jobs) runs on the first of its CPUs
    alone: on the H100 a host-bound HP's jobs that ended on one of its two CPUs took up to 40 % longer
    than those on the other within one setup (2026-12-07-h100-sweep-3, arm_split's "svc by CPU":
    19.8 against 16.1 ms), and the mix each setup's HP got made setups of one mechanism differ."""

    def __init__(self, park, evt_cpus=None, main_on_first=False):
        self.park, self.evt_cpus, self.main_on_first, self.workers, self.active = park, evt_cpus, main_on_first, [], None

    def activate(self, proc):
        if proc is self.active:
            return
        for p in self.workers:
            if p is proc:
                p.place(p.cpus, {EVT_THREAD: self.evt_cpus} if self.evt_cpus else None,
                        main=sorted(p.cpus)[:1] if self.main_on_first and p.cpus else None)
            else:
                p.place(self.park)
        self.active = proc


class IrqWatch:
    """--pin: the CPUs taking the GPU's interrupts, read again after the workers are up and before
    each cell, kept off the LP workers' CPUs and the parked HP workers' (they go to the harness).
    On the H200 the reading at a fresh machine's start gave CPU 0 while the segments' interrupts
    were served on CPU 14, an LP CPU (2026-12-01-h200-trial-ends,
    calls A, C, D): the plan made from the first reading left it to the LP, whose worker thread
    shared it with ~3 000-4 000 interrupts a second in some setups and not others. A move onto the
    HP's CPUs is only said (moving the HP would change its cores between setups)."""

    def __init__(self, procs, placement, tool_cpus, irq_cpus, raw, read=None):
        self.procs, self.placement, self.tool_cpus = procs, placement, sorted(tool_cpus or ())
        self.known, self.raw, self.read = set(irq_cpus), raw, read or host_counters.gpu_irq_cpus

    def check(self, where):
        now = set(self.read())
        moved = now - self.known
        if not moved:
            return
        self.known |= now
        lp_side = [p for (g, role), p in sorted(self.procs.items()) if role == "lp" and p.cpus]
        for p in lp_side:
            left = sorted(set(p.cpus) - moved)
            if left and left != sorted(p.cpus):
                p.cpus = left
                p.place(left)
        if self.placement:
            park = sorted(set(self.placement.park) - moved)
            if park:
                self.placement.park = park
                for p in self.placement.workers:
                    if p is not self.placement.active:
                        p.place(park)
        hp_hit = sorted({c for (g, role), p in self.procs.items() if role == "hp" and p.cpus for c in p.cpus} & moved)
        if self.tool_cpus and moved - set(hp_hit):  # never the HP's CPUs: the harness stays off them
            self.tool_cpus = sorted(set(self.tool_cpus) | (moved - set(hp_hit)))
            os.sched_setaffinity(0, self.tool_cpus)
        self.raw.setdefault("gpu_irq_moves", []).append({
            "at": where, "cpus": sorted(now), "hp_cpus_hit": hp_hit,
            "lp_cpus": {f"{g}_{role}": list(p.cpus) for (g, role), p in sorted(self.procs.items()) if role == "lp" and p.cpus}})
        print(f"matrix: the GPU's interrupts now land on CPU {', '.join(map(str, sorted(now)))} ({where}): "
              f"{', '.join(map(str, sorted(moved)))} taken off the LP workers' CPUs"
              + (f"; {', '.join(map(str, hp_hit))} is one of the HP's CPUs: its times may be disturbed" if hp_hit else ""),
              flush=True)


class Proc:
    """One matrix_worker, spoken to in JSON lines (on `cpus` only, when given)."""

    def __init__(self, name, argv, env, log_path, cpus=None, placement=None):
        self.name, self.cpus, self.placement = name, cpus, placement
        self.log_path, self.read_at = log_path, 0
        self.log = open(log_path, "w")
        pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
        self.proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, start_new_session=True, text=True, bufsize=1,
                                     preexec_fn=pin)
        self.buf = ""
        if placement:
            placement.workers.append(self)

    def new_lines(self):
        """What the worker wrote on stderr since the last call (its log, which the harness never
        writes to), as lines."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self.read_at)
                data = f.read()
        except OSError:
            return []
        data = data[:data.rfind(b"\n") + 1]  # a line being written stays for the next call
        self.read_at += len(data)
        return data.decode(errors="replace").splitlines()

    def place(self, cpus, by_name=None, main=None):
        """Every thread of the worker on `cpus`, but a thread named in `by_name` ({comm: CPUs}) on its
        own, and with `main` the main thread (the worker's own pid) on those CPUs."""
        task = f"/proc/{self.proc.pid}/task"
        try:
            tids = os.listdir(task)
        except OSError:
            return  # gone: its reply says so
        for tid in tids:
            try:
                where = main if main and int(tid) == self.proc.pid else cpus
                if by_name and where is cpus:
                    with open(f"{task}/{tid}/comm") as f:
                        where = by_name.get(f.read().strip(), cpus)
                os.sched_setaffinity(int(tid), where)
            except OSError:
                pass  # a thread that ended meanwhile

    def send(self, cmd):
        if self.placement and cmd.get("cmd") in HP_MEASURED:
            self.placement.activate(self)
        try:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass

    def reply(self, timeout_s, what):
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while "\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                fail(f"{what}: no reply from {self.name} within {timeout_s:.0f} s; see {self.log.name}")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                data = os.read(fd, 1 << 20).decode(errors="replace")
                if not data:  # end of file: the worker is gone
                    self.proc.wait()
                    fail(f"{what}: no reply from {self.name} (exited {self.proc.returncode}); see {self.log.name}")
                self.buf += data
        line, self.buf = self.buf.split("\n", 1)
        out = json.loads(line)
        if not out.get("ok"):
            fail(f"{what}: {self.name} failed: {out.get('error')}; see {self.log.name}")
        return out

    def request(self, cmd, timeout_s, what):
        self.send(cmd)
        return self.reply(timeout_s, what)

    def stop(self):
        self.send({"cmd": "quit"})
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        self.log.close()


def base_env(args):
    """The harness's environment without anything that would make a plain process less plain."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CUDA_MPS_", "GPUYIELD_")) and k != "LD_PRELOAD"}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [os.path.join(args.build, "python"), root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def group_env(args, group, role, segments, mps_dirs):
    env = base_env(args)
    if group in MPS_GROUPS and mps_dirs:
        env["CUDA_MPS_PIPE_DIRECTORY"], env["CUDA_MPS_LOG_DIRECTORY"] = mps_dirs
        if role == "lp":
            env["CUDA_MPS_CLIENT_PRIORITY"] = "1"  # below normal, as run_exp gives lower work
    if group in TWIN_GROUPS:  # the second build's rule: its hook and its extension (the HP's job ends run it)
        env["PYTHONPATH"] = os.pathsep.join([os.path.join(args.twin_build, "python"), env["PYTHONPATH"]])
    if group in POLICY_GROUPS:
        env["LD_PRELOAD"] = os.path.join(args.twin_build if group in TWIN_GROUPS else args.build, "lib", "libgpuyield.so")
        env["GPUYIELD_SHM"] = segments[group]
        env["GPUYIELD_PRIORITY"] = "1" if role == "hp" else "0"
        env["GPUYIELD_MODE"] = MODE_GROUPS.get(group, args.lp_mode) if role == "lp" else "none"
        if group in PARTITIONING_GROUPS:
            env["GPUYIELD_PARTITION_SMS"] = str(args.partition_sms)
        if group in AUTO_GROUPS and role == "hp":
            env["GPUYIELD_JOBS"] = "auto"
        if group == "corunautoshort" and role == "hp":
            env["GPUYIELD_IDLE_US"] = str(args.auto_idle_us)
        if group == "corunblock" and role == "lp":
            env["GPUYIELD_SPIN_US"] = "0"
        if group == "corunwhole" and role == "lp":
            env["GPUYIELD_GRAPH_SPLIT"] = "off"
        if group in GREEN_GROUPS and role == "lp":
            env["GPUYIELD_PARTITION_US"] = GREEN_GROUPS[group]
        if role == "lp":
            env["GPUYIELD_VERBOSE"] = "1"  # its log says which CUDA graphs it cut into parts
        elif group in LEARNING_GROUPS:
            # one line a change of arm or depth, from the HP whose job's end made it: what guarded
            # learned, in order (a print at a change, none per job)
            env["GPUYIELD_VERBOSE"] = "1"
    if group == "markonly":
        env["GPUYIELD_SHM"] = segments["corun"]
        env["GPUYIELD_PRIORITY"] = "1"
    return env


class Tools:
    """The MPS daemon, the segments and the clock log of one invocation, and their removal."""

    def __init__(self, args):
        self.args, self.segments, self.mps_dirs, self.clocks = args, {}, None, None
        self.tag = f"matrix{os.getpid()}"

    def expcontroller(self, *words):
        return subprocess.run([os.path.join(self.args.build, "bin", "expcontroller"), *words],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def start_mps(self):
        root = f"/tmp/gy-matrix-mps-{os.getpid()}"
        self.mps_dirs = (os.path.join(root, "pipe"), os.path.join(root, "log"))
        for d in self.mps_dirs:
            os.makedirs(d, exist_ok=True)
        env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=self.mps_dirs[0], CUDA_MPS_LOG_DIRECTORY=self.mps_dirs[1])
        r = subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0:
            shutil.rmtree(root, ignore_errors=True)
            self.mps_dirs = None
            fail(f"the MPS daemon did not start: {r.stdout.strip()} (leave MPS setups out with --setups, or --no-mps)")

    def create_segment(self, group):
        """The segment of a hooked group (its own: setups never share one), under the group's policy."""
        policy = ("guarded" if group in GUARDED_GROUPS
                  else "corun" if group in AUTO_GROUPS + ("corunblock", "corunwhole") + tuple(MODE_GROUPS) else group)
        name = f"{self.tag}-{group}"
        words = ["create", "--name", name, "--policy", policy] + (["--guard-depth"] if group in DEPTH_GROUPS else [])
        if self.mps_dirs:
            words += ["--mps-pipe", self.mps_dirs[0]]
        r = self.expcontroller(*words)
        if r.returncode != 0:
            fail(f"cannot create a '{policy}' segment: {r.stdout.strip()} (leave the setup out with --setups)")
        self.segments[group] = name

    def pin_arm(self, group):
        """An arm group's segment: forget the last pair (guard-reset), then pin its arm."""
        for words in (["guard-reset"], ["guard-force", "--arm", ARM_GROUPS[group]]):
            r = self.expcontroller(*words, "--name", self.segments[group])
            if r.returncode != 0:
                fail(f"cannot pin arm {ARM_GROUPS[group]} on {self.segments[group]}: {r.stdout.strip()}")

    def lp_state(self, group):
        """The LP's partition state and launches so far, and the segment's own fields (a guarded
        segment's arms among them), from `expcontroller status --json`."""
        r = self.expcontroller("status", "--name", self.segments[group], "--json")
        try:
            status = json.loads(r.stdout)
        except ValueError:
            return {"state": f"status failed: {r.stdout.strip()[:200]}", "partition_launches": 0, "segment": {}}
        lp = [p for p in status.get("processes", []) if p.get("priority") == 0]
        seg = {k: v for k, v in status.items() if k != "processes"}
        if not lp:
            return {"state": "the LP is not registered", "partition_launches": 0, "segment": seg}
        hook = max(lp, key=lambda p: p.get("partition_launches", 0))
        return {"state": hook.get("partition"), "partition_launches": hook.get("partition_launches", 0), "segment": seg}

    def hp_auto_jobs(self, group):
        """The HP's auto_jobs counter so far (GPUYIELD_JOBS=auto), from `expcontroller status --json`."""
        r = self.expcontroller("status", "--name", self.segments[group], "--json")
        try:
            return max((p.get("auto_jobs", 0) for p in json.loads(r.stdout).get("processes", [])
                        if p.get("priority", 0) > 0), default=0)
        except ValueError:
            return None

    def start_clocks(self, path):
        if not shutil.which("nvidia-smi"):
            return
        self.clock_file = open(path, "w")
        self.clocks = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu",
             "--format=csv,noheader,nounits", "-lms", "500"], stdout=self.clock_file, stderr=subprocess.DEVNULL)

    def close(self):
        if self.clocks:
            self.clocks.terminate()
            self.clocks.wait()
            self.clock_file.close()
        for name in self.segments.values():
            self.expcontroller("remove", "--name", name)
        if self.mps_dirs:
            env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=self.mps_dirs[0], CUDA_MPS_LOG_DIRECTORY=self.mps_dirs[1])
            subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", env=env, text=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(os.path.dirname(self.mps_dirs[0]), ignore_errors=True)


# ---- one invocation -----------------------------------------------------------------------------

def commit_of(root):
    try:
        return subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def run(args):
    plan = cells(args.hp_kinds, args.lp_kinds, args.loads, args.high_load_lp)
    all_setups = set(args.setups) | (set(COST_SETUPS) if args.cost else set())
    groups = sorted({SETUP[s][0] for s in all_setups})
    os.makedirs(args.out, exist_ok=True)
    raw = {"device": args.device, "commit": args.commit or commit_of(os.path.dirname(os.path.abspath(args.build))),
           "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "args": {k: v for k, v in vars(args).items() if k != "merge"}, "hp_kinds": {}, "segments": []}
    # a worker for each group and role some setup runs (an LP-only setup's group has no HP worker)
    keys = sorted({(SETUP[s][0], role) for s in all_setups for role in SETUP[s][1]})
    irq_cpus = host_counters.gpu_irq_cpus() if args.pin else []
    pins = cpu_plan(keys, os.sched_getaffinity(0), irq_cpus) if args.pin else {}
    if pins is None:
        fail(f"--pin: {len(os.sched_getaffinity(0))} CPUs are too few (5 needed: two for the harness, two for the "
             f"HP workers, the rest for the LP workers); run without --pin")
    tool_cpus, park = pins.pop(TOOLS_KEY, None), pins.pop(IDLE_HP_KEY, None)
    placement, raw["cpus"] = harness_placement(args, tool_cpus, park)
    if raw["cpus"]:
        os.sched_setaffinity(0, tool_cpus)  # before anything is started: the MPS daemon and server inherit it
    raw.setdefault("cpus", {}).update({f"{g}_{role}": list(c) for (g, role), c in pins.items()})
    if pins:
        raw["gpu_irq_cpus"] = irq_cpus
    raw["cpu_siblings"] = {str(c): sib for c, sib in host_counters.cpu_siblings().items()}  # the HP's speed by CPU: arm_split
    tools, procs = Tools(args), {}
    started = time.monotonic()
    try:
        if not args.no_mps and any(g in MPS_GROUPS for g in groups):
            tools.start_mps()
        for g in groups:
            if g in POLICY_GROUPS or (g == "markonly" and "corun" not in tools.segments):
                tools.create_segment("corun" if g == "markonly" else g)
        tools.start_clocks(os.path.join(args.out, "clocks.csv"))
        for g, role in keys:
            argv = [args.python, "-m", args.worker_module, "--role", role] + (
                ["--backend", args.backend] if args.backend else [])
            procs[(g, role)] = Proc(f"{g}_{role}", argv, group_env(args, g, role, tools.segments, tools.mps_dirs),
                                    os.path.join(args.out, f"{g}_{role}.log"), pins.get((g, role)),
                                    placement if role == "hp" else None)
        for p in procs.values():
            p.reply(args.ready_timeout, "start-up")
        print(f"matrix: {len(procs)} workers up in {time.monotonic() - started:.1f} s; {len(plan)} cells, "
              f"estimated {estimate_s(args, plan):.0f} s more", flush=True)
        harness_pinned = "harness" in raw["cpus"]
        irq = IrqWatch(procs, placement, tool_cpus if harness_pinned else None, irq_cpus, raw) if pins else None
        if irq:
            irq.check("the workers up")
        run_cells(args, plan, procs, tools, raw, started, irq)
    finally:
        for p in procs.values():
            p.stop()
        tools.close()
        raw["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with open(os.path.join(args.out, "raw.json"), "w") as f:
            json.dump(raw, f)
    problems = policy_problems(raw)
    if problems:
        fail("the partition setup did not run the partition policy, no verdict:\n  " + "\n  ".join(problems))
    write_outputs([raw], args.out)
    return 0


WORKER_START_S = 30  # the workers' start-up before the first cell (19-30 s on the H100, 2026-11-25)


def estimate_s(args, plan):
    """Planned seconds: per segment its window plus the lead, tail and round trips."""
    total = 0.0
    for i, (hp, lp, load) in enumerate(plan):
        first = i == 0 or plan[i - 1][0] != hp
        # H100 service medians under corun (the 2026-11-25 records' segments: 3.76, 3.98, 18.6, 4.61 ms)
        # (mixed: its mean, 9 small jobs of 2.2 ms to 1 of 200 GEMMs of 70 ms on 2026-12-07)
        svc = {"gemm": 0.0038, "small": 0.004, "frcnn720": 0.0186, "bert": 0.0046, "mixed": 0.009}.get(hp, 0.01)
        w = window_s(args, LOADS[load] / svc)
        n = len(cell_setups(args.setups, first, args.cost)) * args.rounds
        calib = args.calib_jobs * svc * (1 + CALIB_GAP) if first else 0.0
        total += n * (w + args.lp_lead_s + 0.6) + calib + (15 if first else 5)
        if args.learn_jobs:
            total += len(learning_groups(args)) * (args.learn_jobs * svc / learn_load(args, load) + args.lp_lead_s + 1)
    return total


def eta_s(seg_s, done, total, cell_s, cells_done, cells_left):
    """Seconds left: the segments left at the mean of those done, and the cells left their loading,
    calibration and learning at the mean of the cells begun (a learning of thousands of jobs is
    no segment: the first segment's time with it in counted every later one as that long)."""
    per_seg = seg_s / done if done else 0.0
    per_cell = cell_s / cells_done if cells_done else 0.0
    return per_seg * (total - done) + per_cell * cells_left


def run_cells(args, plan, procs, tools, raw, started, irq=None):
    hp_procs = [p for (g, r), p in procs.items() if r == "hp"]
    lp_procs = [p for (g, r), p in procs.items() if r == "lp"]
    total = sum(len(cell_setups(args.setups, i == 0 or plan[i - 1][0] != c[0], args.cost)) * args.rounds
                for i, c in enumerate(plan))
    done, loaded_hp, loaded_lp = 0, None, None
    seg_s = cell_s = 0.0  # time in segments, and in each cell's loading, calibration and learning
    partition_before = {}
    for ci, (hp, lp, load) in enumerate(plan):
        first = ci == 0 or plan[ci - 1][0] != hp
        cell_began = time.monotonic()
        if irq:
            irq.check(f"before cell {hp}+{lp} {load}")
        if hp != loaded_hp:
            for p in hp_procs:
                p.send({"cmd": "load", "kind": hp})
            for p in hp_procs:
                p.reply(300, f"loading HP kind {hp}")
            plain = procs[("plain", "hp")]
            calib = plain.request({"cmd": "calib", "jobs": args.calib_jobs, "gap": CALIB_GAP}, 300,
                                  f"calibrating {hp}")
            svc = calib["svc_ms"]
            busy = plain.request({"cmd": "busy", "jobs": args.busy_jobs}, 300, f"profiling {hp}")
            raw["hp_kinds"][hp] = {"svc_alone_ms": svc, "svc_p50_ms": nearest_rank(svc, 50),
                                   "svc_mean_ms": round(sum(svc) / len(svc), 4),
                                   "busy_ms": busy["busy_ms"], "wall_ms": busy["wall_ms"]}
            if "variant" in calib:  # an HP of several kinds of job: which kind each calibration job was
                raw["hp_kinds"][hp]["svc_alone_variant"] = calib["variant"]
            if "variants" in busy:  # and each kind's share and profile, busy_ms their weighed mean
                raw["hp_kinds"][hp]["busy_variants"] = busy["variants"]
            loaded_hp = hp
        if lp != loaded_lp:
            for p in lp_procs:
                p.send({"cmd": "load", "kind": lp})
            for p in lp_procs:
                p.reply(300, f"loading LP kind {lp}")
            loaded_lp = lp
        rate = load_rate(raw["hp_kinds"][hp], LOADS[load])
        gpu_busy = rate * raw["hp_kinds"][hp]["busy_ms"] / 1000.0
        if gpu_busy > ALONE_BUSY_MAX:
            print(f"matrix: warning: {hp}+{lp} {load}: the HP's GPU work alone fills {gpu_busy:.2f} of the GPU at "
                  f"this rate ({rate:.1f} jobs/s x {raw['hp_kinds'][hp]['busy_ms']:.2f} ms busy a job): its rounds "
                  f"will queue; name a lower load", flush=True)
        seconds = window_s(args, rate)
        for group in learning_groups(args) if args.learn_jobs else ():
            # what the LP sent to partitions while guarded learned is not the next segment's
            partition_before[group] = learn_guarded(args, procs, tools, raw, (hp, lp, load), group)
        for group in sorted({SETUP[s][0] for s in args.setups} & set(ARM_GROUPS)):
            tools.pin_arm(group)  # each cell's arm statistics are of its own pair
        cell_s += time.monotonic() - cell_began
        for rnd, setup in schedule(cell_setups(args.setups, first, args.cost), args.rounds, args.seed + ci):
            seg_began = time.monotonic()
            group, roles, mark = SETUP[setup]
            seed = args.seed * 100000 + ci * 100 + rnd  # the same arrivals for every setup of the round
            seg = {"hp": hp, "lp": lp, "load": load, "setup": setup, "round": rnd, "rate": rate, "seconds": seconds}
            seg.update(run_window(args, procs, group, roles, rate, seconds, seed, mark,
                                  max(0.3, 3 * raw["hp_kinds"][hp]["svc_p50_ms"] / 1000), f"{hp}+{lp} {setup}"))
            if group in PARTITIONING_GROUPS and "lp" in roles:
                now = tools.lp_state(group)
                seg["lp_partition"] = {"state": now["state"],
                                       "launches": now["partition_launches"] - partition_before.get(group, 0)}
                partition_before[group] = now["partition_launches"]
                if group in GUARDED_GROUPS:
                    seg["guarded_status"] = now["segment"]
                    if (group, "hp") in procs:
                        seg["trial_ends"] = trial_ends(procs[(group, "hp")].new_lines())
            if group in AUTO_GROUPS:  # did the unmarked HP's hook open jobs? (its auto_jobs counter)
                seg["hp_auto_jobs"] = tools.hp_auto_jobs(group)
            raw["segments"].append(seg)
            done += 1
            seg_s += time.monotonic() - seg_began
            elapsed = time.monotonic() - started
            hpn = len(seg.get("hp_result", {}).get("lat_ms", []))
            eta = eta_s(seg_s, done, total, cell_s, ci + 1, len(plan) - ci - 1)
            print(f"[{done}/{total}] {hp}+{lp} {load} r{rnd} {setup:<13} {hpn:4d} HP jobs  "
                  f"elapsed {elapsed:.0f} s, ETA {eta:.0f} s", flush=True)


# LP kinds that launch only CUDA graphs: the partition never takes a graph (a green stream does
# not confine a graph's kernels, hooks/partition.c), so their graphs wait for the job as under corun.
GRAPH_LPS = ("graph",)


def run_window(args, procs, group, roles, rate, seconds, seed, mark, tail, what):
    """One window of a group's processes: the LP from --lp-lead-s before t0 until `tail` after the
    HP's window (its work counted over the HP's window), the HP's Poisson arrivals from t0.
    Returns the segment's results, times and CPU load."""
    out = {"wall_start": time.time()}
    host_before = host_counters.read()
    t0 = time.monotonic() + 0.05
    if "lp" in roles:
        # beside a marked HP, each LP unit's end: its progress per HP job and gap (bench.gpu.lp_cycles)
        procs[(group, "lp")].send({"cmd": "lp", "t0": t0 - args.lp_lead_s, "seconds": args.lp_lead_s + seconds + tail,
                                   "count_from": t0, "count_to": t0 + seconds,
                                   "unit_times": bool(mark and "hp" in roles)})
    if "hp" in roles:
        out["hp_result"] = procs[(group, "hp")].request(
            {"cmd": "hp", "t0": t0, "seconds": seconds, "rate": rate, "seed": seed, "mark": mark}, seconds + 120, what)
    if "lp" in roles:
        out["lp_result"] = procs[(group, "lp")].reply(seconds + args.lp_lead_s + 120, what)
    out["wall_end"] = time.time()
    out["loadavg"] = os.getloadavg()[0]
    out["host"] = host_counters.delta(host_before, host_counters.read(), out["wall_end"] - out["wall_start"])
    return out


def learn_load(args, load):
    """The load guarded learns at: --learn-load, or the cell's own when it is 0."""
    return args.learn_load if args.learn_load > 0 else LOADS[load]


def learning_groups(args):
    """The guarded groups of the chosen setups, in a fixed order (each learns before the rounds)."""
    return [g for g in LEARNING_GROUPS if any(SETUP[s][0] == g for s in args.setups)]


TRIAL_END = re.compile(r"guarded trial of (?P<arm>\S+) against (?P<against>\S+) ended after (?P<jobs>\d+) of its "
                       r"jobs: (?P<outcome>[\w-]+) \((?P<rest>.*)\)$")
# a queue depth's trial that ended out of the bound (controller/guarded_job.c; its promotion is a change line)
DEPTH_TRIAL_END = re.compile(r"guarded trial of queue depth (?P<us>\d+) us ended after (?P<jobs>\d+) of its jobs: "
                             r"(?P<outcome>[\w-]+): .*\(p50 x(?P<p50>[\d.]+), p99 x[\d.]+ of stop; "
                             r"the depth in force stays (?P<kept>\d+) us\)$")


def trial_ends(lines):
    """The trials that ended, from the HP's GPUYIELD_VERBOSE lines (controller/guarded_job.c): per
    trial its arm, the arm in force it was tried against, its jobs, how it ended, the last test's
    z and p50 ratio and its cycles' LP ratio where the line gives them. A queue depth's trial that
    ended out of the bound is one too, as arm "depth:USus" against the depth in force."""
    out = []
    for line in lines:
        d = DEPTH_TRIAL_END.search(line)
        if d:
            out.append({"arm": f"depth:{d.group('us')}us", "against": f"depth:{d.group('kept')}us",
                        "jobs": int(d.group("jobs")), "outcome": d.group("outcome"), "z": None,
                        "ratio_p50": float(d.group("p50")), "lp_cycle_ratio": None})
            continue
        m = TRIAL_END.search(line)
        if not m:
            continue
        rest = m.group("rest")
        z = re.search(r"last test z (-?[\d.]+), p50 x([\d.]+)", rest)
        lp = re.search(r"gave the LP x([\d.]+)", rest)
        out.append({"arm": m.group("arm"), "against": m.group("against"), "jobs": int(m.group("jobs")),
                    "outcome": m.group("outcome"), "z": float(z.group(1)) if z else None,
                    "ratio_p50": float(z.group(2)) if z else None, "lp_cycle_ratio": float(lp.group(1)) if lp else None})
    return out


def trials_said(ends):
    """', trials: 64 no-gain after 384 (LP x0.98), ...' for the learning's line, or ''."""
    if not ends:
        return ""
    said = [f"{t['arm'].replace('partition:', '')} {t['outcome']} after {t['jobs']}"
            + (f" (LP x{t['lp_cycle_ratio']:.2f})" if t["lp_cycle_ratio"] else "") for t in ends]
    return ", trials: " + ", ".join(said)


def trial_outlook(guard):
    """', trying ARM (N of its jobs, z Z now: about K more)' from status --json's guarded object (and
    ', trying depth US us (..., gain z G)' for a queue depth's trial, its "queue_depth" "trial" and
    "gain_z"), or ''."""
    said, depth = "", guard.get("queue_depth") or {}
    for t, depth_us in ((guard.get("trial"), None), (depth.get("trial"), depth.get("trying_us"))):
        if not t:
            continue
        z = "not judged yet" if t.get("z_now") is None else f"z {t['z_now']:.2f} now"
        more = t.get("more_jobs_estimate")
        ahead = ("" if more is None else f": about {more} more of its jobs" + (", past its trial's cap" if t.get("beyond_cap") else ""))
        what = t["arm"] if depth_us is None else f"depth {depth_us} us"
        # a depth's gain shown against its gaps' spread (promotion needs 2.5 too; since a39ef9f)
        gain = "" if depth_us is None or depth.get("gain_z") is None else f", gain z {depth['gain_z']:.2f}"
        # the slow jobs' test (status since 2026-12-04): the trial passes only where it is >= 0
        slow = "" if t.get("slow_jobs_z") is None else f", slowest tenth z {t['slow_jobs_z']:.2f}"
        said += f", trying {what} ({t['jobs']} of its jobs, {z}{ahead}{slow}{gain})"
    return said


def learn_guarded(args, procs, tools, raw, cell, group="guarded"):
    """Before a cell's rounds: forget what guarded learned beside the last pair (`expcontroller
    guard-reset`), then let it learn this pair: --learn-jobs HP jobs beside the LP, at --learn-load
    (by default 0, the cell's own load, so that what the rule measures while learning is what the
    rounds run: a host-bound HP's jobs are shorter back to back than after idle time, and on the
    H100 arms passed at 90 % of the rate, the default until 2026-11-25, cost the launch-bound HP
    1.05-1.065 of stop in the rounds at 25 %: bench/results/2026-11-25-mechanism-ceiling/).
    Recorded as setup "<setup>_learn" (guarded_learn, guarded_depth_learn) with the arm it chose (the verdict leaves it out: the rounds
    measure the policy as it runs once it has learned, and this segment what learning costs).
    Returns the LP's partition launches so far."""
    r = tools.expcontroller("guard-reset", "--name", tools.segments[group])
    if r.returncode != 0:
        fail(f"cannot reset the guarded segment {tools.segments[group]}: {r.stdout.strip()}")
    setup = LEARNING_GROUPS[group]
    hp, lp, load = cell
    rate = load_rate(raw["hp_kinds"][hp], learn_load(args, load))
    seconds = args.learn_jobs / rate
    seg = {"hp": hp, "lp": lp, "load": load, "setup": f"{setup}_learn", "round": -1, "rate": rate, "seconds": seconds}
    seg.update(run_window(args, procs, group, ("hp", "lp"), rate, seconds, args.seed, SETUP[setup][2], 0.3,
                          f"{hp}+{lp} {setup} learning"))
    now = tools.lp_state(group)
    seg["guarded_status"] = now["segment"]
    seg["trial_ends"] = trial_ends(procs[(group, "hp")].new_lines())
    raw["segments"].append(seg)
    guard = seg["guarded_status"].get("guarded") or {}
    depth = (guard.get("queue_depth") or {}).get("in_force_us")
    print(f"matrix: {hp}+{lp} {load}: {setup} learned for {len(seg['hp_result']['lat_ms'])} jobs, in force: "
          f"{guard.get('in_force')}, queue depth {depth} us{trial_outlook(guard)}{trials_said(seg['trial_ends'])}",
          flush=True)
    return now["partition_launches"]


def policy_problems(raw):
    """Partition segments whose LP fell back (not `active`) or sent nothing to the partition (an LP
    of kernels: a graph LP sends nothing by design, and may never make its partition: state `-`):
    their ratios describe another policy, so no verdict is written."""
    problems = []
    for seg in raw["segments"]:
        check = seg.get("lp_partition")
        if seg["setup"] != "partition" or check is None:
            continue
        where = f"{seg['hp']}+{seg['lp']} {seg['load']} round {seg['round']}"
        if check["state"] == "-" and seg["lp"] in GRAPH_LPS:
            continue  # a graph LP that launched nothing but graphs during jobs never needed its partition
        if check["state"] != "active":
            problems.append(f"{where}: the LP's partition state is '{check['state']}', not 'active'")
        elif check["launches"] <= 0 and seg["lp"] not in GRAPH_LPS:
            problems.append(f"{where}: the LP sent no launch to the partition")
    return problems


# ---- the verdict --------------------------------------------------------------------------------

def lp_units(result):
    """(units counted in the HP's window, seconds of that window) of an LP reply."""
    return result["counted"], result["counted_secs"]


def alone_busy(seg):
    """How busy the plain HP alone was in its segment: arrival rate x mean service time (None
    without service times). The mean: an HP with one long job in ten is busy by it while its median
    is a short job's (until 2026-12-07 the median, which let every mixed round of that day pass)."""
    svc = (seg or {}).get("hp_result", {}).get("svc_ms")
    if not svc:
        return None
    return seg["rate"] * (sum(svc) / len(svc)) / 1000.0


def kinds_differ(segs):
    """Whether the setups of one round ran different kinds of job at the same arrivals: their hp
    replies' variant lists (an HP of several kinds of job) differ, so their ratios are not paired (on
    2026-12-07, before the draws were reseeded by each round's seed, the mixed HP's plain alone ran
    18-24 long jobs over three rounds where corun ran 11-13)."""
    return len({tuple(v) for s in segs if (v := (s.get("hp_result") or {}).get("variant")) is not None}) > 1


def by_kind(inv):
    """{kind: {"hp_jobs", "hp_p50_ratio", "hp_p99_ratio"}} of an HP of several kinds of job, each
    kind's latencies over the plain alone's of that kind in the same rounds (intervals as the
    cell's: invocations, then rounds); None for an HP of one kind, or replies that do not say. The
    pooled p50 of the mixed HP is a short job's and its p99 a long one's: apart, each says which
    job a setup slowed (on 2026-12-07 the short jobs ran 0.72-0.82 of alone as MPS clients, the
    long ones 1.00)."""
    blocks = [b for i in inv for b in i]
    if not blocks or any(b["hp_var"] is None or b["den_var"] is None or len(b["hp_var"]) != len(b["hp"])
                         or len(b["den_var"]) != len(b["hp_den"]) for b in blocks):
        return None
    seen = sorted({v for b in blocks for v in b["hp_var"]} | {v for b in blocks for v in b["den_var"]})
    if len(seen) < 2:
        return None
    out = {}
    for k in seen:
        num = lambda b, k=k: [x for x, v in zip(b["hp"], b["hp_var"]) if v == k]
        den = lambda b, k=k: [x for x, v in zip(b["hp_den"], b["den_var"]) if v == k]
        out[str(k)] = {"hp_jobs": sum(len(num(b)) for b in blocks),
                       "hp_p50_ratio": ratio_two_stage(inv, percentile_of(num, 50), percentile_of(den, 50)),
                       "hp_p99_ratio": ratio_two_stage(inv, percentile_of(num, 99), percentile_of(den, 99))}
    return out


def lp_minus_corun_paired(setup_invs, corun_invs):
    """A setup's LP ratio minus corun's over the rounds both ran, paired by round: each resampled
    round brings both setups' LP and its one lp_alone, so a round slow for every setup (the
    machine's noise) moves both alike. {"value", "ci" (95 %, invocations then rounds, as the ratios'
    intervals), "rounds" (paired)}, or None without a round both ran."""
    corun = {b["at"]: b for inv in corun_invs for b in inv}
    paired = [[{"lp": b["lp"], "corun": corun[b["at"]]["lp"], "den": b["lp_den"]} for b in inv
               if b["at"] in corun and b["lp"] and b["lp_den"] and corun[b["at"]]["lp"]] for inv in setup_invs]
    return paired_difference(paired, "lp", rate_of)


def paired_difference(paired, mine, statistic_of):
    """{"value", "ci", "rounds"} of statistic(setup)/statistic(den) - statistic(corun)/statistic(den)
    over PAIRED (per invocation, its rounds' blocks {MINE: the setup's, "corun", "den"}), invocations
    then rounds resampled; None without a block. statistic_of(key) -> statistic(blocks)."""
    paired = [inv for inv in paired if inv]
    if not paired:
        return None
    this, theirs, den = (statistic_of(lambda b, k=k: b[k]) for k in (mine, "corun", "den"))

    def diff(blocks):
        a, c, d = this(blocks), theirs(blocks), den(blocks)
        return None if None in (a, c, d) or d == 0 else a / d - c / d
    value = diff([b for inv in paired for b in inv])
    ci = two_stage_bootstrap(paired, diff)
    return {"value": None if value is None else round(value, 4),
            "ci": [round(ci[0], 4), round(ci[1], 4)] if ci else None, "rounds": sum(len(i) for i in paired)}


def hp_minus_corun_paired(setup_invs, corun_invs, q):
    """A setup's HP latency q-th percentile ratio minus corun's over the rounds both ran, paired by
    round (each resampled round brings both setups' latencies and its one plain alone, as
    lp_minus_corun_paired): the HP test asked as the LP's is, of what a p99 of a few jobs leaves to
    chance. {"value", "ci", "rounds"}, or None without a round both ran. Reported beside the target,
    not judged by it."""
    corun = {b["at"]: b for inv in corun_invs for b in inv}
    paired = [[{"hp": b["hp"], "corun": corun[b["at"]]["hp"], "den": b["hp_den"]} for b in inv
               if b["at"] in corun and b["hp"] and corun[b["at"]]["hp"] and b["hp_den"]] for inv in setup_invs]
    return paired_difference(paired, "hp", lambda key: percentile_of(key, q))


def hp_target_missed(row):
    """The HP statistics of a setup's row that miss the target: "p50" (over TARGET_P50, or its interval
    over TARGET_P50_CI, or none), "p99" (over TARGET_P99, or none)."""
    p50, p99 = row.get("hp_p50_ratio") or {}, row.get("hp_p99_ratio") or {}
    missed = []
    if p50.get("value") is None or p50["value"] > TARGET_P50 or not p50.get("ci") or p50["ci"][1] > TARGET_P50_CI:
        missed.append("p50")
    if p99.get("value") is None or p99["value"] > TARGET_P99:
        missed.append("p99")
    return missed


def analyze(raws):
    """matrix.json's dict from one or more invocations' raw records."""
    cells_seen = []
    for raw in raws:
        for seg in raw["segments"]:
            key = (seg["hp"], seg["lp"], seg["load"])
            if key not in cells_seen:
                cells_seen.append(key)
    out_cells = []
    for hp, lp, load in cells_seen:
        invs = {}  # setup -> [invocation: [round block]]
        by_arm = {}  # setup -> guarded arm -> [(service ms, latency ms)] of the HP's jobs
        left = []
        busy_seen, overloaded, unpaired = [], 0, 0
        for inv_no, raw in enumerate(raws):
            segs = [s for s in raw["segments"] if (s["hp"], s["lp"], s["load"]) == (hp, lp, load)]
            if not segs:
                continue
            kind = raw["hp_kinds"].get(hp, {})
            measured = [s for s in segs if not s["setup"].endswith("_learn")]  # learning runs at 90 % load
            if kind.get("busy_ms") is not None and measured:
                left.append(1 - measured[0]["rate"] * kind["busy_ms"] / 1000.0)
            by = {(s["round"], s["setup"]): s for s in segs}
            rounds = []
            for r in sorted({s["round"] for s in segs}):
                busy = alone_busy(by.get((r, "hp_alone")))
                if busy is not None:
                    busy_seen.append(busy)
                if busy is not None and busy > ALONE_BUSY_MAX:
                    overloaded += 1
                elif kinds_differ([s for (rr, setup), s in by.items() if rr == r and not setup.endswith("_learn")]):
                    unpaired += 1
                else:
                    rounds.append(r)
            for setup in sorted({s["setup"] for s in segs}):
                if setup in ("hp_alone", "lp_alone") or setup.endswith("_learn"):
                    continue
                blocks = []
                for r in rounds:
                    s, ha, la = by.get((r, setup)), by.get((r, "hp_alone")), by.get((r, "lp_alone"))
                    if not s or not ha:
                        continue
                    blocks.append({"at": (inv_no, r), "hp": s.get("hp_result", {}).get("lat_ms", []),
                                   "hp_den": ha["hp_result"]["lat_ms"],
                                   "hp_var": s.get("hp_result", {}).get("variant"),
                                   "den_var": ha["hp_result"].get("variant"),
                                   "lp": lp_units(s["lp_result"]) if "lp_result" in s else None,
                                   "lp_den": lp_units(la["lp_result"]) if la else None})
                if blocks:
                    invs.setdefault(setup, []).append(blocks)
                for r in rounds:  # the HP's jobs by the guarded arm each ran under (where recorded)
                    res = (by.get((r, setup)) or {}).get("hp_result", {})
                    for arm, svc, lat in zip(res.get("arms") or [], res.get("svc_ms", []), res.get("lat_ms", [])):
                        if arm is not None:
                            by_arm.setdefault(setup, {}).setdefault(arm, []).append((svc, lat))
        setups = {}
        share_left = sum(left) / len(left) if left else None
        for setup, inv in invs.items():
            row = {"hp_jobs": sum(len(b["hp"]) for i in inv for b in i), "invocations": len(inv)}
            if row["hp_jobs"]:
                row["hp_p50_ratio"] = ratio_two_stage(inv, percentile_of(lambda b: b["hp"], 50),
                                                      percentile_of(lambda b: b["hp_den"], 50))
                row["hp_p99_ratio"] = ratio_two_stage(inv, percentile_of(lambda b: b["hp"], 99),
                                                      percentile_of(lambda b: b["hp_den"], 99), over=TARGET_P99)
            if all(b["lp"] and b["lp_den"] for i in inv for b in i):
                row["lp_throughput_ratio"] = ratio_two_stage(inv, rate_of(lambda b: b["lp"]), rate_of(lambda b: b["lp_den"]))
                v = row["lp_throughput_ratio"]["value"]
                if row["hp_jobs"]:  # an LP-only setup had the whole GPU: no share of what an HP left
                    # (none either where the HP's GPU work alone fills the GPU: nothing is left to share)
                    row["lp_share_of_left"] = (round(v / share_left, 4) if v is not None and share_left
                                               and share_left > 0 else None)
            if row["hp_jobs"]:
                row["meets_hp_target"] = not hp_target_missed(row)
            kinds = by_kind(inv)
            if kinds:
                row["by_kind"] = kinds
            if by_arm.get(setup):
                row["by_arm"] = {arm: {"jobs": len(v), "svc_p50_ms": round(nearest_rank([x[0] for x in v], 50), 3),
                                       "lat_p50_ms": round(nearest_rank([x[1] for x in v], 50), 3),
                                       "lat_p99_ms": round(nearest_rank([x[1] for x in v], 99), 3)}
                                 for arm, v in sorted(by_arm[setup].items())}
            setups[setup] = row
        corun_lp = setups.get("corun", {}).get("lp_throughput_ratio", {}).get("value")
        for setup, row in setups.items():  # what harvesting kept of the LP, against corun's in the same cell
            v = row.get("lp_throughput_ratio", {}).get("value")
            if setup != "corun" and row["hp_jobs"] and v is not None and corun_lp is not None:
                # over the rounds both ran where there are such (the point and its interval on the same
                # rounds), else each setup's own rounds
                paired = lp_minus_corun_paired(invs[setup], invs["corun"])
                if paired and paired["value"] is not None:
                    row["lp_minus_corun"] = paired["value"]
                    row["lp_paired_rounds"] = paired["rounds"]
                    if paired["ci"]:
                        row["lp_minus_corun_ci"] = paired["ci"]
                else:
                    row["lp_minus_corun"] = round(v - corun_lp, 4)
                row["meets_lp_target"] = bool(row["lp_minus_corun"] >= -TARGET_LP_BELOW_CORUN - 1e-9)
        for setup, row in setups.items():  # the HP's p50 and p99 against corun's in the same rounds (reported)
            # a setup beside the LP (one without, an HP alone of some kind, is no pair for corun's)
            if setup == "corun" or not row["hp_jobs"] or "lp_throughput_ratio" not in row or \
                    not setups.get("corun", {}).get("hp_jobs"):
                continue
            for q in (50, 99):
                paired = hp_minus_corun_paired(invs[setup], invs["corun"], q)
                if paired and paired["value"] is not None:
                    row[f"hp_p{q}_minus_corun"] = paired["value"]
                    if paired["ci"]:
                        row[f"hp_p{q}_minus_corun_ci"] = paired["ci"]
        out_cells.append({"hp": hp, "lp": lp, "load": load, "gpu_time_left": round(share_left, 4) if share_left else None,
                          "alone_busy_max": round(max(busy_seen), 3) if busy_seen else None,
                          "alone_overloaded_rounds": overloaded, "unpaired_rounds": unpaired, "setups": setups})
    first = raws[0]
    return {"device": first["device"], "commit": ",".join(sorted({r["commit"] for r in raws})),
            "invocations": [{"started": r["started"], "commit": r["commit"], "device": r["device"]} for r in raws],
            "method": METHOD, "hp_kinds": {k: dict({key: v[key] for key in ("svc_p50_ms", "svc_mean_ms", "busy_ms") if key in v},
                                               **({"variant_shares": [x.get("share") for x in v["busy_variants"]]}
                                                  if v.get("busy_variants") else {}))
                                          for k, v in first["hp_kinds"].items()},
            "cells": out_cells}


METHOD = ("HP latency from Poisson arrival (queueing included), nearest-rank p50/p99 pooled over rounds, over "
          "the same of the HP alone as a plain process in the same rounds (ABAB: every setup and both alone runs "
          "once per round, in a seeded shuffled order, the same arrival seed within a round, and, since 2026-12-07, "
          "an HP of several kinds of job the same kind at each arrival); LP throughput = LP "
          "units launched in the HP's window per second over the same in lp_alone (one denominator per cell); 95 % "
          "intervals by a two-stage bootstrap (invocations, then rounds; 2000 resamples); lp_share_of_left = LP "
          "ratio / (1 - rate x GPU-busy ms of one HP job alone, profiler; each kind of job of an HP of several "
          "profiled apart and weighed by its share since 2026-12-07); the load's rate from the plain HP's "
          "mean service time over 200 jobs (until 2026-12-07 the median of 30, since then each kind of job of an HP "
          "of several its exact share of the 200; calibrated back to back until 2026-11-24 "
          "19:15 UTC, at a 25 % pace since); a round whose plain HP alone was over 85 % busy (rate x its mean service "
          "time, the median until 2026-12-07: it queued) is left out for every setup; clocks logged, never set.")


def write_outputs(raws, out):
    matrix = analyze(raws)
    with open(os.path.join(out, "matrix.json"), "w") as f:
        json.dump(matrix, f, indent=1)
    print(summary_table(matrix))
    for line in target_lines(matrix):
        print(line)
    try:
        plot(matrix, raws, out)
    except ImportError as e:
        print(f"matrix: no plots ({e})")


SUMMARY_SETUPS = (("nocontrol", "mps", "corun", "corun_whole", "corun_block", "partition", "guarded", "guarded_depth", "guarded_auto",
                   "guarded@twin", "guarded_depth@twin", "corun_auto",
                   "corun_auto_short", "hp_ctl_alone", "lp_mps_alone", "lp_ctl_alone", "lp_whole_alone", "lp_block_alone")
                  + tuple(f"arm:{a}" for a in GUARD_ARMS) + GREEN_SETUPS + tuple(f"{k}@{m}" for m in LP_MODE_VARIANTS
                                                                 for k in ("corun", "lp_ctl")))


def summary_table(matrix):
    setups = [s for s in SUMMARY_SETUPS if any(s in c["setups"] for c in matrix["cells"])]
    head = f"{'cell':<30}" + "".join(f"{s:>22}" for s in setups)
    lines = ["HP p50 ratio / p99 ratio / LP throughput ratio", head]
    for c in matrix["cells"]:
        row = f"{c['hp'] + '+' + c['lp'] + ' ' + c['load']:<30}"
        for s in setups:
            r = c["setups"].get(s)
            if not r:
                row += f"{'-':>22}"
                continue
            lp = r.get("lp_throughput_ratio", {}).get("value")
            hp50, hp99 = (r.get(k, {}).get("value") for k in ("hp_p50_ratio", "hp_p99_ratio"))
            txt = "/".join("-" if v is None else f"{v:.2f}" for v in (hp50, hp99, lp))
            row += f"{txt:>22}"
        dropped, unpaired = c.get("alone_overloaded_rounds", 0), c.get("unpaired_rounds", 0)
        if dropped and not c["setups"] and not unpaired:
            row += f"  (plain HP alone queued in every round, up to {c['alone_busy_max']:.0%} busy: no verdict)"
        elif dropped or unpaired:
            why = ([f"{dropped} the plain HP alone queued"] if dropped else []) + \
                  ([f"{unpaired} the setups ran different kinds of job"] if unpaired else [])
            row += f"  (round(s) left out: {', '.join(why)}{'; no verdict' if not c['setups'] else ''})"
        lines.append(row)
    return "\n".join(lines)


def target_lines(matrix):
    """Per setup over the cells: how many met the HP target, and (beside corun) how many kept the LP
    within TARGET_LP_BELOW_CORUN of corun's, naming the worst cell: the issue's two axes at a glance."""
    lines = []
    for s in SUMMARY_SETUPS:
        rows = [(c, c["setups"][s]) for c in matrix["cells"] if s in c["setups"] and "meets_hp_target" in c["setups"][s]]
        if not rows:
            continue
        hp = sum(r["meets_hp_target"] for _, r in rows)
        line = f"{s}: HP target in {hp} of {len(rows)} cells"
        lp = [(r["lp_minus_corun"], f"{c['hp']}+{c['lp']} {c['load']}") for c, r in rows if "lp_minus_corun" in r]
        if lp:
            worst = min(lp)
            kept = sum(r["meets_lp_target"] for _, r in rows if "meets_lp_target" in r)
            line += (f"; LP within {TARGET_LP_BELOW_CORUN:.2f} of corun's or above in {kept} of {len(lp)} "
                     f"(lowest {worst[0]:+.2f}: {worst[1]})")
        lines.append(line)
    return lines


def plot(matrix, raws, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    setups = [s for s in SUMMARY_SETUPS if any(s in c["setups"] for c in matrix["cells"])]
    rows = [f"{c['hp']}+{c['lp']} {c['load']}" for c in matrix["cells"]]
    grid = [[((c["setups"].get(s) or {}).get("hp_p50_ratio") or {}).get("value") for s in setups] for c in matrix["cells"]]
    fig, ax = plt.subplots(figsize=(2 + 1.6 * len(setups), 1 + 0.45 * len(rows)))
    ax.set_title(f"HP p50 latency / alone (colour) and LP throughput / alone\n{matrix['device']}", fontsize=9)
    if not setups:  # no cell has a verdict (its plain HP alone queued in every round): no empty grid
        ax.axis("off")
        ax.text(0.5, 0.5, "no verdict in any cell:\nthe plain HP alone queued\nin every round", ha="center",
                va="center", fontsize=8)
    else:
        data = [[v if v is not None else float("nan") for v in r] for r in grid]
        im = ax.imshow(data, cmap="RdYlGn_r", vmin=0.95, vmax=1.5, aspect="auto")
        for i, c in enumerate(matrix["cells"]):
            for j, s in enumerate(setups):
                r = c["setups"].get(s)
                if r:
                    lp = r.get("lp_throughput_ratio", {}).get("value")
                    hp50 = r.get("hp_p50_ratio", {}).get("value")
                    ax.text(j, i, ("-" if hp50 is None else f"{hp50:.2f}") + (f"\nLP {lp:.2f}" if lp is not None else ""),
                            ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(setups)), setups, rotation=30, ha="right")
        ax.set_yticks(range(len(rows)), rows, fontsize=7)
        fig.colorbar(im, ax=ax, label="HP p50 ratio")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "heatmap.png"), dpi=110)
    plt.close(fig)
    # Per-cell latency CDFs, every setup and the HP alone, pooled over invocations and rounds.
    n = len(matrix["cells"])
    cols = 4
    fig, axes = plt.subplots((n + cols - 1) // cols, cols, figsize=(4 * cols, 3 * ((n + cols - 1) // cols)), squeeze=False)
    for k, c in enumerate(matrix["cells"]):
        ax = axes[k // cols][k % cols]
        for s in ["hp_alone"] + setups:
            vals = sorted(x for raw in raws for seg in raw["segments"]
                          if (seg["hp"], seg["lp"], seg["load"], seg["setup"]) == (c["hp"], c["lp"], c["load"], s)
                          for x in seg.get("hp_result", {}).get("lat_ms", []))
            if vals:
                ax.plot(vals, [(i + 1) / len(vals) for i in range(len(vals))], label=s, lw=1)
        ax.set_title(f"{c['hp']}+{c['lp']} {c['load']}", fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel("HP latency from arrival (ms)", fontsize=7)
        ax.tick_params(labelsize=6)
        if k == 0:
            ax.legend(fontsize=6)
    for k in range(n, len(axes) * cols):
        axes[k // cols][k % cols].axis("off")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "latency_cdfs.png"), dpi=100)
    plt.close(fig)


# ---- arguments ----------------------------------------------------------------------------------

def kinds(allowed, what):
    def parse(text):
        out = [k for k in text.split(",") if k]
        bad = [k for k in out if k not in allowed]
        if bad or not out:
            raise argparse.ArgumentTypeError(f"unknown {what} '{','.join(bad) or text}': use a comma list of "
                                             f"{', '.join(allowed)}")
        return out
    return parse


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.matrix", description=__doc__.split("\n\n")[0])
    p.add_argument("--build", help="the build folder (bin/expcontroller, lib/libgpuyield.so, python/)")
    p.add_argument("--out", required=True)
    p.add_argument("--merge", nargs="+", metavar="DIR", help="invocations' folders (raw.json, raw.json.xz or raw.json.gz) to merge")
    p.add_argument("--hp-kinds", type=kinds(HP_KINDS, "HP kind"), default=list(DEFAULT_HP_KINDS))
    p.add_argument("--lp-kinds", type=kinds(LP_KINDS, "LP kind"), default=list(DEFAULT_LP_KINDS))
    p.add_argument("--loads", type=kinds(tuple(LOADS), "load"), default=list(LOADS))
    p.add_argument("--high-load-lp", default="resnet50train", help="the LP kind of the cells at the higher loads")
    p.add_argument("--setups", type=kinds(tuple(SETUP), "setup"), default=list(DEFAULT_SETUPS))
    p.add_argument("--no-cost", dest="cost", action="store_false", help="no cost setups in each HP kind's first cell")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--jobs", type=int, default=50, help="HP jobs a segment aims at (window = jobs / rate)")
    p.add_argument("--min-seconds", type=float, default=1.5)
    p.add_argument("--max-seconds", type=float, default=6.0)
    p.add_argument("--budget-s", type=float, default=None,
                   help="refuse to start (exit 2, nothing run) when the planned time exceeds this many seconds: "
                        "a device call cut by its time limit loses the cell it was in (the plan ran 10-30 %% over the "
                        "actual time on the H100 on 2026-11-25: it errs on the side of refusing)")
    p.add_argument("--lp-lead-s", type=float, default=0.4)
    p.add_argument("--calib-jobs", type=int, default=CALIB_JOBS,
                   help="plain HP jobs alone, each followed by 3x its time idle, whose mean service sets the "
                        "load's rate (default %(default)s)")
    p.add_argument("--busy-jobs", type=int, default=10)
    p.add_argument("--lp-mode", default="time:500")
    p.add_argument("--learn-jobs", type=int, default=300,
                   help="guarded: HP jobs it learns on before each cell's rounds (0: none, no reset); beside a "
                        "launch-bound HP a costless arm is promoted in about 43 %% of 1000-job and 90 %% of 3000-job "
                        "learnings (bench/results/2026-11-29-h200-twins-long-learning)")
    p.add_argument("--pin", action="store_true",
                   help="every HP worker on the same two CPUs while it is measured (parked on the LP's while not), the "
                        "LP workers on the rest, the harness and what it starts (MPS daemon, expcontroller, nvidia-smi) "
                        "on the first two (recorded in raw.json: cpus)")
    p.add_argument("--pin-workers-only", action="store_true",
                   help="with --pin: leave the harness and what it starts unpinned, and every HP worker on the HP's "
                        "CPUs, idle or not (as every record before 2026-11-25 08:45 UTC)")
    p.add_argument("--hp-evt-cpus", choices=("hp", "lp", "tools"), default="hp",
                   help="with --pin (and parking): where the measured HP's CUDA event-handler thread (cuda-EvtHandlr) "
                        "runs: on the HP's CPUs with its other threads (default), on the LP's, or on the harness's")
    p.add_argument("--hp-main-cpu", action="store_true",
                   help="with --pin (and parking): the measured HP's main thread, which launches its jobs, on the "
                        "first of the HP's two CPUs alone, its other threads on both (a host-bound HP's jobs took up "
                        "to 40 %% longer on one of them: every setup's HP on the same CPU)")
    p.add_argument("--no-park", action="store_true",
                   help="with --pin: every HP worker stays on the HP's CPUs while it waits for its turn, the harness "
                        "still on its own (the plan of 2026-11-25 08:45-09:45 UTC; parking is then the only difference)")
    p.add_argument("--learn-load", type=float, default=0.0,
                   help="guarded: the load it learns at, a fraction of the HP's calibrated rate (0, the default: "
                        "the cell's own load; 0.9 until 2026-11-25 16:30 UTC, when arms passed at 0.9 cost the "
                        "launch-bound HP 5-6 %% in the rounds at 0.25)")
    p.add_argument("--partition-sms", type=int, default=16)
    p.add_argument("--auto-idle-us", type=int, default=None, metavar="US",
                   help="GPUYIELD_IDLE_US of the corun_auto_short setup's HP (1..10000000, default "
                        f"{AUTO_IDLE_US_DEFAULT}); corun_auto's keeps the hook's default (300 since 2026-11-24 20:00 UTC, 2000 before)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--device", default="unknown")
    p.add_argument("--commit", default=None)
    p.add_argument("--twin-build", default=None, metavar="DIR",
                   help="a second build (lib/libgpuyield.so, python/gpuyield) whose rule the setups guarded@twin and "
                        "guarded_depth@twin run beside --build's, in the same rounds (segments made by --build's "
                        "expcontroller: the segment layout must be the same)")
    p.add_argument("--twin-commit", default=None, help="the twin build's commit, for the record")
    p.add_argument("--no-mps", action="store_true", help="no MPS daemon (a dry run without a GPU)")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--worker-module", default="bench.gpu.matrix_worker")
    p.add_argument("--backend", default=None, help="the worker's backend MODULE:CLASS (a stand-in for tests)")
    p.add_argument("--ready-timeout", type=float, default=180)
    args = p.parse_args(argv)
    if args.merge:
        return args
    if not args.build:
        p.error("--build is required (or --merge)")
    for flag in ("rounds", "jobs", "calib_jobs", "busy_jobs"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} {getattr(args, flag)}: must be >= 1")
    if args.min_seconds <= 0 or args.max_seconds < args.min_seconds:
        p.error(f"--min-seconds {args.min_seconds} / --max-seconds {args.max_seconds}: need 0 < min <= max")
    for flag in ("pin_workers_only", "no_park"):
        if getattr(args, flag) and not args.pin:
            p.error(f"--{flag.replace('_', '-')} qualifies --pin: give both, or neither")
    if args.hp_evt_cpus != "hp" and (not args.pin or args.no_park or args.pin_workers_only):
        p.error(f"--hp-evt-cpus {args.hp_evt_cpus} needs --pin with parking (not --no-park or --pin-workers-only)")
    if args.hp_main_cpu and (not args.pin or args.no_park or args.pin_workers_only):
        p.error("--hp-main-cpu needs --pin with parking (not --no-park or --pin-workers-only)")
    if "hp_alone" not in args.setups or "lp_alone" not in args.setups:
        p.error("--setups must hold hp_alone and lp_alone: every ratio's denominator")
    if not 0 <= args.learn_load <= 1:
        p.error(f"--learn-load {args.learn_load}: must be 0..1 (a fraction of the HP's rate; 0: the cell's load)")
    if args.auto_idle_us is not None:
        if not 1 <= args.auto_idle_us <= 10000000:
            p.error(f"--auto-idle-us {args.auto_idle_us}: must be 1..10000000 (GPUYIELD_IDLE_US's range)")
        if "corun_auto_short" not in args.setups:
            p.error("--auto-idle-us sets the corun_auto_short setup's idle time: add corun_auto_short to --setups")
    elif "corun_auto_short" in args.setups:
        args.auto_idle_us = AUTO_IDLE_US_DEFAULT
    if args.high_load_lp not in LP_KINDS:
        p.error(f"--high-load-lp {args.high_load_lp}: use one of {', '.join(LP_KINDS)}")
    if args.budget_s is not None:
        plan = cells(args.hp_kinds, args.lp_kinds, args.loads, args.high_load_lp)
        need = estimate_s(args, plan) + WORKER_START_S
        if need > args.budget_s:
            p.error(f"--budget-s {args.budget_s:g}: the plan needs about {need:.0f} s ({len(plan)} cells, "
                    f"{args.rounds} rounds, --learn-jobs {args.learn_jobs}, the workers' start-up included): "
                    f"name fewer kinds, loads or setups, or lower --rounds or --learn-jobs")
    twins = [s for s in args.setups if SETUP[s][0] in TWIN_GROUPS]
    if twins and not args.twin_build:
        p.error(f"--setups {','.join(twins)}: these run a second build's rule: name it with --twin-build DIR "
                f"(bench/gpu/make_twin.sh COMMIT makes one)")
    if args.twin_build:
        commit_file = os.path.join(args.twin_build, "COMMIT")  # make_twin.sh writes it
        if args.twin_commit is None and os.path.exists(commit_file):
            with open(commit_file) as f:
                args.twin_commit = f.read().strip()
        if not twins:
            p.error("--twin-build names the build of the @twin setups: add guarded@twin or guarded_depth@twin to --setups")
        for need in ("lib/libgpuyield.so", "python/gpuyield"):
            if not os.path.exists(os.path.join(args.twin_build, need)):
                p.error(f"--twin-build {args.twin_build}: no {need} there (a build folder with its Python extension "
                        f"built: bench/gpu/make_twin.sh, then run_all.sh builds the extension on the GPU machine)")
    exe = os.path.join(args.build, "bin", "expcontroller")
    if any(SETUP[s][0] in POLICY_GROUPS for s in args.setups) and not os.access(exe, os.X_OK):
        p.error(f"{exe} is missing: build first (./make.sh) or name the build with --build")
    return args


def main(argv=None):
    args = parse_args(argv)
    # SIGTERM (a timeout, a lease ending) unwinds like Ctrl-C: workers stopped, the MPS daemon quit,
    # segments removed, and the segments measured so far kept in raw.json.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.merge:
        raws = []
        for d in args.merge:
            try:  # records keep large raw files compressed (raw.json.xz, raw.json.gz)
                raws.append(raw_record.load(d))
            except raw_record.RawRecordError as e:
                fail(str(e), 2)
        problems = [p for r in raws for p in policy_problems(r)]
        if problems:
            fail("an invocation's partition setup did not run the partition policy, no verdict:\n  " + "\n  ".join(problems))
        os.makedirs(args.out, exist_ok=True)
        write_outputs(raws, args.out)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
