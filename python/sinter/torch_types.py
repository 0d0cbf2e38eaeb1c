"""How Sinter's dtypes and torch's correspond, and moving tensor values between torch and the
CPU reference's numpy arrays. Shared by the torch importer, the torch runtime and the
torch.compile backend; imports torch only when called.

    f32 <-> torch.float32    f16 <-> torch.float16    bf16 <-> torch.bfloat16
    fp8_e4m3 <-> torch.float8_e4m3fn    fp8_e5m2 <-> torch.float8_e5m2
    i32 <-> torch.int32    i64 <-> torch.int64    bool <-> torch.bool

Any other torch dtype (float64, int8, uint8, complex, ...) has no Sinter equivalent.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import _core
from .errors import UnsupportedError

_TORCH_NAMES = {  # torch dtype attribute name -> Sinter dtype
    "float32": _core.DType.f32,
    "float16": _core.DType.f16,
    "bfloat16": _core.DType.bf16,
    "float8_e4m3fn": _core.DType.fp8_e4m3,
    "float8_e5m2": _core.DType.fp8_e5m2,
    "int32": _core.DType.i32,
    "int64": _core.DType.i64,
    "bool": _core.DType.boolean,
}


def torch_module():
    """torch, or an ImportError that says how to install it."""
    try:
        import torch
    except ImportError as e:
        raise ImportError("sinter's torch support needs PyTorch: pip install torch "
                          "(see python/README.md for a machine without a package registry)") from e
    return torch


def sinter_dtype_or_none(torch_dtype) -> Optional["_core.DType"]:
    """The Sinter dtype of a torch dtype, or None when Sinter has none."""
    return _TORCH_NAMES.get(str(torch_dtype).removeprefix("torch."))


def sinter_dtype(torch_dtype, what: str) -> "_core.DType":
    """The Sinter dtype of a torch dtype; UnsupportedError naming `what` when there is none."""
    dtype = sinter_dtype_or_none(torch_dtype)
    if dtype is None:
        raise UnsupportedError(f"{what} is {torch_dtype}; Sinter takes torch.float32, float16, bfloat16, "
                               "float8_e4m3fn, float8_e5m2, int32, int64 and bool")
    return dtype


def torch_dtype(dtype: "_core.DType"):
    """The torch dtype of a Sinter dtype."""
    torch = torch_module()
    for name, d in _TORCH_NAMES.items():
        if d == dtype:
            return getattr(torch, name)
    raise UnsupportedError(f"Sinter dtype {dtype.label} has no torch equivalent")


def as_torch_dtype(dtype):
    """A torch dtype from a torch dtype, a Sinter DType or a Sinter dtype label ("bf16")."""
    torch = torch_module()
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, _core.DType):
        return torch_dtype(dtype)
    if isinstance(dtype, str):
        for d in _TORCH_NAMES.values():
            if d.label == dtype:
                return torch_dtype(d)
    raise TypeError(f"expected a torch.dtype, a sinter.DType or a Sinter dtype name such as 'bf16'; "
                    f"found {dtype!r}")


def to_numpy(tensor) -> np.ndarray:
    """A CPU copy of a torch tensor as an array run_reference takes: bfloat16 and fp8 widened
    exactly to float32 (numpy has no such types); float16 and float32 kept as they are."""
    t = tensor.detach().cpu()
    if t.is_floating_point() and t.dtype not in (torch_module().float32, torch_module().float16):
        t = t.float()
    return t.contiguous().numpy()


def from_numpy(array: np.ndarray, dtype: "_core.DType", device):
    """A torch tensor of Sinter dtype `dtype` on `device` holding a run_reference result (which
    holds bf16 and fp8 values exactly in float32)."""
    torch = torch_module()
    return torch.from_numpy(np.asarray(array, order="C")).to(device=device, dtype=torch_dtype(dtype))
