// Collectives inside megakernels, on one GPU: world-1 collectives as push and combine tasks;
// virtual ranks (Communicator::create_virtual: W ranks on one GPU, each a megakernel on its share
// of the SMs, exchanging through device memory as ranks on several GPUs do through NCCL's
// symmetric memory) running each collective kind and the tensor-parallel decode stack at W = 2
// and 4, equal to the CPU reference of the ranks and of the unsharded graph, over several launches
// (the receive buffers alternate halves by launch epoch); a rank that never launches ends in the
// others' watchdog with an error naming the group, never a hang; 1,000 replays bit-identical; a
// world-1 plan with an NCCL communicator through the megakernel; NCCL's symmetric memory
// (ncclMemAlloc + window) of a one-rank communicator, where this NCCL has it; and, on a machine
// with several GPUs, one rank per GPU through NCCL windows, a missing rank included.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>

#include "comm/communicator_state.hpp"
#include "comm/symmetric_memory.hpp"
#include "cuda/stream.hpp"
#include "example_graphs.hpp"
#include "gpu/gpu_test.hpp"
#include "gpu/region_check.hpp"
#include "gpu/test_plan.hpp"
#include "sinter/communicator.hpp"
#include "sinter/shard.hpp"

namespace sinter::testing {
namespace {

class GpuMegaCollectives : public GpuTest {};

// Our kernels for every region (vendor steps run between megakernel segments); collectives stay
// on the nccl engine, which is always allowed.
CompileOptions our_kernels_only() {
  CompileOptions o;
  o.engines = {"jit", "alias"};
  return o;
}

// Every collective kind, with pointwise work between them (rank `world`'s program).
Graph collective_graph(int64_t world) {
  Graph g("mega_collectives_w" + std::to_string(world));
  Tensor x = g.input("x", DType::f32, {8 * world, 600});
  Tensor h = g.all_reduce(g.mul(x, 3.0), "tp", world);
  g.output(g.reduce_scatter(g.relu(h), 0, "tp", world, CollectiveReduce::max), "scattered");
  Tensor b = g.input("b", DType::bf16, {1, 4, 4000});
  g.output(g.all_gather(g.mul(b, 2.0), 0, "tp", world), "gathered");
  g.output(g.all_reduce(b, "tp", world), "reduced");
  // 4001 elements: slots of 8002 bytes, the byte-wise path of the copies
  g.output(g.all_reduce(g.input("odd", DType::bf16, {1, 4001}), "tp", world), "odd_reduced");
  // a collective of world 1 of another group in the same megakernel: this rank's arrivals only
  g.output(g.all_reduce(g.mul(x, 0.5), "solo", 1), "solo");
  g.validate();
  return g;
}

// 6 collectives: push and combine each
constexpr int kCollectiveTaskKernels = 12;

double check_outputs(const Graph& g, const TensorMap& want, const TensorMap& got, const std::string& who) {
  double worst = 0;
  for (TensorId id : g.outputs()) {
    const std::string& name = g.tensor(id).name;
    const double err = relative_l2_error(got.at(name), want.at(name)), bound = relative_l2_bound(g, id);
    EXPECT_LE(err, bound) << who << " " << name;
    worst = std::max(worst, err / bound);
  }
  return worst;
}

int collective_task_kernels(const MegaDescription& d) {
  int n = 0;
  for (const MegaSegmentDescription& s : d.segments) {
    for (const auto& k : s.kernels) n += contains(k.description, "push ") || contains(k.description, "combine ") ||
                                         contains(k.description, "gather ");
  }
  return n;
}

// W virtual ranks of one plan (every rank runs the same program), each its runner in mega mode on
// its share of the SMs, its tensors and its stream.
class VirtualRanks {
 public:
  VirtualRanks(const Plan& plan, int world, double watchdog_ms = 5000) : comms_(Communicator::create_virtual(world, 0)) {
    const int sms = cuda::device_properties(0).sm_count;
    for (int r = 0; r < world; ++r) {
      RunnerOptions o = test_runner_options(ExecMode::mega);
      o.communicators["tp"] = comms_[r];
      o.mega.sm_count = sms / world;
      o.mega.watchdog_ms = watchdog_ms;
      ranks_.push_back(std::make_unique<Rank>(plan, o));
    }
  }
  int world() const { return static_cast<int>(ranks_.size()); }
  Runner& runner(int r) { return ranks_[r]->runner; }

  // Uploads each rank's inputs, poisons outputs and intermediates, enqueues the first `launched`
  // ranks (all by default) back to back from this thread, and downloads their outputs.
  // Enqueues every rank `times` more times, and downloads. Before launch i, `before(i, r, io,
  // stream)` (optional) may upload new inputs on rank r's stream.
  std::vector<TensorMap> replay(int times,
                                const std::function<void(int, int, DeviceTensors&, cudaStream_t)>& before = {}) {
    for (int i = 0; i < times; ++i) {
      for (int r = 0; r < world(); ++r) {
        Rank& k = *ranks_[r];
        if (before) before(i, r, k.io, k.stream.get());
        k.runner.enqueue(k.stream.get());
      }
    }
    std::vector<TensorMap> out;
    for (auto& k : ranks_) out.push_back(k->io.download(k->stream.get()));
    for (auto& k : ranks_) k->runner.check();
    return out;
  }

  std::vector<TensorMap> run(const std::vector<TensorMap>& inputs, int launched = -1) {
    if (launched < 0) launched = world();
    for (int r = 0; r < launched; ++r) {
      Rank& k = *ranks_[r];
      k.io.upload(inputs[r], k.stream.get());
      k.io.poison_outputs(k.stream.get());
      k.runner.poison_intermediates(k.stream.get());
    }
    for (int r = 0; r < launched; ++r) ranks_[r]->runner.enqueue(ranks_[r]->stream.get());
    std::vector<TensorMap> out;
    for (int r = 0; r < launched; ++r) out.push_back(ranks_[r]->io.download(ranks_[r]->stream.get()));
    for (int r = 0; r < launched; ++r) ranks_[r]->runner.check();
    return out;
  }

 private:
  struct Rank {
    Rank(const Plan& plan, const RunnerOptions& o) : runner(plan, o), io(plan) { io.bind(runner); }
    Runner runner;
    DeviceTensors io;
    cuda::Stream stream{cudaStreamNonBlocking};
  };
  std::vector<Communicator> comms_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace

TEST_F(GpuMegaCollectives, WorldOneCollectivesRunAsTasks) {
  const Graph g = collective_graph(1);
  TestPlan t(compile(g, with_test_cache(our_kernels_only())), test_runner_options(ExecMode::mega));
  const MegaDescription d = t.runner().mega_description();
  for (const auto& o : d.outside) std::printf("    outside: step %d: %s\n", o.step, o.why.c_str());
  EXPECT_EQ(collective_task_kernels(d), kCollectiveTaskKernels);
  for (int run = 0; run < 3; ++run) {  // launch epochs 0, 1, 2: both halves of the receive buffers
    const TensorMap inputs = random_inputs(g, fresh_seed());
    check_outputs(g, run_reference(g, inputs), t.run(inputs), "world 1, run " + std::to_string(run));
  }
  std::printf("  world 1: 6 collectives as %d task kernels, 3 launches equal to the reference\n",
              collective_task_kernels(d));
}

TEST_F(GpuMegaCollectives, VirtualRanksRunEveryCollective) {
  for (int world : {2, 4}) {
    const Graph g = collective_graph(world);
    const Plan plan = compile(g, with_test_cache(our_kernels_only()));
    VirtualRanks ranks(plan, world);
    EXPECT_EQ(collective_task_kernels(ranks.runner(0).mega_description()), kCollectiveTaskKernels);
    const std::vector<Graph> graphs(world, g);
    double worst = 0;
    for (int run = 0; run < 3; ++run) {
      std::vector<TensorMap> inputs;
      const uint64_t seed = fresh_seed();
      for (int r = 0; r < world; ++r) inputs.push_back(random_inputs(g, seed + 7919 * r));
      const std::vector<TensorMap> want = run_reference_ranks(graphs, inputs);
      const std::vector<TensorMap> got = ranks.run(inputs);
      for (int r = 0; r < world; ++r) {
        worst = std::max(worst, check_outputs(g, want[r], got[r], "world " + std::to_string(world) + " rank " +
                                                                   std::to_string(r) + " run " + std::to_string(run)));
      }
      // every rank sums in rank order: the all_reduce results are bit-identical across ranks
      const HostTensor& r0 = got[0].at("reduced");
      for (int r = 1; r < world; ++r) {
        const HostTensor& rr = got[r].at("reduced");
        ASSERT_EQ(rr.storage_bytes(), r0.storage_bytes());
        EXPECT_EQ(std::memcmp(rr.data(), r0.data(), r0.storage_bytes()), 0) << "rank " << r << " reduced otherwise";
      }
    }
    std::printf("  world %d: virtual ranks, 3 launches, worst rel L2 / bound %.3g\n", world, worst);
  }
}

TEST_F(GpuMegaCollectives, VirtualRanksRunTheTensorParallelDecodeStack) {
  examples::LlamaConfig c;
  c.layers = 2;
  const Graph full = examples::llama_decode_stack(c);
  for (int world : {2, 4}) {
    const std::vector<Graph> graphs = shard_tensor_parallel(full, world);
    const Plan plan = compile(graphs[0], with_test_cache(our_kernels_only()));
    VirtualRanks ranks(plan, world);
    const MegaDescription d = ranks.runner(0).mega_description();
    for (const auto& o : d.outside) std::printf("    outside: step %d: %s\n", o.step, o.why.c_str());
    EXPECT_EQ(collective_task_kernels(d), 2 * 2 * c.layers);  // two all_reduces a layer
    double worst_ranks = 0, worst_full = 0;
    for (int run = 0; run < 3; ++run) {
      const TensorMap values = random_inputs(full, fresh_seed());
      const std::vector<TensorMap> inputs = shard_inputs(full, graphs, values);
      const std::vector<TensorMap> want = run_reference_ranks(graphs, inputs);
      const std::vector<TensorMap> got = ranks.run(inputs);
      for (int r = 0; r < world; ++r) {
        worst_ranks = std::max(worst_ranks, check_outputs(graphs[r], want[r], got[r],
                                                          "decode stack, world " + std::to_string(world) + " rank " +
                                                              std::to_string(r)));
      }
      worst_full = std::max(worst_full, check_outputs(full, run_reference(full, values),
                                                      gather_outputs(full, graphs, got),
                                                      "decode stack, world " + std::to_string(world) + " gathered"));
    }
    std::printf("  decode stack (2 layers) at world %d: %zu segments; worst rel L2 / bound %.3g against the ranks' "
                "reference, %.3g against the unsharded graph's\n",
                world, d.segments.size(), worst_ranks, worst_full);
  }
}

// 1,001 launches of every rank alternating two tokens (launch epochs 0..1002, both halves of every
// receive buffer, the counters growing past 1,000 launches' worth): the last launch's outputs are
// those of the first launch of the same token, bit for bit. A launch that read the other half
// (the token before) would give the other token's results.
TEST_F(GpuMegaCollectives, VirtualRanksReplayBitIdentical) {
  examples::LlamaConfig c;
  c.layers = 2;
  const Graph full = examples::llama_decode_stack(c);
  const int world = 2;
  const std::vector<Graph> graphs = shard_tensor_parallel(full, world);
  VirtualRanks ranks(compile(graphs[0], with_test_cache(our_kernels_only())), world);
  const TensorMap values = random_inputs(full, fresh_seed());
  TensorMap other = values;
  other.at("x") = random_inputs(full, fresh_seed()).at("x");
  const std::vector<TensorMap> a_in = shard_inputs(full, graphs, values), b_in = shard_inputs(full, graphs, other);
  const std::vector<TensorMap> b_first = ranks.run(b_in);
  const std::vector<TensorMap> a_first = ranks.run(a_in);
  const HostTensor& xa = a_in[0].at("x");
  const HostTensor& xb = b_in[0].at("x");
  const int replays = 1001;  // a, b, a, ..., a
  const std::vector<TensorMap> last = ranks.replay(replays, [&](int i, int, DeviceTensors& io, cudaStream_t stream) {
    const HostTensor& x = i % 2 == 0 ? xa : xb;
    ASSERT_EQ(cudaMemcpyAsync(io.address("x"), x.data(), x.storage_bytes(), cudaMemcpyHostToDevice, stream),
              cudaSuccess);
  });
  int differ_between_tokens = 0;
  for (int r = 0; r < world; ++r) {
    for (TensorId id : graphs[r].outputs()) {
      const std::string& name = graphs[r].tensor(id).name;
      const HostTensor& a = a_first[r].at(name);
      const HostTensor& b = last[r].at(name);
      ASSERT_EQ(a.storage_bytes(), b.storage_bytes());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.storage_bytes()), 0)
          << "rank " << r << " output '" << name << "' differs after " << replays << " launches";
      differ_between_tokens += std::memcmp(a.data(), b_first[r].at(name).data(), a.storage_bytes()) != 0;
    }
  }
  EXPECT_GT(differ_between_tokens, 0) << "the two tokens give the same outputs: the test could not tell them apart";
  std::printf("  world %d: %d launches alternating two tokens, every rank's outputs bit-identical to the first "
              "launch of the same token\n",
              world, replays);
}

// A world-1 plan with an NCCL communicator bound (create_local({0})) through the megakernel
// executor: the runner accepts and checks the binding, and the collectives run as tasks (a
// collective of world 1 needs no NCCL call and no NCCL window: this is the world-1 path with a
// communicator bound, as a program written for W ranks runs at W = 1).
TEST_F(GpuMegaCollectives, NcclWorldOnePlanRunsInTheMegakernel) {
  const NcclStatus s = nccl_status();
  if (!s.available) GTEST_SKIP() << "no NCCL: " << s.reason;
  const std::vector<Communicator> comms = Communicator::create_local({0});
  const Graph g = collective_graph(1);
  RunnerOptions o = test_runner_options(ExecMode::mega);
  o.communicators["tp"] = comms[0];
  TestPlan t(compile(g, with_test_cache(our_kernels_only())), o);
  EXPECT_EQ(collective_task_kernels(t.runner().mega_description()), kCollectiveTaskKernels);
  for (int run = 0; run < 3; ++run) {
    const TensorMap inputs = random_inputs(g, fresh_seed());
    check_outputs(g, run_reference(g, inputs), t.run(inputs), "nccl world 1, mega, run " + std::to_string(run));
  }
}

TEST_F(GpuMegaCollectives, ARankThatNeverLaunchesEndsInTheOthersWatchdog) {
  const Graph g = collective_graph(2);
  const Plan plan = compile(g, with_test_cache(our_kernels_only()));
  VirtualRanks ranks(plan, 2, /*watchdog_ms=*/300);
  const std::vector<TensorMap> inputs = {random_inputs(g, fresh_seed()), random_inputs(g, fresh_seed())};
  const auto start = std::chrono::steady_clock::now();
  auto [code, message] = error_of([&] { ranks.run(inputs, /*launched=*/1); });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("  rank 0 alone: %s after %.2f s\n", message.c_str(), seconds);
  EXPECT_EQ(code, ErrorCode::timeout);
  EXPECT_TRUE(contains(message, "ranks of group 'tp'")) << message;
  EXPECT_TRUE(contains(message, "never arrives")) << message;
  EXPECT_LT(seconds, 10.0);
  // its counters no longer agree with rank 1's: it refuses to launch again
  std::tie(code, message) = error_of([&] { ranks.run(inputs, 1); });
  EXPECT_EQ(code, ErrorCode::invalid_state);
  EXPECT_TRUE(contains(message, "make every rank's Runner anew")) << message;
}

TEST_F(GpuMegaCollectives, VirtualGroupsRefuseStreamModeAndAWholeGpu) {
  const Graph g = collective_graph(2);
  const Plan plan = compile(g, with_test_cache(our_kernels_only()));
  const std::vector<Communicator> comms = Communicator::create_virtual(2, 0);
  EXPECT_TRUE(comms[1].is_virtual());
  EXPECT_EQ(comms[1].describe(), "virtual rank 1 of 2 on GPU 0");
  RunnerOptions o = test_runner_options(ExecMode::stream);
  o.communicators["tp"] = comms[0];
  auto [code, message] = error_of([&] { Runner r(plan, o); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(message, "run only as megakernel tasks: use ExecMode::mega")) << message;
  // in mega mode each virtual rank must leave the others their share of the SMs
  o.mode = ExecMode::mega;
  std::tie(code, message) = error_of([&] { Runner r(plan, o); });
  EXPECT_EQ(code, ErrorCode::invalid_argument);
  EXPECT_TRUE(contains(message, "set MegaOptions::sm_count to at most")) << message;
}

// Virtual ranks share one GPU: a step launched outside the megakernel (here a cuBLASLt matmul)
// could wait for SMs another rank's megakernel holds, so the runner refuses to enqueue, naming the
// step; made, it still describes its megakernels (sinter explain --mega).
TEST_F(GpuMegaCollectives, VirtualRanksRefuseAStepOutsideTheMegakernel) {
  Graph g("cublaslt_matmul_all_reduce");
  const Tensor y = g.matmul(g.input("x", DType::bf16, {64, 256}), g.input("w", DType::bf16, {256, 512}));
  g.output(g.all_reduce(y, "tp", 2), "y");
  CompileOptions co;
  co.engines = {"cublaslt"};
  const Plan plan = compile(g, with_test_cache(co));
  const std::vector<Communicator> comms = Communicator::create_virtual(2, 0);
  RunnerOptions o = test_runner_options(ExecMode::mega);
  o.communicators["tp"] = comms[0];
  o.mega.sm_count = device_info(0).sm_count / 2;
  Runner runner(plan, o);
  const MegaDescription d = runner.mega_description();
  ASSERT_EQ(d.outside.size(), 1u);
  EXPECT_EQ(d.outside[0].step, 0);
  auto [code, message] = error_of([&] { runner.enqueue(nullptr); });
  EXPECT_EQ(code, ErrorCode::unsupported);
  EXPECT_TRUE(contains(message, "every step of a rank's program must run inside its megakernel")) << message;
  EXPECT_TRUE(contains(message, "step 0 (cublaslt")) << message;
}

// NCCL's symmetric memory for a one-rank NCCL communicator: allocated, registered as a window,
// addressed through the window's LSA mapping, zeroed, and writable there.
TEST_F(GpuMegaCollectives, NcclWindowsGiveSymmetricMemory) {
  const NcclStatus s = nccl_status();
  if (!s.available) GTEST_SKIP() << "no NCCL: " << s.reason;
  const std::vector<Communicator> comms = Communicator::create_local({0});
  const std::shared_ptr<Communicator::State>& state = comms[0].state();
  if (const std::string why = comm::symmetric_memory_problem(state.get()); !why.empty()) {
    GTEST_SKIP() << "NCCL " << s.version << " has no symmetric memory here: " << why;
  }
  const size_t bytes = 3 << 20;
  std::shared_ptr<comm::SymmetricBuffer> buffer;
  try {
    buffer = comm::allocate_symmetric(state, bytes, 0, "test window");
  } catch (const Error& e) {
    // NCCL decides at registration whether a window is symmetric (peer access, CUMEM, its own
    // settings); where it is not, Sinter says so instead of reading the record
    if (e.code() != ErrorCode::unsupported) throw;
    EXPECT_TRUE(contains(e.message(), "registered no symmetric window")) << e.message();
    GTEST_SKIP() << "NCCL " << s.version << " made no symmetric window for this one-rank communicator: "
                 << e.message();
  }
  ASSERT_EQ(buffer->ranks().size(), 1u);
  EXPECT_GE(buffer->bytes(), bytes);
  std::vector<unsigned char> host(bytes, 0xab);
  ASSERT_EQ(cudaMemcpy(host.data(), buffer->ranks()[0], bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::count(host.begin(), host.end(), 0), static_cast<long>(bytes)) << "not zeroed";
  for (size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(i * 7 + 3);
  ASSERT_EQ(cudaMemcpy(buffer->ranks()[0], host.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  // written through the window's LSA address, read through ncclMemAlloc's own pointer
  EXPECT_NE(buffer->allocation(), buffer->ranks()[0]);
  std::vector<unsigned char> back(bytes);
  ASSERT_EQ(cudaMemcpy(back.data(), buffer->allocation(), bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  std::printf("  NCCL %s: a %zu-byte window at %p (LSA address)\n", s.version.c_str(), buffer->bytes(),
              buffer->ranks()[0]);
}

// One rank per visible GPU, NCCL communicators (create_local), megakernels with the collectives
// as tasks over NCCL's symmetric windows: every collective kind against the ranks' reference; then
// the last rank does not launch, and every other rank ends in its watchdog with the group's error.
// Skipped, saying so, with fewer than two GPUs, or where NCCL makes no symmetric windows.
TEST_F(GpuMegaCollectives, EveryVisibleGpuIsARankOfTheMegakernel) {
  const int world = cuda::gpu_availability().device_count;
  if (world < 2) GTEST_SKIP() << "needs 2 GPUs or more for a group of world > 1; this machine has " << world;
  const NcclStatus st = nccl_status();
  if (!st.available) GTEST_SKIP() << "no NCCL: " << st.reason;
  std::vector<int> devices;
  for (int d = 0; d < world; ++d) devices.push_back(d);
  const std::vector<Communicator> comms = Communicator::create_local(devices);
  if (const std::string why = comm::symmetric_memory_problem(comms[0].state().get()); !why.empty()) {
    GTEST_SKIP() << "no symmetric memory for this group: " << why;
  }
  const Graph g = collective_graph(world);
  const Plan plan = compile(g, with_test_cache(our_kernels_only()));
  struct Rank {
    Rank(const Plan& p, const RunnerOptions& o) : runner(p, o), io(p, o.device) { io.bind(runner); }
    Runner runner;
    DeviceTensors io;
    cuda::Stream stream{cudaStreamNonBlocking};
  };
  std::vector<std::unique_ptr<Rank>> ranks(world);
  std::vector<std::string> errors;
  auto each = [&](const std::function<void(int)>& body) { errors = each_rank(world, body); };
  // the runners at the same time: NCCL registers their windows collectively
  each([&](int r) {
    RunnerOptions o = test_runner_options(ExecMode::mega);
    o.device = r;
    o.communicators["tp"] = comms[r];
    o.mega.watchdog_ms = 1000;
    ranks[r] = std::make_unique<Rank>(plan, o);
  });
  for (int r = 0; r < world; ++r) ASSERT_EQ(errors[r], "") << "rank " << r;
  std::vector<TensorMap> inputs, got(world);
  const uint64_t seed = fresh_seed();
  for (int r = 0; r < world; ++r) inputs.push_back(random_inputs(g, seed + 7919 * r));
  const std::vector<TensorMap> want = run_reference_ranks(std::vector<Graph>(world, g), inputs);
  for (int run = 0; run < 3; ++run) {
    each([&](int r) {
      Rank& k = *ranks[r];
      k.io.upload(inputs[r], k.stream.get());
      k.io.poison_outputs(k.stream.get());
      k.runner.poison_intermediates(k.stream.get());
      k.runner.enqueue(k.stream.get());
      got[r] = k.io.download(k.stream.get());
      k.runner.check();
    });
    for (int r = 0; r < world; ++r) {
      ASSERT_EQ(errors[r], "") << "rank " << r;
      check_outputs(g, want[r], got[r], "gpu rank " + std::to_string(r) + " run " + std::to_string(run));
    }
  }
  // the last rank fails to arrive: the others stop in their watchdog, naming the group
  const auto start = std::chrono::steady_clock::now();
  each([&](int r) {
    if (r == world - 1) return;
    Rank& k = *ranks[r];
    k.runner.enqueue(k.stream.get());
    k.stream.synchronize();
    k.runner.check();
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (int r = 0; r + 1 < world; ++r) {
    EXPECT_TRUE(contains(errors[r], "ranks of group 'tp'")) << "rank " << r << ": " << errors[r];
  }
  EXPECT_LT(seconds, 10.0);
  std::printf("  %d GPUs: 3 launches equal to the ranks' reference; the last rank absent: the others stopped "
              "after %.2f s\n", world, seconds);
}

}  // namespace sinter::testing
