"""`python -m sinter import`: an ONNX MLP made with onnx.helper becomes a graph file and weight .npy
files that load back and compute what onnx's ReferenceEvaluator computes; bad input exits 1 with
one line, a bad command line 2."""

import os
import subprocess
import sys

import numpy as np
import pytest

import sinter
from sinter.cli import npy_file_name

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402


def run_import(*args, env=None):
    """Runs `python -m sinter import ARGS` in a new interpreter, as the C++ tool does."""
    return subprocess.run([sys.executable, "-m", "sinter", "import", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)


def mlp_model(rng, batch="batch"):
    """x [batch, 16] -> MatMul w1 + b1 -> Relu -> MatMul w2 + b2 -> y [batch, 8] (f32)."""
    weights = {"w1": rng.standard_normal((16, 32)) * 0.25, "b1": rng.standard_normal(32),
               "w2": rng.standard_normal((32, 8)) * 0.25, "b2": rng.standard_normal(8)}
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="fc1_bias"),
             helper.make_node("Relu", ["hb"], ["act"], name="act"),
             helper.make_node("MatMul", ["act", "w2"], ["o"], name="fc2"),
             helper.make_node("Add", ["o", "b2"], ["y"], name="fc2_bias")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.fixture
def mlp_file(tmp_path, rng):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(rng), str(path))
    return path


def test_import_writes_a_graph_and_weights_that_compute_what_onnx_does(tmp_path, mlp_file, rng):
    out, weights = tmp_path / "mlp.json", tmp_path / "weights"
    done = run_import(mlp_file, "-o", out, "--input-shape", "x=4,16", "--name", "my_mlp", "--weights-out", weights)
    assert done.returncode == 0, done.stderr
    assert "graph 'my_mlp'" in done.stdout and "4 weight" in done.stdout and "x f32 [4, 16]" in done.stdout
    assert done.stdout.count("\n\n") == 0  # one paragraph

    graph = sinter.Graph.from_json(out.read_text())  # validates
    assert graph.name == "my_mlp"
    assert [t.name for t in graph.inputs] == ["x", "w1", "b1", "w2", "b2"]
    assert [t.name for t in graph.outputs] == ["y"]

    shapes = {"w1": (16, 32), "b1": (32,), "w2": (32, 8), "b2": (8,)}
    assert sorted(os.listdir(weights)) == sorted(f"{n}.npy" for n in shapes)
    loaded = {n: np.load(weights / f"{n}.npy") for n in shapes}
    assert {n: a.shape for n, a in loaded.items()} == shapes
    assert all(a.dtype == np.float32 for a in loaded.values())

    x = rng.standard_normal((4, 16)).astype(np.float32)
    got = sinter.run_reference(graph, {"x": x, **loaded})["y"]
    want = ReferenceEvaluator(str(mlp_file)).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_weights_of_dtypes_numpy_lacks_are_written_as_float32(tmp_path):
    import ml_dtypes

    w = np.arange(6, dtype=np.float32).reshape(2, 3) / 8
    init = numpy_helper.from_array(w.astype(ml_dtypes.bfloat16), "w/bf16")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w/bf16"], ["y"], name="mm")], "bf16_mm",
                              [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [4, 3])], [init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.save(model, str(tmp_path / "bf16.onnx"))
    done = run_import(tmp_path / "bf16.onnx", "-o", tmp_path / "g.json", "--weights-out", tmp_path / "w")
    assert done.returncode == 0, done.stderr
    # the C++ tool's file name for "w/bf16": the '/' escaped
    saved = np.load(tmp_path / "w" / "w%2Fbf16.npy")
    assert saved.dtype == np.float32
    np.testing.assert_array_equal(saved, w)


def test_npy_file_names_match_the_cpp_tool():
    # tools/sinter/npy.hpp's examples, and tests/CMakeLists.txt's "%2E.%2F..%2Fescaped" case
    assert npy_file_name("w1") == "w1.npy"
    assert npy_file_name("layer.0/attn-q_w") == "layer.0%2Fattn-q_w.npy"
    assert npy_file_name("../x") == "%2E.%2Fx.npy"
    assert npy_file_name("../../escaped") == "%2E.%2F..%2Fescaped.npy"
    assert npy_file_name("é") == "%C3%A9.npy"


def test_without_weights_out_the_summary_says_so(tmp_path, mlp_file):
    done = run_import(mlp_file, "-o", tmp_path / "g.json", "--input-shape", "x=2,16")
    assert done.returncode == 0, done.stderr
    assert "--weights-out" in done.stdout
    assert sinter.Graph.load(str(tmp_path / "g.json")).find_tensor("y").shape == (2, 8)


def one_line_error(done, *fragments):
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sinter: "), done.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_a_missing_model_is_invalid_input(tmp_path):
    done = run_import(tmp_path / "none.onnx", "-o", tmp_path / "g.json")
    one_line_error(done, "I/O error", "none.onnx")
    assert not (tmp_path / "g.json").exists()


def test_a_file_that_is_not_onnx_is_invalid_input(tmp_path):
    (tmp_path / "bad.onnx").write_bytes(b"\xff\x00 not a protobuf \x93")
    one_line_error(run_import(tmp_path / "bad.onnx", "-o", tmp_path / "g.json"), "parse error", "bad.onnx")


def test_an_unsupported_op_names_the_op_and_node(tmp_path):
    graph = helper.make_graph([helper.make_node("CumSum", ["x", "axis"], ["y"], name="running_total")], "cumsum",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])],
                              [numpy_helper.from_array(np.array(1, np.int64), "axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(tmp_path / "cumsum.onnx"))
    done = run_import(tmp_path / "cumsum.onnx", "-o", tmp_path / "g.json")
    one_line_error(done, "unsupported", "CumSum", "running_total")


def test_a_symbolic_dimension_without_input_shape_is_invalid_input(tmp_path, mlp_file):
    one_line_error(run_import(mlp_file, "-o", tmp_path / "g.json"), "'x'", "input_shapes")


def test_without_onnx_the_importer_says_what_to_install(tmp_path, mlp_file):
    # a module named onnx that fails to import, first on the path: as if onnx were not installed
    (tmp_path / "onnx").mkdir()
    (tmp_path / "onnx" / "__init__.py").write_text("raise ImportError('no onnx here')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    done = run_import(mlp_file, "-o", tmp_path / "g.json", env=env)
    one_line_error(done, "needs the onnx package", "pip install onnx")


@pytest.mark.parametrize("args", [
    [],                                                   # no MODEL, no -o
    ["m.onnx"],                                           # no -o
    ["m.onnx", "-o", "g.json", "--input-shape", "x"],     # no '='
    ["m.onnx", "-o", "g.json", "--input-shape", "x=1,a"],
    ["m.onnx", "-o", "g.json", "--input-shape", "x=1", "--input-shape", "x=2"],
    ["m.onnx", "-o", "g.json", "--bogus"],
])
def test_a_bad_command_line_exits_2(tmp_path, args):
    done = run_import(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "error:" in done.stderr and "usage: sinter" in done.stderr
