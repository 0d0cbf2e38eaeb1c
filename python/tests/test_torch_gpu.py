"""The torch path on a GPU: models imported with from_torch, compiled with sinter.compile and run
with run_torch / TorchRunner on CUDA tensors, and torch.compile(backend="sinter") with the GPU
executor, each compared with torch eager on the same GPU. Skipped, saying why, without torch, a
CUDA device or a GPU Sinter can use.

Each bf16 result is compared with the float32 computation of the same bf16 weights and inputs
(torch eager in float32, TF32 off): relative L2 error <= 1e-2, the bound of DESIGN.md; torch's own
bf16 error is printed beside it (pytest -s). float32 results: <= 1e-5 against torch eager float32.
"""

import copy

import pytest

import sinter
from conftest import rel_l2

torch = pytest.importorskip("torch", reason="the torch GPU tests need PyTorch")
if not torch.cuda.is_available():
    pytest.skip("the torch GPU tests need a CUDA device (torch.cuda.is_available() is false)",
                allow_module_level=True)
if not sinter.gpu_availability()["available"]:
    pytest.skip(f"the torch GPU tests need a GPU Sinter can use: {sinter.gpu_availability()['reason']}",
                allow_module_level=True)

import sinter.dynamo_backend  # noqa: E402,F401  (registers backend="sinter")
import torch_models  # noqa: E402

CUDA = torch.device("cuda", torch.cuda.current_device())
DTYPES = [torch.float32, torch.bfloat16]


@pytest.fixture(autouse=True)
def exact_float32():
    """float32 means float32: no TF32 in torch's matmuls and convolutions."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def truth(model, inputs):
    """torch eager in float32 on the GPU, of the model's own (possibly bf16) values."""
    with torch.no_grad():
        return copy.deepcopy(model).float()(*(x.float() for x in inputs)).float()


def check(got, model_name, dtype, model, inputs, torch_out=None):
    want = truth(model, inputs)
    error = rel_l2(got.float().cpu().numpy(), want.cpu().numpy())
    torch_error = rel_l2(torch_out.float().cpu().numpy(), want.cpu().numpy()) if torch_out is not None else None
    print(f"{model_name} {dtype}: Sinter relative L2 error {error:.3g}"
          + (f" (torch eager {dtype}: {torch_error:.3g})" if torch_error is not None else ""))
    assert error <= (1e-5 if dtype == torch.float32 else 1e-2), f"relative L2 error {error:.3g}"


def feeds(imported, inputs):
    names = [t.name for t in imported.graph.inputs if t.name not in imported.weights]
    weights = {n: w.to(CUDA) for n, w in imported.weights.items()}
    return {**dict(zip(names, inputs)), **weights}


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "bf16"])
@pytest.mark.parametrize("name", torch_models.NAMES)
def test_from_torch_compile_run_torch(name, dtype):
    model, inputs = torch_models.build(name, dtype, CUDA)
    with torch.no_grad():
        torch_out = model(*inputs)
    imported = sinter.import_torch(model, inputs)
    plan = sinter.compile(imported.graph, device=CUDA.index)
    poisoned = torch.full(tuple(torch_out.shape), float("nan"), dtype=dtype, device=CUDA)
    out = sinter.run_torch(plan, feeds(imported, inputs), outputs={"output": poisoned})
    assert out["output"] is poisoned
    check(out["output"], name, dtype, model, inputs, torch_out)


@pytest.mark.parametrize("mode", ["stream", "graph"])
def test_torch_runner_reruns_with_new_tensors(mode):
    model, inputs = torch_models.build("transformer", torch.bfloat16, CUDA)
    imported = sinter.import_torch(model, inputs)
    runner = sinter.TorchRunner(sinter.compile(imported.graph, device=CUDA.index), mode=mode)
    first = runner(feeds(imported, inputs))["output"].clone()
    other = tuple(torch.randn_like(x) for x in inputs)
    second = runner(feeds(imported, other))["output"]
    torch.cuda.synchronize()
    check(first, "transformer", torch.bfloat16, model, inputs)
    check(second, "transformer", torch.bfloat16, model, other)
    if mode == "graph":  # new tensors: captured again, the graph updated in place
        stats = runner.runner.stats()
        assert stats["captures"] == 2 and stats["enqueues"] == 2 and stats["instantiations"] == 1


def test_torch_runner_bind_once_enqueue_many_replays_one_graph():
    model, inputs = torch_models.build("transformer", torch.bfloat16, CUDA)
    imported = sinter.import_torch(model, inputs)
    runner = sinter.TorchRunner(sinter.compile(imported.graph, device=CUDA.index), mode="graph")
    x = inputs[0].clone()
    out = runner.bind(feeds(imported, (x,)))["output"]
    for step in range(3):
        x.copy_(torch.randn_like(x))
        runner.enqueue()
        check(out, f"transformer step {step}", torch.bfloat16, model, (x,))
    stats = runner.runner.stats()
    assert stats["captures"] == 1 and stats["enqueues"] == 3


def test_torch_runner_on_a_side_stream():
    model, inputs = torch_models.build("mlp", torch.float32, CUDA)
    imported = sinter.import_torch(model, inputs)
    runner = sinter.TorchRunner(sinter.compile(imported.graph, device=CUDA.index))
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    out = runner(feeds(imported, inputs), stream=side)["output"]
    side.synchronize()
    check(out, "mlp", torch.float32, model, inputs)


def test_a_non_contiguous_input_is_refused_on_the_gpu():
    model, inputs = torch_models.build("mlp", torch.float32, CUDA)
    imported = sinter.import_torch(model, inputs)
    runner = sinter.TorchRunner(sinter.compile(imported.graph, device=CUDA.index))
    x = inputs[0].t().contiguous().t()
    with pytest.raises(sinter.InvalidArgumentError, match="input 'x' has the strides"):
        runner(feeds(imported, (x,)))


@pytest.mark.parametrize("mode", [None, "reduce-overhead"], ids=["stream", "graph"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "bf16"])
@pytest.mark.parametrize("name", torch_models.NAMES)
def test_torch_compile_backend(name, dtype, mode):
    model, inputs = torch_models.build(name, dtype, CUDA)
    torch._dynamo.reset()
    with torch.no_grad():
        torch_out = model(*inputs)
        compiled = torch.compile(model, backend="sinter", mode=mode, dynamic=False)
        compiled(*inputs)
        out = compiled(*inputs)  # the second call runs the cached plans
    check(out, name, dtype, model, inputs, torch_out)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "bf16"])
def test_transformers_llama(dtype):
    """transformers' LlamaForCausalLM: from embeddings through from_torch + sinter.compile, and from
    token ids through torch.compile(backend="sinter") (the embedding runs in torch)."""
    pytest.importorskip("transformers", reason="the transformers Llama test needs transformers")
    model, inputs = torch_models.build_hf_llama(dtype, CUDA)
    with torch.no_grad():
        torch_out = model(*inputs)
    imported = sinter.import_torch(model, inputs)
    out = sinter.run_torch(sinter.compile(imported.graph, device=CUDA.index), feeds(imported, inputs))["output"]
    check(out, "transformers llama (embeddings)", dtype, model, inputs, torch_out)

    model, inputs = torch_models.build_hf_llama(dtype, CUDA, from_ids=True)
    torch._dynamo.reset()
    with torch.no_grad():
        torch_out = model(*inputs)
        compiled = torch.compile(model, backend="sinter", mode="reduce-overhead", dynamic=False)
        compiled(*inputs)
        out = compiled(*inputs)
    want = truth_of_ids(model, inputs)
    error = rel_l2(out.float().cpu().numpy(), want.cpu().numpy())
    print(f"transformers llama (token ids, torch.compile) {dtype}: Sinter relative L2 error {error:.3g}")
    assert error <= (1e-5 if dtype == torch.float32 else 1e-2)


def test_torch_compile_backend_graph_mode_replays_on_new_activations():
    """mode="reduce-overhead": activations come at new addresses each call; the regions copy them
    into buffers of their own, so the captured graph replays instead of being captured again."""
    model, inputs = torch_models.build("llama", torch.bfloat16, CUDA)
    torch._dynamo.reset()
    earlier = set(sinter.dynamo_backend._REGIONS)  # other tests' regions may still be alive
    compiled = torch.compile(model, backend="sinter", mode="reduce-overhead", dynamic=False)
    with torch.no_grad():
        for step in range(5):
            x = torch.randn_like(inputs[0])
            check(compiled(x), f"llama call {step}", torch.bfloat16, model, (x,))
    regions = [r for r in sinter.dynamo_backend._REGIONS if r not in earlier and r._runner is not None]
    assert regions
    for region in regions:
        stats = region._runner.runner.stats()
        assert stats["enqueues"] == 5 and stats["captures"] <= 2, stats


def truth_of_ids(model, ids):
    """truth() for a model whose input is integer token ids (kept as they are)."""
    with torch.no_grad():
        return copy.deepcopy(model).float()(*ids).float()


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_torch_compile_backend_over_batch_sizes(dynamic):
    """Several batch sizes through one compiled model on the GPU: a plan per size, each correct."""
    model, (x,) = torch_models.build("llama", torch.bfloat16, CUDA)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="sinter", dynamic=dynamic)
    with torch.no_grad():
        for batch in (1, 3, 4, 7):
            xb = torch.randn((batch,) + tuple(x.shape[1:]), device=CUDA, dtype=torch.bfloat16)
            check(compiled(xb), f"llama batch {batch}", torch.bfloat16, model, (xb,))


@pytest.mark.parametrize("mode", [None, "reduce-overhead"], ids=["stream", "graph"])
def test_torch_compile_backend_takes_views_that_are_not_aligned(mode):
    """A region's input may be a view into the middle of a buffer (eager code slicing a cache):
    the Runner binds 256-byte aligned memory only, so the backend copies such a view first."""
    model, (x,) = torch_models.build("mlp", torch.float32, CUDA)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="sinter", mode=mode, dynamic=False)
    storage = torch.randn(x.numel() + 3, device=CUDA, dtype=x.dtype)
    with torch.no_grad():
        for offset in (0, 3, 1):
            view = storage[offset:offset + x.numel()].view(x.shape)
            assert (view.data_ptr() % 256 == 0) == (offset == 0)
            check(compiled(view), f"mlp, input at element {offset}", torch.float32, model, (view,))
