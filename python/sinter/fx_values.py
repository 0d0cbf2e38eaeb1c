"""What fx_converter keeps for each FX node, and reading what torch recorded on a node.

A node's value is a Sinter tensor, a ``Folded`` constant (a real torch tensor computed at import
time), a ``LazyInput`` (a weight placeholder, made a graph input when first read), a Python value,
or a tuple of these for an op with several outputs. ``meta_value`` is what torch recorded for a
node at trace time (a FakeTensor, a tuple, a number); ``source_line`` the line of the user's code
that made it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional

from . import _core
from .errors import UnsupportedError
from .torch_types import torch_module


@dataclass
class Folded:
    """A value computed at import time: a real (CPU) torch tensor and the name it gets as a weight."""

    tensor: object
    name: str
    handle: Optional[object] = field(default=None, repr=False)  # its Sinter tensor, once made


@dataclass(frozen=True)
class Placeholder:
    """What an FX placeholder is to the Sinter graph: a run-time input of this name (``kind``
    "input", added in the order given when a node reads its data), a weight (``kind`` "weight",
    added when first read, its value in ``value``), or a constant (``kind`` "constant": folded,
    so the ops that read it can be computed at import time too)."""

    name: str
    kind: str
    value: object = None


class LazyInput:
    """A weight placeholder, made a graph input when a node first reads it."""

    def __init__(self, node, spec: Placeholder):
        self.node, self.spec, self.handle = node, spec, None


def packet_name(target) -> str:
    """"add" for torch.ops.aten.add.Tensor; the function's name for other targets."""
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return packet.__name__
    return getattr(target, "__name__", str(target))


def op_label(target) -> str:
    """"aten.add.Tensor", or "operator.getitem" for a Python function."""
    if hasattr(target, "overloadpacket"):
        return str(target)
    module = getattr(target, "__module__", None) or ""
    return f"{module.lstrip('_')}.{getattr(target, '__name__', target)}" if module else str(target)


def source_line(node) -> str:
    """'file.py:12: code' for the frame that made `node`: the last frame of its stack trace outside
    torch itself, or the last frame; '' when the node has no stack trace."""
    trace = node.meta.get("stack_trace") if hasattr(node, "meta") else None
    if not trace:
        return ""
    frames = []  # (path, line, code)
    lines = trace.strip().splitlines()
    for i, text in enumerate(lines):
        text = text.strip()
        if text.startswith('File "'):
            path = text[6:text.find('"', 6)]
            number = text.split(", line ")[1].split(",")[0] if ", line " in text else "?"
            code = lines[i + 1].strip() if i + 1 < len(lines) and not lines[i + 1].strip().startswith("File ") else ""
            frames.append((path, number, code))
    if not frames:
        return ""
    torch_dir = os.path.dirname(torch_module().__file__) + os.sep
    outside = [f for f in frames if not f[0].startswith(torch_dir)]
    path, number, code = (outside or frames)[-1]
    return f"{os.path.basename(path)}:{number}" + (f": {code}" if code else "")


def meta_value(node):
    """The value torch recorded for an FX node at trace time (a FakeTensor, a tuple, a number)."""
    return node.meta.get("val", node.meta.get("example_value")) if hasattr(node, "meta") else None


def is_tensor_like(value) -> bool:
    return value is not None and hasattr(value, "shape") and hasattr(value, "dtype")


def static_shape(value, what: str) -> List[int]:
    try:
        return [int(d) for d in value.shape]
    except (TypeError, ValueError):
        raise UnsupportedError(f"{what} has the symbolic shape {list(value.shape)}; Sinter needs "
                               "static shapes (torch.compile(..., dynamic=False))") from None


def flatten(value) -> list:
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in flatten(v)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in flatten(v)]
    return [value]


def map_values(value, fn):
    if isinstance(value, tuple):
        return tuple(map_values(v, fn) for v in value)
    if isinstance(value, list):
        return [map_values(v, fn) for v in value]
    return fn(value)


def contains_runtime(value) -> bool:
    return any(isinstance(v, (_core.Tensor, LazyInput)) for v in flatten(value))
