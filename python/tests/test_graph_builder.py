"""Building graphs through the Python builder: shapes and dtypes, operators, every op."""

import pytest

import sinter


def mlp():
    g = sinter.Graph("mlp")
    x = g.input("x", sinter.bf16, [128, 1024])
    w = g.input("w", sinter.bf16, [1024, 4096])
    b = g.input("b", sinter.bf16, [4096])
    y = g.gelu(g.add(g.matmul(x, w), b))
    g.output(y, "y")
    g.output(g.amax(y), "y_amax")
    g.validate()
    return g


def test_mlp_shapes_and_nodes():
    g = mlp()
    assert g.name == "mlp"
    assert [t.name for t in g.inputs] == ["x", "w", "b"]
    assert [t.name for t in g.outputs] == ["y", "y_amax"]
    y, amax = g.outputs
    assert y.shape == (128, 4096) and y.dtype == sinter.bf16
    assert amax.shape == () and amax.ndim == 0
    assert [n["op"] for n in g.nodes] == [sinter.OpKind.matmul, sinter.OpKind.add,
                                          sinter.OpKind.gelu, sinter.OpKind.reduce_amax]
    assert g.nodes[2]["outputs"] == ["y"]
    assert repr(y) == "Tensor('y', bf16, [128, 4096])"


def test_operators_build_the_same_nodes():
    g = sinter.Graph("ops")
    x = g.input("x", sinter.f32, [4, 8])
    w = g.input("w", sinter.f32, [8, 3])
    y = -(x @ w + 1.0) * 2.0 / x.graph.scalar(4.0, sinter.f32)
    z = 1.0 - (y ** 2.0)
    ops = [n["op"] for n in g.nodes]
    assert ops == [sinter.OpKind.matmul, sinter.OpKind.constant, sinter.OpKind.add, sinter.OpKind.neg,
                   sinter.OpKind.constant, sinter.OpKind.mul, sinter.OpKind.constant, sinter.OpKind.div,
                   sinter.OpKind.constant, sinter.OpKind.pow, sinter.OpKind.constant, sinter.OpKind.sub]
    # 1.0 - y ** 2.0: the constant is the first operand
    assert g.nodes[-1]["inputs"] == [g.nodes[-2]["outputs"][0], g.nodes[-3]["outputs"][0]]
    assert z.shape == (4, 3)


def test_tensor_handles_compare_by_graph_and_id():
    g = sinter.Graph()
    x = g.input("x", sinter.f32, [2])
    assert g.find_tensor("x") == x
    assert hash(g.find_tensor("x")) == hash(x)
    assert g.find_tensor("nope") is None
    assert x.graph is g
    assert x.is_input and x.strides == (1,)


def test_a_view_input_keeps_its_strides():
    g = sinter.Graph()
    w = g.input("w_t", sinter.bf16, [64, 32], strides=[1, 64])
    assert w.strides == (1, 64)


def norm_block(norm):
    g = sinter.Graph("norm_block")
    x = g.input("x", sinter.f32, [2, 16, 64])
    gamma = g.input("gamma", sinter.f32, [64])
    beta = g.input("beta", sinter.f32, [64])
    if norm == "layernorm":
        h = g.layernorm(x, gamma, bias=beta, epsilon=1e-5)
    else:
        h = g.rmsnorm(x, gamma, epsilon=1e-6)
        h = g.add(h, beta)
    g.output(g.silu(h) * h, "y")
    g.validate()
    return g


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_norm_block(norm):
    g = norm_block(norm)
    assert g.outputs[0].shape == (2, 16, 64)
    assert sinter.OpKind.__members__[norm] in [n["op"] for n in g.nodes]


def every_op_graph():
    """One graph with a node of every op, each through its builder method."""
    g = sinter.Graph("every_op")
    x = g.input("x", sinter.f32, [2, 4, 8, 16])
    w = g.input("w", sinter.f32, [2, 4, 16, 16])
    y = g.input("y", sinter.f32, [2, 4, 8, 16])
    k = g.input("k", sinter.f32, [8, 3, 3, 16])
    c = g.input("c", sinter.f32, [8, 4])
    s = g.input("s", sinter.f32, [8, 4])
    gamma = g.input("gamma", sinter.f32, [16])
    outs = [g.matmul(x, w, compute=sinter.ComputeType.tf32, out_dtype=sinter.bf16),
            g.conv2d(x, k, stride=(1, 1), pad_begin=(1, 1), pad_end=(1, 1), dilation=(1, 1), groups=1)]
    o, stats = g.sdpa(x, x, x, causal=sinter.CausalMask.bottom_right, emit_stats=True, scale=0.25)
    outs += [o, stats]
    for name in ("identity", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "log", "sqrt",
                 "rsqrt", "abs", "neg", "reciprocal", "square"):
        outs.append(getattr(g, name)(x))
    for name in ("add", "sub", "mul", "div", "max", "min", "pow"):
        outs.append(getattr(g, name)(x, y))
        outs.append(getattr(g, name)(x, 2.0))
    for name in ("eq", "ne", "lt", "le", "gt", "ge"):
        outs.append(getattr(g, name)(x, y))
    outs.append(g.select(g.gt(x, y), x, y))
    outs.append(g.cast(x, sinter.fp8_e4m3, scale=g.scalar(2.0, sinter.f32)))
    outs += [g.sum(x, [-1]), g.mean(x, [1, 2], keepdim=True), g.reduce_max(x), g.reduce_min(x, [0]),
             g.amax(x), g.reduce(sinter.OpKind.reduce_sum, x, [3], out_dtype=sinter.f32)]
    outs += [g.argmax(x, -1), g.argmin(x, 1, keepdim=True)]
    outs += [g.softmax(x), g.layernorm(x, gamma), g.rmsnorm(x, gamma, bias=gamma, epsilon=1e-5),
             g.rope(x, c, s, interleaved=True)]
    outs += [g.reshape(x, [2, -1]), g.permute(x, [0, 2, 1, 3]), g.transpose(x, 1, 2),
             g.slice(x, [3], [0], [16], [2]), g.concat([x, w], axis=2),
             g.gather(x, g.input("ids", sinter.i64, [2, 3]), axis=-1)]
    outs += [g.all_reduce(x, "tp", 1, reduce=sinter.CollectiveReduce.max), g.all_gather(x, -1, "tp", 1),
             g.reduce_scatter(x, 1, group="tp", world=1)]
    outs.append(g.unary(sinter.OpKind.exp, x))
    outs.append(g.binary(sinter.OpKind.add, x, y))
    outs.append(g.compare(sinter.OpKind.lt, x, y))
    for i, t in enumerate(outs):
        g.output(t, f"out{i}")
    g.validate()
    return g


def test_every_op_has_a_builder_method():
    g = every_op_graph()
    built = {n["op"] for n in g.nodes}
    assert built == set(sinter.OpKind.__members__.values())


def test_sdpa_with_a_mask():
    g = sinter.Graph()
    q = g.input("q", sinter.bf16, [1, 8, 4, 64])
    kv = g.input("kv", sinter.bf16, [1, 2, 16, 64])
    mask = g.input("mask", sinter.boolean, [1, 1, 4, 16])
    o = g.sdpa(q, kv, kv, bias=mask)
    assert o.shape == (1, 8, 4, 64)
