"""PyTorch baseline for the plan issue's decode model, the same graph as
examples::llama_decode_stack(): 16 Llama-style layers (rmsnorm, QKV projections, half-split rope,
the new key/value appended to a KV cache of 1024 positions, GQA attention 32/8 heads of 64 with
Sq=1, output projection + residual, rmsnorm, SwiGLU MLP + residual), a final rmsnorm, batch 1 (or
--batch), bf16.
Weights are stored [in, out] as in the Sinter graph. Measures one decode step eagerly, replayed
as a CUDA graph, and through torch.compile (default mode; compiled before the timed calls, last,
so that a failure or a timeout there costs only that number); CUDA events, warm-up, median.
Prints a versions line, then one JSON object per measurement ({"case", "engine", "ms", ...}, or
"error" where one could not be measured).

    python3 bench/torch_decode_stack.py [--quick] [--no-compile] [--model 1b|8b] [--batch B]

--model: a whole model's decode step instead, as examples::llama_3_2_1b() and llama_3_8b() build
it: the layers, the final rmsnorm, the LM head [d, 128256] and a greedy argmax (1b: the stack's
shape; 8b: 32 layers, d 4096, ffn 14336, GQA 32/8 heads of 128, cache 4096). Case llama_3_2_1b or
llama_3_8b.
--batch B: one decode step of B sequences, as LlamaConfig::batch builds it: x [B, 1, d], a KV
cache [B, Hkv, past, dh] per layer each, one position (cos, sin) for all; each projection one
matmul of the B rows by the shared weight ([B, 1, d] @ [d, n]: torch folds B into M). Next token
[B, 1]. The case gains _bB (llama_3_8b_b16); batch 1 is the default and the case unchanged.
"""
import json
import sys
import time

import torch
from torch_timing import cuda_graph_of, median_ms as _median_ms
import torch.nn.functional as F

MODEL = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else None
if MODEL not in (None, "1b", "8b"):
    sys.exit(f"torch_decode_stack.py: --model takes 1b or 8b, not {MODEL!r}")
LAYERS, D, HEADS, KV_HEADS, DH, FF, PAST = 16, 2048, 32, 8, 64, 8192, 1024
if MODEL == "8b":
    LAYERS, D, HEADS, KV_HEADS, DH, FF, PAST = 32, 4096, 32, 8, 128, 14336, 4096
VOCAB = 128256
try:
    B = int(sys.argv[sys.argv.index("--batch") + 1]) if "--batch" in sys.argv else 1
except (IndexError, ValueError):
    B = 0
if B < 1:
    sys.exit("torch_decode_stack.py: --batch takes a positive integer")
CASE = {None: "llama_decode_stack", "1b": "llama_3_2_1b", "8b": "llama_3_8b"}[MODEL] + (f"_b{B}" if B > 1 else "")
ITERS = 20 if "--quick" in sys.argv else 100


def median_ms(fn, iters=ITERS, warmup=5):
    return _median_ms(fn, iters, warmup)


def rmsnorm(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def rope(x, cos, sin):  # half-split, x [B, H, 1, DH], cos/sin [1, DH/2] f32
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


def layer(x, p, cos, sin):  # x [B, 1, D]
    h = rmsnorm(x, p["attn_norm"])
    q = (h @ p["wq"]).view(B, 1, HEADS, DH).transpose(1, 2)
    k = (h @ p["wk"]).view(B, 1, KV_HEADS, DH).transpose(1, 2)
    v = (h @ p["wv"]).view(B, 1, KV_HEADS, DH).transpose(1, 2)
    q, k = rope(q, cos, sin), rope(k, cos, sin)
    k_all = torch.cat([p["k_cache"], k], dim=2)
    v_all = torch.cat([p["v_cache"], v], dim=2)
    # Sq = 1 against the whole cache: bottom-right causal masks nothing.
    o = F.scaled_dot_product_attention(q, k_all, v_all, enable_gqa=True)
    x1 = o.transpose(1, 2).reshape(B, 1, HEADS * DH) @ p["wo"] + x
    h2 = rmsnorm(x1, p["ffn_norm"])
    y = (F.silu(h2 @ p["w_gate"]) * (h2 @ p["w_up"])) @ p["w_down"] + x1
    return y, k_all, v_all


def main():
    torch.manual_seed(0)
    dev, bf = "cuda", torch.bfloat16

    def w(i, o):
        return ((torch.rand(i, o, device=dev) * 2 - 1) / i ** 0.5).to(bf)

    params = []
    for _ in range(LAYERS):
        params.append({
            "attn_norm": torch.rand(D, device=dev).to(bf), "ffn_norm": torch.rand(D, device=dev).to(bf),
            "wq": w(D, HEADS * DH), "wk": w(D, KV_HEADS * DH), "wv": w(D, KV_HEADS * DH), "wo": w(HEADS * DH, D),
            "w_gate": w(D, FF), "w_up": w(D, FF), "w_down": w(FF, D),
            "k_cache": torch.rand(B, KV_HEADS, PAST, DH, device=dev).to(bf),
            "v_cache": torch.rand(B, KV_HEADS, PAST, DH, device=dev).to(bf),
        })
    final_norm = torch.rand(D, device=dev).to(bf)
    lm_head = w(D, VOCAB) if MODEL else None
    x = (torch.rand(B, 1, D, device=dev) * 2 - 1).to(bf)
    cos = torch.rand(1, DH // 2, device=dev)
    sin = torch.rand(1, DH // 2, device=dev)
    nbytes = sum(t.numel() * t.element_size() for p in params for t in p.values()) + final_norm.numel() * 2
    if lm_head is not None:
        nbytes += lm_head.numel() * 2

    def step():
        h, caches = x, []
        for p in params:
            h, k, v = layer(h, p, cos, sin)
            caches.append((k, v))
        y = rmsnorm(h, final_norm)
        if lm_head is not None:
            return torch.argmax(y.view(B, D) @ lm_head, dim=-1, keepdim=True), caches
        return y, caches

    def emit(engine, ms, **extra):
        print(json.dumps({"case": CASE, "engine": engine, "ms": round(ms, 4), "batch": B,
                          "bytes": nbytes, "tbps": round(nbytes / (ms * 1e-3) / 1e12, 3), **extra}), flush=True)

    print(json.dumps({"case": "torch_versions", "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}),
          flush=True)
    with torch.no_grad():
        emit("torch-eager", median_ms(step))
        emit("torch-cuda-graph", median_ms(cuda_graph_of(step)))
        if "--no-compile" in sys.argv:
            return
        try:
            t0 = time.perf_counter()
            compiled = torch.compile(step)
            compiled()  # compiles here, outside the timed calls
            torch.cuda.synchronize()
            emit("torch-compile", median_ms(compiled), compile_s=round(time.perf_counter() - t0, 1))
        except Exception as e:  # noqa: BLE001 (no compiler toolchain, a graph break that fails: say so)
            print(json.dumps({"case": CASE, "engine": "torch-compile",
                              "error": f"{type(e).__name__}: {e}"[:300]}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except torch.cuda.OutOfMemoryError as e:  # the 8B's shape at batch 64 holds 2 x 34 GB of KV caches
        print(json.dumps({"case": CASE, "engine": "torch-eager", "batch": B,
                          "error": f"out of GPU memory: {e}"[:300]}), flush=True)
        sys.exit(1)
