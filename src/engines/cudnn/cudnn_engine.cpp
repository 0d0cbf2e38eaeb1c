#include "engines/cudnn/cudnn_engine.hpp"

#include <cstdio>

#include "engines/cudnn/engine_configs.hpp"
#include "engines/cudnn/sdpa_graph.hpp"
#include "engines/cudnn/sdpa_pattern.hpp"
#include "sinter/error.hpp"

namespace sinter::cudnn {
namespace {

SdpaMatch match(const Graph& g, const fuse::Region& r) {
  const Library& lib = library();
  if (!lib.loaded) return {std::nullopt, "cuDNN not found (" + lib.reason + ")"};
  return match_sdpa(g, r, lib.version);
}

std::string candidate_text(const SdpaPattern& p, const std::string& config) {
  return "cudnn " + version_string() + " sdpa [" + p.summary + "] " + config;
}

class CudnnStep : public PreparedStep {
 public:
  CudnnStep(const SdpaPattern& p, std::unique_ptr<OperationGraph> graph, PlannedConfig config)
      : p_(p), graph_(std::move(graph)), config_(std::move(config)) {}

  void launch(const Binding& bind, cudaStream_t stream) override {
    const Library& lib = library();
    SINTER_CUDNN_CHECK(lib.SetStream(handle(), stream));
    std::vector<int64_t> uids{kUidQ, kUidK, kUidV, kUidO};
    std::vector<void*> ptrs{const_cast<void*>(bind.inputs.at(p_.q.input)),
                            const_cast<void*>(bind.inputs.at(p_.k.input)),
                            const_cast<void*>(bind.inputs.at(p_.v.input)), bind.outputs.at(p_.o_output)};
    if (p_.stats_output >= 0) {
      uids.push_back(kUidStats);
      ptrs.push_back(bind.outputs.at(p_.stats_output));
    }
    if (p_.bias) {
      uids.push_back(kUidBias);
      ptrs.push_back(const_cast<void*>(bind.inputs.at(p_.bias->input)));
    }
    // By-value scalars: cuDNN reads them from host memory through these pointers.
    for (OperationGraph::Scalar& s : graph_->scalars) {
      uids.push_back(s.uid);
      ptrs.push_back(&s.value);
    }
    Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack.set_array(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids)
        .set_array(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs)
        .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, bind.workspace);
    pack.finalize();
    SINTER_CUDNN_CHECK(lib.BackendExecute(handle(), config_.plan->get(), pack.get()));
    // cuDNN does not promise to leave its workspace zeroed; the executor's contract wants zero
    // after each launch (our exit reductions share the workspace and rely on it).
    if (config_.workspace > 0) {
      const cudaError_t e = cudaMemsetAsync(bind.workspace, 0, static_cast<size_t>(config_.workspace), stream);
      if (e != cudaSuccess) {
        throw Error(ErrorCode::cuda, std::string("cudaMemsetAsync of the cuDNN workspace failed: ") +
                                         cudaGetErrorString(e));
      }
    }
  }
  size_t workspace_bytes() const override { return static_cast<size_t>(config_.workspace); }
  std::string describe() const override { return candidate_text(p_, config_.description); }

 private:
  SdpaPattern p_;
  std::unique_ptr<OperationGraph> graph_;
  PlannedConfig config_;
};

}  // namespace

std::string cudnn_version() { return version_string(); }

Support CudnnEngine::supports(const Graph& g, const fuse::Region& r) const {
  const SdpaMatch m = match(g, r);
  return m.pattern ? Support::yes() : Support::no(m.reason);
}

std::vector<Candidate> CudnnEngine::candidates(const Graph& g, const fuse::Region& r,
                                               const EngineContext&) const {
  const SdpaMatch m = match(g, r);
  if (!m.pattern) return {};
  std::unique_ptr<OperationGraph> graph;
  ConfigList list;
  try {
    graph = build_sdpa_graph(*m.pattern, handle());
    list = plan_configs(*graph->graph, handle(), max_candidates_);
  } catch (const Error& e) {
    // The pattern matcher cannot foresee every limit of the loaded cuDNN; a refusal here leaves
    // the region to the next engine, and is said aloud rather than hidden.
    std::fprintf(stderr, "sinter: cudnn offers no candidate for region %d: %s\n", r.id, e.what());
    return {};
  }
  if (list.configs.empty()) {
    std::fprintf(stderr, "sinter: cudnn offers no candidate for region %d: %s\n", r.id,
                 list.dropped.empty() ? "the heuristics returned no engine config" : list.dropped.c_str());
  }
  std::vector<Candidate> out;
  int i = 0;
  for (const PlannedConfig& c : list.configs) {
    out.push_back({std::string(name()), i++, candidate_text(*m.pattern, c.description)});
  }
  return out;
}

std::unique_ptr<PreparedStep> CudnnEngine::prepare(const Graph& g, const fuse::Region& r,
                                                   const Candidate& c, EngineContext&) const {
  const SdpaMatch m = match(g, r);
  if (!m.pattern) throw Error(ErrorCode::unsupported, "cudnn: " + m.reason);
  auto graph = build_sdpa_graph(*m.pattern, handle());
  ConfigList list = plan_configs(*graph->graph, handle(), std::max(max_candidates_, c.index + 1));
  if (c.index < 0 || static_cast<size_t>(c.index) >= list.configs.size()) {
    throw Error(ErrorCode::unsupported,
                "cudnn: candidate " + std::to_string(c.index) + " does not exist (" +
                    std::to_string(list.configs.size()) + " engine configs built" +
                    (list.dropped.empty() ? "" : "; " + list.dropped) + ")");
  }
  return std::make_unique<CudnnStep>(*m.pattern, std::move(graph),
                                     std::move(list.configs[static_cast<size_t>(c.index)]));
}

}  // namespace sinter::cudnn
