"""PyTorch baselines for Sinter's benchmarks, measured on the same GPU in the same run.

Prints one JSON object per line: {"case", "engine", "ms", "bytes", "tbps" | "tflops"}.
Engines: eager, compile (torch.compile, default mode). Timing: CUDA events, warm-up, median.
"""
import json
import sys

import torch
from torch_timing import median_ms as _median_ms
import torch.nn.functional as F


ITERS = 20 if "--quick" in sys.argv else 50


def median_ms(fn, iters=None, warmup=5):
    return _median_ms(fn, iters or ITERS, warmup)


def emit(case, engine, ms, nbytes=None, flops=None):
    row = {"case": case, "engine": engine, "ms": round(ms, 5)}
    if nbytes:
        row["bytes"] = nbytes
        row["tbps"] = round(nbytes / (ms * 1e-3) / 1e12, 4)
    if flops:
        row["tflops"] = round(flops / (ms * 1e-3) / 1e12, 2)
    print(json.dumps(row), flush=True)


def both(case, fn, args, nbytes, compile_too=True):
    emit(case, "eager", median_ms(lambda: fn(*args)), nbytes)
    if compile_too:
        cfn = torch.compile(fn)
        emit(case, "compile", median_ms(lambda: cfn(*args)), nbytes)


def main():
    quick = "--quick" in sys.argv  # fewer repeats
    no_compile = "--no-compile" in sys.argv
    dev = "cuda"
    torch.manual_seed(0)
    bf = torch.bfloat16
    # copy bandwidth: bytes read + written
    src = torch.randn(1 << 29, device=dev, dtype=bf)
    dst = torch.empty_like(src)
    emit("copy", "torch", median_ms(lambda: dst.copy_(src)), 2 * src.numel() * 2)
    del src, dst

    R, C = 16384, 8192
    x = torch.randn(R, C, device=dev, dtype=bf)
    r = torch.randn(R, C, device=dev, dtype=bf)
    w = torch.randn(C, device=dev, dtype=bf)
    b = torch.randn(C, device=dev, dtype=bf)
    t = R * C * 2

    def add_ln(x, r, w, b):
        return F.layer_norm(x + r, (C,), w, b, 1e-5)

    def add_ln_sum(x, r, w, b):
        s = x + r
        return s, F.layer_norm(s, (C,), w, b, 1e-5)

    def add_rms(x, r, w):
        return F.rms_norm(x + r, (C,), w, 1e-6)

    def add_rms_sum(x, r, w):
        s = x + r
        return s, F.rms_norm(s, (C,), w, 1e-6)

    both("add_layernorm", add_ln, (x, r, w, b), 3 * t, not no_compile)
    both("add_layernorm+sum", add_ln_sum, (x, r, w, b), 4 * t, False)
    both("add_rmsnorm", add_rms, (x, r, w), 3 * t, not no_compile)
    both("add_rmsnorm+sum", add_rms_sum, (x, r, w), 4 * t, False)
    both("softmax", lambda x: torch.softmax(x, -1), (x,), 2 * t, not no_compile)
    del x, r

    N = 16384
    x = torch.randn(N, N, device=dev, dtype=bf)
    bias = torch.randn(N, device=dev, dtype=bf)
    scale = torch.randn(N, 1, device=dev, dtype=bf)

    def chain(x, bias, scale):
        h = (x + bias) * scale
        h = torch.relu(h * 0.5 + 1.0).square()
        h = (torch.clamp_max(h, 4.0) - 0.25).abs()
        return torch.clamp_min(h, 0.0625)

    both("pointwise_chain10", chain, (x, bias, scale), 2 * N * N * 2, not no_compile)


if __name__ == "__main__":
    main()
