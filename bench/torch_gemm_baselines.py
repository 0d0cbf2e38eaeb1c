"""PyTorch baselines for bench/bench_gemm.cpp (issue 4), measured on the same GPU in the same call:
cuBLAS through torch.matmul for the bare GEMMs, PyTorch eager and torch.compile for the fused
bias + GELU + amax case, torch.addmm (cuBLAS's fused residual), eager and torch.compile for a GEMM + residual, torch._scaled_mm for the fp8 e4m3 GEMMs, and F.linear for the decode shapes. Same problems as sinter_bench_gemm:
a [M, K] bf16 times an [N, K] weight seen as [K, N] (a @ w.T), the bias a bf16 [N] row, GELU the
erf form (torch's default, as Sinter's gelu), amax = max |h| over the whole output.

Prints one JSON object per line: {"case", "engine", "ms", "tflops", "tbps"}; an engine that
fails prints "error". Timing: bench/torch_timing.py (events, calls back to back, median).
  python3 bench/torch_gemm_baselines.py [--quick] [--no-autotune] [--only=A,B]
--no-autotune skips torch.compile(mode="max-autotune"), whose Triton search takes minutes.
"""
import json
import sys

import torch
import torch.nn.functional as F
from torch_timing import emit_rate as emit
from torch_timing import median_ms as _median_ms

ITERS = 30 if "--quick" in sys.argv else 100
AUTOTUNE = "--no-autotune" not in sys.argv
ONLY = next((a[len("--only="):].split(",") for a in sys.argv if a.startswith("--only=")), None)


def wanted(name):
    return ONLY is None or any(o in name for o in ONLY)


def median_ms(fn):
    return _median_ms(fn, ITERS, warmup=10)


def error(case, engine, e):
    print(json.dumps({"case": case, "engine": engine, "error": str(e)[:300]}), flush=True)


def operands(m, n, k):
    bf = torch.bfloat16
    a = torch.randn(m, k, device="cuda", dtype=bf)
    w = torch.randn(n, k, device="cuda", dtype=bf) / k ** 0.5
    return a, w


def bare_case(s):
    name = f"gemm_{s}"
    if not wanted(name):
        return
    a, w = operands(s, s, s)
    emit(name, "torch-matmul", median_ms(lambda: torch.matmul(a, w.t())), 2.0 * s ** 3, 2.0 * 3 * s * s)


def fused_case(s):
    name = f"gemm_bias_gelu_amax_{s}"
    if not wanted(name):
        return
    a, w = operands(s, s, s)
    bias = torch.randn(s, device="cuda", dtype=torch.bfloat16)
    flops, nbytes = 2.0 * s ** 3, 2.0 * 3 * s * s

    def eager():
        h = F.gelu(a @ w.t() + bias)
        return h, h.abs().amax()

    emit(name, "torch-matmul-bare", median_ms(lambda: torch.matmul(a, w.t())), flops, nbytes)
    emit(name, "torch-eager", median_ms(eager), flops, nbytes)
    modes = [("torch-compile", None)] + ([("torch-compile-max-autotune", "max-autotune")] if AUTOTUNE else [])
    for engine, mode in modes:
        try:
            torch._dynamo.reset()
            fn = torch.compile(eager, mode=mode) if mode else torch.compile(eager)
            fn()
            emit(name, engine, median_ms(fn), flops, nbytes)
        except Exception as e:  # no compiler toolchain on the machine: say so
            error(name, engine, e)


def residual_case(s):
    """sinter_bench_gemm's --shapes SxSxS:residual: a @ w.T + res, res a bf16 [M, N]: torch.addmm (cuBLAS with
    beta 1, the residual fused as C), eager (matmul, then a separate add) and torch.compile."""
    name = f"gemm_{s}x{s}x{s}_residual"
    if not wanted(name):
        return
    a, w = operands(s, s, s)
    res = torch.randn(s, s, device="cuda", dtype=torch.bfloat16)
    flops, nbytes = 2.0 * s ** 3, 2.0 * 4 * s * s
    emit(name, "torch-addmm", median_ms(lambda: torch.addmm(res, a, w.t())), flops, nbytes)
    eager = lambda: a @ w.t() + res
    emit(name, "torch-eager", median_ms(eager), flops, nbytes)
    try:
        torch._dynamo.reset()
        fn = torch.compile(eager)
        fn()
        emit(name, "torch-compile", median_ms(fn), flops, nbytes)
    except Exception as e:  # no compiler toolchain on the machine: say so
        error(name, "torch-compile", e)


def fp8_case(s):
    """fp8 e4m3 [M, K] x an [N, K] weight (M = N = s, K = 4096), bf16 out, unit scales: torch._scaled_mm (cuBLASLt's fp8
    GEMM, which wants the weight as a column-major [K, N], i.e. w.t() of a row-major [N, K])."""
    name = f"gemm_fp8_e4m3_{s}"
    if not wanted(name):
        return
    try:
        f8 = torch.float8_e4m3fn
        k = 4096  # as sinter_bench_gemm's fp8 cases: M = N = s, K = 4096
        a = torch.randn(s, k, device="cuda").to(f8)
        w = (torch.randn(s, k, device="cuda") / k ** 0.5).to(f8)
        one = torch.ones((), device="cuda")
        fn = lambda: torch._scaled_mm(a, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        fn()
        emit(name, "torch-scaled-mm", median_ms(fn), 2.0 * s * s * k, 2.0 * s * k + 2.0 * s * s)
    except Exception as e:  # an install without fp8 GEMM support: say so
        error(name, "torch-scaled-mm", e)


def decode_case(m):
    name = f"decode_m{m}"
    if not wanted(name):
        return
    x, w = operands(m, 14336, 4096)
    emit(name, "torch-linear", median_ms(lambda: F.linear(x, w)), 2.0 * m * 14336 * 4096, 2.0 * 14336 * 4096)


def main():
    torch.manual_seed(0)
    print(json.dumps({"case": "torch_versions", "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name(), "iters": ITERS}), flush=True)
    bare_case(4096)
    bare_case(8192)
    fused_case(4096)
    residual_case(4096)
    fp8_case(4096)
    fp8_case(8192)
    for m in (1, 8, 16):
        decode_case(m)


if __name__ == "__main__":
    main()
