"""``python -m sinter``: the commands of the sinter tool that are written in Python.

    python -m sinter import MODEL.onnx -o GRAPH.json [--name NAME]
                           [--input-shape NAME=D0,D1,...]... [--weights-out DIR]

``import`` turns an ONNX model into a graph file (docs/graph-format.md, what ``sinter check`` and
``sinter run`` read) through ``sinter.import_onnx``. With ``--weights-out DIR`` it also writes each
weight input's value as ``DIR/NAME.npy``, the file name ``sinter run --load-inputs DIR`` looks for
(``npy_file_name``). The C++ tool's ``sinter import`` runs this module.

Exit codes, as the C++ tool's (``sinter --help``): 0 ok; 1 invalid input (a ``sinter.Error``, a
file that cannot be read or written, a missing ``onnx`` package), one line on stderr; 2 a command
line that does not parse; 4 an internal error (a bug: the traceback, then one line).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import textwrap
import traceback
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import _core
from .errors import Error, InternalError, IoError, ParseError
from .onnx_import import _onnx, import_onnx

EXIT_OK = 0
EXIT_INVALID_INPUT = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 4

_PLAIN_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


def npy_file_name(name: str) -> str:
    """The .npy file name of a tensor, as the C++ tool's ``npy_file_name`` (tools/sinter/npy.cpp)
    makes it: each byte of the UTF-8 name outside [A-Za-z0-9_.-], and a leading '.', written as
    %XX, so that every name gives a distinct file inside the folder ("../x" -> "%2E.%2Fx.npy")."""
    out = []
    for i, byte in enumerate(name.encode("utf-8")):
        plain = byte in _PLAIN_BYTES and not (byte == ord(".") and i == 0)
        out.append(chr(byte) if plain else f"%{byte:02X}")
    return "".join(out) + ".npy"


def _input_shape(text: str):
    """``NAME=D0,D1,...`` as (name, [dims]); ``NAME=`` is a scalar (rank 0)."""
    name, eq, dims = text.rpartition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=D0,D1,... (e.g. x=1,128), not '{text}'")
    try:
        shape = [int(d) for d in dims.split(",")] if dims.strip() else []
    except ValueError:
        raise argparse.ArgumentTypeError(f"the dimensions of '{text}' are not integers") from None
    return name, shape


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sinter", description="The sinter tool's Python commands (the others: the C++ tool, sinter --help).",
        epilog="Exit codes: 0 ok; 1 invalid input; 2 the command line does not parse; 4 internal error "
               "(a bug: please report it).")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    imp = commands.add_parser(
        "import", help="import an ONNX model as a graph file",
        description="Import an ONNX model (opset 17 to 23; needs the onnx package) as a Sinter graph file "
                    "(docs/graph-format.md), optionally with its weights as .npy files.")
    imp.add_argument("model", metavar="MODEL", help="ONNX model file (.onnx)")
    imp.add_argument("-o", "--output", required=True, metavar="GRAPH", help="graph file to write (.json)")
    imp.add_argument("--name", help="the graph's name (default: the ONNX graph's name)")
    imp.add_argument("--input-shape", action="append", type=_input_shape, default=[], metavar="NAME=D0,D1,...",
                     help="the static shape of an ONNX input with symbolic dimensions (repeatable)")
    imp.add_argument("--weights-out", metavar="DIR",
                     help="write each weight input as DIR/NAME.npy (bf16 and fp8 as float32 holding the exact "
                          "values), as `sinter run --load-inputs DIR` reads them")
    imp.set_defaults(run=cmd_import, parser=imp)
    return parser


def _load_model(path: str):
    onnx = _onnx()  # ImportError naming the package when onnx is missing
    if os.path.isdir(path):
        raise IoError(f"cannot read the ONNX model '{path}': it is a directory")
    try:
        return onnx.load(path)
    except OSError as e:
        raise IoError(f"cannot read the ONNX model '{path}': {e.strerror or e}") from e
    except Exception as e:  # protobuf's DecodeError, onnx's checks of external data
        raise ParseError(f"'{path}' is not an ONNX model: {type(e).__name__}: {e}") from e


def _npy_array(array: np.ndarray) -> np.ndarray:
    """An array the C++ tool's read_npy takes: C order, little-endian, and float32 for the dtypes
    numpy lacks (ml_dtypes' bfloat16 and float8, whose values float32 holds exactly)."""
    if array.dtype.kind not in "biuf":
        array = array.astype(np.float32)
    return np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")


def _write_weights(folder: str, weights: Dict[str, np.ndarray]) -> int:
    """Writes each weight as folder/npy_file_name(name); returns the bytes of the values written."""
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise IoError(f"cannot create the folder '{folder}': {e.strerror or e}") from e
    total = 0
    for name, value in weights.items():
        path = os.path.join(folder, npy_file_name(name))
        array = _npy_array(np.asarray(value, order="C"))  # C order: a transposed weight as its values
        try:
            np.save(path, array, allow_pickle=False)
        except OSError as e:
            raise IoError(f"cannot write '{path}': {e.strerror or e}") from e
        total += array.nbytes
    return total


def _write_graph(graph: "_core.Graph", path: str) -> None:
    """Writes the graph's JSON after loading it back, so that the file is one `sinter check` takes."""
    text = graph.to_json()
    try:
        _core.Graph.from_json(text, source=path)
    except Error as e:
        raise InternalError(f"the imported graph's JSON does not load back: {e}") from e
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise IoError(f"cannot write the graph file '{path}': {e.strerror or e}") from e


def _tensor_text(t) -> str:
    return f"{t.name} {t.dtype.label} [{', '.join(str(d) for d in t.shape)}]"


def _size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _summary(args, graph, weights: Dict[str, np.ndarray], written_bytes: Optional[int]) -> str:
    ops = collections.Counter(n["op"].name for n in graph.nodes)
    op_text = ", ".join(f"{op} {count}" for op, count in ops.most_common())
    data_inputs = [t for t in graph.inputs if t.name not in weights]
    parts = [f"Imported {args.model} as graph '{graph.name}': {_plural(len(graph.nodes), 'op')} ({op_text});",
             f"{_plural(len(data_inputs), 'input')} ({'; '.join(_tensor_text(t) for t in data_inputs) or 'none'})",
             f"and {_plural(len(weights), 'weight input')};",
             f"{_plural(len(graph.outputs), 'output')} ({'; '.join(_tensor_text(t) for t in graph.outputs)}).",
             f"Wrote {args.output}."]
    if written_bytes is not None:
        parts.append(f"Wrote {_plural(len(weights), 'weight')} ({_size_text(written_bytes)}) to "
                     f"{args.weights_out} as NAME.npy;")
        if data_inputs:
            parts.append(f"with {', '.join(npy_file_name(t.name) for t in data_inputs)} added there, "
                         f"`sinter run {args.output} --load-inputs {args.weights_out}` runs it.")
        else:
            parts.append(f"`sinter run {args.output} --load-inputs {args.weights_out}` runs it.")
    elif weights:
        parts.append("The weights' values were not written (--weights-out DIR writes them).")
    return textwrap.fill(" ".join(parts), width=100, break_on_hyphens=False, break_long_words=False)


def cmd_import(args) -> int:
    shapes: Dict[str, List[int]] = {}
    for name, shape in args.input_shape:
        if name in shapes:
            args.parser.error(f"argument --input-shape: '{name}' is given twice")  # exits 2
        shapes[name] = shape
    model = _load_model(args.model)
    imported = import_onnx(model, name=args.name, input_shapes=shapes)
    _write_graph(imported.graph, args.output)
    written = _write_weights(args.weights_out, imported.initializers) if args.weights_out else None
    print(_summary(args, imported.graph, imported.initializers, written))
    return EXIT_OK


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)  # exits 2 with a message on a bad command line
    try:
        return args.run(args)
    except InternalError as e:
        traceback.print_exc()
        print(f"sinter: {e}", file=sys.stderr)
        return EXIT_INTERNAL
    except Error as e:
        print(f"sinter: {e}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    except ImportError as e:  # the onnx package (or one it needs) is missing
        print(f"sinter: {e}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    except Exception as e:  # a bug in Sinter: the traceback helps its report
        traceback.print_exc()
        print(f"sinter: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_INTERNAL
