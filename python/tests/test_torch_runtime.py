"""sinter.TorchRunner / run_torch without a GPU: a real Plan (a saved bundle) and a fake runner that
records what it is asked to bind and enqueue, on CPU tensors. The checks and the binding are
what is tested here; tests/test_torch_gpu.py runs plans for real."""

import gc
import os
import weakref

import pytest

import sinter
from sinter.torch_runtime import TensorSpec, check_tensor

torch = pytest.importorskip("torch", reason="the torch runtime's tests need PyTorch (pip install torch)")

CPU = torch.device("cpu")


class FakeRunner:
    """A stand-in for sinter.Runner: the plan, and a record of set_tensor_address and enqueue."""

    def __init__(self, plan):
        self.plan = plan
        self.addresses = {}
        self.enqueued = []

    def set_tensor_address(self, name, address):
        self.addresses[name] = address

    def enqueue(self, stream=0):
        self.enqueued.append(stream)


@pytest.fixture
def plan(repo):
    # x f32 [64, 32], w f32 [32, 16] -> y f32 [64, 16]: a matmul and three pointwise steps.
    return sinter.Plan.load(os.path.join(repo, "tests", "fuzz", "plan_corpus", "seed_bundle_chain3.plan"))


@pytest.fixture
def fake(plan):
    return FakeRunner(plan)


def tensors():
    return {"x": torch.randn(64, 32), "w": torch.randn(32, 16)}


def test_binds_every_tensor_by_name_and_allocates_the_outputs(fake):
    runner = sinter.TorchRunner(fake, device="cpu")
    assert runner.input_names == ["x", "w"] and runner.output_names == ["y"]
    inputs = tensors()
    out = runner(inputs, stream=7)
    y = out["y"]
    assert list(out) == ["y"]
    assert y.shape == (64, 16) and y.dtype == torch.float32 and y.device == CPU and y.stride() == (16, 1)
    assert fake.addresses == {"x": inputs["x"].data_ptr(), "w": inputs["w"].data_ptr(), "y": y.data_ptr()}
    assert fake.enqueued == [7]


def test_a_given_output_is_bound_as_it_is(fake):
    runner = sinter.TorchRunner(fake, device=CPU)
    y = torch.empty(64, 16)
    out = sinter.run_torch(runner, tensors(), {"y": y}, stream=0)
    assert out["y"] is y and fake.addresses["y"] == y.data_ptr()


def test_bound_tensors_stay_alive_until_the_next_call(fake):
    runner = sinter.TorchRunner(fake, device="cpu")
    inputs = tensors()
    alive = weakref.ref(inputs["x"])
    runner(inputs, stream=0)
    del inputs
    gc.collect()
    assert alive() is not None  # the plan may still be reading it
    runner(tensors(), stream=0)
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("change, message", [
    (lambda t: t.to(torch.float16), "input 'x' is torch.float16; the plan declares f32 (torch.float32)"),
    (lambda t: t[:, :16], "input 'x' has the shape [64, 16]; the plan declares [64, 32]"),
    (lambda t: t.t().contiguous().t(),
     r"input 'x' has the strides [1, 64] (in elements); the plan declares [32, 1]: call .contiguous() on it"),
    (lambda t: t.tolist(), "input 'x': expected a torch.Tensor; found list"),
])
def test_a_wrong_input_is_named_with_what_was_expected(fake, change, message):
    runner = sinter.TorchRunner(fake, device="cpu")
    inputs = tensors()
    inputs["x"] = change(inputs["x"])
    with pytest.raises(sinter.InvalidArgumentError) as info:
        runner(inputs, stream=0)
    assert info.value.message == message
    assert fake.enqueued == [] and fake.addresses == {}  # nothing bound before every check passed


def test_a_tensor_on_another_device_is_refused(fake):
    runner = sinter.TorchRunner(fake)  # a runner of device 0: CUDA
    with pytest.raises(sinter.InvalidArgumentError) as info:
        runner(tensors(), stream=0)
    assert info.value.message == "input 'x' is on cpu; the plan runs on cuda:0 (move it with .to('cuda:0'))"
    with pytest.raises(sinter.InvalidArgumentError, match="input 'x' is on cpu; the plan runs on cuda:0"):
        sinter.run_torch(fake, tensors(), stream=0)  # a runner is wrapped the same way


def test_a_wrong_output_is_named(fake):
    runner = sinter.TorchRunner(fake, device="cpu")
    with pytest.raises(sinter.InvalidArgumentError, match=r"output 'y' has the shape \[16, 64\]; the plan declares \[64, 16\]"):
        runner(tensors(), {"y": torch.empty(16, 64)}, stream=0)


def test_names_must_be_the_plans(fake):
    runner = sinter.TorchRunner(fake, device="cpu")
    with pytest.raises(sinter.InvalidArgumentError) as info:
        runner({"x": torch.randn(64, 32)}, stream=0)
    assert info.value.message == "input 'w' is missing; the plan's inputs are 'x', 'w'"
    with pytest.raises(sinter.InvalidArgumentError, match="the plan has no input 'bias'; its inputs are 'x', 'w'"):
        runner({**tensors(), "bias": torch.randn(16)}, stream=0)
    with pytest.raises(sinter.InvalidArgumentError, match="the plan has no output 'z'; its outputs are 'y'"):
        runner(tensors(), {"z": torch.empty(64, 16)}, stream=0)


def test_strides_of_size_one_axes_are_not_compared():
    spec = TensorSpec("row", sinter.bf16, [1, 4], [4, 1])
    check_tensor("input", spec, torch.randn(4, 1, dtype=torch.bfloat16).t(), CPU)  # strides (1, 1)
    view = TensorSpec("wt", sinter.f32, [3, 4], [1, 3])  # a column-major view
    check_tensor("input", view, torch.randn(4, 3).t(), CPU)
    with pytest.raises(sinter.InvalidArgumentError, match="lay it out with those strides"):
        check_tensor("input", view, torch.randn(3, 4), CPU)


def test_a_plan_needs_a_cuda_device_and_a_runner_a_plan(plan):
    with pytest.raises(sinter.InvalidArgumentError, match="device cpu is not a CUDA device"):
        sinter.TorchRunner(plan, device="cpu")
    with pytest.raises(TypeError, match="expected a sinter.Plan or a sinter.Runner; found str"):
        sinter.TorchRunner("model.plan")
    with pytest.raises(TypeError, match="stream: expected a torch.cuda.Stream"):
        sinter.TorchRunner(FakeRunner(plan), device="cpu")(tensors(), stream="default")


@pytest.mark.skipif(sinter.gpu_availability()["available"], reason="this machine has a GPU")
def test_a_plan_without_a_gpu_raises_cuda_error(plan):
    with pytest.raises(sinter.CudaError):
        sinter.TorchRunner(plan, device=0)


def test_an_output_overlapping_another_tensor_is_refused(fake):
    runner = sinter.TorchRunner(fake, device="cpu")
    inputs = tensors()
    # y as a view into x's memory: the plan would overwrite what it reads
    y = inputs["x"].view(-1)[: 64 * 16].view(64, 16)
    with pytest.raises(sinter.InvalidArgumentError, match="output 'y' overlaps input 'x' in memory"):
        runner(inputs, {"y": y}, stream=0)
    assert fake.enqueued == []
    # separate memory is fine, and two inputs may share memory (both only read)
    shared = torch.randn(64, 32)
    runner({"x": shared, "w": shared[:32, :16].contiguous()}, stream=0)
    assert len(fake.enqueued) == 1


def test_bind_once_then_enqueue_without_checks(fake):
    runner = sinter.TorchRunner(fake, device="cpu")
    with pytest.raises(sinter.InvalidArgumentError, match="nothing is bound yet"):
        runner.enqueue(stream=3)
    inputs = tensors()
    out = runner.bind(inputs)
    assert fake.enqueued == [] and fake.addresses["y"] == out["y"].data_ptr()
    for _ in range(3):
        runner.enqueue(stream=3)
    assert fake.enqueued == [3, 3, 3]
    assert fake.addresses == {"x": inputs["x"].data_ptr(), "w": inputs["w"].data_ptr(), "y": out["y"].data_ptr()}


def test_a_new_bind_releases_the_old_tensors(fake):
    runner = sinter.TorchRunner(fake, device="cpu")
    inputs = tensors()
    alive = weakref.ref(inputs["x"])
    runner.bind(inputs)
    runner.enqueue(stream=0)
    del inputs
    gc.collect()
    assert alive() is not None
    other = tensors()
    runner.bind(other)
    gc.collect()
    assert alive() is None and fake.addresses["x"] == other["x"].data_ptr()
