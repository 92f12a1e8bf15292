"""A stand-in for the original experiment's harness (gpu-tester/run_exp.py), written the way it
is: run from DIR/gpu-tester, it loads ../pytcppexp/libgeek.so with ctypes by relative path,
makes a uuid4 suffix, creates the shared memory, starts a worker with LD_PRELOAD of
../intercept-lib/build/lib/<LIB> and SUFFIX / ID / SYNC_KERNELS / EVENT_GROUP_SIZE in its
environment, marks a high-priority job around it (setMem(1) / waitForEmptyGPU() / setMem(0)),
and removes the shared memory. Used by tests/suites/50-run_exp.sh for --layout-compat.
usage: harness.py LIB WORKER [ARGS...]   (prints the suffix, then the worker's stderr)"""
import os
import subprocess
import sys
import uuid
from ctypes import cdll

lib = cdll.LoadLibrary(os.path.abspath("../pytcppexp/libgeek.so"))
suffix = uuid.uuid4().hex
lib.create_shared_mem_and_locks(suffix.encode())
env = os.environ.copy()
env["ID"] = "0"
env["SUFFIX"] = suffix
env["SYNC_KERNELS"] = "2"
env["EVENT_GROUP_SIZE"] = "3"
env["LD_PRELOAD"] = os.path.abspath("../intercept-lib/build/lib/" + sys.argv[1])
proc = subprocess.run(sys.argv[2:], env=env, capture_output=True, text=True)
lib.setMem(1, suffix.encode())
lib.waitForEmptyGPU()
lib.setMem(0, suffix.encode())
lib.remove_shared_mem_and_locks(suffix.encode())
print(suffix)
sys.stdout.write(proc.stderr)
sys.exit(proc.returncode)
