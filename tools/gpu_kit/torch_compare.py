#!/usr/bin/env python3
"""PyTorch on this machine's first GPU, doing what //bench:gpu_bench does.

Measured exactly as gpu_bench measures its GPU side (one warm-up call, then
the best of 20, each call ended by synchronising the GPU), so that the
kit's runner can put the two side by side:

  matmul/<n>            torch.matmul of two n x n float32 matrices in IEEE
                        float32 (TF32 off: cuBLAS SGEMM, as gpu_bench's
                        GEMM), in GFLOP/s
  train_step/mlp/eager  one training step of gpu_bench's MLP: 256 features,
                        hidden 1024 and 1024 (ReLU), 10 classes, softmax
                        cross-entropy summed and divided by the batch, SGD
                        with learning rate 0.01, batch 4096 that starts in
                        host memory, the loss read back; in examples/s

Writes {"settings": {...}, "figures": {name: {"value": v, "unit": u}}} to
--json.
"""

import argparse
import json
import sys
import time

import torch


REPEATS = 20  # as gpu_bench's GPU side


def seconds_per_call(run, device):
    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    run()
    synchronize()
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        run()
        synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def ieee_float32_matmuls():
    """Turns TF32 off for float32 matrix products; says which switch did.

    PyTorch 2.9 and later have fp32_precision ("ieee" is plain float32);
    older ones allow_tf32 (False by default for matmul since 1.12). cuDNN
    (convolutions) plays no part here."""
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        try:
            matmul.fp32_precision = "ieee"
            return "matmul.fp32_precision=ieee"
        except (RuntimeError, ValueError, TypeError):
            pass
    matmul.allow_tf32 = False
    return "matmul.allow_tf32=False"


def matmul_gflops(n, device):
    generator = torch.Generator(device=device)
    generator.manual_seed(n)
    a = torch.rand(n, n, device=device, generator=generator) * 2 - 1
    b = torch.rand(n, n, device=device, generator=generator) * 2 - 1
    c = torch.empty(n, n, device=device)
    seconds = seconds_per_call(lambda: torch.matmul(a, b, out=c), device)
    return 2.0 * n * n * n / seconds / 1e9


def mlp_examples_per_second(device, batch=4096, features=256, classes=10):
    torch.manual_seed(7)
    model = torch.nn.Sequential(
        torch.nn.Linear(features, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, classes)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x_host = torch.rand(batch, features) * 2 - 1
    y_host = torch.arange(batch) % classes

    def step():
        x = x_host.to(device)
        y = y_host.to(device)
        loss = torch.nn.functional.cross_entropy(model(x), y,
                                                 reduction="sum") / batch
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss.item()

    return batch / seconds_per_call(step, device)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True)
    parser.add_argument("--device", default="cuda:0",
                        help="cuda:N, or cpu (to try the script without a GPU)")
    parser.add_argument("--sizes", default="512,2048,4096",
                        help="matmul sizes")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            print("torch_compare: torch %s sees no CUDA GPU" %
                  torch.__version__, file=sys.stderr)
            return 2
        precision = ieee_float32_matmuls()
        device_name = torch.cuda.get_device_name(device)
    else:
        precision = "cpu"
        device_name = "CPU, %d threads" % torch.get_num_threads()
    print("torch_compare: torch %s, CUDA %s, %s" % (
        torch.__version__, torch.version.cuda, device_name), flush=True)
    figures = {}
    for n in (int(size) for size in args.sizes.split(",")):
        figures["matmul/%d" % n] = {"value": matmul_gflops(n, device),
                                    "unit": "GFLOP/s"}
    figures["train_step/mlp/eager"] = {"value": mlp_examples_per_second(device),
                                       "unit": "examples/s"}
    for name, figure in figures.items():
        print("torch_compare: %-22s %12.1f %s" % (name, figure["value"],
                                                  figure["unit"]))
    settings = {"torch": torch.__version__, "cuda": torch.version.cuda,
                "device": device_name, "float32_matmul": precision,
                "repeats": REPEATS}
    with open(args.json, "w") as out:
        json.dump({"settings": settings, "figures": figures}, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
