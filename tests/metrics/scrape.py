"""Scrapes `expcontroller serve --metrics` over real HTTP (urllib) and checks the Prometheus text
with a strict parser (prom_text.py: UTF-8, grammar, no repeated label set): every sample belongs to
a family announced by HELP and TYPE lines, the agent (registered twice: hook and extension) is one
series per family, the jobs in progress and the
per-process counters match what the agent did: every row of GY_PROC_COUNTERS
(controller/segment_layout.h) has its family (gpuyield_<name>_total; a _ns row in seconds,
gpuyield_<stem>_seconds_total), other paths get 404.

usage: scrape.py URL SEGMENT AGENT_PID LAUNCHES  (the agent holds one job at level 3, named
GPUYIELD_MODEL=agent-model, after LAUNCHES kernel launches through the hook)
"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from counter_table import table_counters  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prom_text import parse  # noqa: E402
import urllib.error
import urllib.request

url, segment, agent_pid, launches = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with urllib.request.urlopen(url + "/metrics", timeout=30) as reply:
    assert reply.status == 200, reply.status
    assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4"), reply.headers["Content-Type"]
    body = reply.read()

types, samples = parse(body)
helps = set(types)
text = body.decode()
for name, _, _ in samples:
    assert name in types, "no HELP/TYPE before %s" % name
    assert types[name] in ("counter", "gauge"), name
    if types[name] == "counter":
        assert name.endswith("_total"), name


def value(family, **labels):
    found = [v for n, l, v in samples if n == family and all(l.get(k) == str(x) for k, x in labels.items())]
    assert len(found) == 1, (family, labels, found)
    return found[0]


assert value("gpuyield_info", segment=segment, policy="drain") == 1
assert [value("gpuyield_jobs_in_progress", segment=segment, level=lv) for lv in range(8)] == [0, 0, 0, 1, 0, 0, 0, 0]
assert value("gpuyield_reaped_processes_total", segment=segment) == 0
assert value("gpuyield_registered_processes", segment=segment) == 1




def family(counter):
    return "gpuyield_%s_total" % (counter[:-3] + "_seconds" if counter.endswith("_ns") else counter)


counters = table_counters()
assert "partition_launches" in counters and "partition_copies" in counters and "blocked_ns" in counters, counters
# The names scrapers already use stay as they were.
assert {family(c) for c in counters} >= {"gpuyield_%s_total" % f for f in (
    "launches", "graph_launches", "waits", "blocked_seconds", "drains", "drain_timeouts")}
for counter in counters:
    name = family(counter)
    assert name in helps and types.get(name) == "counter", "no HELP/TYPE counter for %s (row %s)" % (name, counter)
    want = launches if counter == "launches" else 0
    # The hook's slot (priority 0) and the extension's (priority 0) are one series.
    got = [v for n, l, v in samples if n == name and l.get("pid") == agent_pid]
    assert got == [want], (name, got, want)
    assert value(name, segment=segment, pid=agent_pid, name="agent-model", level=0) == want, name

try:
    urllib.request.urlopen(url + "/other", timeout=30)
    raise AssertionError("/other answered")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
print("ok %d samples" % len(samples))
