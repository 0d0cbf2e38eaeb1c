// The jit engine's steps as megakernel tasks (Engine::mega_step): each kernel of the step
// keeps its grid, block and argument struct; its source is the one its standalone kernel was
// compiled from (regenerated from the step's config when the step was loaded from a plan).
#include <variant>

#include "engines/jit/codegen.hpp"
#include "engines/jit/jit_engine.hpp"
#include "engines/jit/jit_step.hpp"
#include "engines/jit/kernel_config.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

class JitMegaStep : public MegaStep {
 public:
  JitMegaStep(std::vector<KernelSpec> specs, std::vector<MegaTaskKernel> kernels)
      : specs_(std::move(specs)), kernels_(std::move(kernels)) {}
  const std::vector<MegaTaskKernel>& kernels() const override { return kernels_; }
  std::vector<char> arguments(size_t k, const Binding& binding) override {
    KernelSpec& spec = specs_.at(k);
    bind_kernel_args(spec, binding);
    const char* p = static_cast<const char*>(spec.args.data());
    return std::vector<char>(p, p + spec.args.size());
  }

 private:
  std::vector<KernelSpec> specs_;
  std::vector<MegaTaskKernel> kernels_;
};

}  // namespace

std::string mega_refusal(const KernelSpec& k, const std::string& source) {
  if (k.launch.cluster) return "it launches thread-block clusters";
  if (k.launch.cooperative) return "its CTAs must all be resident at once";
  // the TMA decode GEMV reads its tensor maps from the task's arguments in the queue image
  // (kernels/gemm/decode_tma.cuh); no other kernel knows to
  const bool decode_tma = source.find("gemm/decode_tma") != std::string::npos;
  if (!k.tensor_maps.empty() && !decode_tma) return "it reads through TMA tensor maps";
  if (k.launch.block.y != 1 || k.launch.block.z != 1) return "its block is not one-dimensional";
  if (k.launch.block.x % 32 != 0) return "its block is not whole warps";
  // mbarrier rings and warp-specialized register reallocation assume a kernel of their own
  if (source.find("RowStaging::bulk") != std::string::npos) return "it stages rows through an mbarrier ring";
  if (source.find("gemm/sm90_") != std::string::npos || source.find("setmaxnreg") != std::string::npos) {
    return "it is a warp-specialized Hopper GEMM";
  }
  return "";
}

MegaTaskKernel mega_task_kernel(const KernelSpec& spec, std::string source) {
  MegaTaskKernel k;
  k.source = std::move(source);
  k.entry = spec.entry;
  k.description = spec.description;
  k.grid[0] = spec.launch.grid.x;
  k.grid[1] = spec.launch.grid.y;
  k.grid[2] = spec.launch.grid.z;
  k.threads = spec.launch.block.x;
  k.dynamic_shared_memory = spec.launch.dynamic_shared_memory;
  k.arg_bytes = spec.args.size();
  k.boxes = spec.task_boxes;
  return k;
}

std::unique_ptr<MegaStep> JitEngine::mega_step(const Graph& g, const fuse::Region& r, const std::string& config,
                                               PreparedStep& step, const cuda::DeviceProperties& device,
                                               std::string* why) const {
  auto* jit = dynamic_cast<JitStep*>(&step);
  if (!jit) throw Error(ErrorCode::internal, "jit engine: mega_step of another engine's step");
  std::vector<std::string> sources;
  std::vector<std::vector<TaskBox>> boxes;  // the prepared specs' own, or regenerated with the source
  for (const JitStep::Loaded& k : jit->kernels()) {
    sources.push_back(k.spec.source);
    boxes.push_back(k.spec.task_boxes);
  }
  if (!sources.empty() && sources.front().empty()) {
    // loaded from a plan: the same generator, config and region give the same source
    RegionKernels rk = build_region(g, r, device, parse_kernel_config(config));
    if (rk.kernels.size() != sources.size()) {
      throw Error(ErrorCode::internal, "jit engine: region " + std::to_string(r.id) + " regenerates " +
                                           std::to_string(rk.kernels.size()) + " kernels; the plan has " +
                                           std::to_string(sources.size()));
    }
    for (size_t i = 0; i < sources.size(); ++i) {
      if (rk.kernels[i].args.size() != jit->kernels()[i].spec.args.size()) {
        throw Error(ErrorCode::internal, "jit engine: region " + std::to_string(r.id) +
                                             " regenerates another argument struct than the plan's kernel");
      }
      sources[i] = std::move(rk.kernels[i].source);
      if (task_boxes_hold(rk.kernels[i], jit->kernels()[i].spec.launch.grid.x)) boxes[i] = rk.kernels[i].task_boxes;
    }
  }
  std::vector<KernelSpec> specs;
  std::vector<MegaTaskKernel> kernels;
  for (size_t i = 0; i < sources.size(); ++i) {
    const KernelSpec& spec = jit->kernels()[i].spec;
    if (const std::string no = mega_refusal(spec, sources[i]); !no.empty()) {
      if (why) *why = "jit kernel '" + spec.description + "': " + no;
      return nullptr;
    }
    MegaTaskKernel k = mega_task_kernel(spec, sources[i]);
    k.boxes = std::move(boxes[i]);
    if (jit->kernels()[i].kernel.get() != nullptr) {
      k.registers = static_cast<unsigned>(jit->kernels()[i].kernel.attributes().numRegs);
    }
    kernels.push_back(std::move(k));
    specs.push_back(spec);
  }
  return std::make_unique<JitMegaStep>(std::move(specs), std::move(kernels));
}

}  // namespace sinter::jit
