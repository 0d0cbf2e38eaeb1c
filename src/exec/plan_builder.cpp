#include "exec/plan_builder.hpp"

#include "cuda/device.hpp"
#include "engines/cublaslt/cublaslt_engine.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/jit/jit_engine.hpp"
#include "plan/kernel_record.hpp"
#include "sinter/error.hpp"

namespace sinter {

plan::Plan build_plan(const StreamExecutor& ex, const std::string& producer) {
  plan::Plan p;
  p.producer = producer;
  p.graph = ex.graph();
  p.fusion = ex.fusion();
  const cuda::DeviceProperties dev = cuda::device_properties(ex.device());
  p.target = {dev.arch, dev.name, dev.sm_count};
  p.memory = ex.memory_plan();
  p.workspace = {ex.workspace_base(), ex.workspace_bytes()};
  const auto& regions = ex.partition().regions;
  for (size_t i = 0; i < ex.steps().size(); ++i) {
    const StepInfo& info = ex.steps()[i];
    plan::Step s;
    s.region = info.region;
    s.kind = regions.at(info.region).kind;
    s.engine = info.engine;
    s.description = info.description;
    for (const tune::Choice& c : ex.tune_report().choices) {
      if (c.region == info.region && c.engine) s.candidate = c.candidate.index;
    }
    const PreparedStep* prepared = ex.prepared_step(i);
    if (!prepared) {  // a reshape sharing its input's memory
      p.steps.push_back(std::move(s));
      continue;
    }
    s.workspace_bytes = prepared->workspace_bytes();
    s.workspace_offset = s.workspace_bytes ? ex.step_workspace_offset(i) : 0;
    if (info.engine == plan::kJitEngine) {
      for (const jit::CompiledKernel& k : jit::compiled_kernels(*prepared)) {
        s.kernels.push_back(plan::add_kernel_record(p, *k.spec, k.cubin, k.cache_key));
      }
      if (s.kernels.empty()) throw Error(ErrorCode::internal, "step " + std::to_string(i) + ": a jit step without kernels");
    } else if (info.engine == plan::kCublasLtEngine) {
      const auto config = cublaslt::algo_config(*prepared);
      if (!config) throw Error(ErrorCode::internal, "step " + std::to_string(i) + ": not a cuBLASLt step");
      s.config = plan::add_blob(p, plan::BlobKind::vendor_config, *config);
      s.config_description = prepared->describe();
    } else if (info.engine == plan::kCudnnEngine) {
      const auto config = cudnn::engine_config(*prepared);
      if (!config) throw Error(ErrorCode::internal, "step " + std::to_string(i) + ": not a cuDNN step");
      s.config = plan::add_blob(p, plan::BlobKind::vendor_config, *config);
      s.config_description = prepared->describe();
    } else {
      throw Error(ErrorCode::unsupported, "step " + std::to_string(i) + " (" + info.description + "): engine '" +
                                              info.engine + "' cannot be saved in a plan yet (plans store jit, cublaslt and cudnn steps)");
    }
    p.steps.push_back(std::move(s));
  }
  return p;
}

}  // namespace sinter
