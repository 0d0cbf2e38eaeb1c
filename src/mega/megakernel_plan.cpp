#include "mega/megakernel_plan.hpp"

#include "cuda/kernel_sources.hpp"
#include "cuda/sha256.hpp"
#include "mega/mega_source.hpp"
#include "plan/memory_plan.hpp"

namespace sinter::mega {
namespace {

TensorId root_of(const std::vector<TensorId>& alias_of, TensorId t) {
  while (alias_of[t] >= 0) t = alias_of[t];
  return t;
}

}  // namespace

MegakernelPlan plan_megakernels(const Graph& g, const fuse::Partition& p, const std::vector<PlanStepRef>& steps,
                                const std::vector<TensorId>& alias_of, const cuda::DeviceProperties& device) {
  MegakernelPlan m;
  std::vector<StepView> views(steps.size());
  m.mega_steps.resize(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStepRef& s = steps[i];
    if (s.engine->output_shares_input()) {
      views[i].launches_nothing = true;
      continue;
    }
    std::string why;
    m.mega_steps[i] = s.engine->mega_step(g, p.regions.at(s.region), s.config, *s.prepared, device, &why);
    views[i].mega = m.mega_steps[i].get();
    if (!views[i].mega) m.outside.push_back({i, why});
  }
  m.pieces = split_segments(views);
  for (const Piece& piece : m.pieces) {
    if (!piece.mega) {
      m.graphs.emplace_back();
      m.sources.emplace_back();
      continue;
    }
    std::vector<SegmentStep> seg;
    for (size_t i : piece.steps) {
      if (!m.mega_steps[i]) continue;  // an alias: launches nothing
      const fuse::Region& r = p.regions.at(steps[i].region);
      SegmentStep s;
      s.step = i;
      s.description = steps[i].description;
      for (TensorId t : r.inputs) {
        s.reads.push_back(root_of(alias_of, t));
        s.bytes += static_cast<double>(plan::storage_bytes(g.tensor(t)));
      }
      for (TensorId t : r.outputs) {
        s.writes.push_back(root_of(alias_of, t));
        s.bytes += static_cast<double>(plan::storage_bytes(g.tensor(t)));
      }
      if (r.kind == fuse::RegionKind::gather) {
        // the picked slices are read, not the whole table (ir/cost.cpp)
        s.bytes = node_cost(g, g.node(r.anchor)).bytes;
      }
      s.kernels = m.mega_steps[i]->kernels();
      seg.push_back(std::move(s));
    }
    TaskGraph tg = build_task_graph(std::move(seg));
    m.sources.push_back(megakernel_source(tg));
    m.graphs.emplace_back(std::move(tg));
  }
  return m;
}

// The generated source includes kernels/ headers (the dispatcher, the task table layout), so the
// key holds their digest too: a bundle saved with other headers finds no cubin here and compiles.
std::string megakernel_source_key(const std::string& source) {
  return cuda::to_hex(cuda::sha256(source + "\n// kernels/ " + cuda::to_hex(cuda::kernel_sources_digest())));
}

}  // namespace sinter::mega
