"""torch.compile(model, backend="sinter"): the regions of a model that Sinter supports run as
compiled Sinter plans, everything else as torch ops.

    import sinter.dynamo_backend          # registers "sinter" (a pip-installed sinter needs no import)
    fast = torch.compile(model, backend="sinter")
    fast = torch.compile(model, backend="sinter", mode="reduce-overhead")   # plans as CUDA graphs
    cpu = torch.compile(model, backend="sinter", options={"executor": "reference"})

Dynamo captures the model as FX graphs; AOT autograd lowers each to ATen ops; then, for each
graph, torch_partition.py finds the maximal connected regions whose ops Sinter converts (an op it
does not is a split point and runs eagerly between regions), and each region becomes a module that
holds the region as a Sinter graph (fx_converter.py, with canonical names) and runs it:

- executor "gpu" (the default): the region's plan, compiled with ``sinter.compile`` on the
  inputs' CUDA device at the first call and cached by the graph's structural hash (its JSON text,
  whose names are canonical: in_0.., out_0.., const_0..), so identical layers share one plan; run
  through a ``TorchRunner`` (torch_runtime.py) on torch's current stream. Needs a GPU and CUDA
  tensors; raises ``sinter.CudaError`` at compile time when there is no usable GPU.
- executor "reference": ``sinter.run_reference`` on CPU copies of the inputs (numpy), the results
  moved back to the inputs' device: slow, for checking the partitioning and the conversion on a
  machine without a GPU.

Backend options (``torch.compile(..., options={...})``):
``executor`` ("gpu" or "reference"), ``runner_mode`` ("stream", "graph" or "mega"; default
"graph" for ``mode="reduce-overhead"``, else "stream"), ``compile`` (a dict of ``sinter.compile``
keyword arguments: ``tune``, ``engines``, ...). Anything else raises ``InvalidArgumentError``.

For each graph it compiles the backend logs one line to the ``sinter`` logger at INFO (or, when the
environment variable SINTER_LOG is set and that logger would not show it, prints it to stderr):

    sinter: 2 regions on Sinter (reference): 14 ops (addmm 3, gelu 1, ...); left to torch: 1 op (cumsum 1)

Symbolic shapes (``dynamic=True``, or a size Dynamo made dynamic): Dynamo compiles the graph once
and the backend compiles it per concrete signature at call time (dynamo_shapes.py), since a Sinter
plan's shapes are static.
Inference only: a graph that needs gradients runs its forward through Sinter, and the values the
backward pass reads come from it as they would from torch.
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import sys
import weakref
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Dict, Optional, Tuple

from . import _core
from .dynamo_shapes import PerShapeGraph, has_symbolic_shapes
from .errors import CudaError, InvalidArgumentError
from .fx_converter import FxConverter
from .fx_values import Placeholder
from .reference import run_reference
from .torch_partition import Partitioning, partition
from .torch_runtime import TorchRunner
from .torch_types import from_numpy, to_numpy, torch_dtype, torch_module

torch = torch_module()
LOGGER = logging.getLogger("sinter")
BACKEND_NAME = "sinter"
_EXECUTORS = ("gpu", "reference")
_RUNNER_MODES = ("stream", "graph", "mega")
DEVICE_ALIGNMENT = 256  # what Runner::set_tensor_address requires of an address
_PLANS: Dict[Tuple[str, str, int], object] = {}  # (graph hash, compile options, device) -> Plan
_REGIONS: "weakref.WeakSet" = weakref.WeakSet()  # every SinterRegion made, to release at exit


@dataclass(frozen=True)
class BackendOptions:
    executor: str = "gpu"
    runner_mode: str = "stream"
    compile: Dict[str, object] = field(default_factory=dict)

    @staticmethod
    def parse(options: Optional[dict], mode: Optional[str]) -> "BackendOptions":
        options = dict(options or {})
        unknown = sorted(set(options) - {"executor", "runner_mode", "compile"})
        if unknown:
            raise InvalidArgumentError(f"backend 'sinter': unknown options {unknown}; it takes 'executor', "
                                       "'runner_mode' and 'compile'")
        executor = options.get("executor", "gpu")
        if executor not in _EXECUTORS:
            raise InvalidArgumentError(f"backend 'sinter': executor '{executor}' is not one of {list(_EXECUTORS)}")
        runner_mode = options.get("runner_mode", "graph" if mode == "reduce-overhead" else "stream")
        if runner_mode not in _RUNNER_MODES:
            raise InvalidArgumentError(f"backend 'sinter': runner_mode '{runner_mode}' is not one of "
                                       f"{list(_RUNNER_MODES)}")
        compile_options = options.get("compile", {})
        if not isinstance(compile_options, dict):
            raise InvalidArgumentError("backend 'sinter': 'compile' must be a dict of sinter.compile arguments")
        return BackendOptions(executor, runner_mode, dict(compile_options))


def sinter_backend(gm, example_inputs, *, options: Optional[dict] = None, mode: Optional[str] = None,
                   name: Optional[str] = None):
    """The Dynamo backend: AOT autograd to ATen, then compile_aten_graph on the forward graph."""
    from torch._dynamo.backends.common import aot_autograd

    parsed = BackendOptions.parse(options, mode)
    if parsed.executor == "gpu":
        availability = _core.gpu_availability()
        if not availability["available"]:
            raise CudaError(f"backend 'sinter' compiles plans on a GPU and there is none usable "
                            f"({availability['reason']}); options={{'executor': 'reference'}} runs the "
                            "Sinter regions on the CPU reference instead")
    compile_static = aot_autograd(fw_compiler=partial(compile_aten_graph, options=parsed))
    if has_symbolic_shapes(example_inputs):
        return PerShapeGraph(gm, compile_static)
    return compile_static(gm, example_inputs)


def compile_aten_graph(gm, example_inputs, *, options: BackendOptions):
    """split_aten_graph's module as a function of AOT autograd's boxed calling convention (one
    list of arguments)."""
    from functorch.compile import make_boxed_func

    return make_boxed_func(split_aten_graph(gm, options))


def split_aten_graph(gm, options: BackendOptions):
    """The ATen graph (changed in place) with its Sinter regions replaced by SinterRegion modules."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():  # constants are folded on real tensors
        split = partition(gm)
        for region in split.regions:
            setattr(split.module, region, SinterRegion(getattr(split.module, region), options))
    _report(split, options)
    return split.module


class SinterRegion(torch.nn.Module):
    """One supported region of an ATen graph as a Sinter graph, run by the chosen executor."""

    def __init__(self, submodule, options: BackendOptions):
        super().__init__()
        nodes = list(submodule.graph.nodes)
        placeholders = {n: Placeholder(f"in_{i}", "input")
                        for i, n in enumerate(n for n in nodes if n.op == "placeholder")}
        output = nodes[-1].args[0]
        self.returns_tuple = isinstance(output, (tuple, list))
        converter = FxConverter("sinter_region", placeholders, owner=submodule, canonical=True)
        self.sinter_graph = converter.run(submodule.graph, lambda i: f"out_{i}")
        names = {t.name for t in self.sinter_graph.inputs}
        self.input_names = [p.name if p.name in names else None for p in placeholders.values()]
        self.output_names = [t.name for t in self.sinter_graph.outputs]
        self.constants = converter.weights
        # an input read only through a permutation is fed as that view of the argument (no copy)
        self.input_permutations = dict(converter.input_permutations)
        self.options = options
        self._runner = None
        self._device_constants = None
        self._static_outputs = None  # graph mode: the buffers below (see _run_graph)
        self._static_inputs = {}
        self._addresses = {}
        _REGIONS.add(self)

    def release(self):
        """Drops the Sinter objects (graph, runner): the region cannot run afterwards."""
        self.sinter_graph = self._runner = self._static_outputs = None
        self._static_inputs = {}

    def forward(self, *args):
        if self.options.executor == "reference":
            results = self._run_reference(args)
        else:
            results = self._run_gpu(args)
        return tuple(results) if self.returns_tuple else results[0]

    def _feed(self, name, arg):
        perm = self.input_permutations.get(name)
        return arg.contiguous() if perm is None else arg.contiguous().permute(perm)

    def _device_feed(self, name, arg):
        """_feed for the GPU executor: a Runner binds 256-byte aligned memory only, and an eager
        part of the model may hand a region a view into the middle of a buffer (a slice of a KV
        cache, a split's second half): such a view is copied into a fresh (aligned) tensor of the
        same strides."""
        t = self._feed(name, arg)
        if t.data_ptr() % DEVICE_ALIGNMENT == 0:
            return t
        copy = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
        copy.copy_(t)
        return copy

    def _run_reference(self, args):
        feeds = {n: to_numpy(self._feed(n, a)) for n, a in zip(self.input_names, args) if n is not None}
        feeds.update({n: to_numpy(t) for n, t in self.constants.items()})
        out = run_reference(self.sinter_graph, feeds)
        device = args[0].device if args else torch.device("cpu")
        return [from_numpy(out[t.name], t.dtype, device) for t in self.sinter_graph.outputs]

    def _run_gpu(self, args):
        device = next((a.device for a in args), None)
        if device is None or device.type != "cuda":
            raise InvalidArgumentError(f"backend 'sinter': the gpu executor runs CUDA tensors; found "
                                       f"{device} (options={{'executor': 'reference'}} runs on the CPU)")
        if self._runner is None:
            plan = cached_plan(self.sinter_graph, self.options.compile, device.index)
            self._runner = TorchRunner(plan, mode=self.options.runner_mode, device=device)
            self._device_constants = {n: t.to(device) for n, t in self.constants.items()}
        feeds = {n: self._device_feed(n, a) for n, a in zip(self.input_names, args) if n is not None}
        feeds.update(self._device_constants)
        if self.options.runner_mode == "graph":
            return self._run_graph(feeds)
        out = self._runner(feeds)
        return [out[n] for n in self.output_names]

    def _run_graph(self, feeds):
        """Graph mode replays its captured graph only while the bound addresses stay, so: an input
        that comes at the same address every call (a parameter) is bound as it is; one whose
        address changes (an activation) gets a buffer of the region's, which each call copies it
        into; outputs are written into the region's buffers and returned as copies."""
        rebind = self._static_outputs is None
        if rebind:
            self._static_outputs = {n: torch.empty_strided(s.dims, s.strides, dtype=torch_dtype(s.dtype),
                                                            device=self._runner.device)
                                    for n, s in self._runner.outputs.items()}
        bound = {}
        for name, t in feeds.items():
            held = self._static_inputs.get(name)
            if held is not None:
                held.copy_(t)
                bound[name] = held
                continue
            last = self._addresses.get(name)
            if last is None or last != t.data_ptr():
                if last is not None:  # moved since the last call: copied from now on
                    held = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
                    held.copy_(t)
                    self._static_inputs[name] = t = held
                self._addresses[name] = t.data_ptr()
                rebind = True
            bound[name] = t
        if rebind:
            self._runner.bind(bound, self._static_outputs)
        self._runner.enqueue()
        return [self._static_outputs[n].clone() for n in self.output_names]


def cached_plan(graph, compile_options: dict, device: int):
    """The plan of `graph`, compiled once per structure, options and device."""
    key = (hashlib.sha256(graph.to_json().encode()).hexdigest(), repr(sorted(compile_options.items())), device)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _core.compile(graph, device=device, **compile_options)
        _PLANS[key] = plan
    return plan


def report_line(split: Partitioning, options: BackendOptions) -> str:
    """What ran where, in one line."""
    def ops(counter: Counter) -> str:
        return ", ".join(f"{name} {count}" for name, count in counter.most_common())

    def count(n: int, what: str) -> str:
        return f"{n} {what}" + ("" if n == 1 else "s")

    line = f"sinter: {count(len(split.regions), 'region')} on Sinter ({options.executor})"
    if split.regions:
        line += f": {count(sum(split.in_sinter.values()), 'op')} ({ops(split.in_sinter)})"
    torch_ops = sum(split.in_torch.values())
    line += f"; left to torch: {count(torch_ops, 'op')}" + (f" ({ops(split.in_torch)})" if torch_ops else "")
    return line


def _report(split: Partitioning, options: BackendOptions):
    line = report_line(split, options)
    for name, reason in split.reasons.items():
        LOGGER.debug("sinter: %s left to torch: %s", name, reason)
    if os.environ.get("SINTER_LOG") and not LOGGER.isEnabledFor(logging.INFO):
        print(line, file=sys.stderr)
    else:
        LOGGER.info(line)


@atexit.register
def _release_at_exit():
    """Compiled models live in torch's caches until the interpreter exits; their Sinter objects are
    released first, while the extension (and the CUDA context) are still whole."""
    for region in list(_REGIONS):
        region.release()
    _PLANS.clear()


def register() -> None:
    """Makes backend="sinter" known to torch.compile; importing this module calls it. (A
    pip-installed sinter is found through its torch_dynamo_backends entry point instead.)"""
    if BACKEND_NAME not in torch._dynamo.list_backends(exclude_tags=()):
        torch._dynamo.register_backend(sinter_backend, name=BACKEND_NAME)


register()
