#!/usr/bin/env python3
"""The current-results document: docs/benchmarks.md and docs/benchmarks.svg, rendered from
docs/benchmarks.json, into which each run of bench/device.py is merged.

docs/benchmarks.json holds, per section, case and column, the latest measured value and the run
it came from; each run names its date, GPU and commit. A merge replaces exactly the cells the new
run measured; the others keep their older value and say so (the cell carries its run's id, and a
row whose newest cell is older than the document's newest run reads "not re-measured since").
Ratios are computed only from cells of one run (measured side by side); a ratio the log stated
for an older run is kept as stored. Nothing is estimated: a value is a program's output or, for
runs before the driver, a figure copied from docs/benchmark-log.md.

    bench/report.py merge RESULTS.jsonl [RESULTS.jsonl ...] [--data FILE] (--out DIR | --write)
    bench/report.py render [--data FILE] (--out DIR | --write)
    bench/report.py show RESULTS.jsonl [...]      print one run's tables, merge nothing

merge: each RESULTS.jsonl (bench/device.py's $OUT/results.jsonl) becomes one run, in order.
--out DIR writes DIR/benchmarks.{json,md,svg}; --write replaces docs/benchmarks.{json,md,svg}.
--data: the document's data (default docs/benchmarks.json of this repository).
Standard library only (the GPU machine's Python runs it too).
"""
import json
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402  (bench/plot.py: the SVG, no plotting library needed)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(REPO, "docs")
DATA = os.path.join(DOCS, "benchmarks.json")


# --- reading a run ------------------------------------------------------------------------------

def load_results(paths):
    """(meta, records) of bench/device.py's results files: meta from the `_meta` line (the
    first file's), records every other JSON object line."""
    meta, records = {}, []
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if "_meta" in r:
                    meta = meta or r["_meta"]
                elif "_step_result" not in r and "_end" not in r:
                    records.append(r)
    return meta, records


def rounded(v, digits=5):
    """v to `digits` significant digits (what a generated cell keeps)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool) or v == 0:
        return v
    return float(f"{v:.{digits}g}")


def by_source(records, source, variant=None):
    for r in records:
        if r.get("_source") == source and r.get("_variant") == variant:
            yield r


def failed(r):
    """A baseline or case that printed an error instead of a time: the cell says so."""
    return "failed: " + str(r.get("error", "no time"))[:60].replace("|", "/").replace("\n", " ")


def timed(r, key="ms"):
    v = r.get(key)
    return rounded(v) if isinstance(v, (int, float)) and v >= 0 else failed(r)


# --- sections -----------------------------------------------------------------------------------
# Each section: id, title, the text above its table (method specific to it), columns (key,
# header), rows (case, label, target), extract(records) -> {case: {key: value}} for one run,
# derive(cells) -> {key: value} of ratios from cells of one run, bar(cells) -> (speedup,
# baseline) for the plot or None. `cells` maps key -> {"v": value, "run": id}.

GEMM_TORCH = {"torch-matmul": "torch_matmul_ms", "torch-matmul-bare": "torch_matmul_ms",
              "torch-scaled-mm": "torch_matmul_ms", "torch-eager": "torch_eager_ms",
              "torch-compile": "torch_compile_ms", "torch-compile-max-autotune": "torch_autotune_ms"}


def gemm_like(records, cases, variant=None, prefix=""):
    out = {}
    for r in by_source(records, "sinter_bench_gemm", variant):
        case = r.get("case")
        if case not in cases or "candidate" in r or "soak_s" in r:
            continue
        c = out.setdefault(case, {})
        if "error" in r:
            c[prefix + "sinter_ms"] = failed(r)
            continue
        c[prefix + "sinter_ms"] = timed(r, "sinter_ms")
        c[prefix + "cublaslt_ms"] = timed(r, "cublaslt_ms")
        if not prefix:
            if r.get("sinter_tflops"):
                c["sinter_tflops"] = rounded(r["sinter_tflops"], 3)
            if r.get("sinter_weight_tbps"):
                c["sinter_tbps"] = rounded(r["sinter_weight_tbps"], 4)
            a = r.get("alternated")
            if isinstance(a, dict) and "ratio" in a:
                c["alt"] = [rounded(a["ratio"], 3), rounded(a.get("ratio_min"), 3), rounded(a.get("ratio_max"), 3)]
    return out


def extract_gemm(records):
    out = gemm_like(records, GEMM_CASES)
    for r in by_source(records, "torch_gemm_baselines"):
        key = GEMM_TORCH.get(r.get("engine"))
        if r.get("case") in GEMM_CASES and key:
            out.setdefault(r["case"], {})[key] = timed(r)
    return out


def one_run(cells, keys):
    """(values of `keys`, their run) if they are all numbers from one run, else None."""
    got = [cells.get(k) for k in keys]
    if any(g is None or not isinstance(g.get("v"), (int, float)) for g in got):
        return None
    if len({g["run"] for g in got}) != 1:
        return None
    return [g["v"] for g in got], got[0]["run"]


def fastest(cells, keys, names):
    """(ms, name, run) of the fastest numeric cell among keys, over cells of `run` only."""
    best = None
    for k in keys:
        g = cells.get(k)
        if g and isinstance(g.get("v"), (int, float)) and g["v"] > 0:
            if best is None or g["v"] < best[0]:
                best = (g["v"], names[k], g["run"])
    return best


def ratio_to_fastest(cells, ours, keys, names):
    """(ours / the fastest of keys, run), ours and that baseline from one run; else None."""
    o = cells.get(ours)
    if not o or not isinstance(o.get("v"), (int, float)):
        return None
    same = {k: cells[k] for k in keys if k in cells and cells[k].get("run") == o["run"]}
    b = fastest(same, keys, names)
    if not b:
        return None
    return f"{o['v'] / b[0]:.3f} ({b[1]})", o["run"]


TORCH_NAMES = {"torch_matmul_ms": "torch.matmul", "torch_eager_ms": "eager", "torch_compile_ms": "torch.compile",
               "torch_autotune_ms": "max-autotune", "torch_linear_ms": "F.linear"}


def derive_gemm(case, cells):
    # fused rows: against PyTorch's fused computation (eager, torch.compile), not its bare matmul
    keys = ["torch_eager_ms", "torch_compile_ms", "torch_autotune_ms"] if "bias_gelu" in case else ["torch_matmul_ms"]
    names = dict(TORCH_NAMES, torch_matmul_ms="torch._scaled_mm") if "fp8" in case else TORCH_NAMES
    r = ratio_to_fastest(cells, "sinter_ms", keys, names)
    return {"vs_torch": r} if r else {}


def leading_number(v):
    """The first number of a cell: a list's first item, or a stored text's first figure."""
    if isinstance(v, list):
        v = v[0]
    if isinstance(v, str):
        v = v.split()[0].rstrip(";,") if v.split() else ""
        try:
            v = float(v)
        except ValueError:
            return None
    return v if isinstance(v, (int, float)) and v > 0 else None


def bar_alt(case, cells):
    """cuBLASLt over Sinter: the alternated ratio, else the single measurements of one run."""
    name = "bare cuBLASLt" if "bias_gelu" in case else "cuBLASLt"
    a = leading_number(cells.get("alt", {}).get("v"))
    if a:
        return 1.0 / a, name + " (alternated)"
    got = one_run(cells, ["sinter_ms", "cublaslt_ms"])
    return (got[0][1] / got[0][0], name) if got and got[0][0] > 0 else None


def extract_decode(records):
    out = gemm_like(records, DECODE_CASES)
    for case, c in gemm_like(records, DECODE_CASES, "cold-l2", "cold_").items():
        out.setdefault(case, {}).update(c)
    for r in by_source(records, "torch_gemm_baselines"):
        if r.get("case") in DECODE_CASES and r.get("engine") == "torch-linear":
            out.setdefault(r["case"], {})["torch_linear_ms"] = timed(r)
    return out


def ratio(cells, ours, theirs, key):
    """{key: (ours / theirs, run)} where both are numbers of one run, else {}."""
    got = one_run(cells, [ours, theirs])
    if not got or not got[0][1]:
        return {}
    (o, t), run = got
    return {key: (f"{o / t:.3f}", run)}


def derive_decode(case, cells):
    return ratio(cells, "sinter_ms", "torch_linear_ms", "vs_torch")


VENDOR_TORCH = {"torch-cudnn": "torch_cudnn_ms", "torch-flash": "torch_flash_ms",
                "torch-conv-bare": "torch_bare_ms", "torch-conv-bias-relu": "torch_eager_ms"}


def extract_vendor(records, cases):
    out = {}
    for r in by_source(records, "sinter_bench_vendor"):
        case, engine = r.get("case"), r.get("engine", "")
        if case not in cases:
            continue
        c = out.setdefault(case, {})
        if engine == "sinter-cudnn":
            c["sinter_ms"] = timed(r)
            if "ms" in r:
                c["rate"] = (f"{r['tbps']:.2f} TB/s" if "decode" in case else f"{r['tflops']:.0f} TFLOP/s")
                c["steps_on"] = r.get("steps_on", "")
        elif engine in ("sinter-jit", "sinter-jit-flash-decode"):
            c["jit_ms"] = timed(r)
    for r in by_source(records, "torch_vendor_baselines"):
        key = VENDOR_TORCH.get(r.get("engine"))
        if r.get("case") in cases and key:
            out.setdefault(r["case"], {})[key] = timed(r)
    return out


def derive_sdpa(case, cells):
    return ratio(cells, "sinter_ms", "torch_cudnn_ms", "vs_torch")


def bar_ratio(ours, theirs, name):
    def bar(case, cells):
        got = one_run(cells, [ours, theirs])
        return (got[0][1] / got[0][0], name) if got and got[0][0] > 0 else None
    return bar


def derive_conv(case, cells):
    return ratio(cells, "sinter_ms", "torch_bare_ms", "vs_torch")


def extract_norms(records):
    out = {}
    for r in by_source(records, "sinter_bench_memory"):
        case = r.get("case", "")
        base = case.split("/")[0]
        if base not in NORM_CASES or r.get("engine") != "sinter":
            continue
        c = out.setdefault(base, {})
        if case.endswith("/tuned"):
            c["tuned_ms"] = timed(r)
        else:
            c["sinter_ms"] = timed(r)
            if "tbps" in r:
                c["tbps"] = rounded(r["tbps"], 4)
    for r in by_source(records, "torch_baselines"):
        key = {"eager": "eager_ms", "compile": "compile_ms"}.get(r.get("engine"))
        if r.get("case") in NORM_CASES and key:
            out.setdefault(r["case"], {})[key] = timed(r)
    return out


def derive_norms(case, cells):
    return ratio(cells, "sinter_ms", "compile_ms", "vs_compile")


def extract_copy(records):
    out = {}
    for r in records:
        src, case, engine = r.get("_source"), r.get("case"), r.get("engine")
        if src == "sinter_bench_memory" and case == "copy_cudaMemcpy" and engine == "cuda":
            out["copy_cudaMemcpy"] = {"ms": timed(r), "tbps": rounded(r.get("tbps"), 4)}
        elif src == "sinter_bench_memory" and case == "copy_pointwise" and engine == "sinter":
            out["copy_pointwise"] = {"ms": timed(r), "tbps": rounded(r.get("tbps"), 4)}
        elif src == "torch_baselines" and case == "copy" and engine == "torch":
            out["torch_copy"] = {"ms": timed(r), "tbps": rounded(r.get("tbps"), 4)}
    for c in out.values():
        if not isinstance(c["ms"], (int, float)):
            c.pop("tbps", None)
    return out


BLOCK_ENGINES = {"sinter-stream": "stream_ms", "sinter-graph": "graph_ms", "sinter-graph-one-chain": "graph_chain_ms",
                 "sinter-mega": "mega_ms",
                 "sinter-mega-jit": "mega_jit_ms", "sinter-graph-jit": "graph_jit_ms",
                 "sinter-graph-jit-nk": "graph_nk_ms", "sinter-mega-jit-nk": "mega_nk_ms",
                 "sinter-graph-unfolded": "graph_unfolded_ms", "sinter-mega-jit-unfolded": "mega_unfolded_ms",
                 "torch-eager": "eager_ms",
                 "torch-compile": "compile_ms", "torch-cuda-graph": "cuda_graph_ms", "read-once-floor": "floor_ms"}
BLOCK_NAMES = {"stream_ms": "stream", "graph_ms": "graph", "graph_chain_ms": "graph, one chain", "mega_ms": "mega", "mega_jit_ms": "mega, our kernels",
               "graph_jit_ms": "graph, our kernels", "graph_nk_ms": "graph, our kernels, [N, K] weights",
               "mega_nk_ms": "mega, our kernels, [N, K] weights", "graph_unfolded_ms": "graph, norms unfolded",
               "mega_unfolded_ms": "mega, our kernels, norms unfolded", "eager_ms": "eager", "compile_ms": "torch.compile",
               "cuda_graph_ms": "CUDA graph", "floor_ms": "read-once floor", "autotune_ms": "max-autotune"}


def extract_blocks(records, cases, sources):
    out = {}
    for r in records:
        key = BLOCK_ENGINES.get(r.get("engine"))
        if r.get("_source") in sources and r.get("case") in cases and key:
            out.setdefault(r["case"], {})[key] = timed(r)
            if r.get("outputs") and r["outputs"] != "correct":
                out[r["case"]]["note"] = "outputs " + r["outputs"]
    return out


def derive_blocks(case, cells):
    ours = [(cells[k]["v"], BLOCK_NAMES[k], cells[k]["run"])
            for k in ("stream_ms", "graph_ms", "mega_ms", "mega_jit_ms", "graph_nk_ms", "mega_nk_ms", "graph_unfolded_ms",
                      "mega_unfolded_ms")
            if isinstance(cells.get(k, {}).get("v"), (int, float))]
    if not ours:
        return {}
    o = min(ours)
    same = {k: cells[k] for k in ("eager_ms", "compile_ms", "cuda_graph_ms") if cells.get(k, {}).get("run") == o[2]}
    b = fastest(same, list(same), BLOCK_NAMES)
    return {"vs_torch": (f"{o[0] / b[0]:.3f} ({o[1]} / {b[1]})", o[2])} if b else {}


def derive_decode(case, cells):
    """derive_blocks, and the best Sinter time as a fraction of the same run's read-once floor."""
    out = derive_blocks(case, cells)
    floor = cells.get("floor_ms", {})
    ours = [(cells[k]["v"], cells[k]["run"])
            for k in ("graph_ms", "graph_chain_ms", "mega_ms", "graph_jit_ms", "mega_jit_ms", "graph_nk_ms", "mega_nk_ms",
                      "graph_unfolded_ms", "mega_unfolded_ms")
            if isinstance(cells.get(k, {}).get("v"), (int, float)) and cells[k].get("run") == floor.get("run")]
    if ours and isinstance(floor.get("v"), (int, float)):
        best = min(ours)
        out["of_floor"] = (f"{100 * floor['v'] / best[0]:.0f}%", best[1])
    return out


def bar_blocks(case, cells):
    d = derive_blocks(case, cells)
    if not d:
        return None
    r, names = d["vs_torch"][0].split(" ", 1)
    return 1.0 / float(r), "PyTorch " + names.strip("()").split(" / ")[1]


def extract_plan(records):
    out = {}
    for r in by_source(records, "sinter_bench_plan"):
        case = r.get("case")
        # as printed (2-3 decimals): nothing to round
        if case == "chain_200_ops":
            out.setdefault("chain_" + r["engine"].split("-")[1] + "_us", {})["value"] = r["us_per_op"]
        elif case == "load_transformer_block":
            out["load_median_ms"] = {"value": r["median_ms"]}
            out["load_first_ms"] = {"value": r["first_ms"]}
        elif case == "rebind":
            key = "rebind_chain" if r.get("graph", "").startswith("pointwise") else "rebind_block"
            out[key] = {"value": f"{r['update_us']} / {r['capture_us']} ({r.get('nodes')} nodes)"}
    return out


PYTHON_ENGINES = {"torch-eager": "eager_ms", "torch-cuda-graph": "cuda_graph_ms", "torch-compile": "compile_ms",
                  "torch-compile-max-autotune": "autotune_ms", "sinter-python-graph": "python_ms",
                  "sinter-python-given": "python_given_ms", "sinter-python-call": "python_call_ms",
                  "sinter-backend-graph": "backend_ms",
                  "sinter-cpp-graph": "cpp_ms"}
PYTHON_CASES = ("python_mlp", "python_conv", "python_transformer", "python_llama", "python_hf_llama")


def extract_python(records):
    out = {}
    for r in by_source(records, "torch_python_path"):
        key = PYTHON_ENGINES.get(r.get("engine"))
        if r.get("case") not in PYTHON_CASES or not key:
            continue
        cells = out.setdefault(r["case"], {})
        cells[key] = timed(r)
        if "host_us" in r and key == "python_ms":
            cells["host_us"] = r["host_us"]
        if "python_overhead_us" in r:
            cells["overhead_us"] = r["python_overhead_us"]
        if r.get("outputs") and r["outputs"] != "correct":
            cells["note"] = f"{r['engine']} outputs {r['outputs']}"
    return out


def derive_python(case, cells):
    python, torch_best = cells.get("python_ms", {}), []
    for k in ("eager_ms", "cuda_graph_ms", "compile_ms", "autotune_ms"):
        c = cells.get(k, {})
        if isinstance(c.get("v"), (int, float)) and c.get("run") == python.get("run"):
            torch_best.append((c["v"], k))
    if not isinstance(python.get("v"), (int, float)) or not torch_best:
        return {}
    best = min(torch_best)
    return {"vs_torch": (f"{python['v'] / best[0]:.3f} ({BLOCK_NAMES.get(best[1], best[1])})", python["run"])}


def none(case, cells):
    return {}


MULTI_GPU_EXECUTORS = {"cublaslt+nccl": "cublas_nccl_ms", "stream": "stream_ms", "graph": "graph_ms", "mega": "mega_ms",
                       "matmul_only": "matmul_ms", "all_reduce_only": "all_reduce_ms"}
MULTI_GPU_TORCH = {"torch-eager": "eager_ms", "torch-cuda-graph": "cuda_graph_ms"}
MULTI_GPU_CASES = ("gemm_ar_m16", "gemm_ar_m128", "gemm_ar_m1024", "gemm_ar_m4096", "decode_tp_1b", "decode_tp_8b")


def extract_multi_gpu(records):
    """sinter_bench_multi_gpu and torch_multi_gpu.py on several GPUs (virtual ranks' runs on one GPU
    are not multi-GPU times: the log keeps them, this table does not)."""
    out = {}
    for r in records:
        case, source = r.get("case"), r.get("_source")
        if case not in MULTI_GPU_CASES or r.get("ranks") == "virtual":
            continue
        if source == "sinter_bench_multi_gpu":
            key = MULTI_GPU_EXECUTORS.get(r.get("executor"))
            if "hidden" in r:
                out.setdefault(case, {})["hidden"] = f"{100 * r['hidden']:.0f}%"
        elif source == "torch_multi_gpu":
            key = MULTI_GPU_TORCH.get(r.get("engine"))
        else:
            continue
        if key:
            cells = out.setdefault(case, {})
            cells[key] = timed(r)
            if "world" in r:
                cells["world"] = r["world"]
    return out


def derive_multi_gpu(case, cells):
    ours = [(cells[k]["v"], k, cells[k]["run"]) for k in ("stream_ms", "graph_ms", "mega_ms")
            if isinstance(cells.get(k, {}).get("v"), (int, float))]
    if not ours:
        return {}
    best = min(ours)
    theirs = [(cells[k]["v"], k) for k in ("eager_ms", "cuda_graph_ms", "cublas_nccl_ms")
              if isinstance(cells.get(k, {}).get("v"), (int, float)) and cells[k].get("run") == best[2]]
    if not theirs:
        return {}
    t = min(theirs)
    names = {"eager_ms": "torch eager", "cuda_graph_ms": "torch CUDA graph", "cublas_nccl_ms": "cuBLASLt + NCCL",
             "stream_ms": "stream", "graph_ms": "graph", "mega_ms": "mega"}
    return {"vs_best": (f"{best[0] / t[0]:.3f} ({names[best[1]]} / {names[t[1]]})", best[2])}


GEMM_CASES = ("gemm_4096", "gemm_8192", "gemm_bias_gelu_amax_4096", "gemm_bias_gelu_amax_8192", "gemm_fp8_e4m3_4096")
DECODE_CASES = ("decode_m1", "decode_m8", "decode_m16")
SDPA_CASES = ("sdpa_d128", "sdpa_d128_causal", "sdpa_d64", "sdpa_d64_causal", "sdpa_decode_gqa", "sdpa_decode_b1_skv1025",
              "sdpa_decode_b1_skv1025_d64")
NORM_CASES = ("add_layernorm", "add_rmsnorm", "softmax", "pointwise_chain10")
BLOCK_CASES = ("mlp_layer", "conv_block", "transformer_block", "llama_decode_layer")
# the whole-model decode steps: case MODEL at batch 1, MODEL_bB at batch B (bench/device.py model_case)
MODELS = (("llama_3_2_1b", "Llama-3.2-1B"), ("llama_3_8b", "Llama-3-8B's shape"))
MODEL_ROWS = [(case if b == 1 else f"{case}_b{b}", f"{name}, batch {b}: step + LM head + argmax",
               ">= 80% of floor; 2x PyTorch" if b == 1 else "")
              for case, name in MODELS for b in (1, 4, 16, 64)]

SECTIONS = [
    dict(id="gemm", title="GEMM",
         text="bf16 `[M, K] x [K, N]` with the weight stored `[N, K]` (k-contiguous, as `torch.nn.Linear` "
              "keeps it); `sinter_bench_gemm` (our Hopper kernel against cuBLASLt's heuristic first algorithm "
              "in the same process, same inputs) and `bench/torch_gemm_baselines.py` in the same call. The "
              "fused rows are bf16 + bias + GELU (erf) + amax over the output, compared with the *bare* "
              "cuBLASLt GEMM (the issue's target: at most 1.05x) and with PyTorch's own fused computation. "
              "The alternated ratio (ours over cuBLASLt, 9 rounds that alternate the two so both see the "
              "same clock under the power cap; median [min, max]) is the figure to read; single "
              "measurements swing by several percent at 8192^3.",
         columns=[("sinter_ms", "Sinter ms"), ("sinter_tflops", "TFLOP/s"), ("cublaslt_ms", "cuBLASLt ms"),
                  ("alt", "Sinter / cuBLASLt, alternated"), ("torch_matmul_ms", "torch.matmul ms (bare)"),
                  ("torch_eager_ms", "PyTorch eager ms"), ("torch_compile_ms", "torch.compile ms"),
                  ("vs_torch", "Sinter / fastest PyTorch")],
         rows=[("gemm_4096", "4096^3", ">= 100% of cuBLAS"),
               ("gemm_8192", "8192^3", ">= 100% of cuBLAS"),
               ("gemm_bias_gelu_amax_4096", "4096^3 + bias + GELU + amax", "<= 1.05x bare cuBLASLt"),
               ("gemm_bias_gelu_amax_8192", "8192^3 + bias + GELU + amax", "<= 1.05x bare cuBLASLt"),
               ("gemm_fp8_e4m3_4096", "fp8 e4m3 4096^3, bf16 out (vs cuBLASLt fp8; torch._scaled_mm)", "")],
         extract=extract_gemm, derive=derive_gemm, bar=bar_alt),
    dict(id="decode", title="Decode GEMM (M = 1, 8, 16)",
         text="x `[M, 4096]` times a 14336 x 4096 bf16 weight stored `[N, K]` (117.44 MB): the weight's "
              "bytes per second is the figure (`sinter_bench_gemm --decode`; `F.linear` from "
              "`bench/torch_gemm_baselines.py`). Per launch: an event pair around every call, so no "
              "launch overlaps the next. L2 hot: whatever of the weight the L2 still holds from the "
              "previous call (117 MB does not fit); cold: L2 overwritten before each timed launch "
              "(`--cold-l2`), as in a model that streams each weight once. The issue's target, 85% of "
              "4.27 TB/s, was met with 10 launches between two events (back to back, session 13 in the log).",
         columns=[("sinter_ms", "Sinter ms (hot)"), ("sinter_tbps", "weight TB/s"), ("cublaslt_ms", "cuBLASLt ms (hot)"),
                  ("alt", "Sinter / cuBLASLt, alternated"), ("cold_sinter_ms", "Sinter ms (cold L2)"),
                  ("cold_cublaslt_ms", "cuBLASLt ms (cold L2)"), ("torch_linear_ms", "F.linear ms"),
                  ("vs_torch", "Sinter / F.linear")],
         rows=[("decode_m1", "M = 1", ">= 3.63 TB/s"), ("decode_m8", "M = 8", ">= 3.63 TB/s"),
               ("decode_m16", "M = 16", ">= 3.63 TB/s")],
         extract=extract_decode, derive=derive_decode, bar=bar_alt),
    dict(id="sdpa", title="SDPA",
         text="bf16 scaled dot-product attention, `[B, H, S, D]`, through Sinter's cuDNN engine (the "
              "step's engine is shown: a region cuDNN refuses falls back to our kernels, and says why) and "
              "our own kernels (jit; flash-decode for Sq = 1), against PyTorch's cuDNN and flash backends "
              "(`sinter_bench_vendor`, `bench/torch_vendor_baselines.py`, same call). Prefill: B4 H32 "
              "S4096; decode: Sq 1 with GQA 32/8 heads.",
         columns=[("sinter_ms", "Sinter ms"), ("rate", "rate"), ("steps_on", "ran on"), ("jit_ms", "Sinter jit ms"),
                  ("torch_cudnn_ms", "torch cuDNN ms"), ("torch_flash_ms", "torch flash ms"),
                  ("vs_torch", "Sinter / torch cuDNN")],
         rows=[("sdpa_d128", "D128", ">= 95% of torch cuDNN"), ("sdpa_d128_causal", "D128 causal", ">= 95% of torch cuDNN"),
               ("sdpa_d64", "D64", ""), ("sdpa_d64_causal", "D64 causal", ""),
               ("sdpa_decode_gqa", "decode B32 Skv4096 D128", ""),
               ("sdpa_decode_b1_skv1025", "decode B1 Skv1025 D128 (one Llama-3-8B-shaped layer)", ""),
               ("sdpa_decode_b1_skv1025_d64", "decode B1 Skv1025 D64 (one layer of the decode stack)", "")],
         extract=lambda rec: extract_vendor(rec, SDPA_CASES), derive=derive_sdpa,
         bar=bar_ratio("sinter_ms", "torch_cudnn_ms", "torch cuDNN")),
    dict(id="conv", title="Convolution",
         text="conv 3x3, pad 1, NHWC bf16 N32 C256 56x56 K256, + bias + relu: Sinter's cuDNN engine (one "
              "fused engine) and our implicit GEMM (jit), against PyTorch's channels-last conv alone "
              "(the target: at most 1.05x its time) and eager conv + bias + relu.",
         columns=[("sinter_ms", "Sinter ms"), ("rate", "rate"), ("steps_on", "ran on"), ("jit_ms", "Sinter jit ms"),
                  ("torch_bare_ms", "torch conv ms (bare)"), ("torch_eager_ms", "torch conv + bias + relu ms"),
                  ("vs_torch", "Sinter / torch bare conv")],
         rows=[("conv3x3_bias_relu", "conv3x3 + bias + relu", "<= 1.05x torch bare conv")],
         extract=lambda rec: extract_vendor(rec, ("conv3x3_bias_relu",)), derive=derive_conv,
         bar=bar_ratio("sinter_ms", "torch_bare_ms", "torch bare conv")),
    dict(id="norms", title="Norms and softmax (memory-bound)",
         text="16384 x 8192 bf16 (the chain: 16384 x 16384 with a row and a column broadcast operand); "
              "TB/s counts the minimum bytes (inputs read once, outputs written once). "
              "`sinter_bench_memory` (the heuristic default; tuned: every candidate timed) and "
              "`bench/torch_baselines.py` (eager, torch.compile default mode) in the same call.",
         columns=[("sinter_ms", "Sinter ms"), ("tbps", "TB/s"), ("tuned_ms", "tuned ms"), ("eager_ms", "eager ms"),
                  ("compile_ms", "torch.compile ms"), ("vs_compile", "Sinter / torch.compile")],
         rows=[("add_layernorm", "residual add + layernorm", ">= 4.0 TB/s"),
               ("add_rmsnorm", "residual add + rmsnorm", ">= 4.0 TB/s"),
               ("softmax", "softmax", ">= 3.6 TB/s"),
               ("pointwise_chain10", "10-op pointwise chain", ">= 90% of copy")],
         extract=extract_norms, derive=derive_norms, bar=bar_ratio("sinter_ms", "compile_ms", "torch.compile")),
    dict(id="copy", title="Copy bandwidth (the memory-bound rows' reference)",
         text="Bytes read + written over time: cudaMemcpy and our pointwise kernel as a copy of 2^28 bf16 "
              "(`sinter_bench_memory`), PyTorch's `copy_` of 2^29 bf16 (`bench/torch_baselines.py`).",
         columns=[("ms", "ms"), ("tbps", "TB/s")],
         rows=[("copy_cudaMemcpy", "cudaMemcpy, in sinter_bench_memory", ""),
               ("copy_pointwise", "our pointwise kernel as a copy", ""),
               ("torch_copy", "PyTorch copy_", "")],
         extract=extract_copy, derive=none, bar=lambda case, cells: None),
    dict(id="blocks", title="Blocks (the example graphs)",
         text="Each example of `examples/` through Sinter's stream and graph executors (`sinter bench "
              "--json`, p50; plan built in the call with the heuristic tuner) and the same model in "
              "PyTorch (`bench/torch_blocks.py`: eager, torch.compile default mode, CUDA graph replay of "
              "the eager function). The last column is the best Sinter time over the best PyTorch time.",
         columns=[("stream_ms", "Sinter stream ms"), ("graph_ms", "Sinter graph ms"), ("mega_ms", "Sinter mega ms"),
                  ("eager_ms", "torch eager ms"), ("compile_ms", "torch.compile ms"),
                  ("cuda_graph_ms", "torch CUDA graph ms"), ("vs_torch", "best Sinter / best PyTorch")],
         rows=[("mlp_layer", "mlp_layer: 128x1024 @ 1024x4096, GELU, amax", ""),
               ("conv_block", "conv_block: NHWC 4x28x28x64, two 3x3 convs", ""),
               ("transformer_block", "transformer_block: b2 s128 d512, 8 heads, ffn 2048", ""),
               ("llama_decode_layer", "llama_decode_layer: d512, GQA 8/2, cache 255", "")],
         extract=lambda rec: extract_blocks(rec, BLOCK_CASES, ("sinter_bench", "torch_blocks")),
         derive=derive_blocks, bar=bar_blocks),
    dict(id="stack", title="Llama decode stack (16 layers)",
         text="`examples::llama_decode_stack()`: 16 Llama-style layers, d 2048, ffn 8192, GQA 32/8 heads of "
              "64, KV cache 1024, batch 1, ~2 GB of bf16 weights and cache read per step; one decode step "
              "through Sinter's stream, graph and mega executors (`sinter_bench_plan` parts 4, 4g and 4m; "
              "graph mode runs independent steps on branches of the CUDA graph, \"one chain\" captures them "
              "in step order; "
              "outputs checked against the CPU reference; mega on the default plan runs a megakernel per "
              "run of our steps between the vendor steps; \"our kernels only\" is the plan compiled on the "
              "jit and alias engines, one megakernel; \"[N, K] weights\" the same with the weights stored as "
              "nn.Linear stores them, k-contiguous; \"norms unfolded\" (part 4n) the default and our-kernels "
              "plans with the rmsnorms as steps of their own instead of folded into the GEMVs) and the same model in PyTorch (`bench/torch_decode_stack.py`: "
              "eager, CUDA graph, torch.compile).",
         columns=[("stream_ms", "Sinter stream ms"), ("graph_ms", "Sinter graph ms"),
                  ("graph_chain_ms", "Sinter graph, one chain, ms"), ("mega_ms", "Sinter mega ms"),
                  ("graph_jit_ms", "graph, our kernels only, ms"), ("mega_jit_ms", "mega, our kernels only, ms"),
                  ("graph_nk_ms", "graph, our kernels, [N, K] weights, ms"),
                  ("mega_nk_ms", "mega, our kernels, [N, K] weights, ms"),
                  ("graph_unfolded_ms", "Sinter graph, norms unfolded, ms"),
                  ("mega_unfolded_ms", "mega, our kernels, norms unfolded, ms"),
                  ("floor_ms", "read-once floor ms"), ("of_floor", "best Sinter, % of floor speed"),
                  ("eager_ms", "torch eager ms"), ("compile_ms", "torch.compile ms"),
                  ("cuda_graph_ms", "torch CUDA graph ms"), ("vs_torch", "best Sinter / best PyTorch")],
         rows=[("llama_decode_stack", "one decode step", "<= PyTorch CUDA graph; >= 80% of floor")],
         extract=lambda rec: extract_blocks(rec, ("llama_decode_stack",), ("sinter_bench_plan", "torch_decode_stack")),
         derive=derive_decode, bar=bar_blocks),
    dict(id="models", title="Whole-model decode steps (batch 1, 4, 16, 64)",
         text="`sinter_bench_plan --models --batch`: `examples::llama_3_2_1b()` (16 layers, LM head over 128256 "
              "tokens, greedy argmax; 2.47 GB) and `examples::llama_3_8b()` (Llama-3-8B's shape: 32 layers, d 4096, "
              "ffn 14336, GQA 32/8 heads of 128, cache 4096, LM head, argmax; 15 GB), one decode step of B "
              "sequences (a new token each, a KV cache each, every weight read once for all B: 33.5 MB of 1B "
              "cache and 537 MB of 8B cache per sequence, read and written back), checked against the CPU "
              "reference (the 1B at batch 1 whole, the 8B's shape and every batch above 1 on two layers), "
              "timed through the graph executor and the megakernel beside the read-once floor of the same "
              "bytes (`bench/read_floor.hpp`, same process); the same models in PyTorch "
              "(`bench/torch_decode_stack.py --model --batch`).",
         columns=[("graph_ms", "Sinter graph ms"), ("mega_ms", "Sinter mega ms"), ("floor_ms", "read-once floor ms"),
                  ("of_floor", "best Sinter, % of floor speed"), ("eager_ms", "torch eager ms"),
                  ("compile_ms", "torch.compile ms"), ("cuda_graph_ms", "torch CUDA graph ms"),
                  ("vs_torch", "best Sinter / best PyTorch")],
         rows=MODEL_ROWS,
         extract=lambda rec: extract_blocks(rec, tuple(r[0] for r in MODEL_ROWS), ("sinter_bench_plan", "torch_decode_stack")),
         derive=derive_decode, bar=bar_blocks),
    dict(id="multi_gpu", title="Several GPUs (tensor parallelism)",
         text="`sinter_bench_multi_gpu` (`bench/device.py multi_gpu`, [multi-gpu.md](multi-gpu.md)): one rank per GPU "
              "of one host, every rank the same plan, the slowest rank's median. gemm_ar: x[M, 8192] w[8192, 8192] "
              "split along K, then all_reduce(sum), bf16: cuBLASLt then NCCL, Sinter's stream plan, the megakernel "
              "with its in-kernel all_reduce, and the matmul and the all_reduce alone (hidden: the share of the "
              "all_reduce the megakernel hides, (matmul + all_reduce - mega) / all_reduce). decode_tp: one "
              "tensor-parallel decode step with LM head and argmax. PyTorch: `bench/torch_multi_gpu.py`, "
              "torch.distributed with NCCL, eager and CUDA graph, in the same call.",
         columns=[("world", "GPUs"), ("cublas_nccl_ms", "cuBLASLt + NCCL ms"), ("stream_ms", "Sinter stream ms"),
                  ("graph_ms", "Sinter graph ms"), ("mega_ms", "Sinter mega ms"), ("matmul_ms", "matmul alone ms"),
                  ("all_reduce_ms", "all_reduce alone ms"), ("hidden", "all_reduce hidden"),
                  ("eager_ms", "torch eager ms"), ("cuda_graph_ms", "torch CUDA graph ms"),
                  ("vs_best", "best Sinter / best other")],
         rows=[("gemm_ar_m16", "GEMM + all_reduce, M = 16", "mega never slower than sequential"),
               ("gemm_ar_m128", "GEMM + all_reduce, M = 128", "mega never slower than sequential"),
               ("gemm_ar_m1024", "GEMM + all_reduce, M = 1024", ">= 70% hidden"),
               ("gemm_ar_m4096", "GEMM + all_reduce, M = 4096", ">= 70% hidden"),
               ("decode_tp_1b", "Llama-3.2-1B decode step, tensor parallel", "faster than PyTorch at every W"),
               ("decode_tp_8b", "Llama-3-8B's shape, tensor parallel", "faster than PyTorch; falls with W")],
         extract=extract_multi_gpu, derive=derive_multi_gpu, bar=lambda case, cells: None),
    dict(id="python", title="Python path (torch.nn models, bf16)",
         text="`bench/torch_python_path.py`: the torch.nn models of `python/tests/torch_models.py` (the MLP 8x64, "
              "conv block 2x3x16x16, transformer block and Llama-style layer 2x16x64; transformers' "
              "LlamaForCausalLM, 2 layers d 64, from embeddings) imported with `sinter.from_torch`, compiled "
              "with `sinter.compile` and run by `sinter.TorchRunner` in graph mode: bound once and enqueued per call "
              "(as a C++ program does), or called with every tensor checked and bound per call (outputs given, "
              "or allocated, which captures the graph again each call); the torch.compile backend with mode=\"reduce-overhead\"; the same plan saved and timed "
              "by `sinter bench --executor graph` (the C++ runner); PyTorch eager, CUDA graph and torch.compile, "
              "all in one process and call, events around each call back to back (median). The Python "
              "overhead is the bound Python runner's time minus the C++ runner's (target: <= 5 us); host us is "
              "the bound Python runner's wall time per enqueue over 200 calls.",
         columns=[("python_ms", "Sinter Python ms (bound, enqueue)"), ("python_given_ms", "call, outputs given ms"),
                  ("python_call_ms", "call, outputs allocated ms"),
                  ("backend_ms", "backend=\"sinter\" ms"), ("cpp_ms", "C++ runner ms"),
                  ("overhead_us", "Python overhead us"), ("host_us", "host us / call"), ("eager_ms", "torch eager ms"),
                  ("cuda_graph_ms", "torch CUDA graph ms"), ("compile_ms", "torch.compile ms"),
                  ("autotune_ms", "max-autotune ms"), ("vs_torch", "Sinter Python / best PyTorch")],
         rows=[("python_mlp", "MLP", "overhead <= 5 us"), ("python_conv", "conv block", "overhead <= 5 us"),
               ("python_transformer", "transformer block", "overhead <= 5 us"),
               ("python_llama", "Llama-style layer", "overhead <= 5 us"),
               ("python_hf_llama", "transformers LlamaForCausalLM (embeddings in)", "overhead <= 5 us")],
         extract=extract_python, derive=derive_python, bar=lambda case, cells: None),
    dict(id="plan", title="Plan overheads",
         text="`sinter_bench_plan` parts 1-3: launch cost of a chain of 200 dependent, unfused pointwise "
              "ops over 1024 f32 values; load to first result of the transformer block from a saved "
              "bundle in a process whose CUDA context exists; rebinding pointers of an instantiated graph "
              "(exec update) against capturing and instantiating again.",
         columns=[("value", "value")],
         rows=[("chain_graph_us", "200-op chain, graph executor, us per op", "<= 1.3 us"),
               ("chain_stream_us", "200-op chain, stream executor, us per op", ""),
               ("chain_mega_us", "200-op chain, megakernel, us per op", "<= 0.30 us"),
               ("load_median_ms", "transformer block bundle: load to first result, median ms", "<= 10 ms"),
               ("load_first_ms", "the same, first load ms", ""),
               ("rebind_chain", "rebind the chain's graph: exec update / capture + instantiate, us", ""),
               ("rebind_block", "rebind the transformer block's graph: exec update / capture + instantiate, us", "")],
         extract=extract_plan, derive=none, bar=lambda case, cells: None),
]
SECTION = {s["id"]: s for s in SECTIONS}


def extract(records):
    """{section: {case: {key: value}}} of one run."""
    out = {}
    for s in SECTIONS:
        got = {case: cells for case, cells in s["extract"](records).items() if cells}
        if got:
            out[s["id"]] = got
    return out


# --- the data file ------------------------------------------------------------------------------

def load_data(path):
    with open(path) as f:
        return json.load(f)


def run_from_meta(meta, records):
    torch_v = next((r.get("torch") or r.get("meta", {}).get("torch") for r in records
                    if r.get("case") == "torch_versions" or "meta" in r), None)
    gpu = meta.get("gpu") or "unknown GPU"
    if gpu == "unknown GPU":  # no nvidia-smi: the programs name the device too
        gpu = next((r.get("device") or r.get("gpu") for r in records if r.get("device") or r.get("gpu")), gpu)
    elif str(meta.get("gpu_detail", "")).startswith(gpu):
        gpu = meta["gpu_detail"]  # with the driver, power limit, max SM clock, memory
    cudnn = next((r.get("version") for r in records if r.get("case") == "cudnn_library" and r.get("version")), None)
    if cudnn and cudnn != "none":
        gpu += f", cuDNN {cudnn}"
    return {"date": meta.get("date", "unknown date"), "time": meta.get("time", ""), "gpu": gpu,
            "commit": meta.get("commit", "unknown"), "torch": torch_v or "",
            "source": "bench/device.py " + meta.get("steps", "") + (" (quick)" if meta.get("quick") else ""),
            "key": " ".join(str(meta.get(k, "")) for k in ("date", "time", "host", "commit", "steps"))}


def next_run_id(data):
    n = [int(k[1:]) for k in data["runs"] if k.startswith("R") and k[1:].isdigit()]
    return f"R{max(n, default=0) + 1}"


def is_failure(v):
    return isinstance(v, str) and v.startswith("failed:")


def merge(data, meta, records):
    """Adds one run to data (in place); returns its id and the sections it measured. A cell the
    run measured replaces the stored one; a failure does not replace a stored number (the number
    stays, older and tagged) but becomes a note of the row, shown under the table until a later
    run measures the row again."""
    got = extract(records)
    run = run_from_meta(meta, records)
    for old, r in data["runs"].items():
        if r.get("key") and r["key"] == run["key"]:
            raise SystemExit(f"report.py: this run ({run['key']}) is already merged as {old}")
    rid = next_run_id(data)
    data["runs"][rid] = run
    for sid, cases in got.items():
        headers = dict(SECTION[sid]["columns"])
        for case, cells in cases.items():
            row = data["cells"].setdefault(sid, {}).setdefault(case, {})
            failures = []
            for key, v in cells.items():
                old = row.get(key, {}).get("v")
                if is_failure(v) and old is not None and not is_failure(old):
                    failures.append(f"{headers.get(key, key)}: {v}")
                    continue
                row[key] = {"v": v, "run": rid}
            notes = data.setdefault("notes", {}).setdefault(sid, {})
            notes.pop(case, None)
            if failures:
                notes[case] = {"v": "; ".join(failures), "run": rid}
    return rid, sorted(got)


# --- rendering ----------------------------------------------------------------------------------

def fmt(v):
    if isinstance(v, list):  # an alternated ratio: median [min, max]
        return f"{fmt(v[0])} [{fmt(v[1])}, {fmt(v[2])}]"
    if isinstance(v, float):
        return repr(v).rstrip("0").rstrip(".") if "e" not in repr(v) else f"{v:.4g}"
    return str(v).replace("|", "/")


def run_date(data, rid):
    return data["runs"].get(rid, {}).get("date", "")


def order_key(data, rid):
    """Runs ordered by date, then by their place in the file."""
    return (run_date(data, rid), list(data["runs"]).index(rid) if rid in data["runs"] else -1)


def row_cells(data, sid, case):
    """The stored cells of a row, with its ratios derived from cells of one run where it can
    (a derived ratio replaces a stored one; a stored one stays where none can be derived)."""
    s = SECTION[sid]
    cells = dict(data["cells"].get(sid, {}).get(case, {}))
    for key, (v, rid) in s["derive"](case, cells).items():
        cells[key] = {"v": v, "run": rid}
    return cells


def newest_date(data):
    used = {c["run"] for sec in data["cells"].values() for row in sec.values() for c in row.values()}
    return max((run_date(data, r) for r in used), default="")


def wrap(text, width=100):
    """text filled to width, no line starting with what Markdown reads as a list or a heading
    (such a token goes up to the end of the line before)."""
    lines = textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)
    for i in range(1, len(lines)):
        token = lines[i].split(" ", 1)
        if token[0] in ("+", "-", "*", "#", ">") or token[0].rstrip(".").isdigit() and token[0].endswith("."):
            lines[i - 1] += " " + token[0]
            lines[i] = token[1] if len(token) > 1 else ""
    return "\n".join(l for l in lines if l)


def render_section(data, s, newest):
    lines = [f"## {s['title']}", "", wrap(s["text"]), ""]
    head = ["case"] + [h for _, h in s["columns"]] + ["target", "measured"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case, label, target in s["rows"]:
        cells = row_cells(data, s["id"], case)
        runs = sorted({c["run"] for c in cells.values()}, key=lambda r: order_key(data, r))
        if not runs:
            lines.append(f"| {label} | " + " | ".join("" for _ in s["columns"]) + f" | {target} | not measured yet |")
            continue
        main = runs[-1]
        out = []
        for key, _ in s["columns"]:
            c = cells.get(key)
            if not c:
                out.append("")
                continue
            tag = "" if c["run"] == main else f" ({c['run']})"
            out.append(fmt(c["v"]) + tag)
        info = data["runs"].get(main, {})
        when = f"{main}: {info.get('date', '?')}, {short_gpu(info.get('gpu', '?'))}, {info.get('commit', '?')}"
        if run_date(data, main) < newest:
            when = f"{main}; not re-measured since {info.get('date', '?')} ({short_gpu(info.get('gpu', '?'))})"
        lines.append(f"| {label} | " + " | ".join(out) + f" | {target} | {when} |")
    lines.append("")
    for case, label, _ in s["rows"]:
        n = data.get("notes", {}).get(s["id"], {}).get(case)
        if n:
            lines += [f"- {label.split(':')[0]}, run {n['run']}: {n['v']} (the value shown is older).", ""]
    return lines


def short_gpu(name):
    for full, short in (("H100", "H100"), ("H200", "H200")):
        if full in name:
            return short
    return name


def bars(data):
    out = []
    for s in SECTIONS:
        for case, label, _ in s["rows"]:
            b = s["bar"](case, row_cells(data, s["id"], case))
            if b:
                out.append((f"{s['id']}: {case}", b[0], b[1]))
    return out


HEADER = """# Benchmarks: current results

The latest measured figures of each benchmark, each with the run it comes from (the `measured`
column and the [runs](#runs) below: date, GPU, commit). A value tagged `(ID)` comes from another,
older run than the rest of its row: compare values of one run only. Every number is a program's
output (`bench/device.py` runs) or, for runs before the driver existed, a figure copied from the
dated entries of [benchmark-log.md](benchmark-log.md), which holds the whole history, bad numbers
included. Nothing here is estimated; an empty cell was not measured in the runs shown.

This file is generated: `bench/report.py` renders it from [benchmarks.json](benchmarks.json), and
the `report` step of `bench/device.py` merges each run into that file (see *Reproducing* below).
Edit the generator, not this file.

## How these are measured

- Timing: CUDA events around each call, the calls enqueued back to back and the host waiting once
  (as Triton's `do_bench`), after warm-up calls; the median of many calls (Sinter:
  `cuda::time_calls`; PyTorch: `bench/torch_timing.py`, the same method). The log's runs up to
  session 9 (S4 to S9 below) waited after every call instead (the `synced` method: each interval
  also holds the host's launch latency, a few microseconds).
- Side by side: a ratio is always of two numbers measured in the same call (and, for cuBLASLt,
  in the same process); ratios are time ratios, ours over theirs: below 1, Sinter is faster.
- L2: hot unless a column says cold, that is the inputs of the previous call may still sit in L2
  (60 MB on the H200); cold: L2 overwritten before each timed launch.
- Clocks: as the card runs them (`bench/device.py` locks nothing; its Nsight Compute steps pass
  `--clock-control none`); dense GEMMs run at the 700 W power cap, where the SM clock varies by
  several percent between runs, hence the alternated rounds.
- H100 and H200 figures are not comparable with each other (the H200's memory is faster); each
  row names its GPU.

![Sinter relative to the fastest baseline of each row](benchmarks.svg)

The picture (`bench/plot.py`, drawn by `bench/report.py`): per row, the fastest baseline's time
over Sinter's, from values of one run (right of 1.0: Sinter faster).

"""

FOOTER = """## Reproducing

On the GPU machine, from the repository root, with the prebuilt binaries in `.device/`:

```sh
bench/device.py --list                                   # every step, what it runs, its time limit
bench/device.py .device gemm,decode,vendor,report --commit $(git rev-parse --short HEAD)
bench/device.py .device memory,plan,blocks,report --commit $(git rev-parse --short HEAD)
```

Each call leaves `results.jsonl` (every JSON line of the run, with the run's date, GPU and
commit), `summary.txt`, `raw.tgz` (logs) and, with `report`, a preview of this document in
`$OUT`. Back on the development machine, merge the run into the document:

```sh
bench/report.py merge OUT/results.jsonl --write   # docs/benchmarks.{json,md,svg}
```
"""


def render(data):
    newest = newest_date(data)
    lines = [HEADER]
    for s in SECTIONS:
        lines += render_section(data, s, newest)
    lines += ["## Runs", "",
              "| run | date | GPU | commit | PyTorch | source |", "|---|---|---|---|---|---|"]
    used = {c["run"] for sec in data["cells"].values() for row in sec.values() for c in row.values()}
    for rid in sorted(used, key=lambda r: order_key(data, r), reverse=True):
        r = data["runs"][rid]
        when = r.get("date", "") + (" " + r["time"] if r.get("time") else "")
        lines.append(f"| {rid} | {when} | {r.get('gpu', '')} | {r.get('commit', '')} | {r.get('torch', '')} | "
                     f"{r.get('source', '')} |".replace("\n", " "))
    lines += ["", FOOTER]
    return "\n".join(lines).rstrip("\n") + "\n"


def svg(data):
    return plot.svg(bars(data), "Sinter relative to the fastest baseline of each row (time ratio)",
                    "1.0 = as fast as that baseline, measured in the same run (docs/benchmarks.md)") + "\n"


def write_outputs(data, out_dir=None, write_docs=False):
    targets = []
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        targets.append(out_dir)
    if write_docs:
        targets.append(DOCS)
    for d in targets:
        with open(os.path.join(d, "benchmarks.json"), "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        with open(os.path.join(d, "benchmarks.md"), "w") as f:
            f.write(render(data))
        with open(os.path.join(d, "benchmarks.svg"), "w") as f:
            f.write(svg(data))
    return targets


# --- one run as text (bench/device.py's step summaries) -----------------------------------------

def show(records, section_ids=None):
    """Plain-text tables of one run's cells (no merge), for the sections given (default all)."""
    got = extract(records)
    lines = []
    for s in SECTIONS:
        if s["id"] not in got or (section_ids and s["id"] not in section_ids):
            continue
        lines.append(f"-- {s['title']}")
        for case, label, _ in s["rows"]:
            cells = got[s["id"]].get(case)
            if not cells:
                continue
            wrapped = {k: {"v": v, "run": "this"} for k, v in cells.items()}
            wrapped.update({k: {"v": v, "run": "this"} for k, (v, _) in s["derive"](case, wrapped).items()})
            parts = [f"{h} {fmt(wrapped[k]['v'])}" for k, h in s["columns"] if k in wrapped]
            lines.append(f"   {label}: " + "; ".join(parts))
    return lines


def main(argv):
    if len(argv) < 1 or argv[0] not in ("merge", "render", "show"):
        sys.exit(__doc__)
    verb, rest = argv[0], argv[1:]
    data_path, out_dir, write_docs, files = DATA, None, False, []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--data" and i + 1 < len(rest):
            data_path, i = rest[i + 1], i + 1
        elif a == "--out" and i + 1 < len(rest):
            out_dir, i = rest[i + 1], i + 1
        elif a == "--write":
            write_docs = True
        elif a.startswith("-"):
            sys.exit(f"report.py: unknown option {a}\n\n{__doc__}")
        else:
            files.append(a)
        i += 1
    if verb == "show":
        if not files:
            sys.exit("report.py show: name at least one results.jsonl")
        print("\n".join(show(load_results(files)[1])))
        return
    if verb == "merge" and not files:
        sys.exit("report.py merge: name at least one results.jsonl")
    if verb == "render" and files:
        sys.exit("report.py render takes no results files (merge adds runs)")
    if not out_dir and not write_docs:
        sys.exit(f"report.py {verb}: say where to write: --out DIR or --write (docs/)")
    data = load_data(data_path)
    for path in files:
        meta, records = load_results([path])
        rid, sections = merge(data, meta, records)
        print(f"{path}: run {rid} ({data['runs'][rid]['date']}, {data['runs'][rid]['gpu']}, "
              f"commit {data['runs'][rid]['commit']}): {', '.join(sections) or 'no benchmark figures'}")
    for d in write_outputs(data, out_dir, write_docs):
        print(f"wrote {os.path.join(d, 'benchmarks.md')} (and .json, .svg)")


if __name__ == "__main__":
    main(sys.argv[1:])
