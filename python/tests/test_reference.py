"""The CPU reference on numpy arrays, against numpy computations written here independently."""

import math

import numpy as np
import pytest

import sinter
from conftest import bf16_round, gelu, rel_l2


def test_mlp_f32_against_numpy(rng):
    g = sinter.Graph("mlp")
    x = g.input("x", sinter.f32, [16, 32])
    w = g.input("w", sinter.f32, [32, 24])
    b = g.input("b", sinter.f32, [24])
    g.output(g.gelu(x @ w + b), "y")
    xs = rng.standard_normal((16, 32)).astype(np.float32)
    ws = (rng.standard_normal((32, 24)) / 6).astype(np.float32)
    bs = rng.standard_normal(24).astype(np.float32)
    y = sinter.run_reference(g, {"x": xs, "w": ws, "b": bs})["y"]
    assert y.dtype == np.float32 and y.shape == (16, 24)
    want = gelu(xs.astype(np.float64) @ ws.astype(np.float64) + bs)
    assert rel_l2(y, want) < 1e-6


def test_bf16_inputs_are_rounded_by_the_library(rng):
    g = sinter.Graph()
    x = g.input("x", sinter.bf16, [1000])
    g.output(g.identity(x), "y")
    xs = rng.standard_normal(1000).astype(np.float32)
    y = sinter.run_reference(g, {"x": xs})["y"]
    assert y.dtype == np.float32  # bf16 values, exactly, in float32
    np.testing.assert_array_equal(y, bf16_round(xs))


def test_bf16_mlp_rounds_at_every_tensor(rng):
    g = sinter.Graph()
    x = g.input("x", sinter.bf16, [8, 64])
    w = g.input("w", sinter.bf16, [64, 16])
    b = g.input("b", sinter.bf16, [16])
    g.output(g.gelu(g.add(g.matmul(x, w), b)), "y")
    xs, ws, bs = (bf16_round(rng.standard_normal(s).astype(np.float32)) for s in [(8, 64), (64, 16), (16,)])
    y = sinter.run_reference(g, {"x": xs, "w": ws, "b": bs})["y"]
    mm = bf16_round((xs.astype(np.float64) @ ws).astype(np.float32))
    h = bf16_round((mm.astype(np.float64) + bs).astype(np.float32))
    want = bf16_round(gelu(h.astype(np.float64)).astype(np.float32))
    assert np.mean(y == want) > 0.99  # summation order may flip a rare rounding
    assert rel_l2(y, want) < 1e-2


def test_fp8_saturates_and_rounds_to_nearest():
    g = sinter.Graph()
    x = g.input("x", sinter.f32, [4])
    g.output(g.cast(x, sinter.fp8_e4m3), "e4m3")
    g.output(g.cast(x, sinter.fp8_e5m2), "e5m2")
    out = sinter.run_reference(g, {"x": np.array([1000.0, -1e6, 0.3, 0.0], np.float32)})
    np.testing.assert_array_equal(out["e4m3"], np.array([448, -448, 0.3125, 0], np.float32))
    # e5m2: 2 mantissa bits; 0.3 = 1.2 * 2^-2 rounds to 1.25 * 2^-2; 1000 to 1024
    np.testing.assert_array_equal(out["e5m2"], np.array([1024, -57344, 0.3125, 0], np.float32))


def test_f16_returns_float16():
    g = sinter.Graph()
    x = g.input("x", sinter.f16, [3])
    g.output(g.mul(x, 2.0), "y")
    y = sinter.run_reference(g, {"x": np.array([1.0, 70000.0, 1e-3])})["y"]
    assert y.dtype == np.float16
    # 70000 is past f16's largest finite value (65504): it rounds to inf, as IEEE says
    np.testing.assert_array_equal(y, np.array([2.0, np.inf, 2 * np.float16(1e-3)], np.float16))


def test_norms_and_softmax(rng):
    g = sinter.Graph("rowwise")
    x = g.input("x", sinter.f32, [3, 5, 32])
    gamma = g.input("gamma", sinter.f32, [32])
    beta = g.input("beta", sinter.f32, [32])
    g.output(g.layernorm(x, gamma, bias=beta, epsilon=1e-5), "ln")
    g.output(g.rmsnorm(x, gamma, epsilon=1e-6), "rms")
    g.output(g.softmax(x), "sm")
    xs = rng.standard_normal((3, 5, 32)).astype(np.float32)
    gs = rng.standard_normal(32).astype(np.float32)
    bs = rng.standard_normal(32).astype(np.float32)
    out = sinter.run_reference(g, {"x": xs, "gamma": gs, "beta": bs})
    x64 = xs.astype(np.float64)
    mean = x64.mean(-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(-1, keepdims=True)
    assert rel_l2(out["ln"], (x64 - mean) / np.sqrt(var + 1e-5) * gs + bs) < 1e-6
    rms = np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6)
    assert rel_l2(out["rms"], x64 / rms * gs) < 1e-6
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    assert rel_l2(out["sm"], e / e.sum(-1, keepdims=True)) < 1e-6


def numpy_sdpa(q, k, v, scale, causal_bottom_right):
    b, h, sq, d = q.shape
    hkv, skv = k.shape[1], k.shape[2]
    out = np.zeros((b, h, sq, v.shape[3]))
    for head in range(h):
        kh, vh = k[:, head // (h // hkv)], v[:, head // (h // hkv)]
        s = np.einsum("bqd,bkd->bqk", q[:, head], kh) * scale
        if causal_bottom_right:
            i = np.arange(sq)[:, None]
            j = np.arange(skv)[None, :]
            s = np.where(j <= i + (skv - sq), s, -np.inf)
        p = np.exp(s - s.max(-1, keepdims=True))
        out[:, head] = np.einsum("bqk,bkd->bqd", p / p.sum(-1, keepdims=True), vh)
    return out


def test_sdpa_gqa_causal(rng):
    g = sinter.Graph("attn")
    q = g.input("q", sinter.f32, [2, 4, 3, 8])
    k = g.input("k", sinter.f32, [2, 2, 5, 8])
    v = g.input("v", sinter.f32, [2, 2, 5, 8])
    g.output(g.sdpa(q, k, v, causal=sinter.CausalMask.bottom_right), "o")
    qs, ks, vs = (rng.standard_normal(s).astype(np.float32) for s in [(2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 8)])
    o = sinter.run_reference(g, {"q": qs, "k": ks, "v": vs})["o"]
    want = numpy_sdpa(qs.astype(np.float64), ks.astype(np.float64), vs.astype(np.float64), 1 / math.sqrt(8), True)
    assert rel_l2(o, want) < 1e-6


def test_conv2d_nhwc_strided_padded(rng):
    g = sinter.Graph("conv")
    x = g.input("x", sinter.f32, [1, 7, 7, 3])
    w = g.input("w", sinter.f32, [4, 3, 3, 3])
    g.output(g.conv2d(x, w, stride=(2, 2), pad_begin=(1, 1), pad_end=(1, 1)), "y")
    xs = rng.standard_normal((1, 7, 7, 3)).astype(np.float32)
    ws = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = sinter.run_reference(g, {"x": xs, "w": ws})["y"]
    padded = np.pad(xs.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((1, 4, 4, 4))
    for p in range(4):
        for q in range(4):
            patch = padded[0, 2 * p:2 * p + 3, 2 * q:2 * q + 3, :]
            want[0, p, q] = np.einsum("rsc,krsc->k", patch, ws)
    assert y.shape == (1, 4, 4, 4)
    assert rel_l2(y, want) < 1e-6


def test_rope_half_split(rng):
    g = sinter.Graph()
    x = g.input("x", sinter.f32, [2, 6, 8])
    c = g.input("cos", sinter.f32, [6, 4])
    s = g.input("sin", sinter.f32, [6, 4])
    g.output(g.rope(x, c, s), "y")
    xs = rng.standard_normal((2, 6, 8)).astype(np.float32)
    angle = rng.uniform(0, 3, (6, 4))
    cs, ss = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    y = sinter.run_reference(g, {"x": xs, "cos": cs, "sin": ss})["y"]
    a, b = xs[..., :4].astype(np.float64), xs[..., 4:].astype(np.float64)
    want = np.concatenate([a * cs - b * ss, b * cs + a * ss], axis=-1)
    assert rel_l2(y, want) < 1e-6


def test_layout_reductions_and_bool(rng):
    g = sinter.Graph()
    x = g.input("x", sinter.f32, [2, 3, 4])
    y = g.input("y", sinter.f32, [2, 3, 4])
    g.output(g.permute(x, [2, 0, 1]), "perm")
    g.output(g.slice(x, [2], [1], [4], [2]), "odd")
    g.output(g.concat([x, y], axis=1), "cat")
    g.output(g.reshape(x, [4, -1]), "flat")
    g.output(g.sum(x, [-1]), "sum")
    g.output(g.mean(x, [0, 2], keepdim=True), "mean")
    g.output(g.amax(x), "amax")
    g.output(g.gt(x, y), "gt")
    g.output(g.select(g.gt(x, y), x, y), "max")
    xs = rng.standard_normal((2, 3, 4)).astype(np.float32)
    ys = rng.standard_normal((2, 3, 4)).astype(np.float32)
    out = sinter.run_reference(g, {"x": xs, "y": ys})
    np.testing.assert_array_equal(out["perm"], xs.transpose(2, 0, 1))
    np.testing.assert_array_equal(out["odd"], xs[:, :, 1:4:2])
    np.testing.assert_array_equal(out["cat"], np.concatenate([xs, ys], 1))
    np.testing.assert_array_equal(out["flat"], xs.reshape(4, -1))
    assert rel_l2(out["sum"], xs.astype(np.float64).sum(-1)) < 1e-6
    assert rel_l2(out["mean"], xs.astype(np.float64).mean((0, 2), keepdims=True)) < 1e-6
    assert out["amax"] == np.float32(np.abs(xs).max())
    assert out["gt"].dtype == np.bool_
    np.testing.assert_array_equal(out["gt"], xs > ys)
    np.testing.assert_array_equal(out["max"], np.maximum(xs, ys))


def test_integer_inputs_and_outputs():
    g = sinter.Graph()
    a = g.input("a", sinter.i32, [3])
    b = g.input("b", sinter.i64, [3])
    g.output(g.add(a, a), "twice")
    g.output(g.mul(b, 3.0), "triple")
    out = sinter.run_reference(g, {"a": np.array([1, -2, 2**30]), "b": np.array([5, 6, 7], np.int64)})
    assert out["twice"].dtype == np.int32 and out["triple"].dtype == np.int64
    np.testing.assert_array_equal(out["twice"], [2, -4, 2**31 - 1])  # i32 saturates
    np.testing.assert_array_equal(out["triple"], [15, 18, 21])


def test_keep_intermediates(rng):
    g = sinter.Graph()
    x = g.input("x", sinter.f32, [4])
    h = g.relu(x)
    g.rename(h, "h")
    g.output(g.exp(h), "y")
    out = sinter.run_reference(g, {"x": np.array([-1.0, 0.0, 1.0, 2.0])}, keep_intermediates=True)
    np.testing.assert_array_equal(out["h"], [0, 0, 1, 2])
    assert set(out) >= {"h", "y"}


def mlp_graph():
    g = sinter.Graph("mlp")
    x = g.input("x", sinter.f32, [16, 32])
    w = g.input("w", sinter.f32, [32, 24])
    b = g.input("b", sinter.f32, [24])
    g.output(x @ w + b, "y")
    return g


def test_a_missing_input_is_named():
    with pytest.raises(sinter.InvalidArgumentError) as info:
        sinter.run_reference(mlp_graph(), {"x": np.zeros((16, 32)), "b": np.zeros(24)})
    assert info.value.message == ("run_reference: graph input 'w' (expected f32 [32, 24]) is missing; "
                                  "found inputs: 'b', 'x'")


def test_a_wrong_shape_is_named():
    with pytest.raises(sinter.InvalidArgumentError) as info:
        sinter.run_reference(mlp_graph(), {"x": np.zeros((16, 31)), "w": np.zeros((32, 24)), "b": np.zeros(24)})
    assert info.value.message == "run_reference: graph input 'x' expects f32 [16, 32]; found f32 [16, 31]"


def test_an_unknown_input_is_named():
    inputs = {"x": np.zeros((16, 32)), "w": np.zeros((32, 24)), "b": np.zeros(24), "bias": np.zeros(24)}
    with pytest.raises(sinter.InvalidArgumentError) as info:
        sinter.run_reference(mlp_graph(), inputs)
    assert info.value.message == "run_reference: 'bias' is not an input of graph 'mlp'; its inputs are 'x', 'w', 'b'"


def test_a_float_array_for_an_integer_input_is_refused():
    g = sinter.Graph()
    g.output(g.neg(g.input("n", sinter.i32, [2])), "y")
    with pytest.raises(sinter.InvalidArgumentError) as info:
        sinter.run_reference(g, {"n": np.array([1.5, 2.5])})
    assert info.value.message == ("run_reference: graph input 'n' is i32; found a numpy array of float64 "
                                  "(a i32 input takes integer or bool arrays)")
    with pytest.raises(sinter.InvalidArgumentError, match="found a numpy array of <U1"):
        sinter.run_reference(mlp_graph(), {"x": np.array(["a"])})


def test_ml_dtypes_arrays_are_accepted_when_installed():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    g = sinter.Graph()
    g.output(g.identity(g.input("x", sinter.bf16, [3])), "y")
    xs = np.array([1.0, 0.333, -7.5], dtype=ml_dtypes.bfloat16)
    y = sinter.run_reference(g, {"x": xs})["y"]
    np.testing.assert_array_equal(y, xs.astype(np.float32))


def test_argmax_argmin_like_numpy_with_ties_and_nan(rng):
    g = sinter.Graph()
    x = g.input("x", sinter.f32, [3, 5, 7])
    g.output(g.argmax(x, -1), "amax_last")
    g.output(g.argmin(x, 1, keepdim=True), "amin_mid")
    g.output(g.argmax(x, 0), "amax_first")
    xs = np.round(rng.standard_normal((3, 5, 7)) * 2).astype(np.float32)  # many ties
    xs[1, 2, 4] = np.nan
    out = sinter.run_reference(g, {"x": xs})
    assert out["amax_last"].dtype == np.int64
    # numpy's argmax/argmin: the first extreme, and a NaN counts as the extreme (as in torch)
    np.testing.assert_array_equal(out["amax_last"], np.argmax(xs, -1))
    np.testing.assert_array_equal(out["amin_mid"], np.argmin(xs, 1)[:, None, :])
    np.testing.assert_array_equal(out["amax_first"], np.argmax(xs, 0))
    assert out["amax_last"][1, 2] == 4


def test_zero_dimensional_inputs_and_outputs_keep_their_shape():
    """A 0-d input (a scalar position, say) is fed as a 0-d array and its result comes back 0-d."""
    g = sinter.Graph("scalars")
    x = g.input("x", sinter.DType.i64, [])
    y = g.input("y", sinter.DType.f32, [])
    g.output(g.add(g.cast(x, sinter.DType.f32), y), "z")
    out = sinter.run_reference(g, {"x": np.array(3), "y": np.array(1.5, np.float32)})
    assert out["z"].shape == ()
    assert out["z"] == np.float32(4.5)
