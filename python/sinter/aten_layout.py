"""Converters of ATen's layout ops (views, permutes, broadcasts, slices, concatenation) and of
the ops that only pass a tensor on (clone, detach, dropout in eval mode, casts), for fx_converter.

Each converter takes an ``AtenNode`` (aten_node.py) and returns the Sinter tensor of the op's
output, or a tuple for several outputs (``None`` where Sinter does not compute one). Shapes that
torch already resolved (a view's -1, a squeeze's axes) are read from the node's recorded output.

Sinter has no broadcast op: ``expand`` and ``repeat`` are concatenations of copies, doubling
(log2 of the count concat nodes per axis).
"""

from __future__ import annotations

from typing import List

from . import _core
from .constant_gather import gather_constant
from .errors import ParseError, UnsupportedError
from .fx_values import Folded, LazyInput, meta_value


def axis_of(dim: int, rank: int, what: str = "dim") -> int:
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise ParseError(f"{what} {dim} is out of range for rank {rank}")
    return dim % max(rank, 1)


def repeat_axis(g, t, axis: int, times: int):
    """t's copies, `times` of them, concatenated along `axis`."""
    pieces, power = [], t
    while times:
        if times & 1:
            pieces.append(power)
        times >>= 1
        if times:
            power = g.concat([power, power], axis)
    return pieces[0] if len(pieces) == 1 else g.concat(pieces, axis)


def broadcast_to(g, t, shape: List[int]):
    """t broadcast to `shape` as numpy broadcasts (size-1 axes and missing leading axes grow)."""
    shape = list(shape)
    if t.ndim > len(shape):
        raise ParseError(f"cannot broadcast {list(t.shape)} to the lower rank {shape}")
    if t.ndim < len(shape):
        t = g.reshape(t, [1] * (len(shape) - t.ndim) + list(t.shape))
    for axis, (have, want) in enumerate(zip(list(t.shape), shape)):
        if have != want:
            if have != 1:
                raise ParseError(f"cannot broadcast {list(t.shape)} to {shape}: axis {axis} has {have}")
            t = repeat_axis(g, t, axis, want)
    return t


def reshape_to(g, t, shape: List[int]):
    return t if list(t.shape) == list(shape) else g.reshape(t, list(shape))


# ---- converters --------------------------------------------------------------------------------

def _view(ctx):
    """view, reshape, _unsafe_view, flatten, unflatten, squeeze, unsqueeze: the recorded shape."""
    if ctx.op == "aten.view.dtype":
        raise UnsupportedError("reinterpreting a tensor's bytes as another dtype")
    return reshape_to(ctx.g, ctx.tensor("self"), ctx.out_shape())


def _permute(ctx):
    x = ctx.tensor("self")
    return ctx.conv.permute(x, [axis_of(d, x.ndim) for d in ctx.value("dims")])


def _transpose(ctx):
    x = ctx.tensor("self")
    if x.ndim < 2:
        return x
    perm = list(range(x.ndim))
    a, b = axis_of(ctx.value("dim0"), x.ndim), axis_of(ctx.value("dim1"), x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return ctx.conv.permute(x, perm)


def _t(ctx):
    x = ctx.tensor("self")
    return x if x.ndim < 2 else ctx.conv.permute(x, [1, 0])


def _expand(ctx):
    return broadcast_to(ctx.g, ctx.tensor("self"), ctx.out_shape())


def _repeat(ctx):
    """Tiles the tensor: leading axes added first, then each axis concatenated `repeats` times."""
    g = ctx.g
    x = ctx.tensor("self")
    repeats = list(ctx.value("repeats"))
    x = reshape_to(g, x, [1] * (len(repeats) - x.ndim) + list(x.shape))
    for axis, times in enumerate(repeats):
        if times == 0:
            raise UnsupportedError("repeats of 0 make an empty tensor; Sinter's dims are >= 1")
        if times > 1:
            x = repeat_axis(g, x, axis, times)
    return x


def _is_empty_1d(value) -> bool:
    """torch.cat skips 1-D tensors of shape [0] (a cache that starts empty, say), constants,
    graph tensors or weights not yet made inputs alike."""
    if isinstance(value, Folded):
        return list(value.tensor.shape) == [0]
    if isinstance(value, LazyInput):
        recorded = meta_value(value.node)
        shape = recorded.shape if recorded is not None else getattr(value.spec.value, "shape", None)
        return shape is not None and list(shape) == [0]
    return isinstance(value, _core.Tensor) and list(value.shape) == [0]


def _cat(ctx):
    dtype = ctx.out_dtype()
    rank = len(ctx.out_shape())
    kept = [v for v in ctx.raw("tensors") if not _is_empty_1d(v)]
    xs = [ctx.conv.tensor(v, "argument 'tensors'", dtype) for v in kept]
    if len(xs) == 1:
        return xs[0]
    return ctx.g.concat(xs, axis_of(ctx.value("dim", 0), rank))


def _stack(ctx):
    g = ctx.g
    shape = ctx.out_shape()
    axis = axis_of(ctx.value("dim", 0), len(shape))
    piece = shape[:axis] + [1] + shape[axis + 1:]
    xs = [g.reshape(t, piece) for t in ctx.tensors("tensors", ctx.out_dtype())]
    return xs[0] if len(xs) == 1 else g.concat(xs, axis)


def _slice(ctx):
    x = ctx.tensor("self")
    axis = axis_of(ctx.value("dim", 0), x.ndim)
    start, end, step = ctx.value("start"), ctx.value("end"), ctx.value("step", 1)
    if step < 1:
        raise UnsupportedError(f"step {step}: Sinter's slice takes steps >= 1 only")
    if 0 in ctx.out_shape():
        raise UnsupportedError("the slice is empty; Sinter's dims are >= 1")
    if step == 1 and ctx.out_shape() == list(x.shape):
        return x
    start = 0 if start is None else start
    end = x.shape[axis] if end is None else end
    return ctx.g.slice(x, [axis], [start], [end], [step])


def _select(ctx):
    g = ctx.g
    x = ctx.tensor("self")
    axis = axis_of(ctx.value("dim"), x.ndim)
    index = ctx.value("index")
    size = x.shape[axis]
    if not -size <= index < size:
        raise ParseError(f"index {index} is out of range for dim {axis} of size {size}")
    index %= size
    return reshape_to(g, g.slice(x, [axis], [index], [index + 1]), ctx.out_shape())


def _narrow(ctx):
    x = ctx.tensor("self")
    axis = axis_of(ctx.value("dim"), x.ndim)
    start = ctx.value("start")
    start = start + x.shape[axis] if start < 0 else start
    return ctx.g.slice(x, [axis], [start], [start + ctx.value("length")])


def _split(ctx):
    """split, split_with_sizes, chunk, unbind: one slice per piece."""
    g = ctx.g
    x = ctx.tensor("self")
    axis = axis_of(ctx.value("dim", 0), x.ndim)
    unbind = ctx.op.startswith("aten.unbind")
    pieces, start = [], 0
    for i in range(len(ctx.out)):
        size = 1 if unbind else ctx.out_shape(i)[axis]
        piece = g.slice(x, [axis], [start], [start + size])
        pieces.append(reshape_to(g, piece, ctx.out_shape(i)))
        start += size
    return tuple(pieces)


def _identity(ctx):
    """clone, contiguous, detach, alias, lift_fresh_copy: the same values."""
    return ctx.tensor("self")


def _dropout(ctx):
    name = "input" if "input" in ctx.args else "self"
    # native_dropout's train=None means training, as True does
    if ctx.value("train") is not False:
        raise UnsupportedError("dropout in training mode; call module.eval() before importing")
    x = ctx.tensor(name)
    return (x, None) if isinstance(ctx.out, (tuple, list)) else x


def _convert_dtype(ctx):
    """_to_copy, to, type_as, _to_dtype...: a cast to the dtype torch recorded (nothing when equal)."""
    return ctx.tensor("self", ctx.out_dtype())


def _index_select(ctx):
    """index_select and embedding: a gather of the indices given at run time (token ids); with
    indices known at import time, slices of consecutive runs of them, concatenated."""
    g = ctx.g
    if ctx.op.startswith("aten.embedding"):
        x_name, index_name, axis = "weight", "indices", 0
    else:
        x_name, index_name, axis = "self", "index", None
    indices = ctx.raw(index_name)
    x = ctx.tensor(x_name)
    axis = axis_of(ctx.value("dim"), x.ndim) if axis is None else axis
    if not isinstance(indices, Folded):
        return reshape_to(g, g.gather(x, ctx.tensor(index_name), axis), ctx.out_shape())
    size = x.shape[axis]
    flat = [int(i) % size if -size <= int(i) < size else None for i in indices.tensor.reshape(-1).tolist()]
    if None in flat:
        raise ParseError(f"indices {indices.tensor.tolist()} are out of range for dim {axis} of size {size}")
    if not flat:
        raise UnsupportedError("empty indices: Sinter's dims are >= 1")
    y = gather_constant(g, x, axis, flat)
    return reshape_to(g, y, ctx.out_shape())


LAYOUT_CONVERTERS = {
    "view": _view, "reshape": _view, "_unsafe_view": _view, "_reshape_alias": _view,
    "flatten": _view, "unflatten": _view, "squeeze": _view, "unsqueeze": _view,
    "permute": _permute, "transpose": _transpose, "t": _t, "numpy_T": _t,
    "expand": _expand, "expand_as": _expand, "broadcast_to": _expand, "repeat": _repeat,
    "cat": _cat, "concat": _cat, "concatenate": _cat, "stack": _stack,
    "slice": _slice, "select": _select, "narrow": _narrow,
    "split": _split, "split_with_sizes": _split, "chunk": _split, "unbind": _split,
    "clone": _identity, "contiguous": _identity, "detach": _identity, "alias": _identity,
    "lift_fresh_copy": _identity, "lift_fresh": _identity,
    "dropout": _dropout, "native_dropout": _dropout, "feature_dropout": _dropout, "alpha_dropout": _dropout,
    "_to_copy": _convert_dtype, "to": _convert_dtype, "type_as": _convert_dtype,
    "_to_dtype": _convert_dtype,
    "index_select": _index_select, "embedding": _index_select,
}

# Ops that move or pass on values without computing: a partition of only these is left to torch.
NON_COMPUTE = {"view", "reshape", "_unsafe_view", "_reshape_alias", "flatten", "unflatten", "squeeze",
               "unsqueeze", "permute", "transpose", "t", "numpy_T", "expand", "expand_as", "broadcast_to",
               "slice", "select", "narrow", "split", "split_with_sizes", "chunk", "unbind", "clone",
               "contiguous", "detach", "alias", "lift_fresh_copy", "lift_fresh", "dropout",
               "native_dropout", "feature_dropout", "alpha_dropout", "getitem"}
