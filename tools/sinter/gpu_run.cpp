#include "gpu_run.hpp"

#include <cmath>
#include <cstdio>

#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"
#include "exec/stream_executor.hpp"
#include "format.hpp"
#include "sinter/error.hpp"
#include "tune/timing_cache.hpp"

#include <filesystem>

namespace sinter::cli {
GpuRunReport run_on_gpu(const Graph& g, const TensorMap& inputs, int timing_iters,
                        const std::string& engine, const std::string& tune) {
  GpuRunReport rep;
  cuda::KernelCache cache;  // on disk: SINTER_CACHE_DIR or ~/.cache/sinter/kernels
  const cuda::DeviceProperties props = cuda::device_properties(0);
  rep.device = cuda::describe(props);
  ExecutorOptions opts;
  opts.engine = engine;
  const auto mode = tune::parse_tune_mode(tune);
  if (!mode) {
    throw Error(ErrorCode::invalid_argument,
                "--tune must be heuristic, fast or exhaustive; found '" + tune + "'");
  }
  opts.tuning.mode = *mode;
  opts.tuning.progress = [](int region, int regions, int done, int total, const std::string& best) {
    std::fprintf(stderr, "\rtuning: region %d/%d, candidate %d/%d, best so far: %-60.60s", region + 1,
                 regions, done, total, best.c_str());
  };
  tune::TimingCache timing(*mode == tune::TuneMode::heuristic ? std::filesystem::path{}
                                                                : tune::TimingCache::default_file());
  if (const auto why = timing.load()) std::fprintf(stderr, "timing cache ignored: %s\n", why->c_str());
  opts.timing_cache = &timing;
  StreamExecutor ex(g, cache, opts);
  if (*mode != tune::TuneMode::heuristic) {
    std::fprintf(stderr, "\n");
    timing.save();
    rep.tuning = std::to_string(ex.tune_report().timings) + " candidates timed, " +
                 std::to_string(ex.tune_report().cache_hits) + " regions from the timing cache (" +
                 timing.file().string() + ")";
  }
  rep.outputs = ex.run(inputs);
  rep.median_ms = timing_iters > 0 ? ex.time_ms(timing_iters) : 0;
  rep.regions = static_cast<int>(ex.steps().size());
  const cuda::KernelCacheStats s = cache.stats();
  rep.kernels_compiled = static_cast<int>(s.misses);
  rep.compile_ms = s.compile_ms;
  rep.cache_stats = cuda::to_string(s);
  for (const StepInfo& step : ex.steps()) {
    rep.plan += "     region " + std::to_string(step.region) + " " + step.kind + " [" + step.engine +
                "] " + step.description +
                (step.tuned_ms >= 0 ? " (" + std::to_string(step.tuned_ms) + " ms" +
                                          (step.from_timing_cache ? ", cached" : "") + ")"
                                    : "") +
                "\n";
  }
  return rep;
}

bool print_comparison(const Graph& g, const TensorMap& gpu, const TensorMap& ref) {
  bool ok = true;
  for (TensorId id : g.outputs()) {
    const TensorInfo& info = g.tensor(id);
    const double err = relative_l2_error(gpu.at(info.name), ref.at(info.name));
    const double bound = relative_l2_bound(g, id);
    const bool pass = err <= bound;
    ok = ok && pass;
    std::printf("   %-14s %-22s rel L2 vs reference %-10.3g (bound %g) %s\n", info.name.c_str(),
                type_string(info).c_str(), err, bound, pass ? "ok" : "FAIL");
  }
  return ok;
}

}  // namespace sinter::cli
