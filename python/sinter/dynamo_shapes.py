"""Symbolic shapes under torch.compile(backend="sinter"): a Dynamo graph traced with symbolic
sizes (``dynamic=True``, or a dimension Dynamo made dynamic after a recompile) is specialized per
concrete signature at call time, because a Sinter plan has static shapes.

Dynamo compiles such a graph once; the backend returns a ``PerShapeGraph`` for it. At each call
the signature of the arguments (every tensor's shape, strides, dtype and device; every integer or
float argument's value; the value of each 0-dim tensor the graph reads with ``.item()``, which is
how Dynamo passes a float it left unspecialized) selects a compiled function. A new signature traces
the Dynamo graph again with those concrete values (AOT autograd to ATen, the ``.item()`` reads
replaced by their values) and compiles its Sinter regions as for a static graph; plans of identical
regions are still shared through the backend's plan cache. After ``MAX_SIGNATURES`` signatures of
one graph, a further new signature runs the Dynamo graph in torch (eagerly), with one warning,
as Dynamo itself does past its recompile limit.
"""

from __future__ import annotations

import copy
import logging
from typing import Callable, Dict

from .torch_types import torch_module

torch = torch_module()
LOGGER = logging.getLogger("sinter")
MAX_SIGNATURES = 32


def has_symbolic_shapes(example_inputs) -> bool:
    """True when Dynamo traced any argument with a symbolic size, stride or value."""
    symbolic = (torch.SymInt, torch.SymFloat, torch.SymBool)
    for x in example_inputs:
        if isinstance(x, symbolic):
            return True
        if isinstance(x, torch.Tensor) and any(isinstance(d, symbolic) for d in (*x.shape, *x.stride())):
            return True
    return False


def _item_placeholders(gm) -> list:
    """The indices of the placeholders the graph reads only as Python scalars (``x.item()``)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    read_as_scalar = []
    for i, node in enumerate(placeholders):
        users = list(node.users)
        if users and all(u.op == "call_method" and u.target == "item" for u in users):
            read_as_scalar.append(i)
    return read_as_scalar


def _with_items_folded(gm, values: dict):
    """A copy of `gm` whose ``placeholder.item()`` nodes are replaced by the given Python values
    (placeholder index -> value); the placeholders stay, so the calling convention is unchanged."""
    folded = copy.deepcopy(gm)
    placeholders = [n for n in folded.graph.nodes if n.op == "placeholder"]
    for index, value in values.items():
        for item in list(placeholders[index].users):
            for user in list(item.users):
                user.args = torch.fx.node.map_arg(user.args, lambda n, item=item: value if n is item else n)
                user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda n, item=item: value if n is item else n)
            folded.graph.erase_node(item)
    folded.recompile()
    return folded


def _signature(args, scalar_inputs) -> tuple:
    key = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            key.append((tuple(a.shape), tuple(a.stride()), a.dtype, str(a.device),
                        a.item() if i in scalar_inputs else None))
        else:
            key.append((type(a).__name__, a))
    return tuple(key)


class PerShapeGraph:
    """A Dynamo graph with symbolic shapes, compiled by `compile_static` once per signature."""

    def __init__(self, gm, compile_static: Callable):
        self.gm = gm
        self.compile_static = compile_static  # (graph module, concrete example inputs) -> callable
        self.scalar_inputs = set(_item_placeholders(gm))
        self.compiled: Dict[tuple, Callable] = {}
        self.warned = False

    def __call__(self, *args):
        key = _signature(args, self.scalar_inputs)
        fn = self.compiled.get(key)
        if fn is None:
            if len(self.compiled) >= MAX_SIGNATURES:
                if not self.warned:
                    LOGGER.warning("sinter: a graph with symbolic shapes met more than %d signatures; "
                                   "new ones run in torch", MAX_SIGNATURES)
                    self.warned = True
                return self.gm(*args)
            values = {i: args[i].item() for i in self.scalar_inputs}
            gm = _with_items_folded(self.gm, values) if values else self.gm
            fn = self.compile_static(gm, list(args))
            self.compiled[key] = fn
        return fn(*args)
