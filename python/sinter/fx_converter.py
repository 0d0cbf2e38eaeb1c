"""An FX graph of ATen ops as a Sinter graph: the walk shared by ``from_torch`` (torch.export)
and the torch.compile backend (one partition of a Dynamo graph at a time).

``FxConverter`` visits the FX nodes in order and keeps, for each, its value:

- a Sinter tensor (``sinter.Tensor``) for what the graph computes at run time;
- a ``Folded`` constant: a real torch tensor computed here, at import time, because it depends
  on no run-time value (``torch.arange(8)``, a causal mask built with ``torch.ones(...).tril()``,
  a lifted constant). One that a Sinter op reads becomes a scalar constant when it has one
  element, else a weight input named after its node (``FxConverter.weights`` has its value);
- a Python value (ints, floats, lists), or a tuple of values for an op with several outputs
  (``None`` for an output Sinter does not compute).

(fx_values.py defines these values.) Each ATen op is converted by its entry in
``aten_ops.CONVERTERS``, which sees the node as an ``AtenNode`` (aten_node.py); an op without one raises
``UnsupportedError`` naming the op, the FX node and the source line that made it. Every converted
tensor is checked against the shape and dtype that torch recorded for the node
(``node.meta['val']``).
"""

from __future__ import annotations

import math
import operator
from typing import Callable, Dict, Optional

from . import _core
from .aten_node import AtenNode
from .aten_patterns import find_rope
from .errors import Error, InternalError, UnsupportedError
from .fx_values import (Folded, LazyInput, Placeholder, flatten, is_tensor_like, map_values, meta_value,
                        op_label, packet_name, static_shape)
from .graph_names import first_free, move_aside
from .torch_types import sinter_dtype, torch_module


# Ops that check what tracing assumed and compute nothing.
IGNORED = {"_assert_tensor_metadata", "_assert_async", "_assert_scalar", "sym_constrain_range",
           "sym_constrain_range_for_size"}
# Ops whose result depends on a tensor argument's shape and dtype only, not its values: computed
# at import time from a stand-in of that shape.
SHAPE_ONLY = {"zeros_like", "ones_like", "full_like", "empty_like", "new_zeros", "new_ones",
              "new_full", "new_empty", "sym_size", "sym_numel", "sym_stride"}


class FxConverter:
    """One conversion: an FX graph (or the nodes of one partition of it) into a new Sinter graph."""

    def __init__(self, name: str, placeholders: Dict[object, Placeholder], owner=None,
                 canonical: bool = False):
        """`canonical`: keep the builder's names for computed tensors and name folded constants
        const_0, const_1, ..., so that graphs of the same structure have the same JSON text."""
        from . import aten_ops  # the op table reads this module's helpers
        self.converters: Dict[str, Callable] = aten_ops.CONVERTERS
        self.torch = torch_module()
        self.g = _core.Graph(name)
        self.placeholders = placeholders
        self.owner = owner              # the GraphModule that get_attr nodes read
        self.canonical = canonical
        self.env: Dict[object, object] = {}
        self.weights: Dict[str, object] = {}  # name -> torch tensor of each weight input made
        self.claimed = set()            # tensor names given out on purpose
        # Inputs every reader of which reads through one permutation (a Linear's weight, `w.t()`):
        # made as the permuted strided view of the placeholder's memory, so no step copies them.
        # name -> the permutation; feed such an input as `tensor.permute(perm)` of the placeholder's value.
        self.input_permutations: Dict[str, list] = {}

    # -- the walk

    def run(self, graph, output_names: Optional[Callable[[int], str]] = None):
        """Converts every node of `graph` and marks what its output node returns as the Sinter
        graph's outputs, named by `output_names(i)` ("output" or "output_i" by default)."""
        nodes = list(graph.nodes)
        for node in nodes:
            if node.op == "placeholder":
                self._placeholder(node)
        ropes = find_rope(nodes)
        deferred = {n for m in ropes.values() for n in m.inner}  # converted only if a rope falls through
        for node in nodes:
            if node.op == "placeholder" or node in deferred:
                continue
            if node.op == "output":
                self._outputs(node, output_names)
            elif node in ropes:
                self.env[node] = self._rope(node, ropes[node])
            else:
                self.env[node] = self.convert(node)
        self.g.validate()
        return self.g

    def _placeholder(self, node):
        spec = self.placeholders.get(node)
        if spec is None:
            raise InternalError(f"FX placeholder '{node.name}' has no Placeholder entry")
        if spec.kind == "constant":
            self.env[node] = Folded(spec.value, spec.name)
            return
        value = meta_value(node)
        if not is_tensor_like(value):  # a Python number traced as a constant
            self.env[node] = value
            return
        if spec.kind == "input" and reads_data(node):
            self.env[node] = self._new_input(node, spec.name)
        else:
            self.env[node] = LazyInput(node, spec)

    def _new_input(self, node, name: str):
        value = meta_value(node)
        what = f"input '{name}'"
        dtype = sinter_dtype(value.dtype, what)
        self._claim(name)
        shape = static_shape(value, what)
        perm = read_permutation(node)
        if perm is None:
            return self.g.input(name, dtype, shape)
        row_major = [math.prod(shape[i + 1:]) for i in range(len(shape))]
        self.input_permutations[name] = perm
        return self.g.input(name, dtype, [shape[p] for p in perm], [row_major[p] for p in perm])

    def permute(self, t, perm):
        """`t` permuted by `perm`; an input made pre-permuted by `perm` is itself that view."""
        perm = list(perm)
        if t.is_input and self.input_permutations.get(t.name) == perm:
            return t
        if t.is_input and t.name in self.input_permutations:
            raise InternalError(f"input '{t.name}' was made permuted by {self.input_permutations[t.name]} "
                                f"and is read permuted by {perm}")
        return self.g.permute(t, perm)

    def _outputs(self, node, output_names):
        results = flatten(node.args[0])
        names = output_names or (lambda i: "output" if len(results) == 1 else f"output_{i}")
        for i, result in enumerate(results):
            name = names(i)
            value = self.env.get(result) if hasattr(result, "op") else result
            if isinstance(value, (Folded, LazyInput)):
                value = self.tensor(value, f"graph output {i}")
            if not isinstance(value, _core.Tensor):
                raise UnsupportedError(f"graph output {i} ('{getattr(result, 'name', result)}') is "
                                       f"{type(value).__name__} {value!r}; a Sinter graph returns tensors only")
            if value.is_input or value in self.g.outputs:
                value = self.g.identity(value)
            self._claim(name)
            self.g.output(value, name)

    def claimed_inputs(self):
        return {t.name for t in self.g.inputs}

    # -- one node

    def convert(self, node):
        """The value of one call_function (or get_attr) node."""
        if node.op == "get_attr":
            return Folded(_attribute(self.owner, node.target), node.name)
        if node.op != "call_function":
            raise UnsupportedError(f"FX node '{node.name}' is a {node.op} node; the importer takes "
                                   "call_function nodes of ATen ops")
        ctx = AtenNode(self, node)
        try:
            return self._call(ctx)
        except Error as e:
            raise type(e)(f"{ctx.where}: {e.message}") from e

    def _call(self, ctx):
        node, name = ctx.node, packet_name(ctx.node.target)
        if name in IGNORED:
            return None
        if node.target is operator.getitem:
            return self._getitem(ctx)
        if self._can_fold(node):
            return self._fold(ctx)
        if name in SHAPE_ONLY:
            return self._fold(ctx, stand_ins=True)
        converter = self.converters.get(name)
        if converter is None or not hasattr(node.target, "_schema"):
            raise UnsupportedError(f"Sinter has no equivalent of the aten op {ctx.op}")
        ctx.check_output_dtypes()
        result = converter(ctx)
        ctx.check_result(result)
        self._name_results(node, result)
        return result

    def _rope(self, root, match):
        """Sinter's rope for a matched x * cos + rotate_half(x) * sin when cos and sin are constants
        whose halves repeat; otherwise the matched nodes converted one by one."""
        torch = self.torch
        cos, sin = self.env.get(match.cos), self.env.get(match.sin)
        if isinstance(cos, Folded) and isinstance(sin, Folded):
            half = int(meta_value(match.x).shape[-1]) // 2
            c, s = cos.tensor, sin.tensor
            if (c.dim() >= 1 and s.dim() >= 1 and c.shape[-1] == 2 * half and s.shape[-1] == 2 * half
                    and torch.equal(c[..., :half], c[..., half:]) and torch.equal(s[..., :half], s[..., half:])):
                x = self.tensor(self.env[match.x], "the rotary embedding's input")
                ctx = AtenNode(self, root)
                try:
                    tables = [self.tensor(Folded(t[..., :half].contiguous(), f"{f.name}_half"), "a rotary table",
                                          x.dtype) for t, f in ((c, cos), (s, sin))]
                    result = self.g.rope(x, tables[0], tables[1])
                    ctx.check_result(result)
                except Error as e:
                    raise type(e)(f"{ctx.where}: {e.message}") from e
                self._name_results(root, result)
                return result
        for node in match.inner:
            self.env[node] = self.convert(node)
        return self.convert(root)

    def _getitem(self, ctx):
        container, index = ctx.node.args
        value = self.env[container] if hasattr(container, "op") else container
        if isinstance(value, Folded):
            return Folded(value.tensor[index], ctx.node.name)
        if not isinstance(value, (tuple, list)):
            raise UnsupportedError(f"indexes {type(value).__name__} {value!r}; the importer indexes "
                                   "the outputs of multi-output ops only")
        result = value[index]
        if result is None:
            raise UnsupportedError(f"reads output {index} of '{container.name}' "
                                   f"({op_label(container.target)}), which Sinter does not compute")
        return result

    def _can_fold(self, node) -> bool:
        """Whether the node reads no run-time value (and is deterministic): computed now."""
        tags = getattr(node.target, "tags", ())
        if self.torch.Tag.nondeterministic_seeded in tags:
            return False
        values = [self.env[a] if hasattr(a, "op") else a for a in flatten((node.args, node.kwargs))]
        return not any(isinstance(v, (_core.Tensor, LazyInput)) for v in values)

    def _fold(self, ctx, stand_ins: bool = False):
        """Runs the op on real CPU tensors: folded constants, or (stand_ins) zeros of each tensor
        argument's shape for ops that read only shapes."""
        torch = self.torch

        def real(a):
            if not hasattr(a, "op"):
                return a
            v = self.env[a]
            if isinstance(v, Folded):
                return v.tensor
            if isinstance(v, (_core.Tensor, LazyInput)):
                m = meta_value(a)
                return torch.zeros(static_shape(m, f"'{a.name}'"), dtype=m.dtype)
            return v

        args = map_values(ctx.node.args, real)
        kwargs = {k: map_values(v, real) for k, v in ctx.node.kwargs.items()}
        if "device" in kwargs:
            kwargs["device"] = torch.device("cpu")
        result = ctx.node.target(*args, **kwargs)
        return map_values(result, lambda r: Folded(r, ctx.node.name) if isinstance(r, torch.Tensor) else r)

    def _name_results(self, node, result):
        if self.canonical:
            return
        tensors = [r for r in (result if isinstance(result, (tuple, list)) else [result])
                   if isinstance(r, _core.Tensor)]
        for i, t in enumerate(tensors):
            self.name_tensor(t, node.name if i == 0 else f"{node.name}.{i}")

    # -- values

    def value_of(self, arg):
        """An argument's value: the node's value for an FX node, the argument itself otherwise."""
        if hasattr(arg, "op"):
            return self.env[arg]
        return arg

    def tensor(self, value, what: str, dtype: Optional["_core.DType"] = None):
        """A Sinter tensor for an argument's value (a tensor, a Folded constant, a lazy weight, or a
        Python number when `dtype` is given), cast to `dtype` when given."""
        if isinstance(value, LazyInput):
            value = self._weight(value)
        if isinstance(value, Folded):
            if dtype is not None and value.tensor.numel() == 1:
                return self._scalar_constant(value.tensor, dtype)
            value = self._materialize(value, what)
        elif isinstance(value, (bool, int, float)) and not isinstance(value, _core.Tensor):
            if dtype is None:
                raise InternalError(f"{what} is the number {value!r}, but no dtype was given for it")
            if isinstance(value, float) and math.isnan(value) and not dtype.is_float:
                raise UnsupportedError(f"{what} is NaN for a {dtype.label} tensor")
            return self.g.scalar(float(value), dtype)
        if not isinstance(value, _core.Tensor):
            raise UnsupportedError(f"{what} is {type(value).__name__} {value!r}; expected a tensor")
        if dtype is not None and value.dtype != dtype:
            value = self.g.cast(value, dtype)
        return value

    def _weight(self, lazy):
        if lazy.handle is None:
            spec = lazy.spec
            lazy.handle = self._new_input(lazy.node, spec.name)
            if spec.kind == "weight":
                perm = self.input_permutations.get(spec.name)
                self.weights[spec.name] = spec.value if perm is None else spec.value.permute(perm)
        return lazy.handle

    def _materialize(self, folded: Folded, what: str):
        if folded.handle is not None:
            return folded.handle
        t = folded.tensor
        dtype = sinter_dtype(t.dtype, f"{what} (the constant '{folded.name}')")
        if t.numel() == 1:
            handle = self._scalar_constant(t, dtype)
        elif t.numel() == 0:
            raise UnsupportedError(f"{what} is the empty constant '{folded.name}'; Sinter's dims are >= 1")
        else:
            name = f"const_{len(self.weights)}" if self.canonical else self._free_name(folded.name)
            self._claim(name)
            handle = self.g.input(name, dtype, list(t.shape))
            self.weights[name] = t.detach().contiguous()
        folded.handle = handle
        return handle

    def _scalar_constant(self, t, dtype):
        """A one-element constant tensor as a Sinter scalar constant of its shape."""
        handle = self.g.scalar(float(t.reshape(()).item()), dtype)
        return self.g.reshape(handle, list(t.shape)) if t.dim() else handle

    def _free_name(self, base: str) -> str:
        return first_free(base, lambda n: n in self.weights or n in self.claimed_inputs())

    # -- names

    def _claim(self, name: str):
        """Frees `name`: a tensor the builder named so is renamed out of the way."""
        holder = self.g.find_tensor(name)
        if holder is not None and holder.is_input:
            raise UnsupportedError(f"two graph inputs would be named '{name}'")
        move_aside(self.g, name)
        self.claimed.add(name)

    def name_tensor(self, t, name: str):
        """Gives a computed tensor its FX node's name, unless it already has a name given on purpose."""
        if t.is_input or t.name in self.claimed:
            return
        if self.g.find_tensor(name) is not None and self.g.find_tensor(name).is_input:
            return
        self._claim(name)
        self.g.rename(t, name)


def _permutation_read_by(user, node):
    """The permutation through which `user` reads `node` (a rank-2 tensor), or None: `t`,
    `transpose`, `permute` of it, or a Linear reading it as its weight in the output's dtype."""
    value = meta_value(node)
    if user.op != "call_function" or not is_tensor_like(value) or value.dim() != 2:
        return None
    name, args = packet_name(user.target), list(user.args)
    if not args or args[0] is not node and name != "linear":
        return None
    if name in ("t", "numpy_T"):
        return [1, 0]
    if name == "transpose" and len(args) == 3 and sorted(a % 2 for a in args[1:]) == [0, 1]:
        return [1, 0]
    if name == "permute" and len(args) == 2 and [d % 2 for d in args[1]] == [1, 0]:
        return [1, 0]
    if name == "linear" and len(args) >= 2 and args[1] is node and args[0] is not node \
            and node not in args[2:] and node not in user.kwargs.values():
        out = meta_value(user)
        if is_tensor_like(out) and out.dtype == value.dtype:
            return [1, 0]
    return None


def read_permutation(node):
    """The permutation every reader of `node` reads it through, or None (see _permutation_read_by)."""
    users = [u for u in node.users if packet_name(u.target) not in IGNORED]
    perms = [_permutation_read_by(u, node) for u in users]
    if not perms or any(p is None for p in perms) or any(p != perms[0] for p in perms):
        return None
    return perms[0]


def reads_data(node) -> bool:
    """Whether some user of `node` reads its values (not only its shape, not only to check it)."""
    return any(packet_name(u.target) not in IGNORED | SHAPE_ONLY for u in node.users
               if u.op in ("call_function", "output"))


def _attribute(owner, target: str):
    value = owner
    for part in target.split("."):
        value = getattr(value, part)
    return value
