"""Names that are not clean UTF-8 keep /metrics, the textfile and `status --json` valid (issue 29
item 5). Starts three registered processes named:
  GPUYIELD_MODEL=b"bad\\xffname"          a byte that is never UTF-8
  GPUYIELD_MODEL="é" * 40                 80 bytes, cut at 63: the last character halved
  an executable called "модельворкер"    non-ASCII, cut by the kernel at 15 bytes (comm) mid-character
then parses /metrics and the textfile strictly (prom_text.py: UTF-8, grammar) and the JSON of
`status --json` from its bytes as UTF-8, and checks each name shows with '?' for each bad byte.
usage: names.py URL SEGMENT_TAG EXPCONTROLLER TEXTFILE PYTHONPATH
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prom_text import parse  # noqa: E402

url, tag, exp, textfile, pypath = sys.argv[1:6]
AGENT = "import sys, time, gpuyield\nseg = gpuyield.connect(sys.argv[1]); seg.register(); print('in', flush=True); time.sleep(600)"
tmp = tempfile.mkdtemp()
exe = os.path.join(tmp, "модельворкер")
os.symlink(sys.executable, exe)

base = {k.encode(): v.encode() for k, v in os.environ.items() if k != "GPUYIELD_MODEL"}
base[b"PYTHONPATH"] = pypath.encode()
agents = []
try:
    for program, model in ((sys.executable, b"bad\xffname"), (sys.executable, "é".encode() * 40), (exe, None)):
        env = dict(base)
        if model is not None:
            env[b"GPUYIELD_MODEL"] = model
        agents.append(subprocess.Popen([program, "-c", AGENT, tag], stdout=subprocess.PIPE, env=env))
    for a in agents:
        assert a.stdout.readline().strip() == b"in"
    comm = "модельворкер".encode()[:15]  # what the kernel keeps
    want = {agents[0].pid: "bad?name",
            agents[1].pid: "é" * 31 + "?",
            agents[2].pid: comm.decode("utf-8", "ignore") + "?" * (len(comm) - len(comm.decode("utf-8", "ignore").encode()))}

    with urllib.request.urlopen(url + "/metrics", timeout=30) as reply:
        _, samples = parse(reply.read())
    shown = {int(l["pid"]): l["name"] for n, l, _ in samples if n == "gpuyield_launches_total"}
    for pid, name in want.items():
        assert shown.get(pid) == name, ("metrics", pid, shown.get(pid), name)

    out = subprocess.run([exp, "status", "--name", tag, "--json"], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    st = json.loads(out.stdout.decode("utf-8"))  # strict: bytes that are not UTF-8 fail here
    shown = {p["pid"]: p["name"] for p in st["processes"]}
    for pid, name in want.items():
        assert shown.get(pid) == name, ("json", pid, shown.get(pid), name)

    table = subprocess.run([exp, "status", "--name", tag], capture_output=True, timeout=60)
    table.stdout.decode("utf-8")

    deadline = time.monotonic() + 30
    while True:  # the textfile is rewritten every second: wait for one that has the agents
        with open(textfile, "rb") as f:
            _, samples = parse(f.read())
        shown = {int(l["pid"]): l["name"] for n, l, _ in samples if n == "gpuyield_launches_total"}
        if all(shown.get(pid) == name for pid, name in want.items()):
            break
        assert time.monotonic() < deadline, ("textfile", shown, want)
        time.sleep(0.2)
    print("ok", " ".join(ascii(n) for n in want.values()))
finally:
    for a in agents:
        a.kill()
        a.wait()
    os.unlink(exe)
    os.rmdir(tmp)
