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

from __future__ import annotations

import argparse
import os
import random
import select
import sys
import time
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

if TYPE_CHECKING:
    import gpuyield

CSV_HEADER = ("job,start_ns,end_ns,jct_ms,drain_wait_ns,drained,gpu_mem_peak_bytes,"
              "gpu_mem_reserved_peak_bytes\n")
STATUS_FD_ENV = "GPUYIELD_STATUS_FD"
CONTROL_FD_ENV = "GPUYIELD_CONTROL_FD"


def log(msg: str) -> None:
    print(f"worker: {msg}", file=sys.stderr, flush=True)


class WorkerError(Exception):
    """A problem the user can fix; printed as one line, exit status 1."""


# ---- the handshake with run_exp --------------------------------------------------------------

class Link:
    """The two pipes to run_exp: status lines out, commands ("go", "stop") in."""

    def __init__(self, status_fd: int, control_fd: int) -> None:
        self.status_fd = status_fd
        self.control_fd = control_fd

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Link:
        try:
            return cls(int(env[STATUS_FD_ENV]), int(env[CONTROL_FD_ENV]))
        except (KeyError, ValueError):
            raise WorkerError(f"{STATUS_FD_ENV} and {CONTROL_FD_ENV} are not set: workers are started by "
                              "run_exp, not by hand (run `run_exp -f CONFIG`)") from None

    def send(self, line: str) -> None:
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

    def wait_go(self) -> bool:
        """True on "go" (its options, if any, in self.go_options); False on "stop" or EOF."""
        return self._take_go(self._read_command())

    def _take_go(self, command: str) -> bool:
        word, _, rest = command.partition(" ")
        if word != "go":
            return False
        self.go_options = parse_go_options(rest)
        return True

    def stop_requested(self, timeout_s: float = 0.0) -> bool:
        """True once "stop" or EOF arrived; waits up to timeout_s for it (the sleep between jobs).
        "pause" (a benchmark harness's, between its segments; run_exp never sends it) answers
        "paused" and blocks until "go [OPTIONS]" (answered "running"; the options replace
        self.go_options) or "stop"."""
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while True:
            left = max(deadline - time.monotonic(), 0.0)
            ready, _, _ = select.select([self.control_fd], [], [], left)
            if ready:
                if self._read_command() != "pause":
                    return True  # "stop" or EOF
                self.send("paused")
                if not self._take_go(self._read_command()):
                    return True
                self.send("running")
                return False
            if time.monotonic() >= deadline:
                return False


def parse_go_options(text):
    """'gap=exp:0.05 seed=3 probe=1' -> {"gap": "exp:0.05", "seed": "3", "probe": "1"}; WorkerError
    for a word that is not KEY=VALUE or an unknown key."""
    options = {}
    for word in text.split():
        key, eq, value = word.partition("=")
        if not eq or key not in GO_OPTIONS:
            raise WorkerError(f"go option '{word}' is not one of {', '.join(k + '=...' for k in GO_OPTIONS)}")
        options[key] = value
    return options


# gap: the idle time between jobs, "S" seconds or "exp:MEAN" (exponential, random arrivals);
# seed: of those gaps; probe: 1 = time each job's first kernel (see Pacing).
# profile: 1 = profile 3 jobs' kernels first (--kernel-profile names the trace).
GO_OPTIONS = ("gap", "seed", "probe", "profile")


class Pacing:
    """The idle time between jobs: fixed (--sleep-time, or go option gap=S) or exponential with a
    mean (gap=exp:MEAN, seeded: the same arrivals in every run), and whether jobs are probed."""

    def __init__(self, sleep_time=0.0, options=None):
        options = options or {}
        gap = options.get("gap", str(sleep_time))
        self.probe = options.get("probe", "0") == "1"
        self.profile = options.get("profile", "0") == "1"
        try:
            self.mean = float(gap[4:]) if gap.startswith("exp:") else float(gap)
            seed = int(options.get("seed", "0"))
        except ValueError:
            raise WorkerError(f"go option gap='{gap}' seed='{options.get('seed')}': give gap=SECONDS or "
                              "gap=exp:MEAN_SECONDS and an integer seed") from None
        if self.mean < 0:
            raise WorkerError(f"go option gap='{gap}' is negative")
        self.exponential = gap.startswith("exp:")
        self.rng = random.Random(seed)

    def gap(self):
        return self.rng.expovariate(1 / self.mean) if self.exponential and self.mean > 0 else self.mean


# ---- the per-job CSV -------------------------------------------------------------------------

class JobCsv:
    """CSV of one row per job, each row written whole with one write() when its job ends."""

    def __init__(self, path: str) -> None:
        # Never through a link planted at the name (O_NOFOLLOW): it would write wherever it points.
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW,
                          0o644)
        os.write(self.fd, CSV_HEADER.encode())

    def write(self, job: int, start_ns: int, end_ns: int, drain_wait_ns: int = 0, drained: int = -1, mem_peak: int = 0,
              mem_reserved_peak: int = 0) -> None:
        jct_ms = (end_ns - start_ns) / 1e6
        os.write(self.fd, (f"{job},{start_ns},{end_ns},{jct_ms:.3f},{drain_wait_ns},{drained},"
                           f"{mem_peak},{mem_reserved_peak}\n").encode())

    def close(self) -> None:
        os.close(self.fd)


# ---- the job loop (no torch here, so it can be tested anywhere) -------------------------------

def job_marker(priority: int, env: Mapping[str, str] = os.environ) -> gpuyield.Segment | None:
    """The segment to mark jobs in, or None. Jobs are marked only for priority > 0 and only when
    run_exp put this worker under control (it then names the segment in GPUYIELD_SHM), and not
    under GPUYIELD_JOBS=auto ("jobs": "auto"), where the preloaded hook opens them itself."""
    if priority <= 0 or not env.get("GPUYIELD_SHM") or env.get("GPUYIELD_JOBS") == "auto":
        return None
    import gpuyield
    return gpuyield.connect(env["GPUYIELD_SHM"])


def run_jobs(link: Link, csv: JobCsv, run_job: Callable[[], tuple[int, int]], priority: int = 0,
             segment: gpuyield.Segment | None = None, sleep_time: float = 0.0,
             progress: Callable[[int], None] | None = None, duty: tuple[float, float] | None = None,
             probe=None, latency=None, profiler=None) -> int:
    """Wait for "go", then run jobs until "stop". run_job() does one job (GPU synchronised before
    it returns) and returns (mem_peak, mem_reserved_peak). duty=(on_s, off_s): run jobs for on_s,
    then idle off_s, and again (a benchmark's load that comes and goes). A harness may pause and
    resume the loop and change the pacing with go options (Link.stop_requested, Pacing). When a
    go option asks for probe=1, probe() runs first in each job (inside its mark) and returns the
    host time its first kernel was seen done; latency(job, begin_ns, first_kernel_ns) records it.
    With profile=1, profiler() runs once first (its jobs are not recorded). Returns the number of jobs run."""
    link.send("ready")
    if not link.wait_go():
        return 0
    pacing = Pacing(sleep_time, getattr(link, "go_options", None))
    if pacing.profile and profiler:
        profiler()
    job = 0
    phase_start = time.monotonic()
    while True:
        job += 1
        probing = pacing.probe and probe is not None
        start_ns = time.monotonic_ns()
        if segment is not None:
            # The JCT includes the drain wait: it is what the high-priority job's caller waits.
            with segment.job(priority) as marked:
                first_ns = probe() if probing else None
                mem = run_job()
            end_ns = time.monotonic_ns()
            # drained (run_exp/protocol.h, enum job_drained): 1 drained, 0 the drain timed out,
            # 2 co-run (the policy does not wait); -1 below: the job was not marked.
            wait_ns, drained = marked.wait_ns, 2 if marked.corun else 0 if marked.timed_out else 1
        else:
            first_ns = probe() if probing else None
            mem = run_job()
            end_ns = time.monotonic_ns()
            wait_ns, drained = 0, -1
        csv.write(job, start_ns, end_ns, wait_ns, drained, *mem)
        if probing and latency is not None:
            latency(job, start_ns, first_ns)
        link.send(f"job {job} {(end_ns - start_ns) / 1e6:.3f}")
        if progress:
            progress(job)
        off_phase = duty is not None and time.monotonic() - phase_start >= duty[0]
        options = getattr(link, "go_options", None)
        if link.stop_requested(max(pacing.gap(), duty[1]) if off_phase else pacing.gap()):
            return job
        if getattr(link, "go_options", None) is not options:  # resumed after a pause
            pacing = Pacing(sleep_time, link.go_options)
            if pacing.profile and profiler:
                profiler()
            phase_start = time.monotonic()
        if off_phase:
            phase_start = time.monotonic()


class LatencyCsv:
    """job,begin_ns,first_kernel_ns: when each probed job began (before its mark) and when its first
    kernel, a one-thread probe, was seen done on the host (CLOCK_MONOTONIC)."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o644)
        os.write(self.fd, b"job,begin_ns,first_kernel_ns\n")

    def __call__(self, job, begin_ns, first_ns):
        os.write(self.fd, f"{job},{begin_ns},{first_ns}\n".encode())

    def close(self):
        os.close(self.fd)


# ---- the model (torch and torchvision are imported only here) ----------------------------------

def _looks_like_file(weight):
    return "/" in weight or weight.endswith((".pt", ".pth"))


def model_task(torchvision, name: str) -> str:
    """'detection', 'segmentation' or 'classification'; WorkerError for an unknown name."""
    models = torchvision.models
    for task, module in (("detection", models.detection), ("segmentation", models.segmentation)):
        if name in models.list_models(module=module):
            return task
    if name in models.list_models(module=models):
        return "classification"
    raise WorkerError(f"torchvision {torchvision.__version__} has no classification, detection or segmentation "
                      f"model '{name}': see torchvision.models.list_models()")


def build_model(args: argparse.Namespace, torch, torchvision) -> tuple[object, str]:
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


def load_input(args: argparse.Namespace, torch, torchvision):
    """The image as float [3, H, W] in 0..1 on the CPU, at --resize when given."""
    io = torchvision.io
    img = io.decode_image(io.read_file(args.input), mode=io.ImageReadMode.RGB)
    img = img.float().div_(255.0)
    if args.resize:
        h, w = args.resize
        img = torch.nn.functional.interpolate(img[None], size=(h, w), mode="bilinear", align_corners=False)[0]
    return img.contiguous()


def fix_detection_size(model, h: int, w: int) -> None:
    """Detection models resize their input internally; pin that resize to the input's own size so the
    model runs at exactly h x w (what the reference obtained by patching torchvision)."""
    transform = getattr(model, "transform", None)
    if transform is not None and hasattr(transform, "min_size") and hasattr(transform, "max_size"):
        transform.min_size = (min(h, w),)
        transform.max_size = max(h, w)
    elif transform is not None:
        log("this detection model resizes to a fixed size of its own: the input size is not pinned")


ENCODER = "transformer_encoder"  # BERT-base-sized: 12 layers, d_model 768, 12 heads, FFN 3072


def build_encoder(args, torch):
    """A BERT-base-sized encoder (torch.nn.TransformerEncoder, random weights, no download) and its
    input: random embeddings [batch, --seq-len, 768]."""
    torch.manual_seed(args.seed)
    layer = torch.nn.TransformerEncoderLayer(d_model=768, nhead=12, dim_feedforward=3072, dropout=0.0,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False)
    return model.eval(), torch.randn(args.batch_size, args.seq_len, 768)


def make_job(args: argparse.Namespace, torch, torchvision) -> Callable[..., tuple[int, int]]:
    device = torch.device(f"cuda:{args.device_id}")
    torch.cuda.set_device(device)
    if args.model == ENCODER:
        model, host = build_encoder(args, torch)
        task, shape = "encoder", f"sequence {args.seq_len}"
    else:
        model, task = build_model(args, torch, torchvision)
        if args.train and task != "classification":
            raise WorkerError(f"--train runs classification models only; {args.model} is a {task} model")
        img = load_input(args, torch, torchvision)
        h, w = img.shape[1], img.shape[2]
        if task == "detection":
            fix_detection_size(model, h, w)
        host, shape = img, f"{h}x{w}"
    model = model.to(device)
    host = host.pin_memory()
    log(f"{args.model} ({task}{', training' if args.train else ''}) at {shape}, batch {args.batch_size}, "
        f"on {torch.cuda.get_device_name(device)}")
    nvtx = torch.cuda.nvtx
    counter = [0]
    step = training_step(args, model, torch, device, host) if args.train else None

    def forward(x):
        if task == "detection":
            model([x] * args.batch_size)
        elif task == "encoder":
            model(x)
        else:
            model(x.unsqueeze(0).expand(args.batch_size, -1, -1, -1).contiguous())

    def run_job(kind="job"):
        """One job; kind "warmup" for the unrecorded ones (named apart in the Nsight timeline)."""
        counter[0] += kind == "job"
        torch.cuda.reset_peak_memory_stats(device)
        nvtx.range_push(f"{args.name} {kind}" if kind != "job" else f"{args.name} job {counter[0]}")
        if step:
            step()
        else:
            with torch.inference_mode():
                forward(host.to(device, non_blocking=True))
        torch.cuda.synchronize(device)  # the job ends when the GPU is done, not when launches return
        nvtx.range_pop()
        return torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)

    return run_job


def training_step(args, model, torch, device, host):
    """One SGD step (forward, cross-entropy, backward, step) on a random batch of --batch-size
    images of the input's size and random labels: training load, not learning."""
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator(device="cpu").manual_seed(args.seed)
    x = torch.rand((args.batch_size,) + tuple(host.shape), generator=generator).to(device)
    y = torch.randint(0, 1000, (args.batch_size,), generator=generator).to(device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return step


def make_probe(args, torch):
    """The first kernel of a probed job: one element incremented (one block), then a synchronize;
    returns the host time it was seen done. Why the host clock: CUDA events time only against other
    events of the same context, and those are themselves held back while the context waits for the
    GPU (time-slicing), so they would hide the very wait measured; a one-thread kernel runs in
    microseconds once it gets an SM, so its completion seen on the host bounds its start from above
    by the probe's own round trip (measured alone: the hp_alone setup's latency rows)."""
    device = torch.device(f"cuda:{args.device_id}")
    cell = torch.zeros(1, device=device)

    def probe():
        cell.add_(1)
        torch.cuda.synchronize(device)
        return time.monotonic_ns()

    return probe


def profile_kernels(run_job, torch, path, jobs=3):
    """GPU time of every kernel of `jobs` jobs (torch.profiler, CUPTI), written as a Chrome trace to
    path: the longest kernel a higher job may wait behind. Best effort: a profiler that fails is
    one line in the log."""
    try:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(jobs):
                run_job("profile")
        prof.export_chrome_trace(path)
    except Exception as e:  # noqa: BLE001 - the benchmark goes on without kernel times
        log(f"kernel profile failed: {e}")


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


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return value


def _duty(text):
    try:
        on, off = (float(v) for v in text.split(","))
        if on > 0 and off > 0:
            return on, off
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"'{text}' is not ON,OFF in seconds, both > 0, e.g. 3,2")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python3 -m gpuyield.worker",
                                description="one model's worker of a gpuyield experiment (started by run_exp)")
    p.add_argument("--name", default="worker", help="the output name (labels NVTX ranges)")
    p.add_argument("--model", required=True, help=f"torchvision model name, or {ENCODER} (BERT-base-sized)")
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
    p.add_argument("--seq-len", type=_positive, default=128, help=f"sequence length of --model {ENCODER}")
    p.add_argument("--train", action="store_true",
                   help="each job is a training step (forward, backward, SGD) of a classification model on a "
                        "random batch of the input's size")
    p.add_argument("--latency-csv", help="where probed jobs' first-kernel times go (go option probe=1)")
    p.add_argument("--kernel-profile", help="where go option profile=1 writes 3 jobs' kernels (Chrome trace)")
    p.add_argument("--duty", type=_duty, help="ON,OFF: run jobs for ON seconds, idle OFF seconds, repeat "
                   "(benchmarks: a load that comes and goes inside one run)")
    args = p.parse_args(argv)
    if args.train and args.model == ENCODER:
        p.error(f"--train runs torchvision classification models; {ENCODER} runs inference only")
    return args


def main(argv: Sequence[str] | None = None) -> int:
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
        profiler = (lambda: profile_kernels(run_job, torch, args.kernel_profile)) if args.kernel_profile else None
        probe = make_probe(args, torch)
        csv = JobCsv(args.csv)
        latency = LatencyCsv(args.latency_csv) if args.latency_csv else None
        try:
            jobs = run_jobs(link, csv, run_job, args.priority, segment, args.sleep_time, duty=args.duty,
                            probe=probe, latency=latency, profiler=profiler)
        finally:
            csv.close()
            if latency:
                latency.close()
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
