"""The GPU work of the examples.

With PyTorch (a real GPU): a torchvision model, batch 1 inference or a training step. Without
PyTorch, for the test that runs the examples on the fake driver of tests/fakecuda: kernels
launched through the CUDA driver API with ctypes ("spin_us:N" kernels that the fake driver runs
for N microseconds). Either way the hook sees and gates every launch; nothing here knows about
gpuyield.
"""
import ctypes

try:
    import torch
except ImportError:
    torch = None


def _driver_kernels(kernel_us, kernels_per_step):
    """A step = kernels_per_step launches of a kernel of kernel_us on the fake driver, then a sync."""
    cuda = ctypes.CDLL("libcuda.so.1")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    module, fn = ctypes.c_void_p(), ctypes.c_void_p()
    for call, args in (("cuInit", (0,)), ("cuDeviceGet", (ctypes.byref(dev), 0)),
                       ("cuDevicePrimaryCtxRetain", (ctypes.byref(ctx), dev)), ("cuCtxSetCurrent", (ctx,)),
                       ("cuModuleLoadData", (ctypes.byref(module), b"examples")),
                       ("cuModuleGetFunction", (ctypes.byref(fn), module, b"spin_us:%d" % kernel_us))):
        rc = getattr(cuda, call)(*args)
        if rc != 0:
            raise SystemExit(f"{call} failed ({rc}): without PyTorch the examples run only on the fake driver "
                             "(LD_LIBRARY_PATH=build/fakecuda)")

    def step():
        for _ in range(kernels_per_step):
            rc = cuda.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, None, None)
            if rc != 0:
                raise SystemExit(f"cuLaunchKernel failed ({rc})")
        cuda.cuCtxSynchronize()
    return step


def inference():
    """One inference request (batch 1), synchronized: what a high-priority job runs."""
    if torch is None:
        return _driver_kernels(kernel_us=200, kernels_per_step=20)
    import torchvision
    model = torchvision.models.resnet50().cuda().eval()
    x = torch.randn(1, 3, 224, 224, device="cuda")

    def step():
        with torch.no_grad():
            model(x)
        torch.cuda.synchronize()
    return step


def training():
    """One training step (batch 64): the low-priority work."""
    if torch is None:
        return _driver_kernels(kernel_us=2000, kernels_per_step=50)
    import torchvision
    model = torchvision.models.resnet50().cuda().train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (64,), device="cuda")

    def step():
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return step

