"""PyTorch baselines for bench/bench_vendor.cpp, measured on the same GPU in the same run.

SDPA through PyTorch's cuDNN backend and its flash backend (torch.nn.attention.sdpa_kernel),
and the conv3x3 (channels_last bf16) bare and with bias + relu. Prints one JSON object per
line: {"case", "engine", "ms", "tflops", "tbps"}; a backend that refuses a case prints "error".
Timing: CUDA events, warm-up, median of many (the same method as Sinter's time_ms).
"""
import json
import sys

import torch
from torch_timing import emit_rate as emit
from torch_timing import median_ms as _median_ms
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

ITERS = 10 if "--quick" in sys.argv else 50
# --only=A,B: only the cases whose name contains one of these (as sinter_bench_vendor's --only)
ONLY = next((a[len("--only="):].split(",") for a in sys.argv if a.startswith("--only=")), None)


def wanted(name):
    return ONLY is None or any(o in name for o in ONLY)


def median_ms(fn, iters=ITERS, warmup=5):
    return _median_ms(fn, iters, warmup)


def sdpa_case(name, b, h, hkv, sq, skv, d, causal):
    if not wanted(name):
        return
    bf = torch.bfloat16
    q = torch.randn(b, h, sq, d, device="cuda", dtype=bf)
    k = torch.randn(b, hkv, skv, d, device="cuda", dtype=bf)
    v = torch.randn(b, hkv, skv, d, device="cuda", dtype=bf)
    flops = 4.0 * b * h * sq * skv * d / (2 if causal else 1)
    nbytes = 2.0 * (2 * b * h * sq * d + 2 * b * hkv * skv * d)
    gqa = h != hkv
    for backend, label in ((SDPBackend.CUDNN_ATTENTION, "torch-cudnn"),
                           (SDPBackend.FLASH_ATTENTION, "torch-flash")):
        try:
            with sdpa_kernel(backend):
                def run():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
                run()
                emit(name, label, median_ms(run), flops, nbytes)
        except Exception as e:  # a backend that cannot run this case says so
            print(json.dumps({"case": name, "engine": label, "error": str(e)[:300]}), flush=True)


def conv_case():
    if not wanted("conv3x3_bias_relu"):
        return
    n, c, hw, k = 32, 256, 56, 256
    bf = torch.bfloat16
    x = torch.randn(n, c, hw, hw, device="cuda", dtype=bf).to(memory_format=torch.channels_last)
    w = (torch.randn(k, c, 3, 3, device="cuda", dtype=bf) / (9 * c) ** 0.5).to(
        memory_format=torch.channels_last)
    bias = torch.randn(k, device="cuda", dtype=bf)
    flops = 2.0 * n * hw * hw * k * c * 9
    nbytes = 2.0 * (n * hw * hw * c + k * 9 * c + n * hw * hw * k)
    emit("conv3x3_bias_relu", "torch-conv-bare",
         median_ms(lambda: F.conv2d(x, w, padding=1)), flops, nbytes)
    emit("conv3x3_bias_relu", "torch-conv-bias-relu",
         median_ms(lambda: F.relu(F.conv2d(x, w, bias, padding=1))), flops, nbytes)


def matmul_bias_gelu_case():
    """y = gelu_tanh(a @ w.T + bias) at 4096^3: eager (cuBLAS matmul with the bias, then GELU),
    torch.compile, and the bare matmul."""
    s = 4096
    bf = torch.bfloat16
    a = torch.randn(s, s, device="cuda", dtype=bf)
    w = torch.randn(s, s, device="cuda", dtype=bf) / s ** 0.5
    bias = torch.randn(s, device="cuda", dtype=bf)
    flops, nbytes = 2.0 * s ** 3, 2.0 * 3 * s * s
    name = "matmul_bias_gelu_4096"
    if not wanted(name):
        return

    def eager():
        return F.gelu(F.linear(a, w, bias), approximate="tanh")

    emit(name, "torch-eager", median_ms(eager), flops, nbytes)
    emit(name, "torch-bare-matmul", median_ms(lambda: a @ w.T), flops, nbytes)
    try:
        compiled = torch.compile(eager)
        compiled()
        emit(name, "torch-compile", median_ms(compiled), flops, nbytes)
    except Exception as e:  # no compiler toolchain on the machine: say so
        print(json.dumps({"case": name, "engine": "torch-compile", "error": str(e)[:300]}), flush=True)


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    print(json.dumps({"case": "torch_versions", "torch": torch.__version__,
                      "cudnn": torch.backends.cudnn.version(),
                      "gpu": torch.cuda.get_device_name()}), flush=True)
    sdpa_case("sdpa_d128", 4, 32, 32, 4096, 4096, 128, False)
    sdpa_case("sdpa_d128_causal", 4, 32, 32, 4096, 4096, 128, True)
    sdpa_case("sdpa_d64", 4, 32, 32, 4096, 4096, 64, False)
    sdpa_case("sdpa_d64_causal", 4, 32, 32, 4096, 4096, 64, True)
    sdpa_case("sdpa_decode_gqa", 32, 32, 8, 1, 4096, 128, False)
    sdpa_case("sdpa_decode_b1_skv1025", 1, 32, 8, 1, 1025, 128, False)  # Sq 1: every key visible
    sdpa_case("sdpa_decode_b1_skv1025_d64", 1, 32, 8, 1, 1025, 64, False)
    conv_case()
    matmul_bias_gelu_case()


if __name__ == "__main__":
    main()
