"""An inference server that knows nothing of gpuyield: a small stdlib HTTP server serving a
torchvision model (resnet50, batch 1; without PyTorch, spin kernels on the fake driver: workload.py).

It is made high-priority by its environment alone (run_auto.sh): LD_PRELOAD of libgpuyield.so,
GPUYIELD_SHM, GPUYIELD_PRIORITY=1 and GPUYIELD_JOBS=auto. The hook then opens a priority-1 job at
the first kernel of each request and closes it once the request's GPU work has completed and no
kernel came for GPUYIELD_IDLE_US: lower-priority work on the GPU stops for the request.

  POST /infer   one inference; answers {"ms": server-side time}
  POST /quit    answers, then the server exits (printing how many requests it served)
--port-file FILE: the port it listens on (0: any free one) is written there once it listens.
"""
import argparse
import http.server
import json
import os
import time

import workload

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--port", type=int, default=0)
parser.add_argument("--port-file", help="write the port here once listening")
args = parser.parse_args()

request = workload.inference()  # the model is loaded (and its first kernels run) before we listen
served = 0


class Handler(http.server.BaseHTTPRequestHandler):
    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        global served
        if self.path == "/infer":
            start = time.monotonic()
            request()
            served += 1
            self.reply({"ms": (time.monotonic() - start) * 1e3})
        elif self.path == "/quit":
            self.reply({"served": served})
            self.server.running = False
        else:
            self.send_error(404)

    def log_message(self, *unused):  # no line per request
        pass


server = http.server.HTTPServer(("127.0.0.1", args.port), Handler)
server.running = True
if args.port_file:
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
while server.running:
    server.handle_request()
server.server_close()
print(f"auto_server: {served} requests served")
