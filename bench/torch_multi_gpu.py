"""PyTorch baselines on several GPUs of one host, torch.distributed with NCCL, one process per GPU
(torch.multiprocessing), the same cases as sinter_bench_multi_gpu:

  gemm_ar_mM: rank r computes x_r [M, K/W] @ w_r [K/W, N] and all-reduces the [M, N] partial sums
              (K = N = 8192, bf16): eager and as a CUDA graph.
  decode_tp_1b / decode_tp_8b: one decode step of the Llama stack (bench/torch_decode_stack.py's
              model with its LM head and greedy argmax: 1b = Llama-3.2-1B's shape, 8b =
              Llama-3-8B's) in Megatron tensor parallelism: Q, K, V, gate and up projections split
              by output column, the attention output and down projections by input row, each
              followed by an all_reduce; heads and KV-cache heads split by rank; the LM head whole
              on every rank. Eager and as a CUDA graph.

Times: each rank's median (CUDA events after warm-up, torch_timing.median_ms) and the slowest
rank's reported; one JSON line per measurement ({"case", "world", "engine", "ms"}), printed by
rank 0. With fewer than 2 GPUs it prints a line saying so and exits with status 3.

    python3 bench/torch_multi_gpu.py [--world W] [--quick] [--cases gemm_ar,decode_tp]
                                     [--m 16,128,1024,4096] [--models 1b,8b]
"""
import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from torch_timing import cuda_graph_of, median_ms


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


ITERS = 20 if "--quick" in sys.argv else 100
CASES = arg("--cases", "gemm_ar,decode_tp").split(",")
MS = [int(m) for m in arg("--m", "16,128,1024,4096").split(",")]
MODELS = arg("--models", "1b").split(",")
SHAPES = {"1b": (16, 2048, 32, 8, 64, 8192, 1024), "8b": (32, 4096, 32, 8, 128, 14336, 4096)}
VOCAB = 128256


def slowest(ms, world):
    """The largest of every rank's median (all ranks call this)."""
    t = torch.tensor([ms], device="cuda")
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def gemm_ar(rank, world, emit):
    k = n = 8192
    for m in MS:
        x = torch.randn(m, k // world, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(k // world, n, device="cuda", dtype=torch.bfloat16) / (k ** 0.5)

        def step():
            y = x @ w
            dist.all_reduce(y)
            return y

        emit(f"gemm_ar_m{m}", "torch-eager", slowest(median_ms(step, ITERS), world))
        emit(f"gemm_ar_m{m}", "torch-cuda-graph", slowest(median_ms(cuda_graph_of(step), ITERS), world))


def rmsnorm(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


def decode_tp(rank, world, emit):
    for model in MODELS:
        layers, d, heads, kv_heads, dh, ff, past = SHAPES[model]
        if heads % world or kv_heads % world or ff % world:
            emit(f"decode_tp_{model}", "torch-eager", None, error=f"heads {heads}/{kv_heads} or ffn do not divide by {world}")
            continue
        h, hkv, f = heads // world, kv_heads // world, ff // world
        bf = torch.bfloat16

        def w(i, o):
            return ((torch.rand(i, o, device="cuda") * 2 - 1) / i ** 0.5).to(bf)

        params = [{
            "attn_norm": torch.rand(d, device="cuda").to(bf), "ffn_norm": torch.rand(d, device="cuda").to(bf),
            "wq": w(d, h * dh), "wk": w(d, hkv * dh), "wv": w(d, hkv * dh), "wo": w(h * dh, d),
            "w_gate": w(d, f), "w_up": w(d, f), "w_down": w(f, d),
            "k_cache": torch.rand(1, hkv, past, dh, device="cuda").to(bf),
            "v_cache": torch.rand(1, hkv, past, dh, device="cuda").to(bf),
        } for _ in range(layers)]
        final_norm = torch.rand(d, device="cuda").to(bf)
        lm_head = w(d, VOCAB)
        x = (torch.rand(1, 1, d, device="cuda") * 2 - 1).to(bf)
        cos = torch.rand(1, dh // 2, device="cuda")
        sin = torch.rand(1, dh // 2, device="cuda")

        def layer(x, p):
            a = rmsnorm(x, p["attn_norm"])
            q = rope((a @ p["wq"]).view(1, 1, h, dh).transpose(1, 2), cos, sin)
            k = rope((a @ p["wk"]).view(1, 1, hkv, dh).transpose(1, 2), cos, sin)
            v = (a @ p["wv"]).view(1, 1, hkv, dh).transpose(1, 2)
            k_all = torch.cat([p["k_cache"], k], dim=2)
            v_all = torch.cat([p["v_cache"], v], dim=2)
            o = F.scaled_dot_product_attention(q, k_all, v_all, enable_gqa=True)
            attn = o.transpose(1, 2).reshape(1, 1, h * dh) @ p["wo"]
            dist.all_reduce(attn)
            x1 = attn + x
            b = rmsnorm(x1, p["ffn_norm"])
            mlp = (F.silu(b @ p["w_gate"]) * (b @ p["w_up"])) @ p["w_down"]
            dist.all_reduce(mlp)
            return mlp + x1

        def step():
            y = x
            for p in params:
                y = layer(y, p)
            return torch.argmax(rmsnorm(y, final_norm).view(1, d) @ lm_head, dim=-1, keepdim=True)

        with torch.no_grad():
            emit(f"decode_tp_{model}", "torch-eager", slowest(median_ms(step, ITERS), world))
            emit(f"decode_tp_{model}", "torch-cuda-graph", slowest(median_ms(cuda_graph_of(step), ITERS), world))


def worker(rank, world, init):
    torch.cuda.set_device(rank)
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # NVLink multicast is not allowed on these machines
    dist.init_process_group("nccl", init_method=init, rank=rank, world_size=world, device_id=torch.device("cuda", rank))

    def emit(case, engine, ms, **extra):
        if rank != 0:
            return
        line = {"case": case, "world": world, "ranks": "gpus", "engine": engine, **extra}
        if ms is not None:
            line["ms"] = round(ms, 5)
        print(json.dumps(line), flush=True)

    if rank == 0:
        print(json.dumps({"case": "torch_versions", "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                          "gpu": torch.cuda.get_device_name(), "world": world}), flush=True)
    torch.manual_seed(1 + rank)
    if "gemm_ar" in CASES:
        gemm_ar(rank, world, emit)
    if "decode_tp" in CASES:
        decode_tp(rank, world, emit)
    dist.barrier()
    dist.destroy_process_group()


def main():
    gpus = torch.cuda.device_count()
    world = min(int(arg("--world", gpus)), gpus)
    if world < 2:
        print(json.dumps({"case": "multi_gpu", "engine": "torch", "skipped":
                          f"needs 2 GPUs or more of one host; this machine has {gpus}"}), flush=True)
        sys.exit(3)
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(worker, args=(world, "file://" + os.path.join(d, "rendezvous")), nprocs=world, join=True)


if __name__ == "__main__":
    main()
