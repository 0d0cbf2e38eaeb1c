// The megakernels of a plan: its steps split into segments (segments.hpp), each segment's task
// graph (task_graph.hpp) and generated source (mega_source.hpp). A function of the plan's steps
// and their prepared or loaded forms, shared by compile (which stores each megakernel's cubin in
// the plan, keyed by its source's digest) and the mega-mode runner (which loads those cubins, or
// compiles what the plan lacks).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/device.hpp"
#include "engines/engine.hpp"
#include "fuse/region.hpp"
#include "mega/segments.hpp"
#include "mega/task_graph.hpp"

namespace sinter::mega {

// One plan step as the segment builder sees it.
struct PlanStepRef {
  const Engine* engine = nullptr;
  int region = 0;
  std::string config;
  std::string description;
  PreparedStep* prepared = nullptr;
};

struct MegakernelPlan {
  std::vector<std::unique_ptr<MegaStep>> mega_steps;  // by plan step (null: outside, or an alias)
  std::vector<Piece> pieces;
  std::vector<std::optional<TaskGraph>> graphs;       // by piece: the segment's task graph
  std::vector<std::string> sources;                   // by piece: its megakernel source ("" outside)
  struct Outside {
    size_t step = 0;
    std::string why;
  };
  std::vector<Outside> outside;
};

// `alias_of[t]`: the tensor whose memory t shares, or -1.
MegakernelPlan plan_megakernels(const Graph& g, const fuse::Partition& p, const std::vector<PlanStepRef>& steps,
                                const std::vector<TensorId>& alias_of, const cuda::DeviceProperties& device);

// The key a plan stores a megakernel's cubin under: the lower-case hex SHA-256 of its source and of
// the kernels/ headers it includes (cuda::kernel_sources_digest).
std::string megakernel_source_key(const std::string& source);

}  // namespace sinter::mega
