// Tuning on the GPU: fast mode times candidates and the result is still correct; a second build
// with the same timing cache times nothing.
#include <filesystem>

#include "example_graphs.hpp"
#include "gpu/region_check.hpp"

namespace sinter::testing {
namespace {

TEST_F(GpuRegions, TuningIsCachedAndCorrect) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("sinter_tune_test_" + std::to_string(::getpid()) + ".json");
  tune::TimingCache timing(file);
  ExecutorOptions opts;
  opts.tuning.mode = tune::TuneMode::fast;
  opts.timing_cache = &timing;
  const Graph g = examples::transformer_block();
  int first_timings = 0;
  {
    StreamExecutor ex(g, shared_cache(), opts);
    first_timings = ex.tune_report().timings;
    EXPECT_GT(first_timings, 0);
    for (const StepInfo& s : ex.steps()) {
      std::printf("  region %d %s [%s] %.4f ms %s\n", s.region, s.kind.c_str(), s.engine.c_str(),
                  s.tuned_ms, s.description.c_str());
    }
  }
  timing.save();
  tune::TimingCache reloaded(file);
  ASSERT_FALSE(reloaded.load().has_value());
  opts.timing_cache = &reloaded;
  {
    StreamExecutor ex(g, shared_cache(), opts);
    EXPECT_EQ(ex.tune_report().timings, 0) << "a second build must time nothing";
    EXPECT_GT(ex.tune_report().cache_hits, 0);
  }
  check(g, 1.0, opts);
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace sinter::testing
