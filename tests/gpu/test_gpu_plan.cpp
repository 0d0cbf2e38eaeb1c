// Plans on the GPU: compiled, saved, loaded and run with zero compilation; cuDNN steps rebuilt at
// load; damaged or foreign bundles refused. Every output is compared with the CPU reference on
// fresh random inputs, with outputs and intermediates poisoned first.
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "example_graphs.hpp"
#include "gpu/plan_graphs.hpp"
#include "gpu/region_check.hpp"
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
  // Compiles, saves and loads the plan of `g`.
  Plan round_trip(const Graph& g, const CompileOptions& opts, const std::string& file) {
    compile(g, with_test_cache(opts)).save(file);
    return Plan::load(file);
  }
};

TEST_F(GpuPlan, LoadedBundleRunsWithZeroCompilation) {
  for (const auto& ex : examples::all_examples()) {
    const Graph g = ex.build();
    SCOPED_TRACE(ex.file);
    const std::string file = temp_path(g.name() + ".plan");
    const Plan loaded = round_trip(g, {}, file);
    EXPECT_FALSE(loaded.describe().compile.has_value()) << "a loaded plan was compiled";
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const TensorMap inputs = random_inputs(g, seed);
    // Loading and running reach no kernel cache: the test cache folder is moved away meanwhile,
    // so a compilation would fail or leave files behind.
    const std::filesystem::path cache = test_kernel_cache_dir(), away = cache.string() + ".away";
    std::filesystem::rename(cache, away);
    const auto start = std::chrono::steady_clock::now();
    TensorMap got;
    {
      TestPlan run(Plan::load(file));
      got = run.run(inputs);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      std::printf("  %s: %zu steps, %zu blobs, load to first result %.2f ms (runner %.2f ms)\n", g.name().c_str(),
                  run.steps().size(), run.description().blobs, ms, run.runner().stats().load_ms);
      for (const std::string& n : run.runner().load_notes()) std::printf("    note: %s\n", n.c_str());
    }
    EXPECT_FALSE(std::filesystem::exists(cache)) << "running a loaded plan wrote a kernel cache";
    std::filesystem::rename(away, cache);
    expect_matches(g, inputs, got, "stream");
    std::filesystem::remove(file);
  }
}

// cuDNN steps in bundles: conv_block's convs and the transformer block's attention go to cuDNN;
// the bundle stores each step's engine config and, where cuDNN serializes it, the execution plan;
// the load rebuilds each step, and the loaded plan computes the reference's answer.
TEST_F(GpuPlan, CudnnStepsRebuiltAtLoad) {
  for (const Graph& g : {examples::conv_block(), examples::transformer_block()}) {
    SCOPED_TRACE(g.name());
    const std::string file = temp_path(g.name() + "_cudnn.plan");
    const Plan saved = round_trip(g, {}, file);
    int cudnn_steps = 0;
    for (const StepDescription& st : saved.describe().steps) cudnn_steps += st.engine == "cudnn";
    EXPECT_GT(cudnn_steps, 0) << "no step went to cuDNN";
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const TensorMap inputs = random_inputs(g, seed);
    TestPlan run(Plan::load(file));
    const TensorMap got = run.run(inputs);
    std::printf("  %s: %d cuDNN steps, runner load %.2f ms\n", g.name().c_str(), cudnn_steps, run.runner().stats().load_ms);
    expect_matches(g, inputs, got, "cudnn-plan");
    std::filesystem::remove(file);
  }
  // Naming engines keeps cuDNN out of a plan.
  CompileOptions no_cudnn;
  no_cudnn.engines = {"cublaslt", "jit"};
  const Plan without = compile(examples::conv_block(), with_test_cache(no_cudnn));
  for (const StepDescription& st : without.describe().steps) EXPECT_NE(st.engine, "cudnn") << st.description;
}

TEST_F(GpuPlan, ForeignOrDamagedBundlesAreRefused) {
  const Graph g = examples::transformer_block();
  const std::string file = temp_path("damaged.plan");
  const Plan p = round_trip(g, {}, file);
  std::vector<char> bytes = p.to_bytes();
  bytes[bytes.size() / 2] ^= 1;
  try {
    (void)Plan::from_bytes(bytes, "damaged.plan");
    ADD_FAILURE() << "a damaged bundle loaded";
  } catch (const sinter::Error& e) {
    EXPECT_EQ(e.code(), sinter::ErrorCode::corrupt_bundle) << e.message();
  }
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace sinter::testing
