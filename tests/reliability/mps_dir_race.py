"""Another user races `serve --mps --mps-dir S/missing/mps` for the missing parent (issue 29
item 2), not part of the suites: run as root, with uid 65534 as the other user.

S is a sticky directory open to all (as /tmp). Each round a process running as uid 65534 makes
and removes S/missing in a tight loop while serve starts with the MPS stand-in of the tests
(tests/run_exp/bin). A round ends one of three ways: serve refused (one line, exit 1), serve
started with S/missing ours, or serve started with S/missing theirs: the race won, their
directory taken as a parent (they could then move ours away and put theirs at the path the
daemon and the workers are given). The last must never happen.

    sudo python3 tests/reliability/mps_dir_race.py [ROUNDS] [EXPCONTROLLER]
"""
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 100
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXP = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "build/bin/expcontroller")
OTHER = 65534


def racer(path):
    """uid 65534: make and remove `path` until killed."""
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setgroups([])
        os.setgid(OTHER)
        os.setuid(OTHER)
        while True:
            try:
                os.mkdir(path, 0o777)
            except OSError:
                pass
            try:
                os.rmdir(path)
            except OSError:
                pass
    finally:
        os._exit(0)


def one_round(base, tag, env):
    sticky = os.path.join(base, "s")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    missing = os.path.join(sticky, "missing")
    pid = racer(missing)
    time.sleep(0.01)
    serve = subprocess.Popen([EXP, "serve", "--name", tag, "--mps", "--mps-dir", os.path.join(missing, "mps")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    line = serve.stderr.readline()  # the first: "MPS daemon started ..." or the refusal
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    if "MPS daemon started" in line:
        owner = os.lstat(missing).st_uid
        outcome = "started, parent theirs (race won)" if owner == OTHER else "started, parent ours"
        serve.send_signal(signal.SIGTERM)
    else:
        outcome = "refused: " + ("keeps appearing" if "appearing" in line else
                                 "parent theirs" if "uid 65534" in line else line.strip()[:80])
    serve.wait(timeout=30)
    shutil.rmtree(sticky)
    return outcome


def main():
    if os.geteuid() != 0:
        sys.exit("mps_dir_race.py: needs root (it runs the racing process as uid 65534)")
    base = tempfile.mkdtemp(prefix="gy-mps-race.")
    os.chmod(base, 0o755)  # uid 65534 can reach S
    env = dict(os.environ, PATH=os.path.join(ROOT, "tests/run_exp/bin") + ":" + os.environ["PATH"],
               FAKE_MPS_LOG="/dev/null")
    counts = collections.Counter()
    try:
        for i in range(ROUNDS):
            counts[one_round(base, "mps-race-%d-%d" % (os.getpid(), i), env)] += 1
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for outcome, n in counts.most_common():
        print("%4d  %s" % (n, outcome))
    won = counts["started, parent theirs (race won)"]
    print("%d rounds, %d won by the other user" % (ROUNDS, won))
    sys.exit(1 if won else 0)


if __name__ == "__main__":
    main()
