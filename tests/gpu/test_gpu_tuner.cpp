// Tuning on the GPU: fast mode times candidates and the result is still correct; a second compile
// with the same timing cache file times nothing.
#include <filesystem>

#include "example_graphs.hpp"
#include "gpu/region_check.hpp"

namespace sinter::testing {
namespace {

TEST_F(GpuRegions, TuningIsCachedAndCorrect) {
  const auto file = std::filesystem::temp_directory_path() / ("sinter_tune_test_" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(file);
  CompileOptions opts;
  opts.tuning = TuneMode::fast;
  opts.timing_cache = file.string();
  const Graph g = examples::transformer_block();
  {
    const Plan plan = compile(g, with_test_cache(opts));
    const PlanDescription d = plan.describe();
    ASSERT_TRUE(d.compile.has_value());
    EXPECT_GT(d.compile->candidates_timed, 0);
    for (const StepDescription& s : d.steps) {
      std::printf("  step %d %s [%s] %.4f ms %s\n", s.index, s.kind.c_str(), s.engine.c_str(), s.tuned_ms,
                  s.description.c_str());
      EXPECT_TRUE(s.engine == "alias" || s.tuned_ms >= 0) << "an untimed step in fast mode: " << s.description;
    }
  }
  ASSERT_TRUE(std::filesystem::exists(file));
  {
    const Plan plan = compile(g, with_test_cache(opts));
    const PlanDescription d = plan.describe();
    EXPECT_EQ(d.compile->candidates_timed, 0) << "a second compile must time nothing";
    EXPECT_GT(d.compile->timing_cache_hits, 0);
    for (const StepDescription& s : d.steps) EXPECT_TRUE(s.engine == "alias" || s.from_timing_cache) << s.description;
  }
  check(g, 1.0, opts);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace sinter::testing
