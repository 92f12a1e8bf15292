"""Random SIGSTOPs against processes that use one segment (issue 19), not part of the suites.

N worker processes run begin/end at random priorities in a loop; each round stops one of them
(SIGSTOP) at a random moment for STOP_S seconds, then resumes it. A stop that lands while the
worker holds the segment's mutex used to make every other begin wait until the resume; now each
call gives up after the lock bound (the drain timeout) with an error naming the holder.

Prints, over all rounds: calls made, the longest call, calls that failed on the lock, and
whether `status` named a stopped holder while one was stopped.

    python3 tests/reliability/stop_holders.py [ROUNDS] [WORKERS]   (PYTHONPATH=build/python)
"""
import os
import random
import signal
import sys
import time

import gpuyield

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 30
WORKERS = int(sys.argv[2]) if len(sys.argv) > 2 else 6
STOP_S = 1.0
DRAIN_TIMEOUT_MS = 300


def worker(tag, out_fd):
    seg = gpuyield.connect(tag)
    rng = random.Random(os.getpid())
    calls, lock_errors, long_calls = 0, 0, 0
    deadline = time.monotonic() + ROUNDS * (STOP_S + 0.4) + 2
    while time.monotonic() < deadline:
        p = rng.randrange(8)
        t0 = time.monotonic()
        try:
            with seg.job(p):
                pass
        except gpuyield.Error as e:
            if "stayed held" not in str(e):
                raise
            lock_errors += 1
        # A call longer than twice the bound: the stopped process's own call (at most one per
        # stop), or a wait that was not bounded.
        long_calls += time.monotonic() - t0 > 2 * DRAIN_TIMEOUT_MS / 1000
        calls += 1
    os.write(out_fd, ("%d %d %d\n" % (calls, lock_errors, long_calls)).encode())
    os._exit(0)


def main():
    tag = "stopholders-%d" % os.getpid()
    seg = gpuyield.create(tag, drain_timeout_ms=DRAIN_TIMEOUT_MS)
    r, w = os.pipe()
    pids = []
    for _ in range(WORKERS):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            worker(tag, w)
        pids.append(pid)
    os.close(w)
    rng = random.Random(1)
    named = stopped_holders = 0
    for _ in range(ROUNDS):
        time.sleep(rng.uniform(0.05, 0.3))
        victim = rng.choice(pids)
        os.kill(victim, signal.SIGSTOP)
        time.sleep(STOP_S / 2)
        holder = seg.status()["mutex_holder"]
        if holder:
            stopped_holders += 1
            named += ("pid %d" % victim) in holder and "STOPPED" in holder
        time.sleep(STOP_S / 2)
        os.kill(victim, signal.SIGCONT)
    results = os.fdopen(r).read().split("\n")
    for pid in pids:
        os.waitpid(pid, 0)
    rows = [list(map(float, line.split())) for line in results if line]
    status = seg.status()
    seg.close()
    gpuyield.remove(tag)
    print("rounds %d, workers %d: calls %d, calls failed on the lock %d, calls longer than %.1f s %d (at most "
          "one per stop: the stopped one's own); stops that caught the mutex held %d, holder named %d; "
          "lock_timeouts %d"
          % (ROUNDS, WORKERS, sum(x[0] for x in rows), sum(x[1] for x in rows), 2 * DRAIN_TIMEOUT_MS / 1000,
             sum(x[2] for x in rows), stopped_holders, named, status["lock_timeouts"]))


if __name__ == "__main__":
    main()
