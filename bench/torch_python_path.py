"""Sinter's Python path beside PyTorch and beside Sinter's C++ runner, on models written in torch.nn
(python/tests/torch_models.py: the MLP, conv block, transformer block and Llama-style layer, and
transformers' LlamaForCausalLM from embeddings when transformers is installed), bf16 on one GPU.

For each model, timed as bench/torch_timing.py times (events around each call, calls back to back,
median):
    torch-eager, torch-cuda-graph (eager replayed), torch-compile (default mode),
    torch-compile-max-autotune (with --autotune),
    sinter-python-graph      from_torch + sinter.compile + TorchRunner(mode="graph"): bound once,
                             then runner.enqueue() per call (as a C++ program binds once and enqueues)
    sinter-python-given      runner(feeds, outputs=...) per call: every tensor checked and bound
    sinter-python-call       runner(feeds) per call: checked, outputs allocated (new addresses:
                             the graph is captured again and updated each call)
    sinter-backend-graph     torch.compile(backend="sinter", mode="reduce-overhead")
    sinter-cpp-graph         the same plan saved as a bundle and timed by `sinter bench --executor
                             graph --json` (the C++ runner, CUDA events the same way; with --sinter BIN)
and the host time per call of the Python runner (`host_us`: wall time of 200 calls issued back to
back, divided by 200). The Python path's overhead is sinter-python-graph minus sinter-cpp-graph
(`python_overhead_us`); outputs are checked against torch eager in float32 (relative L2 <= 1e-2).

Prints a {"meta": ...} line, then one JSON object per measurement:
    {"case": "python_mlp", "engine": "sinter-python-graph", "ms": ..., "host_us": ...}
and {"case": ..., "engine": ..., "error": "..."} where one could not be measured.

    python3 bench/torch_python_path.py [--quick] [--autotune] [--no-compile] [--sinter BIN]
                                       [--only=mlp,llama]
Needs the sinter module on PYTHONPATH (built on this machine) and a GPU.
"""
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python", "tests"))

import torch  # noqa: E402
from torch_timing import cuda_graph_of, median_ms  # noqa: E402

import sinter  # noqa: E402
import sinter.dynamo_backend  # noqa: E402,F401  (registers backend="sinter")
import torch_models  # noqa: E402

ARGS = sys.argv[1:]
QUICK = "--quick" in ARGS
ITERS = 50 if QUICK else 200
DEV = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else None


def option(name, default=None):
    for i, a in enumerate(ARGS):
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
        if a == name and i + 1 < len(ARGS):
            return ARGS[i + 1]
    return default


def emit(**row):
    print(json.dumps(row), flush=True)


def models():
    names = list(torch_models.NAMES)
    try:
        import transformers  # noqa: F401
        names.append("hf_llama")
    except ImportError:
        emit(case="python_hf_llama", engine="all", error="transformers is not installed")
    only = option("--only")
    return [n for n in names if not only or n in only.split(",")]


def build(name):
    if name == "hf_llama":
        return torch_models.build_hf_llama(torch.bfloat16, DEV)
    return torch_models.build(name, torch.bfloat16, DEV)


def rel_error(got, model, inputs):
    with torch.no_grad():
        want = copy.deepcopy(model).float()(*(x.float() for x in inputs)).float()
    return float((got.float() - want).norm() / want.norm())


def host_us(fn, calls=200):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return round(elapsed / calls * 1e6, 2)


def measure(case, engine, fn, **extra):
    try:
        emit(case=case, engine=engine, ms=round(median_ms(fn, ITERS, warmup=10), 5), **extra)
    except Exception as e:  # one failing engine must not cost the other numbers
        emit(case=case, engine=engine, error=f"{type(e).__name__}: {e}"[:400])


def cpp_ms(plan, sinter_bin):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "plan.sinter")
        plan.save(path)
        done = subprocess.run([sinter_bin, "bench", path, "--executor", "graph", "--json", "--iters", str(ITERS),
                               "--warmup", "10"], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"sinter bench exited {done.returncode}: {done.stderr.strip()[-300:]}")
        return float(json.loads(done.stdout)["latency_ms"]["p50"])


def run_model(name, sinter_bin):
    case = f"python_{name}"
    model, inputs = build(name)
    with torch.no_grad():
        eager = lambda: model(*inputs)  # noqa: E731
        measure(case, "torch-eager", eager)
        measure(case, "torch-cuda-graph", cuda_graph_of(eager))
        if "--no-compile" not in ARGS:
            torch._dynamo.reset()
            compiled = torch.compile(model)
            measure(case, "torch-compile", lambda: compiled(*inputs))
            if "--autotune" in ARGS:
                torch._dynamo.reset()
                tuned = torch.compile(model, mode="max-autotune")
                measure(case, "torch-compile-max-autotune", lambda: tuned(*inputs))

    imported = sinter.import_torch(model, inputs)
    names = [t.name for t in imported.graph.inputs if t.name not in imported.weights]
    feeds = {**dict(zip(names, inputs)), **{n: w.to(DEV) for n, w in imported.weights.items()}}
    plan = sinter.compile(imported.graph, device=DEV.index)
    runner = sinter.TorchRunner(plan, mode="graph")
    out = runner.bind(feeds)["output"]
    runner.enqueue()
    torch.cuda.synchronize()
    error = rel_error(out, model, inputs)
    python_ms = median_ms(runner.enqueue, ITERS, warmup=10)
    emit(case=case, engine="sinter-python-graph", ms=round(python_ms, 5), host_us=host_us(runner.enqueue),
         rel_l2=round(error, 6), outputs="correct" if error <= 1e-2 else "WRONG")
    outputs = {"output": torch.empty_like(out)}
    measure(case, "sinter-python-given", lambda: runner(feeds, outputs=outputs),
            host_us=host_us(lambda: runner(feeds, outputs=outputs)))
    measure(case, "sinter-python-call", lambda: runner(feeds), host_us=host_us(lambda: runner(feeds)))
    if sinter_bin:
        try:
            ms = cpp_ms(plan, sinter_bin)
            emit(case=case, engine="sinter-cpp-graph", ms=round(ms, 5),
                 python_overhead_us=round((python_ms - ms) * 1e3, 2))
        except Exception as e:
            emit(case=case, engine="sinter-cpp-graph", error=f"{type(e).__name__}: {e}"[:400])

    torch._dynamo.reset()
    with torch.no_grad():
        backend = torch.compile(model, backend="sinter", mode="reduce-overhead", dynamic=False)
        try:
            error = rel_error(backend(*inputs), model, inputs)
            measure(case, "sinter-backend-graph", lambda: backend(*inputs), rel_l2=round(error, 6),
                    outputs="correct" if error <= 1e-2 else "WRONG")
        except Exception as e:
            emit(case=case, engine="sinter-backend-graph", error=f"{type(e).__name__}: {e}"[:400])


def main():
    if DEV is None or not sinter.gpu_availability()["available"]:
        emit(case="python", engine="all", error="needs a CUDA device and a GPU Sinter can use")
        return 3
    emit(meta={"gpu": torch.cuda.get_device_name(DEV), "torch": torch.__version__, "sinter": sinter.__version__,
               "iters": ITERS})
    sinter_bin = option("--sinter")
    for name in models():
        try:
            run_model(name, sinter_bin)
        except Exception as e:
            traceback.print_exc()
            emit(case=f"python_{name}", engine="all", error=f"{type(e).__name__}: {e}"[:400])
    return 0


if __name__ == "__main__":
    sys.exit(main())
