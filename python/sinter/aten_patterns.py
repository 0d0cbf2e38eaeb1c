"""Multi-node ATen patterns that become one Sinter op, found before the conversion walks the graph.

Rotary embeddings as Llama (and transformers' models) write them,

    rotate_half(x) = cat([-x[..., D/2:], x[..., :D/2]], -1)
    y = x * cos + rotate_half(x) * sin

are seven ATen nodes (two slices, neg, cat, two muls, add); Sinter's ``rope`` (half-split pairs
(x[i], x[i + D/2])) computes the same in one step when cos and sin repeat their first half in their
second, as the tables of these models do (``emb = cat([freqs, freqs], -1)``). ``find_rope`` finds the
structure; the converter checks the tables' values (they must be constants known at import time)
and otherwise converts the seven nodes one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

from .fx_values import is_tensor_like, meta_value, packet_name

INT64_MAX = 2 ** 63 - 1


@dataclass
class RopeMatch:
    """x * cos + rotate_half(x) * sin rooted at an add node: its operands and the inner nodes
    (in graph order) that the rope replaces."""

    x: object
    cos: object
    sin: object
    inner: List[object]


def _is(node, name: str) -> bool:
    return hasattr(node, "op") and node.op == "call_function" and packet_name(node.target) == name


def _only_user_is(node, user) -> bool:
    return list(node.users) == [user]


def _last_dim(node) -> Optional[int]:
    value = meta_value(node)
    if not is_tensor_like(value) or value.dim() < 1:
        return None
    try:
        return int(value.shape[-1])
    except (TypeError, ValueError):
        return None


def _slice_of(node, start: int, end_at_least: int, end_at_most: int):
    """The sliced node when `node` is x[..., start:end] on the last dim with step 1, else None."""
    if not _is(node, "slice"):
        return None
    args = list(node.args) + [None] * (5 - len(node.args))
    source, dim, s, e, step = args[:5]
    dim = node.kwargs.get("dim", dim if dim is not None else 0)
    s = node.kwargs.get("start", s)
    e = node.kwargs.get("end", e)
    step = node.kwargs.get("step", step if step is not None else 1)
    rank = meta_value(source).dim() if is_tensor_like(meta_value(source)) else None
    if rank is None or dim not in (-1, rank - 1) or step != 1:
        return None
    s = 0 if s is None else s
    e = INT64_MAX if e is None else e
    if s != start or not end_at_least <= e <= end_at_most:
        return None
    return source


def _rotate_half_of(cat) -> Optional[tuple]:
    """(x, inner nodes) when `cat` is cat([neg(x[..., D/2:]), x[..., :D/2]], -1), else None."""
    if not _is(cat, "cat") or len(cat.args) < 1:
        return None
    parts = cat.args[0]
    dim = cat.args[1] if len(cat.args) > 1 else cat.kwargs.get("dim", 0)
    if not isinstance(parts, (list, tuple)) or len(parts) != 2 or dim not in (-1, _rank(cat) - 1):
        return None
    neg, low = parts
    if not _is(neg, "neg") or not _only_user_is(neg, cat):
        return None
    high = neg.args[0]
    if not hasattr(high, "op") or not _only_user_is(high, neg) or not _only_user_is(low, cat):
        return None
    d = _last_dim(cat)
    if d is None or d % 2:
        return None
    x_high = _slice_of(high, d // 2, d, INT64_MAX)
    x_low = _slice_of(low, 0, d // 2, d // 2)
    if x_high is None or x_high is not x_low or _last_dim(x_high) != d:
        return None
    return x_high, [high, low, neg]


def _rank(node) -> int:
    value = meta_value(node)
    return value.dim() if is_tensor_like(value) else -1


def _mul_operands(node):
    if not _is(node, "mul") or len(node.args) != 2:
        return None
    a, b = node.args
    return (a, b) if hasattr(a, "op") and hasattr(b, "op") else None


def _match(add) -> Optional[RopeMatch]:
    if not _is(add, "add") or len(add.args) != 2 or add.kwargs.get("alpha", 1) != 1:
        return None
    for direct, rotated in (add.args, add.args[::-1]):
        m_direct, m_rotated = _mul_operands(direct), _mul_operands(rotated)
        if m_direct is None or m_rotated is None or direct is rotated:
            continue
        if not _only_user_is(direct, add) or not _only_user_is(rotated, add):
            continue
        for cat, sin in (m_rotated, m_rotated[::-1]):
            found = _rotate_half_of(cat)
            if found is None or not _only_user_is(cat, rotated):
                continue
            x, inner = found
            for x_side, cos in (m_direct, m_direct[::-1]):
                if x_side is x:
                    out, xv = meta_value(add), meta_value(x)
                    if not (is_tensor_like(out) and is_tensor_like(xv)) or out.dtype != xv.dtype \
                            or tuple(out.shape) != tuple(xv.shape):
                        return None
                    return RopeMatch(x, cos, sin, inner + [cat, direct, rotated])
    return None


def find_rope(nodes) -> Dict[object, RopeMatch]:
    """Every add node of `nodes` that roots x * cos + rotate_half(x) * sin, with its match; no
    inner node belongs to two matches."""
    matches, taken = {}, set()
    order = {n: i for i, n in enumerate(nodes)}
    for node in nodes:
        m = _match(node)
        if m is not None and not taken.intersection(m.inner):
            m.inner.sort(key=lambda n: order.get(n, -1))
            matches[node] = m
            taken.update(m.inner)
    return matches
