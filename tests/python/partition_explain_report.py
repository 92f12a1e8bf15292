"""A synthetic nsys export of a partition_verdict invocation whose slowdowns are known: the HP's
kernels 1.2x slower beside the LP (job 1.2 ms against 1.0 ms alone), the LP's kernels 8x slower
inside jobs (on stream 99) and as alone between them (stream 7). Used by
test_partition_explain.py and by the stand-in nsys (tests/bench/fake_nsys)."""
from nsys_report import Report

US = 1000
HP_ALONE, LP_ALONE, HP, LP = 10, 11, 20, 21


def synthetic(path, with_launches=True, hp_kernel_us=120, job_us=1200):
    r = Report()
    # Alone: HP jobs of 1000 us with 3 kernels of 100 us; the LP's kernels of 50 us back to back.
    for j in range(20):
        t = j * 3000 * US
        r.nvtx(HP_ALONE, t, t + 1000 * US, "plain_hp job %d" % j)
        for k in range(3):
            r.kernel(HP_ALONE, t + k * 200 * US, t + k * 200 * US + 100 * US, name="hpk")
    r.nvtx(LP_ALONE, 0, 100_000 * US, "plain_lp job 1")
    for k in range(100):
        r.kernel(LP_ALONE, 200_000 * US + k * 60 * US, 200_000 * US + k * 60 * US + 50 * US, name="lpk")
    # Partition: HP jobs of job_us, its 3 kernels hp_kernel_us; inside each job the LP runs two
    # kernels of 400 us on stream 99 and spends 600 us in a launch call; between jobs 50 us ones.
    base = 1_000_000 * US
    for j in range(20):
        t = base + j * 5000 * US
        r.nvtx(HP, t, t + job_us * US, "partition_hp job %d" % j)
        for k in range(3):
            r.kernel(HP, t + k * 300 * US, t + k * 300 * US + hp_kernel_us * US, name="hpk")
        r.kernel(LP, t + 10 * US, t + 410 * US, stream=99, name="lpk")
        r.kernel(LP, t + 500 * US, t + 900 * US, stream=99, name="lpk")
        if with_launches:
            r.launch(LP, t + 100 * US, t + 700 * US, corr=j)
        for k in range(10):
            s = t + 2000 * US + k * 100 * US
            r.kernel(LP, s, s + 50 * US, stream=7, name="lpk")
    r.nvtx(LP, base, base + 100_000 * US, "partition_lp job 1")
    r.write(path)
    return path
