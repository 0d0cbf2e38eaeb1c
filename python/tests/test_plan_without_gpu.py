"""compile, Plan and Runner on a machine without a GPU: plans load, save and describe; compiling
and running raise the library's CudaError, never crash. (The GPU tests run them for real.)"""

import os

import pytest

import sinter

NO_GPU = not sinter.gpu_availability()["available"]
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU")


@pytest.fixture
def bundle(repo):
    # A small valid plan made on the CPU by the C++ tests' fixture: a cuBLASLt matmul and three
    # jit pointwise steps.
    return os.path.join(repo, "tests", "fuzz", "plan_corpus", "seed_bundle_chain3.plan")


def small_graph():
    g = sinter.Graph("mlp")
    x = g.input("x", sinter.bf16, [64, 128])
    w = g.input("w", sinter.bf16, [128, 256])
    g.output(g.relu(x @ w), "y")
    return g


def test_gpu_availability_says_why():
    a = sinter.gpu_availability()
    assert set(a) == {"available", "count", "reason"}
    if not a["available"]:
        assert a["reason"]


@needs_no_gpu
@pytest.mark.parametrize("tune", ["heuristic", "fast", sinter.TuneMode.exhaustive])
def test_compile_without_a_gpu_raises_cuda_error(tune):
    with pytest.raises(sinter.CudaError) as info:
        sinter.compile(small_graph(), tune=tune, engines=["jit"])
    assert info.value.code == sinter.ErrorCode.cuda
    assert info.value.message.startswith("compiling a plan needs a GPU")


def test_compile_checks_its_options_first():
    with pytest.raises(sinter.InvalidArgumentError) as info:
        sinter.compile(small_graph(), tune="quick")
    assert info.value.message == "compile: tune='quick' is not one of 'heuristic', 'fast', 'exhaustive'"
    with pytest.raises(sinter.InvalidArgumentError, match="fusion: 'fuse_all' is not one of"):
        sinter.compile(small_graph(), fusion={"fuse_all": False})


def test_a_bundle_loads_and_describes(bundle):
    plan = sinter.Plan.load(bundle)
    d = plan.describe()
    assert d["graph"] == plan.graph.name
    assert [t["name"] for t in d["inputs"]] == [t.name for t in plan.graph.inputs]
    assert [s["engine"] for s in d["steps"]][0] == "cublaslt"
    assert d["memory"]["device_bytes"] > 0
    assert "cublaslt" in plan.describe_text()


def test_a_bundle_saves_to_the_same_bytes(bundle, tmp_path):
    plan = sinter.Plan.load(bundle)
    path = str(tmp_path / "copy.plan")
    plan.save(path)
    with open(bundle, "rb") as f:
        original = f.read()
    assert plan.to_bytes() == original
    assert sinter.Plan.load(path).to_bytes() == original
    assert sinter.Plan.from_bytes(original).describe() == plan.describe()


def test_a_damaged_bundle_is_refused(bundle):
    with open(bundle, "rb") as f:
        data = bytearray(f.read())
    with pytest.raises(sinter.CorruptBundleError) as info:
        sinter.Plan.from_bytes(bytes(data[: len(data) // 2]), source="half.plan")
    assert "half.plan" in info.value.message
    with pytest.raises(sinter.IoError):
        sinter.Plan.load(bundle + ".missing")


@needs_no_gpu
@pytest.mark.parametrize("mode", ["stream", "graph", "mega", sinter.ExecMode.mega])
def test_a_runner_without_a_gpu_raises_cuda_error(bundle, mode):
    plan = sinter.Plan.load(bundle)
    with pytest.raises(sinter.CudaError) as info:
        sinter.Runner(plan, mode=mode)
    assert info.value.message


def test_a_runner_checks_its_mode(bundle):
    with pytest.raises(sinter.InvalidArgumentError) as info:
        sinter.Runner(sinter.Plan.load(bundle), mode="turbo")
    assert info.value.message == "Runner: mode='turbo' is not one of 'stream', 'graph', 'mega'"


def test_a_runner_checks_its_segments_choice(bundle):
    with pytest.raises(sinter.InvalidArgumentError) as info:
        sinter.Runner(sinter.Plan.load(bundle), mode="mega", segments="fastest")
    assert info.value.message == "Runner: segments='fastest' is not one of 'as_planned', 'all_megakernels'"


def test_explain_and_engines_need_no_gpu():
    d = sinter.explain(small_graph())
    assert d["graph"] == "mlp"
    assert len(d["regions"]) == 1 and d["regions"][0]["kind"] == "matmul"
    unfused = sinter.explain(small_graph(), fusion={"fuse_epilogues": False})
    assert len(unfused["regions"]) == 2
    assert "jit" in sinter.engine_names()


def test_a_runner_checks_its_graph_streams(bundle):
    with pytest.raises(sinter.InvalidArgumentError) as info:
        sinter.Runner(sinter.Plan.load(bundle), mode="graph", graph_streams=0)
    assert "graph_streams is 0; it must be 1 (one chain) to 64" in info.value.message
