"""Tests of the gpuyield Python extension on real segments with real processes.

Every segment tag starts with "test" (or "compattest" for the libgeek layer, whose tags are
"compat" + suffix) and carries this process's pid; fixtures remove every segment and kill every
helper process, also when a test fails. Time bounds are seconds-scale on purpose: this runs
beside parallel builds on 2 cores.
"""

import errno
import gc
import itertools
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import gpuyield

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from counter_table import table_counters  # noqa: E402

UID = os.getuid()
_counter = itertools.count()

# A helper process driven line by line over stdin: each command answers one line, "ok ..." or
# "err <ExceptionType> <errno> <message>". It stands in for a worker (begin/end) or for a hooked
# lower-priority process (inflight: a kernel is "queued"; ack: its helper thread reports drained;
# waitlaunch: a launch blocked behind a higher job).
AGENT = r"""
import json, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import gpuyield
seg = gpuyield.connect(sys.argv[1])
print("ready", flush=True)
for line in sys.stdin:
    cmd, *args = line.split()
    try:
        if cmd == "begin":
            job = seg.begin(int(args[0]))
            out = "%s %s %d" % (job.drained, job.timed_out, job.wait_ns)
        elif cmd == "end":
            seg.end(int(args[0])); out = ""
        elif cmd == "register":
            seg.register(); out = str(seg.priority)
        elif cmd == "inflight":
            seg._mark_inflight(); out = ""
        elif cmd == "ack":
            out = str(seg._ack_drain(float(args[0])))
        elif cmd == "allowed":
            out = str(seg.launch_allowed(int(args[0])))
        elif cmd == "waitlaunch":
            out = str(seg._wait_launch_allowed())
        elif cmd == "setmem":
            gpuyield.setMem(int(args[0]), args[1].encode()); out = ""
        elif cmd == "waitempty":
            gpuyield.waitForEmptyGPU(); out = ""
        elif cmd == "pin":  # a daemon thread keeps seg referenced: it is never deallocated at exit
            import threading, time
            threading.Thread(target=lambda s=seg: time.sleep(3600), daemon=True).start(); out = ""
        elif cmd == "exit":
            print("ok", flush=True); break
        else:
            out = "unknown command " + cmd
        print("ok " + out, flush=True)
    except Exception as e:
        print("err %s %s %s" % (type(e).__name__, getattr(e, "errno", None), e), flush=True)
"""


def child_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.pop("GPUYIELD_PRIORITY", None)
    env.pop("GPUYIELD_MODEL", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Agent:
    def __init__(self, tag, **env):
        self.proc = subprocess.Popen([sys.executable, "-c", AGENT, tag], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=child_env(**env))
        self.pid = self.proc.pid
        first = self.proc.stdout.readline()
        assert first.strip() == "ready", "agent did not start: %r %s" % (first, self.proc.stderr.read())

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def reply(self, timeout=15.0):
        """The next answer line; fails the test after `timeout` seconds."""
        box = []
        reader = threading.Thread(target=lambda: box.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        assert box, "agent %d gave no answer within %.0f s" % (self.pid, timeout)
        line = box[0].strip()
        assert line, "agent %d died: %s" % (self.pid, self.proc.stderr.read())
        return line

    def __call__(self, command, timeout=15.0):
        self.send(command)
        line = self.reply(timeout)
        assert line.startswith("ok"), "agent %r -> %s" % (command, line)
        return line[3:]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()


@pytest.fixture
def tags():
    """Unique tags; every segment they name is removed afterwards."""
    made = []

    def new(prefix="test"):
        tag = "%s-pyext-%d-%d" % (prefix, os.getpid(), next(_counter))
        made.append(tag)
        return tag

    yield new
    for tag in made:
        try:
            gpuyield.remove(tag)
        except gpuyield.Error as e:
            assert e.errno == errno.ENOENT


@pytest.fixture
def agents():
    """Starts helper processes; kills every one of them afterwards."""
    started = []

    def start(tag, **env):
        agent = Agent(tag, **env)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.kill()


@pytest.fixture
def segment(tags):
    """A fresh segment with a long drain timeout (waits end by drain, not by timeout)."""
    seg = gpuyield.create(tags(), drain_timeout_ms=60000)
    yield seg
    seg.close()


def shm_path(seg_or_name):
    name = seg_or_name if isinstance(seg_or_name, str) else seg_or_name.name
    return "/dev/shm" + name


def wait_until(predicate, timeout=15.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out after %.0f s waiting for %s" % (timeout, what)
        time.sleep(0.02)


def jobs(seg):
    return seg.status()["jobs"]


# ---- help and documentation ----------------------------------------------------------------------


def test_help_explains_each_call():
    out = subprocess.run([sys.executable, "-c", "import gpuyield; help(gpuyield)"], env=child_env(PAGER="cat"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout.replace("'", "")  # postponed annotations show as strings on some versions
    for name in ["connect(name=None)", "create(name=None, drain_timeout_ms=None)", "remove(name)",
                 "class Segment", "job(self, /, priority, device=None)", "begin(self, /, priority, wait=True, device=None)",
                 "end(self, priority, /)", "status(self, /)", "launch_allowed(self, priority, /)", "close(self, /)",
                 "class Job", "wait_ns", "drained", "timed_out", "class Error", "class ArgumentError",
                 "create_shared_mem_and_locks(suffix: str | bytes | int) -> None",
                 "setMem(value: int, suffix: str | bytes | int) -> None", "waitForEmptyGPU() -> None",
                 "remove_shared_mem_and_locks(suffix: str | bytes | int) -> None", "GPUYIELD_PRIORITY", "GPUYIELD_SHM"]:
        assert name in text, "help(gpuyield) does not mention %r" % name
    for name in gpuyield.__all__:
        obj = getattr(gpuyield, name)
        if callable(obj):
            assert obj.__doc__ and len(obj.__doc__) > 40, "%s has no real docstring" % name
    for cls in (gpuyield.Segment, gpuyield.Job):
        for attr, value in vars(cls).items():
            if not attr.startswith("__"):
                assert getattr(value, "__doc__", None), "%s.%s has no docstring" % (cls.__name__, attr)


# ---- connect / create / remove -------------------------------------------------------------------


def test_create_connect_remove_lifecycle(tags):
    tag = tags()
    seg = gpuyield.create(tag, drain_timeout_ms=1500)
    assert seg.name == "/gpuyield-%d-%s" % (UID, tag) == gpuyield.segment_name(tag)
    assert os.path.exists(shm_path(seg))
    assert oct(os.stat(shm_path(seg)).st_mode & 0o777) == oct(0o600)
    assert seg.drain_timeout_ms == 1500.0
    other = gpuyield.connect(seg.name)  # a full name works as well as a tag
    assert other.name == seg.name and not other.registered and other.priority is None
    other.close()
    assert other.closed and not seg.closed
    seg.close()
    seg.close()  # idempotent
    assert os.path.exists(shm_path(seg)), "close() must not remove the segment"
    gpuyield.remove(tag)
    assert not os.path.exists(shm_path(gpuyield.segment_name(tag)))


def test_connect_defaults_to_gpuyield_shm(tags):
    tag = tags()
    with gpuyield.create(tag):
        code = "import gpuyield; s = gpuyield.connect(); print(s.name)"
        out = subprocess.run([sys.executable, "-c", code], env=child_env(GPUYIELD_SHM=tag), capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == gpuyield.segment_name(tag)


def test_registration_priority_from_environment(tags, agents):
    tag = tags()
    with gpuyield.create(tag) as seg:
        assert agents(tag, GPUYIELD_PRIORITY=3)("register") == "3"
        assert agents(tag)("register") == "0"
        bad = agents(tag, GPUYIELD_PRIORITY="9")
        bad.send("begin 1")
        answer = bad.reply()
        assert answer.startswith("err ArgumentError 22") and "GPUYIELD_PRIORITY='9'" in answer
        for value in ["", " 3", "+3", "3 ", "0x1"]:  # the hooks library refuses these too
            bad = agents(tag, GPUYIELD_PRIORITY=value)
            bad.send("begin 1")
            answer = bad.reply()
            assert answer.startswith("err ArgumentError 22") and "GPUYIELD_PRIORITY='%s'" % value in answer
        assert sorted(p["priority"] for p in seg.status()["processes"]) == [0, 3]


def test_lazy_registration_on_first_begin(segment):
    assert not segment.registered
    assert segment.status()["processes"] == []
    with segment.job(2):
        assert segment.registered and segment.priority == 0
        (proc,) = segment.status()["processes"]
        assert proc["pid"] == os.getpid() and proc["priority"] == 0 and proc["state"] == "running"
    segment.close()
    assert not segment.registered


def test_version_is_the_projects():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "VERSION")) as f:
        assert gpuyield.__version__ == f.read().strip()


def test_hook_path_is_the_hook_beside_the_package():
    """Imported from a build's python/ (as this suite does), hook_path() is that build's
    lib/libgpuyield.so; `python3 -m gpuyield hook-path` prints the same (pip's install is suite 85's)."""
    path = gpuyield.hook_path()
    package = os.path.dirname(os.path.abspath(gpuyield.__file__))
    if os.path.exists(os.path.join(package, "lib", "libgpuyield.so")):
        assert path == os.path.join(package, "lib", "libgpuyield.so")  # an installed package
    else:
        assert path == os.path.normpath(os.path.join(package, "..", "..", "lib", "libgpuyield.so"))
    with open(path, "rb") as f:
        assert f.read(4) == b"\x7fELF"
    out = subprocess.run([sys.executable, "-m", "gpuyield", "hook-path"], env=child_env(), capture_output=True,
                         text=True, timeout=60)
    assert (out.returncode, out.stdout, out.stderr) == (0, path + "\n", "")
    out = subprocess.run([sys.executable, "-m", "gpuyield", "hook-paht"], env=child_env(), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1, out
    assert "usage: python3 -m gpuyield hook-path" in out.stderr


def test_hook_path_names_what_to_do_without_a_hook(tmp_path):
    """A package copied alone (no lib/ beside it, no build around it): one line saying what to do."""
    import shutil

    package = os.path.dirname(os.path.abspath(gpuyield.__file__))
    copy = tmp_path / "a" / "b" / "c" / "gpuyield"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("lib", "bin", "fakecuda", "__pycache__"))
    out = subprocess.run([sys.executable, "-m", "gpuyield", "hook-path"], capture_output=True, text=True, timeout=60,
                         env=dict(child_env(), PYTHONPATH=str(copy.parent)), cwd=str(tmp_path))
    assert out.returncode == 1 and out.stdout == "" and out.stderr.count("\n") == 1, out
    assert "no libgpuyield.so beside the package" in out.stderr and "pip install ." in out.stderr


def test_status_has_timestamp_and_process_names(segment, agents):
    import datetime
    import re

    model = agents(segment.name, GPUYIELD_MODEL='resnet"50 b1')  # a quote: escaped in the JSON
    model("begin 1")
    plain = agents(segment.name)
    plain("begin 0")
    status = segment.status()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", status["timestamp"])
    taken = datetime.datetime.strptime(status["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ")
    assert abs((datetime.datetime.utcnow() - taken).total_seconds()) < 600
    names = {p["pid"]: p["name"] for p in status["processes"]}
    with open("/proc/%d/comm" % plain.pid) as f:
        comm = f.read().strip()
    assert names == {model.pid: 'resnet"50 b1', plain.pid: comm}
    assert {p["pid"]: p["name"] for p in json.loads(segment.status_json())["processes"]} == names


# ---- begin / end semantics -----------------------------------------------------------------------


def test_higher_jobs_block_lower_launches_across_processes(segment, agents):
    a, b, observer = agents(segment.name), agents(segment.name), agents(segment.name)

    def allowed():
        return [observer("allowed %d" % p) == "True" for p in range(gpuyield.LEVELS)]

    assert allowed() == [True] * 8
    a("begin 2")
    assert allowed() == [False, False] + [True] * 6
    assert [segment.launch_allowed(p) for p in range(8)] == [False, False] + [True] * 6
    b("begin 4")
    assert allowed() == [False] * 4 + [True] * 4
    assert jobs(segment) == [0, 0, 1, 0, 1, 0, 0, 0]
    a("end 2")
    assert allowed() == [False] * 4 + [True] * 4, "lower levels resume only when no higher job remains"
    b("end 4")
    assert allowed() == [True] * 8
    assert jobs(segment) == [0] * 8


def test_several_jobs_at_one_level_overlap(segment, agents):
    a, b = agents(segment.name), agents(segment.name)
    a("begin 1")
    b("begin 1")
    assert jobs(segment)[1] == 2
    a("end 1")
    assert not segment.launch_allowed(0), "one job of level 1 is still in progress"
    b("end 1")
    assert segment.launch_allowed(0)


def test_nested_begins_are_counted(segment):
    first = segment.begin(1)
    second = segment.begin(1)
    assert first.active and second.active and first.drained and not first.timed_out
    assert jobs(segment)[1] == 2
    segment.end(1)
    assert jobs(segment)[1] == 1 and not segment.launch_allowed(0)
    assert first.active and not second.active, "end() ends the most recent begin() first"
    segment.end(1)
    assert jobs(segment)[1] == 0 and segment.launch_allowed(0)
    with pytest.raises(gpuyield.ArgumentError, match=r"end\(1\) without a matching begin\(1\)") as info:
        segment.end(1)
    assert info.value.errno == errno.EINVAL and isinstance(info.value, ValueError)


def test_end_only_ends_jobs_of_its_level(segment):
    segment.begin(3)
    with pytest.raises(gpuyield.ArgumentError):
        segment.end(2)
    assert jobs(segment)[3] == 1
    segment.end(3)


def test_with_counts_out_on_exception(segment):
    with pytest.raises(RuntimeError, match="boom"):
        with segment.job(3) as job:
            assert job.active and jobs(segment)[3] == 1 and not segment.launch_allowed(2)
            raise RuntimeError("boom")
    assert not job.active
    assert jobs(segment) == [0] * 8 and segment.launch_allowed(2)
    # nested blocks, the inner one failing: the outer job stays in until its own block ends
    with segment.job(2) as outer:
        with pytest.raises(KeyError):
            with segment.job(5):
                raise KeyError("x")
        assert outer.active and jobs(segment) == [0, 0, 1, 0, 0, 0, 0, 0]
    assert jobs(segment) == [0] * 8


def test_job_object_reuse_rules(segment):
    job = segment.job(1)
    assert not job.active and job.wait_ns == 0
    with pytest.raises(gpuyield.ArgumentError, match="not in progress"):
        job.__exit__(None, None, None)
    with job:
        with pytest.raises(gpuyield.Error, match="already in progress") as info:
            job.__enter__()
        assert info.value.errno == errno.EBUSY
    with job:  # a finished job may be entered again
        assert jobs(segment)[1] == 1
    assert jobs(segment)[1] == 0


def test_wait_reports_drained_when_nothing_in_flight(segment, agents):
    low = agents(segment.name)
    low("register")  # registered but nothing in flight: must not delay the begin
    with segment.job(1) as job:
        assert job.drained and not job.timed_out
        assert 0 < job.wait_ns < 5e9
    assert segment.status()["drain_timeouts"] == 0


def test_wait_ends_when_lower_process_acknowledges_drain(segment, agents):
    low = agents(segment.name)
    low("inflight")
    low.send("ack 30")  # its helper now waits for a drain request
    with segment.job(1) as job:
        assert job.drained and not job.timed_out
        assert job.wait_ns < 30e9
    assert low.reply() == "ok True"
    (proc,) = [p for p in segment.status()["processes"] if p["pid"] == low.pid]
    assert proc["drains"] == 1 and proc["inflight"] is False


def test_wait_times_out_when_lower_process_never_drains(tags, agents):
    with gpuyield.create(tags(), drain_timeout_ms=300) as seg:
        agents(seg.name)("inflight")
        started = time.monotonic()
        with seg.job(1) as job:
            assert job.timed_out and not job.drained
            assert job.wait_ns >= 300e6
        assert time.monotonic() - started < 10
        status = seg.status()
        assert status["drain_timeouts"] == 1
        (me,) = [p for p in status["processes"] if p["pid"] == os.getpid()]
        assert me["drain_timeouts"] == 1


def test_begin_without_wait_then_wait(tags, agents):
    with gpuyield.create(tags(), drain_timeout_ms=300) as seg:
        agents(seg.name)("inflight")
        job = seg.begin(1, wait=False)
        assert job.active and not job.drained and not job.timed_out and job.wait_ns == 0
        assert not seg.launch_allowed(0), "counted in at once, before any wait"
        job.wait()
        assert job.timed_out and job.wait_ns >= 300e6
        job.wait()  # already waited: returns at once
        seg.end(1)
        with pytest.raises(gpuyield.ArgumentError, match="not in progress"):
            job.wait()


# ---- Ctrl-C, threads, crashes --------------------------------------------------------------------

WAITER = r"""
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import gpuyield
seg = gpuyield.connect(sys.argv[1])
print("waiting", flush=True)
try:
%s
except KeyboardInterrupt:
    print("interrupted", seg.status()["jobs"][1], flush=True)
    sys.exit(42)
"""


@pytest.mark.parametrize("begin", [
    "    with seg.job(1):\n        print('entered', flush=True)",
    "    seg.begin(1)\n    print('entered', flush=True)",
], ids=["with", "begin"])
def test_ctrl_c_while_waiting_counts_the_job_out(segment, agents, begin):
    agents(segment.name)("inflight")  # a lower process that never acknowledges: the begin waits
    code = WAITER % begin
    waiter = subprocess.Popen([sys.executable, "-c", code, segment.name], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        assert waiter.stdout.readline().strip() == "waiting"
        wait_until(lambda: jobs(segment)[1] == 1, what="the waiter to count its job in")
        time.sleep(0.5)
        assert waiter.poll() is None, "the begin should still be waiting for the drain"
        sent = time.monotonic()
        waiter.send_signal(signal.SIGINT)
        rc = waiter.wait(timeout=20)
        elapsed = time.monotonic() - sent
        out, err = waiter.communicate()
        assert rc == 42, "rc %d, stdout %r, stderr %r" % (rc, out, err)
        assert out.strip() == "interrupted 0", "the interrupted job must be counted out: %r" % out
        assert elapsed < 5, "KeyboardInterrupt took %.1f s" % elapsed
        assert jobs(segment) == [0] * 8 and segment.launch_allowed(0)
    finally:
        if waiter.poll() is None:
            waiter.kill()
            waiter.communicate()


def test_other_threads_run_while_waiting_and_close_refuses(segment, agents):
    low = agents(segment.name)
    low("inflight")
    result = {}

    def run():
        with segment.job(1) as job:
            result["drained"] = job.drained

    worker = threading.Thread(target=run)
    worker.start()
    try:
        # this thread keeps running Python while the other waits: the GIL is released
        wait_until(lambda: jobs(segment)[1] == 1, what="the job to be counted in")
        with pytest.raises(gpuyield.Error, match="another thread") as info:
            segment.close()
        assert info.value.errno == errno.EBUSY and worker.is_alive()
    finally:
        assert low("ack 30") == "True"  # the drain ends the other thread's wait
        worker.join(30)
    assert not worker.is_alive() and result == {"drained": True}


def test_process_killed_inside_a_job_is_reaped(segment, agents):
    doomed, low = agents(segment.name), agents(segment.name)
    doomed("begin 3")
    low("register")
    low.send("waitlaunch")  # a priority-0 launch: blocks behind the job of level 3
    time.sleep(0.5)
    assert low.proc.poll() is None and jobs(segment)[3] == 1
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.proc.wait()
    answer = low.reply(timeout=15)  # the blocked waiter reaps the dead process and goes on
    assert answer.startswith("ok ") and int(answer[3:]) > 0
    status = segment.status()
    assert status["jobs"] == [0] * 8 and status["reaped"] == 1
    assert doomed.pid not in [p["pid"] for p in status["processes"]]


def test_normal_exit_deregisters_at_once(tags, agents):
    """issue 19: a process that exits normally with work marked in flight frees its slot at exit:
    the next job drains at once, with nothing reaped and no drain timeout."""
    with gpuyield.create(tags(), drain_timeout_ms=2000) as seg:
        low = agents(seg.name)
        low("inflight")
        low("pin")  # so that no deallocation at exit frees the slot: only the exit handler does
        low.send("exit")
        assert low.reply() == "ok"
        assert low.proc.wait(timeout=15) == 0
        status = seg.status()
        assert low.pid not in [p["pid"] for p in status["processes"]] and status["reaped"] == 0
        with seg.job(1) as job:
            assert job.drained and not job.timed_out
        status = seg.status()
        assert status["drain_timeouts"] == 0 and status["reaped"] == 0


def test_begin_reaps_a_dead_lower_process_while_it_waits(tags, agents):
    """issue 19: begin() waits in 50 ms slices; the reap must still come every 100 ms (each slice
    used to restart the timer, so a killed lower process cost the whole drain timeout)."""
    with gpuyield.create(tags(), drain_timeout_ms=2000) as seg:
        low = agents(seg.name)
        low("inflight")
        os.kill(low.pid, signal.SIGKILL)
        low.proc.wait()
        with seg.job(1) as job:
            assert job.drained and not job.timed_out
        status = seg.status()
        assert status["drain_timeouts"] == 0 and status["reaped"] == 1


def test_reap_counts_out_a_dead_job_holder(segment, agents):
    doomed = agents(segment.name)
    doomed("begin 2")
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.proc.wait()
    assert jobs(segment)[2] == 1, "nobody has reaped yet"
    assert segment.reap() == 1
    assert jobs(segment)[2] == 0 and segment.launch_allowed(1)
    assert segment.reap() == 0


def _fork_child(seg, queue):
    job = seg.begin(2)
    queue.put((seg.registered, job.active, seg.status()["jobs"]))
    seg.end(2)
    seg.close()


def test_forked_child_registers_on_its_own(segment):
    with segment.job(1):
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_fork_child, args=(segment, queue))
        child.start()
        registered, active, child_jobs = queue.get(timeout=30)
        child.join(30)
        assert child.exitcode == 0
        assert registered and active and child_jobs == [0, 1, 1, 0, 0, 0, 0, 0]
        pids = [p["pid"] for p in segment.status()["processes"]]
        assert pids == [os.getpid()], "the child unregistered itself only, on close"
        assert jobs(segment) == [0, 1, 0, 0, 0, 0, 0, 0], "the parent's job is still in"
    assert jobs(segment) == [0] * 8


# ---- status --------------------------------------------------------------------------------------



PROC_KEYS = ["pid", "name", "priority", "state", "inflight"] + table_counters() + ["partition", "devices"]


def test_counter_table_is_what_status_lists(segment, agents):
    counters = table_counters()
    assert counters[:2] == ["launches", "graph_launches"] and counters[-3:] == ["partition_copies", "auto_jobs", "auto_job_ns"], counters
    agents(segment.name, GPUYIELD_PRIORITY=1)("begin 2")
    (proc,) = segment.status()["processes"]
    assert list(proc)[5:] == counters + ["partition", "devices"]
    (proc,) = json.loads(segment.status_json())["processes"]
    assert list(proc)[5:] == counters + ["partition", "devices"]
    build = os.environ.get("BUILD")
    tool = os.path.join(build, "bin", "expcontroller") if build else None
    if tool and os.access(tool, os.X_OK):
        out = subprocess.run([tool, "status", "--json", "--name", segment.name], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        (proc,) = json.loads(out.stdout)["processes"]
        assert list(proc)[5:] == counters + ["partition", "devices"]


def test_a_process_with_the_hook_and_the_extension_is_one_row(segment):
    """issue 28: a process registers a slot for its hook and another for the extension (every
    marking HP worker); status() and status_json() show it once, its counters summed, as
    `expcontroller status` does (service/status_merge.c)."""
    build = os.environ.get("BUILD", "")
    fake, hook = os.path.join(build, "fakecuda"), os.path.join(build, "lib", "libgpuyield.so")
    if not (os.path.exists(os.path.join(fake, "libcuda.so.1")) and os.path.exists(hook)):
        pytest.skip("no fake driver or hook in $BUILD (set BUILD to a build directory)")
    code = (
        "import ctypes, sys, gpuyield\n"
        "cuda = ctypes.CDLL('libcuda.so.1')\n"
        "ctx, dev, mod, fn = ctypes.c_void_p(), ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()\n"
        "assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0\n"
        "assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cuda.cuCtxSetCurrent(ctx) == 0\n"
        "assert cuda.cuModuleLoadData(ctypes.byref(mod), b'm') == 0\n"
        "assert cuda.cuModuleGetFunction(ctypes.byref(fn), mod, b'spin_us:10') == 0\n"
        "seg = gpuyield.connect(sys.argv[1])\n"
        "for _ in range(5):\n"
        "    assert cuda.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 0\n"
        "with seg.job(1):\n"
        "    for _ in range(7):\n"
        "        assert cuda.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 0\n"
        "    cuda.cuCtxSynchronize()\n"
        "print('done', flush=True)\n"
        "sys.stdin.readline()\n")
    child = subprocess.Popen([sys.executable, "-c", code, segment.name], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=child_env(LD_LIBRARY_PATH=fake, LD_PRELOAD=hook, GPUYIELD_SHM=segment.name,
                                           GPUYIELD_PRIORITY=1, GPUYIELD_MODEL="hp_worker"))
    try:
        assert child.stdout.readline().strip() == "done", child.stderr.read()
        slots = [p for p in segment._status_slots()["processes"] if p["pid"] == child.pid]
        assert len(slots) == 2 and sum(p["launches"] for p in slots) == 12, slots   # the hook's and ours
        # expcontroller's row of it (merged there), then ours: the same one row.
        tool = subprocess.run([os.path.join(build, "bin", "expcontroller"), "status", "--json", "--name",
                               segment.name], capture_output=True, text=True, timeout=60)
        assert tool.returncode == 0, tool.stderr
        from_tool = [p for p in json.loads(tool.stdout)["processes"] if p["pid"] == child.pid]
        status = segment.status()
        mine = [p for p in status["processes"] if p["pid"] == child.pid]
        assert len(mine) == 1, mine
        (proc,) = mine
        assert proc["name"] == "hp_worker" and proc["priority"] == 1, proc
        assert proc["launches"] == 12, proc           # the hook's slot counted them
        assert proc["devices"] == [0], proc
        assert from_tool == [proc], (from_tool, proc)
        (from_json,) = [p for p in json.loads(segment.status_json())["processes"] if p["pid"] == child.pid]
        assert from_json == proc
    finally:
        child.stdin.close()
        child.wait(timeout=60)
        child.stdout.close(), child.stderr.close()


def without_timestamp(status):
    """Two snapshots taken one after the other differ in their time only."""
    return {k: v for k, v in status.items() if k != "timestamp"}


def test_status_has_the_fields_of_the_json_status(segment, agents):
    agents(segment.name, GPUYIELD_PRIORITY=1)("inflight")
    segment.begin(4, wait=False)  # the agent never drains: do not wait for it
    status = segment.status()
    assert list(status) == ["segment", "timestamp", "policy", "mps", "jobs", "job_epoch", "drain_timeouts", "reaped",
                            "lock_timeouts", "mutex_holder", "devices", "processes"]
    assert status["lock_timeouts"] == 0 and status["mutex_holder"] is None
    assert status["segment"] == segment.name and status["job_epoch"] == 1
    assert status["policy"] == "drain" and status["mps"] is False
    assert [list(p) for p in status["processes"]] == [PROC_KEYS, PROC_KEYS]
    assert without_timestamp(json.loads(segment.status_json())) == without_timestamp(status)
    segment.end(4)


def test_every_policy_of_the_table_reaches_status(tags):
    assert gpuyield.POLICIES[:2] == ("drain", "corun")
    build = os.environ.get("BUILD")
    tool = os.path.join(build, "bin", "expcontroller") if build else None
    if not tool or not os.access(tool, os.X_OK):
        pytest.skip("no expcontroller in $BUILD/bin (set BUILD to a build directory to compare)")
    for policy in gpuyield.POLICIES:
        tag = tags()
        out = subprocess.run([tool, "create", "--name", tag, "--policy", policy], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        seg = gpuyield.connect(tag)
        try:
            assert seg.status()["policy"] == policy
        finally:
            seg.close()
    out = subprocess.run([tool, "create", "--name", tags(), "--policy", "fast"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2
    # one line: the policies the table names, then the pointer to --help every usage error ends with
    assert out.stderr.splitlines() == ["expcontroller: --policy takes %s or %s, not 'fast' (expcontroller --help lists "
                                       "the commands and options)" % (", ".join(gpuyield.POLICIES[:-1]),
                                                                      gpuyield.POLICIES[-1])]


def test_status_equals_expcontroller_status_json(segment, agents):
    build = os.environ.get("BUILD")
    tool = os.path.join(build, "bin", "expcontroller") if build else None
    if not tool or not os.access(tool, os.X_OK):
        pytest.skip("no expcontroller in $BUILD/bin (set BUILD to a build directory to compare)")
    agents(segment.name, GPUYIELD_PRIORITY=2)("begin 5")
    out = subprocess.run([tool, "status", "--json", "--name", segment.name], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert without_timestamp(json.loads(out.stdout)) == without_timestamp(segment.status())


# ---- the libgeek compatibility layer -------------------------------------------------------------


@pytest.fixture
def compat_suffix():
    suffix = "test-pyext-%d-%d" % (os.getpid(), next(_counter))
    yield suffix
    try:
        gpuyield.remove_shared_mem_and_locks(suffix)
    except gpuyield.Error as e:
        assert e.errno == errno.ENOENT


def test_compat_suffix_maps_to_tag():
    assert gpuyield.compat_tag("3") == gpuyield.compat_tag(b"3") == gpuyield.compat_tag(3) == "compat3"
    with pytest.raises(gpuyield.ArgumentError):
        gpuyield.compat_tag("a/b")
    with pytest.raises(gpuyield.ArgumentError):
        gpuyield.compat_tag(b"\xff")
    with pytest.raises(TypeError):
        gpuyield.compat_tag(3.5)


def test_compat_create_setmem_wait_remove(compat_suffix, agents):
    gpuyield.create_shared_mem_and_locks(compat_suffix)
    name = gpuyield.segment_name("compat" + compat_suffix)
    assert os.path.exists(shm_path(name))
    with pytest.raises(gpuyield.Error) as info:
        gpuyield.create_shared_mem_and_locks(compat_suffix)
    assert info.value.errno == errno.EEXIST
    observer = agents(name)
    gpuyield.setMem(1, compat_suffix.encode())  # the original passed bytes
    assert observer("allowed 0") == "False", "setMem(1) counts the job in at once"
    gpuyield.waitForEmptyGPU()  # nothing in flight: returns at once
    gpuyield.setMem(0, compat_suffix)
    assert observer("allowed 0") == "True"
    with pytest.raises(gpuyield.ArgumentError, match="without a matching begin"):
        gpuyield.setMem(0, compat_suffix)
    with pytest.raises(gpuyield.ArgumentError, match="use 1"):
        gpuyield.setMem(2, compat_suffix)
    with pytest.raises(TypeError):
        gpuyield.setMem("1", compat_suffix)
    gpuyield.waitForEmptyGPU()  # no job pending: returns at once
    gpuyield.remove_shared_mem_and_locks(compat_suffix)
    assert not os.path.exists(shm_path(name))
    with pytest.raises(gpuyield.Error) as info:
        gpuyield.remove_shared_mem_and_locks(compat_suffix)
    assert info.value.errno == errno.ENOENT
    with pytest.raises(gpuyield.Error) as info:
        gpuyield.setMem(1, compat_suffix)
    assert info.value.errno == errno.ENOENT


def test_compat_wait_for_empty_gpu_waits_for_the_drain(compat_suffix, agents):
    gpuyield.create_shared_mem_and_locks(compat_suffix)
    name = gpuyield.segment_name("compat" + compat_suffix)
    worker, low = agents(name), agents(name)  # worker: a script written for libgeek.so
    low("inflight")
    worker("setmem 1 " + compat_suffix)
    assert low("allowed 0") == "False"
    low.send("ack 30")
    worker("waitempty", timeout=30)  # returns once the low process acknowledged its drain
    assert low.reply() == "ok True"
    worker("setmem 0 " + compat_suffix)
    assert low("allowed 0") == "True"
    status = gpuyield.connect(name).status()
    assert status["drain_timeouts"] == 0 and status["jobs"] == [0] * 8


# ---- errors --------------------------------------------------------------------------------------


def test_connect_errors(tags):
    missing = tags()
    with pytest.raises(gpuyield.Error, match="no segment .*start the experiment") as info:
        gpuyield.connect(missing)
    assert info.value.errno == errno.ENOENT and isinstance(info.value, OSError)
    for bad in ["bad/name", "", "x" * 41, "a\0b", "..", "/gpuyield-x-tag"]:
        with pytest.raises(gpuyield.ArgumentError) as info:
            gpuyield.connect(bad)
        assert info.value.errno == errno.EINVAL and isinstance(info.value, ValueError)
    for wrong in [123, b"bytes", ["x"]]:
        with pytest.raises(TypeError, match="segment name must be a str"):
            gpuyield.connect(wrong)


def test_connect_refuses_a_corrupt_segment(tags):
    tag = tags()
    path = shm_path(gpuyield.segment_name(tag))
    with open(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600), "wb") as f:
        f.write(b"\x00" * 100)
    with pytest.raises(gpuyield.Error, match="100 bytes, expected") as info:
        gpuyield.connect(tag)
    assert info.value.errno == errno.EPROTO


def test_create_errors_leave_nothing_behind(tags):
    tag = tags()
    for bad in [0, -5, float("nan"), 1e12]:
        with pytest.raises(gpuyield.ArgumentError, match="drain_timeout_ms"):
            gpuyield.create(tag, drain_timeout_ms=bad)
    for wrong in ["100", True]:
        with pytest.raises(TypeError, match="drain_timeout_ms"):
            gpuyield.create(tag, drain_timeout_ms=wrong)
    assert not os.path.exists(shm_path(gpuyield.segment_name(tag)))
    with gpuyield.create(tag):
        with pytest.raises(gpuyield.Error, match="already exists") as info:
            gpuyield.create(tag)
        assert info.value.errno == errno.EEXIST


def test_remove_errors(tags):
    with pytest.raises(gpuyield.Error) as info:
        gpuyield.remove(tags())
    assert info.value.errno == errno.ENOENT
    with pytest.raises(TypeError):
        gpuyield.remove(None)
    with pytest.raises(gpuyield.ArgumentError):
        gpuyield.remove("no/slash")


def test_priority_errors(segment):
    calls = [segment.job, segment.begin, segment.end, segment.launch_allowed, segment.register]
    for call in calls:
        for bad in [-1, 8, 99, 2 ** 100]:
            with pytest.raises(gpuyield.ArgumentError, match="out of range: use 0..7|huge int") as info:
                call(bad)
            assert info.value.errno == errno.EINVAL
        for wrong in ["1", 1.0, True, None if call.__name__ != "register" else "x"]:
            with pytest.raises(TypeError, match="must be an int in 0..7"):
                call(wrong)
    assert jobs(segment) == [0] * 8 and not segment.registered


@pytest.mark.parametrize("value", ["", " 1", "+1", "8", "1 "])
def test_priority_from_environment_one_rule_with_the_hook(tags, agents, value):
    """issue 19: GPUYIELD_PRIORITY="" (and any form the hook refuses) is refused here too."""
    with gpuyield.create(tags()) as seg:
        agent = agents(seg.name, GPUYIELD_PRIORITY=value)
        answer = agent.send("register") or agent.reply()
        assert answer.startswith("err ArgumentError") and "GPUYIELD_PRIORITY" in answer, answer


def test_closed_segment_errors(segment):
    job = segment.begin(2)
    segment.close()
    assert not job.active, "close() counted the job out"
    for call in [lambda: segment.begin(1), lambda: segment.end(2), segment.status, lambda: segment.job(1)]:
        with pytest.raises(gpuyield.Error, match="is closed") as info:
            call()
        assert info.value.errno == errno.EBADF
    other = gpuyield.connect(segment.name)
    assert other.status()["jobs"] == [0] * 8 and other.status()["processes"] == []
    other.close()


def test_segment_removed_underneath(tags, agents):
    tag = tags()
    seg = gpuyield.create(tag)
    job = seg.begin(2)
    other = agents(seg.name)
    gpuyield.remove(tag)
    assert seg.removed
    # what was begun can still end, and status still reads the memory we map
    assert seg.status()["jobs"][2] == 1
    seg.end(2)
    assert not job.active and seg.status()["jobs"] == [0] * 8
    # but no new job begins on a segment nobody can join any more
    with pytest.raises(gpuyield.Error, match="was removed while") as info:
        seg.begin(1)
    assert info.value.errno == errno.ENOENT
    other.send("begin 1")
    assert other.reply().startswith("err Error 2 [Errno 2] segment")
    with pytest.raises(gpuyield.Error) as info:
        gpuyield.connect(tag)
    assert info.value.errno == errno.ENOENT
    # created anew under the same tag: the old handle tells it apart
    fresh = gpuyield.create(tag)
    assert seg.removed and not fresh.removed
    with pytest.raises(gpuyield.Error, match="removed and created anew"):
        seg.begin(1)
    seg.close()
    fresh.close()


def test_a_raw_rm_of_the_name_is_found_within_a_second_without_a_lookup_per_begin(tags):
    """begin() does not look the name up each time (an lstat: about 10 us of a begin after idle
    time); `remove` marks the segment first, which the next begin sees (above), and an rm of the
    file under /dev/shm is found by the first begin a second after the last lookup."""
    tag = tags()
    seg = gpuyield.create(tag)
    try:
        seg.begin(1)
        seg.end(1)  # the name looked up just now
        os.unlink("/dev/shm" + seg.name)
        assert seg.removed  # the property always looks
        seg.begin(1)  # inside the second: no lookup, the job runs on the segment this process maps
        seg.end(1)
        time.sleep(1.05)
        with pytest.raises(gpuyield.Error, match="was removed while") as info:
            seg.begin(1)
        assert info.value.errno == errno.ENOENT
    finally:
        seg.close()


def test_dropped_segment_counts_its_jobs_out(tags):
    tag = tags()
    with gpuyield.create(tag) as watcher:
        seg = gpuyield.connect(tag)
        seg.begin(3)  # the Segment and its begun Job refer to each other: a cycle for the GC
        assert watcher.status()["jobs"][3] == 1
        del seg
        gc.collect()
        status = watcher.status()
        assert status["jobs"] == [0] * 8 and status["processes"] == []


# ---- threads, signals, fork, odd bytes (found in review) ------------------------------------------

def test_threads_registering_at_once_share_one_slot_and_count_out(tags):
    """Several threads' first `with seg.job(1)` on one fresh handle: one registration, and every
    job counted out afterwards (the racing registrations used to leak a slot and a job)."""
    tag = tags()
    gpuyield.create(tag).close()
    for trial in range(40):
        seg = gpuyield.connect(tag)
        barrier, errors = threading.Barrier(6), []

        def worker():
            barrier.wait()
            try:
                with seg.job(1):
                    pass
            except Exception as e:  # noqa: BLE001 - any error is the failure being tested
                errors.append(repr(e))
        threads = [threading.Thread(target=worker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        status = seg.status()
        assert errors == [], (trial, errors)
        assert status["jobs"] == [0] * 8 and seg.launch_allowed(0), (trial, status["jobs"])
        assert sum(1 for p in status["processes"] if p["pid"] == os.getpid()) == 1, trial
        seg.close()


def test_one_job_object_entered_from_two_threads_counts_in_once(segment):
    job = segment.job(1)
    codes, stop = [], time.monotonic() + 1.0

    def worker():
        while time.monotonic() < stop:
            try:
                with job:
                    pass
            except gpuyield.Error as e:
                codes.append(e.errno)
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(codes) <= {errno.EBUSY}, set(codes)
    assert jobs(segment) == [0] * 8 and segment.launch_allowed(0)


def test_closing_from_a_signal_handler_during_a_drain_wait_is_refused(tags, agents):
    """A handler that closes the Segment while a job waits for a drain gets EBUSY (it used to
    unmap the segment under the wait: a crash), and the job is counted out."""
    tag = tags()
    seg = gpuyield.create(tag, drain_timeout_ms=5000)
    lower = agents(tag)
    lower("register")
    lower("inflight")  # and never acknowledges
    refused = []

    def on_alarm(signum, frame):
        try:
            seg.close()
        except gpuyield.Error as e:
            refused.append(e.errno)
            raise
    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(gpuyield.Error) as raised:
            with seg.job(1):
                pass
        assert raised.value.errno == errno.EBUSY and refused == [errno.EBUSY]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert jobs(seg) == [0] * 8
    seg.close()


def test_a_forked_child_can_close_a_segment_busy_in_a_parent_thread(segment):
    segment.register(0)
    segment._mark_inflight()
    waiting = threading.Thread(target=lambda: segment._ack_drain(1.5))
    waiting.start()
    time.sleep(0.2)  # the thread is inside a call on the segment
    pid = os.fork()
    if pid == 0:
        try:
            segment.close()
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    waiting.join()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_messages_quoting_odd_bytes_stay_gpuyield_errors(tags):
    with pytest.raises(gpuyield.ArgumentError):
        gpuyield.connect("\u00e9" * 200)
    env = child_env()
    env_bytes = {k.encode(): v.encode() for k, v in env.items()}
    env_bytes[b"GPUYIELD_SHM"] = b"bad\xff"
    r = subprocess.run([sys.executable, "-c", "import gpuyield\ntry:\n    gpuyield.connect()\n"
                        "except gpuyield.Error as e:\n    print('caught', type(e).__name__)\n"],
                       env=env_bytes, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "caught ArgumentError", r.stdout + r.stderr


def test_compat_reconnects_after_its_segment_is_made_anew(tags):
    suffix = "re%d" % os.getpid()
    tag = "compat" + suffix
    gpuyield.create_shared_mem_and_locks(suffix.encode())
    try:
        gpuyield.setMem(1, suffix.encode())
        gpuyield.setMem(0, suffix.encode())
        gpuyield.remove(tag)
        gpuyield.create(tag).close()
        gpuyield.setMem(1, suffix.encode())  # used to raise ENOENT for ever in this process
        gpuyield.setMem(0, suffix.encode())
    finally:
        gpuyield.remove_shared_mem_and_locks(suffix.encode())


# ---- per-GPU jobs (issue 20) ---------------------------------------------------------------------

FAKE_UUID = "GPU-fa4ec0da-1122-3344-5566-778899aabb%02x"  # tests/fakecuda/devices.c, physical GPU n


def on_fake_driver(segment, code, *args, devices=2):
    """Runs `code` (sys.argv[1] is the segment's name, then args) in a Python child under the fake
    driver with `devices` GPUs: a UUID names a GPU only where the driver reports it (issue 29 item 6).
    Returns its stdout as JSON."""
    fake = os.path.join(os.environ.get("BUILD", ""), "fakecuda")
    if not os.path.exists(os.path.join(fake, "libcuda.so.1")):
        pytest.skip("no fake driver in $BUILD/fakecuda (set BUILD to a build directory)")
    out = subprocess.run([sys.executable, "-c", "import json, os, subprocess, sys, gpuyield\n" + code, segment.name]
                         + [str(a) for a in args], capture_output=True, text=True, timeout=60,
                         env=child_env(LD_LIBRARY_PATH=fake, FAKECUDA_DEVICES=devices))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_job_on_one_gpu_counts_on_that_gpu_only(segment):
    build = os.environ.get("BUILD")
    tool = os.path.join(build, "bin", "expcontroller") if build else ""
    code = (
        "seg = gpuyield.connect(sys.argv[1]); uuid, tool = sys.argv[2], sys.argv[3]\n"
        "text = js = None\n"
        "with seg.job(3, device=uuid):\n"
        "    st = seg.status()\n"
        "    if tool and os.access(tool, os.X_OK):\n"
        "        out = subprocess.run([tool, 'status', '--name', seg.name], capture_output=True, text=True)\n"
        "        assert out.returncode == 0, out.stderr\n"
        "        text = out.stdout\n"
        "        js = json.loads(subprocess.run([tool, 'status', '--json', '--name', seg.name],\n"
        "                                       capture_output=True, text=True).stdout)['devices']\n"
        "after = seg.status()['devices'][0]['jobs'][3]\n"
        "with seg.job(3, device='all'):  # every GPU: counted in jobs, on no one device\n"
        "    every = seg.status()\n"
        "print(json.dumps([st, text, js, after, every]))\n")
    st, text, js, after, every = on_fake_driver(segment, code, FAKE_UUID % 1, tool)
    assert [(d["slot"], d["uuid"], d["jobs"][3]) for d in st["devices"]] == [(0, FAKE_UUID % 1, 1)]
    assert st["jobs"][3] == 1
    if text is not None:
        assert "device 0 %s jobs on it per level 0..7: 0 0 0 1 0 0 0 0\n" % (FAKE_UUID % 1) in text
        assert js == st["devices"]
    assert after == 0
    assert every["jobs"][3] == 1 and every["devices"][0]["jobs"][3] == 0


def test_a_uuid_the_driver_does_not_report_takes_no_device_slot(segment):
    """Issue 29 item 6: a made-up UUID used to claim one of the segment's 16 device slots for good.
    It is refused with one line; a UUID the driver reports still works; without a loadable driver
    a UUID cannot be checked, and the error says so."""
    code = (
        "seg = gpuyield.connect(sys.argv[1]); errors = []\n"
        "for uuid in sys.argv[2:]:\n"
        "    try:\n"
        "        seg.job(1, device=uuid)\n"
        "        errors.append(None)\n"
        "    except gpuyield.ArgumentError as e:\n"
        "        errors.append(str(e))\n"
        "with seg.job(1, device=%r):\n"
        "    pass\n"
        "print(json.dumps([errors, seg.status()['devices']]))\n" % (FAKE_UUID % 1))
    made_up = [FAKE_UUID % 2, FAKE_UUID % 31, "GPU-00000000-0000-0000-0000-000000000000"]
    errors, devices = on_fake_driver(segment, code, *made_up, devices=2)
    for uuid, error in zip(made_up, errors):
        assert error and uuid in error and "does not report" in error and "\n" not in error, error
    assert [d["uuid"] for d in devices] == [FAKE_UUID % 1]  # the known GPU's slot only
    try:
        import ctypes
        ctypes.CDLL("libcuda.so.1")
        have_driver = True
    except OSError:
        have_driver = False
    with pytest.raises(gpuyield.ArgumentError) as refused:
        segment.job(1, device=FAKE_UUID % 0)
    if not have_driver:
        assert "libcuda.so.1 cannot be loaded" in str(refused.value)
    assert [d["uuid"] for d in segment.status()["devices"]] == [FAKE_UUID % 1]  # no slot taken
    assert segment.status()["jobs"] == [0] * 8


def test_a_job_without_a_cuda_context_gates_every_gpu(segment):
    job = segment.begin(2)
    assert segment.status()["devices"] == [] and not segment.launch_allowed(1)
    segment.end(2)


def test_bad_devices_are_one_clear_error(segment):
    with pytest.raises(gpuyield.ArgumentError, match="not a GPU UUID"):
        segment.job(1, device="GPU-12")
    with pytest.raises(TypeError, match="device must be"):
        segment.begin(1, device=1.5)
    assert segment.status()["jobs"] == [0] * 8


def test_default_device_is_the_current_contexts_gpu(segment):
    """Under the fake driver with two GPUs and CUDA_VISIBLE_DEVICES=1,0, ordinal 0's context is
    physical GPU 1: the job names GPU 1 by UUID, and an int ordinal resolves the same way."""
    fake = os.path.join(os.environ.get("BUILD", ""), "fakecuda")
    if not os.path.exists(os.path.join(fake, "libcuda.so.1")):
        pytest.skip("no fake driver in $BUILD/fakecuda (set BUILD to a build directory)")
    code = (
        "import ctypes, json, sys, gpuyield\n"
        "cuda = ctypes.CDLL('libcuda.so.1')\n"
        "ctx = ctypes.c_void_p(); dev = ctypes.c_int()\n"
        "assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0\n"
        "assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0 and cuda.cuCtxSetCurrent(ctx) == 0\n"
        "seg = gpuyield.connect(sys.argv[1])\n"
        "with seg.job(2):\n"
        "    a = seg.status()['devices']\n"
        "with seg.job(2, device=1):\n"
        "    b = seg.status()['devices']\n"
        "with seg.job(2, device=1):  # the ordinal's slot remembered: the same GPU\n"
        "    c = seg.status()['devices']\n"
        "with seg.job(2, device=0):\n"
        "    d = seg.status()['devices']\n"
        "print(json.dumps([a, b, c, d]))\n")
    out = subprocess.run([sys.executable, "-c", code, segment.name], capture_output=True, text=True, timeout=60,
                         env=child_env(LD_LIBRARY_PATH=fake, FAKECUDA_DEVICES=2, CUDA_VISIBLE_DEVICES="1,0"))
    assert out.returncode == 0, out.stderr
    a, b, c, d = json.loads(out.stdout)
    assert a == [{"slot": 0, "uuid": FAKE_UUID % 1, "jobs": [0, 0, 1, 0, 0, 0, 0, 0]}]
    assert b[1] == {"slot": 1, "uuid": FAKE_UUID % 0, "jobs": [0, 0, 1, 0, 0, 0, 0, 0]}
    assert c == b and d[0] == {"slot": 0, "uuid": FAKE_UUID % 1, "jobs": [0, 0, 1, 0, 0, 0, 0, 0]}


def test_jobs_follow_the_current_context_across_gpus_and_back(segment):
    """The device of a default job is remembered per ordinal (no UUID query and no slot lookup
    under the mutex each begin): switching the current context between two fake GPUs, and from
    none to one, must still gate the GPU of the context current at each begin."""
    fake = os.path.join(os.environ.get("BUILD", ""), "fakecuda")
    if not os.path.exists(os.path.join(fake, "libcuda.so.1")):
        pytest.skip("no fake driver in $BUILD/fakecuda (set BUILD to a build directory)")
    code = (
        "import ctypes, json, sys, gpuyield\n"
        "seg = gpuyield.connect(sys.argv[1])\n"
        "def on(slot_of):\n"
        "    with seg.job(2):\n"
        "        return [d['uuid'] for d in seg.status()['devices'] if d['jobs'][2]] or 'all'\n"
        "seen = [on(None)]\n"
        "cuda = ctypes.CDLL('libcuda.so.1')\n"
        "assert cuda.cuInit(0) == 0\n"
        "ctxs = []\n"
        "for i in range(2):\n"
        "    ctx = ctypes.c_void_p(); dev = ctypes.c_int()\n"
        "    assert cuda.cuDeviceGet(ctypes.byref(dev), i) == 0\n"
        "    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0\n"
        "    ctxs.append(ctx)\n"
        "for i in (0, 1, 0, 1, 1, 0):\n"
        "    assert cuda.cuCtxSetCurrent(ctxs[i]) == 0\n"
        "    seen.append(on(i))\n"
        "print(json.dumps(seen))\n")
    out = subprocess.run([sys.executable, "-c", code, segment.name], capture_output=True, text=True, timeout=60,
                         env=child_env(LD_LIBRARY_PATH=fake, FAKECUDA_DEVICES=2))
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    g0, g1 = [FAKE_UUID % 0], [FAKE_UUID % 1]
    assert seen == ["all", g0, g1, g0, g1, g1, g0]


# ---- issue 29: an end that cannot take the mutex is owed, never lost -------------------------------

# A process that holds the segment's mutex (robust, process-shared) through libc, as a begin or end
# stopped in the middle would, until SIGUSR1; its offset is checked through status, which names it.
HOLDER = r"""
import ctypes, mmap, os, signal, sys, time
MUTEX_OFFSET = 192  # offsetof(struct gy_segment, mutex) on x86-64 (controller/segment_layout.h)
class Go(Exception):
    pass
def go(*_):
    raise Go
signal.signal(signal.SIGUSR1, go)
fd = os.open(sys.argv[1], os.O_RDWR)
mm = mmap.mmap(fd, os.fstat(fd).st_size)
mutex = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(mm, MUTEX_OFFSET)))
libc = ctypes.CDLL(None)
assert libc.pthread_mutex_lock(mutex) == 0
try:  # the print too: stopped right after it, the go signal can land before a later try
    print("locked", flush=True)
    time.sleep(60)
except Go:
    pass
assert libc.pthread_mutex_unlock(mutex) == 0
print("unlocked", flush=True)
time.sleep(60)
"""


def test_a_with_job_exit_with_a_stopped_mutex_holder_leaves_no_job_counted(tags, agents):
    seg = gpuyield.create(tags(), drain_timeout_ms=100)
    holder = None
    try:
        lower = agents(seg.name, GPUYIELD_PRIORITY=0)
        assert lower("register") == "0"
        with seg.job(1):
            lower.send("waitlaunch")  # blocks behind the job
            wait_until(lambda: any(p["state"] == "blocked" for p in seg.status()["processes"]), 10,
                       "the lower launch to block")
            holder = subprocess.Popen([sys.executable, "-c", HOLDER, shm_path(seg)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
            assert holder.stdout.readline().strip() == "locked"
            os.kill(holder.pid, signal.SIGSTOP)
            assert "pid %d" % holder.pid in (seg.status()["mutex_holder"] or ""), "the holder is not named"
        # __exit__ did not raise (before: "cannot end the job ... stayed held"): the end is owed,
        # and status counts it out at once.
        assert jobs(seg)[1] == 0
        assert seg.status()["mutex_holder"], "the holder let go too early: the test proves nothing"
        os.kill(holder.pid, signal.SIGUSR1)
        os.kill(holder.pid, signal.SIGCONT)
        line = holder.stdout.readline().strip()
        if line != "unlocked":
            holder.kill()
            raise AssertionError(f"the holder did not unlock: {line!r}, stderr: {holder.stderr.read()}")
        assert lower.reply(timeout=5).startswith("ok "), "the lower launch did not go"
        assert seg.launch_allowed(0) and jobs(seg)[1] == 0
        seg.begin(1)
        seg.end(1)  # not refused
        assert jobs(seg)[1] == 0 and seg.status()["mutex_holder"] is None
    finally:
        if holder:
            holder.kill()
            holder.wait()
        seg.close()


# ---- issue 29 item 3: a file planted at a removed segment's name makes no call wait -----------------

PLANTED = r"""
import os, sys, time, gpuyield
seg = gpuyield.create(sys.argv[1], drain_timeout_ms=100)
seg.begin(1); seg.end(1)
path = "/dev/shm" + seg.name
os.unlink(path)  # a raw rm of the segment (no removed bit: begin looks the name up once a second)
time.sleep(1.05)
if sys.argv[2] == "fifo":
    os.mkfifo(path, 0o666)  # O_RDONLY on it would wait for a writer for ever
else:
    os.symlink("/dev/zero", path)
if os.getuid() == 0:
    os.lchown(path, 65534, 65534)  # planted by another user
try:
    seg.begin(1)
    print("begun")
except gpuyield.Error as e:
    print("refused", e.errno, e)
try:
    gpuyield.connect(sys.argv[1])
    print("connected")
except gpuyield.Error as e:
    print("refused", e.errno, e)
os.unlink(path)
"""


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_file_planted_at_a_removed_segments_name_is_refused_at_once(tags, kind):
    tag = tags()
    try:
        out = subprocess.run([sys.executable, "-c", PLANTED, tag, kind], env=child_env(), capture_output=True,
                             text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("begin() or connect() waited on a %s planted at the segment's name" % kind)
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 2, out.stdout + out.stderr
    assert lines[0].startswith("refused %d " % errno.ENOENT) and "was removed" in lines[0], lines[0]
    assert lines[1].startswith("refused ") and ("not a regular file" in lines[1] or "symbolic link" in lines[1]), \
        lines[1]


def test_the_first_begin_releases_the_gil_while_it_waits_for_the_mutex(tags):
    """Issue 29 item 6: the first begin() registers, which waits for the mutex (up to its bound):
    other threads must run meanwhile (before: the GIL was held for the whole wait)."""
    seg = gpuyield.create(tags(), drain_timeout_ms=100)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, shm_path(seg)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        ticks, done, result = [0], threading.Event(), []

        def tick():
            while not done.is_set():
                ticks[0] += 1
                time.sleep(0.001)

        def first_begin():
            try:
                seg.begin(1)
                result.append("begun")
            except gpuyield.Error as e:
                result.append(e.errno)

        ticker = threading.Thread(target=tick)
        ticker.start()
        t0 = time.monotonic()
        first_begin()
        waited = time.monotonic() - t0
        done.set()
        ticker.join()
        assert result == [errno.ETIMEDOUT] and waited >= 0.9, (result, waited)
        assert ticks[0] > 100, "only %d ticks of another thread in %.1f s: the GIL was held" % (ticks[0], waited)
    finally:
        holder.kill()
        holder.wait()
        seg.close()


def test_a_job_on_a_gpu_past_the_device_table_gates_every_gpu(segment):
    """Issue 29 item 6: a 17th GPU (the table holds GY_MAX_DEVICES = 16) used to raise ENOSPC."""
    code = (
        "seg = gpuyield.connect(sys.argv[1]); uuid = sys.argv[2]\n"
        "for n in range(16):\n"
        "    with seg.job(2, device=uuid % (n + 1)):\n"
        "        pass\n"
        "claimed = len(seg.status()['devices'])\n"
        "with seg.job(3, device=uuid % 17):\n"
        "    st = seg.status(); allowed = seg.launch_allowed(2)\n"
        "print(json.dumps([claimed, st, allowed, seg.status()['jobs'][3], seg.launch_allowed(2)]))\n")
    claimed, st, allowed, after, allowed_after = on_fake_driver(segment, code, FAKE_UUID, devices=18)
    assert claimed == 16
    assert st["jobs"][3] == 1 and all(d["jobs"][3] == 0 for d in st["devices"])  # counted on every GPU
    assert not allowed
    assert after == 0 and allowed_after


def test_a_process_that_execs_gives_its_slot_and_jobs_back(segment):
    """Issue 29 item 6: a Python HP that exec()s into a program without gpuyield kept its slot and
    its job (same pid, same start time): lower launches stayed blocked until the new program
    exited. The slot records the image (/proc/<pid>/stat's code, data, stack and environment
    addresses): a reap counts a changed image as a death."""
    code = ("import os, sys, gpuyield\n"
            "seg = gpuyield.connect(sys.argv[1])\n"
            "seg.begin(2)\n"
            "print('in', flush=True)\n"
            "sys.stdin.readline()\n"
            "os.execv('/bin/sleep', ['sleep', '30'])\n")
    child = subprocess.Popen([sys.executable, "-c", code, segment.name], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        assert child.stdout.readline().strip() == "in"
        segment.reap()
        st = segment.status()
        assert st["jobs"][2] == 1 and [p["pid"] for p in st["processes"]] == [child.pid]  # alive: kept
        child.stdin.write("\n")
        child.stdin.flush()
        until = time.monotonic() + 20
        while time.monotonic() < until:
            with open("/proc/%d/comm" % child.pid) as f:
                if f.read().strip() == "sleep":
                    break
            time.sleep(0.01)
        segment.reap()
        st = segment.status()
        assert st["jobs"][2] == 0 and st["processes"] == [], st
        assert segment.launch_allowed(1)
    finally:
        child.kill()
        child.wait()


def test_a_job_tells_the_guarded_arm_it_got(tags, tmp_path, segment):
    """job.guarded_arm: the arm the guarded rule gave the job at its begin (the matrix records it per
    job); None under another policy."""
    build = os.environ.get("BUILD")
    tool = os.path.join(build, "bin", "expcontroller") if build else None
    if not tool or not os.access(tool, os.X_OK):
        pytest.skip("no expcontroller in $BUILD/bin (set BUILD to a build directory)")
    job = segment.begin(1)
    assert job.guarded_arm is None and job.guarded_depth_us is None and job.guarded_lower_launches is None  # drain
    segment.end(1)
    pipe = tmp_path / "mps"
    pipe.mkdir()
    (pipe / "control").touch()  # what create checks for: a daemon's control socket (no GPU here)
    tag = tags()
    out = subprocess.run([tool, "create", "--name", tag, "--policy", "guarded", "--mps-pipe", str(pipe)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    out = subprocess.run([tool, "guard-force", "--name", tag, "--arm", "partition:64"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seg = gpuyield.connect(tag)
    try:
        arms = []
        for _ in range(40):
            job = seg.begin(1)
            arms.append(job.guarded_arm)
            assert job.guarded_depth_us == 0  # no --guard-depth: the lower processes' own bound
            assert job.guarded_lower_launches == 0  # no lower process has launched (the count: test_guarded.c)
            seg.end(1)
        assert set(arms) == {"stop", "partition:64"}, arms  # stop interleaved at a quarter
    finally:
        seg.close()


def test_a_process_without_the_driver_does_not_search_for_it_at_every_begin(segment):
    """Without libcuda loaded, a default begin() finds no current context (every GPU). It looked
    for the library on disk at every begin (dlopen's RTLD_NOLOAD searches the path too: about 80 us
    a begin on the build machine); now only again once the process has loaded another object."""
    code = ("import gpuyield, sys, ctypes, ctypes.util\n"
            "seg = gpuyield.connect(sys.argv[1])\n"
            "for _ in range(50):\n"
            "    seg.begin(1); seg.end(1)\n"
            "sys.stderr.write('LOADING\\n'); sys.stderr.flush()\n"
            "ctypes.CDLL(ctypes.util.find_library('m'))  # something new loaded: worth one more look\n"
            "for _ in range(50):\n"
            "    seg.begin(1); seg.end(1)\n")
    out = subprocess.run([sys.executable, "-c", code, segment.name], capture_output=True, text=True, timeout=60,
                         env=child_env(LD_DEBUG="libs", LD_LIBRARY_PATH="/nonexistent"))
    assert out.returncode == 0, out.stderr[-2000:]
    before, _, after = out.stderr.partition("LOADING")
    if re.search(r"calling init: \S*libcuda\.so", out.stderr):
        pytest.skip("a real libcuda is installed here: the process found and loaded it")
    looks = lambda text: text.count("find library=libcuda.so.1")
    assert looks(before) == 1 and looks(after) <= 1, (looks(before), looks(after))
