"""sinter.from_onnx: ONNX models built with onnx.helper, imported and run on the CPU reference,
compared with onnx's own ReferenceEvaluator."""

import math
import subprocess
import sys

import numpy as np
import pytest

import sinter

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

F32 = TensorProto.FLOAT


def tensor_info(name, shape, elem=F32):
    return helper.make_tensor_value_info(name, elem, shape)


def weight(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def make_model(nodes, inputs, outputs, initializers=(), opset=23, check=True):
    graph = helper.make_graph(nodes, "test_graph", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    if check:
        onnx.checker.check_model(model, full_check=True)
    return model


def compare(model, feeds, rtol=1e-4, atol=1e-5, **kwargs):
    """Imports `model`, runs both references on `feeds`; returns the imported OnnxImport."""
    imported = sinter.import_onnx(model, **kwargs)
    got = sinter.run_reference(imported.graph, {**feeds, **imported.initializers})
    names = [o.name for o in model.graph.output]
    want = ReferenceEvaluator(model).run(None, feeds)
    assert [t.name for t in imported.graph.outputs] == names
    for name, expected in zip(names, want):
        assert got[name].shape == expected.shape, name
        if expected.dtype == np.bool_ or expected.dtype.kind in "iu":
            np.testing.assert_array_equal(got[name], expected, err_msg=name)
        else:
            np.testing.assert_allclose(got[name], expected, rtol=rtol, atol=atol, err_msg=name)
    return imported


def ops_of(graph):
    return [n["op"] for n in graph.nodes]


def randn(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---- models ------------------------------------------------------------------------------------

def gelu_erf_nodes(x, y, prefix, form="torch"):
    """The erf GELU, x * 0.5 * (1 + erf(x / sqrt(2))), as PyTorch exports it (form "torch":
    (x * (1 + erf)) * 0.5), with the half first ("half_first": (x * 0.5) * (1 + erf)) or scaled
    by a product ("rsqrt2": x * sqrt(0.5), then ((1 + erf) * 0.5) * x)."""
    p = prefix
    if form == "rsqrt2":
        scaled = helper.make_node("Mul", ["rsqrt2", x], [f"{p}_d"], name=f"{p}_scale")
    else:
        scaled = helper.make_node("Div", [x, "sqrt2"], [f"{p}_d"], name=f"{p}_div")
    nodes = [scaled,
             helper.make_node("Erf", [f"{p}_d"], [f"{p}_e"], name=f"{p}_erf"),
             helper.make_node("Add", ["one", f"{p}_e"], [f"{p}_a"], name=f"{p}_add")]
    if form == "torch":
        return nodes + [helper.make_node("Mul", [x, f"{p}_a"], [f"{p}_m"], name=f"{p}_mul"),
                        helper.make_node("Mul", [f"{p}_m", "half"], [y], name=f"{p}_half")]
    if form == "half_first":
        return nodes + [helper.make_node("Mul", [x, "half"], [f"{p}_h"], name=f"{p}_half"),
                        helper.make_node("Mul", [f"{p}_h", f"{p}_a"], [y], name=f"{p}_mul")]
    return nodes + [helper.make_node("Mul", [f"{p}_a", "half"], [f"{p}_h"], name=f"{p}_half"),
                    helper.make_node("Mul", [f"{p}_h", x], [y], name=f"{p}_mul")]


GELU_CONSTANTS = [weight("sqrt2", np.float32(math.sqrt(2))), weight("rsqrt2", np.float32(math.sqrt(0.5))),
                  weight("one", np.float32(1)), weight("half", np.float32(0.5))]


def mlp_model(rng, activation, opset):
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1_bias")]
    inits = [weight("w1", randn(rng, 16, 32, scale=0.25)), weight("b1", randn(rng, 32)),
             weight("w2", randn(rng, 32, 8, scale=0.25)), weight("b2", randn(rng, 8))]
    if activation == "erf_pattern":
        nodes += gelu_erf_nodes("hb", "act", "gelu")
        inits += [w for w in GELU_CONSTANTS if w.name != "rsqrt2"]
    elif activation == "Gelu_tanh":
        nodes.append(helper.make_node("Gelu", ["hb"], ["act"], name="act", approximate="tanh"))
    else:
        nodes.append(helper.make_node(activation, ["hb"], ["act"], name="act"))
    nodes += [helper.make_node("MatMul", ["act", "w2"], ["o"], name="fc2"),
              helper.make_node("Add", ["o", "b2"], ["y"], name="fc2_bias")]
    return make_model(nodes, [tensor_info("x", [4, 16])], [tensor_info("y", [4, 8])], inits, opset)


@pytest.mark.parametrize("activation,opset,op", [
    ("Relu", 17, sinter.OpKind.relu),
    ("erf_pattern", 17, sinter.OpKind.gelu),
    ("Gelu", 20, sinter.OpKind.gelu),
    ("Gelu_tanh", 23, sinter.OpKind.gelu_tanh),
])
def test_mlp(rng, activation, opset, op):
    model = mlp_model(rng, activation, opset)
    imported = compare(model, {"x": randn(rng, 4, 16)})
    g = imported.graph
    assert [t.name for t in g.inputs] == ["x", "w1", "b1", "w2", "b2"]
    assert sorted(imported.initializers) == ["b1", "b2", "w1", "w2"]
    assert op in ops_of(g)
    assert sinter.OpKind.div not in ops_of(g)  # the erf pattern left nothing behind
    assert g.find_tensor("h").shape == (4, 32)  # intermediates keep their ONNX names


def test_mlp_from_a_file_with_a_name(rng, tmp_path):
    model = mlp_model(rng, "Relu", 17)
    path = tmp_path / "mlp.onnx"
    onnx.save(model, str(path))
    g = sinter.from_onnx(str(path), name="my_mlp")
    assert g.name == "my_mlp"
    assert sinter.from_onnx(path).name == "test_graph"


def test_mlp_float16(rng):
    model = mlp_model(rng, "Relu", 17)
    for init in model.graph.initializer:
        init.CopyFrom(weight(init.name, numpy_helper.to_array(init).astype(np.float16)))
    for value in list(model.graph.input) + list(model.graph.output):
        value.type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.checker.check_model(model, full_check=True)
    imported = compare(model, {"x": randn(rng, 4, 16).astype(np.float16)}, rtol=1e-2, atol=1e-2)
    assert imported.graph.outputs[0].dtype == sinter.f16


def conv_block_model(rng):
    """Conv (bias input) + Relu, then a strided grouped Conv with SAME padding, a separate bias Add
    of shape [1, C, 1, 1] and a Relu, all NCHW."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", strides=[2, 2], group=2,
                         auto_pad="SAME_UPPER", dilations=[1, 1]),
        helper.make_node("Add", ["c2", "b2"], ["c2b"], name="bias2"),
        helper.make_node("Relu", ["c2b"], ["y"], name="relu2"),
    ]
    inits = [weight("w1", randn(rng, 8, 3, 3, 3, scale=0.3)), weight("b1", randn(rng, 8)),
             weight("w2", randn(rng, 6, 4, 3, 3, scale=0.3)), weight("b2", randn(rng, 1, 6, 1, 1))]
    return make_model(nodes, [tensor_info("x", [2, 3, 9, 9])], [tensor_info("y", [2, 6, 5, 5])], inits)


def test_conv_block(rng):
    imported = compare(conv_block_model(rng), {"x": randn(rng, 2, 3, 9, 9)})
    ops = ops_of(imported.graph)
    assert ops.count(sinter.OpKind.conv2d) == 2 and sinter.OpKind.permute in ops


@pytest.mark.parametrize("form", ["torch", "half_first", "rsqrt2"])
def test_gelu_erf_patterns(rng, form):
    model = make_model(gelu_erf_nodes("x", "y", "gelu", form), [tensor_info("x", [4, 8])],
                       [tensor_info("y", [4, 8])],
                       [w for w in GELU_CONSTANTS if w.name != ("sqrt2" if form == "rsqrt2" else "rsqrt2")])
    imported = compare(model, {"x": randn(rng, 4, 8) * 3})
    assert ops_of(imported.graph) == [sinter.OpKind.gelu]
    assert imported.initializers == {}


def test_an_erf_with_other_constants_is_no_gelu(rng):
    model = make_model(gelu_erf_nodes("x", "y", "gelu"), [tensor_info("x", [4])], [tensor_info("y", [4])],
                       [weight("sqrt2", np.float32(1.5)), weight("one", np.float32(1)),
                        weight("half", np.float32(0.5))])
    with pytest.raises(sinter.UnsupportedError, match=r"#1 'gelu_erf' \(Erf\): Sinter has no erf"):
        sinter.from_onnx(model)


def test_conv_same_lower_even_kernel(rng):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", strides=[2, 1], auto_pad="SAME_LOWER")
    model = make_model([node], [tensor_info("x", [1, 3, 7, 6])], [tensor_info("y", [1, 2, 4, 6])],
                       [weight("w", randn(rng, 2, 3, 4, 2))])
    compare(model, {"x": randn(rng, 1, 3, 7, 6)})


def test_conv_1d(rng):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[2, 1], dilations=[2])
    model = make_model([node], [tensor_info("x", [1, 4, 10])], [tensor_info("y", [1, 5, 9])],
                       [weight("w", randn(rng, 5, 4, 3))])
    compare(model, {"x": randn(rng, 1, 4, 10)})


def split_heads(src, dst, prefix, perm):
    return [helper.make_node("Reshape", [src, "heads_shape"], [f"{prefix}_r"], name=f"{prefix}_reshape"),
            helper.make_node("Transpose", [f"{prefix}_r"], [dst], name=f"{prefix}_transpose", perm=perm)]


def transformer_block_model(rng, b=2, s=8, d=32, heads=4):
    """Pre-norm attention block: LayerNormalization, q/k/v MatMuls, heads by Reshape/Transpose,
    MatMul + Softmax + MatMul attention, output projection and a residual Add."""
    hd = d // heads
    nodes = [helper.make_node("LayerNormalization", ["x", "ln_w", "ln_b"], ["n"], name="ln", epsilon=1e-5)]
    for p in "qkv":
        nodes.append(helper.make_node("MatMul", ["n", f"w{p}"], [p], name=f"proj_{p}"))
    nodes += split_heads("q", "qh", "q", [0, 2, 1, 3])
    nodes += split_heads("k", "kt", "k", [0, 2, 3, 1])
    nodes += split_heads("v", "vh", "v", [0, 2, 1, 3])
    nodes += [
        helper.make_node("MatMul", ["qh", "kt"], ["scores"], name="qk"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "vh"], ["ctx"], name="pv"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="merge_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "merged_shape"], ["merged"], name="merge_reshape"),
        helper.make_node("MatMul", ["merged", "wo"], ["attn"], name="proj_o"),
        helper.make_node("Add", ["x", "attn"], ["y"], name="residual"),
    ]
    inits = [weight("ln_w", 1 + randn(rng, d, scale=0.1)), weight("ln_b", randn(rng, d, scale=0.1)),
             weight("heads_shape", np.array([b, s, heads, hd], np.int64)),
             weight("merged_shape", np.array([b, s, d], np.int64)),
             weight("scale", np.float32(1 / math.sqrt(hd))), weight("wo", randn(rng, d, d, scale=0.2))]
    inits += [weight(f"w{p}", randn(rng, d, d, scale=0.2)) for p in "qkv"]
    return make_model(nodes, [tensor_info("x", [b, s, d])], [tensor_info("y", [b, s, d])], inits)


def test_transformer_block(rng):
    imported = compare(transformer_block_model(rng), {"x": randn(rng, 2, 8, 32)})
    g = imported.graph
    ops = ops_of(g)
    assert sinter.OpKind.layernorm in ops and sinter.OpKind.softmax in ops
    # shapes read at import time are no inputs; the scalar scale is a constant
    assert "heads_shape" not in imported.initializers and "scale" not in imported.initializers
    assert sinter.OpKind.constant in ops


def attention_nodes(x, y, prefix, d, q_heads, kv_heads, causal):
    """3-D q/k/v projections into the Attention op (opset 23), GQA when kv_heads < q_heads."""
    nodes = [helper.make_node("MatMul", [x, f"{prefix}_w{p}"], [f"{prefix}_{p}"], name=f"{prefix}_proj_{p}")
             for p in "qkv"]
    nodes.append(helper.make_node("Attention", [f"{prefix}_q", f"{prefix}_k", f"{prefix}_v"], [f"{prefix}_o"],
                                  name=f"{prefix}_attention", q_num_heads=q_heads, kv_num_heads=kv_heads,
                                  is_causal=int(causal)))
    nodes.append(helper.make_node("MatMul", [f"{prefix}_o", f"{prefix}_wo"], [y], name=f"{prefix}_proj_o"))
    return nodes


def attention_weights(rng, prefix, d, q_heads, kv_heads):
    kv = d // q_heads * kv_heads
    return [weight(f"{prefix}_wq", randn(rng, d, d, scale=0.2)),
            weight(f"{prefix}_wk", randn(rng, d, kv, scale=0.2)),
            weight(f"{prefix}_wv", randn(rng, d, kv, scale=0.2)),
            weight(f"{prefix}_wo", randn(rng, d, d, scale=0.2))]


def rms_pattern_nodes(x, w, y, prefix):
    """x / sqrt(mean(x^2) + eps) * w, as exporters write RMSNorm without the op."""
    return [
        helper.make_node("Pow", [x, "two"], [f"{prefix}_sq"], name=f"{prefix}_pow"),
        helper.make_node("ReduceMean", [f"{prefix}_sq", "last_axis"], [f"{prefix}_ms"], name=f"{prefix}_mean",
                         keepdims=1),
        helper.make_node("Add", [f"{prefix}_ms", "eps"], [f"{prefix}_mse"], name=f"{prefix}_eps"),
        helper.make_node("Sqrt", [f"{prefix}_mse"], [f"{prefix}_rms"], name=f"{prefix}_sqrt"),
        helper.make_node("Div", [x, f"{prefix}_rms"], [f"{prefix}_n"], name=f"{prefix}_div"),
        helper.make_node("Mul", [f"{prefix}_n", w], [y], name=f"{prefix}_scale"),
    ]


def llama_layer_model(rng, norm, b=2, s=8, d=32, ff=48, q_heads=4, kv_heads=2):
    """RMSNorm, causal GQA attention, residual; RMSNorm, SwiGLU MLP (SiLU as x * Sigmoid(x)),
    residual."""
    def rmsnorm(x, w, y, prefix):
        if norm == "RMSNormalization":
            return [helper.make_node("RMSNormalization", [x, w], [y], name=prefix, epsilon=1e-6)]
        return rms_pattern_nodes(x, w, y, prefix)

    nodes = rmsnorm("x", "norm1_w", "n1", "norm1")
    nodes += attention_nodes("n1", "attn", "attn", d, q_heads, kv_heads, causal=True)
    nodes.append(helper.make_node("Add", ["x", "attn"], ["h"], name="residual1"))
    nodes += rmsnorm("h", "norm2_w", "n2", "norm2")
    nodes += [
        helper.make_node("MatMul", ["n2", "w_gate"], ["gate"], name="gate_proj"),
        helper.make_node("Sigmoid", ["gate"], ["gate_sig"], name="gate_sigmoid"),
        helper.make_node("Mul", ["gate", "gate_sig"], ["gate_act"], name="gate_silu"),
        helper.make_node("MatMul", ["n2", "w_up"], ["up"], name="up_proj"),
        helper.make_node("Mul", ["gate_act", "up"], ["gated"], name="glu"),
        helper.make_node("MatMul", ["gated", "w_down"], ["mlp"], name="down_proj"),
        helper.make_node("Add", ["h", "mlp"], ["y"], name="residual2"),
    ]
    inits = [weight("norm1_w", 1 + randn(rng, d, scale=0.1)), weight("norm2_w", 1 + randn(rng, d, scale=0.1)),
             weight("w_gate", randn(rng, d, ff, scale=0.2)), weight("w_up", randn(rng, d, ff, scale=0.2)),
             weight("w_down", randn(rng, ff, d, scale=0.2))]
    inits += attention_weights(rng, "attn", d, q_heads, kv_heads)
    if norm != "RMSNormalization":
        inits += [weight("two", np.float32(2)), weight("eps", np.float32(1e-6)),
                  weight("last_axis", np.array([-1], np.int64))]
    return make_model(nodes, [tensor_info("x", [b, s, d])], [tensor_info("y", [b, s, d])], inits)


@pytest.mark.parametrize("norm", ["RMSNormalization", "pattern"])
def test_llama_layer(rng, norm):
    imported = compare(llama_layer_model(rng, norm), {"x": randn(rng, 2, 8, 32)})
    ops = ops_of(imported.graph)
    assert sinter.OpKind.sdpa in ops and sinter.OpKind.silu in ops
    assert sinter.OpKind.sigmoid not in ops
    if norm == "RMSNormalization":
        assert ops.count(sinter.OpKind.rmsnorm) == 2
    else:
        assert sinter.OpKind.square in ops  # Pow by a constant 2


@pytest.mark.parametrize("causal", [False, True])
def test_attention_4d_with_a_mask_and_a_kv_cache(rng, causal):
    b, h, s, past, hd = 1, 4, 3, 5, 8
    nodes = [helper.make_node("Attention", ["q", "k", "v", "mask", "past_k", "past_v"],
                              ["y", "present_k", "present_v"], name="attention", is_causal=int(causal),
                              scale=0.3)]
    inputs = [tensor_info("q", [b, h, s, hd]), tensor_info("k", [b, 2, s, hd]), tensor_info("v", [b, 2, s, hd]),
              tensor_info("mask", [s, past + s], TensorProto.BOOL),
              tensor_info("past_k", [b, 2, past, hd]), tensor_info("past_v", [b, 2, past, hd])]
    outputs = [tensor_info("y", [b, h, s, hd]), tensor_info("present_k", [b, 2, past + s, hd]),
               tensor_info("present_v", [b, 2, past + s, hd])]
    model = make_model(nodes, inputs, outputs)
    mask = rng.random((s, past + s)) < 0.8
    mask[:, 0] = True
    feeds = {"q": randn(rng, b, h, s, hd), "k": randn(rng, b, 2, s, hd), "v": randn(rng, b, 2, s, hd),
             "mask": mask, "past_k": randn(rng, b, 2, past, hd), "past_v": randn(rng, b, 2, past, hd)}
    compare(model, feeds)


# ---- one node at a time ------------------------------------------------------------------------

def single_node_model(op, input_shapes, output_shape, initializers=(), elem=F32, out_elem=None, opset=23,
                      **attrs):
    names = [f"in{i}" for i in range(len(input_shapes))] + [i.name for i in initializers]
    node = helper.make_node(op, names, ["out"], name=f"the_{op.lower()}", **attrs)
    inputs = [tensor_info(f"in{i}", shape, elem) for i, shape in enumerate(input_shapes)]
    return make_model([node], inputs, [tensor_info("out", output_shape, out_elem or elem)],
                      initializers, opset)


def ints(name, values):
    return weight(name, np.array(values, np.int64))


SINGLE_NODES = {
    "Sub": dict(op="Sub", input_shapes=[[3, 4], [4]], output_shape=[3, 4]),
    "Div": dict(op="Div", input_shapes=[[3, 4], [3, 1]], output_shape=[3, 4]),
    "Pow3": dict(op="Pow", input_shapes=[[3, 4]], output_shape=[3, 4], initializers=[weight("e", np.float32(3))]),
    "PowInt": dict(op="Pow", input_shapes=[[3, 4]], output_shape=[3, 4],
                   initializers=[weight("e", np.array([2, 3, 1, 2], np.int64))]),
    "Max": dict(op="Max", input_shapes=[[3, 4], [4], [3, 1]], output_shape=[3, 4]),
    "Min": dict(op="Min", input_shapes=[[3, 4], [3, 4]], output_shape=[3, 4]),
    "Sum": dict(op="Sum", input_shapes=[[3, 4], [4], [3, 4]], output_shape=[3, 4]),
    "Mul": dict(op="Mul", input_shapes=[[2, 3, 4]], output_shape=[2, 3, 4],
                initializers=[weight("c", np.arange(12, dtype=np.float32).reshape(3, 4))]),
    "Exp": dict(op="Exp", input_shapes=[[3, 4]], output_shape=[3, 4]),
    "Tanh": dict(op="Tanh", input_shapes=[[3, 4]], output_shape=[3, 4]),
    "Sigmoid": dict(op="Sigmoid", input_shapes=[[3, 4]], output_shape=[3, 4]),
    "Neg": dict(op="Neg", input_shapes=[[3, 4]], output_shape=[3, 4]),
    "Abs": dict(op="Abs", input_shapes=[[3, 4]], output_shape=[3, 4]),
    "Reciprocal": dict(op="Reciprocal", input_shapes=[[3, 4]], output_shape=[3, 4]),
    "Clip": dict(op="Clip", input_shapes=[[3, 4]], output_shape=[3, 4],
                 initializers=[weight("lo", np.float32(-0.5)), weight("hi", np.float32(0.5))]),
    "Greater": dict(op="Greater", input_shapes=[[3, 4], [4]], output_shape=[3, 4], out_elem=TensorProto.BOOL),
    "LessOrEqual": dict(op="LessOrEqual", input_shapes=[[3, 4], [3, 4]], output_shape=[3, 4],
                        out_elem=TensorProto.BOOL),
    "Equal": dict(op="Equal", input_shapes=[[3, 4], [3, 4]], output_shape=[3, 4], elem=TensorProto.INT64,
                  out_elem=TensorProto.BOOL),
    "Xor": dict(op="Xor", input_shapes=[[3, 4], [3, 4]], output_shape=[3, 4], elem=TensorProto.BOOL),
    "Or": dict(op="Or", input_shapes=[[3, 4], [4]], output_shape=[3, 4], elem=TensorProto.BOOL),
    "And": dict(op="And", input_shapes=[[3, 4], [3, 4]], output_shape=[3, 4], elem=TensorProto.BOOL),
    "Not": dict(op="Not", input_shapes=[[3, 4]], output_shape=[3, 4], elem=TensorProto.BOOL),
    "AddInt": dict(op="Add", input_shapes=[[3, 4], [3, 4]], output_shape=[3, 4], elem=TensorProto.INT32),
    "CastToInt": dict(op="Cast", input_shapes=[[3, 4]], output_shape=[3, 4], out_elem=TensorProto.INT32,
                      to=TensorProto.INT32),
    "CastToHalf": dict(op="Cast", input_shapes=[[3, 4]], output_shape=[3, 4], out_elem=TensorProto.FLOAT16,
                       to=TensorProto.FLOAT16),
    "Identity": dict(op="Identity", input_shapes=[[3, 4]], output_shape=[3, 4]),
    "Softmax": dict(op="Softmax", input_shapes=[[2, 3, 4]], output_shape=[2, 3, 4], axis=1),
    "LayerNormTwoAxes": dict(op="LayerNormalization", input_shapes=[[2, 3, 4]], output_shape=[2, 3, 4],
                             initializers=[weight("s", np.linspace(0.5, 1.5, 12, dtype=np.float32).reshape(3, 4))],
                             axis=-2, epsilon=1e-3),
    "ReduceSum": dict(op="ReduceSum", input_shapes=[[2, 3, 4]], output_shape=[3],
                      initializers=[ints("axes", [0, -1])], keepdims=0),
    "ReduceMeanOpset17": dict(op="ReduceMean", input_shapes=[[2, 3, 4]], output_shape=[2, 1, 4], axes=[1],
                              opset=17),
    "ReduceMaxAll": dict(op="ReduceMax", input_shapes=[[2, 3, 4]], output_shape=[1, 1, 1]),
    "ReduceMeanEmptyAxes": dict(op="ReduceMean", input_shapes=[[2, 3, 4]], output_shape=[1, 1, 1],
                                initializers=[weight("axes", np.zeros(0, np.int64))], noop_with_empty_axes=0),
    "ReduceSumNoopWithEmptyAxes": dict(op="ReduceSum", input_shapes=[[2, 3, 4]], output_shape=[2, 3, 4],
                                       noop_with_empty_axes=1),
    "Expand": dict(op="Expand", input_shapes=[[3, 1]], output_shape=[2, 3, 4],
                   initializers=[ints("shape", [2, 1, 4])]),
    "ReduceMin": dict(op="ReduceMin", input_shapes=[[2, 3, 4]], output_shape=[2, 3],
                      initializers=[ints("axes", [2])], keepdims=0),
    "Reshape": dict(op="Reshape", input_shapes=[[2, 3, 4]], output_shape=[2, 2, 6],
                    initializers=[ints("shape", [0, -1, 6])]),
    "Flatten": dict(op="Flatten", input_shapes=[[2, 3, 4]], output_shape=[6, 4], axis=2),
    "Transpose": dict(op="Transpose", input_shapes=[[2, 3, 4]], output_shape=[4, 3, 2]),
    "Concat": dict(op="Concat", input_shapes=[[2, 3], [2, 1]], output_shape=[2, 6], axis=-1,
                   initializers=[weight("c", np.ones((2, 2), np.float32))]),
    "Slice": dict(op="Slice", input_shapes=[[5, 8]], output_shape=[5, 3],
                  initializers=[ints("starts", [-7]), ints("ends", [1000]), ints("axes", [1]),
                                ints("steps", [3])]),
    "Squeeze": dict(op="Squeeze", input_shapes=[[1, 3, 1, 4]], output_shape=[3, 1, 4],
                    initializers=[ints("axes", [0])]),
    "SqueezeAll": dict(op="Squeeze", input_shapes=[[1, 3, 1, 4]], output_shape=[3, 4]),
    "Unsqueeze": dict(op="Unsqueeze", input_shapes=[[3, 4]], output_shape=[1, 3, 4, 1],
                      initializers=[ints("axes", [0, -1])]),
    "GatherScalar": dict(op="Gather", input_shapes=[[5, 4]], output_shape=[5],
                         initializers=[ints("idx", 2)], axis=1),
    "GatherList": dict(op="Gather", input_shapes=[[5, 4]], output_shape=[2, 2, 4],
                       initializers=[ints("idx", [[3, 4], [0, -4]])]),
    "Gemm": dict(op="Gemm", input_shapes=[[4, 3], [5, 4], [5]], output_shape=[3, 5], transA=1, transB=1,
                 alpha=0.5, beta=2.0),
    "MatMulVector": dict(op="MatMul", input_shapes=[[2, 3, 4], [4]], output_shape=[2, 3]),
    "VectorMatMul": dict(op="MatMul", input_shapes=[[4], [2, 4, 3]], output_shape=[2, 3]),
    "GlobalAveragePool": dict(op="GlobalAveragePool", input_shapes=[[2, 3, 4, 5]], output_shape=[2, 3, 1, 1]),
    "Where": dict(op="Where", input_shapes=[[3, 4]], output_shape=[3, 4], elem=TensorProto.BOOL,
                  out_elem=F32, initializers=[weight("a", np.arange(4, dtype=np.float32)),
                                             weight("b", np.float32(-1))]),
}


def random_feed(rng, value_info):
    tensor_type = value_info.type.tensor_type
    shape = [d.dim_value for d in tensor_type.shape.dim]
    dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(-5, 5, shape).astype(dtype)
    return (rng.standard_normal(shape) * 2).astype(dtype)


@pytest.mark.parametrize("case", sorted(SINGLE_NODES))
def test_single_node(rng, case):
    model = single_node_model(**SINGLE_NODES[case])
    compare(model, {i.name: random_feed(rng, i) for i in model.graph.input})


def test_isnan_and_where_zero_the_nans(rng):
    """IsNaN, and the Where(IsNaN(p), 0, p) torch.onnx writes after a decomposed attention's
    softmax: NaN becomes 0, every other value (infinities included) stays."""
    nodes = [helper.make_node("IsNaN", ["x"], ["nan"]),
             helper.make_node("Where", ["nan", "zero", "x"], ["y"])]
    model = make_model(nodes, [tensor_info("x", [3, 5])],
                       [tensor_info("nan", [3, 5], TensorProto.BOOL), tensor_info("y", [3, 5])],
                       [weight("zero", np.float32(0))])
    x = randn(rng, 3, 5)
    x[0, 1] = x[2, 4] = np.nan
    x[1, 2], x[1, 3] = np.inf, -np.inf
    compare(model, {"x": x})


@pytest.mark.parametrize("form", ["sizes", "num_outputs", "outputs"])
def test_split(rng, form):
    """Split along axis 1 of a [2, 7, 3] input: sizes [2, 4, 1] from input 1; 3 parts of 3, 3, 1
    from num_outputs (opset 18); one output of the whole axis."""
    x = tensor_info("x", [2, 7, 3])
    if form == "sizes":
        node = helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], axis=1)
        outputs, inits = [[2, 2, 3], [2, 4, 3], [2, 1, 3]], [ints("sizes", [2, 4, 1])]
    elif form == "num_outputs":
        node = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=-2, num_outputs=3)
        outputs, inits = [[2, 3, 3], [2, 3, 3], [2, 1, 3]], []
    else:
        node = helper.make_node("Split", ["x"], ["a"], axis=1, num_outputs=1)
        outputs, inits = [[2, 7, 3]], []
    names = ["a", "b", "c"][:len(outputs)]
    model = make_model([node], [x], [tensor_info(n, s) for n, s in zip(names, outputs)], inits, opset=18)
    imported = compare(model, {"x": randn(rng, 2, 7, 3)})
    assert ops_of(imported.graph) == [sinter.OpKind.slice] * len(outputs)


def test_split_sizes_that_miss_the_axis_are_a_parse_error(rng):
    node = helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1, name="bad_split")
    model = make_model([node], [tensor_info("x", [2, 7])], [tensor_info("a", [2, 2]), tensor_info("b", [2, 4])],
                       [ints("sizes", [2, 4])], opset=18, check=False)
    with pytest.raises(sinter.ParseError, match=r"'bad_split' \(Split\): split sizes \[2, 4\] do not cover axis 1 of size 7"):
        sinter.import_onnx(model)


@pytest.mark.parametrize("op", ["Sqrt", "Log"])
def test_positive_unary(rng, op):
    model = single_node_model(op, [[3, 4]], [3, 4])
    compare(model, {"in0": rng.random((3, 4)).astype(np.float32) + 0.1})


def test_constant_nodes_and_dead_code(rng):
    """A Constant of several elements becomes an input (with its value), a one-element one a
    constant; nodes no output needs, and inputs only they read, are left out."""
    nodes = [helper.make_node("Constant", [], ["table"], name="table",
                              value=weight("table_value", randn(rng, 3, 4))),
             helper.make_node("Constant", [], ["two"], name="two", value_float=2.0),
             helper.make_node("Mul", ["x", "table"], ["xt"], name="mul"),
             helper.make_node("Add", ["xt", "two"], ["y"], name="add"),
             helper.make_node("Relu", ["unused_input"], ["dead"], name="dead_relu")]
    model = make_model(nodes, [tensor_info("x", [3, 4]), tensor_info("unused_input", [3])],
                       [tensor_info("y", [3, 4])])
    x = randn(rng, 3, 4)
    imported = sinter.import_onnx(model)
    assert [t.name for t in imported.graph.inputs] == ["x", "table"]
    assert list(imported.initializers) == ["table"]
    got = sinter.run_reference(imported.graph, {"x": x, **imported.initializers})["y"]
    want = ReferenceEvaluator(model).run(None, {"x": x, "unused_input": randn(rng, 3)})[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_an_output_that_is_an_identity_of_another(rng):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Identity", ["r"], ["y"], name="copy")]
    model = make_model(nodes, [tensor_info("x", [3])], [tensor_info("r", [3]), tensor_info("y", [3])])
    compare(model, {"x": randn(rng, 3)})


def test_symbolic_dimensions_need_input_shapes(rng):
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    model = make_model([node], [tensor_info("x", ["batch", 4])], [tensor_info("y", ["batch", 4])])
    with pytest.raises(sinter.UnsupportedError, match=r"graph input 'x'.*'batch'.*input_shapes"):
        sinter.from_onnx(model)
    g = sinter.from_onnx(model, input_shapes={"x": [3, 4]})
    assert g.outputs[0].shape == (3, 4)
    with pytest.raises(sinter.ParseError, match="does not fit"):
        sinter.from_onnx(model, input_shapes={"x": [3, 5]})
    with pytest.raises(sinter.ParseError, match="not ONNX graph inputs"):
        sinter.from_onnx(model, input_shapes={"z": [3]})


# ---- what is refused ---------------------------------------------------------------------------

def test_an_op_sinter_lacks_names_the_op_and_node():
    nodes = [helper.make_node("Relu", ["boxes"], ["b"], name="relu"),
             helper.make_node("NonMaxSuppression", ["b", "scores"], ["y"], name="nms")]
    model = make_model(nodes, [tensor_info("boxes", [1, 6, 4]), tensor_info("scores", [1, 1, 6])],
                       [tensor_info("y", [None, 3], TensorProto.INT64)])
    with pytest.raises(sinter.UnsupportedError,
                       match=r"ONNX node #1 'nms' \(NonMaxSuppression\): Sinter has no equivalent"):
        sinter.from_onnx(model)


def test_an_attribute_sinter_cannot_express():
    model = single_node_model("Slice", [[5, 8]], [5, 4],
                              [ints("starts", [-1]), ints("ends", [-100]), ints("axes", [1]), ints("steps", [-2])])
    with pytest.raises(sinter.UnsupportedError, match=r"ONNX node #0 'the_slice' \(Slice\): steps \[-2\]"):
        sinter.from_onnx(model)


def test_attention_softcap_is_refused(rng):
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn", softcap=30.0)
    shape = [1, 2, 4, 8]
    model = make_model([node], [tensor_info(n, shape) for n in "qkv"], [tensor_info("y", shape)])
    with pytest.raises(sinter.UnsupportedError, match=r"'attn' \(Attention\): softcap=30"):
        sinter.from_onnx(model)


def test_erf_outside_the_gelu_pattern_is_refused():
    model = single_node_model("Erf", [[3]], [3])
    with pytest.raises(sinter.UnsupportedError, match=r"\(Erf\): Sinter has no erf; only the GELU pattern"):
        sinter.from_onnx(model)


def test_shapes_computed_at_run_time_are_refused():
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")
    model = make_model([node], [tensor_info("x", [2, 3]), tensor_info("shape", [2], TensorProto.INT64)],
                       [tensor_info("y", [None, None])])
    with pytest.raises(sinter.UnsupportedError, match=r"'reshape' \(Reshape\): input 1 'shape' \(shape\) is "
                                                      "computed at run time"):
        sinter.from_onnx(model)


def test_integer_matmul_is_refused():
    model = single_node_model("MatMul", [[2, 3], [3, 2]], [2, 2], elem=TensorProto.INT32)
    with pytest.raises(sinter.UnsupportedError, match=r"\(MatMul\): input 0 is i32; Sinter's matmul takes float"):
        sinter.from_onnx(model)


def test_an_unsupported_dtype_names_the_tensor():
    model = single_node_model("Relu", [[3]], [3], elem=TensorProto.DOUBLE)
    with pytest.raises(sinter.UnsupportedError, match="graph input 'in0' has the ONNX type DOUBLE"):
        sinter.from_onnx(model)


def test_an_old_opset_is_refused():
    model = single_node_model("Relu", [[3]], [3], opset=13)
    with pytest.raises(sinter.UnsupportedError, match="opset 13; from_onnx reads opsets 17 to 23"):
        sinter.from_onnx(model)


def test_another_domain_is_refused():
    node = helper.make_node("FusedMatMul", ["a", "b"], ["y"], name="fused", domain="com.microsoft")
    graph = helper.make_graph([node], "g", [tensor_info("a", [2, 2]), tensor_info("b", [2, 2])],
                              [tensor_info("y", [2, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23),
                                                    helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(sinter.UnsupportedError, match=r"'fused' \(FusedMatMul\).*com\.microsoft\.FusedMatMul"):
        sinter.from_onnx(model)


def test_an_undefined_tensor_is_a_parse_error():
    node = helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")
    model = make_model([node], [tensor_info("x", [3])], [tensor_info("y", [3])], check=False)
    with pytest.raises(sinter.ParseError, match=r"#0 'add' \(Add\): reads 'nowhere', which no graph input"):
        sinter.from_onnx(model)


def test_an_output_of_the_wrong_declared_type_is_a_parse_error():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    model = make_model([node], [tensor_info("x", [3, 4])], [tensor_info("y", [3, 5])], check=False)
    with pytest.raises(sinter.ParseError, match=r"output 'y' is declared as FLOAT, 3x5, but the model computes "
                                                r"f32 \[3, 4\]"):
        sinter.from_onnx(model)
    model = make_model([node], [tensor_info("x", [3, 4])], [tensor_info("z", [3, 4])], check=False)
    with pytest.raises(sinter.ParseError, match="output 'z' is computed by no node"):
        sinter.from_onnx(model)


def test_not_a_model():
    with pytest.raises(TypeError, match="a path or an onnx.ModelProto"):
        sinter.from_onnx(42)


def test_importing_sinter_does_not_import_onnx():
    code = "import sys, sinter; assert 'onnx' not in sys.modules; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_a_missing_onnx_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match="pip install onnx"):
        sinter.from_onnx("model.onnx")


def test_a_transposed_weight_read_once_is_a_strided_input_not_a_copy(rng):
    """Gemm(transB=1) and Transpose of an initializer only that node reads: the weight input is the
    initializer's memory as a transposed view ([K, N], strides [1, K]); read twice, it is permuted."""
    w = weight("w", randn(rng, 5, 4))  # [N, K]
    gemm = helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)
    model = make_model([gemm], [tensor_info("x", [3, 4])], [tensor_info("y", [3, 5])], [w])
    imported = compare(model, {"x": randn(rng, 3, 4)})
    t = imported.graph.find_tensor("w")
    assert t.shape == (4, 5) and tuple(t.strides) == (1, 4) and ops_of(imported.graph) == [sinter.OpKind.matmul]
    assert imported.initializers["w"].shape == (4, 5)

    nodes = [helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]), helper.make_node("MatMul", ["x", "wt"], ["y"])]
    model = make_model(nodes, [tensor_info("x", [3, 4])], [tensor_info("y", [3, 5])], [w])
    imported = compare(model, {"x": randn(rng, 3, 4)})
    assert ops_of(imported.graph) == [sinter.OpKind.matmul]

    twice = [helper.make_node("Gemm", ["x", "w"], ["y"], transB=1), helper.make_node("Gemm", ["x", "w"], ["z"], transB=1)]
    model = make_model(twice, [tensor_info("x", [3, 4])], [tensor_info("y", [3, 5]), tensor_info("z", [3, 5])], [w])
    imported = compare(model, {"x": randn(rng, 3, 4)})
    assert tuple(imported.graph.find_tensor("w").strides) == (4, 1) and sinter.OpKind.permute in ops_of(imported.graph)


@pytest.mark.parametrize("case", ["repeating", "halves_differ"])
def test_rotary_embedding_pattern_is_rope(rng, case):
    """x * cos + concat(-x[..., 4:], x[..., :4]) * sin with constant tables: Sinter's rope when the
    tables repeat their halves (Llama's), the nodes one by one when they do not."""
    first = randn(rng, 5, 4)
    cos = np.concatenate([first, first if case == "repeating" else randn(rng, 5, 4)], -1)
    sin = np.concatenate([first[::-1], first[::-1]], -1)
    nodes = [
        helper.make_node("Mul", ["x", "cos"], ["direct"]),
        helper.make_node("Slice", ["x", "four", "big", "last"], ["high"]),
        helper.make_node("Neg", ["high"], ["neg_high"]),
        helper.make_node("Slice", ["x", "zero", "four", "last"], ["low"]),
        helper.make_node("Concat", ["neg_high", "low"], ["rotated"], axis=-1),
        helper.make_node("Mul", ["sin", "rotated"], ["turned"]),
        helper.make_node("Add", ["turned", "direct"], ["y"]),
    ]
    inits = [weight("cos", cos), weight("sin", sin), ints("four", [4]), ints("big", [2 ** 62]), ints("zero", [0]),
             ints("last", [3])]
    model = make_model(nodes, [tensor_info("x", [2, 3, 5, 8])], [tensor_info("y", [2, 3, 5, 8])], inits)
    imported = compare(model, {"x": randn(rng, 2, 3, 5, 8)})
    ops = ops_of(imported.graph)
    if case == "repeating":
        assert ops == [sinter.OpKind.rope]
        assert imported.initializers["cos.half"].shape == (5, 4)
    else:
        assert sinter.OpKind.rope not in ops and sinter.OpKind.concat in ops


@pytest.mark.parametrize("form", ["pow_reciprocal", "mul_div"])
def test_written_out_rmsnorm_is_rmsnorm(rng, form):
    """RMSNorm as torch.onnx writes it (Pow, ReduceMean, Add eps, Sqrt, Reciprocal, Mul x, Mul w),
    or with Mul(x, x) and Div(1, .): one rmsnorm with that epsilon."""
    square = helper.make_node("Pow", ["x", "two"], ["sq"]) if form == "pow_reciprocal" else \
        helper.make_node("Mul", ["x", "x"], ["sq"])
    inverse = helper.make_node("Reciprocal", ["root"], ["inv"]) if form == "pow_reciprocal" else \
        helper.make_node("Div", ["one", "root"], ["inv"])
    nodes = [square, helper.make_node("ReduceMean", ["sq", "axes"], ["ms"], keepdims=1),
             helper.make_node("Add", ["eps", "ms"], ["shifted"]), helper.make_node("Sqrt", ["shifted"], ["root"]),
             inverse, helper.make_node("Mul", ["inv", "x"], ["normed"]), helper.make_node("Mul", ["normed", "w"], ["y"])]
    inits = [weight("two", np.float32(2)), weight("one", np.float32(1)), ints("axes", [-1]),
             weight("eps", np.float32(1e-3)), weight("w", np.linspace(0.5, 1.5, 8, dtype=np.float32))]
    model = make_model(nodes, [tensor_info("x", [3, 5, 8])], [tensor_info("y", [3, 5, 8])], inits)
    imported = compare(model, {"x": randn(rng, 3, 5, 8)})
    assert ops_of(imported.graph) == [sinter.OpKind.rmsnorm]
    assert '"epsilon": 0.0010000000474974513' in imported.graph.to_json()  # eps as float32 gives it


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_of_runtime_indices(rng, axis):
    """Gather whose indices are a graph input (token ids): Sinter's gather, negative ids included."""
    x_shape = [5, 4, 3]
    n = x_shape[axis]
    node = helper.make_node("Gather", ["x", "ids"], ["y"], name="lookup", axis=axis)
    out_shape = x_shape[:axis % 3] + [2, 3] + x_shape[axis % 3 + 1:]
    model = make_model([node], [tensor_info("x", x_shape), tensor_info("ids", [2, 3], TensorProto.INT64)],
                       [tensor_info("y", out_shape)])
    ids = rng.integers(-n, n, (2, 3)).astype(np.int64)
    imported = compare(model, {"x": randn(rng, *x_shape), "ids": ids})
    assert ops_of(imported.graph) == [sinter.OpKind.gather]
