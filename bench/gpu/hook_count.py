"""Launch-count proof workload: resnet50 and fasterrcnn_resnet50_fpn (torchvision, random weights,
batch 1) for a few forward passes. Run it under libgpuyield (LD_PRELOAD, GPUYIELD_SHM set) and
nsys; it prints one JSON object with its pid and, read from the segment before it exits (a dead
process's slot may be reaped), the hook's counters of this process. bench/gpu/hook_count.sh
runs it and compares the hook's count with the kernels in the Nsight report.

usage: python3 bench/gpu/hook_count.py [--passes N] [--models resnet50,fasterrcnn]
       [--expcontroller PATH]"""
import argparse, json, os, subprocess, sys, time

import torch, torchvision


def hook_counters(expcontroller):
    """This process's slot in `expcontroller status --json` (None without GPUYIELD_SHM)."""
    tag = os.environ.get("GPUYIELD_SHM")
    if not tag:
        return None
    out = subprocess.run([expcontroller, "status", "--name", tag, "--json"], check=True,
                         capture_output=True, text=True).stdout
    mine = [p for p in json.loads(out)["processes"] if p["pid"] == os.getpid()]
    return mine[0] if len(mine) == 1 else {"error": f"{len(mine)} slots with pid {os.getpid()}"}


def build(name):
    if name == "resnet50":
        model = torchvision.models.resnet50(weights=None)
        x = [torch.randn(1, 3, 224, 224, device="cuda")]
    elif name == "fasterrcnn":
        model = torchvision.models.detection.fasterrcnn_resnet50_fpn(
            weights=None, weights_backbone=None, min_size=720, max_size=1280)
        x = [[torch.rand(3, 720, 1280, device="cuda")]]
    else:
        sys.exit(f"hook_count.py: unknown model {name!r}: use resnet50 or fasterrcnn")
    return model.eval().cuda(), x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--models", default="resnet50,fasterrcnn")
    ap.add_argument("--expcontroller", default=os.environ.get("EXPCONTROLLER", "build/bin/expcontroller"))
    args = ap.parse_args()
    torch.backends.cudnn.benchmark = False  # the same kernels every pass
    result = {"pid": os.getpid(), "passes": args.passes, "torch": torch.__version__,
              "cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0),
              "gpuyield_shm": os.environ.get("GPUYIELD_SHM"),
              "gpuyield_mode": os.environ.get("GPUYIELD_MODE", "none"),
              "preloaded": os.environ.get("LD_PRELOAD", ""), "ms": {}}
    with torch.inference_mode():
        for name in args.models.split(","):
            model, x = build(name)
            times = []
            for _ in range(args.passes):
                t0 = time.perf_counter()
                model(*x)
                torch.cuda.synchronize()
                times.append(round((time.perf_counter() - t0) * 1e3, 3))
            result["ms"][name] = times
    torch.cuda.synchronize()
    result["hook"] = hook_counters(args.expcontroller)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
