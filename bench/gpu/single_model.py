"""A few resnet50 forward passes (random weights, batch 1): the single-model Nsight fixture and a
standalone timing. Prints one JSON line with the pid and the per-pass times."""
import json, os, time
import torch, torchvision

def main():
    torch.backends.cudnn.benchmark = False
    model = torchvision.models.resnet50(weights=None).eval().cuda()
    x = torch.randn(1, 3, 224, 224, device="cuda")
    times = []
    with torch.no_grad():
        for i in range(int(os.environ.get("PASSES", "8"))):
            t0 = time.perf_counter()
            model(x)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"pid": os.getpid(), "model": "resnet50", "ms": [round(t, 3) for t in times]}))

if __name__ == "__main__":
    main()
