"""How every PyTorch baseline script times a call: CUDA events around each call after a warm-up,
the calls enqueued back to back, the median of `iters` calls, in milliseconds. Imported by the
bench/torch_*.py scripts (they run as `python3 bench/NAME.py`, so this folder is on the import
path)."""
import json
import os

import torch


def cuda_graph_of(fn):
    """fn captured once into a CUDA graph (after warm-up calls on a side stream, as PyTorch's docs
    ask: the first calls pick kernels and allocate); returns the graph's replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def median_ms(fn, iters, warmup=5):
    """As Sinter's cuda::time_calls: the calls enqueued back to back and the host waits once, so
    no interval holds the host's launch latency; SINTER_TIMING=synced waits after each call (the
    method before session 9)."""
    synced = os.environ.get("SINTER_TIMING") == "synced"
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        if synced:
            b.synchronize()
        events.append((a, b))
    torch.cuda.synchronize()
    times = sorted(a.elapsed_time(b) for a, b in events)
    return times[len(times) // 2]


def emit_rate(case, engine, ms, flops, nbytes):
    """One result line of the GEMM-like baselines (torch_vendor_baselines.py,
    torch_gemm_baselines.py): {"case", "engine", "ms", "tflops", "tbps"}, flushed so a timeout
    later keeps every finished line."""
    print(json.dumps({"case": case, "engine": engine, "ms": round(ms, 5),
                      "tflops": round(flops / (ms * 1e-3) / 1e12, 2),
                      "tbps": round(nbytes / (ms * 1e-3) / 1e12, 3)}), flush=True)
