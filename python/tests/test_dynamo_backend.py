"""torch.compile(model, backend="sinter") with the reference executor: Dynamo's graphs split into
Sinter regions and torch ops, the regions run on the CPU reference, compared with torch eager.
Skipped without torch."""

import logging

import pytest

import sinter
from conftest import rel_l2

torch = pytest.importorskip("torch", reason="the torch.compile backend's tests need PyTorch (pip install torch)")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import sinter.dynamo_backend as backend  # noqa: E402  (registers backend="sinter")
import torch_models  # noqa: E402

BOUND = {torch.float32: 1e-5, torch.bfloat16: 1e-2}
REFERENCE = {"executor": "reference"}


def compiled_run(model, inputs, caplog, options=REFERENCE):
    """(the compiled model's output, the backend's report lines)."""
    torch._dynamo.reset()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="sinter"), torch.no_grad():
        out = torch.compile(model, backend="sinter", options=options, dynamic=False)(*inputs)
    lines = [r.getMessage() for r in caplog.records if r.name == "sinter" and r.levelno == logging.INFO]
    return out, lines


def eager(model, inputs):
    with torch.no_grad():
        return model(*inputs)


def test_the_backend_is_registered():
    assert "sinter" in torch._dynamo.list_backends()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", torch_models.NAMES)
def test_model_matches_torch_eager(name, dtype, caplog):
    model, inputs = torch_models.build(name, dtype)
    out, lines = compiled_run(model, inputs, caplog)
    want = eager(model, inputs)
    assert out.dtype == want.dtype and out.shape == want.shape
    error = rel_l2(out.float().numpy(), want.float().numpy())
    assert error <= BOUND[dtype], f"relative L2 error {error:.3g}"
    assert len(lines) == 1 and lines[0].startswith("sinter: 1 region on Sinter (reference): ")
    if name == "llama":  # the rotary tables read no input: torch computes them, cos and sin included
        assert "cos 1" in lines[0].split("; left to torch: ")[1]
    else:
        assert lines[0].endswith("; left to torch: 0 ops")


class SplitByCumsum(nn.Module):
    """Two Sinter regions with an op Sinter lacks between them."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = torch.cumsum(h, dim=-1)
        return torch.relu(self.fc2(h)) * 2


def test_an_unsupported_op_splits_the_graph_and_runs_in_torch(caplog):
    model = SplitByCumsum().eval()
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(2))
    out, lines = compiled_run(model, (x,), caplog)
    assert rel_l2(out.numpy(), eager(model, (x,)).numpy()) <= 1e-5
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith("sinter: 2 regions on Sinter (reference): 7 ops (")
    assert all(part in line for part in ("t 2", "addmm 2", "gelu 1", "relu 1", "mul 1"))
    assert line.endswith("; left to torch: 1 op (cumsum 1)")


def test_a_graph_with_nothing_sinter_computes_runs_in_torch(caplog):
    class OnlyCumsum(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 0)

    x = torch.randn(5, 3)
    out, lines = compiled_run(OnlyCumsum(), (x,), caplog)
    assert torch.equal(out, torch.cumsum(x, 0))
    assert lines == ["sinter: 0 regions on Sinter (reference); left to torch: 1 op (cumsum 1)"]


def test_sinter_log_prints_the_report_when_the_logger_is_quiet(monkeypatch, capsys):
    monkeypatch.setenv("SINTER_LOG", "1")
    logging.getLogger("sinter").setLevel(logging.WARNING)
    try:
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(SplitByCumsum().eval(), backend="sinter", options=REFERENCE)(torch.randn(2, 16))
    finally:
        logging.getLogger("sinter").setLevel(logging.NOTSET)
    err = capsys.readouterr().err
    assert "sinter: 2 regions on Sinter (reference)" in err and "left to torch: 1 op (cumsum 1)" in err


def test_identical_layers_give_identical_region_graphs():
    """Regions are named canonically, so the plan cache's key (the graph's JSON) is the same for
    two layers of the same shapes: one plan serves both."""
    from torch.fx.experimental.proxy_tensor import make_fx

    class TwoLayers(nn.Module):
        def forward(self, x, w1, w2):
            h = torch.relu(x @ w1)
            h = torch.cumsum(h, dim=0)
            return torch.relu(h @ w2)

    args = (torch.randn(4, 8), torch.randn(8, 8), torch.randn(8, 8))
    gm = make_fx(TwoLayers())(*args)
    compiled = backend.split_aten_graph(gm, backend.BackendOptions("reference"))
    regions = [m for m in compiled.modules() if isinstance(m, backend.SinterRegion)]
    assert len(regions) == 2
    texts = [r.sinter_graph.to_json() for r in regions]
    assert texts[0] == texts[1]
    assert [t.name for t in regions[0].sinter_graph.inputs] == ["in_0", "in_1"]
    assert torch.allclose(compiled(*args), TwoLayers()(*args), rtol=1e-5, atol=1e-5)


def test_options_are_checked():
    parse = backend.BackendOptions.parse
    assert parse(None, None) == backend.BackendOptions("gpu", "stream", {})
    assert parse({"executor": "reference"}, "reduce-overhead").runner_mode == "graph"
    with pytest.raises(sinter.InvalidArgumentError, match=r"unknown options \['exec'\]"):
        parse({"exec": "reference"}, None)
    with pytest.raises(sinter.InvalidArgumentError, match="executor 'cpu' is not one of"):
        parse({"executor": "cpu"}, None)
    with pytest.raises(sinter.InvalidArgumentError, match="runner_mode 'loop' is not one of"):
        parse({"runner_mode": "loop"}, None)


@pytest.mark.skipif(sinter.gpu_availability()["available"], reason="this machine has a GPU")
def test_the_gpu_executor_without_a_gpu_says_so():
    torch._dynamo.reset()
    with pytest.raises(Exception, match="compiles plans on a GPU and there is none usable"):
        torch.compile(SplitByCumsum().eval(), backend="sinter")(torch.randn(2, 16))


@pytest.mark.parametrize("name", torch_models.NAMES)
def test_symbolic_shapes_compile_once_in_dynamo_and_once_per_shape_in_sinter(name, caplog):
    """dynamic=True: Dynamo traces one graph with a symbolic batch size (no recompile per size, so
    none past its recompile limit), and the backend compiles a static Sinter graph per batch size
    it meets, each equal to torch eager."""
    from torch._dynamo.utils import counters

    model, (x,) = torch_models.build(name)
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model, backend="sinter", options=REFERENCE, dynamic=True)
    sizes = [2, 3, 5, 2, 7, 9, 11, 12, 13, 14, 3]  # more distinct sizes than Dynamo's recompile limit (8)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="sinter"), torch.no_grad():
        for batch in sizes:
            xb = torch.randn((batch,) + tuple(x.shape[1:]), generator=torch.Generator().manual_seed(batch))
            out = compiled(xb)
            want = model(xb)
            assert out.shape == want.shape
            error = rel_l2(out.numpy(), want.numpy())
            assert error <= 1e-5, f"batch {batch}: relative L2 error {error:.3g}"
    lines = [r.getMessage() for r in caplog.records if r.name == "sinter" and r.levelno == logging.INFO]
    assert len(lines) == len(set(sizes))  # one Sinter compile per distinct size, none for a repeat
    assert all(line.startswith("sinter: 1 region on Sinter (reference)") for line in lines)
    assert counters["stats"]["unique_graphs"] == 1  # Dynamo traced one graph


def test_symbolic_shapes_past_the_signature_limit_run_in_torch(monkeypatch, caplog):
    import sinter.dynamo_shapes as shapes

    monkeypatch.setattr(shapes, "MAX_SIGNATURES", 2)
    model, (x,) = torch_models.build("mlp")
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="sinter", options=REFERENCE, dynamic=True)
    with caplog.at_level(logging.INFO, logger="sinter"), torch.no_grad():
        for batch in (2, 3, 4, 5):
            xb = torch.randn(batch, x.shape[1])
            assert rel_l2(compiled(xb).numpy(), model(xb).numpy()) <= 1e-5
    infos = [r for r in caplog.records if r.name == "sinter" and r.levelno == logging.INFO]
    warnings = [r.getMessage() for r in caplog.records if r.name == "sinter" and r.levelno == logging.WARNING]
    assert len(infos) == 2
    assert warnings == ["sinter: a graph with symbolic shapes met more than 2 signatures; new ones run in torch"]


def test_transformers_llama_from_token_ids(caplog):
    """The whole LlamaForCausalLM from token ids: the causal mask and the rotary tables run in
    torch; the embedding lookup (a gather), the decoder layers and the LM head on Sinter."""
    pytest.importorskip("transformers", reason="the transformers Llama test needs transformers")
    model, inputs = torch_models.build_hf_llama(from_ids=True)
    out, lines = compiled_run(model, inputs, caplog)
    error = rel_l2(out.numpy(), eager(model, inputs).numpy())
    assert error <= 1e-5, f"relative L2 error {error:.3g}"
    assert len(lines) == 1 and "_scaled_dot_product" in lines[0] and "embedding 1" in lines[0].split("left to torch")[0]


def test_transformers_llama_decode_on_a_static_cache():
    """transformers' StaticCache, as its compiled generation uses it: the cache update (index_copy
    in place) stays in torch, the layers run on Sinter; repeated steps (the cache moves its own
    write position on each) match torch eager on a cache of its own."""
    pytest.importorskip("transformers", reason="the transformers Llama test needs transformers")
    from transformers.cache_utils import StaticCache

    llama = torch_models.HfLlama().eval().llama
    ids = torch.randint(0, 256, (1, 12), generator=torch.Generator().manual_seed(3))

    def cache():
        c = StaticCache(config=llama.config, max_cache_len=12)
        with torch.no_grad():
            llama(input_ids=ids[:, :8], past_key_values=c, cache_position=torch.arange(8))
        return c

    def step(x, c, position):
        return llama(input_ids=x, past_key_values=c, cache_position=position).logits

    torch._dynamo.reset()
    earlier = set(sinter.dynamo_backend._REGIONS)
    compiled = torch.compile(step, backend="sinter", dynamic=False, options={"executor": "reference"})
    ours, theirs = cache(), cache()
    with torch.no_grad():
        for i in range(8, 12):
            position = torch.tensor([i])
            got = compiled(ids[:, i:i + 1], ours, position)
            want = step(ids[:, i:i + 1], theirs, position)
            assert rel_l2(got.numpy(), want.numpy()) <= 1e-5, f"step at position {i}"
    assert set(sinter.dynamo_backend._REGIONS) - earlier, "no region of the step ran on Sinter"


def test_a_linear_weight_is_fed_as_a_transposed_view_not_copied():
    """AOT autograd gives `mm(x, t(w))`: the region's input for w is the [in, out] view of the
    parameter (strides [1, in]), fed as w.t() at run time, with no permute step in the graph."""
    from torch.fx.experimental.proxy_tensor import make_fx

    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)).eval()
    x = torch.randn(4, 16)
    params = [p.detach() for p in model.parameters()]

    def fn(x, w1, b1, w2, b2):
        return F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)

    gm = make_fx(fn, pre_dispatch=False)(x, *params)
    compiled = backend.split_aten_graph(gm, backend.BackendOptions("reference"))
    (region,) = [m for m in compiled.modules() if isinstance(m, backend.SinterRegion)]
    assert sinter.OpKind.permute not in [n["op"] for n in region.sinter_graph.nodes]
    assert sorted(region.input_permutations.values()) == [[1, 0], [1, 0]]
    assert torch.allclose(compiled(x, *params), model(x), rtol=1e-5, atol=1e-6)
