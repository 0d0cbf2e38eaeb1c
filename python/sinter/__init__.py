"""Sinter: compile tensor computation graphs into fast GPU plans.

    import numpy as np, sinter

    g = sinter.Graph("mlp")
    x = g.input("x", sinter.bf16, [128, 1024])
    w = g.input("w", sinter.bf16, [1024, 4096])
    b = g.input("b", sinter.bf16, [4096])
    g.output(g.gelu(x @ w + b), "y")
    g.validate()
    y = sinter.run_reference(g, {"x": ..., "w": ..., "b": ...})["y"]   # on the CPU, numpy arrays

    plan = sinter.compile(g, tune="fast")          # on a GPU
    plan.save("mlp.plan")
    runner = sinter.Runner(plan, mode="graph")      # bind device addresses by name, enqueue on a stream

    graph = sinter.from_onnx("model.onnx")          # an ONNX model as a Sinter graph (pip install onnx)
    graph = sinter.from_torch(model, (x,))          # a torch.nn.Module, through torch.export
    out = sinter.TorchRunner(plan)({"x": x, ...})   # a plan on torch CUDA tensors, zero-copy

The module binds the public C++ API (include/sinter); errors are sinter.Error (errors.py). ONNX
import (onnx_import.py): from_onnx returns the graph, import_onnx the graph and the values of its
weight inputs (initializers become inputs named after them). torch (imported only when used):
from_torch / import_torch (torch_import.py), TorchRunner / run_torch (torch_runtime.py), and
torch.compile(model, backend="sinter") after `import sinter.dynamo_backend` (dynamo_backend.py).
"""

from ._core import (
    CausalMask,
    CollectiveReduce,
    ComputeType,
    DType,
    ErrorCode,
    ExecMode,
    Graph,
    OpKind,
    Plan,
    Runner,
    Tensor,
    TuneMode,
    __version__,
    compile,
    default_kernel_cache_dir,
    default_timing_cache_path,
    engine_names,
    explain,
    gpu_availability,
)
from .errors import *  # noqa: F401,F403  (Error and one subclass per ErrorCode)
from .errors import Error
from .onnx_import import OnnxImport, from_onnx, import_onnx
from .reference import numpy_type, run_reference
from .ranks import gather_outputs, run_reference_ranks, shard_inputs, shard_tensor_parallel
from .torch_import import TorchImport, from_torch, import_torch
from .torch_runtime import TorchRunner, run_torch

# The dtypes by their short names, as torch spells them: sinter.bf16, sinter.f32, ...
f32 = DType.f32
f16 = DType.f16
bf16 = DType.bf16
fp8_e4m3 = DType.fp8_e4m3
fp8_e5m2 = DType.fp8_e5m2
i32 = DType.i32
i64 = DType.i64
boolean = DType.boolean
