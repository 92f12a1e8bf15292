"""A low-priority training loop, unchanged: the preloaded hook gates its launches.

It knows nothing of gpuyield; run it with LD_PRELOAD of libgpuyield.so, GPUYIELD_SHM and
GPUYIELD_PRIORITY=0 (run.sh). It trains until SIGTERM or SIGINT, then prints its step count.
"""
import signal

import workload

stop = False


def request_stop(signum, frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, request_stop)
signal.signal(signal.SIGINT, request_stop)
step = workload.training()
steps = 0
while not stop:
    step()
    steps += 1
print(f"train: {steps} steps")
