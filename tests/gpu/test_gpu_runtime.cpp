// The public runtime (sinter/runner.hpp) on the GPU: binding by name and its errors, graph mode
// rebinding by update, caller-owned workspace, several runners of one plan on several threads, and
// a plan for another architecture refused. Results are compared with the CPU reference.
#include <cuda_runtime_api.h>

#include <cstring>
#include <thread>

#include "example_graphs.hpp"
#include "gpu/plan_graphs.hpp"
#include "gpu/region_check.hpp"
#include "plan/plan_state.hpp"

namespace sinter::testing {
namespace {

TEST_F(GpuRegions, RunnerBindingErrorsNameWhatIsWrong) {
  const Graph g = examples::mlp_layer();
  const Plan plan = compile(g, with_test_cache({}));
  Runner runner(plan);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  auto [code, message] = error_of([&] { runner.enqueue(s); });
  EXPECT_EQ(code, ErrorCode::invalid_state);
  EXPECT_TRUE(contains(message, "unbound: ")) << message;
  for (TensorId t : g.inputs()) EXPECT_TRUE(contains(message, "'" + g.tensor(t).name + "'")) << message;
  DeviceTensors io(plan);
  std::tie(code, message) = error_of([&] { runner.set_tensor_address("no_such_tensor", io.address("x")); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(message, "has no tensor 'no_such_tensor'")) << message;
  std::tie(code, message) = error_of([&] { runner.set_tensor_address("x", static_cast<char*>(io.address("x")) + 16); });
  EXPECT_TRUE(contains(message, "not 256-byte aligned")) << message;
  std::vector<char> host(1 << 16);
  std::tie(code, message) = error_of([&] { runner.set_tensor_address("x", host.data() + (256 - reinterpret_cast<uintptr_t>(host.data()) % 256)); });
  EXPECT_TRUE(contains(message, "not device memory")) << message;
  std::tie(code, message) = error_of([&] { runner.set_tensor_address("x", nullptr); });
  EXPECT_TRUE(contains(message, "null address")) << message;
  // an intermediate: the MLP's matmul output feeds its epilogue inside one kernel, so take the
  // transformer block, whose regions store intermediates
  const Graph tb = examples::transformer_block();
  const Plan tb_plan = compile(tb, with_test_cache({}));
  Runner tb_runner(tb_plan);
  const std::string intermediate = tb_plan.describe().steps.front().outputs.front();
  std::tie(code, message) = error_of([&] { tb_runner.set_tensor_address(intermediate, io.address("x")); });
  EXPECT_TRUE(contains(message, "is an intermediate tensor")) << message;
  cudaStreamDestroy(s);
}

TEST_F(GpuRegions, GraphModeRebindsByUpdate) {
  for (const Graph& g : {examples::transformer_block(), pointwise_chain(20, 1000)}) {
    SCOPED_TRACE(g.name());
    CompileOptions o;
    if (g.name().rfind("pointwise_chain", 0) == 0) o.fusion = no_fusion();
    const Plan plan = compile(g, with_test_cache(o));
    TestPlan run(plan, ExecMode::graph);
    const TensorMap first = random_inputs(g, fresh_seed());
    expect_matches_reference(g, first, run.run(first));
    // New memory for every input and output: rebind, replay.
    DeviceTensors other(plan);
    const TensorMap second = random_inputs(g, fresh_seed());
    expect_matches_reference(g, second, run.run_rebound(other, second));
    const RunnerStats st = run.runner().stats();
    EXPECT_EQ(st.instantiations, 1) << "rebinding must update the graph, not instantiate it again";
    EXPECT_EQ(st.updates, 1);
    EXPECT_EQ(st.refused_updates, 0);
    EXPECT_EQ(st.captures, 2);
  }
}

// Graph mode captures the steps on several streams where they are independent: the Llama decode
// layer's q, k and v projections (and the transformer block's) sit on separate branches. The
// outputs match the CPU reference, and, on our kernels (deterministic: no atomics in any sum),
// equal bit for bit those of the same plan run step by step on one stream and captured as one
// chain (RunnerOptions::graph_streams = 1).
TEST_F(GpuRegions, GraphModeRunsIndependentStepsSideBySide) {
  for (const Graph& g : {examples::llama_decode_layer(), examples::transformer_block()}) {
    SCOPED_TRACE(g.name());
    {
      // the default plan (vendor steps among ours): right against the reference
      TestPlan branched(compile(g, with_test_cache({})), ExecMode::graph);
      const TensorMap in = random_inputs(g, fresh_seed());
      expect_matches_reference(g, in, branched.run(in));
      EXPECT_GE(branched.runner().stats().capture_streams, 3);
    }
    CompileOptions ours;
    ours.engines = {"jit", "alias"};
    const Plan plan = compile(g, with_test_cache(ours));
    const TensorMap in = random_inputs(g, fresh_seed());
    TestPlan branched(plan, ExecMode::graph);
    RunnerOptions chain_options = test_runner_options(ExecMode::graph);
    chain_options.graph_streams = 1;
    TestPlan chain(plan, chain_options);
    TestPlan stream(plan, ExecMode::stream);
    const TensorMap a = branched.run(in), b = chain.run(in), c = stream.run(in);
    expect_matches_reference(g, in, a);
    EXPECT_GE(branched.runner().stats().capture_streams, 3);
    EXPECT_EQ(chain.runner().stats().capture_streams, 1);
    for (const auto& [name, t] : a) {
      ASSERT_EQ(t.storage_bytes(), c.at(name).storage_bytes()) << name;
      EXPECT_EQ(std::memcmp(t.data(), c.at(name).data(), t.storage_bytes()), 0) << name << ": graph branches vs stream";
      EXPECT_EQ(std::memcmp(b.at(name).data(), c.at(name).data(), t.storage_bytes()), 0) << name << ": one chain vs stream";
    }
    // replays reuse the instantiated graph and stay right
    const TensorMap in2 = random_inputs(g, fresh_seed());
    expect_matches_reference(g, in2, branched.run(in2));
    EXPECT_EQ(branched.runner().stats().instantiations, 1);
  }
  RunnerOptions bad;
  bad.mode = ExecMode::graph;
  bad.graph_streams = 0;
  const Plan plan = compile(examples::mlp_layer(), with_test_cache({}));
  auto [code, message] = error_of([&] { Runner r(plan, bad); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(message, "graph_streams")) << message;
}

TEST_F(GpuRegions, CallerOwnedWorkspace) {
  const Graph g = examples::transformer_block();
  const Plan plan = compile(g, with_test_cache({}));
  const uint64_t need = plan.describe().memory.device_bytes;
  void* memory = nullptr;
  ASSERT_EQ(cudaMalloc(&memory, need), cudaSuccess);
  const auto [code, message] = error_of([&] { Runner(plan, RunnerOptions{ExecMode::stream, memory, need - 256}); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(message, "the plan needs " + std::to_string(need))) << message;
  {
    Runner runner(plan, RunnerOptions{ExecMode::stream, memory, need});
    DeviceTensors io(plan);
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(memory, 0xAB, need, s), cudaSuccess);  // not zero: the runner zeroes what must be
    const TensorMap inputs = random_inputs(g, fresh_seed());
    io.upload(inputs, s);
    io.bind(runner);
    runner.enqueue(s);
    expect_matches_reference(g, inputs, io.download(s));
    cudaStreamDestroy(s);
  }
  cudaFree(memory);
}

TEST_F(GpuRegions, RunnersShareOnePlanAcrossThreads) {
  const Graph g = examples::llama_decode_layer();
  const Plan plan = compile(g, with_test_cache({}));
  const TensorMap inputs_a = random_inputs(g, fresh_seed()), inputs_b = random_inputs(g, fresh_seed());
  TensorMap got_a, got_b;
  auto work = [&plan](const TensorMap& inputs, TensorMap& got) {
    cudaSetDevice(0);
    TestPlan run(plan);
    for (int i = 0; i < 20; ++i) got = run.run(inputs);
  };
  std::thread a(work, std::cref(inputs_a), std::ref(got_a)), b(work, std::cref(inputs_b), std::ref(got_b));
  a.join();
  b.join();
  expect_matches_reference(g, inputs_a, got_a);
  expect_matches_reference(g, inputs_b, got_b);
}

// A region the named engine cannot run goes to the jit engine, and the plan says why.
TEST_F(GpuRegions, FallbacksAreRecorded) {
  const Graph g = examples::transformer_block();
  CompileOptions o;
  o.engines = {"cublaslt"};
  const Plan plan = compile(g, with_test_cache(o));
  int fallbacks = 0, on_cublaslt = 0;
  for (const StepDescription& s : plan.describe().steps) {
    if (s.engine == "cublaslt") {
      ++on_cublaslt;
      EXPECT_EQ(s.fallback, "") << s.description;
    } else if (s.engine == "jit") {
      ++fallbacks;
      EXPECT_EQ(s.fallback.rfind("cublaslt: ", 0), 0u) << s.kind << ": '" << s.fallback << "'";
    }
  }
  EXPECT_GT(on_cublaslt, 0);
  EXPECT_GT(fallbacks, 0);
  TestPlan run(plan);
  const TensorMap inputs = random_inputs(g, fresh_seed());
  expect_matches_reference(g, inputs, run.run(inputs));
}

// A forced config is taken where it applies, even when not offered, and refused where it applies
// nowhere.
TEST_F(GpuRegions, ForcedCandidateConfigs) {
  const Graph g = examples::mlp_layer();
  CompileOptions o;
  o.engines = {"jit"};
  o.candidate_config = "matmul tile=generic";  // the mma.sync tile: offered last, taken when forced
  const Plan plan = compile(g, with_test_cache(o));
  ASSERT_EQ(plan.describe().steps.size(), 1u);
  EXPECT_EQ(plan.describe().steps[0].config, "matmul tile=generic");
  TestPlan run(plan);
  const TensorMap inputs = random_inputs(g, fresh_seed());
  expect_matches_reference(g, inputs, run.run(inputs));
  o.candidate_config = "pointwise unroll=2";
  const auto [code, message] = error_of([&] { (void)compile(g, with_test_cache(o)); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(message, "no region takes the forced candidate config 'pointwise unroll=2'")) << message;
}

TEST_F(GpuRegions, PlanForAnotherArchitectureIsRefused) {
  const Plan plan = compile(examples::mlp_layer(), with_test_cache({}));
  auto state = std::make_shared<Plan::State>();
  state->data = plan.state().data;
  state->data.target.arch = properties_.arch == "sm_80" ? "sm_90a" : "sm_80";
  const auto [code, message] = error_of([&] { Runner(Plan(state)); });
  EXPECT_EQ(code, ErrorCode::corrupt_bundle);
  EXPECT_TRUE(contains(message, "build the plan again on this GPU")) << message;
}

}  // namespace
}  // namespace sinter::testing
