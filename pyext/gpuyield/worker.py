"""One model's worker process of an experiment, started by run_exp:

    python3 -m gpuyield.worker --name model_A --model fasterrcnn_resnet50_fpn --input img.png \
        [--weights FILE] [--resize HxW] [--batch-size N] [--sleep-time S] [--priority P] \
        [--device-id D] --csv logs/model_A.csv

It loads a torchvision model, warms it up, reports "ready" to run_exp and waits for "go" (the
handshake of run_exp/protocol.h: pipes on the fds named by GPUYIELD_STATUS_FD and
GPUYIELD_CONTROL_FD), then runs jobs until run_exp says "stop". Each job's row is appended to the
CSV in one write when the job ends. A worker of priority > 0 under control ($GPUYIELD_SHM set by
run_exp) marks each job with `with seg.job(priority):` so lower-priority work yields to it.
"""

import argparse
import os
import select
import sys
import time

CSV_HEADER = ("job,start_ns,end_ns,jct_ms,drain_wait_ns,drained,gpu_mem_peak_bytes,"
              "gpu_mem_reserved_peak_bytes\n")
STATUS_FD_ENV = "GPUYIELD_STATUS_FD"
CONTROL_FD_ENV = "GPUYIELD_CONTROL_FD"


def log(msg):
    print(f"worker: {msg}", file=sys.stderr, flush=True)


class WorkerError(Exception):
    """A problem the user can fix; printed as one line, exit status 1."""


# ---- the handshake with run_exp --------------------------------------------------------------

class Link:
    """The two pipes to run_exp: status lines out, commands ("go", "stop") in."""

    def __init__(self, status_fd, control_fd):
        self.status_fd = status_fd
        self.control_fd = control_fd

    @classmethod
    def from_env(cls, env=os.environ):
        try:
            return cls(int(env[STATUS_FD_ENV]), int(env[CONTROL_FD_ENV]))
        except (KeyError, ValueError):
            raise WorkerError(f"{STATUS_FD_ENV} and {CONTROL_FD_ENV} are not set: workers are started by "
                              "run_exp, not by hand (run `run_exp -f CONFIG`)") from None

    def send(self, line):
        try:
            os.write(self.status_fd, (line + "\n").encode())
        except BrokenPipeError:
            pass  # run_exp is gone; the next command read sees EOF and stops us

    def _read_command(self):
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(self.control_fd, 1)
            if not chunk:
                return ""  # EOF: run_exp closed the pipe or died
            data += chunk
        return data.decode().strip()

    def wait_go(self):
        """True on "go"; False on "stop" or EOF."""
        return self._read_command() == "go"

    def stop_requested(self, timeout_s=0.0):
        """True once "stop" or EOF arrived; waits up to timeout_s for it (the sleep between jobs)."""
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while True:
            left = max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([self.control_fd], [], [], left)
            if ready:
                self._read_command()
                return True  # nothing but "stop" (or EOF) is sent after "go"
            if time.monotonic() >= deadline:
                return False


# ---- the per-job CSV -------------------------------------------------------------------------

class JobCsv:
    """CSV of one row per job, each row written whole with one write() when its job ends."""

    def __init__(self, path):
        # Never through a link planted at the name (O_NOFOLLOW): it would write wherever it points.
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW,
                          0o644)
        os.write(self.fd, CSV_HEADER.encode())

    def write(self, job, start_ns, end_ns, drain_wait_ns=0, drained=-1, mem_peak=0, mem_reserved_peak=0):
        jct_ms = (end_ns - start_ns) / 1e6
        os.write(self.fd, (f"{job},{start_ns},{end_ns},{jct_ms:.3f},{drain_wait_ns},{drained},"
                           f"{mem_peak},{mem_reserved_peak}\n").encode())

    def close(self):
        os.close(self.fd)


# ---- the job loop (no torch here, so it can be tested anywhere) -------------------------------

def job_marker(priority, env=os.environ):
    """The segment to mark jobs in, or None. Jobs are marked only for priority > 0 and only when
    run_exp put this worker under control (it then names the segment in GPUYIELD_SHM)."""
    if priority <= 0 or not env.get("GPUYIELD_SHM"):
        return None
    import gpuyield
    return gpuyield.connect(env["GPUYIELD_SHM"])


def run_jobs(link, csv, run_job, priority=0, segment=None, sleep_time=0.0, progress=None, duty=None):
    """Wait for "go", then run jobs until "stop". run_job() does one job (GPU synchronised before
    it returns) and returns (mem_peak, mem_reserved_peak). duty=(on_s, off_s): run jobs for on_s,
    then idle off_s, and again (a benchmark's load that comes and goes). Returns the number of
    jobs run."""
    link.send("ready")
    if not link.wait_go():
        return 0
    job = 0
    phase_start = time.monotonic()
    while True:
        job += 1
        start_ns = time.monotonic_ns()
        if segment is not None:
            # The JCT includes the drain wait: it is what the high-priority job's caller waits.
            with segment.job(priority) as marked:
                mem = run_job()
            end_ns = time.monotonic_ns()
            # drained: 1 drained, 0 the drain timed out, 2 co-run (the policy does not wait).
            wait_ns, drained = marked.wait_ns, 2 if marked.corun else 0 if marked.timed_out else 1
        else:
            mem = run_job()
            end_ns = time.monotonic_ns()
            wait_ns, drained = 0, -1
        csv.write(job, start_ns, end_ns, wait_ns, drained, *mem)
        link.send(f"job {job} {(end_ns - start_ns) / 1e6:.3f}")
        if progress:
            progress(job)
        off_phase = duty is not None and time.monotonic() - phase_start >= duty[0]
        if link.stop_requested(max(sleep_time, duty[1]) if off_phase else sleep_time):
            return job
        if off_phase:
            phase_start = time.monotonic()


# ---- the model (torch and torchvision are imported only here) ----------------------------------

def _looks_like_file(weight):
    return "/" in weight or weight.endswith((".pt", ".pth"))


def model_task(torchvision, name):
    """'detection', 'segmentation' or 'classification'; WorkerError for an unknown name."""
    models = torchvision.models
    for task, module in (("detection", models.detection), ("segmentation", models.segmentation)):
        if name in models.list_models(module=module):
            return task
    if name in models.list_models(module=models):
        return "classification"
    raise WorkerError(f"torchvision {torchvision.__version__} has no classification, detection or segmentation "
                      f"model '{name}': see torchvision.models.list_models()")


def build_model(args, torch, torchvision):
    task = model_task(torchvision, args.model)
    kwargs = {"weights": None}
    if task != "classification":
        kwargs["weights_backbone"] = None  # the default would download ImageNet backbone weights
    # Random weights decide how many boxes a detection model proposes, hence how long its
    # post-processing runs: seed them so that every run of a model (alone, under contention, in
    # another experiment) computes exactly the same thing and JCTs compare.
    torch.manual_seed(args.seed)
    model = torchvision.models.get_model(args.model, **kwargs)
    if args.weights and _looks_like_file(args.weights):
        state = torch.load(args.weights, map_location="cpu", weights_only=True)
        if isinstance(state, dict) and "state_dict" in state:
            state = state["state_dict"]
        model.load_state_dict(state)
        log(f"weights loaded from {args.weights}")
    elif args.weights:
        log(f"model_weight '{args.weights}' names pretrained weights, which need a download (no network is "
            "assumed): using random weights, which run the same kernels in the same time; point model_weight "
            "at a local .pth file to load real ones")
    else:
        log("no model_weight: using random weights (same kernels, same time as trained ones)")
    return model.eval(), task


def load_input(args, torch, torchvision):
    """The image as float [3, H, W] in 0..1 on the CPU, at --resize when given."""
    io = torchvision.io
    img = io.decode_image(io.read_file(args.input), mode=io.ImageReadMode.RGB)
    img = img.float().div_(255.0)
    if args.resize:
        h, w = args.resize
        img = torch.nn.functional.interpolate(img[None], size=(h, w), mode="bilinear", align_corners=False)[0]
    return img.contiguous()


def fix_detection_size(model, h, w):
    """Detection models resize their input internally; pin that resize to the input's own size so the
    model runs at exactly h x w (what the reference obtained by patching torchvision)."""
    transform = getattr(model, "transform", None)
    if transform is not None and hasattr(transform, "min_size") and hasattr(transform, "max_size"):
        transform.min_size = (min(h, w),)
        transform.max_size = max(h, w)
    elif transform is not None:
        log("this detection model resizes to a fixed size of its own: the input size is not pinned")


def make_job(args, torch, torchvision):
    device = torch.device(f"cuda:{args.device_id}")
    torch.cuda.set_device(device)
    model, task = build_model(args, torch, torchvision)
    model = model.to(device)
    img = load_input(args, torch, torchvision)
    h, w = img.shape[1], img.shape[2]
    if task == "detection":
        fix_detection_size(model, h, w)
    host = img.pin_memory()
    log(f"{args.model} ({task}) at {h}x{w}, batch {args.batch_size}, on {torch.cuda.get_device_name(device)}")
    nvtx = torch.cuda.nvtx
    counter = [0]

    def run_job(kind="job"):
        """One job; kind "warmup" for the unrecorded ones (named apart in the Nsight timeline)."""
        counter[0] += kind == "job"
        torch.cuda.reset_peak_memory_stats(device)
        nvtx.range_push(f"{args.name} {kind}" if kind != "job" else f"{args.name} job {counter[0]}")
        with torch.inference_mode():
            x = host.to(device, non_blocking=True)
            if task == "detection":
                model([x] * args.batch_size)
            else:
                model(x.unsqueeze(0).expand(args.batch_size, -1, -1, -1).contiguous())
        torch.cuda.synchronize(device)  # the job ends when the GPU is done, not when launches return
        nvtx.range_pop()
        return torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)

    return run_job


# ---- command line ---------------------------------------------------------------------------

def _priority(text):
    value = int(text)
    if not 0 <= value <= 7:
        raise argparse.ArgumentTypeError(f"priority {value} is out of range: use 0..7 (higher wins)")
    return value


def _size(text):
    try:
        h, w = (int(v) for v in text.lower().split("x"))
        if h > 0 and w > 0:
            return h, w
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"'{text}' is not HEIGHTxWIDTH, e.g. 720x1280")


def _duty(text):
    try:
        on, off = (float(v) for v in text.split(","))
        if on > 0 and off > 0:
            return on, off
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"'{text}' is not ON,OFF in seconds, both > 0, e.g. 3,2")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m gpuyield.worker",
                                description="one model's worker of a gpuyield experiment (started by run_exp)")
    p.add_argument("--name", default="worker", help="the output name (labels NVTX ranges)")
    p.add_argument("--model", required=True, help="torchvision model name")
    p.add_argument("--weights", help="a local .pth file; anything else means random weights")
    p.add_argument("--input", required=True, help="PNG or JPEG image")
    p.add_argument("--resize", type=_size, help="HEIGHTxWIDTH to resize the input to")
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--sleep-time", type=float, default=0.0, help="seconds between jobs")
    p.add_argument("--priority", type=_priority, default=0, help="0..7, higher wins")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--csv", required=True, help="per-job CSV to write")
    p.add_argument("--warmup", type=int, default=3, help="jobs run before 'ready', not recorded")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights (the same in every run)")
    p.add_argument("--duty", type=_duty, help="ON,OFF: run jobs for ON seconds, idle OFF seconds, repeat "
                   "(benchmarks: a load that comes and goes inside one run)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        link = Link.from_env()
        segment = job_marker(args.priority)
        import torch
        import torchvision
        if not torch.cuda.is_available():
            raise WorkerError("torch sees no CUDA device: check the driver, CUDA_VISIBLE_DEVICES and that this "
                              "torch build has CUDA")
        if args.device_id >= torch.cuda.device_count():
            raise WorkerError(f"device {args.device_id} does not exist: torch sees {torch.cuda.device_count()}")
        run_job = make_job(args, torch, torchvision)
        for _ in range(args.warmup):
            run_job("warmup")
        csv = JobCsv(args.csv)
        try:
            jobs = run_jobs(link, csv, run_job, args.priority, segment, args.sleep_time, duty=args.duty)
        finally:
            csv.close()
        log(f"stopped after {jobs} jobs")
        return 0
    except WorkerError as e:
        log(f"error: {e}")
        return 1
    except OSError as e:  # gpuyield.Error (an OSError): the segment named by GPUYIELD_SHM
        log(f"error: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
