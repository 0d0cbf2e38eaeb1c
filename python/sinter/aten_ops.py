"""The ATen ops Sinter imports: ``CONVERTERS`` maps an op's name (its overload packet: "add" for
aten.add.Tensor and aten.add.Scalar) to the function that builds it on a Sinter graph. This file
holds the pointwise ops and reductions; aten_anchors.py the matrix products, convolution,
attention, normalizations and softmax; aten_layout.py views, slices, concatenation and casts.

Every converter takes an ``AtenNode`` (aten_node.py) and returns the Sinter tensor of the
op's output, or a tuple for several outputs. Operands are cast to the dtype torch computes the op
in (the node's recorded output dtype, or for comparisons the promoted dtype of the operands), so
mixed-dtype arithmetic follows torch's type promotion; a Python number becomes a scalar constant
of that dtype.

Pointwise: add, sub, rsub (alpha), mul, div (no rounding_mode), pow (tensor or number exponent,
x ** 2 as square), maximum, minimum, max/min of two tensors, relu, gelu (none or
tanh), silu, sigmoid, tanh, exp, log, sqrt, rsqrt, reciprocal, neg, abs, square, hardtanh, clamp,
clamp_min, clamp_max, leaky_relu, hardsigmoid, hardswish, eq, ne, lt, le, gt, ge, where,
masked_fill, logical_not/and/or/xor, bitwise_not/and/or/xor on bool.

Reductions: sum, mean, amax, amin, max and min (all, over a dim with indices, or of two tensors),
argmax, argmin (a flattened search when dim is None), var and std (correction).
"""

from __future__ import annotations

import math

from . import _core
from .aten_anchors import ANCHOR_CONVERTERS
from .aten_layout import LAYOUT_CONVERTERS, axis_of, reshape_to
from .errors import UnsupportedError

BOOL = _core.DType.boolean
F32 = _core.DType.f32
_NARROW = {_core.DType.f16, _core.DType.bf16, _core.DType.fp8_e4m3, _core.DType.fp8_e5m2}


def _require_float(dtype, what: str):
    if not dtype.is_float:
        raise UnsupportedError(f"{what} of {dtype.label} tensors; Sinter's {what} takes float tensors only")


# ---- pointwise ---------------------------------------------------------------------------------

def _arithmetic(op: str):
    """add, sub, mul, div, maximum, minimum (and max/min of two tensors) in the output's dtype;
    alpha scales `other` (add, sub)."""
    def convert(ctx):
        g = ctx.g
        dtype = ctx.out_dtype()
        if op == "div":
            if ctx.value("rounding_mode") is not None:
                raise UnsupportedError(f"rounding_mode='{ctx.value('rounding_mode')}'; Sinter has no floor or trunc")
            _require_float(dtype, "div")
        a, b = ctx.tensor("self", dtype), ctx.tensor("other", dtype)
        alpha = ctx.value("alpha", 1)
        if alpha != 1:
            b = g.mul(b, float(alpha))
        return getattr(g, op)(a, b)
    return convert


def _rsub(ctx):
    """other - alpha * self"""
    g = ctx.g
    dtype = ctx.out_dtype()
    a = ctx.tensor("self", dtype)
    alpha = ctx.value("alpha", 1)
    return g.sub(ctx.tensor("other", dtype), a if alpha == 1 else g.mul(a, float(alpha)))


def _pow(ctx):
    g = ctx.g
    dtype = ctx.out_dtype()
    if ctx.is_number("exponent"):
        exponent = float(ctx.value("exponent"))
        x = ctx.tensor("self", dtype)
        if exponent == 2.0:
            return g.square(x)
        if exponent == 1.0:
            return x
        _require_float(dtype, "pow")
        if exponent == 0.5:
            return g.sqrt(x)
        return g.pow(x, exponent)
    _require_float(dtype, "pow")
    return g.pow(ctx.tensor("self", dtype), ctx.tensor("exponent", dtype))


def _unary(op: str, float_only: bool = True):
    def convert(ctx):
        dtype = ctx.out_dtype()
        if float_only:
            _require_float(dtype, op)
        return getattr(ctx.g, op)(ctx.tensor("self", dtype))
    return convert


def _gelu(ctx):
    approximate = ctx.value("approximate", "none")
    dtype = ctx.out_dtype()
    _require_float(dtype, "gelu")
    x = ctx.tensor("self", dtype)
    if approximate == "tanh":
        return ctx.g.gelu_tanh(x)
    if approximate != "none":
        raise UnsupportedError(f"approximate='{approximate}'")
    return ctx.g.gelu(x)


def _erf(ctx):
    raise UnsupportedError("Sinter has no erf (torch's gelu, which uses it, is imported as gelu)")


def _clamp(ctx):
    """clamp, clamp_min, clamp_max, hardtanh: max(x, lo) then min(·, hi)."""
    g = ctx.g
    dtype = ctx.out_dtype()
    lo_name, hi_name = ("min_val", "max_val") if "min_val" in ctx.args else ("min", "max")
    y = ctx.tensor("self", dtype)
    if lo_name in ctx.args and ctx.has(lo_name):
        y = g.max(y, ctx.tensor(lo_name, dtype))
    if hi_name in ctx.args and ctx.has(hi_name):
        y = g.min(y, ctx.tensor(hi_name, dtype))
    return y


def _leaky_relu(ctx):
    g = ctx.g
    dtype = ctx.out_dtype()
    x = ctx.tensor("self", dtype)
    slope = float(ctx.value("negative_slope", 0.01))
    return g.select(g.gt(x, g.scalar(0.0, dtype)), x, g.mul(x, slope))


def _hardsigmoid(ctx):
    """clamp(x / 6 + 1/2, 0, 1)"""
    g = ctx.g
    dtype = ctx.out_dtype()
    x = ctx.tensor("self", dtype)
    return g.min(g.max(g.add(g.div(x, 6.0), 0.5), 0.0), 1.0)


def _hardswish(ctx):
    """x * clamp(x + 3, 0, 6) / 6"""
    g = ctx.g
    dtype = ctx.out_dtype()
    x = ctx.tensor("self", dtype)
    return g.div(g.mul(x, g.min(g.max(g.add(x, 3.0), 0.0), 6.0)), 6.0)


def _compare(op: str):
    def convert(ctx):
        dtype = ctx.promoted("self", "other")
        return getattr(ctx.g, op)(ctx.tensor("self", dtype), ctx.tensor("other", dtype))
    return convert


def _as_bool(ctx, name: str):
    t = ctx.tensor(name)
    return t if t.dtype == BOOL else ctx.g.ne(t, ctx.g.scalar(0.0, t.dtype))


def _logical(ctx):
    """logical_not/and/or/xor (any dtype, nonzero is true) and bitwise_not/and/or/xor of bools."""
    g = ctx.g
    name = ctx.op.split(".")[1]
    if name.startswith("bitwise") and ctx.out_dtype() != BOOL:
        raise UnsupportedError(f"{name} of {ctx.out_dtype().label} tensors; Sinter has no bitwise integer ops")
    a = _as_bool(ctx, "self")
    if name.endswith("not"):
        y = g.eq(a, g.scalar(0.0, BOOL))
    else:
        b = _as_bool(ctx, "other")
        if name.endswith("and"):
            y = g.select(a, b, g.scalar(0.0, BOOL))
        elif name.endswith("xor"):
            y = g.ne(a, b)
        else:
            y = g.select(a, g.scalar(1.0, BOOL), b)
    return y if ctx.out_dtype() == BOOL else g.cast(y, ctx.out_dtype())


def _where(ctx):
    dtype = ctx.out_dtype()
    cond = _as_bool(ctx, "condition")
    return ctx.g.select(cond, ctx.tensor("self", dtype), ctx.tensor("other", dtype))


def _masked_fill(ctx):
    dtype = ctx.out_dtype()
    return ctx.g.select(_as_bool(ctx, "mask"), ctx.tensor("value", dtype), ctx.tensor("self", dtype))


# ---- reductions --------------------------------------------------------------------------------

def _axes(ctx, x) -> list:
    """The reduced axes: `dim` as a list, every axis when None or empty."""
    dims = ctx.value("dim")
    if dims is None:
        return list(range(x.ndim))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({axis_of(d, x.ndim) for d in dims}) or list(range(x.ndim))


def _reduce(op: str):
    """sum, mean (in the output's dtype, as torch's dtype= asks), amax, amin."""
    def convert(ctx):
        dtype = ctx.out_dtype()
        if op == "mean":
            _require_float(dtype, "mean")
        x = ctx.tensor("self", dtype)
        if x.ndim == 0:
            return x
        y = getattr(ctx.g, op)(x, _axes(ctx, x), keepdim=bool(ctx.value("keepdim", False)))
        return reshape_to(ctx.g, y, ctx.out_shape())
    return convert


def _arg_reduce(op: str):
    """argmax, argmin: over `dim`, or over the flattened tensor when dim is None."""
    def convert(ctx):
        g = ctx.g
        x = ctx.tensor("self")
        if not x.dtype.is_float:
            raise UnsupportedError(f"{op} of {x.dtype.label} tensors; Sinter's {op} takes float tensors only")
        dim = ctx.value("dim")
        if dim is None or x.ndim == 0:
            y = getattr(g, op)(g.reshape(x, [math.prod(x.shape)]), 0)
        else:
            y = getattr(g, op)(x, axis_of(dim, x.ndim), keepdim=bool(ctx.value("keepdim", False)))
        return reshape_to(g, y, ctx.out_shape())
    return convert


def _max_min(op: str):
    """max/min: of two tensors, over a dim (values, indices), or of everything."""
    reduce_name, arg_name = ("reduce_max", "argmax") if op == "max" else ("reduce_min", "argmin")

    def convert(ctx):
        g = ctx.g
        if "other" in ctx.args:
            return _arithmetic(op)(ctx)
        x = ctx.tensor("self")
        if "dim" not in ctx.args:
            return getattr(g, reduce_name)(x) if x.ndim else x
        axis = axis_of(ctx.value("dim"), x.ndim)
        keepdim = bool(ctx.value("keepdim", False))
        values = getattr(g, reduce_name)(x, [axis], keepdim=keepdim)
        uses_indices = any(u.args[1] == 1 for u in ctx.node.users)
        indices = getattr(g, arg_name)(x, axis, keepdim=keepdim) if uses_indices else None
        return values, indices
    return convert


def _var_std(ctx):
    """var and std: mean of squared deviations over (N - correction), in float32 for narrower
    tensors as torch computes them."""
    g = ctx.g
    dtype = ctx.out_dtype()
    _require_float(dtype, ctx.op.split(".")[1])
    compute = F32 if dtype in _NARROW else dtype
    x = ctx.tensor("self", compute)
    axes = _axes(ctx, x)
    correction = ctx.value("correction")
    if correction is None:
        correction = 1 if ctx.value("unbiased", True) else 0
    count = math.prod(x.shape[a] for a in axes)
    deviation = g.sub(x, g.mean(x, axes, keepdim=True))
    y = g.div(g.sum(g.square(deviation), axes, keepdim=bool(ctx.value("keepdim", False))),
              float(max(count - correction, 0)))
    if ctx.op.startswith("aten.std"):
        y = g.sqrt(y)
    y = y if compute == dtype else g.cast(y, dtype)
    return reshape_to(g, y, ctx.out_shape())


POINTWISE_CONVERTERS = {
    "add": _arithmetic("add"), "sub": _arithmetic("sub"), "mul": _arithmetic("mul"),
    "div": _arithmetic("div"), "true_divide": _arithmetic("div"), "rsub": _rsub,
    "maximum": _arithmetic("max"), "minimum": _arithmetic("min"), "pow": _pow,
    "relu": _unary("relu", float_only=False), "neg": _unary("neg", float_only=False),
    "abs": _unary("abs", float_only=False), "square": _unary("square", float_only=False),
    "silu": _unary("silu"), "sigmoid": _unary("sigmoid"), "tanh": _unary("tanh"), "exp": _unary("exp"),
    "log": _unary("log"), "sqrt": _unary("sqrt"), "rsqrt": _unary("rsqrt"),
    "reciprocal": _unary("reciprocal"), "gelu": _gelu, "erf": _erf,
    "clamp": _clamp, "clamp_min": _clamp, "clamp_max": _clamp, "clip": _clamp, "hardtanh": _clamp,
    "leaky_relu": _leaky_relu, "hardsigmoid": _hardsigmoid, "hardswish": _hardswish,
    "eq": _compare("eq"), "ne": _compare("ne"), "lt": _compare("lt"), "le": _compare("le"),
    "gt": _compare("gt"), "ge": _compare("ge"),
    "where": _where, "masked_fill": _masked_fill,
    "logical_not": _logical, "logical_and": _logical, "logical_or": _logical, "logical_xor": _logical,
    "bitwise_not": _logical, "bitwise_and": _logical, "bitwise_or": _logical, "bitwise_xor": _logical,
}

REDUCTION_CONVERTERS = {
    "sum": _reduce("sum"), "mean": _reduce("mean"), "amax": _reduce("reduce_max"),
    "amin": _reduce("reduce_min"), "max": _max_min("max"), "min": _max_min("min"),
    "argmax": _arg_reduce("argmax"), "argmin": _arg_reduce("argmin"),
    "var": _var_std, "std": _var_std,
}

CONVERTERS = {**POINTWISE_CONVERTERS, **REDUCTION_CONVERTERS, **ANCHOR_CONVERTERS, **LAYOUT_CONVERTERS}
