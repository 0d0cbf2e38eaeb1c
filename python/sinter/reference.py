"""The CPU reference executor on numpy arrays.

Every op computes in float64 and each tensor's values are rounded to its dtype at the tensor
boundary by the library's own rule (round to nearest even; fp8 saturates), exactly as in C++.

Inputs: ``{name: array-like}`` for every graph input, of the declared shape. A float input takes
any real array (float64, float32, float16, ml_dtypes' bfloat16 and float8 types, integers); its
values are rounded to the input's dtype, so float32 values given for a bf16 input become bf16
values. An integer input takes integer or bool arrays, a bool input takes bool arrays: a float
array there would be silently truncated, so it is refused.

Outputs: ``{name: numpy array}``, one per graph output (and every intermediate with
``keep_intermediates=True``), of these numpy types:

    f32 -> float32, f16 -> float16, bf16 / fp8_e4m3 / fp8_e5m2 -> float32 holding the exact
    bf16 / fp8 values, i32 -> int32, i64 -> int64, bool -> bool

Every bf16 and fp8 value is exactly representable in float32, so nothing is lost, and numpy needs
no extension type for them.
"""

from typing import Mapping

import numpy as np

from . import _core
from .errors import InvalidArgumentError

_NUMPY_TYPE = {
    _core.DType.f32: np.float32,
    _core.DType.f16: np.float16,
    _core.DType.bf16: np.float32,
    _core.DType.fp8_e4m3: np.float32,
    _core.DType.fp8_e5m2: np.float32,
    _core.DType.i32: np.int32,
    _core.DType.i64: np.int64,
    _core.DType.boolean: np.bool_,
}


def numpy_type(dtype: "_core.DType") -> type:
    """The numpy type run_reference returns for a tensor of ``dtype``."""
    return _NUMPY_TYPE[dtype]


def _is_real_float(array: np.ndarray) -> bool:
    # ml_dtypes' bfloat16 and float8 types are numpy "V" kinds that convert to float64 exactly.
    return array.dtype.kind in "fiub" or array.dtype.name.startswith(("bfloat16", "float8"))


def _input_values(name: str, dtype: "_core.DType", value) -> np.ndarray:
    """``value`` as the C-contiguous float64 array the extension reads, after checking its kind."""
    array = np.asarray(value)
    if dtype == _core.DType.boolean:
        ok = array.dtype.kind == "b"
    elif dtype.is_integer:
        ok = array.dtype.kind in "iub"
    else:
        ok = _is_real_float(array)
    if not ok:
        raise InvalidArgumentError(
            f"run_reference: graph input '{name}' is {dtype.label}; found a numpy array of "
            f"{array.dtype} (a {dtype.label} input takes "
            + ("bool arrays)" if dtype == _core.DType.boolean else
               "integer or bool arrays)" if dtype.is_integer else "real arrays)"))
    # np.asarray keeps a 0-d array 0-d (np.ascontiguousarray makes it [1])
    return np.asarray(array, dtype=np.float64, order="C")


def run_reference(graph: "_core.Graph", inputs: Mapping[str, object], *,
                  keep_intermediates: bool = False,
                  round_intermediates: bool = True) -> dict:
    """Runs ``graph`` on the CPU. See the module's documentation for the array conventions.

    ``round_intermediates=False`` rounds only what a fused kernel rounds (graph outputs, casts,
    non-float tensors), keeping other float intermediates in float64.
    """
    values = {}
    for name, value in inputs.items():
        tensor = graph.find_tensor(name)
        # An unknown name is reported by the extension, with the graph's inputs listed.
        values[name] = (_input_values(name, tensor.dtype, value) if tensor is not None
                        else np.zeros((), np.float64))
    results = _core._run_reference(graph, values, keep_intermediates, round_intermediates)
    return {name: array.astype(_NUMPY_TYPE[graph.find_tensor(name).dtype])
            for name, array in results.items()}
