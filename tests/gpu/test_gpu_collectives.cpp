// Collectives on the GPU through the nccl engine: world-1 collectives with a world-1 communicator
// (create_local({0})) in stream and graph mode and after a save/load, equal to the CPU reference;
// a Runner refusing a communicator of another world and a missing one; and, where this machine
// has two GPUs or more, one rank per visible GPU driven from this process (create_local), each
// rank's outputs equal to run_reference_ranks. Every test skips, saying why, without a GPU or
// without NCCL.
#include <cuda_runtime_api.h>


#include "gpu/gpu_test.hpp"
#include "gpu/region_check.hpp"
#include "gpu/test_plan.hpp"
#include "sinter/communicator.hpp"

namespace sinter::testing {
namespace {

class GpuCollectives : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    const NcclStatus s = nccl_status();
    if (!s.available) GTEST_SKIP() << "no NCCL: " << s.reason;
  }
};

void expect_close(const Graph& g, const TensorMap& want, const TensorMap& got, const std::string& who) {
  for (TensorId id : g.outputs()) {
    const std::string& name = g.tensor(id).name;
    const double err = relative_l2_error(got.at(name), want.at(name)), bound = relative_l2_bound(g, id);
    std::printf("  %-36s rel L2 %.3g (bound %.3g)\n", (who + "." + name).c_str(), err, bound);
    EXPECT_LE(err, bound) << who << " " << name;
  }
}

// Rank `rank` of `world`'s program: each collective kind, with pointwise work between them.
Graph rank_graph(int64_t world, const std::string& name) {
  Graph g(name);
  Tensor x = g.input("x", DType::f32, {8 * world, 64});
  Tensor h = g.all_reduce(x, "tp", world);
  g.output(g.reduce_scatter(g.relu(h), 0, "tp", world, CollectiveReduce::max), "scattered");
  Tensor b = g.input("b", DType::bf16, {1, 4, 32});
  g.output(g.all_gather(g.mul(b, 2.0), 0, "tp", world), "gathered");
  g.output(g.all_reduce(b, "tp", world), "summed");
  g.validate();
  return g;
}

}  // namespace

TEST_F(GpuCollectives, WorldOneRunsInStreamAndGraphModeAndAfterSaveLoad) {
  const std::vector<Communicator> comms = Communicator::create_local({0});
  ASSERT_EQ(comms.size(), 1u);
  EXPECT_EQ(comms[0].world(), 1);
  const Graph g = rank_graph(1, "collectives_w1");
  const Plan compiled = compile(g, with_test_cache({}));
  int collective_steps = 0;
  for (const StepDescription& s : compiled.describe().steps) {
    if (s.kind != "collective") continue;
    ++collective_steps;
    EXPECT_EQ(s.engine, "nccl");
    EXPECT_TRUE(contains(s.description, "(world 1: a copy)")) << s.description;
  }
  EXPECT_EQ(collective_steps, 4);
  const Plan loaded = Plan::from_bytes(compiled.to_bytes(), "collectives_w1.plan");
  for (const Plan* plan : {&compiled, &loaded}) {
    for (ExecMode mode : {ExecMode::stream, ExecMode::graph}) {
      RunnerOptions o = test_runner_options(mode);
      o.communicators["tp"] = comms[0];
      TestPlan t(*plan, o);
      for (int run = 0; run < 2; ++run) {  // graph mode: capture, then replay
        const TensorMap inputs = random_inputs(g, fresh_seed());
        expect_close(g, run_reference(g, inputs), t.run(inputs),
                     std::string(plan == &compiled ? "compiled" : "loaded") + (mode == ExecMode::graph ? ".graph" : ".stream"));
      }
    }
  }
  // world 1 needs no communicator
  TestPlan bare(compiled, ExecMode::stream);
  const TensorMap inputs = random_inputs(g, fresh_seed());
  expect_close(g, run_reference(g, inputs), bare.run(inputs), "unbound");
}

TEST_F(GpuCollectives, RunnerRefusesAWrongOrMissingCommunicator) {
  const std::vector<Communicator> comms = Communicator::create_local({0});
  const Graph g = rank_graph(2, "collectives_w2");
  const Plan plan = compile(g, with_test_cache({}));  // compiling needs no communicator
  RunnerOptions o;
  o.communicators["tp"] = comms[0];
  auto [code, message] = error_of([&] { Runner r(plan, o); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(message, "plan step ")) << message;
  EXPECT_TRUE(contains(message, "(nccl, nccl all_reduce sum")) << message;
  EXPECT_TRUE(contains(message, "the communicator bound to group 'tp' has world 1 (rank 0 of 1 on GPU 0)")) << message;
  EXPECT_TRUE(contains(message, "runs among world 2 ranks")) << message;
  std::tie(code, message) = error_of([&] { Runner r(plan); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(message, "no communicator is bound to group 'tp' (world 2)")) << message;
  o.communicators = {{"dp", comms[0]}};
  std::tie(code, message) = error_of([&] { Runner r(plan, o); });
  EXPECT_TRUE(contains(message, "(rank 0 of 1 on GPU 0) is bound to group 'dp', which no collective of graph "
                                "'collectives_w2' uses (its groups: 'tp')")) << message;
  o.communicators = {{"tp", Communicator()}};
  std::tie(code, message) = error_of([&] { Runner r(plan, o); });
  EXPECT_TRUE(contains(message, "the communicator bound to group 'tp' is empty")) << message;
}

// One rank per visible GPU, all driven from this process, one thread per rank (NCCL's calls of a
// group from one thread would need ncclGroupStart/End around them).
TEST_F(GpuCollectives, EveryVisibleGpuIsARank) {
  const int world = cuda::gpu_availability().device_count;
  if (world < 2) GTEST_SKIP() << "needs 2 GPUs or more for a group of world > 1; this machine has " << world;
  std::vector<int> devices;
  for (int d = 0; d < world; ++d) devices.push_back(d);
  const std::vector<Communicator> comms = Communicator::create_local(devices);
  const Graph g = rank_graph(world, "collectives_ranks");
  std::vector<Graph> graphs(world, g);
  std::vector<TensorMap> inputs;
  const uint64_t seed = fresh_seed();
  for (int r = 0; r < world; ++r) inputs.push_back(random_inputs(g, seed + r));
  const std::vector<TensorMap> want = run_reference_ranks(graphs, inputs);
  std::vector<Plan> plans;
  for (int r = 0; r < world; ++r) {
    CompileOptions co;
    co.device = r;
    plans.push_back(compile(g, with_test_cache(co)));
  }
  for (ExecMode mode : {ExecMode::stream, ExecMode::graph}) {
    // rank r: its runner, tensors and stream on GPU r
    struct Rank {
      Runner runner;
      DeviceTensors io;
      cudaStream_t stream = nullptr;
    };
    std::vector<std::unique_ptr<Rank>> ranks;
    for (int r = 0; r < world; ++r) {
      cuda::DeviceGuard guard(r);
      RunnerOptions o = test_runner_options(mode);
      o.device = r;
      o.communicators["tp"] = comms[r];
      ranks.push_back(std::make_unique<Rank>(Rank{Runner(plans[r], o), DeviceTensors(plans[r], r), nullptr}));
      ASSERT_EQ(cudaStreamCreateWithFlags(&ranks.back()->stream, cudaStreamNonBlocking), cudaSuccess);
      ranks.back()->io.bind(ranks.back()->runner);
    }
    std::vector<TensorMap> got(world);
    const std::vector<std::string> errors = each_rank(world, [&](int r) {
      Rank& k = *ranks[r];
      k.io.upload(inputs[r], k.stream);
      k.io.poison_outputs(k.stream);
      k.runner.poison_intermediates(k.stream);
      k.runner.enqueue(k.stream);
      got[r] = k.io.download(k.stream);
    });
    for (int r = 0; r < world; ++r) {
      cuda::DeviceGuard guard(r);
      cudaStreamDestroy(ranks[r]->stream);
      EXPECT_EQ(errors[r], "") << "rank " << r;
      if (errors[r].empty()) {
        expect_close(g, want[r], got[r], "rank" + std::to_string(r) + (mode == ExecMode::graph ? ".graph" : ".stream"));
      }
    }
  }
}

}  // namespace sinter::testing
