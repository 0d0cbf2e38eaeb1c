"""Importing ONNX models as Sinter graphs.

    import sinter

    graph = sinter.from_onnx("model.onnx")              # a validated sinter.Graph

    model = sinter.import_onnx("model.onnx")            # the graph and the weights' values
    out = sinter.run_reference(model.graph, {"x": x, **model.initializers})

``from_onnx(path_or_model, *, name=None, input_shapes=None) -> Graph`` takes a path or an
``onnx.ModelProto`` of default-domain opset 17 to 23. ``import_onnx`` takes the same arguments and
returns an ``OnnxImport``: ``.graph``, the same Graph, and ``.initializers``, a dict from input name
to numpy array holding the value of every graph input that comes from the model itself.

The Sinter graph's inputs, in order:

- the ONNX graph inputs that are not initializers, by their ONNX names (one that no node needed
  for the outputs reads is left out: a Sinter graph has no unread inputs);
- then the weights, in the order the nodes first read them: every initializer and every value of
  a ``Constant`` node with more than one element that a node reads as data, named after the ONNX
  tensor. Weights are inputs in Sinter; ``OnnxImport.initializers`` has their values.

A constant of one element becomes a scalar ``constant`` node of the graph (reshaped to its ONNX
shape when that is not rank 0) instead of an input. Constants read as shapes, axes or indices
(``Reshape``'s shape, ``Slice``'s starts, ``Gather``'s indices, ...) are read at import time and
are not inputs. The outputs are the ONNX graph outputs, in order, by their ONNX names; other
tensors keep their ONNX names where a node computes them.

Shapes are static in Sinter: an input with a symbolic dimension needs ``input_shapes={"x": [1,
128]}``. Nodes that no graph output depends on are not imported.

dtypes: float32, float16, bfloat16, float8e4m3fn, float8e5m2, int32, int64 and bool map to f32,
f16, bf16, fp8_e4m3, fp8_e5m2, i32, i64 and bool; any other raises ``UnsupportedError`` naming the
tensor.

The ops mapped (see ``CONVERTERS``): Abs, Add, And, Attention, Cast, CastLike, Clip, Concat,
Constant, Conv (1-D and 2-D, NCHW, through permutes to Sinter's NHWC), Div, Dropout (inference),
Equal, Erf (only in the GELU pattern ``x * 0.5 * (1 + Erf(x / sqrt(2)))``; the rotary pattern
``x * cos + Concat(-x[..., D/2:], x[..., :D/2]) * sin`` with constant tables whose halves repeat
becomes one rope), Exp, Expand, Flatten, Gather
(runtime indices: gather; constant indices: slices), Gelu, Gemm, GlobalAveragePool, GlobalMaxPool, Greater, GreaterOrEqual,
Identity, LayerNormalization, Less, LessOrEqual, Log, MatMul, Max, Min, Mul, Neg, Not, Or, Pow,
RMSNormalization, Reciprocal, ReduceMax, ReduceMean, ReduceMin, ReduceSum, Relu, Reshape, Sigmoid
(``x * Sigmoid(x)`` becomes silu), Slice, Softmax, Split, Sqrt, Squeeze, Sub, Sum, Tanh, Transpose,
Unsqueeze, Where, Xor. Any other op, an attribute value Sinter cannot express, or an attribute the
importer does not know raises ``UnsupportedError`` naming the ONNX op, the node's name and index
and what is unsupported. A malformed model raises ``ParseError`` (an undefined tensor, a missing
attribute, an output whose declared type differs from the computed one) or, where shapes or dtypes
do not fit an op, the builder's ``InvalidGraphError``; either names the node as well.

``initializers`` holds the arrays ``onnx.numpy_helper.to_array`` gives (bfloat16 ones as
``ml_dtypes.bfloat16``), which ``run_reference`` takes as they are.

``onnx`` is an optional dependency (``pip install onnx``, or the package's ``onnx`` extra): it is
imported only when an import runs.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from . import _core
from .aten_layout import broadcast_to
from .constant_gather import gather_constant
from .graph_names import first_free, move_aside
from .errors import Error, ParseError, UnsupportedError

MIN_OPSET = 17
MAX_OPSET = 23

_DTYPE_NAMES = {  # ONNX TensorProto.DataType name -> Sinter dtype
    "FLOAT": _core.DType.f32,
    "FLOAT16": _core.DType.f16,
    "BFLOAT16": _core.DType.bf16,
    "FLOAT8E4M3FN": _core.DType.fp8_e4m3,
    "FLOAT8E5M2": _core.DType.fp8_e5m2,
    "INT32": _core.DType.i32,
    "INT64": _core.DType.i64,
    "BOOL": _core.DType.boolean,
}


def _onnx():
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401  (a submodule the importer uses)
    except ImportError as e:
        raise ImportError("sinter.from_onnx needs the onnx package: pip install onnx "
                          "(or install sinter with its onnx extra: pip install 'sinter[onnx]')") from e
    return onnx


@dataclass(frozen=True)
class OnnxImport:
    """What ``import_onnx`` returns: the graph and the values of its weight inputs."""

    graph: "_core.Graph"
    initializers: Dict[str, np.ndarray]


def from_onnx(model, *, name: Optional[str] = None,
              input_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> "_core.Graph":
    """The Sinter graph of an ONNX model (a path or an ``onnx.ModelProto``), validated.

    ``name`` names the graph (default: the ONNX graph's name); ``input_shapes`` gives the shape of
    inputs whose ONNX shape has symbolic dimensions. See the module's documentation.
    """
    return _Importer(_load(model), name, input_shapes).run()


def import_onnx(model, *, name: Optional[str] = None,
                input_shapes: Optional[Mapping[str, Sequence[int]]] = None) -> OnnxImport:
    """``from_onnx``'s graph and ``initializers``: the value of every weight input, by name."""
    importer = _Importer(_load(model), name, input_shapes)
    graph = importer.run()
    values = {n: importer.const_array(n).T if n in importer.transposed else importer.const_array(n)
              for n in importer.weight_names}
    return OnnxImport(graph, values)


def _load(model):
    onnx = _onnx()
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (str, os.PathLike)):
        return onnx.load(model)
    raise TypeError(f"from_onnx: expected a path or an onnx.ModelProto; found {type(model).__name__}")


# ---- the importer ------------------------------------------------------------------------------

class _Importer:
    """One import: walks the ONNX graph's nodes in order, building the Sinter graph."""

    def __init__(self, model, name, input_shapes):
        self.onnx = _onnx()
        self.model = model
        self.onnx_graph = model.graph
        self._ranks: Optional[Dict[str, int]] = None  # ONNX shape inference's ranks, when first asked
        self.input_shapes = dict(input_shapes or {})
        _default_opset(model)
        self.g = _core.Graph(name or model.graph.name or "graph")
        self.values: Dict[str, object] = {}   # ONNX name -> Sinter tensor
        self.consts: Dict[str, object] = {}   # ONNX name -> TensorProto of a constant
        self.arrays: Dict[str, np.ndarray] = {}  # constants' values, converted when first read
        self.weight_names: List[str] = []     # constants made graph inputs, in order
        self.transposed = set()               # of those, the ones made as transposed views
        self.claimed = set()                  # Sinter tensor names the importer has given out
        self.fused: Dict[int, Callable] = {}  # node index -> the converter of a matched pattern
        self.skipped = set()                  # node indices a matched pattern covers

    def run(self):
        graph = self.onnx_graph
        for init in graph.initializer:
            self.consts[init.name] = init
        for init in graph.sparse_initializer:
            raise UnsupportedError(f"ONNX sparse initializer '{init.values.name}': Sinter has no sparse tensors")
        self.output_names = [o.name for o in graph.output]
        if not self.output_names:
            raise ParseError("the ONNX graph has no outputs")
        if len(set(self.output_names)) != len(self.output_names):
            raise ParseError(f"the ONNX graph lists an output twice: {self.output_names}")
        onnx_inputs = {i.name for i in graph.input if i.name not in self.consts}
        unknown = sorted(set(self.input_shapes) - onnx_inputs)
        if unknown:
            raise ParseError(f"input_shapes names {unknown}, which are not ONNX graph inputs")
        self.kept = self._live_nodes()
        self._index_uses()
        self._add_graph_inputs()
        _Patterns(self).match()
        for index in self.kept:
            if index not in self.skipped:
                self._convert(index, graph.node[index])
        self._add_outputs()
        self.g.validate()
        return self.g

    # -- what to import

    def _live_nodes(self) -> List[int]:
        """Indices of the nodes some graph output depends on, in order."""
        needed = set(self.output_names)
        live = []
        for index in range(len(self.onnx_graph.node) - 1, -1, -1):
            node = self.onnx_graph.node[index]
            if any(o in needed for o in node.output if o):
                live.append(index)
                needed.update(i for i in node.input if i)
        return live[::-1]

    def _index_uses(self):
        """producer: ONNX name -> node index; consumers: name -> indices of live nodes reading it."""
        self.producer, self.consumers = {}, {}
        for index in self.kept:
            node = self.onnx_graph.node[index]
            for name in node.input:
                if name:
                    self.consumers.setdefault(name, []).append(index)
            for name in node.output:
                if name:
                    if name in self.producer or name in self.consts:
                        raise ParseError(f"ONNX tensor '{name}' is defined twice")
                    self.producer[name] = index

    def _add_graph_inputs(self):
        for value_info in self.onnx_graph.input:
            name = value_info.name
            if name in self.consts or (name not in self.consumers and name not in self.output_names):
                continue
            dtype, dims = self._input_type(value_info)
            self.values[name] = self.g.input(name, dtype, dims)
            self.claimed.add(name)

    def _input_type(self, value_info):
        name = value_info.name
        if not value_info.type.HasField("tensor_type"):
            raise UnsupportedError(f"ONNX graph input '{name}' is not a tensor; Sinter takes tensors only")
        tensor_type = value_info.type.tensor_type
        dtype = self.dtype(tensor_type.elem_type, f"graph input '{name}'")
        onnx_dims = None
        if tensor_type.HasField("shape"):
            onnx_dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                         for d in tensor_type.shape.dim]
        if name in self.input_shapes:
            dims = [int(d) for d in self.input_shapes[name]]
            if onnx_dims is not None and (len(dims) != len(onnx_dims) or any(
                    isinstance(o, int) and o != d for o, d in zip(onnx_dims, dims))):
                raise ParseError(f"input_shapes gives ONNX graph input '{name}' the shape {dims}, "
                                 f"which does not fit its ONNX shape {onnx_dims}")
            return dtype, dims
        if onnx_dims is None:
            raise UnsupportedError(f"ONNX graph input '{name}' has no shape; Sinter needs static "
                                   f"shapes: pass input_shapes={{'{name}': [...]}}")
        symbolic = [d for d in onnx_dims if not isinstance(d, int)]
        if symbolic:
            raise UnsupportedError(
                f"ONNX graph input '{name}' has the shape {onnx_dims} with symbolic dimensions "
                f"{symbolic}; Sinter needs static shapes: pass input_shapes={{'{name}': [...]}}")
        return dtype, onnx_dims

    def dtype(self, elem_type: int, what: str) -> "_core.DType":
        try:
            type_name = self.onnx.TensorProto.DataType.Name(elem_type)
        except ValueError:
            type_name = f"#{elem_type}"
        if type_name not in _DTYPE_NAMES:
            raise UnsupportedError(f"{what} has the ONNX type {type_name}; Sinter takes "
                                   "float32, float16, bfloat16, float8e4m3fn, float8e5m2, int32, int64 and bool")
        return _DTYPE_NAMES[type_name]

    # -- values

    def const_array(self, name: str) -> np.ndarray:
        if name not in self.arrays:
            self.arrays[name] = self.onnx.numpy_helper.to_array(self.consts[name])
        return self.arrays[name]

    def tensor(self, name: str):
        """The Sinter tensor of an ONNX value, making constants graph inputs or scalars on first use."""
        if name in self.values:
            return self.values[name]
        if name not in self.consts:
            raise ParseError(f"reads '{name}', which no graph input, initializer or earlier node defines")
        proto = self.consts[name]
        dtype = self.dtype(proto.data_type, f"constant '{name}'")
        dims = list(proto.dims)
        if math.prod(dims) == 1:
            value = self.const_array(name).reshape(()).astype(np.float64)
            t = self.g.scalar(float(value), dtype)
            if dims:
                t = self.g.reshape(t, dims)
        else:
            self.claim(name)
            t = self.g.input(name, dtype, dims)
            self.weight_names.append(name)
        self.values[name] = t
        return t

    def transposed_weight(self, name: str):
        """For a matrix initializer [N, K] that one node reads, transposed, and nothing else: a graph
        input [K, N] with strides [1, K] over the initializer's own values (no permute step copies it
        on every run); None where that does not hold."""
        if name in self.values or name not in self.consts or len(self.consumers.get(name, [])) != 1 \
                or name in self.output_names:
            return None
        proto = self.consts[name]
        dims = list(proto.dims)
        if len(dims) != 2 or math.prod(dims) == 1:
            return None
        self.claim(name)
        t = self.g.input(name, self.dtype(proto.data_type, f"constant '{name}'"), [dims[1], dims[0]], [1, dims[1]])
        self.weight_names.append(name)
        self.transposed.add(name)
        self.values[name] = t
        return t

    def rank_of(self, name: str) -> Optional[int]:
        """The rank of an ONNX value: a graph input's or constant's, else ONNX shape inference's
        (run once, when first asked); None where neither knows it."""
        if name in self.values:
            return self.values[name].ndim
        if name in self.consts:
            return len(self.consts[name].dims)
        if self._ranks is None:
            self._ranks = {}
            try:
                inferred = self.onnx.shape_inference.infer_shapes(self.model)
            except Exception:  # noqa: BLE001  (inference is a hint here; no rank means no pattern)
                inferred = self.model
            for info in list(inferred.graph.value_info) + list(inferred.graph.output):
                if info.type.HasField("tensor_type") and info.type.tensor_type.HasField("shape"):
                    self._ranks[info.name] = len(info.type.tensor_type.shape.dim)
        return self._ranks.get(name)

    def add_constant(self, name: str, array: np.ndarray):
        """A weight input holding `array`, named `name` (or `name_1`, ... when taken)."""
        name = first_free(name, lambda n: n in self.consts or n in self.values or self.g.find_tensor(n) is not None)
        self.consts[name] = self.onnx.numpy_helper.from_array(array, name)
        return self.tensor(name)

    def claim(self, name: str):
        """Frees `name` for the importer: a tensor the builder named so is renamed out of the way."""
        move_aside(self.g, name)
        self.claimed.add(name)

    def name_tensor(self, t, name: str):
        """Gives a tensor a node computed the ONNX name of its value, unless it already has one."""
        if t.name in self.claimed or t.is_input:
            return
        if t.name != name:
            self.claim(name)
            self.g.rename(t, name)
        self.claimed.add(name)

    # -- nodes

    def _convert(self, index: int, node):
        ctx = _Node(self, index, node)
        try:
            if index in self.fused:
                results = self.fused[index](ctx)
            else:
                if node.domain not in ("", "ai.onnx"):
                    raise UnsupportedError(
                        f"Sinter has no equivalent of the ONNX op {node.domain}.{node.op_type}")
                converter = CONVERTERS.get(node.op_type)
                if converter is None:
                    raise UnsupportedError(f"Sinter has no equivalent of the ONNX op {node.op_type}")
                results = converter(ctx)
                ctx.check_attributes()
            self._store(ctx, results)
        except Error as e:
            raise type(e)(f"{ctx.where}: {e.message}") from e

    def _store(self, ctx, results):
        if not isinstance(results, (list, tuple)):
            results = [results]
        for i, name in enumerate(ctx.node.output):
            if not name:
                continue
            result = results[i] if i < len(results) else None
            if result is None:
                if name in self.consumers or name in self.output_names:
                    raise UnsupportedError(f"output {i} '{name}' is read, but Sinter cannot compute it")
            elif isinstance(result, self.onnx.TensorProto):
                self.consts[name] = result
            else:
                self.values[name] = result
                self.name_tensor(result, name)

    def _add_outputs(self):
        for value_info in self.onnx_graph.output:
            name = value_info.name
            if name not in self.values and name not in self.consts:
                raise ParseError(f"ONNX graph output '{name}' is computed by no node")
            t = self.tensor(name)
            self._check_declared_type(value_info, t)
            if t.is_input or t.name != name or t in self.g.outputs:
                holder = self.g.find_tensor(name)
                if holder is not None and holder.is_input:
                    raise UnsupportedError(
                        f"ONNX graph output '{name}' is a graph input or a weight; a Sinter graph "
                        "output must be computed by a node")
                t = self.g.identity(t)
                self.claim(name)
            self.g.output(t, name)
            self.claimed.add(name)


    def _check_declared_type(self, value_info, t):
        """A graph output's ONNX type, where the model declares it, must be what Sinter computes."""
        if not value_info.type.HasField("tensor_type"):
            return
        tensor_type = value_info.type.tensor_type
        declared_dtype = tensor_type.elem_type and self.dtype(tensor_type.elem_type,
                                                              f"graph output '{value_info.name}'")
        fits = not declared_dtype or declared_dtype == t.dtype
        if tensor_type.HasField("shape"):
            dims = tensor_type.shape.dim
            fits = fits and len(dims) == t.ndim and all(
                not d.HasField("dim_value") or d.dim_value == n for d, n in zip(dims, t.shape))
        if not fits:
            declared = self.onnx.helper.printable_type(value_info.type)
            raise ParseError(f"ONNX graph output '{value_info.name}' is declared as {declared}, but the "
                             f"model computes {t.dtype.label} {list(t.shape)}")


def _default_opset(model) -> int:
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise ParseError("the ONNX model imports no default-domain opset")
    version = versions[0]
    if not MIN_OPSET <= version <= MAX_OPSET:
        raise UnsupportedError(
            f"the ONNX model uses opset {version}; from_onnx reads opsets {MIN_OPSET} to {MAX_OPSET} "
            f"(convert it with onnx.version_converter.convert_version(model, {MAX_OPSET}))")
    return version


class _Node:
    """One ONNX node as a converter sees it: its inputs as Sinter tensors or constants, its
    attributes, and the Sinter graph to build on."""

    def __init__(self, importer: _Importer, index: int, node):
        self.imp = importer
        self.g = importer.g
        self.index = index
        self.node = node
        self.op = node.op_type
        self.attrs = {a.name: a for a in node.attribute}
        self.read_attrs = set()
        self.where = f"ONNX node #{index} '{node.name}' ({node.op_type})" if node.name else \
            f"ONNX node #{index} ({node.op_type})"

    # inputs
    def has(self, i: int) -> bool:
        return i < len(self.node.input) and self.node.input[i] != ""

    def input(self, i: int):
        if not self.has(i):
            raise ParseError(f"input {i} is missing")
        return self.imp.tensor(self.node.input[i])

    def inputs(self) -> list:
        return [self.input(i) for i in range(len(self.node.input)) if self.has(i)]

    def is_const(self, i: int) -> bool:
        return self.has(i) and self.node.input[i] in self.imp.consts

    def const(self, i: int, what: str) -> np.ndarray:
        """The value of input i, which must be a constant (an initializer or a Constant node)."""
        if not self.has(i):
            raise ParseError(f"input {i} ({what}) is missing")
        name = self.node.input[i]
        if name not in self.imp.consts:
            raise UnsupportedError(f"input {i} '{name}' ({what}) is computed at run time; Sinter "
                                   "needs it constant (an initializer or a Constant node)")
        return self.imp.const_array(name)

    def ints(self, i: int, what: str) -> List[int]:
        return [int(v) for v in self.const(i, what).reshape(-1)]

    # attributes
    def attr(self, name: str, default=None):
        self.read_attrs.add(name)
        if name not in self.attrs:
            return default
        value = self.imp.onnx.helper.get_attribute_value(self.attrs[name])
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, list) and value and isinstance(value[0], bytes):
            return [v.decode() for v in value]
        return value

    def required(self, name: str):
        if name not in self.attrs:
            raise ParseError(f"the required attribute '{name}' is missing")
        return self.attr(name)

    def check_attributes(self):
        unknown = sorted(set(self.attrs) - self.read_attrs)
        if unknown:
            raise UnsupportedError(f"the attribute{'s' if len(unknown) > 1 else ''} {unknown} "
                                   "cannot be imported")

    def used(self, i: int) -> bool:
        """Whether output i is read by an imported node or is a graph output."""
        if i >= len(self.node.output) or not self.node.output[i]:
            return False
        name = self.node.output[i]
        return name in self.imp.consumers or name in self.imp.output_names


def _axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise ParseError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank


def _require_float(t, what: str, sinter_op: str):
    if not t.dtype.is_float:
        raise UnsupportedError(f"{what} is {t.dtype.label}; Sinter's {sinter_op} takes float tensors only")


def _scalar_of(ctx: _Node, i: int, like) -> Optional[float]:
    """The value of input i when it is a one-element constant, else None."""
    if ctx.is_const(i):
        value = ctx.const(i, "operand")
        if value.size == 1 and value.ndim <= like.ndim:
            return float(value.reshape(()).astype(np.float64))
    return None


# ---- converters, one per op family ------------------------------------------------------------
# Each takes a _Node and returns the Sinter tensor of each ONNX output (one, or a list; None for
# an output it does not compute; a TensorProto for a constant).

def _elementwise(name: str):
    def convert(ctx: _Node):
        a, b = ctx.input(0), ctx.input(1)
        if name in ("div", "pow"):
            _require_float(a, "input 0", name)
        return getattr(ctx.g, name)(a, b)
    return convert


def _pow(ctx: _Node):
    x = ctx.input(0)
    _require_float(x, "the base", "pow")
    exponent = _scalar_of(ctx, 1, x)
    if exponent == 2.0:
        return ctx.g.square(x)
    if exponent is not None:
        return ctx.g.pow(x, ctx.g.scalar(exponent, x.dtype))
    y = ctx.input(1)
    return ctx.g.pow(x, y if y.dtype == x.dtype else ctx.g.cast(y, x.dtype))


def _variadic(name: str):
    def convert(ctx: _Node):
        xs = ctx.inputs()
        if not xs:
            raise ParseError("has no inputs")
        out = xs[0]
        for x in xs[1:]:
            out = getattr(ctx.g, name)(out, x)
        return out
    return convert


def _unary(name: str):
    def convert(ctx: _Node):
        return getattr(ctx.g, name)(ctx.input(0))
    return convert


def _gelu(ctx: _Node):
    approximate = ctx.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise UnsupportedError(f"approximate='{approximate}'")
    return ctx.g.gelu(ctx.input(0)) if approximate == "none" else ctx.g.gelu_tanh(ctx.input(0))


def _erf(ctx: _Node):
    raise UnsupportedError("Sinter has no erf; only the GELU pattern x * 0.5 * (1 + Erf(x / sqrt(2))) "
                           "is imported (as gelu)")


def _clip(ctx: _Node):
    out = ctx.input(0)
    if ctx.has(1):
        out = ctx.g.max(out, ctx.input(1))
    if ctx.has(2):
        out = ctx.g.min(out, ctx.input(2))
    return out


def _compare(name: str):
    def convert(ctx: _Node):
        return getattr(ctx.g, name)(ctx.input(0), ctx.input(1))
    return convert


def _logical(ctx: _Node):
    """Not, And, Or and Xor on bool tensors, as comparisons and selects."""
    g = ctx.g
    a = ctx.input(0)
    if a.dtype != _core.DType.boolean:
        raise ParseError(f"input 0 is {a.dtype.label}; {ctx.op} takes bool tensors")
    if ctx.op == "Not":
        return g.eq(a, g.scalar(0.0, _core.DType.boolean))
    b = ctx.input(1)
    if ctx.op == "Xor":
        return g.ne(a, b)
    if ctx.op == "And":
        return g.select(a, b, g.scalar(0.0, _core.DType.boolean))
    return g.select(a, g.scalar(1.0, _core.DType.boolean), b)  # Or


def _isnan(ctx: _Node):
    """IsNaN(x) as x != x: true exactly for NaN (IEEE comparisons, in the reference and the
    kernels). torch.onnx writes it after the softmax of a decomposed attention, to zero rows that
    saw no key."""
    x = ctx.input(0)
    return ctx.g.ne(x, x)


def _where(ctx: _Node):
    return ctx.g.select(ctx.input(0), ctx.input(1), ctx.input(2))


def _cast_to(ctx: _Node, x, dtype):
    saturate = ctx.attr("saturate", 1)
    if not saturate and dtype in (_core.DType.fp8_e4m3, _core.DType.fp8_e5m2):
        raise UnsupportedError("saturate=0: Sinter's casts to fp8 saturate")
    return x if x.dtype == dtype else ctx.g.cast(x, dtype)


def _cast(ctx: _Node):
    return _cast_to(ctx, ctx.input(0), ctx.imp.dtype(ctx.required("to"), "the target type"))


def _cast_like(ctx: _Node):
    return _cast_to(ctx, ctx.input(0), ctx.input(1).dtype)


def _identity(ctx: _Node):
    if ctx.is_const(0):
        return ctx.imp.consts[ctx.node.input[0]]
    return ctx.input(0)


def _dropout(ctx: _Node):
    if ctx.has(2) and (not ctx.is_const(2) or bool(ctx.const(2, "training_mode").reshape(()))):
        raise UnsupportedError("training_mode: Sinter imports inference graphs only")
    if ctx.used(1):
        raise UnsupportedError("the mask output")
    ctx.attr("seed")
    return _identity(ctx)


def _constant(ctx: _Node):
    helper, numpy_helper = ctx.imp.onnx.helper, ctx.imp.onnx.numpy_helper
    name = ctx.node.output[0]
    kinds = [k for k in ("value", "value_float", "value_floats", "value_int", "value_ints")
             if k in ctx.attrs]
    if len(ctx.attrs) != 1 or len(kinds) != 1:
        raise UnsupportedError(f"attributes {sorted(ctx.attrs)}: Sinter takes one of value, "
                               "value_float(s), value_int(s)")
    kind = kinds[0]
    value = ctx.attr(kind)
    if kind == "value":
        proto = type(value)()
        proto.CopyFrom(value)
        proto.name = name
        return proto
    array = np.array(value, dtype=np.float32 if "float" in kind else np.int64)
    return numpy_helper.from_array(array, name)


def _softmax(ctx: _Node):
    x = ctx.input(0)
    axis = _axis(ctx.attr("axis", -1), x.ndim)
    if axis == x.ndim - 1:
        return ctx.g.softmax(x)
    perm = [i for i in range(x.ndim) if i != axis] + [axis]
    inverse = [perm.index(i) for i in range(x.ndim)]
    return ctx.g.permute(ctx.g.softmax(ctx.g.permute(x, perm)), inverse)


def _flatten_trailing(ctx: _Node, x, axis: int, params):
    """x reshaped to [..., C] over its axes from `axis` on, and each param tensor to [C]."""
    g = ctx.g
    lead, channels = list(x.shape[:axis]), math.prod(x.shape[axis:])
    flat = []
    for what, p in params:
        if p is None:
            flat.append(None)
            continue
        if math.prod(p.shape) != channels:
            raise UnsupportedError(f"the {what} has shape {list(p.shape)}; Sinter's norm takes one "
                                   f"value per normalized element ({list(x.shape[axis:])})")
        flat.append(p if list(p.shape) == [channels] else g.reshape(p, [channels]))
    xs = x if axis == x.ndim - 1 else g.reshape(x, lead + [channels])
    return xs, flat


def _norm(ctx: _Node):
    x = ctx.input(0)
    axis = _axis(ctx.attr("axis", -1), x.ndim)
    epsilon = ctx.attr("epsilon", 1e-5)
    if ctx.attr("stash_type", 1) != 1:
        raise UnsupportedError(f"stash_type={ctx.attr('stash_type')}: Sinter's norms compute in float32 or wider")
    if any(ctx.used(i) for i in (1, 2)):
        raise UnsupportedError("the mean and inverse standard deviation outputs")
    scale = ctx.input(1)
    bias = ctx.input(2) if ctx.op == "LayerNormalization" and ctx.has(2) else None
    xs, (scale, bias) = _flatten_trailing(ctx, x, axis, [("scale", scale), ("bias", bias)])
    build = ctx.g.layernorm if ctx.op == "LayerNormalization" else ctx.g.rmsnorm
    y = build(xs, scale, bias=bias, epsilon=epsilon)
    return y if y.shape == x.shape else ctx.g.reshape(y, list(x.shape))


def _matmul(ctx: _Node):
    a, b = ctx.input(0), ctx.input(1)
    _require_float(a, "input 0", "matmul")
    g = ctx.g
    a2 = g.reshape(a, [1, a.shape[0]]) if a.ndim == 1 else a
    b2 = g.reshape(b, [b.shape[0], 1]) if b.ndim == 1 else b
    y = g.matmul(a2, b2)
    if a.ndim != 1 and b.ndim != 1:
        return y
    # numpy's rule: a 1-D operand's added axis is removed from the product
    shape = list(y.shape)
    if b.ndim == 1:
        del shape[-1]
    if a.ndim == 1:
        del shape[-1 if b.ndim == 1 else -2]
    return g.reshape(y, shape)


def _gemm(ctx: _Node):
    g = ctx.g
    trans_b = ctx.attr("transB", 0)
    # B^T of an initializer only this node reads: the initializer's memory as a transposed view
    b_view = ctx.imp.transposed_weight(ctx.node.input[1]) if trans_b and ctx.has(1) else None
    a, b = ctx.input(0), b_view if b_view is not None else ctx.input(1)
    _require_float(a, "input A", "matmul")
    if a.ndim != 2 or b.ndim != 2:
        raise ParseError(f"A and B must be matrices; found shapes {list(a.shape)} and {list(b.shape)}")
    if ctx.attr("transA", 0):
        a = g.permute(a, [1, 0])
    if trans_b and b_view is None:
        b = g.permute(b, [1, 0])
    y = g.matmul(a, b)
    alpha, beta = ctx.attr("alpha", 1.0), ctx.attr("beta", 1.0)
    if alpha != 1.0:
        y = g.mul(y, g.scalar(alpha, y.dtype))
    if ctx.has(2):
        c = ctx.input(2)
        y = g.add(y, c if beta == 1.0 else g.mul(c, g.scalar(beta, c.dtype)))
    return y


def _conv_pads(ctx: _Node, spatial, kernel, strides, dilations):
    auto_pad = ctx.attr("auto_pad", "NOTSET")
    n = len(spatial)
    if auto_pad == "NOTSET":
        pads = ctx.attr("pads", [0] * 2 * n)
        return list(pads[:n]), list(pads[n:])
    if auto_pad == "VALID":
        return [0] * n, [0] * n
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ParseError(f"auto_pad='{auto_pad}'")
    begin, end = [], []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else large)
        end.append(large if auto_pad == "SAME_UPPER" else small)
    return begin, end


def _conv(ctx: _Node):
    """NCHW Conv through Sinter's NHWC conv2d: x and w permuted in, the result permuted back.
    A 1-D Conv is a 2-D one of height 1."""
    g = ctx.g
    x, w = ctx.input(0), ctx.input(1)
    _require_float(x, "input X", "conv2d")
    spatial_rank = x.ndim - 2
    if spatial_rank not in (1, 2) or w.ndim != x.ndim:
        raise UnsupportedError(f"a {spatial_rank}-D convolution (X {list(x.shape)}, W {list(w.shape)}); "
                               "Sinter has 1-D and 2-D ones")
    kernel = list(w.shape[2:])
    if ctx.attr("kernel_shape") is not None and list(ctx.attr("kernel_shape")) != kernel:
        raise ParseError(f"kernel_shape {ctx.attr('kernel_shape')} differs from W's {kernel}")
    strides = list(ctx.attr("strides", [1] * spatial_rank))
    dilations = list(ctx.attr("dilations", [1] * spatial_rank))
    pad_begin, pad_end = _conv_pads(ctx, list(x.shape[2:]), kernel, strides, dilations)
    if spatial_rank == 1:
        x = g.reshape(x, list(x.shape[:2]) + [1] + list(x.shape[2:]))
        w = g.reshape(w, list(w.shape[:2]) + [1] + list(w.shape[2:]))
        strides, dilations = [1] + strides, [1] + dilations
        pad_begin, pad_end = [0] + pad_begin, [0] + pad_end
    y = g.conv2d(g.permute(x, [0, 2, 3, 1]), g.permute(w, [0, 2, 3, 1]), stride=strides,
                 pad_begin=pad_begin, pad_end=pad_end, dilation=dilations, groups=ctx.attr("group", 1))
    if ctx.has(2):
        y = g.add(y, ctx.input(2))
    y = g.permute(y, [0, 3, 1, 2])
    if spatial_rank == 1:
        y = g.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    return y


def _global_pool(ctx: _Node):
    x = ctx.input(0)
    axes = list(range(2, x.ndim))
    if ctx.op == "GlobalAveragePool":
        return ctx.g.mean(x, axes, keepdim=True)
    return ctx.g.reduce_max(x, axes, keepdim=True)


def _reduce(ctx: _Node):
    x = ctx.input(0)
    axes = list(ctx.attr("axes", []))  # before opset 18 (ReduceSum: 13), an attribute
    if ctx.has(1):
        axes = ctx.ints(1, "axes")
    keepdims = bool(ctx.attr("keepdims", 1))
    noop_with_empty_axes = ctx.attr("noop_with_empty_axes", 0)
    if not axes and noop_with_empty_axes:
        return x
    if not axes:
        axes = list(range(x.ndim))
    axes = sorted({_axis(a, x.ndim) for a in axes})
    op = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "reduce_max",
          "ReduceMin": "reduce_min"}[ctx.op]
    return getattr(ctx.g, op)(x, axes, keepdim=keepdims)


def _reshape(ctx: _Node):
    x = ctx.input(0)
    shape = ctx.ints(1, "shape")
    allowzero = ctx.attr("allowzero", 0)
    dims = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= x.ndim:
                raise ParseError(f"shape {shape} copies dimension {i}, which input 0 of rank {x.ndim} lacks")
            d = x.shape[i]
        dims.append(d)
    if 0 in dims:
        raise UnsupportedError(f"shape {shape} with allowzero=1 makes an empty tensor; Sinter's dims are >= 1")
    return ctx.g.reshape(x, dims)


def _flatten(ctx: _Node):
    x = ctx.input(0)
    axis = ctx.attr("axis", 1)
    axis = axis + x.ndim if axis < 0 else axis
    if not 0 <= axis <= x.ndim:
        raise ParseError(f"axis {ctx.attr('axis')} is out of range for rank {x.ndim}")
    return ctx.g.reshape(x, [math.prod(x.shape[:axis]), math.prod(x.shape[axis:])])


def _transpose(ctx: _Node):
    perm = ctx.attr("perm", None)
    if perm is None or list(perm) == [1, 0]:  # a matrix initializer only this node reads: a view
        view = ctx.imp.transposed_weight(ctx.node.input[0]) if ctx.has(0) else None
        if view is not None:
            return view
    x = ctx.input(0)
    perm = perm if perm is not None else list(range(x.ndim))[::-1]
    return ctx.g.permute(x, list(perm))


def _concat(ctx: _Node):
    return ctx.g.concat(ctx.inputs(), ctx.required("axis"))


def _slice(ctx: _Node):
    x = ctx.input(0)
    starts, ends = ctx.ints(1, "starts"), ctx.ints(2, "ends")
    axes = ctx.ints(3, "axes") if ctx.has(3) else list(range(len(starts)))
    steps = ctx.ints(4, "steps") if ctx.has(4) else [1] * len(starts)
    if any(s < 1 for s in steps):
        raise UnsupportedError(f"steps {steps}: Sinter's slice takes steps >= 1 only")
    return ctx.g.slice(x, [_axis(a, x.ndim) for a in axes], starts, ends, steps)


def _split(ctx: _Node):
    """Split into slices along one axis: sizes from input 1 (`split`), else `num_outputs` (opset
    18: equal parts, the last smaller) or the node's output count (equal parts)."""
    x = ctx.input(0)
    axis = _axis(ctx.attr("axis", 0), x.ndim)
    size = x.shape[axis]
    outputs = len(ctx.node.output)
    num_outputs = ctx.attr("num_outputs", None)
    if ctx.has(1):
        sizes = ctx.ints(1, "split")
    elif ctx.attr("split", None) is not None:  # before opset 13 (kept by some exporters)
        sizes = list(ctx.attr("split"))
    else:
        parts = num_outputs if num_outputs is not None else outputs
        chunk = -(-size // parts)
        sizes = [min(chunk, size - i * chunk) for i in range(parts)]
    if len(sizes) != outputs:
        raise ParseError(f"splits axis {axis} into {len(sizes)} parts {sizes} for {outputs} outputs")
    if sum(sizes) != size or any(n < 1 for n in sizes):
        raise ParseError(f"split sizes {sizes} do not cover axis {axis} of size {size} in parts >= 1")
    results, start = [], 0
    for i, n in enumerate(sizes):
        results.append(ctx.g.slice(x, [axis], [start], [start + n], [1]) if ctx.used(i) else None)
        start += n
    return results


def _expand(ctx: _Node):
    """Expand: numpy's two-way broadcast of the input and the constant shape, by concatenated copies."""
    x = ctx.input(0)
    shape = ctx.ints(1, "shape")
    try:
        out = list(np.broadcast_shapes(tuple(x.shape), tuple(shape)))
    except ValueError:
        raise ParseError(f"cannot broadcast the input's shape {list(x.shape)} with shape {shape}") from None
    if 0 in out:
        raise UnsupportedError(f"shape {shape} makes an empty tensor; Sinter's dims are >= 1")
    return broadcast_to(ctx.g, x, out)


def _squeeze(ctx: _Node):
    x = ctx.input(0)
    if ctx.has(1):
        axes = {_axis(a, x.ndim) for a in ctx.ints(1, "axes")}
        for a in axes:
            if x.shape[a] != 1:
                raise ParseError(f"squeezes axis {a} of size {x.shape[a]}")
    else:
        axes = {i for i, d in enumerate(x.shape) if d == 1}
    return ctx.g.reshape(x, [d for i, d in enumerate(x.shape) if i not in axes])


def _unsqueeze(ctx: _Node):
    x = ctx.input(0)
    rank = x.ndim + len(ctx.ints(1, "axes"))
    axes = {_axis(a, rank) for a in ctx.ints(1, "axes")}
    dims, rest = [], iter(x.shape)
    for i in range(rank):
        dims.append(1 if i in axes else next(rest))
    return ctx.g.reshape(x, dims)


def _gather(ctx: _Node):
    """Gather: Sinter's gather of indices given at run time (token ids); constant indices become
    slices of consecutive runs of them, concatenated."""
    g = ctx.g
    x = ctx.input(0)
    axis = _axis(ctx.attr("axis", 0), x.ndim)
    if not ctx.is_const(1):
        return g.gather(x, ctx.input(1), axis)
    indices = ctx.const(1, "indices")
    size = x.shape[axis]
    flat = [int(i) + size if i < 0 else int(i) for i in indices.reshape(-1)]
    if not flat:
        raise UnsupportedError("empty indices: Sinter's dims are >= 1")
    if any(not 0 <= i < size for i in flat):
        raise ParseError(f"indices {indices.tolist()} are out of range for axis {axis} of size {size}")
    y = gather_constant(g, x, axis, flat)
    shape = list(x.shape[:axis]) + list(indices.shape) + list(x.shape[axis + 1:])
    return y if list(y.shape) == shape else g.reshape(y, shape)


def _to_heads(g, t, heads: int):
    """[B, S, heads * D] -> [B, heads, S, D]"""
    b, s, hidden = t.shape
    if hidden % heads:
        raise ParseError(f"hidden size {hidden} is not a multiple of {heads} heads")
    return g.permute(g.reshape(t, [b, s, heads, hidden // heads]), [0, 2, 1, 3])


def _attention(ctx: _Node):
    """Attention (opset 23) as sdpa; 3-D inputs are split into heads and joined back."""
    g = ctx.g
    q, k, v = ctx.input(0), ctx.input(1), ctx.input(2)
    if ctx.attr("softcap", 0.0) != 0.0:
        raise UnsupportedError(f"softcap={ctx.attr('softcap')}: Sinter's sdpa has no soft cap")
    ctx.attr("qk_matmul_output_mode")
    if ctx.used(3):
        raise UnsupportedError("the qk_matmul_output output")
    ctx.attr("softmax_precision")  # Sinter's sdpa computes the softmax in float32 or wider
    if q.ndim == 3:
        q_heads, kv_heads = ctx.attr("q_num_heads"), ctx.attr("kv_num_heads")
        if q_heads is None or kv_heads is None:
            raise ParseError("3-D inputs need q_num_heads and kv_num_heads")
        q, k, v = _to_heads(g, q, q_heads), _to_heads(g, k, kv_heads), _to_heads(g, v, kv_heads)
    elif q.ndim == 4:
        ctx.attr("q_num_heads")
        ctx.attr("kv_num_heads")
    else:
        raise ParseError(f"Q has rank {q.ndim}; Attention takes 3-D or 4-D inputs")
    has_past = ctx.has(4) or ctx.has(5)
    if has_past:
        k = g.concat([ctx.input(4), k], 2)
        v = g.concat([ctx.input(5), v], 2)
    if ctx.has(6):
        raise UnsupportedError("nonpad_kv_seqlen")
    causal = _core.CausalMask.none
    if ctx.attr("is_causal", 0):
        causal = _core.CausalMask.bottom_right if has_past else _core.CausalMask.top_left
    mask = ctx.input(3) if ctx.has(3) else None
    if mask is not None and mask.shape[-1] != k.shape[2]:
        raise UnsupportedError(f"an attn_mask of {mask.shape[-1]} keys for {k.shape[2]} keys "
                               "(Sinter does not pad the mask)")
    y = g.sdpa(q, k, v, scale=ctx.attr("scale"), causal=causal, bias=mask)
    if ctx.input(0).ndim == 3:
        b, h, s, d = y.shape
        y = g.reshape(g.permute(y, [0, 2, 1, 3]), [b, s, h * d])
    return [y, k, v, None]


CONVERTERS: Dict[str, Callable[[_Node], object]] = {
    "Add": _elementwise("add"), "Sub": _elementwise("sub"), "Mul": _elementwise("mul"),
    "Div": _elementwise("div"), "Pow": _pow,
    "Max": _variadic("max"), "Min": _variadic("min"), "Sum": _variadic("add"),
    "Sqrt": _unary("sqrt"), "Exp": _unary("exp"), "Log": _unary("log"), "Tanh": _unary("tanh"),
    "Sigmoid": _unary("sigmoid"), "Relu": _unary("relu"), "Neg": _unary("neg"), "Abs": _unary("abs"),
    "Reciprocal": _unary("reciprocal"), "Gelu": _gelu, "Erf": _erf, "Clip": _clip,
    "Equal": _compare("eq"), "Greater": _compare("gt"), "Less": _compare("lt"),
    "GreaterOrEqual": _compare("ge"), "LessOrEqual": _compare("le"),
    "Not": _logical, "And": _logical, "Or": _logical, "Xor": _logical, "Where": _where, "IsNaN": _isnan,
    "Cast": _cast, "CastLike": _cast_like, "Identity": _identity, "Dropout": _dropout,
    "Constant": _constant,
    "Softmax": _softmax, "LayerNormalization": _norm, "RMSNormalization": _norm,
    "MatMul": _matmul, "Gemm": _gemm, "Conv": _conv, "Attention": _attention,
    "GlobalAveragePool": _global_pool, "GlobalMaxPool": _global_pool,
    "ReduceSum": _reduce, "ReduceMean": _reduce, "ReduceMax": _reduce, "ReduceMin": _reduce,
    "Reshape": _reshape, "Flatten": _flatten, "Transpose": _transpose, "Concat": _concat,
    "Slice": _slice, "Split": _split, "Expand": _expand, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Gather": _gather,
}


# ---- patterns ----------------------------------------------------------------------------------
# Subgraphs that Sinter computes as one op: x * Sigmoid(x) as silu, the erf form of GELU as gelu,
# x * cos + rotate_half(x) * sin with constant, half-repeating tables as rope, and RMSNorm written
# out (x * 1/sqrt(mean(x^2) + eps) * w) as rmsnorm. A pattern
# matches only where its inner values are read by the pattern alone.

class _Patterns:
    def __init__(self, imp: _Importer):
        self.imp = imp
        self.nodes = imp.onnx_graph.node
        self.kept = set(imp.kept)

    def producer(self, name):
        """(index, node) of the default-domain node that computes `name`, or (None, None)."""
        index = self.imp.producer.get(name)
        if index is None or index not in self.kept or self.nodes[index].domain:
            return None, None
        return index, self.nodes[index]

    def only_reader(self, name, op_type):
        """(index, node) of the one node reading `name` when it is an `op_type` node and `name`
        is no graph output, or (None, None)."""
        readers = self.imp.consumers.get(name, [])
        if len(readers) != 1 or name in self.imp.output_names:
            return None, None
        node = self.nodes[readers[0]]
        return (readers[0], node) if node.op_type == op_type and not node.domain else (None, None)

    def read_only_by(self, name, index) -> bool:
        return self.imp.consumers.get(name) == [index] and name not in self.imp.output_names

    def is_scalar(self, name, target: float) -> bool:
        """Whether `name` is a one-element constant close to `target` (within float16 rounding)."""
        imp = self.imp
        try:
            if name in imp.consts:
                value = imp.const_array(name)
            else:
                index, node = self.producer(name)
                if node is None or node.op_type != "Constant":
                    return False
                value = imp.onnx.numpy_helper.to_array(_constant(_Node(imp, index, node)))
        except Error:
            return False
        return value.size == 1 and math.isclose(float(value.reshape(()).astype(np.float64)),
                                                target, rel_tol=1e-3)

    @staticmethod
    def other(node, name):
        """The other operand of a binary node that reads `name`, or None."""
        a, b = node.input[0], node.input[1]
        return b if a == name else a if b == name else None

    def fuse(self, final_index: int, covered, build):
        self.imp.fused[final_index] = build
        self.imp.skipped.update(covered)

    def match(self):
        for index in self.imp.kept:
            node = self.nodes[index]
            if node.domain:
                continue
            if node.op_type == "Mul":
                self.match_silu(index, node)
            elif node.op_type == "Erf":
                self.match_gelu(index, node)
            elif node.op_type == "Add":
                self.match_rope(index, node)
            elif node.op_type == "ReduceMean":
                self.match_rmsnorm(index, node)

    def const_value(self, name):
        """The value of a constant (an initializer or a Constant node's output), or None."""
        imp = self.imp
        try:
            if name in imp.consts:
                return imp.const_array(name)
            index, node = self.producer(name)
            if node is None or node.op_type != "Constant":
                return None
            return imp.onnx.numpy_helper.to_array(_constant(_Node(imp, index, node)))
        except Error:
            return None

    def last_axis_slice(self, name, reader, rank, start, end_min, end_max):
        """(index, data) of a Slice node computing `name` (read only by `reader`) as
        data[..., start:end] on the last axis with step 1, end in [end_min, end_max]; else None."""
        index, node = self.producer(name)
        if node is None or node.op_type != "Slice" or not self.read_only_by(name, reader) or len(node.input) < 3:
            return None
        values = [self.const_value(n) if n else None for n in list(node.input[1:]) + [""] * (5 - len(node.input))]
        starts, ends, axes, steps = values[0], values[1], values[2], values[3]
        if starts is None or ends is None or starts.size != 1 or ends.size != 1:
            return None
        axis = int(axes.reshape(-1)[0]) if axes is not None and axes.size == 1 else 0 if axes is None else None
        step = int(steps.reshape(-1)[0]) if steps is not None and steps.size == 1 else 1 if steps is None else None
        if axis not in (-1, rank - 1) or step != 1:
            return None
        if int(starts.reshape(-1)[0]) != start or not end_min <= int(ends.reshape(-1)[0]) <= end_max:
            return None
        return index, node.input[0]

    def match_silu(self, index, mul):
        """x * Sigmoid(x) -> silu(x)"""
        for s in mul.input:
            si, sigmoid = self.producer(s)
            if sigmoid is not None and sigmoid.op_type == "Sigmoid" and self.read_only_by(s, index) \
                    and self.other(mul, s) == sigmoid.input[0]:
                x = sigmoid.input[0]
                self.fuse(index, [si], lambda ctx: ctx.g.silu(ctx.imp.tensor(x)))
                return

    def match_rmsnorm(self, mean_index, mean):
        """x * Reciprocal(Sqrt(ReduceMean(x^2, last axis) + eps)) * w -> rmsnorm(x, w, eps), as
        torch.onnx writes RMSNorm: x^2 as Pow(x, 2) or Mul(x, x), 1 / s as Reciprocal or Div(1, s),
        either operand order of each Mul and Add; w of x's last dimension."""
        pi, square = self.producer(mean.input[0])
        if square is None or not self.read_only_by(mean.input[0], mean_index):
            return
        if square.op_type == "Pow" and self.is_scalar(square.input[1], 2.0):
            x = square.input[0]
        elif square.op_type == "Mul" and square.input[0] == square.input[1]:
            x = square.input[0]
        else:
            return
        rank = self.imp.rank_of(x)
        node = _Node(self.imp, mean_index, mean)
        axes = node.attr("axes", None)
        if len(mean.input) > 1 and mean.input[1]:
            value = self.const_value(mean.input[1])
            axes = None if value is None else [int(a) for a in value.reshape(-1)]
        if rank is None or axes is None or len(axes) != 1 or axes[0] not in (-1, rank - 1) \
                or not node.attr("keepdims", 1):
            return
        ai, add = self.only_reader(mean.output[0], "Add")
        if add is None:
            return
        eps_name = self.other(add, mean.output[0])
        eps = self.const_value(eps_name) if eps_name is not None else None
        if eps is None or eps.size != 1:
            return
        si, sqrt = self.only_reader(add.output[0], "Sqrt")
        if sqrt is None:
            return
        ri, inverse = self.only_reader(sqrt.output[0], "Reciprocal")
        if inverse is None:
            ri, inverse = self.only_reader(sqrt.output[0], "Div")
            if inverse is None or inverse.input[1] != sqrt.output[0] or not self.is_scalar(inverse.input[0], 1.0):
                return
        ni, normed = self.only_reader(inverse.output[0], "Mul")
        if normed is None or self.other(normed, inverse.output[0]) != x:
            return
        wi, scaled = self.only_reader(normed.output[0], "Mul")
        if scaled is None:
            return
        w = self.other(scaled, normed.output[0])
        w_rank = self.imp.rank_of(w)
        if w is None or w_rank != 1:
            return
        epsilon = float(eps.reshape(()).astype(np.float64))

        def build(ctx):
            xt, wt = ctx.imp.tensor(x), ctx.imp.tensor(w)
            if wt.shape[0] != xt.shape[-1] or wt.dtype != xt.dtype:
                raise UnsupportedError(f"an RMSNorm pattern whose weight {list(wt.shape)} ({wt.dtype.label}) does "
                                       f"not fit its input {list(xt.shape)} ({xt.dtype.label})")
            return ctx.g.rmsnorm(xt, wt, epsilon=epsilon)

        self.fuse(wi, [pi, mean_index, ai, si, ri, ni], build)

    def match_rope(self, add_index, add):
        """x * cos + concat(-x[..., D/2:], x[..., :D/2]) * sin -> rope(x, cos[..., :D/2],
        sin[..., :D/2]) when cos and sin are constants whose two halves are equal (Llama's tables),
        either operand order of each Mul and of the Add."""
        for direct, rotated in (tuple(add.input), tuple(add.input)[::-1]):
            di, m_direct = self.producer(direct)
            ri, m_rotated = self.producer(rotated)
            if m_direct is None or m_rotated is None or m_direct.op_type != "Mul" or m_rotated.op_type != "Mul" \
                    or not self.read_only_by(direct, add_index) or not self.read_only_by(rotated, add_index):
                continue
            for cat_name, sin in (tuple(m_rotated.input), tuple(m_rotated.input)[::-1]):
                ci, cat = self.producer(cat_name)
                if cat is None or cat.op_type != "Concat" or len(cat.input) != 2 or not self.read_only_by(cat_name, ri):
                    continue
                ni, neg = self.producer(cat.input[0])
                if neg is None or neg.op_type != "Neg" or not self.read_only_by(cat.input[0], ci):
                    continue
                for x, cos in (tuple(m_direct.input), tuple(m_direct.input)[::-1]):
                    if self._fuse_rope(add_index, x, cos, sin, (ci, cat), (ni, neg), [di, ri]):
                        return

    def _fuse_rope(self, add_index, x, cos, sin, concat, negation, covered) -> bool:
        ci, cat = concat
        ni, neg = negation
        rank = self.imp.rank_of(x)
        c, s = self.const_value(cos), self.const_value(sin)
        if rank is None or c is None or s is None or c.ndim < 1 or s.ndim < 1 or c.shape[-1] != s.shape[-1] \
                or c.shape[-1] % 2:
            return False
        d = c.shape[-1]
        half = d // 2
        if _Node(self.imp, ci, cat).attr("axis", None) not in (-1, rank - 1):
            return False
        high = self.last_axis_slice(neg.input[0], ni, rank, half, d, 2 ** 63 - 1)
        low = self.last_axis_slice(cat.input[1], ci, rank, 0, half, half)
        if high is None or low is None or high[1] != x or low[1] != x:
            return False
        if not (np.array_equal(c[..., :half], c[..., half:]) and np.array_equal(s[..., :half], s[..., half:])):
            return False
        tables = ((cos, np.ascontiguousarray(c[..., :half])), (sin, np.ascontiguousarray(s[..., :half])))

        def build(ctx):
            halves = [ctx.imp.add_constant(f"{name}.half", value) for name, value in tables]
            return ctx.g.rope(ctx.imp.tensor(x), halves[0], halves[1])

        self.fuse(add_index, covered + [ci, ni, high[0], low[0]], build)
        return True

    def match_gelu(self, erf_index, erf):
        """x * 0.5 * (1 + Erf(x / sqrt(2))) -> gelu(x): x / sqrt(2) or x * sqrt(0.5), and the
        products in any of the orders exporters write."""
        di, scaled = self.producer(erf.input[0])
        if scaled is None or not self.read_only_by(erf.input[0], erf_index):
            return
        if scaled.op_type == "Div" and self.is_scalar(scaled.input[1], math.sqrt(2.0)):
            x = scaled.input[0]
        elif scaled.op_type == "Mul" and self.is_scalar(scaled.input[1], math.sqrt(0.5)):
            x = scaled.input[0]
        elif scaled.op_type == "Mul" and self.is_scalar(scaled.input[0], math.sqrt(0.5)):
            x = scaled.input[1]
        else:
            return
        ai, add = self.only_reader(erf.output[0], "Add")
        if add is None or not self.is_scalar(self.other(add, erf.output[0]), 1.0):
            return
        mi, mul = self.only_reader(add.output[0], "Mul")
        if mul is None:
            return
        factor = self.other(mul, add.output[0])
        covered = [di, erf_index, ai]

        def build(ctx):
            return ctx.g.gelu(ctx.imp.tensor(x))

        if factor == x or self.is_scalar(factor, 0.5):
            # (x * (1 + erf)) * 0.5 or ((1 + erf) * 0.5) * x
            fi, final = self.only_reader(mul.output[0], "Mul")
            if final is None:
                return
            last = self.other(final, mul.output[0])
            if last == x if factor != x else self.is_scalar(last, 0.5):
                self.fuse(fi, covered + [mi], build)
            return
        hi, half = self.producer(factor)  # (x * 0.5) * (1 + erf)
        if half is not None and half.op_type == "Mul" and self.read_only_by(factor, mi):
            scale = self.other(half, x)
            if scale is not None and self.is_scalar(scale, 0.5):
                self.fuse(mi, covered + [hi], build)
