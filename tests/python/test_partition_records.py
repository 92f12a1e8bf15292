"""bench/gpu/partition_records.py on synthetic records: the SM-id proof of the partition policy
(blocks inside and outside HP jobs, a launch on the whole GPU after the switch, a partition that
moves, nothing proven), the files partition-bench writes, and the size sweep's table."""
import os
import sys
from array import array

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.gpu import partition_records as pr

SM_TOTAL = 132
PARTITION = frozenset(range(40, 56))  # 16 SMs
MS = 1_000_000


class LP:
    """Builds an LP's launches in stream order: each one starts where the previous ended."""

    def __init__(self, blocks=40):  # more blocks than a whole-GPU launch's 33 SMs
        self.blocks, self.t, self.n, self.kernels = blocks, 1 * MS, 0, []

    def launch(self, sms, dur_ns=200_000):
        sms = sorted(sms)
        starts = [self.t + i * 1000 for i in range(self.blocks)]
        smids = [sms[i % len(sms)] for i in range(self.blocks)]
        self.kernels.append(pr.Kernel(self.n, starts[0], starts[-1], frozenset(smids), starts, smids))
        self.n += 1
        self.t += dur_ns

    def until(self, t_ns, sms):
        while self.t < t_ns:
            self.launch(sms)


def whole_gpu(k):
    return range(k % 4, SM_TOTAL, 4)  # 33 SMs a launch, all 132 over four launches


def run_with_jobs(jobs, spill=1, partition=PARTITION, late_whole_gpu_in=None):
    """An LP beside HP jobs [(start, end)]: the whole GPU between jobs; in a job, `spill` launches
    queued before it on the whole GPU, then the partition (and, in job late_whole_gpu_in, one
    launch on the whole GPU after the switch)."""
    lp = LP()
    for j, (ws, we) in enumerate(jobs):
        lp.until(ws, whole_gpu(lp.n))
        for _ in range(spill):
            lp.launch(whole_gpu(lp.n))
        parts = partition[j] if isinstance(partition, list) else partition
        lp.launch(parts)
        if late_whole_gpu_in == j:
            lp.launch(whole_gpu(lp.n))
        while lp.t <= we:  # the switch back comes after the job's last marker
            lp.launch(parts)
    lp.until(jobs[-1][1] + 5 * MS, whole_gpu(0))
    # the whole GPU outside jobs: launches of every phase
    for k in range(4):
        lp.launch(whole_gpu(k))
    return lp.kernels


JOBS = [(5 * MS, 7 * MS), (15 * MS, 16 * MS), (30 * MS, 33 * MS)]


def test_partition_inside_jobs_and_whole_gpu_outside_is_proven():
    r = pr.sm_proof(run_with_jobs(JOBS), JOBS, 16, sm_total=SM_TOTAL)
    assert r["ok"] and r["proven"] and r["violation_count"] == 0
    assert r["partition_set"] == sorted(PARTITION)
    assert r["jobs_in_records"] == 3 and r["jobs_without_partition_launch"] == 0
    assert r["blocks_inside_jobs_on_partition"] > 0
    assert r["distinct_sms_inside_jobs_on_partition"] == 16
    assert r["distinct_sms_outside_jobs"] == SM_TOTAL and r["outside_jobs_uses_whole_gpu"]
    # one launch queued before each job started inside it, on the whole GPU: counted, not a violation
    assert r["queued_before_launches_per_job"]["max"] == 1
    assert r["blocks_inside_jobs_queued_before"] > 0
    assert r["switch_delay_us"]["p50"] == 200.0  # the queued launch's 200 us


def test_a_launch_on_the_whole_gpu_after_the_switch_is_a_violation_with_its_time():
    kernels = run_with_jobs(JOBS, late_whole_gpu_in=1)
    r = pr.sm_proof(kernels, JOBS, 16, sm_total=SM_TOTAL)
    assert not r["ok"] and r["violation_count"] == 1
    v = r["violations"][0]
    late = [k for k in kernels if JOBS[1][0] <= k.t0 <= JOBS[1][1] and len(k.sms) > 16][-1]
    assert v["time_ns"] == late.t0 and v["launch_no"] == late.launch_no
    assert v["job_window_ns"] == list(JOBS[1])
    assert any("VIOLATION" in line for line in pr.proof_lines("partition", r))


def test_a_partition_that_moves_between_jobs_is_not_one_fixed_set():
    moved = [PARTITION, frozenset(range(60, 76)), PARTITION]
    r = pr.sm_proof(run_with_jobs(JOBS, partition=moved), JOBS, 16)
    assert not r["ok"] and r["partition_set_size"] == 32
    assert any("not one fixed set" in v["what"] for v in r["violations"])


def test_more_sms_than_the_partition_inside_jobs_is_no_partition_at_all():
    wide = frozenset(range(0, 24))  # 24 SMs when 16 were asked for
    r = pr.sm_proof(run_with_jobs(JOBS, partition=wide), JOBS, 16)
    assert not r["proven"] and not r["ok"]
    assert r["partition_launches"] == 0 and r["blocks_inside_jobs_on_partition"] == 0


def test_an_lp_blocked_during_jobs_proves_nothing():
    lp = LP()
    for ws, we in JOBS:
        lp.until(ws, whole_gpu(lp.n))
        lp.t = we + 100_000  # drain: nothing runs inside the job
    lp.until(JOBS[-1][1] + 2 * MS, whole_gpu(lp.n))
    r = pr.sm_proof(lp.kernels, JOBS, 16)
    assert r["blocks_inside_jobs"] == 0 and not r["proven"] and not r["ok"]
    assert any("NOT PROVEN" in line for line in pr.proof_lines("drain", r))


def test_jobs_outside_the_lp_records_are_not_counted():
    kernels = [k for k in run_with_jobs(JOBS) if k.t0 > 10 * MS]  # the ring kept only the later launches
    r = pr.sm_proof(kernels, JOBS, 16)
    assert r["jobs"] == 3 and r["jobs_in_records"] == 2 and r["ok"]


def write_lp(prefix, kernels, blocks, slots_extra=1):
    """The files partition-bench lp writes, for these kernels, plus unused slots."""
    launches, starts, smids = array("Q"), array("Q"), array("I")
    for k in kernels:
        launches.extend([k.launch_no, k.t0, k.t1 + 200_000, blocks])
        starts.extend(k.starts)
        smids.extend(k.smids)
    for _ in range(slots_extra):  # a slot that never ran
        launches.extend([0, 0, 0, 0])
        starts.extend([0] * blocks)
        smids.extend([0] * blocks)
    for ext, arr in ((".launches.bin", launches), (".starts.bin", starts), (".smids.bin", smids)):
        with open(prefix + ext, "wb") as f:
            f.write(arr.tobytes())
    with open(prefix + ".json", "w") as f:
        f.write('{"role": "lp", "launches": %d, "blocks": %d, "record_blocks": true}\n' % (len(kernels), blocks))


def test_records_round_trip_through_partition_bench_files(tmp_path):
    kernels = run_with_jobs(JOBS)
    prefix = str(tmp_path / "lp")
    write_lp(prefix, list(reversed(kernels)), 40)  # ring order is not launch order
    meta, launches, read = pr.read_lp(prefix)
    assert meta["blocks"] == 40 and len(launches) == len(kernels) == len(read)
    assert [l.launch_no for l in launches] == sorted(k.launch_no for k in kernels)
    plain = lambda ks: sorted((k.launch_no, k.t0, k.t1, k.sms, list(k.starts), list(k.smids)) for k in ks)
    assert plain(read) == plain(kernels)
    assert pr.sm_proof(read, JOBS, 16)["ok"]
    pr.remove_lp_files(prefix)
    assert not list(tmp_path.iterdir())


def test_hp_durations_and_lp_throughput():
    hp = {"first_marker_ns": [1 * MS, 10 * MS], "last_marker_ns": [2 * MS, 13 * MS],
          "begin_ns": [0, 100], "end_ns": [3 * MS, 4 * MS + 100], "wait_ns": [0, 500_000]}
    d = pr.hp_durations(hp)
    assert d["job_ms"] == [1.0, 3.0] and d["host_ms"] == [3.0, 4.0] and d["wait_ms"] == [0.0, 0.5]
    assert pr.hp_windows(hp) == [(1 * MS, 2 * MS), (10 * MS, 13 * MS)]
    launches = [pr.Launch(i, i * MS, i * MS + 500_000, 100) for i in range(20)]
    t = pr.lp_throughput(launches, 2 * MS, 12 * MS)  # ends at 2.5 .. 11.5 ms: 10 launches in 10 ms
    assert t["launches_per_s"] == 1000.0 and t["blocks_per_s"] == 100000.0
    assert pr.lp_alone_span(launches, settle_ns=MS) == (1 * MS, 19 * MS + 500_000)
    # inside jobs: ends at 3.5 and 4.5 ms fall in [3, 5] ms, 7.5 in [7, 8]: 3 launches in 3 ms of jobs
    inside = pr.lp_throughput_inside(launches, [(3 * MS, 5 * MS), (7 * MS, 8 * MS)])
    assert inside["launches_per_s"] == 1000.0 and inside["job_s"] == 0.003


def sweep_runs(alone_ms, by_size, lp_alone=1000.0):
    runs = []
    for rnd in (1, 2):
        runs.append({"setup": "hp_alone", "round": rnd, "job_ms": list(alone_ms), "lp": None})
        runs.append({"setup": "lp_alone", "round": rnd, "job_ms": [], "lp": {"blocks_per_s": lp_alone}})
        for n, (ms, blocks) in by_size.items():
            runs.append({"setup": f"partition_{n}", "round": rnd, "job_ms": list(ms), "lp": {"blocks_per_s": blocks},
                         "partition_launches": 10})
    return runs


def test_sweep_table_ratios_and_the_suggested_default():
    alone = [1.0] * 100
    by_size = {8: ([1.0] * 100, 300.0), 16: ([1.01] * 100, 500.0), 32: ([1.2] * 100, 800.0)}
    t = pr.sweep_table(sweep_runs(alone, by_size), [8, 16, 32])
    assert t["hp_alone"]["jobs"] == 200
    row = t["sizes"]["16"]
    assert row["jobs"] == 200 and row["hp_p50_ratio"] == 1.01 and row["lp_ratio"] == 0.5
    assert row["round_p50_ms"] == [1.01, 1.01] and row["partition_launches"] == [10, 10]
    # 32 gives the LP the most but slows the HP by 20%: 16 is the largest throughput within bounds
    assert t["suggested_default"]["sms"] == 16
    assert any("suggested" in line for line in pr.sweep_lines(t))


def test_sweep_breaks_a_throughput_tie_towards_the_smaller_partition():
    by_size = {8: ([1.0] * 100, 500.0), 16: ([1.0] * 100, 500.0)}
    assert pr.sweep_table(sweep_runs([1.0] * 100, by_size), [8, 16])["suggested_default"]["sms"] == 8


def test_sweep_suggests_the_least_harmful_size_when_none_is_within_bounds():
    by_size = {8: ([1.1] * 100, 300.0), 16: ([1.3] * 100, 500.0)}
    t = pr.sweep_table(sweep_runs([1.0] * 100, by_size), [8, 16])
    assert t["suggested_default"]["sms"] == 8 and "no size" in t["suggested_default"]["rule"]
