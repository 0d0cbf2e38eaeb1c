#!/usr/bin/env bash
# `sinter import` end to end through the C++ tool: an ONNX MLP (made with onnx.helper) imported by
# `sinter import --python PYTHON` with the build's module on PYTHONPATH, its weights written as
# .npy files, run by `sinter run --load-inputs` on the CPU reference, and the output compared with
# onnx's ReferenceEvaluator. Exits 77 (skipped) when PYTHON has no numpy or onnx.
#   check_import.sh SINTER PYTHON MODULE_DIR
set -euo pipefail
sinter="$1"
python="$2"
export PYTHONPATH="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
if ! "$python" -c "import numpy, onnx, sinter" 2>"$work/why"; then
  echo "skip: $python cannot import numpy, onnx and sinter: $(tail -n 1 "$work/why")"
  exit 77
fi
cd "$work"
"$python" - <<'PY'
import numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(5)
weights = {"layer.0/w": (16, 32), "layer.0/b": (32,), "w2": (32, 8)}
inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32) * 0.25, n) for n, s in weights.items()]
nodes = [helper.make_node("MatMul", ["x", "layer.0/w"], ["h"], name="fc1"),
         helper.make_node("Add", ["h", "layer.0/b"], ["hb"], name="bias"),
         helper.make_node("Relu", ["hb"], ["a"], name="relu"),
         helper.make_node("MatMul", ["a", "w2"], ["y"], name="fc2")]
graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 10
onnx.save(model, "mlp.onnx")
PY
"$sinter" import mlp.onnx -o mlp.json --input-shape x=4,16 --weights-out inputs --python "$python"
"$sinter" check mlp.json --brief
"$python" -c "import numpy as np; np.save('inputs/x.npy', np.random.default_rng(6).standard_normal((4, 16)).astype(np.float32))"
"$sinter" run mlp.json --on cpu --load-inputs inputs --save-outputs outputs
"$python" - <<'PY'
import numpy as np
from onnx.reference import ReferenceEvaluator

x = np.load("inputs/x.npy")
want = ReferenceEvaluator("mlp.onnx").run(None, {"x": x})[0]
got = np.load("outputs/y.npy")
np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
print("ok: sinter run's output of the imported graph and weights equals onnx's ReferenceEvaluator's")
PY
