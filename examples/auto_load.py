"""A load generator for auto_server.py: `--requests` POST /infer one after another, `--interval`
seconds apart, then POST /quit (unless --no-quit). Prints the latency seen by the client (p50,
max). Stdlib only; it touches no GPU and needs no gpuyield."""
import argparse
import json
import time
import urllib.request

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--requests", type=int, default=50)
parser.add_argument("--interval", type=float, default=0.05, help="seconds between requests")
parser.add_argument("--no-quit", action="store_true", help="leave the server running")
args = parser.parse_args()


def post(path):
    req = urllib.request.Request(f"http://127.0.0.1:{args.port}{path}", data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=60) as reply:
        return json.loads(reply.read())


latency_ms = []
for _ in range(args.requests):
    time.sleep(args.interval)
    start = time.monotonic()
    post("/infer")
    latency_ms.append((time.monotonic() - start) * 1e3)
if not args.no_quit:
    post("/quit")
latency_ms.sort()
if latency_ms:
    print(f"auto_load: {len(latency_ms)} requests, latency p50 {latency_ms[len(latency_ms) // 2]:.2f} ms, "
          f"max {latency_ms[-1]:.2f} ms")
