"""libgeek.so through ctypes, as the original experiment's scripts use it (no gpuyield import).

Each case runs its ctypes calls in a fresh python subprocess (stderr captured: libgeek.so writes
its messages to fd 2) or, for the drain, beside a cuda_worker under libcuinterpose_event.so with
the fake driver. Environment (tests/suites/45-compat.sh): BUILD (the build directory).
Suffixes start with "test" and carry this process's pid; every segment is removed afterwards.
"""

import itertools
import json
import os
import subprocess
import sys
import time

import pytest

BUILD = os.environ.get("BUILD") or os.path.join(os.path.dirname(__file__), "..", "..", "build")
LIB = os.path.join(BUILD, "lib")
GEEK = os.path.join(LIB, "libgeek.so")
EXPCONTROLLER = os.path.join(BUILD, "bin", "expcontroller")
UID = os.getuid()
_counter = itertools.count()


def shm_file(suffix):
    return "/dev/shm/gpuyield-%d-compat%s" % (UID, suffix)


def status(suffix):
    out = subprocess.run([EXPCONTROLLER, "status", "--name", "compat" + suffix, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def geek(script, timeout=60, env=None):
    """Run `script` in a fresh python with `lib` = ctypes.CDLL(libgeek.so); returns (rc, out, err)."""
    prelude = "import ctypes, sys, time\nlib = ctypes.CDLL(%r)\n" % GEEK
    proc = subprocess.run([sys.executable, "-c", prelude + script], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def suffix():
    s = "test-geek-%d-%d" % (os.getpid(), next(_counter))
    yield s
    if os.path.exists(shm_file(s)):
        subprocess.run([EXPCONTROLLER, "remove", "--name", "compat" + s], capture_output=True)


def test_exports_exactly_the_four_calls():
    out = subprocess.run(["nm", "-D", "--defined-only", GEEK], check=True, capture_output=True, text=True).stdout
    names = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    assert names == ["create_shared_mem_and_locks", "remove_shared_mem_and_locks", "setMem", "waitForEmptyGPU"]


def test_round_trip_create_job_remove(suffix):
    # Driven step by step to read the segment's state between the calls.
    prelude = "import ctypes, sys\nlib = ctypes.CDLL(%r)\ns = %r.encode()\n" % (GEEK, suffix)
    script = prelude + """
lib.create_shared_mem_and_locks(s); print('created', flush=True); sys.stdin.readline()
lib.setMem(1, s); lib.waitForEmptyGPU(); print('in', flush=True); sys.stdin.readline()
lib.setMem(1, s); print('in2', flush=True); sys.stdin.readline()
lib.setMem(0, s); print('out1', flush=True); sys.stdin.readline()
lib.setMem(0, s); print('out', flush=True); sys.stdin.readline()
lib.remove_shared_mem_and_locks(s); print('removed', flush=True)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        seen = []
        for step, jobs1 in [("created", 0), ("in", 1), ("in2", 2), ("out1", 1), ("out", 0)]:
            assert proc.stdout.readline().strip() == step
            st = status(suffix)
            assert st["segment"] == "/gpuyield-%d-compat%s" % (UID, suffix)
            seen.append(st["jobs"][1])
            assert st["jobs"][1] == jobs1, (step, st)
            assert sum(st["jobs"]) == jobs1
            proc.stdin.write("\n")
            proc.stdin.flush()
        assert proc.stdout.readline().strip() == "removed"
        assert proc.wait(timeout=30) == 0
        assert proc.stderr.read() == ""
        assert not os.path.exists(shm_file(suffix))
        assert seen == [0, 1, 2, 1, 0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_null_and_bad_input_print_one_line_and_never_crash(suffix):
    cases = [
        ("lib.create_shared_mem_and_locks(None)", "create_shared_mem_and_locks: suffix is NULL"),
        ("lib.remove_shared_mem_and_locks(None)", "remove_shared_mem_and_locks: suffix is NULL"),
        ("lib.setMem(1, None)", "setMem(1, ...): suffix is NULL"),
        ("lib.setMem(0, None)", "setMem(0, ...): suffix is NULL"),
        ("lib.setMem(1, b'a/b')", 'suffix "a/b" is invalid'),
        ("lib.setMem(1, b'')", 'suffix "" is invalid'),
        ("lib.create_shared_mem_and_locks(b'x' * 41)", "is invalid"),
        ("lib.setMem(2, b'%s')" % suffix, "setMem(2, ...): the value must be 1"),
        ("lib.setMem(1, b'nosuch%d')" % os.getpid(), "no segment /gpuyield-%d-compatnosuch%d" % (UID, os.getpid())),
        ("lib.setMem(0, b'nosuch%d')" % os.getpid(), "no segment"),
        ("lib.remove_shared_mem_and_locks(b'nosuch%d')" % os.getpid(), "remove_shared_mem_and_locks"),
    ]
    for call, want in cases:
        rc, out, err = geek(call + "\nlib.waitForEmptyGPU()\nprint('alive')")
        assert rc == 0 and out == "alive\n", (call, rc, err)
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("libgeek.so: ") and want in lines[0], (call, err)
    assert not os.path.exists(shm_file("nosuch%d" % os.getpid()))


def test_misuse_on_a_real_segment_is_reported(suffix):
    rc, out, err = geek("""
s = %r.encode()
lib.create_shared_mem_and_locks(s)
lib.create_shared_mem_and_locks(s)   # exists already
lib.setMem(0, s)                     # no job begun
lib.remove_shared_mem_and_locks(s)
lib.remove_shared_mem_and_locks(s)   # gone already
print('alive')
""" % suffix)
    assert rc == 0 and out == "alive\n", err
    lines = err.splitlines()
    assert len(lines) == 3, err
    assert "already exists" in lines[0]
    assert "setMem(0" in lines[1] and "no job" in lines[1]
    assert "remove_shared_mem_and_locks" in lines[2] and "no segment" in lines[2]
    assert not os.path.exists(shm_file(suffix))


def test_forked_child_begins_its_own_job(suffix):
    """The original harness creates the segment, then forks its workers (mp fork start method)."""
    rc, out, err = geek("""
import os, json, subprocess
s = %r.encode()
lib.create_shared_mem_and_locks(s)
pid = os.fork()
if pid == 0:
    lib.setMem(1, s); lib.waitForEmptyGPU()
    st = json.loads(subprocess.run([%r, 'status', '--name', 'compat' + s.decode(), '--json'],
                                   capture_output=True, text=True).stdout)
    mine = [p for p in st['processes'] if p['pid'] == os.getpid()]
    print(st['jobs'][1], len(mine), flush=True)
    lib.setMem(0, s)
    os._exit(0)
os.waitpid(pid, 0)
lib.remove_shared_mem_and_locks(s)
""" % (suffix, EXPCONTROLLER))
    assert rc == 0 and err == "", err
    assert out.split() == ["1", "1"]  # the child's job, in the child's own slot


def test_wait_for_empty_gpu_drains_a_low_priority_worker(suffix, tmp_path):
    """A worker of the original kind (libcuinterpose_event.so, SUFFIX, ID=0, EVENT_GROUP_SIZE)
    runs 5 ms kernels on the fake driver; a high-priority script calls setMem(1) /
    waitForEmptyGPU() / setMem(0): no low kernel may execute between the end of the wait and
    setMem(0), and the worker must run before and after."""
    log = tmp_path / "fake.log"
    # The segment is held by a live `serve` (a segment whose creator is dead may be removed by an
    # `expcontroller clean` of a test run beside this one).
    serve = subprocess.Popen([EXPCONTROLLER, "serve", "--name", "compat" + suffix], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not os.path.exists(shm_file(suffix)) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert os.path.exists(shm_file(suffix))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUYIELD_")}
    env.update(LD_PRELOAD=os.path.join(LIB, "libcuinterpose_event.so"), LD_LIBRARY_PATH=os.path.join(BUILD, "fakecuda"),
               FAKECUDA_LOG=str(log), SUFFIX=suffix, ID="0", EVENT_GROUP_SIZE="2")
    low = subprocess.Popen([os.path.join(BUILD, "tests", "hooks", "cuda_worker"), "spin", "5000", "8", "4"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (not log.exists() or log.stat().st_size < 200):
            time.sleep(0.05)
        rc, out, err = geek("""
s = %r.encode()
times = []
for j in range(3):
    time.sleep(0.2)
    lib.setMem(1, s)
    t0 = time.monotonic_ns()
    lib.waitForEmptyGPU()
    t1 = time.monotonic_ns()
    time.sleep(0.15)     # the high-priority job
    t2 = time.monotonic_ns()
    lib.setMem(0, s)
    times.append((t0, t1, t2))
print(times)
""" % suffix)
        assert rc == 0 and err == "", err
        jobs = eval(out)
        lout, lerr = low.communicate(timeout=60)
        assert low.returncode == 0, lerr
    finally:
        if low.poll() is None:
            low.kill()
            low.wait()
        serve.terminate()  # removes the segment
        serve.wait()
    kernels = []
    for line in log.read_text().splitlines():
        f = line.split()
        if f[6] == "kernel" and int(f[0]) == low.pid:
            kernels.append((int(f[3]), int(f[4])))  # start, end
    assert len(kernels) > 50
    waited = 0
    for t0, t1, t2 in jobs:
        inside = [k for k in kernels if k[0] < t2 and k[1] > t1]
        assert inside == [], "low-priority kernels ran inside a high-priority job: %r" % inside[:5]
        # the work in flight at setMem(1) ran to its end before waitForEmptyGPU returned
        waited += any(k[0] < t0 < k[1] for k in kernels)
        assert any(k[1] <= t0 for k in kernels) and any(k[0] >= t2 for k in kernels)
    assert waited >= 1, "no job found low-priority work in flight: the test saw no drain"
    counters = [line for line in lout.splitlines() if line.startswith("counters")]
    assert counters and " drains=0" not in counters[0], lout
