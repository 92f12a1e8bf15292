"""A harness written the way the original gpu-sharing experiment's is (gpu-tester/run_exp.py and
its worker), to show that such scripts run unmodified on gpuyield's drop-in libraries.

Run it from DIR/gpu-tester, where DIR was laid out by `run_exp --layout-compat DIR`:
  - the harness loads ../pytcppexp/libgeek.so with ctypes by relative path, makes a uuid4 suffix
    and calls create_shared_mem_and_locks(suffix) / remove_shared_mem_and_locks(suffix);
  - each model with control runs with ID=<priority>, SUFFIX=<suffix> and, for controlEvent,
    LD_PRELOAD=../intercept-lib/build/lib/libcuinterpose_event.so and EVENT_GROUP_SIZE (for
    controlsync: libcuinterpose_sync.so and SYNC_KERNELS; neither: libcuinterpose.so);
  - a worker with control and priority > 0 loads ../pytcppexp/libgeek.so and calls
    setMem(1, suffix) / waitForEmptyGPU() before each job and setMem(0, suffix) after it;
  - each worker writes <output_file_name>.csv with the original's columns
    start_timestamp_ns,end_timestamp_ns,jct_ms,max_allocated_gpu_memory_allocated_byte,
    max_reserved_gpu_memory_byte (perf_counter_ns; the start is taken before setMem(1)), and the
    harness writes models_pid.json ([[name, pid], ...]).
Two differences, on purpose: the original starts workers with multiprocessing (fork) after setting
LD_PRELOAD in os.environ, which does not load a library into an already running interpreter; its
commented-out alternative, a subprocess per model, is what is used here, so the hook is loaded.
And LD_PRELOAD keeps what was there after the library (under nsys, the profiler's preload).

usage: python compat_harness.py -f CONFIG.json            (the experiment, original format)
       python compat_harness.py --worker MODEL.json DEVICE EXP_DUR   (one model; internal)
Models: torchvision classification models by name with weights=None (no download), input
batch_size x 3 x resize_size. Extra output for the checks: GPUYIELD_VERBOSE in the environment
is passed through like any variable; COMPAT_STATUS=PATH makes the harness save
`expcontroller status --json` of the segment (EXPCONTROLLER names the program) before removing it.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time
import uuid
from ctypes import cdll
from time import perf_counter_ns


def debug_print(msg):
    print(msg, file=sys.stderr, flush=True)


def preload(path):
    """The original sets LD_PRELOAD to its library alone; under Nsight Systems that would drop the
    profiler's own preload from a subprocess, so it goes first and the rest is kept."""
    rest = os.environ.get("LD_PRELOAD")
    return path + (":" + rest if rest else "")


def get_config_name(model):
    return model["output_file_name"]


def run_worker(model_file, device_id, exp_dur):
    import torch
    import torchvision

    model_cfg = json.load(open(model_file))
    torch.manual_seed(0)
    torch.cuda.set_device(device_id)
    net = getattr(torchvision.models, model_cfg["model_name"])(weights=None).eval().cuda()
    h, w = model_cfg.get("resize_size", [224, 224])
    x = torch.randn(model_cfg.get("batch_size", 1), 3, h, w, device="cuda")
    lib = None
    if model_cfg["control"]["control"] and model_cfg["priority"] > 0:
        lib = cdll.LoadLibrary(os.path.abspath("../pytcppexp/libgeek.so"))
    os.makedirs(model_cfg["output_file_path"], exist_ok=True)
    csv_fh = open(os.path.join(model_cfg["output_file_path"], model_cfg["output_file_name"] + ".csv"), "w", 1)
    writer = csv.writer(csv_fh, lineterminator="\n")
    writer.writerow(["start_timestamp_ns", "end_timestamp_ns", "jct_ms", "max_allocated_gpu_memory_allocated_byte",
                     "max_reserved_gpu_memory_byte"])
    with torch.no_grad():
        for _ in range(3):  # warm-up, not logged
            net(x)
        torch.cuda.synchronize()
        print("loaded", flush=True)
        if sys.stdin.readline().strip() != "run":
            return
        end_at = time.monotonic() + exp_dur
        while time.monotonic() < end_at:
            start_t = perf_counter_ns()
            if lib is not None:
                try:
                    suffix = os.getenv("SUFFIX", None)
                    assert suffix is not None
                    lib.setMem(1, suffix.encode())
                    lib.waitForEmptyGPU()
                except Exception as e:
                    debug_print(e)
            net(x)
            torch.cuda.synchronize()
            end_t = perf_counter_ns()
            if lib is not None:
                try:
                    suffix = os.getenv("SUFFIX", None)
                    assert suffix is not None
                    lib.setMem(0, suffix.encode())
                except Exception as e:
                    debug_print(e)
            writer.writerow([start_t, end_t, (end_t - start_t) / 1000000, torch.cuda.max_memory_allocated(device_id),
                             torch.cuda.max_memory_reserved(device_id)])
            if model_cfg["sleep_time"]:
                time.sleep(model_cfg["sleep_time"])
    csv_fh.close()


def main():
    parser = argparse.ArgumentParser(description="Core GPU Sharing Experiment (gpuyield drop-in check)")
    parser.add_argument("-f", "--file", metavar="FILEPATH")
    parser.add_argument("--worker", nargs=3, metavar=("MODEL_JSON", "DEVICE", "EXP_DUR"))
    args = parser.parse_args()
    if args.worker:
        run_worker(args.worker[0], int(args.worker[1]), float(args.worker[2]))
        return
    if not args.file:
        parser.error("-f CONFIG is required")
    experiment_config = json.load(open(args.file))

    # Initialize share mem
    lib = cdll.LoadLibrary(os.path.abspath("../pytcppexp/libgeek.so"))
    suffix = uuid.uuid4().hex
    lib.create_shared_mem_and_locks(suffix.encode())

    models = experiment_config.get("models", [])
    model_pids, procs, logs, files = [], [], [], []
    try:
        for i, model in enumerate(models):
            logfilename = os.path.join(model["output_file_path"], f"{model['output_file_name']}.log")
            os.makedirs(model["output_file_path"], exist_ok=True)
            logfile = open(logfilename, "w", 1)
            logs.append(logfile)
            model_file = os.path.join(model["output_file_path"], f"{model['output_file_name']}.model.json")
            json.dump(model, open(model_file, "w"), indent=4)
            files.append(model_file)
            process_env = os.environ.copy()
            control = model["control"]["control"]
            control_sync = model["control"]["controlsync"]
            control_event = model["control"]["controlEvent"]
            if control:
                process_env["ID"] = str(model["priority"])
                process_env["SUFFIX"] = suffix
                process_env["LD_PRELOAD"] = preload(os.path.abspath("../intercept-lib/build/lib/libcuinterpose.so"))
            if control and control_sync:
                process_env["LD_PRELOAD"] = preload(os.path.abspath("../intercept-lib/build/lib/libcuinterpose_sync.so"))
                process_env["SYNC_KERNELS"] = str(model["control"]["queue_limit"]["sync"])
            if control and control_event:
                process_env["LD_PRELOAD"] = preload(os.path.abspath("../intercept-lib/build/lib/libcuinterpose_event.so"))
                process_env["EVENT_GROUP_SIZE"] = str(model["control"]["queue_limit"]["event_group"])
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", model_file,
                   str(experiment_config.get("device_id", 0)), str(experiment_config.get("exp_dur", 10))]
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=logfile,
                                    env=process_env, text=True)
            model_pids.append((get_config_name(model), proc.pid))
            procs.append(proc)
            print(i, proc.pid, "start", flush=True)
        # guarantee model is loaded
        for i, proc in enumerate(procs):
            msg = proc.stdout.readline().strip()
            if msg != "loaded":
                raise SystemExit("compat_harness: worker %d did not load (said %r): see its .log" % (i, msg))
            print(i, msg, flush=True)
        for proc in procs:
            proc.stdin.write("run\n")
            proc.stdin.flush()
        status_path = os.environ.get("COMPAT_STATUS")
        if status_path:  # while the workers run (a worker's slot goes when it exits)
            time.sleep(0.8 * float(experiment_config.get("exp_dur", 10)))
            st = subprocess.run([os.environ.get("EXPCONTROLLER", "expcontroller"), "status", "--name",
                                 "compat" + suffix, "--json"], capture_output=True, text=True)
            with open(status_path, "w") as f:
                f.write(st.stdout if st.returncode == 0 else json.dumps({"error": st.stderr.strip()}))
        rcs = [proc.wait() for proc in procs]
        json.dump(model_pids, open(os.path.join(models[-1]["output_file_path"], "models_pid.json"), "w"))
        print("PID summary log saved as [models_pid.json]", flush=True)
        if any(rcs):
            raise SystemExit("compat_harness: a worker failed (exit statuses %s): see the .log files" % rcs)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for f in files:
            os.unlink(f)
        lib.remove_shared_mem_and_locks(suffix.encode())


if __name__ == "__main__":
    main()
