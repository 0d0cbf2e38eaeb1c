"""One ATen op node as a converter of aten_ops.py sees it (``AtenNode``): its arguments by the
names of the op's schema, their values as Sinter tensors or constants, the output torch recorded,
and the graph to build on. Made by fx_converter for each node it converts.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, List, Optional

from . import _core
from .errors import InternalError, ParseError, UnsupportedError
from .fx_values import (Folded, contains_runtime, is_tensor_like, map_values, meta_value, op_label,
                        source_line, static_shape)
from .torch_types import sinter_dtype, sinter_dtype_or_none

if TYPE_CHECKING:
    from .fx_converter import FxConverter

class AtenNode:
    """One ATen op node as a converter sees it: its arguments by schema name, its values as
    Sinter tensors or constants, the output torch recorded, and the graph to build on."""

    def __init__(self, conv: FxConverter, node):
        self.conv = conv
        self.g = conv.g
        self.node = node
        self.op = op_label(node.target)
        self.where = f"torch node '{node.name}' ({self.op})"
        line = source_line(node)
        if line:
            self.where += f" at {line}"
        self.args = bind_arguments(node)
        self.out = meta_value(node)

    # arguments
    def has(self, name: str) -> bool:
        return self.args.get(name) is not None

    def raw(self, name: str):
        """The argument's value: a Sinter tensor, a Folded constant, a lazy weight or a Python value."""
        if name not in self.args:
            raise ParseError(f"has no argument '{name}'")
        return map_values(self.args[name], self.conv.value_of)

    def value(self, name: str, default=None):
        """A non-tensor argument (a number, a list, a dtype), which must be known at import time."""
        if not self.has(name):
            return default
        value = self.raw(name)
        if isinstance(value, Folded):
            t = value.tensor
            return t.item() if t.numel() == 1 else t.tolist()
        if contains_runtime(value):
            raise UnsupportedError(f"argument '{name}' is computed at run time; Sinter needs it at import time")
        return value

    def tensor(self, name: str, dtype: Optional["_core.DType"] = None):
        """Argument `name` as a Sinter tensor (cast to `dtype` when given)."""
        if not self.has(name):
            raise ParseError(f"argument '{name}' is missing")
        return self.conv.tensor(self.raw(name), f"argument '{name}'", dtype)

    def tensors(self, name: str, dtype: Optional["_core.DType"] = None) -> list:
        return [self.conv.tensor(v, f"argument '{name}'", dtype) for v in self.raw(name)]

    def is_number(self, name: str) -> bool:
        v = self.raw(name)
        return isinstance(v, (bool, int, float))

    def meta(self, name: str):
        """What torch recorded for a tensor argument (a FakeTensor), or the value for a constant."""
        arg = self.args[name]
        if hasattr(arg, "op"):
            value = self.conv.env[arg]
            return value.tensor if isinstance(value, Folded) else meta_value(arg)
        return arg

    # the output torch recorded
    def out_meta(self, index: int = 0):
        return self.out[index] if isinstance(self.out, (tuple, list)) else self.out

    def out_dtype(self, index: int = 0) -> "_core.DType":
        return sinter_dtype(self.out_meta(index).dtype, f"output {index}")

    def out_shape(self, index: int = 0) -> List[int]:
        return static_shape(self.out_meta(index), f"output {index}")

    def promoted(self, a: str, b: str) -> "_core.DType":
        """The dtype torch computes arguments `a` and `b` in (torch.result_type's promotion, where
        a tensor of rank >= 1 outranks a rank-0 one and a Python number of the same kind)."""
        torch = self.conv.torch

        def stand_in(name):
            m = self.meta(name)
            if is_tensor_like(m):
                return torch.empty((1,) * min(m.dim(), 1), dtype=m.dtype)
            return m

        return sinter_dtype(torch.result_type(stand_in(a), stand_in(b)),
                            f"the promoted type of '{a}' and '{b}'")

    # checks
    def check_output_dtypes(self):
        outs = self.out if isinstance(self.out, (tuple, list)) else [self.out]
        for i, m in enumerate(outs):
            if is_tensor_like(m) and sinter_dtype_or_none(m.dtype) is None and self._output_used(i):
                raise UnsupportedError(f"computes a {m.dtype} output; Sinter takes float32, float16, bfloat16, "
                                       "float8, int32, int64 and bool tensors")

    def _output_used(self, index: int) -> bool:
        if not isinstance(self.out, (tuple, list)):
            return True
        return any(u.target is operator.getitem and u.args[1] == index for u in self.node.users)

    def check_result(self, result):
        """Each tensor a converter returns must have the shape and dtype torch recorded."""
        results = list(result) if isinstance(result, (tuple, list)) else [result]
        metas = list(self.out) if isinstance(self.out, (tuple, list)) else [self.out]
        for i, (r, m) in enumerate(zip(results, metas)):
            if isinstance(r, _core.Tensor) and is_tensor_like(m):
                want_dtype = sinter_dtype_or_none(m.dtype)
                want_shape = tuple(static_shape(m, f"output {i}"))
                if tuple(r.shape) != want_shape or r.dtype != want_dtype:
                    raise InternalError(
                        f"output {i} was converted to {r.dtype.label} {list(r.shape)}, but torch "
                        f"computes {m.dtype} {list(want_shape)}: a bug in sinter's converter of {self.op}")


def bind_arguments(node) -> dict:
    """The node's arguments by the names of its op's schema, defaults filled in."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return {f"arg{i}": a for i, a in enumerate(node.args)} | dict(node.kwargs)
    bound = {}
    positional = list(node.args)
    for i, a in enumerate(schema.arguments):
        if i < len(positional) and not a.kwarg_only:
            bound[a.name] = positional[i]
        elif a.name in node.kwargs:
            bound[a.name] = node.kwargs[a.name]
        elif a.has_default_value():
            bound[a.name] = a.default_value
    return bound
