#include "compile/compile_context.hpp"

#include <algorithm>

#include "cuda/device.hpp"
#include "cuda/kernel_sources.hpp"
#include "cuda/sha256.hpp"
#include "engines/cublaslt/cublaslt_engine.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/registry.hpp"
#include "sinter/error.hpp"

namespace sinter {
namespace {

[[noreturn]] void bad_option(const std::string& what) { throw Error(ErrorCode::invalid_argument, "compile: " + what); }

void check_options(const CompileOptions& o) {
  if (o.top_k < 1) bad_option("top_k must be at least 1, found " + std::to_string(o.top_k));
  if (o.timing_repeats < 1 || o.timing_warmup < 0) {
    bad_option("timing needs at least one repeat and no negative warm-up (repeats " + std::to_string(o.timing_repeats) +
               ", warm-up " + std::to_string(o.timing_warmup) + ")");
  }
  if (o.max_vendor_candidates < 1) bad_option("max_vendor_candidates must be at least 1");
  if ((!o.candidate_config.empty() || o.candidate >= 0) && o.tuning != TuneMode::heuristic) {
    bad_option("a forced candidate (candidate_config, candidate) applies to heuristic tuning only; found " +
               std::string(to_string(o.tuning)));
  }
  for (size_t i = 0; i < o.engines.size(); ++i) {
    if (!find_engine(o.engines[i])) bad_option("unknown engine '" + o.engines[i] + "'; engines: " + registered_engine_names());
    if (std::find(o.engines.begin(), o.engines.begin() + i, o.engines[i]) != o.engines.begin() + i) {
      bad_option("engine '" + o.engines[i] + "' is named twice");
    }
  }
  if (o.tuning == TuneMode::heuristic || o.tuning == TuneMode::fast || o.tuning == TuneMode::exhaustive) return;
  bad_option("unknown tuning mode");
}

// Every engine, or: the engines always allowed (steps that run nothing cost nothing to allow; the
// only engine of a region kind has no rival), the named ones in their order, then those that run
// any region (the fallback where no named one can).
std::vector<const Engine*> allowed_engines(const std::vector<std::string>& named) {
  std::span<const Engine* const> all = registered_engines();
  if (named.empty()) return {all.begin(), all.end()};
  std::vector<const Engine*> out;
  auto add = [&](const Engine* e) {
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  };
  for (const Engine* e : all) {
    if (e->always_allowed()) add(e);
  }
  for (const std::string& n : named) add(find_engine(n));
  for (const Engine* e : all) {
    if (e->runs_any_region()) add(e);
  }
  return out;
}

}  // namespace

CompileContext::CompileContext(const CompileOptions& o) : options_(o) {
  check_options(o);
  const cuda::GpuAvailability& gpu = cuda::gpu_availability();
  if (!gpu.available) throw Error(ErrorCode::cuda, "compiling a plan needs a GPU (to prepare and tune steps): " + gpu.reason);
  const cuda::DeviceProperties dev = cuda::device_properties(o.device);
  cache_ = std::make_unique<cuda::KernelCache>(o.kernel_cache_dir.empty() ? cuda::KernelCache::default_directory()
                                                                          : std::filesystem::path(o.kernel_cache_dir));
  ctx_ = std::make_unique<EngineContext>(EngineContext{*cache_, dev, o.engines, o.max_vendor_candidates, o.on_log,
                                                       o.megakernels});
  engines_ = allowed_engines(o.engines);
  tune_.mode = o.tuning;
  tune_.top_k = o.top_k;
  tune_.candidate = o.candidate;
  tune_.config = o.candidate_config;
  tune_.warmup = o.timing_warmup;
  tune_.repeats = o.timing_repeats;
  tune_.max_workspace = o.workspace_limit;
  tune_.check_outputs = o.check_outputs;
  if (o.on_progress) {
    tune_.progress = [cb = o.on_progress](int region, int regions, int done, int total, const std::string& best) {
      cb(CompileProgress{region, regions, done, total, best});
    };
  }
  if (o.tuning != TuneMode::heuristic && !o.timing_cache.empty()) {
    timing_.emplace(o.timing_cache);
    if (const auto why = timing_->load(); why && o.on_log) o.on_log(LogSeverity::warning, "timing cache ignored: " + *why);
  }
  key_.name = dev.name;
  key_.sm_count = dev.sm_count;
  key_.arch = dev.arch;
  key_.driver_version = dev.driver_version;
  key_.cublaslt_version = cublaslt::cublaslt_version();
  key_.cudnn_version = cudnn::cudnn_version();
  // Times measured with other kernel sources do not carry over (the digest of kernels/).
  key_.sinter_version = std::string(SINTER_VERSION) + "+kernels." + cuda::to_hex(cuda::kernel_sources_digest()).substr(0, 16);
}

void CompileContext::save_timing_cache() const {
  if (timing_) timing_->save();
}

CompileReport CompileContext::report(const tune::TuneReport& tuned,
                                     std::vector<std::pair<std::string, double>> passes) const {
  const cuda::KernelCacheStats s = cache_->stats();
  CompileReport r;
  r.pass_ms = std::move(passes);
  r.kernels_compiled = static_cast<int>(s.misses);
  r.kernel_cache_hits = static_cast<int>(s.memory_hits + s.disk_hits);
  r.nvrtc_ms = s.compile_ms;
  r.candidates_timed = tuned.timings;
  r.timing_cache_hits = tuned.cache_hits;
  r.timing_cache = timing_ ? timing_->file().string() : "";
  r.kernel_cache = cuda::to_string(s);
  return r;
}

std::vector<std::string> engine_names() {
  std::vector<std::string> out;
  for (const Engine* e : registered_engines()) out.emplace_back(e->name());
  return out;
}

std::string default_timing_cache_path() { return tune::TimingCache::default_file().string(); }

std::string default_kernel_cache_dir() { return cuda::KernelCache::default_directory().string(); }

std::string_view to_string(TuneMode m) {
  switch (m) {
    case TuneMode::heuristic: return "heuristic";
    case TuneMode::fast: return "fast";
    case TuneMode::exhaustive: return "exhaustive";
  }
  return "?";
}

std::optional<TuneMode> parse_tune_mode(std::string_view s) {
  for (TuneMode m : {TuneMode::heuristic, TuneMode::fast, TuneMode::exhaustive}) {
    if (to_string(m) == s) return m;
  }
  return std::nullopt;
}

}  // namespace sinter
