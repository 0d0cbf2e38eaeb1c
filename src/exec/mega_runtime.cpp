#include "exec/mega_runtime.hpp"

#include <algorithm>

#include "engines/registry.hpp"
#include "mega/task_graph.hpp"
#include "plan/memory_plan.hpp"
#include "sinter/error.hpp"

namespace sinter {
namespace {

TensorId root_of(const std::vector<TensorId>& alias_of, TensorId t) {
  while (alias_of[t] >= 0) t = alias_of[t];
  return t;
}

}  // namespace

MegaRuntime::MegaRuntime(const plan::Plan& data, const fuse::Partition& partition,
                         const std::vector<std::unique_ptr<PreparedStep>>& steps, const std::vector<TensorId>& alias_of,
                         const cuda::DeviceProperties& device, const MegaOptions& options)
    : sm_count_(device.sm_count) {
  cache_ = std::make_unique<cuda::KernelCache>(
      options.kernel_cache_dir.empty() ? cuda::KernelCache::default_directory()
                                        : std::filesystem::path(options.kernel_cache_dir));
  const Graph& g = data.graph;
  std::vector<mega::StepView> views(data.steps.size());
  mega_steps_.resize(data.steps.size());
  for (size_t i = 0; i < data.steps.size(); ++i) {
    const plan::Step& s = data.steps[i];
    const Engine* e = find_engine(s.engine);
    if (e->output_shares_input()) {
      views[i].launches_nothing = true;
      continue;
    }
    std::string why;
    mega_steps_[i] = e->mega_step(g, partition.regions.at(s.region), s.config, *steps[i], device, &why);
    views[i].mega = mega_steps_[i].get();
    if (!views[i].mega) outside_.push_back({static_cast<int>(i), why});
  }
  pieces_ = mega::split_segments(views);
  mega::SegmentOptions so;
  so.watchdog_ms = options.watchdog_ms;
  so.trace = options.trace;
  so.inject = options.inject;
  for (const mega::Piece& piece : pieces_) {
    if (!piece.mega) {
      segments_.push_back(nullptr);
      continue;
    }
    std::vector<mega::SegmentStep> seg;
    std::vector<MegaStep*> ms;
    for (size_t i : piece.steps) {
      if (!mega_steps_[i]) continue;  // an alias: launches nothing
      const fuse::Region& r = partition.regions.at(data.steps[i].region);
      mega::SegmentStep s;
      s.step = i;
      s.description = data.steps[i].description;
      for (TensorId t : r.inputs) {
        s.reads.push_back(root_of(alias_of, t));
        s.bytes += static_cast<double>(plan::storage_bytes(g.tensor(t)));
      }
      for (TensorId t : r.outputs) {
        s.writes.push_back(root_of(alias_of, t));
        s.bytes += static_cast<double>(plan::storage_bytes(g.tensor(t)));
      }
      s.kernels = mega_steps_[i]->kernels();
      seg.push_back(std::move(s));
      ms.push_back(mega_steps_[i].get());
    }
    segments_.push_back(
        std::make_unique<mega::Segment>(mega::build_task_graph(std::move(seg)), std::move(ms), *cache_, device, so));
  }
}

MegaRuntime::~MegaRuntime() = default;

void MegaRuntime::bind(const std::vector<Binding>& bindings, cudaStream_t stream) {
  for (size_t p = 0; p < pieces_.size(); ++p) {
    if (!segments_[p]) continue;
    std::vector<const Binding*> b;
    for (const mega::SegmentStep& s : segments_[p]->graph().steps) b.push_back(&bindings.at(s.step));
    segments_[p]->bind(b, stream);
  }
}

void MegaRuntime::enqueue(const std::vector<std::unique_ptr<PreparedStep>>& steps, const std::vector<Binding>& bindings,
                          cudaStream_t stream) {
  for (size_t p = 0; p < pieces_.size(); ++p) {
    if (segments_[p]) {
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
    if (!segments_[p]) continue;
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
      sd.kernels.push_back(std::move(out));
    }
    const mega::Schedule& s = seg.schedule();
    sd.functions = static_cast<int>(g.functions.size());
    sd.tasks = static_cast<int>(g.tasks);
    sd.ctas = s.ctas;
    sd.threads = seg.threads();
    sd.shared_memory_bytes = seg.shared_memory_bytes();
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
  for (const auto& seg : segments_) {
    if (!seg) continue;
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

}  // namespace sinter
