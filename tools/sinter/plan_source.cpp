#include "plan_source.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cuda/device.hpp"
#include "cuda/kernel_cache.hpp"
#include "exec/plan_builder.hpp"
#include "exec/stream_executor.hpp"
#include "plan/bundle.hpp"
#include "sinter/error.hpp"
#include "sinter/json.hpp"
#include "tune/timing_cache.hpp"

namespace sinter::cli {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

bool is_plan_bundle_file(const std::string& path) {
  // Only a regular file is sniffed: reading a pipe's first bytes here would take them from the
  // graph loader (`sinter run /dev/stdin < graph.json`). A bundle to run or bench is a file.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  return in.read(magic, sizeof magic) && std::memcmp(magic, "SINTERPL", 8) == 0;
}

PlanSource build_plan_for_graph(const Graph& g, const BuildChoices& c) {
  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  if (!gpu.available) throw Error(ErrorCode::unsupported, "building a plan needs a GPU (to prepare and tune steps): " + gpu.reason);
  const auto t0 = std::chrono::steady_clock::now();
  cuda::KernelCache cache;  // on disk: SINTER_CACHE_DIR or ~/.cache/sinter/kernels
  ExecutorOptions opts;
  opts.engine = c.engine;
  if (c.no_fusion) opts.fusion = fuse::FusionOptions{false, false, false, false, false};
  const auto mode = tune::parse_tune_mode(c.tune);
  if (!mode) throw Error(ErrorCode::invalid_argument, "--tune must be heuristic, fast or exhaustive; found '" + c.tune + "'");
  opts.tuning.mode = *mode;
  tune::TimingCache timing(*mode == tune::TuneMode::heuristic ? std::filesystem::path{} : tune::TimingCache::default_file());
  if (const auto why = timing.load()) std::fprintf(stderr, "timing cache ignored: %s\n", why->c_str());
  opts.timing_cache = &timing;
  opts.for_plan = true;
  StreamExecutor ex(g, cache, opts);
  PlanSource out;
  out.report = "   " + cuda::to_string(cache.stats()) + "\n";
  if (*mode != tune::TuneMode::heuristic) {
    timing.save();
    const tune::TuneReport& t = ex.tune_report();
    out.report += "   tuning (" + c.tune + "): " + std::to_string(t.timings) + " candidates timed, " +
                  std::to_string(t.cache_hits) + " regions from the timing cache (" + timing.file().string() + ")" +
                  (t.timings == 0 ? ": zero timings, every choice came from the timing cache" : "") + "\n";
  }
  out.plan = build_plan(ex, std::string("sinter ") + SINTER_VERSION);
  out.load_ms = ms_since(t0);
  return out;
}

PlanSource plan_from_file(const std::string& path, const BuildChoices& c) {
  if (!is_plan_bundle_file(path)) return build_plan_for_graph(load_graph_file(path), c);
  const auto t0 = std::chrono::steady_clock::now();
  PlanSource out;
  out.plan = plan::load_plan_bundle(path);
  out.from_bundle = true;
  out.load_ms = ms_since(t0);
  return out;
}

}  // namespace sinter::cli
