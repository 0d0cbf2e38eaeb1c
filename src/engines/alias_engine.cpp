#include "engines/alias_engine.hpp"

#include <algorithm>

#include "sinter/error.hpp"

namespace sinter {
namespace {

std::string why_not(const Graph& g, const fuse::Region& r) {
  if (r.kind != fuse::RegionKind::alias) return "only reshapes and unit-axis permutes share memory";
  const Node& n = g.node(r.anchor);
  const TensorInfo& in = g.tensor(n.inputs[0]);
  if (in.strides != contiguous_strides(in.dims)) return "'" + in.name + "' is a strided view: its reshape is a copy";
  const TensorId out = n.outputs[0];
  if (std::find(g.outputs().begin(), g.outputs().end(), out) != g.outputs().end()) {
    return "'" + g.tensor(out).name + "' is a graph output, whose memory the caller binds: it is copied";
  }
  return "";
}

class AliasStep : public PreparedStep {
 public:
  explicit AliasStep(std::string source) : source_(std::move(source)) {}
  void launch(const Binding&, cudaStream_t) override {}
  std::string describe() const override { return "shares the memory of '" + source_ + "'"; }

 private:
  std::string source_;
};

std::string source_name(const Graph& g, const fuse::Region& r) { return g.tensor(g.node(r.anchor).inputs[0]).name; }

}  // namespace

Support AliasEngine::supports(const Graph& g, const fuse::Region& r, const EngineContext&) const {
  const std::string why = why_not(g, r);
  return why.empty() ? Support::yes() : Support::no(why);
}

std::vector<Candidate> AliasEngine::candidates(const Graph& g, const fuse::Region& r, const EngineContext&) const {
  if (!why_not(g, r).empty()) return {};
  return {Candidate{std::string(name()), 0, "alias", "shares the memory of '" + source_name(g, r) + "'"}};
}

std::unique_ptr<PreparedStep> AliasEngine::prepare(const Graph& g, const fuse::Region& r, const Candidate&,
                                                   EngineContext&) const {
  if (const std::string why = why_not(g, r); !why.empty()) {
    throw Error(ErrorCode::unsupported, "alias engine, region " + std::to_string(r.id) + ": " + why);
  }
  return std::make_unique<AliasStep>(source_name(g, r));
}

SavedStep AliasEngine::save_step(const PreparedStep&, BlobStore&) const { return {}; }

std::string AliasEngine::check_saved_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                                          const BlobStore&) const {
  if (!saved.kernels.empty() || !saved.config_blob.empty()) return "an alias step launches nothing: no kernels or config";
  const std::string why = why_not(g, r);
  return why.empty() ? "" : "it cannot share memory: " + why;
}

std::unique_ptr<PreparedStep> AliasEngine::load_step(const Graph& g, const fuse::Region& r, const SavedStep&,
                                                     const BlobStore&, size_t, LoadContext&) const {
  return std::make_unique<AliasStep>(source_name(g, r));
}

}  // namespace sinter
