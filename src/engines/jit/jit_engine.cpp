#include "engines/jit/jit_engine.hpp"

#include <algorithm>

#include "cuda/sha256.hpp"
#include "engines/jit/codegen.hpp"
#include "sinter/error.hpp"

namespace sinter::jit {
namespace {

// One region's kernels, loaded, with their argument structs; launch rebinds the pointers.
class JitStep : public PreparedStep {
 public:
  struct Loaded {
    KernelSpec spec;
    std::shared_ptr<const cuda::Library> library;
    cuda::Kernel kernel;
    std::shared_ptr<const cuda::KernelBinary> binary;  // kept for plans; null when loaded from one
  };
  JitStep(std::vector<Loaded> kernels, size_t workspace)
      : kernels_(std::move(kernels)), workspace_(workspace) {}

  void launch(const Binding& b, cudaStream_t stream) override {
    for (Loaded& k : kernels_) {
      for (const PointerSlot& p : k.spec.pointers) {
        const char* base = nullptr;
        switch (p.source) {
          case PointerSlot::Source::input:
            base = static_cast<const char*>(b.inputs.at(p.index));
            break;
          case PointerSlot::Source::output:
            base = static_cast<const char*>(b.outputs.at(p.index));
            break;
          case PointerSlot::Source::workspace:
            base = static_cast<const char*>(b.workspace) + p.workspace_offset;
            break;
        }
        const char* ptr = base + p.byte_offset;
        if (reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(p.alignment) != 0) {
          throw Error(ErrorCode::invalid_argument,
                      "kernel '" + k.spec.description + "' needs " + std::to_string(p.alignment) +
                          "-byte aligned buffers; a bound pointer is not");
        }
        k.spec.args.set_pointer(p.arg_offset, ptr);
      }
      cuda::LaunchConfig cfg = k.spec.launch;
      cfg.stream = stream;
      void* params[] = {k.spec.args.data()};
      k.kernel.launch(cfg, params);
    }
  }
  size_t workspace_bytes() const override { return workspace_; }
  std::string describe() const override {
    std::string s;
    for (const Loaded& k : kernels_) s += (s.empty() ? "" : "; ") + k.spec.description;
    return s;
  }
  const std::vector<Loaded>& kernels() const { return kernels_; }

 private:
  std::vector<Loaded> kernels_;
  size_t workspace_;
};

}  // namespace

Support JitEngine::supports(const Graph& g, const fuse::Region& r) const {
  for (const fuse::ExitReduce& e : r.reductions) {
    const TensorInfo& out = g.tensor(g.node(e.node).outputs[0]);
    if (!is_float(out.dtype)) {
      return Support::no("exit reduction '" + g.node(e.node).name + "' has integer output " +
                         std::string(to_string(out.dtype)) + "; exit reductions accumulate in f32");
    }
  }
  return Support::yes();
}

std::vector<Candidate> JitEngine::candidates(const Graph& g, const fuse::Region& r,
                                             const EngineContext& ctx) const {
  if (!supports(g, r).ok) return {};
  const RegionKernels rk = build_region(g, r, ctx.device);
  std::string desc;
  for (const KernelSpec& k : rk.kernels) desc += (desc.empty() ? "" : "; ") + k.description;
  return {Candidate{std::string(name()), 0, desc}};
}

std::unique_ptr<PreparedStep> JitEngine::prepare(const Graph& g, const fuse::Region& r,
                                                 const Candidate& c, EngineContext& ctx) const {
  const Support s = supports(g, r);
  if (!s.ok) throw Error(ErrorCode::unsupported, "jit engine, region " + std::to_string(r.id) + ": " + s.reason);
  RegionKernels rk = build_region(g, r, ctx.device);
  std::vector<JitStep::Loaded> loaded;
  int i = 0;
  for (KernelSpec& spec : rk.kernels) {
    cuda::KernelRequest req;
    req.name = g.name() + "_region" + std::to_string(r.id) + "_" + std::to_string(i++) + ".cu";
    req.source = spec.source;
    req.options.arch = ctx.device.arch;
    auto lib = ctx.cache.get_library(req, ctx.device.ordinal);
    auto binary = ctx.cache.get_binary(req);  // a memory hit now; a plan stores these bytes
    cuda::Kernel kernel = lib->get_kernel(spec.entry);
    if (spec.launch.dynamic_shared_memory > 48 * 1024) {
      kernel.set_max_dynamic_shared_memory(static_cast<int>(spec.launch.dynamic_shared_memory),
                                           ctx.device.ordinal);
    }
    if (spec.persistent_work > 0) {
      const int per_sm = kernel.max_active_blocks_per_sm(static_cast<int>(spec.launch.block.x),
                                                         spec.launch.dynamic_shared_memory);
      const int64_t resident = int64_t{std::max(per_sm, 1)} * ctx.device.sm_count;
      spec.launch.grid = dim3(static_cast<unsigned>(std::clamp<int64_t>(spec.persistent_work, 1, resident)));
      spec.description += " grid" + std::to_string(spec.launch.grid.x);
    }
    loaded.push_back({std::move(spec), std::move(lib), kernel, std::move(binary)});
  }
  return std::make_unique<JitStep>(std::move(loaded), rk.workspace_bytes);
}

std::vector<CompiledKernel> compiled_kernels(const PreparedStep& step) {
  std::vector<CompiledKernel> out;
  const auto* s = dynamic_cast<const JitStep*>(&step);
  if (!s) return out;
  for (const JitStep::Loaded& k : s->kernels()) {
    if (!k.binary) throw Error(ErrorCode::internal, "jit step '" + k.spec.description + "' has no cubin to export");
    out.push_back({&k.spec, std::span<const char>(k.binary->cubin), cuda::to_hex(k.binary->key)});
  }
  return out;
}

std::unique_ptr<PreparedStep> load_jit_step(std::vector<KernelSpec> specs, const std::vector<std::span<const char>>& cubins,
                                            size_t workspace_bytes, int device) {
  if (specs.size() != cubins.size()) throw Error(ErrorCode::internal, "load_jit_step: one cubin per kernel");
  std::vector<JitStep::Loaded> loaded;
  for (size_t i = 0; i < specs.size(); ++i) {
    // Loaded straight from the plan's bytes: no KernelCache, so no way to compile.
    auto lib = std::make_shared<const cuda::Library>(cuda::Library::load(cubins[i]));
    cuda::Kernel kernel = lib->get_kernel(specs[i].entry);
    if (specs[i].launch.dynamic_shared_memory > 48 * 1024) {
      kernel.set_max_dynamic_shared_memory(static_cast<int>(specs[i].launch.dynamic_shared_memory), device);
    }
    loaded.push_back({std::move(specs[i]), std::move(lib), kernel, nullptr});
  }
  return std::make_unique<JitStep>(std::move(loaded), workspace_bytes);
}

RegionKernels build_region(const Graph& g, const fuse::Region& r, const cuda::DeviceProperties& dev) {
  switch (r.kind) {
    case fuse::RegionKind::pointwise: {
      for (const fuse::ExitReduce& e : r.reductions) {
        if (e.pattern == fuse::ExitReduction::rows) return build_rowwise(g, r, dev);
      }
      return build_pointwise(g, r, dev);
    }
    case fuse::RegionKind::rowwise: return build_rowwise(g, r, dev);
    case fuse::RegionKind::reduction: return build_reduction(g, r, dev);
    case fuse::RegionKind::layout:
    case fuse::RegionKind::alias: return build_layout(g, r, dev);
    case fuse::RegionKind::matmul: return build_matmul(g, r, dev);
    case fuse::RegionKind::conv: return build_conv(g, r, dev);
    case fuse::RegionKind::sdpa: return build_sdpa(g, r, dev);
  }
  throw Error(ErrorCode::internal, "build_region: unknown region kind");
}

}  // namespace sinter::jit
