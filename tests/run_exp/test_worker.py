"""The worker's logic without torch: the handshake with run_exp, the CSV, stopping, and job
marking through the real gpuyield extension. run_job is a stand-in that sleeps."""
import os
import threading
import time
import types

import pytest

from gpuyield import worker

HEADER = worker.CSV_HEADER.strip()


class FakeRunExp:
    """The run_exp side of the two pipes."""

    def __init__(self):
        self.status_r, status_w = os.pipe()
        control_r, self.control_w = os.pipe()
        self.link = worker.Link(status_w, control_r)
        self.buffer = b""

    def read_line(self, timeout=10):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            assert time.monotonic() < deadline, "no status line from the worker"
            self.buffer += os.read(self.status_r, 256)
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def send(self, cmd):
        os.write(self.control_w, (cmd + "\n").encode())


def start_loop(tmp_path, run_job, **kw):
    rx = FakeRunExp()
    csv = worker.JobCsv(str(tmp_path / "jobs.csv"))
    result = {}
    t = threading.Thread(target=lambda: result.update(jobs=worker.run_jobs(rx.link, csv, run_job, **kw)))
    t.start()
    return rx, csv, t, result


def rows(tmp_path):
    lines = (tmp_path / "jobs.csv").read_text().splitlines()
    assert lines[0] == HEADER
    return [line.split(",") for line in lines[1:]]


def sleeper(seconds=0.002):
    def run_job():
        time.sleep(seconds)
        return 123, 456
    return run_job


def test_ready_then_go_then_jobs_until_stop(tmp_path):
    rx, csv, t, result = start_loop(tmp_path, sleeper())
    assert rx.read_line() == "ready"
    assert not (tmp_path / "jobs.csv").read_text().count("\n") > 1, "no job may run before go"
    rx.send("go")
    for n in range(1, 6):
        assert rx.read_line().startswith(f"job {n} ")
    rx.send("stop")
    t.join(10)
    assert not t.is_alive()
    csv.close()
    got = rows(tmp_path)
    assert result["jobs"] == len(got) >= 5
    for i, r in enumerate(got, 1):
        assert len(r) == 8 and int(r[0]) == i
        start, end = int(r[1]), int(r[2])
        assert end >= start + 1_000_000  # each stand-in job sleeps 2 ms
        assert abs(float(r[3]) - (end - start) / 1e6) < 0.01
        assert r[4:] == ["0", "-1", "123", "456"]  # not marked: no drain wait, drained -1


def test_start_times_are_monotonic_ns(tmp_path):
    before = time.monotonic_ns()
    rx, csv, t, _ = start_loop(tmp_path, sleeper())
    rx.read_line()
    rx.send("go")
    rx.read_line()
    rx.send("stop")
    t.join(10)
    csv.close()
    assert before <= int(rows(tmp_path)[0][1]) <= time.monotonic_ns()


@pytest.mark.parametrize("pause", [{"sleep_time": 60}, {"duty": (0.001, 60)}], ids=["sleep_time", "duty_off_phase"])
def test_stop_cuts_the_pause_between_jobs(tmp_path, pause):
    rx, csv, t, result = start_loop(tmp_path, sleeper(), **pause)
    rx.read_line()
    rx.send("go")
    rx.read_line()
    t0 = time.monotonic()
    rx.send("stop")
    t.join(10)
    csv.close()
    assert not t.is_alive() and time.monotonic() - t0 < 5
    assert result["jobs"] == 1


def test_sleep_time_spaces_jobs(tmp_path):
    rx, csv, t, _ = start_loop(tmp_path, sleeper(), sleep_time=0.2)
    rx.read_line()
    rx.send("go")
    rx.read_line()
    rx.read_line()
    rx.send("stop")
    t.join(10)
    csv.close()
    r = rows(tmp_path)
    assert int(r[1][1]) - int(r[0][2]) >= 150_000_000


def test_duty_cycle_runs_bursts_separated_by_idle_gaps(tmp_path):
    """--duty 0.3,0.4: jobs back to back for 0.3 s, then 0.4 s without a job, and again."""
    rx, csv, t, _ = start_loop(tmp_path, sleeper(0.01), duty=(0.3, 0.4))
    rx.read_line()
    rx.send("go")
    time.sleep(1.6)
    rx.send("stop")
    t.join(10)
    csv.close()
    r = rows(tmp_path)
    gaps = [(int(b[1]) - int(a[2])) / 1e9 for a, b in zip(r, r[1:])]
    idle = [g for g in gaps if g >= 0.35]
    assert len(idle) >= 2, gaps  # at least two off phases in 1.6 s
    assert all(g < 0.2 for g in gaps if g < 0.35), gaps  # inside a burst: back to back
    bursts, start = [], int(r[0][1])
    for a, b in zip(r, r[1:]):
        if (int(b[1]) - int(a[2])) / 1e9 >= 0.35:
            bursts.append((int(a[2]) - start) / 1e9)
            start = int(b[1])
    assert all(0.25 <= b < 0.6 for b in bursts), bursts  # each burst about on_s long


def test_duty_argument_is_checked(capsys):
    assert worker.parse_args(["--model", "m", "--input", "i", "--csv", "c", "--duty", "3,2"]).duty == (3.0, 2.0)
    assert worker.parse_args(["--model", "m", "--input", "i", "--csv", "c"]).duty is None
    for bad in ("3", "3,0", "a,b", "1,2,3"):
        with pytest.raises(SystemExit):
            worker.parse_args(["--model", "m", "--input", "i", "--csv", "c", "--duty", bad])
    assert "is not ON,OFF in seconds" in capsys.readouterr().err


def test_eof_before_go_runs_nothing(tmp_path):
    calls = []
    rx, csv, t, result = start_loop(tmp_path, lambda: calls.append(1) or (0, 0))
    rx.read_line()
    os.close(rx.control_w)  # run_exp gone
    t.join(10)
    csv.close()
    assert result["jobs"] == 0 and not calls and rows(tmp_path) == []


def test_stop_before_go_runs_nothing(tmp_path):
    rx, csv, t, result = start_loop(tmp_path, sleeper())
    rx.read_line()
    rx.send("stop")
    t.join(10)
    csv.close()
    assert result["jobs"] == 0


def test_link_from_env_outside_run_exp():
    with pytest.raises(worker.WorkerError, match="started by run_exp"):
        worker.Link.from_env({})


def test_main_outside_run_exp_fails_clearly(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv(worker.STATUS_FD_ENV, raising=False)
    monkeypatch.delenv(worker.CONTROL_FD_ENV, raising=False)
    rc = worker.main(["--model", "resnet50", "--input", "x.png", "--csv", str(tmp_path / "c.csv")])
    assert rc == 1
    assert "started by run_exp" in capsys.readouterr().err


def test_resize_argument():
    args = worker.parse_args(["--model", "m", "--input", "i", "--csv", "c", "--resize", "1440x2560"])
    assert args.resize == (1440, 2560) and args.batch_size == 1 and args.priority == 0
    with pytest.raises(SystemExit):
        worker.parse_args(["--model", "m", "--input", "i", "--csv", "c", "--resize", "big"])


def test_priority_argument_is_checked(capsys):
    assert worker.parse_args(["--model", "m", "--input", "i", "--csv", "c", "--priority", "7"]).priority == 7
    with pytest.raises(SystemExit):
        worker.parse_args(["--model", "m", "--input", "i", "--csv", "c", "--priority", "8"])
    assert "out of range: use 0..7" in capsys.readouterr().err


def test_a_segment_that_cannot_be_joined_is_one_line(monkeypatch, capsys, tmp_path):
    """A gpuyield.Error (an OSError) from the segment named by GPUYIELD_SHM: one line, exit 1."""
    r, w = os.pipe()
    monkeypatch.setenv(worker.STATUS_FD_ENV, str(w))
    monkeypatch.setenv(worker.CONTROL_FD_ENV, str(r))
    monkeypatch.setenv("GPUYIELD_SHM", "no-such-segment-%d" % os.getpid())
    rc = worker.main(["--model", "resnet50", "--input", "x.png", "--csv", str(tmp_path / "c.csv"), "--priority", "1"])
    os.close(r)
    os.close(w)
    err = capsys.readouterr().err
    assert rc == 1 and "worker: error:" in err and "Traceback" not in err, err


def test_detection_size_is_pinned_without_patching():
    model = types.SimpleNamespace(transform=types.SimpleNamespace(min_size=(800,), max_size=1333))
    worker.fix_detection_size(model, 1440, 2560)
    assert model.transform.min_size == (1440,) and model.transform.max_size == 2560
    worker.fix_detection_size(model, 2560, 1440)  # portrait: the same pair, min and max
    assert model.transform.min_size == (1440,) and model.transform.max_size == 2560


def test_jobs_not_marked_without_control_or_priority():
    assert worker.job_marker(0, {"GPUYIELD_SHM": "anything"}) is None
    assert worker.job_marker(1, {}) is None
    # GPUYIELD_JOBS=auto ("jobs": "auto"): the hook opens the jobs, the worker marks none (issue 27).
    assert worker.job_marker(1, {"GPUYIELD_SHM": "anything", "GPUYIELD_JOBS": "auto"}) is None


def test_high_priority_jobs_are_marked(tmp_path):
    import gpuyield
    tag = f"test-worker-{os.getpid()}"
    owner = gpuyield.create(tag)
    try:
        seg = worker.job_marker(1, {"GPUYIELD_SHM": tag})
        assert seg is not None
        seen = []

        def run_job():
            seen.append(owner.status()["jobs"][1])  # the job is counted in while it runs
            return 0, 0

        rx, csv, t, _ = start_loop(tmp_path, run_job, priority=1, segment=seg)
        rx.read_line()
        rx.send("go")
        rx.read_line()
        rx.read_line()
        rx.send("stop")
        t.join(10)
        csv.close()
        assert seen and all(n == 1 for n in seen)
        assert owner.status()["jobs"][1] == 0  # and counted out after
        for r in rows(tmp_path):
            assert r[5] == "1"  # drained: nothing lower had work in flight
            assert int(r[4]) < 1_000_000_000
        seg.close()
    finally:
        owner.close()
        gpuyield.remove(tag)


def test_pause_waits_for_the_job_then_go_resumes(tmp_path):
    rx, csv, t, result = start_loop(tmp_path, sleeper(0.01))
    assert rx.read_line() == "ready"
    rx.send("go")
    rx.send("pause")
    lines = []
    while not lines or lines[-1] != "paused":
        lines.append(rx.read_line())
    before = len(rows(tmp_path))
    time.sleep(0.1)
    assert len(rows(tmp_path)) == before  # nothing runs while paused
    rx.send("go")
    assert rx.read_line() == "running"
    rx.send("stop")
    t.join(10)
    csv.close()
    assert result["jobs"] > before


def test_go_options_probe_jobs_with_seeded_exponential_gaps(tmp_path):
    seen = []
    rx, csv, t, result = start_loop(tmp_path, sleeper(0.001), probe=lambda: time.monotonic_ns(),
                                    latency=lambda job, begin, first: seen.append((job, begin, first)))
    assert rx.read_line() == "ready"
    rx.send("go gap=exp:0.001 seed=3 probe=1")
    while len(seen) < 5:
        rx.read_line()
    rx.send("stop")
    t.join(10)
    csv.close()
    assert all(first >= begin for _, begin, first in seen)
    a, b = worker.Pacing(0, {"gap": "exp:0.05", "seed": "3"}), worker.Pacing(0, {"gap": "exp:0.05", "seed": "3"})
    gaps = [a.gap() for _ in range(50)]
    assert gaps == [b.gap() for _ in range(50)] and len(set(gaps)) == 50 and min(gaps) >= 0


def test_go_options_are_checked():
    with pytest.raises(worker.WorkerError):
        worker.parse_go_options("gap=0.1 speed=2")
    with pytest.raises(worker.WorkerError):
        worker.Pacing(0, {"gap": "exp:soon"})
    assert worker.Pacing(0.2, {}).gap() == 0.2 and not worker.Pacing(0.2, {}).probe


def test_encoder_and_training_arguments(capsys):
    a = worker.parse_args(["--model", "transformer_encoder", "--input", "x", "--csv", "c"])
    assert a.seq_len == 128 and not a.train
    b = worker.parse_args(["--model", "resnet50", "--train", "--batch-size", "64", "--input", "x", "--csv", "c"])
    assert b.train
    for bad in (["--model", "transformer_encoder", "--train"], ["--model", "transformer_encoder", "--seq-len", "0"]):
        with pytest.raises(SystemExit):
            worker.parse_args(bad + ["--input", "x", "--csv", "c"])
