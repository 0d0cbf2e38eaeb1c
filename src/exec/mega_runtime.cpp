#include "exec/mega_runtime.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "cuda/timing.hpp"

#include "engines/registry.hpp"
#include "mega/megakernel_plan.hpp"

namespace sinter {

MegaRuntime::MegaRuntime(const plan::Plan& data, const fuse::Partition& partition,
                         const std::vector<std::unique_ptr<PreparedStep>>& steps, const std::vector<TensorId>& alias_of,
                         const cuda::DeviceProperties& device, const MegaOptions& options, LibraryCache& libraries,
                         std::vector<std::string>& notes)
    : sm_count_(device.sm_count) {
  std::vector<mega::PlanStepRef> refs;
  for (size_t i = 0; i < data.steps.size(); ++i) {
    const plan::Step& s = data.steps[i];
    refs.push_back({find_engine(s.engine), s.region, s.config, s.description, steps[i].get()});
  }
  mega::MegakernelPlan m = mega::plan_megakernels(data.graph, partition, refs, alias_of, device);
  mega_steps_ = std::move(m.mega_steps);
  // memory shared with other ranks, in plan order, before the segments' counters
  for (auto& s : mega_steps_) {
    if (s) s->allocate();
  }
  pieces_ = std::move(m.pieces);
  for (const auto& o : m.outside) outside_.push_back({static_cast<int>(o.step), o.why});
  std::map<std::string, const plan::MegakernelRecord*> record_of;  // source key -> the plan's record
  for (const plan::MegakernelRecord& r : data.megakernels) record_of[r.source_sha256] = &r;
  mega::SegmentOptions so;
  so.watchdog_ms = options.watchdog_ms;
  so.trace = options.trace;
  so.inject = options.inject;
  so.sm_count = options.sm_count;
  for (size_t p = 0; p < pieces_.size(); ++p) {
    if (!m.graphs[p]) {
      segments_.push_back(nullptr);
      source_keys_.emplace_back();
      as_steps_.push_back(false);
      continue;
    }
    std::vector<MegaStep*> ms;
    for (const mega::SegmentStep& s : m.graphs[p]->steps) ms.push_back(mega_steps_[s.step].get());
    source_keys_.push_back(mega::megakernel_source_key(m.sources[p]));
    std::shared_ptr<const cuda::Library> library;
    auto it = record_of.find(source_keys_.back());
    const plan::MegakernelRecord* record = it == record_of.end() ? nullptr : it->second;
    as_steps_.push_back(options.segments == MegaSegments::as_planned && record && record->steps_faster());
    if (as_steps_.back()) {
      char times[160];
      std::snprintf(times, sizeof times, "%.4f ms a segment against %.4f ms as its megakernel", record->steps_ms,
                    record->megakernel_ms);
      const std::string why = "its segment (steps " + std::to_string(pieces_[p].steps.front()) + ".." +
                              std::to_string(pieces_[p].steps.back()) +
                              ") ran faster as separate launches when the plan was compiled (" + times + ")";
      for (const mega::SegmentStep& s : m.graphs[p]->steps) outside_.push_back({static_cast<int>(s.step), why});
    }
    if (record) {
      library = libraries.get(record->cubin, plan::PlanBlobs(data).get(record->cubin, BlobKind::cubin));
    } else {
      if (!cache_) {
        cache_ = std::make_unique<cuda::KernelCache>(options.kernel_cache_dir.empty()
                                                         ? cuda::KernelCache::default_directory()
                                                         : std::filesystem::path(options.kernel_cache_dir));
      }
      notes.push_back("megakernel of steps " + std::to_string(pieces_[p].steps.front()) + ".." +
                      std::to_string(pieces_[p].steps.back()) +
                      ": not in the plan (compile with CompileOptions::megakernels to store it); compiled through "
                      "the kernel cache");
    }
    segments_.push_back(std::make_unique<mega::Segment>(std::move(*m.graphs[p]), std::move(m.sources[p]), std::move(ms),
                                                        std::move(library), cache_.get(), device, so));
  }
  std::stable_sort(outside_.begin(), outside_.end(),
                   [](const MegaDescription::Outside& a, const MegaDescription::Outside& b) { return a.step < b.step; });
}

MegaRuntime::~MegaRuntime() = default;

void MegaRuntime::bind_segment(size_t piece, const std::vector<Binding>& bindings, cudaStream_t stream) {
  std::vector<const Binding*> b;
  for (const mega::SegmentStep& s : segments_[piece]->graph().steps) b.push_back(&bindings.at(s.step));
  segments_[piece]->bind(b, stream);
}

void MegaRuntime::bind(const std::vector<Binding>& bindings, cudaStream_t stream) {
  for (size_t p = 0; p < pieces_.size(); ++p) {
    if (launched(p)) bind_segment(p, bindings, stream);  // the others only when time_segments launches them
  }
}

void MegaRuntime::enqueue(const std::vector<std::unique_ptr<PreparedStep>>& steps, const std::vector<Binding>& bindings,
                          cudaStream_t stream) {
  for (size_t p = 0; p < pieces_.size(); ++p) {
    if (launched(p)) {
      segments_[p]->launch(stream);
    } else {
      for (size_t i : pieces_[p].steps) steps[i]->launch(bindings[i], stream);
    }
  }
}

void MegaRuntime::check(cudaStream_t stream) {
  for (auto& s : segments_) {
    if (s) s->check(stream);
  }
}

MegaDescription MegaRuntime::describe() const {
  MegaDescription d;
  d.outside = outside_;
  for (size_t p = 0; p < pieces_.size(); ++p) {
    if (!launched(p)) continue;
    const mega::Segment& seg = *segments_[p];
    const mega::TaskGraph& g = seg.graph();
    MegaSegmentDescription sd;
    for (size_t i : pieces_[p].steps) sd.steps.push_back(static_cast<int>(i));
    std::vector<int> dependents(g.kernels.size(), 0);
    for (const mega::TaskKernel& k : g.kernels) {
      for (unsigned w : k.waits) ++dependents[w];
    }
    for (size_t k = 0; k < g.kernels.size(); ++k) {
      const mega::TaskKernel& tk = g.kernels[k];
      MegaSegmentDescription::TaskKernel out;
      out.step = static_cast<int>(g.steps[tk.segment_step].step);
      out.kernel = static_cast<int>(tk.kernel);
      out.description = g.steps[tk.segment_step].kernels[tk.kernel].description;
      out.tasks = static_cast<int>(tk.tasks());
      out.threads = static_cast<int>(tk.threads);
      out.function = static_cast<int>(tk.function);
      for (unsigned w : tk.waits) out.waits.push_back(static_cast<int>(w));
      out.dependents = dependents[k];
      out.range_counters = tk.group_bounds.empty() ? 0 : static_cast<int>(tk.group_bounds.size() - 1);
      sd.kernels.push_back(std::move(out));
    }
    const mega::Schedule& s = seg.schedule();
    sd.functions = static_cast<int>(g.functions.size());
    sd.tasks = static_cast<int>(g.tasks);
    sd.ctas = s.ctas;
    sd.threads = seg.threads();
    sd.counters = static_cast<int>(g.counters.size());
    sd.counter_waits = static_cast<int>(seg.counter_waits());
    sd.waitless_tasks = static_cast<int>(seg.waitless_tasks());
    sd.shared_memory_bytes = seg.shared_memory_bytes();
    sd.queue_chunks = static_cast<int>(seg.queue_chunks());
    sd.chunk_bytes = seg.chunk_bytes();
    sd.critical_path_us = mega::critical_path_us(g, sm_count_);
    sd.estimated_us = s.estimated_us;
    sd.max_queue = 0;
    sd.min_queue = static_cast<int>(g.tasks);
    for (int c = 0; c < s.ctas; ++c) {
      const int n = static_cast<int>(s.queue_start[c + 1] - s.queue_start[c]);
      sd.max_queue = std::max(sd.max_queue, n);
      sd.min_queue = std::min(sd.min_queue, n);
    }
    sd.compile_ms = seg.compile_ms();
    d.segments.push_back(std::move(sd));
  }
  return d;
}

std::vector<MegaTaskEvent> MegaRuntime::trace() const {
  std::vector<MegaTaskEvent> out;
  int segment = 0;
  for (size_t p = 0; p < pieces_.size(); ++p) {
    if (!launched(p)) continue;
    const mega::Segment* seg = segments_[p].get();
    const mega::TaskGraph& g = seg->graph();
    for (const mega::TaskEvent& e : seg->trace()) {
      const mega::TaskKernel& tk = g.kernels[e.kernel];
      MegaTaskEvent m;
      m.segment = segment;
      m.step = static_cast<int>(g.steps[tk.segment_step].step);
      m.kernel = static_cast<int>(tk.kernel);
      m.block = static_cast<int>(e.block);
      m.cta = static_cast<int>(e.cta);
      m.sm = static_cast<int>(e.sm);
      m.start_ns = e.start_ns;
      m.end_ns = e.end_ns;
      m.waited_ns = e.waited_ns;
      out.push_back(m);
    }
    ++segment;
  }
  return out;
}

std::vector<MegaSegmentTiming> MegaRuntime::time_segments(const std::vector<std::unique_ptr<PreparedStep>>& steps,
                                                         const std::vector<Binding>& bindings, cudaStream_t stream,
                                                         int iters) {
  auto median = [](std::vector<float> t) {
    std::sort(t.begin(), t.end());
    return static_cast<double>(t[t.size() / 2]);
  };
  std::vector<MegaSegmentTiming> out;
  for (size_t p = 0; p < pieces_.size(); ++p) {
    if (!segments_[p]) continue;
    if (!launched(p)) bind_segment(p, bindings, stream);
    MegaSegmentTiming t;
    for (size_t i : pieces_[p].steps) t.steps.push_back(static_cast<int>(i));
    t.source_sha256 = source_keys_[p];
    t.launched_as_steps = as_steps_[p];
    t.megakernel_ms = median(cuda::time_calls(stream, std::max(iters, 1), [&] { segments_[p]->launch(stream); }));
    segments_[p]->check(stream);
    t.steps_ms = median(cuda::time_calls(stream, std::max(iters, 1), [&] {
      for (size_t i : pieces_[p].steps) steps[i]->launch(bindings[i], stream);
    }));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace sinter
