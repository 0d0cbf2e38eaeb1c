"""Converters of ATen's heavy ops, the ones Sinter builds its fused regions around: matrix
products, convolution, attention, normalizations and softmax. For fx_converter; each takes an
``AtenNode`` and returns the output tensor, or a tuple (``None`` for outputs Sinter does not
compute, such as attention's log-sum-exp or a norm's saved statistics).

- mm, bmm, matmul (1-D operands too), addmm/baddbmm (alpha, beta), linear;
- convolution, conv1d, conv2d: NCHW through permutes to Sinter's NHWC/KRSC conv2d (1-D as 2-D of
  height 1); no transposed convolution;
- scaled_dot_product_attention and the kernels ATen picks for it (_scaled_dot_product_flash_attention,
  _efficient_attention, _cudnn_attention, _flash_attention_for_cpu) as sdpa: 3-D or 4-D, GQA,
  is_causal (top-left, as torch aligns it), bool or float masks; dropout_p must be 0;
- layer_norm, native_layer_norm, rms_norm, _fused_rms_norm (over several trailing dims too);
  batch_norm in eval mode (running statistics) as pointwise ops per channel;
- softmax, _softmax, _safe_softmax, log_softmax over any dim;
- adaptive_avg_pool2d to 1x1 as a mean.
"""

from __future__ import annotations

import math

from . import _core
from .aten_layout import axis_of, broadcast_to, reshape_to
from .errors import ParseError, UnsupportedError

F32 = _core.DType.f32
# torch computes 16-bit and fp8 tensors' composite math in float32 (its "opmath" type).
_NARROW = {_core.DType.f16, _core.DType.bf16, _core.DType.fp8_e4m3, _core.DType.fp8_e5m2}


def _float_out(ctx, what: str):
    dtype = ctx.out_dtype()
    if not dtype.is_float:
        raise UnsupportedError(f"{what} of {dtype.label} tensors; Sinter's {what} takes float tensors only")
    return dtype


# ---- matrix products ---------------------------------------------------------------------------

def _mm(ctx):
    """mm, bmm: self @ mat2."""
    dtype = _float_out(ctx, "matmul")
    return ctx.g.matmul(ctx.tensor("self", dtype), ctx.tensor("mat2", dtype))


def _matmul(ctx):
    """torch.matmul: 1-D operands become matrices and lose that axis again."""
    g = ctx.g
    dtype = _float_out(ctx, "matmul")
    a, b = ctx.tensor("self", dtype), ctx.tensor("other", dtype)
    if a.ndim == 1:
        a = g.reshape(a, [1, a.shape[0]])
    if b.ndim == 1:
        b = g.reshape(b, [b.shape[0], 1])
    return reshape_to(g, g.matmul(a, b), ctx.out_shape())


def _addmm(ctx):
    """addmm(self, mat1, mat2), baddbmm(self, batch1, batch2): beta * self + alpha * (a @ b)."""
    g = ctx.g
    dtype = _float_out(ctx, "matmul")
    a_name, b_name = ("mat1", "mat2") if "mat1" in ctx.args else ("batch1", "batch2")
    y = g.matmul(ctx.tensor(a_name, dtype), ctx.tensor(b_name, dtype))
    alpha, beta = ctx.value("alpha", 1), ctx.value("beta", 1)
    if alpha != 1:
        y = g.mul(y, float(alpha))
    if beta == 0:  # torch ignores self then, NaN included
        return y
    bias = ctx.tensor("self", dtype)
    return g.add(y, bias if beta == 1 else g.mul(bias, float(beta)))


def _linear(ctx):
    """input @ weight.T + bias."""
    g = ctx.g
    dtype = _float_out(ctx, "matmul")
    w = ctx.tensor("weight", dtype)
    y = g.matmul(ctx.tensor("input", dtype), w if w.ndim == 1 else ctx.conv.permute(w, [1, 0]))
    y = reshape_to(g, y, ctx.out_shape()) if w.ndim == 1 else y
    return g.add(y, ctx.tensor("bias", dtype)) if ctx.has("bias") else y


# ---- convolution -------------------------------------------------------------------------------

def _conv_padding(padding, kernel, dilation):
    """(begin, end) per spatial axis from torch's padding: a list, 'valid' or 'same' (the odd
    element of 'same' padding goes after, as torch puts it)."""
    if padding == "valid":
        return [0] * len(kernel), [0] * len(kernel)
    if padding == "same":
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return [t // 2 for t in total], [t - t // 2 for t in total]
    padding = list(padding)
    if len(padding) == 1:
        padding = padding * len(kernel)
    return padding, padding


def _conv(ctx):
    """NCHW convolution through Sinter's NHWC conv2d: x and w permuted in, the result permuted back."""
    g = ctx.g
    dtype = _float_out(ctx, "conv2d")
    if ctx.value("transposed", False):
        raise UnsupportedError("a transposed convolution; Sinter's conv2d is a forward convolution")
    x, w = ctx.tensor("input", dtype), ctx.tensor("weight", dtype)
    spatial = w.ndim - 2
    if spatial not in (1, 2):
        raise UnsupportedError(f"a {spatial}-D convolution (weight {list(w.shape)}); Sinter has 1-D and 2-D ones")
    if x.ndim == spatial + 1:
        raise UnsupportedError(f"an unbatched input {list(x.shape)}; pass a batch of one")

    def per_axis(name, default):
        v = ctx.value(name, default)
        if isinstance(v, str):
            return v
        v = list(v)
        return v * spatial if len(v) == 1 else v

    stride, dilation = per_axis("stride", [1]), per_axis("dilation", [1])
    kernel = list(w.shape[2:])
    pad_begin, pad_end = _conv_padding(per_axis("padding", [0]), kernel, dilation)
    if any(ctx.value("output_padding", [0]) or []):
        raise UnsupportedError("output_padding of a transposed convolution")
    if spatial == 1:
        x = g.reshape(x, list(x.shape[:2]) + [1] + list(x.shape[2:]))
        w = g.reshape(w, list(w.shape[:2]) + [1] + list(w.shape[2:]))
        stride, dilation = [1] + stride, [1] + dilation
        pad_begin, pad_end = [0] + pad_begin, [0] + pad_end
    y = g.conv2d(g.permute(x, [0, 2, 3, 1]), g.permute(w, [0, 2, 3, 1]), stride=stride, pad_begin=pad_begin,
                 pad_end=pad_end, dilation=dilation, groups=ctx.value("groups", 1))
    if ctx.has("bias"):
        y = g.add(y, ctx.tensor("bias", dtype))
    return reshape_to(g, g.permute(y, [0, 3, 1, 2]), ctx.out_shape())


# ---- attention ---------------------------------------------------------------------------------

def _to_rank4(g, t, what: str):
    """[N, L, E] -> [N, 1, L, E]; rank 4 as it is."""
    if t.ndim == 4:
        return t
    if t.ndim == 3:
        return g.reshape(t, [t.shape[0], 1, t.shape[1], t.shape[2]])
    raise UnsupportedError(f"{what} has rank {t.ndim}; Sinter's sdpa takes 3-D or 4-D inputs")


def _sdpa(ctx):
    """scaled_dot_product_attention and the ATen kernels it dispatches to."""
    g = ctx.g
    dtype = _float_out(ctx, "sdpa")
    if ctx.value("dropout_p", 0.0):
        raise UnsupportedError(f"dropout_p={ctx.value('dropout_p')}; Sinter's sdpa has no dropout")
    rank = len(ctx.out_shape())
    q, k, v = (_to_rank4(g, ctx.tensor(n, dtype), n) for n in ("query", "key", "value"))
    mask_name = "attn_mask" if "attn_mask" in ctx.args else "attn_bias"
    mask = None
    if ctx.has(mask_name):
        mask = ctx.tensor(mask_name)
        if mask.dtype != _core.DType.boolean and mask.dtype != dtype:
            mask = g.cast(mask, dtype)
        if mask.ndim == 3 and rank == 3:
            mask = g.reshape(mask, [mask.shape[0], 1, mask.shape[1], mask.shape[2]])
    causal = _core.CausalMask.top_left if ctx.value("is_causal", False) else _core.CausalMask.none
    scale = ctx.value("scale")
    y = g.sdpa(q, k, v, scale=None if scale is None else float(scale), causal=causal, bias=mask)
    y = reshape_to(g, y, ctx.out_shape())
    if isinstance(ctx.out, (tuple, list)):
        return (y,) + (None,) * (len(ctx.out) - 1)
    return y


# ---- normalization -----------------------------------------------------------------------------

def _ones(g, size: int, dtype):
    return broadcast_to(g, g.scalar(1.0, dtype), [size])


def _norm(ctx):
    """layer_norm, native_layer_norm, rms_norm, _fused_rms_norm over the trailing dims
    `normalized_shape` (several dims are flattened into one around the op)."""
    g = ctx.g
    dtype = _float_out(ctx, "normalization")
    x = ctx.tensor("input", dtype)
    normalized = list(ctx.value("normalized_shape"))
    if list(x.shape[x.ndim - len(normalized):]) != normalized:
        raise ParseError(f"normalized_shape {normalized} is not the trailing shape of {list(x.shape)}")
    channels = math.prod(normalized)
    flat = x if len(normalized) == 1 else g.reshape(x, list(x.shape[:x.ndim - len(normalized)]) + [channels])

    def param(name):
        if not ctx.has(name):
            return None
        t = ctx.tensor(name)
        if not t.dtype.is_float:
            t = g.cast(t, dtype)
        return reshape_to(g, t, [channels])

    weight = param("weight")
    if weight is None:
        weight = _ones(g, channels, dtype)
    rms = "rms_norm" in ctx.op
    eps = ctx.value("eps")
    if eps is None:  # rms_norm's default: the machine epsilon of float32, which torch computes in
        eps = 2.0 ** -23
    if rms:
        y = g.rmsnorm(flat, weight, epsilon=float(eps))
    else:
        y = g.layernorm(flat, weight, bias=param("bias"), epsilon=float(eps))
    y = reshape_to(g, y, list(x.shape))
    if isinstance(ctx.out, (tuple, list)):
        return (y,) + (None,) * (len(ctx.out) - 1)
    return y


def _batch_norm(ctx):
    """Eval-mode batch norm over axis 1: (x - mean) * weight / sqrt(var + eps) + bias, in float32
    for narrower tensors as torch computes it."""
    g = ctx.g
    dtype = _float_out(ctx, "batch_norm")
    if ctx.value("training", False):
        raise UnsupportedError("batch_norm in training mode; call module.eval() before importing")
    if not ctx.has("running_mean") or not ctx.has("running_var"):
        raise UnsupportedError("batch_norm without running statistics")
    compute = F32 if dtype in _NARROW else dtype
    x = ctx.tensor("input", compute)
    channels = x.shape[1]
    per_channel = [channels] + [1] * (x.ndim - 2)

    def stat(name, default):
        t = ctx.tensor(name, compute) if ctx.has(name) else g.scalar(default, compute)
        return reshape_to(g, t, per_channel) if t.ndim else t

    scale = g.rsqrt(g.add(stat("running_var", 0.0), float(ctx.value("eps"))))
    scale = g.mul(scale, stat("weight", 1.0))
    y = g.mul(g.sub(x, stat("running_mean", 0.0)), scale)
    if ctx.has("bias"):
        y = g.add(y, stat("bias", 0.0))
    y = y if compute == dtype else g.cast(y, dtype)
    if isinstance(ctx.out, (tuple, list)):
        return (y,) + (None,) * (len(ctx.out) - 1)
    return y


# ---- softmax -----------------------------------------------------------------------------------

def _last_axis(g, x, axis: int, fn):
    """fn applied over `axis` by moving it last and back."""
    if axis == x.ndim - 1:
        return fn(x)
    perm = [a for a in range(x.ndim) if a != axis] + [axis]
    back = [perm.index(a) for a in range(x.ndim)]
    return g.permute(fn(g.permute(x, perm)), back)


def _softmax(ctx):
    """softmax, _softmax, _safe_softmax (a row of -inf gives 0), log_softmax, _log_softmax."""
    g = ctx.g
    dtype = _float_out(ctx, "softmax")
    x = ctx.tensor("self", dtype)
    scalar = x.ndim == 0
    if scalar:
        x = g.reshape(x, [1])
    axis = axis_of(ctx.value("dim"), x.ndim)
    name = ctx.op.split(".")[1]

    def over_last(t):
        if "log_softmax" in name:
            shifted = g.sub(t, g.reduce_max(t, [-1], keepdim=True))
            return g.sub(shifted, g.log(g.sum(g.exp(shifted), [-1], keepdim=True)))
        y = g.softmax(t)
        if name == "_safe_softmax":
            empty = g.eq(g.reduce_max(t, [-1], keepdim=True), g.scalar(-math.inf, dtype))
            y = g.select(empty, g.scalar(0.0, dtype), y)
        return y

    y = _last_axis(g, x, axis, over_last)
    return g.reshape(y, []) if scalar else y


# ---- pooling -----------------------------------------------------------------------------------

def _adaptive_avg_pool(ctx):
    x = ctx.tensor("self", _float_out(ctx, "average pooling"))
    size = list(ctx.value("output_size"))
    spatial = len(size)
    if any(s != 1 for s in size) and size != list(x.shape[x.ndim - spatial:]):
        raise UnsupportedError(f"output_size {size}: Sinter has no windowed pooling (only global average "
                               "pooling, output_size 1)")
    if size == list(x.shape[x.ndim - spatial:]):
        return x
    return ctx.g.mean(x, list(range(x.ndim - spatial, x.ndim)), keepdim=True)


ANCHOR_CONVERTERS = {
    "mm": _mm, "bmm": _mm, "matmul": _matmul, "addmm": _addmm, "baddbmm": _addmm, "linear": _linear,
    "convolution": _conv, "conv1d": _conv, "conv2d": _conv, "_convolution": _conv,
    "scaled_dot_product_attention": _sdpa, "_scaled_dot_product_flash_attention": _sdpa,
    "_scaled_dot_product_efficient_attention": _sdpa, "_scaled_dot_product_cudnn_attention": _sdpa,
    "_scaled_dot_product_flash_attention_for_cpu": _sdpa,
    "layer_norm": _norm, "native_layer_norm": _norm, "rms_norm": _norm, "_fused_rms_norm": _norm,
    "batch_norm": _batch_norm, "_native_batch_norm_legit_no_training": _batch_norm,
    "native_batch_norm": _batch_norm, "_native_batch_norm_legit": _batch_norm,
    "softmax": _softmax, "_softmax": _softmax, "_safe_softmax": _softmax,
    "log_softmax": _softmax, "_log_softmax": _softmax,
    "adaptive_avg_pool2d": _adaptive_avg_pool, "_adaptive_avg_pool2d": _adaptive_avg_pool,
    "adaptive_avg_pool1d": _adaptive_avg_pool,
}
