#include "compile/time_megakernels.hpp"

#include <cstdio>
#include <map>
#include <utility>

#include "cuda/check.hpp"
#include "cuda/stream.hpp"
#include "plan/memory_plan.hpp"
#include "sinter/error.hpp"
#include "sinter/runner.hpp"
#include "tune/tensor_buffers.hpp"

namespace sinter {
namespace {

constexpr const char* kMegakernel = "megakernel";
constexpr const char* kSteps = "steps";

struct Times {
  double megakernel_ms = 0, steps_ms = 0;
};

std::string cache_key(const std::string& source, const tune::DeviceKey& device) {
  return "megakernel " + source + " | " + device.to_string();
}

// The times a previous compile stored for `source`, if any.
std::optional<Times> cached_times(const tune::TimingCache* cache, const std::string& key) {
  const tune::TimingEntry* e = cache ? cache->find(key) : nullptr;
  if (!e) return std::nullopt;
  Times t{-1, -1};
  for (const tune::CandidateTime& c : e->tried) {
    if (c.engine == kMegakernel) t.megakernel_ms = c.median_ms;
    if (c.engine == kSteps) t.steps_ms = c.median_ms;
  }
  if (t.megakernel_ms < 0 || t.steps_ms < 0) return std::nullopt;
  return t;
}

tune::TimingEntry cache_entry(const std::string& source, const Times& t) {
  tune::TimingEntry e;
  const bool steps = t.steps_ms < t.megakernel_ms;
  e.engine = steps ? kSteps : kMegakernel;
  e.config = source;
  e.description = "a segment of a megakernel, as the megakernel and as its steps launched one by one (mean over "
                  "the plan's segments of that source)";
  e.median_ms = steps ? t.steps_ms : t.megakernel_ms;
  e.tried = {{kMegakernel, 0, source, "", t.megakernel_ms, ""}, {kSteps, 0, source, "", t.steps_ms, ""}};
  return e;
}

// Why the plan's megakernels cannot be timed at compile, or "".
std::string untimable(const Graph& g) {
  for (const Node& n : g.nodes()) {
    if (std::holds_alternative<CollectiveAttrs>(n.attrs)) {
      return "the graph has collectives, whose communicators are bound to each runner, not at compile";
    }
  }
  return "";
}

// Why the GPU has too little free memory to time the plan, or "": a mega-mode runner's memory
// (every intermediate in a slot of its own, then the workspaces) and the graph's inputs and
// outputs, with 256 MiB to spare.
std::string too_little_memory(const plan::Plan& data) {
  uint64_t need = data.workspace.bytes + (uint64_t{256} << 20);
  for (const plan::BufferAssignment& b : data.memory.buffers) {
    need += (b.bytes + plan::kArenaAlignment - 1) / plan::kArenaAlignment * plan::kArenaAlignment;
  }
  for (TensorId t : data.graph.inputs()) need += plan::storage_bytes(data.graph.tensor(t));
  for (TensorId t : data.graph.outputs()) need += plan::storage_bytes(data.graph.tensor(t));
  size_t free = 0, total = 0;
  SINTER_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  if (free >= need) return "";
  return "timing them needs " + std::to_string(need >> 20) + " MiB of GPU memory; " + std::to_string(free >> 20) +
         " MiB are free";
}

// Every megakernel segment of the plan timed both ways; per source, the mean over its segments.
std::map<std::string, Times> measure(const plan::Plan& data, const Plan& handle, const CompileOptions& o) {
  RunnerOptions ro;
  ro.mode = ExecMode::mega;
  ro.device = o.device;
  ro.on_log = o.on_log;
  ro.mega.kernel_cache_dir = o.kernel_cache_dir;
  ro.mega.segments = MegaSegments::all_megakernels;
  Runner runner(handle, ro);
  const Graph& g = data.graph;
  const tune::TensorBuffers io(g, g.inputs(), g.outputs(), 0, tune::TensorBuffers::Fill::pattern);
  const Binding b = io.binding(0, nullptr);
  for (size_t i = 0; i < g.inputs().size(); ++i) runner.set_tensor_address(g.tensor(g.inputs()[i]).name, b.inputs[i]);
  for (size_t i = 0; i < g.outputs().size(); ++i) runner.set_tensor_address(g.tensor(g.outputs()[i]).name, b.outputs[i]);
  const cuda::Stream stream;
  std::map<std::string, Times> out;
  std::map<std::string, int> segments;
  for (const MegaSegmentTiming& t : runner.time_mega_segments(stream, std::max(o.timing_repeats, 1))) {
    Times& s = out[t.source_sha256];
    s.megakernel_ms += t.megakernel_ms;
    s.steps_ms += t.steps_ms;
    ++segments[t.source_sha256];
  }
  for (auto& [source, t] : out) {
    t.megakernel_ms /= segments[source];
    t.steps_ms /= segments[source];
  }
  return out;
}

}  // namespace

void time_megakernels(Plan::State& state, const Plan& handle, CompileContext& cc, const CompileOptions& o) {
  plan::Plan& data = state.data;
  if (data.megakernels.empty() || cc.tune_options().mode == TuneMode::heuristic) return;
  auto log = [&](LogSeverity s, const std::string& m) {
    if (o.on_log) o.on_log(s, m);
  };
  if (const std::string why = untimable(data.graph); !why.empty()) {
    log(LogSeverity::info, "megakernels not timed (every segment runs as its megakernel): " + why);
    return;
  }
  tune::TimingCache* cache = cc.timing_cache();
  std::map<std::string, Times> times;
  bool missing = false;
  for (const plan::MegakernelRecord& r : data.megakernels) {
    if (const std::optional<Times> t = cached_times(cache, cache_key(r.source_sha256, cc.device_key()))) {
      times[r.source_sha256] = *t;
    } else {
      missing = true;
    }
  }
  if (missing) {
    // Timing is an optimization: whatever stops it leaves the plan as it is (every segment its
    // megakernel), and the compile goes on.
    try {
      if (const std::string why = too_little_memory(data); !why.empty()) {
        log(LogSeverity::warning, "megakernels not timed (every segment runs as its megakernel): " + why);
        return;
      }
      for (const auto& [source, t] : measure(data, handle, o)) {
        if (times.emplace(source, t).second && cache) cache->put(cache_key(source, cc.device_key()), cache_entry(source, t));
      }
    } catch (const Error& e) {
      log(LogSeverity::warning, "megakernels not timed (every segment runs as its megakernel): " + e.message());
      return;
    }
  }
  for (plan::MegakernelRecord& r : data.megakernels) {
    const auto it = times.find(r.source_sha256);
    if (it == times.end()) continue;  // a source no segment has: cannot happen for a plan just built
    r.megakernel_ms = it->second.megakernel_ms;
    r.steps_ms = it->second.steps_ms;
    char line[200];
    std::snprintf(line, sizeof line, "megakernel %.12s: a segment %.4f ms as the megakernel, %.4f ms as its steps: %s",
                  r.source_sha256.c_str(), r.megakernel_ms, r.steps_ms,
                  r.steps_faster() ? "a mega-mode runner launches its steps" : "it runs as the megakernel");
    log(LogSeverity::info, line);
  }
}

}  // namespace sinter
