// The public compile API's checks that need no GPU: options that make no sense are named before
// anything runs, engine names come from the registry, and tune modes parse both ways.
#include <gtest/gtest.h>

#include "example_graphs.hpp"
#include "sinter/compile.hpp"
#include "sinter/device.hpp"
#include "sinter/error.hpp"

namespace sinter {
namespace {

std::string compile_error(const CompileOptions& o) {
  try {
    (void)compile(examples::mlp_layer(), o);
  } catch (const Error& e) {
    return std::string(to_string(e.code())) + ": " + e.message();
  }
  return "";
}

TEST(CompileApi, BadOptionsAreNamedBeforeAnythingRuns) {
  CompileOptions o;
  o.engines = {"tensorrt"};
  EXPECT_NE(compile_error(o).find("invalid argument: compile: unknown engine 'tensorrt'; engines: alias, cublaslt, cudnn, nccl, jit"),
            std::string::npos)
      << compile_error(o);
  o.engines = {"jit", "jit"};
  EXPECT_NE(compile_error(o).find("engine 'jit' is named twice"), std::string::npos) << compile_error(o);
  o = {};
  o.top_k = 0;
  EXPECT_NE(compile_error(o).find("top_k must be at least 1"), std::string::npos) << compile_error(o);
  o = {};
  o.tuning = TuneMode::fast;
  o.candidate_config = "matmul tile=generic";
  EXPECT_NE(compile_error(o).find("applies to heuristic tuning only"), std::string::npos) << compile_error(o);
  o = {};
  o.timing_repeats = 0;
  EXPECT_NE(compile_error(o).find("at least one repeat"), std::string::npos) << compile_error(o);
}

TEST(CompileApi, WithoutAGpuCompilingSaysSo) {
  if (gpu_availability().available) GTEST_SKIP() << "this machine has a GPU";
  const std::string e = compile_error({});
  EXPECT_NE(e.find("CUDA error: compiling a plan needs a GPU"), std::string::npos) << e;
}

TEST(CompileApi, EnginesAndTuneModes) {
  EXPECT_EQ(engine_names(), (std::vector<std::string>{"alias", "cublaslt", "cudnn", "nccl", "jit"}));
  for (TuneMode m : {TuneMode::heuristic, TuneMode::fast, TuneMode::exhaustive}) {
    EXPECT_EQ(parse_tune_mode(to_string(m)), m);
  }
  EXPECT_FALSE(parse_tune_mode("quick").has_value());
  EXPECT_EQ(FusionOptions::none(), (FusionOptions{false, false, false, false, false, false}));
}

}  // namespace
}  // namespace sinter
