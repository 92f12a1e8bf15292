"""No client can stall `expcontroller serve --metrics` (issue 29 item 4). Against a running serve:
  trickle: 5 clients each send one byte of a request every 0.8 s. While they do, 10 scrapes each
           answer within SCRAPE_BOUND_S, a killed registered process is reaped (gone from
           /metrics) within REAP_BOUND_S, and every trickler is cut off within TRICKLE_CUT_S (a
           whole request is bounded, not each recv).
  idle:    500 connections opened and left silent; a scrape then answers within SCRAPE_BOUND_S and
           a killed process is still reaped within REAP_BOUND_S.
usage: stall.py trickle|idle URL SEGMENT_TAG PYTHONPATH
Prints "ok ..." with the times measured, or fails with an AssertionError.
"""
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prom_text import parse  # noqa: E402

# The bounds: serve answers in milliseconds and reaps every 200 ms; these leave room for a loaded
# 2-CPU machine and sanitizers while staying far under what a stall costs (the request deadline is
# 2 s per client: 5 trickling clients in a row, or 500 idle ones, held serve for 10 s or more).
SCRAPE_BOUND_S = 1.5
REAP_BOUND_S = 2.0
TRICKLE_CUT_S = 5.0  # the deadline (2 s) plus slack

mode, url, tag, pypath = sys.argv[1:5]
host, port = url.split("//")[1].split(":")
port = int(port)


def scrape():
    start = time.monotonic()
    with urllib.request.urlopen(url + "/metrics", timeout=30) as reply:
        body = reply.read()
    took = time.monotonic() - start
    return took, parse(body)[1]


def registered(samples):
    return [v for n, _, v in samples if n == "gpuyield_registered_processes"][0]


def reap_time():
    """Starts a registered process, kills it, and measures until /metrics no longer counts it."""
    agent = subprocess.Popen([sys.executable, "-c", "import sys, time, gpuyield\n"
                              "seg = gpuyield.connect(sys.argv[1]); seg.register(); print('in', flush=True); time.sleep(600)", tag],
                             stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=pypath))
    assert agent.stdout.readline().strip() == b"in"
    before = registered(scrape()[1])
    agent.kill()
    agent.wait()
    start = time.monotonic()
    while registered(scrape()[1]) >= before:
        assert time.monotonic() - start < 30, "never reaped"
        time.sleep(0.02)
    return time.monotonic() - start


def trickle(cut):
    s = socket.create_connection((host, port), timeout=30)
    start = time.monotonic()
    request = b"GET /metrics HTTP/1.0\r\nX-Slow: " + b"a" * 100
    try:
        for byte in request:
            s.send(bytes([byte]))
            time.sleep(0.8)
            if time.monotonic() - start > 20:
                break
    except OSError:
        pass  # cut off: reset or broken pipe
    cut.append(time.monotonic() - start)
    s.close()


if mode == "trickle":
    cuts = []
    threads = [threading.Thread(target=trickle, args=(cuts,)) for _ in range(5)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    times = [scrape()[0] for _ in range(10)]
    reaped = reap_time()
    for t in threads:
        t.join()
    assert max(times) < SCRAPE_BOUND_S, times
    assert reaped < REAP_BOUND_S, reaped
    assert len(cuts) == 5 and max(cuts) < TRICKLE_CUT_S, cuts
    print("ok slowest scrape %.3f s, reaped in %.3f s, tricklers cut after %.1f-%.1f s"
          % (max(times), reaped, min(cuts), max(cuts)))
elif mode == "idle":
    idle = []
    for _ in range(500):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect((host, port))
        except BlockingIOError:
            pass
        idle.append(s)
    time.sleep(0.2)
    took, _ = scrape()
    reaped = reap_time()
    took2, _ = scrape()
    for s in idle:
        s.close()
    assert max(took, took2) < SCRAPE_BOUND_S, (took, took2)
    assert reaped < REAP_BOUND_S, reaped
    print("ok scrape %.3f s behind 500 idle connections, reaped in %.3f s" % (max(took, took2), reaped))
else:
    sys.exit("usage: stall.py trickle|idle URL SEGMENT_TAG PYTHONPATH")
