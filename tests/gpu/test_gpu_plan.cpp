// Plans on the GPU: build from a StreamExecutor, save, load and run with zero compilation; the
// GraphExecutor replays and rebinds by updating the instantiated graph; damaged or foreign
// bundles are refused. Every output is compared with the CPU reference on fresh random inputs,
// with outputs poisoned first.
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "cuda/check.hpp"
#include "example_graphs.hpp"
#include "exec/graph_executor.hpp"
#include "exec/plan_builder.hpp"
#include "exec/plan_executor.hpp"
#include "gpu/plan_graphs.hpp"
#include "gpu/region_check.hpp"
#include "plan/bundle.hpp"
#include "sinter/error.hpp"

namespace sinter::testing {
namespace {

class GpuPlan : public GpuRegions {
 protected:
  std::string temp_path(const std::string& name) const {
    return (std::filesystem::temp_directory_path() / ("sinter_plan_test_" + std::to_string(::getpid()) + "_" + name)).string();
  }
  // Compares `got` with the reference on `inputs`; prints the figures.
  void expect_matches(const Graph& g, const TensorMap& inputs, const TensorMap& got, const std::string& label) {
    const TensorMap want = run_reference(g, inputs);
    for (TensorId id : g.outputs()) {
      const TensorInfo& info = g.tensor(id);
      const double err = relative_l2_error(got.at(info.name), want.at(info.name));
      const double bound = relative_l2_bound(g, id);
      std::printf("  %-10s %-24s rel L2 %.3g (bound %.3g)\n", label.c_str(), (g.name() + "." + info.name).c_str(), err, bound);
      EXPECT_LE(err, bound) << label << ", output '" << info.name << "'";
    }
  }
  // Builds, saves and loads the plan of `g`.
  plan::Plan round_trip(const Graph& g, ExecutorOptions opts, const std::string& file) {
    opts.for_plan = true;
    StreamExecutor ex(g, shared_cache(), opts);
    save_plan_bundle(build_plan(ex, "sinter test"), file);
    return plan::load_plan_bundle(file);
  }
};

bool same_stats(const cuda::KernelCacheStats& a, const cuda::KernelCacheStats& b) {
  return a.misses == b.misses && a.memory_hits == b.memory_hits && a.disk_hits == b.disk_hits;
}

TEST_F(GpuPlan, LoadedBundleRunsWithZeroCompilation) {
  for (const auto& ex : examples::all_examples()) {
    const Graph g = ex.build();
    SCOPED_TRACE(ex.file);
    const std::string file = temp_path(g.name() + ".plan");
    plan::Plan loaded = round_trip(g, {}, file);
    const cuda::KernelCacheStats before = shared_cache().stats();
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const TensorMap inputs = random_inputs(g, seed);
    const auto start = std::chrono::steady_clock::now();
    PlanExecutor runner(plan::load_plan_bundle(file));
    const TensorMap got = runner.run(inputs);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // The runner never reaches a KernelCache; the shared cache saw no request during the load
    // and the run either.
    EXPECT_TRUE(same_stats(before, shared_cache().stats())) << cuda::to_string(shared_cache().stats());
    std::printf("  %s: %zu steps, %zu blobs, load to first result %.2f ms (load %.2f ms)\n", g.name().c_str(),
                loaded.steps.size(), loaded.blobs.size(), ms, runner.load_ms());
    for (const std::string& n : runner.load_notes()) std::printf("    note: %s\n", n.c_str());
    expect_matches(g, inputs, got, "stream");
    std::filesystem::remove(file);
  }
}

// cuDNN steps in bundles: conv_block's convs and the transformer block's attention go to cuDNN;
// the bundle stores each step's engine config and, where cuDNN serializes it, the execution plan;
// the load rebuilds each step (and says how), and the loaded plan computes the reference's answer.
TEST_F(GpuPlan, CudnnStepsRebuiltAtLoad) {
  for (const Graph& g : {examples::conv_block(), examples::transformer_block()}) {
    SCOPED_TRACE(g.name());
    const std::string file = temp_path(g.name() + "_cudnn.plan");
    const plan::Plan saved = round_trip(g, {}, file);
    int cudnn_steps = 0;
    for (const plan::Step& st : saved.steps) cudnn_steps += st.engine == "cudnn";
    EXPECT_GT(cudnn_steps, 0) << "no step went to cuDNN";
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const TensorMap inputs = random_inputs(g, seed);
    PlanExecutor runner(plan::load_plan_bundle(file));
    const TensorMap got = runner.run(inputs);
    int rebuilt = 0;
    for (const std::string& n : runner.load_notes()) {
      std::printf("    note: %s\n", n.c_str());
      rebuilt += n.find("cuDNN step loaded") != std::string::npos;
    }
    EXPECT_EQ(rebuilt, cudnn_steps);
    std::printf("  %s: %d cuDNN steps, load %.2f ms\n", g.name().c_str(), cudnn_steps, runner.load_ms());
    expect_matches(g, inputs, got, "cudnn-plan");
    std::filesystem::remove(file);
  }
  // SINTER_PLAN_CUDNN=0 keeps cuDNN out of plans
  ::setenv("SINTER_PLAN_CUDNN", "0", 1);
  const plan::Plan without = round_trip(examples::conv_block(), {}, temp_path("conv_block_no_cudnn.plan"));
  ::unsetenv("SINTER_PLAN_CUDNN");
  for (const plan::Step& st : without.steps) EXPECT_NE(st.engine, "cudnn") << st.description;
  std::filesystem::remove(temp_path("conv_block_no_cudnn.plan"));
}

TEST_F(GpuPlan, GraphExecutorReplaysAndRebindsByUpdate) {
  ExecutorOptions opts;
  for (const Graph& g : {examples::transformer_block(), pointwise_chain(20, 1000)}) {
    SCOPED_TRACE(g.name());
    opts.fusion = g.name().rfind("pointwise_chain", 0) == 0 ? no_fusion() : fuse::FusionOptions{};
    const std::string file = temp_path(g.name() + ".plan");
    PlanExecutor runner(round_trip(g, opts, file));
    const TensorMap first = random_inputs(g, fresh_seed());
    runner.set_inputs(first);
    runner.poison();
    GraphExecutor graph(runner);
    graph.replay();
    expect_matches(g, first, runner.outputs(), "graph");

    // New memory for every input and output: copy fresh inputs in, rebind, replay.
    const TensorMap second = random_inputs(g, fresh_seed());
    std::vector<cuda::DeviceBuffer> in_buffers, out_buffers;
    std::vector<const void*> ins;
    std::vector<void*> outs;
    for (TensorId id : g.inputs()) {
      const HostTensor& h = second.at(g.tensor(id).name);
      in_buffers.emplace_back(plan::storage_bytes(g.tensor(id)));
      HostTensor relaid(h.dtype(), h.dims(), g.tensor(id).strides);
      for (int64_t e = 0; e < h.numel(); ++e) relaid.set(e, h.get(e));
      in_buffers.back().copy_from_host(relaid.data(), relaid.storage_bytes());
      ins.push_back(in_buffers.back().data());
    }
    for (TensorId id : g.outputs()) {
      out_buffers.emplace_back(plan::storage_bytes(g.tensor(id)));
      out_buffers.back().memset(0xFF);
      outs.push_back(out_buffers.back().data());
    }
    graph.rebind(ins, outs);
    graph.replay();
    SINTER_CUDA_CHECK(cudaStreamSynchronize(runner.stream()));
    TensorMap got;
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const TensorInfo& info = g.tensor(g.outputs()[i]);
      HostTensor h(info.dtype, info.dims);
      out_buffers[i].copy_to_host(h.data(), h.storage_bytes());
      got.emplace(info.name, std::move(h));
    }
    expect_matches(g, second, got, "rebound");
    EXPECT_EQ(graph.stats().instantiations, 1) << "rebinding must update the graph, not instantiate it again";
    EXPECT_EQ(graph.stats().updates, 1);
    EXPECT_EQ(graph.stats().refused_updates, 0);
    std::filesystem::remove(file);
  }
}

TEST_F(GpuPlan, ForeignOrDamagedBundlesAreRefused) {
  const Graph g = examples::transformer_block();
  const std::string file = temp_path("damaged.plan");
  plan::Plan p = round_trip(g, {}, file);
  std::vector<char> bytes = plan::plan_bundle_bytes(p);
  bytes[bytes.size() / 2] ^= 1;
  try {
    (void)plan::load_plan_bundle(bytes, "damaged.plan");
    ADD_FAILURE() << "a damaged bundle loaded";
  } catch (const sinter::Error& e) {
    EXPECT_EQ(e.code(), sinter::ErrorCode::corrupt_bundle) << e.message();
  }
  p.target.arch = properties_.arch == "sm_80" ? "sm_90a" : "sm_80";
  try {
    PlanExecutor runner(p);
    ADD_FAILURE() << "a plan for another architecture was run";
  } catch (const sinter::Error& e) {
    EXPECT_EQ(e.code(), sinter::ErrorCode::corrupt_bundle);
    std::printf("  refused: %s\n", e.message().c_str());
  }
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace sinter::testing
