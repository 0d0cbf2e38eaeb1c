"""Models written in torch.nn and transformers' Llama, exported to ONNX by torch.onnx (the dynamo
exporter), imported with sinter.from_onnx and compared with onnxruntime on the same inputs: on the
CPU reference, and on the GPU through sinter.compile where one is usable. Skipped without torch,
onnx, onnxscript (the exporter's dependency) or onnxruntime (and transformers, for its Llama),
saying which."""

import io
import warnings

import numpy as np
import pytest

import sinter
from conftest import rel_l2

torch = pytest.importorskip("torch", reason="exporting torch models to ONNX needs PyTorch")
onnx = pytest.importorskip("onnx", reason="the ONNX tests need onnx")
pytest.importorskip("onnxscript", reason="torch.onnx's dynamo exporter needs onnxscript")
ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
import torch_models  # noqa: E402

GPU = sinter.gpu_availability()["available"] and torch.cuda.is_available()


# transformers' LlamaForCausalLM (torch_models.HfLlama) from embeddings and from token ids
HF_NAMES = ["hf_llama", "hf_llama_ids"]


def exported(name):
    """(ONNX model, feeds as numpy arrays) of torch model `name` in float32."""
    if name in HF_NAMES:
        pytest.importorskip("transformers", reason="the transformers Llama needs transformers")
        model, inputs = torch_models.build_hf_llama(from_ids=name == "hf_llama_ids")
    else:
        model, inputs = torch_models.build(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model, inputs, dynamo=True, opset_version=18, verbose=False)
    proto = program.model_proto
    feeds = {i.name: x.numpy() for i, x in zip(proto.graph.input, inputs)}
    return proto, feeds


def onnxruntime_outputs(proto, feeds):
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return dict(zip([o.name for o in proto.graph.output], session.run(None, feeds)))


@pytest.mark.parametrize("name", torch_models.NAMES + HF_NAMES)
def test_reference_matches_onnxruntime(name):
    proto, feeds = exported(name)
    imported = sinter.import_onnx(proto)
    got = sinter.run_reference(imported.graph, {**feeds, **imported.initializers})
    for output, want in onnxruntime_outputs(proto, feeds).items():
        error = rel_l2(got[output], want)
        print(f"{name} (ONNX, reference): relative L2 error {error:.3g}")
        assert error <= 1e-5, f"{output}: relative L2 error {error:.3g}"


@pytest.mark.skipif(not GPU, reason="the ONNX GPU test needs a CUDA device and a GPU Sinter can use")
@pytest.mark.parametrize("name", torch_models.NAMES + HF_NAMES)
def test_gpu_plan_matches_onnxruntime(name):
    proto, feeds = exported(name)
    imported = sinter.import_onnx(proto)
    plan = sinter.compile(imported.graph)
    device = torch.device("cuda", torch.cuda.current_device())
    # copies that keep each array's layout (a transposed weight stays a transposed view)
    tensors = {n: torch.from_numpy(np.array(v, order="K", copy=True)).to(device)
               for n, v in {**feeds, **imported.initializers}.items()}
    got = sinter.run_torch(plan, tensors)
    torch.cuda.synchronize()
    for output, want in onnxruntime_outputs(proto, feeds).items():
        error = rel_l2(got[output].float().cpu().numpy(), want)
        print(f"{name} (ONNX, GPU plan): relative L2 error {error:.3g}")
        assert error <= 1e-5, f"{output}: relative L2 error {error:.3g}"
