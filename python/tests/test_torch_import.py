"""sinter.from_torch / import_torch: modules exported by torch.export, imported, run on the CPU
reference and compared with torch eager on the CPU. Skipped without torch."""

import numpy as np
import pytest

import sinter
from conftest import rel_l2

torch = pytest.importorskip("torch", reason="the torch importer's tests need PyTorch (pip install torch)")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_models  # noqa: E402

BOUND = {torch.float32: 1e-5, torch.bfloat16: 1e-2}  # relative L2, DESIGN.md


def run_imported(imported, inputs):
    """Runs an import on the CPU reference with the module's inputs, by the graph's input names."""
    names = [t.name for t in imported.graph.inputs if t.name not in imported.weights]
    feeds = {n: sinter.torch_types.to_numpy(x) for n, x in zip(names, inputs)}
    return sinter.run_reference(imported.graph, {**feeds, **imported.weights_numpy()})


def eager(model, inputs):
    with torch.no_grad():
        out = model(*inputs)
    return out if isinstance(out, (tuple, list)) else (out,)


def check_against_eager(model, inputs, bound=None, **kwargs):
    """Imports `model`, runs it both ways; returns the import and the largest relative L2 error."""
    imported = sinter.import_torch(model, inputs, **kwargs)
    got = run_imported(imported, inputs)
    want = eager(model, inputs)
    names = [t.name for t in imported.graph.outputs]
    assert len(names) == len(want)
    worst = 0.0
    for name, expected in zip(names, want):
        assert got[name].shape == tuple(expected.shape), name
        if expected.dtype in (torch.bool, torch.int32, torch.int64):
            np.testing.assert_array_equal(got[name], expected.numpy(), err_msg=name)
        else:
            error = rel_l2(got[name], expected.float().numpy())
            worst = max(worst, error)
            assert error <= (bound or BOUND[expected.dtype]), f"{name}: relative L2 error {error:.3g}"
    return imported, worst


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("name", torch_models.NAMES)
def test_model_matches_torch_eager(name, dtype):
    model, inputs = torch_models.build(name, dtype)
    imported, error = check_against_eager(model, inputs)
    assert all(t.dtype == sinter.torch_types.sinter_dtype(dtype, "") for t in imported.graph.outputs)
    print(f"{name} {dtype}: relative L2 error {error:.3g}")


def test_inputs_weights_and_outputs_are_named():
    model, inputs = torch_models.build("mlp")
    imported = sinter.import_torch(model, inputs)
    g = imported.graph
    assert [t.name for t in g.inputs] == ["x", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [t.name for t in g.outputs] == ["output"]
    assert list(imported.weights) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    # a Linear's weight is read transposed: the input is that view of the parameter's memory
    # ([in, out] with strides [1, in]), so no step copies it
    assert torch.equal(imported.weights["fc1.weight"], model.fc1.weight.detach().t())
    w = g.find_tensor("fc1.weight")
    assert w.shape == (64, 128) and tuple(w.strides) == (1, 64)
    assert imported.weights["fc1.weight"].stride() == (1, 64)
    assert g.find_tensor("fc1.bias").shape == (128,)
    assert g.find_tensor("x").shape == (8, 64) and g.find_tensor("x").dtype == sinter.f32
    ops = [n["op"] for n in g.nodes]
    assert ops.count(sinter.OpKind.matmul) == 2 and sinter.OpKind.gelu in ops
    assert isinstance(sinter.from_torch(model, inputs[0]), sinter.Graph)  # one tensor for the tuple


def test_a_weight_read_untransposed_too_stays_row_major():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(6, 6))

        def forward(self, x):
            return x @ self.w.t() + x @ self.w

    model = Tied().eval()
    imported, _ = check_against_eager(model, (torch.randn(3, 6),))
    w = imported.graph.find_tensor("w")
    assert tuple(w.strides) == (6, 1) and torch.equal(imported.weights["w"], model.w.detach())


def test_several_outputs_are_numbered():
    class TwoOut(nn.Module):
        def forward(self, x):
            return x.relu(), (x * 2, x.exp())

    x = torch.randn(3, 4)
    imported, _ = check_against_eager_flat(TwoOut(), (x,))
    assert [t.name for t in imported.graph.outputs] == ["output_0", "output_1", "output_2"]


def check_against_eager_flat(model, inputs):
    imported = sinter.import_torch(model, inputs)
    got = run_imported(imported, inputs)
    want = torch.utils._pytree.tree_leaves(eager(model, inputs))
    for t, expected in zip(imported.graph.outputs, want):
        assert rel_l2(got[t.name], expected.numpy()) <= 1e-6
    return imported, got


def test_dtype_converts_a_copy_of_the_module():
    model, inputs = torch_models.build("transformer")
    g = sinter.from_torch(model, inputs, dtype="bf16")
    assert {t.dtype for t in g.inputs} == {sinter.bf16}
    assert model.qkv.weight.dtype == torch.float32  # the module itself is unchanged
    bf16_model, bf16_inputs = torch_models.build("transformer", torch.bfloat16)
    imported = sinter.import_torch(model, inputs, dtype=sinter.bf16)
    got = run_imported(imported, bf16_inputs)["output"]
    assert rel_l2(got, eager(bf16_model, bf16_inputs)[0].float().numpy()) <= 1e-2


def test_constants_computed_from_no_input_become_weights():
    """The Llama layer computes its rotary tables from torch.arange in forward: they are folded
    at import time into weight inputs holding torch's values."""
    model, inputs = torch_models.build("llama")
    imported = sinter.import_torch(model, inputs)
    params = {n for n, _ in model.named_parameters()}
    folded = [n for n in imported.weights if n not in params]
    assert folded, "the cos/sin tables should be weights"
    cos, sin = model.rotary(16, torch.float32)
    half = cos.shape[-1] // 2  # rope takes the first half of tables that repeat it
    values = [imported.weights[n] for n in folded]
    assert any(v.shape == cos[..., :half].shape and torch.allclose(v, cos[..., :half]) for v in values)
    assert any(v.shape == sin[..., :half].shape and torch.allclose(v, sin[..., :half]) for v in values)
    ops = [n["op"] for n in imported.graph.nodes]
    assert sinter.OpKind.sdpa in ops and ops.count(sinter.OpKind.rope) == 2  # q and k
    assert sinter.OpKind.neg not in ops and sinter.OpKind.concat not in ops


class RotaryTables(nn.Module):
    """x * cos + rotate_half(x) * sin with tables given (`repeat`: halves that repeat, as Llama's)."""

    def __init__(self, repeat=True, as_input=False):
        super().__init__()
        g = torch.Generator().manual_seed(5)
        first = torch.randn(6, 4, generator=g)
        # not persistent: tables the module derives (as transformers' rotary inverse frequencies), folded
        self.register_buffer("cos", torch.cat([first, first if repeat else torch.randn(6, 4, generator=g)], -1),
                             persistent=False)
        self.register_buffer("sin", torch.cat([first.flip(0), first.flip(0)], -1), persistent=False)
        self.as_input = as_input

    def forward(self, x, cos=None):
        cos = cos if self.as_input else self.cos
        return x * cos + torch_models.rotate_half(x) * self.sin


@pytest.mark.parametrize("case", ["repeating", "halves_differ", "cos_at_run_time"])
def test_rotary_embedding_pattern_becomes_rope_only_when_it_is_one(case):
    model = RotaryTables(repeat=case != "halves_differ", as_input=case == "cos_at_run_time").eval()
    x = torch.randn(2, 3, 6, 8, generator=torch.Generator().manual_seed(6))
    inputs = (x, model.cos.clone()) if case == "cos_at_run_time" else (x,)
    imported, _ = check_against_eager(model, inputs)
    ops = [n["op"] for n in imported.graph.nodes]
    if case == "repeating":
        assert ops == [sinter.OpKind.rope]
    else:
        assert sinter.OpKind.rope not in ops and sinter.OpKind.concat in ops


class RotaryFromABuffer(nn.Module):
    """Rotary tables as transformers' Llama computes them: cos and sin of positions times a
    non-persistent buffer of inverse frequencies (not in the state dict)."""

    def __init__(self, dim=8):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, dim, 2).float() / dim), persistent=False)
        self.register_buffer("scale", torch.full((dim,), 1.5))  # persistent: a weight input

    def forward(self, x):
        positions = torch.arange(x.shape[1], dtype=torch.float32)
        angles = torch.outer(positions, self.inv_freq)
        emb = torch.cat([angles, angles], dim=-1)
        return x * emb.cos() * self.scale + x.roll(1, -1) * emb.sin()


def test_a_non_persistent_buffer_is_folded_and_a_persistent_one_is_a_weight():
    model = RotaryFromABuffer().eval()
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(3))
    imported, _ = check_against_eager(model, (x,))
    assert "scale" in imported.weights and "inv_freq" not in imported.weights
    assert [n for n in imported.weights if n != "scale"], "the folded cos/sin tables are weights"


class PointwiseZoo(nn.Module):
    def forward(self, x, y):
        pos = x.abs() + 0.5
        outs = [
            torch.add(x, y, alpha=2), torch.sub(x, y, alpha=0.5), 1 - x, x / (y.abs() + 1), 3.0 / pos,
            x ** 2, pos ** 3, pos ** 0.5, pos ** y, torch.maximum(x, y), torch.minimum(x, y),
            x.clamp(-0.5, 0.5), x.clamp(min=0.1), F.relu6(x * 4), F.leaky_relu(x, 0.2),
            F.hardswish(x * 3), F.hardsigmoid(x * 3), F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x),
            x.sigmoid(), x.tanh(), x.exp(), pos.log(), pos.sqrt(), pos.rsqrt(), pos.reciprocal(), -x,
            torch.where(x > y, x, y * 2), x.masked_fill(y < 0, -1.0), torch.where(x >= 0, 1.0, -1.0),
        ]
        flags = [x == y, x != 0, x < 0.25, x <= y, (x > 0) & (y > 0), (x > 0) | (y > 0), ~(x > 0),
                 torch.logical_xor(x > 0, y > 0)]
        return torch.stack(outs), torch.stack(flags)


def test_pointwise_ops():
    g = torch.Generator().manual_seed(3)
    x, y = torch.randn(4, 6, generator=g), torch.randn(4, 6, generator=g)
    check_against_eager(PointwiseZoo(), (x, y))


class Reductions(nn.Module):
    def forward(self, x):
        values, indices = x.max(dim=1)
        return ((x * x).sum(), x.sum((0, 2), keepdim=True), x.mean(-1), x.amax(1), x.amin((0, 1)),
                values, indices, x.min(dim=-1, keepdim=True)[0], x.argmax(-1), x.argmin(0), x.argmax(),
                x.var(-1), x.std((1, 2), correction=0), x.log_softmax(0), x.softmax(1),
                (x > 0).sum(-1), x.to(torch.int32).sum(1))


def test_reductions_and_softmax_over_any_dim():
    x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(4)) * 3
    check_against_eager(Reductions(), (x,), bound=1e-6)


class Layout(nn.Module):
    def forward(self, x, row):
        a, b = x.chunk(2, dim=1)
        parts = [a * b, x.narrow(1, 1, 2).repeat(1, 3, 1)[:, :4], x[:, 1:5:2]]
        grown = row.expand(2, 6, 4) + x
        return (torch.cat(parts, dim=1), grown, x.permute(2, 0, 1).contiguous(), x.select(2, -1),
                x.unsqueeze(1).squeeze(1).flatten(1), torch.stack([a, b], dim=-1), x.mT,
                x.unbind(0)[1], torch.matmul(x, row.view(4)), x.to(torch.bfloat16).to(torch.float32),
                row.expand(3, 2, 4).clone())


def test_layout_ops():
    g = torch.Generator().manual_seed(5)
    x, row = torch.randn(2, 6, 4, generator=g), torch.randn(1, 1, 4, generator=g)
    check_against_eager(Layout(), (x, row))


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.plain = nn.LayerNorm(8, elementwise_affine=False)
        self.wide = nn.LayerNorm([4, 8])
        self.rms = nn.RMSNorm(8)  # eps=None: torch's default epsilon
        self.conv1d = nn.Conv1d(4, 6, 3, padding="same", dilation=2)
        self.conv_valid = nn.Conv2d(4, 2, (3, 2), padding="valid", stride=(1, 2))

    def forward(self, x):
        return (self.plain(x), self.wide(x), self.rms(x), self.conv1d(x),
                self.conv_valid(x.view(2, 4, 4, 2)), F.scaled_dot_product_attention(x, x, x, scale=0.3))


def test_norms_convolutions_and_3d_attention():
    with torch.no_grad():
        model = Norms()
        model.wide.weight.uniform_(0.5, 1.5)
        model.wide.bias.uniform_(-1, 1)
    x = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(6))
    check_against_eager(model, (x,))


def test_attention_with_masks():
    class Masked(nn.Module):
        def forward(self, q, k, v, keep, bias):
            return (F.scaled_dot_product_attention(q, k, v, attn_mask=keep),
                    F.scaled_dot_product_attention(q, k, v, attn_mask=bias))

    g = torch.Generator().manual_seed(7)
    q, k, v = (torch.randn(2, 3, 5, 8, generator=g) for _ in range(3))
    keep = torch.rand(5, 5, generator=g) > 0.3
    keep[:, 0] = True
    bias = torch.randn(2, 1, 5, 5, generator=g)
    check_against_eager(Masked(), (q, k, v, keep, bias))


# ---- what the importer refuses -----------------------------------------------------------------

class Cumsum(nn.Module):
    def forward(self, x):
        y = x.relu()
        return torch.cumsum(y, 0)  # the line the error names


def test_an_op_sinter_lacks_names_the_op_and_the_source_line():
    with pytest.raises(sinter.UnsupportedError) as info:
        sinter.from_torch(Cumsum(), (torch.randn(4, 4),))
    message = info.value.message
    assert "aten.cumsum" in message
    assert "torch node 'cumsum'" in message
    assert "test_torch_import.py:" in message and "torch.cumsum(y, 0)" in message


def test_embedding_and_index_select_with_runtime_indices_are_gathers():
    class Lookup(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(10, 4)

        def forward(self, ids, x, cols):
            return self.table(ids) * 2, torch.index_select(x, 1, cols)

    inputs = (torch.tensor([[1, 2, 9], [0, 0, 5]]), torch.randn(3, 6), torch.tensor([5, 0, 5, 2]))
    imported, _ = check_against_eager(Lookup(), inputs)
    ops = [n["op"] for n in imported.graph.nodes]
    assert ops.count(sinter.OpKind.gather) == 2


def test_transformers_llama_from_token_ids():
    """The whole LlamaForCausalLM from token ids: the embedding lookup is a gather."""
    pytest.importorskip("transformers", reason="the transformers Llama test needs transformers")
    model, inputs = torch_models.build_hf_llama(from_ids=True)
    imported, error = check_against_eager(model, inputs)
    assert sinter.OpKind.gather in [n["op"] for n in imported.graph.nodes]
    print(f"transformers Llama from token ids: relative L2 error {error:.3g}")


def test_embedding_with_constant_indices_is_slices():
    class Lookup(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Embedding(10, 4)

        def forward(self, x):
            return x + self.table(torch.tensor([3, 4, 5, 1]))

    check_against_eager(Lookup(), (torch.randn(4, 4),))


def test_float64_is_refused_naming_the_tensor():
    with pytest.raises(sinter.UnsupportedError, match="input 'input' is torch.float64"):
        sinter.from_torch(nn.ReLU(), (torch.randn(3, dtype=torch.float64),))


def test_training_mode_is_refused():
    with pytest.raises(sinter.UnsupportedError, match="training mode"):
        sinter.from_torch(nn.Dropout(0.5).train(), (torch.randn(3),))
    with pytest.raises(sinter.UnsupportedError, match="mutates.*running_mean"):
        sinter.from_torch(nn.BatchNorm1d(3).train(), (torch.randn(4, 3),))


def test_arguments_are_checked():
    with pytest.raises(TypeError, match="torch.nn.Module"):
        sinter.from_torch(lambda x: x, (torch.randn(3),))
    with pytest.raises(TypeError, match="tuple of tensors"):
        sinter.from_torch(nn.ReLU(), [[1.0]][0][0])
    with pytest.raises(TypeError, match="sinter.DType"):
        sinter.from_torch(nn.ReLU(), (torch.randn(3),), dtype=3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_transformers_llama_from_embeddings(dtype):
    pytest.importorskip("transformers", reason="the transformers Llama test needs transformers")
    model, inputs = torch_models.build_hf_llama(dtype)
    imported, error = check_against_eager(model, inputs)
    ops = [n["op"] for n in imported.graph.nodes]
    assert ops.count(sinter.OpKind.sdpa) == 2 and sinter.OpKind.matmul in ops
    print(f"transformers Llama {dtype}: relative L2 error {error:.3g}")


def test_transformers_llama_decode_step_with_its_kv_cache():
    """A decode step whose KV cache comes in as tensors: transformers fills a DynamicCache from them
    (a cat onto an empty tensor, which torch skips), and every output (logits, each layer's keys
    and values with the new token's) matches torch eager."""
    pytest.importorskip("transformers", reason="the transformers Llama test needs transformers")
    model, inputs = torch_models.build_hf_llama_decode_step()
    imported = sinter.import_torch(model, inputs)
    names = [t.name for t in imported.graph.inputs if t.name not in imported.weights]
    assert len(names) == len(inputs)
    feeds = {**dict(zip(names, inputs)), **imported.weights}
    got = sinter.run_reference(imported.graph, {n: v.detach().numpy() for n, v in feeds.items()})
    with torch.no_grad():
        want = model(*inputs)
    assert len(imported.graph.outputs) == len(want) == 5
    assert list(imported.graph.outputs[1].shape) == [1, 2, 8, 16]  # 7 past tokens and the new one
    for t, w in zip(imported.graph.outputs, want):
        assert rel_l2(got[t.name], w.numpy()) <= 1e-5, t.name


def test_cat_skips_an_empty_1d_buffer():
    """torch.cat skips 1-D tensors of shape [0]: an empty registered buffer (a cache that starts
    empty) is no input of the graph."""
    class Cache(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("past", torch.zeros(0))

        def forward(self, x):
            return torch.cat([self.past, x]) * 2

    imported, _ = check_against_eager(Cache(), (torch.randn(5),))
    assert all(list(t.shape) != [0] for t in imported.graph.inputs)
