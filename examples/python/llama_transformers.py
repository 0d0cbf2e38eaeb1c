"""transformers' LlamaForCausalLM through Sinter, on the GPU: a prefill and a decode step.

The model is Llama-3.2-1B's shape (d 2048, ffn 8192, 32 heads of 64, 8 KV heads, vocabulary
128256, tied embeddings, llama3 rope scaling) with --layers layers and random weights (no
download), in bf16 on the current CUDA device. Each case runs

- through ``sinter.from_torch`` + ``sinter.compile`` (the plan run by a ``TorchRunner`` in graph
  mode, bound once and enqueued per call), and
- through ``torch.compile(backend="sinter")`` (token ids in: the embedding runs in torch),

and is checked against transformers' own eager forward of the same bf16 weights computed in
float32 (relative L2 <= 1e-2, DESIGN.md's bf16 bound; the bf16 eager's own error is printed beside
it). The cases:

- prefill: --prefill tokens (default 512), no cache, logits of every position;
- decode: one new token after a --past-token prefix. Through from_torch the step takes the
  prefix's keys and values of every layer as inputs and returns them with the new token's
  appended (a cache of fixed length: the graph is built for that length). Through the backend the
  step runs on transformers' StaticCache (preallocated, updated in place by index_copy, which the
  backend leaves to torch), exactly as transformers' own compiled generation does.

Times (ms, median of --runs calls, CUDA events on one stream, after warm-up) beside torch eager
and torch.compile (default; --autotune adds mode="max-autotune", minutes) on the same tensors.

    python examples/python/llama_transformers.py [--layers 2] [--prefill 512] [--past 511]
"""

import argparse
import copy
import sys


def need(module: str):
    try:
        return __import__(module)
    except ImportError:
        sys.exit(f"llama_transformers.py needs {module}: pip install {module} (on a machine without a "
                 "package registry, install its wheel from a machine that has one)")


torch = need("torch")
need("transformers")
import sinter  # noqa: E402
import sinter.dynamo_backend  # noqa: E402,F401  (registers backend="sinter")
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402
from transformers.cache_utils import DynamicCache, StaticCache  # noqa: E402

BF16_BOUND = 1e-2


def llama_3_2_1b(layers: int, max_len: int) -> "LlamaConfig":
    config = LlamaConfig(hidden_size=2048, intermediate_size=8192, num_hidden_layers=layers,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                         rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=True,
                         max_position_embeddings=max(max_len, 131072),
                         rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    config._attn_implementation = "sdpa"
    return config


class Prefill(torch.nn.Module):
    """Token embeddings [1, T, d] in, logits [1, T, vocab] out."""

    def __init__(self, llama):
        super().__init__()
        self.llama = llama

    def forward(self, embeddings):
        return self.llama(inputs_embeds=embeddings, use_cache=False).logits


class DecodeStep(torch.nn.Module):
    """One new token's embedding and every layer's past keys and values in; the logits and every
    layer's keys and values with the new token's appended out."""

    def __init__(self, llama):
        super().__init__()
        self.llama = llama

    def forward(self, embedding, *past):
        layers = len(past) // 2
        cache = DynamicCache()
        for layer in range(layers):
            cache.update(past[2 * layer], past[2 * layer + 1], layer)
        logits = self.llama(inputs_embeds=embedding, past_key_values=cache, use_cache=True).logits
        kv = []
        for layer in range(layers):
            kv += [cache.layers[layer].keys, cache.layers[layer].values]
        return (logits, *kv)


def rel_l2(got, want) -> float:
    got, want = got.float(), want.float()
    return ((got - want).norm() / want.norm()).item()


def median_ms(fn, runs: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def report(case: str, what: str, got, want, bf16_eager) -> bool:
    """Within the bf16 bound, or within 1.25 x transformers' own bf16 error where that is larger
    (a long prefill's logits: bf16 rounding of every intermediate, as torch does, costs about the
    bound itself)."""
    error, own = rel_l2(got, want), rel_l2(bf16_eager, want)
    bound = max(BF16_BOUND, 1.25 * own)
    ok = error <= bound
    print(f"   {case:8} {what:34} rel L2 vs transformers float32 {error:.3g} (transformers eager bf16: "
          f"{own:.3g}; bound {bound:.3g}) {'ok' if ok else 'FAIL'}")
    return ok


def sinter_runner(module, inputs, device):
    """from_torch + compile; a graph-mode TorchRunner bound once to the inputs and the weights."""
    imported = sinter.import_torch(module, inputs)
    plan = sinter.compile(imported.graph, device=device.index)
    names = [t.name for t in imported.graph.inputs if t.name not in imported.weights]
    if len(names) != len(inputs):
        sys.exit(f"the imported graph takes {len(names)} inputs besides its weights; {len(inputs)} were given")
    feeds = {**dict(zip(names, inputs)), **{n: w.to(device) for n, w in imported.weights.items()}}
    runner = sinter.TorchRunner(plan, mode="graph", device=device)
    outputs = runner.bind(feeds)
    return runner, [outputs[t.name] for t in imported.graph.outputs]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--prefill", type=int, default=512)
    p.add_argument("--past", type=int, default=511)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--autotune", action="store_true", help="also torch.compile(mode='max-autotune')")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("llama_transformers.py runs on a CUDA GPU; torch sees none")
    device = torch.device("cuda", torch.cuda.current_device())
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    config = llama_3_2_1b(a.layers, a.past + 1 + a.prefill)
    model = LlamaForCausalLM(config).eval().to(device=device, dtype=torch.bfloat16)
    truth_model = copy.deepcopy(model).float()  # the same bf16 weights, computed in float32
    print(f"transformers LlamaForCausalLM, Llama-3.2-1B shape, {a.layers} layers, bf16, random weights; "
          f"{torch.cuda.get_device_name(device)}")
    ok = True
    ids = torch.randint(0, config.vocab_size, (1, a.past + 1), device=device)
    prefill_ids = torch.randint(0, config.vocab_size, (1, a.prefill), device=device)
    times = {}
    with torch.no_grad():
        # --- prefill ---
        emb = model.model.embed_tokens(prefill_ids)
        want = truth_model(inputs_embeds=emb.float(), use_cache=False).logits
        eager = model(inputs_embeds=emb, use_cache=False).logits
        runner, (logits,) = sinter_runner(Prefill(model), (emb,), device)
        runner.enqueue()
        ok &= report("prefill", "from_torch + sinter.compile", logits, want, eager)
        by_ids = lambda x: model(input_ids=x, use_cache=False).logits  # noqa: E731
        torch._dynamo.reset()
        backend = torch.compile(by_ids, backend="sinter", dynamic=False)
        ok &= report("prefill", 'torch.compile(backend="sinter")', backend(prefill_ids), want, eager)
        inductor = torch.compile(by_ids, dynamic=False)
        times["prefill"] = {"sinter (from_torch, graph mode)": median_ms(runner.enqueue, a.runs),
                            'torch.compile(backend="sinter")': median_ms(lambda: backend(prefill_ids), a.runs),
                            "torch eager": median_ms(lambda: by_ids(prefill_ids), a.runs),
                            "torch.compile": median_ms(lambda: inductor(prefill_ids), a.runs)}
        if a.autotune:
            tuned = torch.compile(by_ids, mode="max-autotune", dynamic=False)
            times["prefill"]["torch.compile max-autotune"] = median_ms(lambda: tuned(prefill_ids), a.runs)
        del runner, logits, backend, inductor

        # --- decode: the prefix's cache from transformers, then one token ---
        prefix, token = ids[:, :a.past], ids[:, a.past:]
        cache = DynamicCache()
        model(input_ids=prefix, past_key_values=cache, use_cache=True)
        past = []
        for layer in range(a.layers):
            past += [cache.layers[layer].keys.clone(), cache.layers[layer].values.clone()]
        emb = model.model.embed_tokens(token)
        step = DecodeStep(model)
        want = DecodeStep(truth_model)(emb.float(), *(t.float() for t in past))[0]
        eager = step(emb, *past)[0]
        runner, outs = sinter_runner(step, (emb, *past), device)
        runner.enqueue()
        ok &= report("decode", "from_torch + sinter.compile", outs[0], want, eager)
        # transformers' StaticCache with the prefix written by transformers' eager forward. The
        # cache keeps its own write position, one further each call: the check runs on a cache
        # of exactly past + 1 tokens, and each timed path gets one with room for all its calls.
        def static_cache(room):
            c = StaticCache(config=config, max_cache_len=a.past + room)
            model(input_ids=prefix, past_key_values=c, cache_position=torch.arange(a.past, device=device))
            return c
        position = torch.tensor([a.past], device=device)
        decode = lambda x, c: model(input_ids=x, past_key_values=c, cache_position=position).logits  # noqa: E731
        torch._dynamo.reset()
        backend = torch.compile(decode, backend="sinter", dynamic=False)
        ok &= report("decode", 'torch.compile(backend="sinter")', backend(token, static_cache(1)), want, eager)
        inductor = torch.compile(decode, dynamic=False)
        room = a.runs + 8  # warm-up, the compiling call and the timed calls
        paths = {'torch.compile(backend="sinter")': backend, "torch eager": decode, "torch.compile": inductor}
        if a.autotune:
            paths["torch.compile max-autotune"] = torch.compile(decode, mode="max-autotune", dynamic=False)
        times["decode"] = {"sinter (from_torch, graph mode)": median_ms(runner.enqueue, a.runs)}
        for label, fn in paths.items():
            cache = static_cache(room)
            times["decode"][label] = median_ms(lambda: fn(token, cache), a.runs)
    for case, row in times.items():
        print(f"   {case} ({a.prefill if case == 'prefill' else 1} tokens"
              f"{'' if case == 'prefill' else f' after {a.past}'}), ms, median of {a.runs}: "
              + "; ".join(f"{k} {v:.4f}" for k, v in row.items()))
    print("all checks passed" if ok else "SOME CHECKS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
