"""Importing PyTorch modules as Sinter graphs, through torch.export.

    import sinter, torch

    graph = sinter.from_torch(model, (x,))                  # a validated sinter.Graph
    graph = sinter.from_torch(model, (x,), dtype=sinter.bf16)

    imported = sinter.import_torch(model, (x,))             # the graph and the weights' values
    out = sinter.run_reference(imported.graph, {"x": x.numpy(), **imported.weights_numpy()})

``from_torch(module, example_inputs, *, dtype=None, name=None) -> Graph`` exports ``module``
with ``torch.export.export(module, example_inputs)`` (``example_inputs`` a tuple of tensors, or
one tensor), decomposes what Sinter has no op for into ATen's core ops (``run_decompositions``
with torch's default table, less the ops Sinter imports whole: linear, layer_norm, rms_norm,
scaled_dot_product_attention, gelu, silu, conv2d, ...) and converts the ATen graph
(fx_converter.py; the ops: aten_ops.py). ``import_torch`` takes the same arguments and returns a
``TorchImport``: ``.graph`` and ``.weights``, a dict from input name to torch tensor (on the CPU)
holding the value of every graph input that comes from the module itself.

``dtype`` (a torch dtype, a ``sinter.DType`` or a name such as "bf16") converts a copy of the
module's floating-point parameters and buffers and the floating-point example inputs to it before
exporting, so the graph computes in that dtype; the module itself is not changed.

The Sinter graph's inputs, in order:

- the module's tensor inputs (the arguments of ``forward``), by their names in ``forward``'s
  signature (one that is never read as data is left out: a Sinter graph has no unread inputs);
- then the weights, in the order the nodes first read them: each parameter and buffer by its
  fully qualified name (``layers.0.attn.q_proj.weight``), and each constant that torch computes
  from no input (``torch.arange``, a mask from ``torch.ones(...).tril()``, a tensor constant in
  ``forward``) and a Sinter op reads, by its FX node's name; one-element constants become scalar
  constants of the graph instead.

The outputs are what ``forward`` returns, flattened in order: ``output`` when it is one tensor,
else ``output_0``, ``output_1``, ...; other tensors keep the names of the FX nodes that compute
them. Shapes are the example inputs' shapes: Sinter graphs are static.

An ATen op Sinter cannot compute raises ``sinter.UnsupportedError`` naming the op, the FX node and
the source line that made it (``... at model.py:12: return torch.cumsum(x, 0)``); so do dtypes
Sinter lacks (float64, int8, ...), training-mode dropout and batch norm (call ``module.eval()``),
and a module that mutates its buffers. torch itself is imported only when an import runs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np

from . import _core
from .errors import UnsupportedError
from .fx_converter import FxConverter
from .fx_values import Placeholder
from .torch_types import as_torch_dtype, to_numpy, torch_module

# ATen ops that Sinter imports as they are, kept whole by run_decompositions.
_KEPT_WHOLE = [
    "linear", "matmul", "layer_norm", "rms_norm", "scaled_dot_product_attention", "gelu", "silu",
    "hardswish", "hardsigmoid", "hardtanh", "leaky_relu", "conv1d", "conv2d", "softmax", "log_softmax",
    "batch_norm", "adaptive_avg_pool2d", "square", "rsub", "clamp_min", "clamp_max", "var", "std",
    "flatten", "unflatten", "stack", "expand_as", "type_as", "dropout", "_safe_softmax",
]


@dataclass(frozen=True)
class TorchImport:
    """What ``import_torch`` returns: the graph and the values of its weight inputs."""

    graph: "_core.Graph"
    weights: Dict[str, object]  # name -> torch tensor (CPU)

    def weights_numpy(self) -> Dict[str, np.ndarray]:
        """The weights as arrays ``run_reference`` takes (16-bit and fp8 floats as float32)."""
        return {name: to_numpy(t) for name, t in self.weights.items()}


def from_torch(module, example_inputs, *, dtype=None, name: Optional[str] = None) -> "_core.Graph":
    """The Sinter graph of a torch.nn.Module, traced by torch.export on ``example_inputs``.
    See the module's documentation."""
    return import_torch(module, example_inputs, dtype=dtype, name=name).graph


def import_torch(module, example_inputs, *, dtype=None, name: Optional[str] = None) -> TorchImport:
    """``from_torch``'s graph and ``weights``: the value of every weight input, by name."""
    torch = torch_module()
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, (tuple, list)):
        raise TypeError(f"from_torch: example_inputs must be a tuple of tensors; found {type(example_inputs).__name__}")
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"from_torch: expected a torch.nn.Module; found {type(module).__name__}")
    if dtype is not None:
        module, example_inputs = _converted(module, tuple(example_inputs), as_torch_dtype(dtype))
    program = export_program(module, tuple(example_inputs))
    return _import_program(program, name or type(module).__name__)


def export_program(module, example_inputs):
    """torch.export's program of the module, decomposed to core ATen except the ops Sinter keeps whole."""
    torch = torch_module()
    program = torch.export.export(module, example_inputs)
    table = torch.export.default_decompositions()
    for op_name in _KEPT_WHOLE:
        packet = getattr(torch.ops.aten, op_name, None)
        for overload in (packet.overloads() if packet is not None else []):
            table.pop(getattr(packet, overload), None)
    return program.run_decompositions(table)


def _converted(module, example_inputs, dtype):
    torch = torch_module()
    module = copy.deepcopy(module).to(dtype)
    inputs = tuple(x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                   for x in example_inputs)
    return module, inputs


def _import_program(program, name: str) -> TorchImport:
    from torch.export.graph_signature import InputKind, OutputKind

    signature = program.graph_signature
    mutated = [s.target for s in signature.output_specs if s.kind != OutputKind.USER_OUTPUT]
    if mutated:
        raise UnsupportedError(f"the module mutates {mutated} when it runs (a training-mode BatchNorm "
                               "updates its statistics: call module.eval() before importing)")
    state = dict(program.state_dict)
    state.update(program.constants)
    nodes = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    placeholders = {}
    for spec in signature.input_specs:
        node = nodes[spec.arg.name]
        if spec.kind == InputKind.USER_INPUT:
            placeholders[node] = Placeholder(spec.arg.name, "input")
        elif spec.kind == InputKind.BUFFER and spec.persistent is False:
            # a buffer outside the state dict (rotary inverse frequencies, a cached mask) is
            # something the module derives itself, not a weight a user loads: folded
            placeholders[node] = Placeholder(spec.target, "constant", _cpu(state[spec.target]))
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            placeholders[node] = Placeholder(spec.target, "weight", _cpu(state[spec.target]))
        elif spec.kind in (InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ):
            value = state.get(spec.target)
            if not hasattr(value, "dtype"):
                raise UnsupportedError(f"the module's constant '{spec.target}' is a {type(value).__name__}; "
                                       "Sinter takes tensors only")
            placeholders[node] = Placeholder(spec.target, "constant", _cpu(value))
        else:
            raise UnsupportedError(f"the exported program's input '{spec.arg.name}' is a {spec.kind.name}, "
                                   "which the importer does not take")
    user_names = [s.arg.name for s in signature.output_specs]
    converter = FxConverter(name, placeholders, owner=program.graph_module)
    outputs = len(user_names)
    graph = converter.run(program.graph, lambda i: "output" if outputs == 1 else f"output_{i}")
    return TorchImport(graph, converter.weights)


def _cpu(t):
    return t.detach().to("cpu")
