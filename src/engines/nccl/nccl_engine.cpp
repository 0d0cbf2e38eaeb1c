#include "engines/nccl/nccl_engine.hpp"

#include "comm/communicator_state.hpp"
#include "cuda/check.hpp"
#include "comm/symmetric_memory.hpp"
#include "engines/nccl/collective_config.hpp"
#include "engines/nccl/collective_mega_step.hpp"
#include "sinter/error.hpp"

namespace sinter::nccl {
namespace {

// One collective. `comm` is null for a step prepared at compile time (it saves, never launches,
// unless its world is 1) and for a loaded step of world 1.
class CollectiveStep : public PreparedStep {
 public:
  CollectiveStep(CollectiveConfig c, std::shared_ptr<Communicator::State> comm)
      : c_(std::move(c)), comm_(std::move(comm)) {}

  void launch(const Binding& b, cudaStream_t stream) override {
    const void* in = b.inputs.at(0);
    void* out = b.outputs.at(0);
    if (c_.attrs.world == 1) {
      if (in != out && c_.output_bytes > 0) {
        SINTER_CUDA_CHECK(cudaMemcpyAsync(out, in, c_.output_bytes, cudaMemcpyDeviceToDevice, stream));
      }
      return;
    }
    if (!comm_) {
      throw Error(ErrorCode::invalid_state, describe() + ": no communicator for group '" + c_.attrs.group +
                                                "' (a Runner binds it: RunnerOptions::communicators)");
    }
    if (comm_->virtual_group) {
      throw Error(ErrorCode::unsupported, describe() + ": group '" + c_.attrs.group +
                                              "' is a virtual group (its ranks share one GPU, with no NCCL): its "
                                              "collectives run only as megakernel tasks (ExecMode::mega)");
    }
    const Library& lib = require_library();
    ncclComm_t comm = comm_->comm;
    switch (c_.op) {
      case OpKind::all_reduce:
        SINTER_NCCL_CHECK_COMM(lib.AllReduce(in, out, c_.count, c_.type, c_.reduce, comm, stream), comm);
        return;
      case OpKind::all_gather:
        SINTER_NCCL_CHECK_COMM(lib.AllGather(in, out, c_.count, c_.type, comm, stream), comm);
        return;
      case OpKind::reduce_scatter:
        SINTER_NCCL_CHECK_COMM(lib.ReduceScatter(in, out, c_.count, c_.type, c_.reduce, comm, stream), comm);
        return;
      default: break;
    }
    throw Error(ErrorCode::internal, "nccl step: op " + std::string(to_string(c_.op)) + " is not a collective");
  }

  std::string describe() const override {
    if (c_.attrs.world == 1) return config_text(c_) + " (world 1: a copy)";
    return "nccl " + config_text(c_);
  }
  const CollectiveConfig& config() const { return c_; }
  const std::shared_ptr<Communicator::State>& comm() const { return comm_; }

 private:
  CollectiveConfig c_;
  std::shared_ptr<Communicator::State> comm_;
};

CollectiveConfig config_or_throw(const Graph& g, const fuse::Region& r) {
  CollectiveMatch m = match_collective(g, r);
  if (!m.config) throw Error(ErrorCode::unsupported, "nccl engine, region " + std::to_string(r.id) + ": " + m.reason);
  return *m.config;
}

}  // namespace

Support NcclEngine::supports(const Graph& g, const fuse::Region& r, const EngineContext&) const {
  const CollectiveMatch m = match_collective(g, r);
  if (!m.config) return Support::no(m.reason);
  if (std::string why = library_problem(*m.config, library()); !why.empty()) return Support::no(why);
  return Support::yes();
}

std::vector<Candidate> NcclEngine::candidates(const Graph& g, const fuse::Region& r, const EngineContext&) const {
  const CollectiveMatch m = match_collective(g, r);
  if (!m.config) return {};
  const std::string how = m.config->attrs.world == 1 ? "a device-to-device copy (world 1)"
                                                     : "one NCCL call on the runner's communicator";
  return {Candidate{std::string(name()), 0, config_text(*m.config), std::string(to_string(m.config->op)) + ": " + how}};
}

std::unique_ptr<PreparedStep> NcclEngine::prepare(const Graph& g, const fuse::Region& r, const Candidate&,
                                                  EngineContext&) const {
  return std::make_unique<CollectiveStep>(config_or_throw(g, r), nullptr);
}

SavedStep NcclEngine::save_step(const PreparedStep& step, BlobStore&) const {
  const auto* s = dynamic_cast<const CollectiveStep*>(&step);
  if (!s) throw Error(ErrorCode::internal, "nccl engine: asked to save a step it did not prepare");
  SavedStep saved;
  saved.collective = record_of(s->config());
  return saved;
}

std::string NcclEngine::check_saved_step(const Graph& g, const fuse::Region& r, const SavedStep& saved,
                                         const BlobStore&) const {
  if (!saved.kernels.empty() || !saved.config_blob.empty()) return "a collective step has no kernels or vendor config";
  if (!saved.collective) return "a collective step needs its \"collective\" record";
  const CollectiveMatch m = match_collective(g, r);
  if (!m.config) return "NCCL cannot run this region: " + m.reason;
  return record_mismatch(*m.config, *saved.collective);
}

std::unique_ptr<PreparedStep> NcclEngine::load_step(const Graph& g, const fuse::Region& r, const SavedStep&,
                                                    const BlobStore&, size_t, LoadContext& ctx) const {
  const CollectiveConfig c = config_or_throw(g, r);
  const Communicator* comm = nullptr;
  if (ctx.communicators) {
    auto it = ctx.communicators->find(c.attrs.group);
    if (it != ctx.communicators->end()) comm = &it->second;
  }
  if (std::string why = communicator_problem(c, comm, ctx.device); !why.empty()) {
    throw Error(ErrorCode::invalid_argument, why);
  }
  const bool virtual_group = comm && comm->valid() && comm->is_virtual();
  if (std::string why = library_problem(c, library()); !why.empty() && !virtual_group) {
    throw Error(ErrorCode::unsupported, why);
  }
  // World 1 copies: it keeps no communicator, even where one is bound.
  return std::make_unique<CollectiveStep>(c, c.attrs.world == 1 ? nullptr : comm->state());
}

std::unique_ptr<MegaStep> NcclEngine::mega_step(const Graph&, const fuse::Region&, const std::string&,
                                                PreparedStep& step, const cuda::DeviceProperties& device,
                                                std::string* why) const {
  auto* s = dynamic_cast<CollectiveStep*>(&step);
  if (!s) throw Error(ErrorCode::internal, "nccl engine: mega_step of another engine's step");
  // A step prepared at compile time has no communicator: it joins, as the runner's will where
  // its group has symmetric memory.
  if (std::string no = comm::symmetric_memory_problem(s->comm().get()); !no.empty()) {
    if (why) *why = "its group '" + s->config().attrs.group + "' has no symmetric memory: " + no;
    return nullptr;
  }
  return collective_mega_step(s->config(), s->comm(), device);
}

}  // namespace sinter::nccl
