"""Running a compiled Plan on torch CUDA tensors, zero-copy: the tensors' own memory is bound to
the plan's inputs and outputs by name.

    plan = sinter.compile(sinter.from_torch(model, (x,)))
    runner = sinter.TorchRunner(plan)                     # or TorchRunner(plan, mode="graph")
    out = runner({"x": x, **weights})["output"]           # enqueued on torch's current stream

    out = sinter.run_torch(plan, {"x": x, **weights})     # one-off: makes a runner, waits for it

``TorchRunner(plan_or_runner, *, mode="stream", device=None)`` wraps a ``sinter.Runner``: given a
Plan it makes one on ``device`` (an index or a torch.device, default torch's current CUDA device)
in ``mode`` ("stream", "graph": a CUDA graph captured once and replayed, its pointers updated when
tensors change, or "mega"); given a Runner it uses it (pass ``device`` when that Runner was made for
a device other than 0). Any object with ``plan``, ``set_tensor_address(name, address)`` and
``enqueue(stream)`` is taken as a runner.

``runner(inputs, outputs=None, stream=None) -> dict[str, torch.Tensor]``:

- checks every tensor against what the plan's graph declares (``Plan.describe()``'s ``inputs`` and
  ``outputs``): a torch.Tensor, on the runner's device, of the dtype, shape and strides (in
  elements; axes of size 1 are not compared) declared, and raises ``sinter.InvalidArgumentError``
  naming the tensor and saying what was expected and what was found; every plan input must be
  given, and no name the plan does not have;
- allocates each output not given in ``outputs`` with ``torch.empty_strided`` on the device;
- binds each tensor's ``data_ptr()`` by name and enqueues the plan on ``stream`` (a
  ``torch.cuda.Stream``, a raw ``cudaStream_t`` as an int, or None for
  ``torch.cuda.current_stream(device)``), returning without waiting;
- refuses an output whose memory overlaps another bound tensor's (an input or another output),
  naming both: the plan's kernels assume their outputs alias nothing;
- keeps a reference to every bound tensor until the next call, and then marks it used on every
  torch stream the plan ran on (``record_stream``), so torch's allocator does not hand its memory
  out while the plan may still read or write it, whichever stream it was made on. With a raw int
  stream the caller keeps the tensors alive until the work is done.

The fast path, for a model called again and again on the same tensors (as a C++ program binds its
addresses once and enqueues): ``runner.bind(inputs, outputs=None)`` checks and binds once and
returns the outputs; ``runner.enqueue(stream=None)`` then only enqueues. Write each step's input
values into the bound tensors (``copy_``) and read the bound outputs. In graph mode this replays
the captured graph as it is; a call that binds other tensors (a new output each call, say)
captures the plan again and updates the graph in place, which costs tens of microseconds.

``run_torch(runner_or_plan, inputs, outputs=None, stream=None)`` calls a TorchRunner, wrapping a
Runner in one; given a Plan it makes a runner for this call and synchronizes the stream before
returning, since the runner's memory is freed with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional

from . import _core
from .errors import InvalidArgumentError
from .torch_types import torch_dtype, torch_module

_DTYPES = {d.label: d for d in _core.DType.__members__.values()}


@dataclass(frozen=True)
class TensorSpec:
    """One plan input or output as the plan declares it (Plan.describe())."""

    name: str
    dtype: "_core.DType"
    dims: List[int]
    strides: List[int]

    @staticmethod
    def of(description: dict) -> "TensorSpec":
        return TensorSpec(description["name"], _DTYPES[description["dtype"]], list(description["dims"]),
                          list(description["strides"]))

    def row_major(self) -> bool:
        expected, stride = [], 1
        for d in reversed(self.dims):
            expected.append(stride)
            stride *= d
        return all(s == e for s, e, d in zip(self.strides, reversed(expected), self.dims) if d != 1)


def check_tensor(role: str, spec: TensorSpec, tensor, device) -> None:
    """Raises InvalidArgumentError naming the tensor when `tensor` is not what `spec` declares, on
    `device`. `role` is "input" or "output"."""
    torch = torch_module()
    what = f"{role} '{spec.name}'"
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgumentError(f"{what}: expected a torch.Tensor; found {type(tensor).__name__}")
    if tensor.device != device:
        raise InvalidArgumentError(f"{what} is on {tensor.device}; the plan runs on {device} "
                                   f"(move it with .to('{device}'))")
    want_dtype = torch_dtype(spec.dtype)
    if tensor.dtype != want_dtype:
        raise InvalidArgumentError(f"{what} is {tensor.dtype}; the plan declares {spec.dtype.label} ({want_dtype})")
    if list(tensor.shape) != spec.dims:
        raise InvalidArgumentError(f"{what} has the shape {list(tensor.shape)}; the plan declares {spec.dims}")
    strides = list(tensor.stride())
    if any(s != w for s, w, d in zip(strides, spec.strides, spec.dims) if d != 1):
        hint = "call .contiguous() on it" if spec.row_major() else "lay it out with those strides"
        raise InvalidArgumentError(f"{what} has the strides {strides} (in elements); the plan declares "
                                   f"{spec.strides}: {hint}")


def _device_of(device):
    torch = torch_module()
    if device is None:
        return torch.device("cuda", torch.cuda.current_device())
    if isinstance(device, int):
        return torch.device("cuda", device)
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


class TorchRunner:
    """A Plan bound to torch tensors by name and enqueued on a torch stream. See the module."""

    def __init__(self, plan_or_runner, *, mode: str = "stream", device=None):
        torch = torch_module()
        if isinstance(plan_or_runner, _core.Plan):
            self.device = _device_of(device)
            if self.device.type != "cuda":
                raise InvalidArgumentError(f"TorchRunner: device {self.device} is not a CUDA device")
            self.runner = _core.Runner(plan_or_runner, mode=mode, device=self.device.index)
        elif all(hasattr(plan_or_runner, a) for a in ("plan", "set_tensor_address", "enqueue")):
            self.runner = plan_or_runner
            self.device = _device_of(0 if device is None else device)
            if isinstance(plan_or_runner, _core.Runner) and self.device.type != "cuda":
                raise InvalidArgumentError(f"TorchRunner: a sinter.Runner runs on a CUDA device; found {self.device}")
        else:
            raise TypeError(f"TorchRunner: expected a sinter.Plan or a sinter.Runner; found "
                            f"{type(plan_or_runner).__name__}")
        description = self.runner.plan.describe()
        self.inputs = {d["name"]: TensorSpec.of(d) for d in description["inputs"]}
        self.outputs = {d["name"]: TensorSpec.of(d) for d in description["outputs"]}
        self._bound: Dict[str, object] = {}
        self._used_streams: Dict[int, object] = {}  # raw handle -> torch stream (None: raw) since bind
        self._torch = torch
        self._raw_current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)

    @property
    def input_names(self) -> List[str]:
        return list(self.inputs)

    @property
    def output_names(self) -> List[str]:
        return list(self.outputs)

    def __call__(self, inputs: Mapping[str, object], outputs: Optional[Mapping[str, object]] = None,
                 stream=None) -> Dict[str, object]:
        result = self.bind(inputs, outputs)
        self.enqueue(stream)
        return result

    run = __call__

    def bind(self, inputs: Mapping[str, object], outputs: Optional[Mapping[str, object]] = None) -> Dict[str, object]:
        """Checks and binds every input and output (outputs not given are allocated) without
        enqueuing; returns the outputs by name. The tensors stay bound, and referenced, until the
        next bind: ``enqueue()`` then runs on them with no per-call checks (the fast path)."""
        bound = self.prepare(inputs, outputs)
        self._release()
        for name, tensor in bound.items():
            self.runner.set_tensor_address(name, tensor.data_ptr())
        self._bound = bound
        return {name: bound[name] for name in self.outputs}

    def enqueue(self, stream=None) -> None:
        """Enqueues the plan on the bound tensors on `stream` (see the module), without waiting."""
        if not self._bound:
            raise InvalidArgumentError("TorchRunner.enqueue: nothing is bound yet (call bind() or the runner)")
        handle, torch_stream = self._stream(stream)
        self.runner.enqueue(handle)
        if handle not in self._used_streams:
            self._used_streams[handle] = torch_stream

    def _release(self):
        """Marks the tensors bound so far used on every stream the plan ran on since they were
        bound (record_stream), so torch's allocator does not hand out their memory while that work
        may still read or write it; then forgets them."""
        for handle, torch_stream in self._used_streams.items():
            if torch_stream is None:  # a raw handle: the caller keeps the tensors alive
                continue
            for tensor in self._bound.values():
                tensor.record_stream(torch_stream)
        self._used_streams = {}
        self._bound = {}

    def prepare(self, inputs: Mapping[str, object], outputs: Optional[Mapping[str, object]] = None):
        """Every plan input and output by name, checked, outputs not given allocated."""
        outputs = dict(outputs or {})
        unknown = [n for n in inputs if n not in self.inputs]
        if unknown:
            raise InvalidArgumentError(f"the plan has no input {_names(unknown)}; its inputs are {_names(self.inputs)}")
        missing = [n for n in self.inputs if n not in inputs]
        if missing:
            raise InvalidArgumentError(f"input {_names(missing)} is missing; the plan's inputs are {_names(self.inputs)}")
        unknown = [n for n in outputs if n not in self.outputs]
        if unknown:
            raise InvalidArgumentError(f"the plan has no output {_names(unknown)}; its outputs are "
                                       f"{_names(self.outputs)}")
        bound = {}
        for name, spec in self.inputs.items():
            check_tensor("input", spec, inputs[name], self.device)
            bound[name] = inputs[name]
        for name, spec in self.outputs.items():
            if name in outputs:
                check_tensor("output", spec, outputs[name], self.device)
                bound[name] = outputs[name]
            else:
                bound[name] = self._torch.empty_strided(spec.dims, spec.strides, dtype=torch_dtype(spec.dtype),
                                                        device=self.device)
        check_no_output_overlap(bound, self.outputs)
        return bound

    def _stream(self, stream):
        """(raw handle, the torch stream to mark the tensors used on; None for a raw handle)."""
        torch = self._torch
        if isinstance(stream, int) and not isinstance(stream, bool):
            return stream, None
        if stream is None:
            if self._raw_current_stream is not None:  # cheap: the handle, the Stream object only once
                handle = self._raw_current_stream(self.device.index)
                known = self._used_streams.get(handle)
                if known is not None:
                    return handle, known
            current = torch.cuda.current_stream(self.device)
            return current.cuda_stream, current
        if hasattr(stream, "cuda_stream"):
            return stream.cuda_stream, stream
        raise TypeError(f"stream: expected a torch.cuda.Stream, an int handle or None; found {type(stream).__name__}")


def _byte_span(tensor):
    """[first, last) byte addresses a tensor's elements occupy (empty tensors: an empty span)."""
    if tensor.numel() == 0:
        return tensor.data_ptr(), tensor.data_ptr()
    extent = 1 + sum((n - 1) * abs(st) for n, st in zip(tensor.shape, tensor.stride()))
    return tensor.data_ptr(), tensor.data_ptr() + extent * tensor.element_size()


def check_no_output_overlap(bound: Mapping[str, object], outputs) -> None:
    """Raises InvalidArgumentError when an output's memory overlaps another bound tensor's."""
    spans = {name: _byte_span(t) for name, t in bound.items()}
    for out in outputs:
        lo, hi = spans[out]
        for name, (a, b) in spans.items():
            if name != out and lo < b and a < hi:
                role = "output" if name in outputs else "input"
                raise InvalidArgumentError(
                    f"output '{out}' overlaps {role} '{name}' in memory (bytes {lo:#x}..{hi:#x} and {a:#x}..{b:#x}); "
                    "a plan's outputs must alias nothing it reads or writes")


def run_torch(runner_or_plan, inputs: Mapping[str, object], outputs: Optional[Mapping[str, object]] = None,
              stream=None) -> Dict[str, object]:
    """Runs a Plan, a Runner or a TorchRunner on torch tensors by name. See the module."""
    if isinstance(runner_or_plan, TorchRunner):
        return runner_or_plan(inputs, outputs, stream)
    runner = TorchRunner(runner_or_plan)
    result = runner(inputs, outputs, stream)
    if isinstance(runner_or_plan, _core.Plan):
        torch = torch_module()
        if stream is None or isinstance(stream, int):
            torch.cuda.synchronize(runner.device)
        else:
            stream.synchronize()
    return result


def _names(names) -> str:
    return ", ".join(f"'{n}'" for n in names)
