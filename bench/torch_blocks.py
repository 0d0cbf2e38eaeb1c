"""PyTorch baselines for the example graphs (examples/example_graphs.cpp, examples/*.json): the same
shapes, dtypes and math as transformer_block, conv_block, mlp_layer and llama_decode_layer, each
timed eagerly, through torch.compile (default mode) and as a replayed CUDA graph of the eager
function, so bench/device.py's blocks step can put them next to Sinter's stream and graph executors.

The graphs store matmul weights [in, out], so `x @ w` here; conv_block is NHWC with KRSC weights,
which is PyTorch's channels_last layout (a [N, C, H, W] tensor with NHWC strides, weights
[K, C, R, S] with KRSC strides): the same bytes in memory as Sinter's tensors.

Prints a {"meta": ...} line, then one JSON object per measurement:
    {"case": "transformer_block", "engine": "torch-eager" | "torch-compile" | "torch-cuda-graph", "ms": ...}
and {"case": ..., "engine": ..., "error": "..."} where one could not be measured (torch.compile
failing on one model must not cost the other numbers).

    python3 bench/torch_blocks.py [--quick] [--only=transformer_block,conv_block]
"""
import json
import sys
import time

import torch
import torch.nn.functional as F
from torch_timing import cuda_graph_of, median_ms

QUICK = "--quick" in sys.argv
ITERS = 50 if QUICK else 200  # as the blocks step's `sinter bench --iters` (bench/device.py)
WARMUP = 20                   # as `sinter bench`'s default --warmup
DEV, BF = "cuda", torch.bfloat16


def emit(**row):
    print(json.dumps(row), flush=True)  # flushed: a timeout later keeps every finished line


def uniform(*shape, scale=1.0):
    return ((torch.rand(*shape, device=DEV) * 2 - 1) * scale).to(BF)


def weight(i, o):  # [in, out], scaled so activations stay O(1) through the block
    return uniform(i, o, scale=i ** -0.5)


# --- transformer_block: b 2, s 128, d 512, 8 heads of 64, ffn 2048 ------------------------------
def transformer_block():
    b, s, d, heads, dh, ff = 2, 128, 512, 8, 64, 2048
    p = {"x": uniform(b, s, d),
         "ln1_w": uniform(d), "ln1_b": uniform(d), "w_qkv": weight(d, 3 * d), "b_qkv": uniform(3 * d),
         "w_o": weight(d, d), "b_o": uniform(d),
         "ln2_w": uniform(d), "ln2_b": uniform(d), "w_up": weight(d, ff), "b_up": uniform(ff),
         "w_down": weight(ff, d), "b_down": uniform(d)}

    def fn():
        x = p["x"]
        h = F.layer_norm(x, (d,), p["ln1_w"], p["ln1_b"], 1e-5)
        qkv = (h @ p["w_qkv"] + p["b_qkv"]).view(b, s, 3, heads, dh)
        # slice i of axis 2, then [b, s, H, Dh] -> [b, H, s, Dh], as the graph's head(i)
        q, k, v = [qkv[:, :, i].permute(0, 2, 1, 3) for i in range(3)]
        # Sq == Skv: top-left causal (the graph's mask) is PyTorch's is_causal
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x1 = o.permute(0, 2, 1, 3).reshape(b, s, d) @ p["w_o"] + p["b_o"] + x
        h2 = F.layer_norm(x1, (d,), p["ln2_w"], p["ln2_b"], 1e-5)
        up = F.gelu(h2 @ p["w_up"] + p["b_up"])  # exact (erf) GELU, the graph's gelu op
        return up @ p["w_down"] + p["b_down"] + x1
    return fn


# --- conv_block: NHWC 4x28x28x64, two 3x3 convs (pad 1) with bias, relu, residual, relu ---------
def conv_block():
    n, h, w, c = 4, 28, 28, 64
    cl = torch.channels_last
    x = uniform(n, c, h, w).contiguous(memory_format=cl)
    w1 = uniform(c, c, 3, 3, scale=(9 * c) ** -0.5).contiguous(memory_format=cl)
    w2 = uniform(c, c, 3, 3, scale=(9 * c) ** -0.5).contiguous(memory_format=cl)
    b1, b2 = uniform(c), uniform(c)

    def fn():
        h1 = F.relu(F.conv2d(x, w1, b1, padding=1))  # conv + bias = the graph's conv2d, add
        h2 = F.conv2d(h1, w2, b2, padding=1)
        return F.relu(h2 + x)
    return fn


# --- mlp_layer: x [128, 1024] @ w [1024, 4096] + b, exact GELU, and amax (max |y|) of the result -
def mlp_layer():
    x, w, bias = uniform(128, 1024), weight(1024, 4096), uniform(4096)

    def fn():
        y = F.gelu(x @ w + bias)
        return y, y.abs().amax()
    return fn


# --- llama_decode_layer: d 512, GQA 8/2 heads of 64, ffn 1408, KV cache of 255 + the new token --
def gqa_supported():
    major, minor = (int(v) for v in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 5)  # scaled_dot_product_attention(enable_gqa=) since 2.5


def rmsnorm(x, w, eps=1e-5):  # as bench/torch_decode_stack.py: f32 inside, bf16 out
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def rope(x, cos, sin):  # half-split pairs (i, i + Dh/2); x [1, H, 1, Dh], cos/sin [1, Dh/2] f32
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


def llama_decode_layer():
    d, heads, kv_heads, dh, ff, past = 512, 8, 2, 64, 1408, 255
    p = {"x": uniform(1, 1, d), "attn_norm": torch.rand(d, device=DEV).to(BF),
         "wq": weight(d, heads * dh), "wk": weight(d, kv_heads * dh), "wv": weight(d, kv_heads * dh),
         "wo": weight(heads * dh, d), "ffn_norm": torch.rand(d, device=DEV).to(BF),
         "w_gate": weight(d, ff), "w_up": weight(d, ff), "w_down": weight(ff, d),
         "k_cache": uniform(1, kv_heads, past, dh), "v_cache": uniform(1, kv_heads, past, dh),
         "cos": torch.rand(1, dh // 2, device=DEV), "sin": torch.rand(1, dh // 2, device=DEV)}
    native_gqa = gqa_supported()

    def to_heads(t, n):  # [1, 1, n*Dh] -> [1, n, 1, Dh]
        return t.view(1, 1, n, dh).permute(0, 2, 1, 3)

    def fn():
        x = p["x"]
        h = rmsnorm(x, p["attn_norm"])
        q = rope(to_heads(h @ p["wq"], heads), p["cos"], p["sin"])
        k = rope(to_heads(h @ p["wk"], kv_heads), p["cos"], p["sin"])
        v = to_heads(h @ p["wv"], kv_heads)
        k_all = torch.cat([p["k_cache"], k], dim=2)  # [1, 2, 256, 64]: graph outputs k/v_cache_next
        v_all = torch.cat([p["v_cache"], v], dim=2)
        # Sq = 1 against the whole cache: the graph's bottom-right causal mask masks nothing.
        if native_gqa:
            o = F.scaled_dot_product_attention(q, k_all, v_all, enable_gqa=True)
        else:
            rep = heads // kv_heads
            o = F.scaled_dot_product_attention(q, k_all.repeat_interleave(rep, 1), v_all.repeat_interleave(rep, 1))
        x1 = o.permute(0, 2, 1, 3).reshape(1, 1, heads * dh) @ p["wo"] + x
        h2 = rmsnorm(x1, p["ffn_norm"])
        y = (F.silu(h2 @ p["w_gate"]) * (h2 @ p["w_up"])) @ p["w_down"] + x1
        return y, k_all, v_all
    return fn


CASES = {"transformer_block": transformer_block, "conv_block": conv_block,
         "mlp_layer": mlp_layer, "llama_decode_layer": llama_decode_layer}


def measure_uncompiled(case, fn):
    for engine, make in (("torch-eager", lambda: fn), ("torch-cuda-graph", lambda: cuda_graph_of(fn))):
        try:
            emit(case=case, engine=engine, ms=round(median_ms(make(), ITERS, WARMUP), 4))
        except Exception as e:  # noqa: BLE001 - report it as a row, keep going
            emit(case=case, engine=engine, error=f"{type(e).__name__}: {e}"[:300])


def measure_compiled(case, fn):
    try:
        compiled = torch.compile(fn)
        t0 = time.perf_counter()
        compiled()  # compiles here, outside the timed calls
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t0
        emit(case=case, engine="torch-compile", ms=round(median_ms(compiled, ITERS, WARMUP), 4),
             compile_s=round(compile_s, 1))
    except Exception as e:  # noqa: BLE001
        emit(case=case, engine="torch-compile", error=f"{type(e).__name__}: {e}"[:300])


def main():
    only = next((a.split("=", 1)[1].split(",") for a in sys.argv[1:] if a.startswith("--only=")), None)
    unknown = [c for c in (only or []) if c not in CASES]
    if unknown:
        sys.exit(f"unknown case(s) {unknown}; cases: {', '.join(CASES)}")
    emit(meta={"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "iters": ITERS})
    with torch.no_grad():
        fns = {}
        for case, build in CASES.items():
            if only is None or case in only:
                torch.manual_seed(0)
                fns[case] = build()
        # Every eager and CUDA-graph number first, torch.compile last: compiling is the slow and
        # fragile part, so a timeout or a crash there costs only the compiled numbers after it
        # (one process for all cases: inductor's start-up is paid once).
        for case, fn in fns.items():
            measure_uncompiled(case, fn)
        for case, fn in fns.items():
            measure_compiled(case, fn)


if __name__ == "__main__":
    main()
