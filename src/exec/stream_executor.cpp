#include "exec/stream_executor.hpp"

#include <algorithm>
#include <cstring>
#include <functional>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/kernel_sources.hpp"
#include "cuda/sha256.hpp"
#include "cuda/timing.hpp"
#include "engines/cublaslt/cublaslt_engine.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/jit/jit_engine.hpp"
#include "plan/memory_plan.hpp"
#include "sinter/error.hpp"

namespace sinter {
namespace {

using plan::storage_bytes;

size_t align256(size_t v) { return (v + 255) / 256 * 256; }


}  // namespace

StreamExecutor::StreamExecutor(Graph graph, cuda::KernelCache& cache, ExecutorOptions options)
    : graph_(std::move(graph)), fusion_(options.fusion), device_(options.device) {
  graph_.validate();
  cuda::DeviceGuard guard(device_);
  stream_ = cuda::Stream();
  partition_ = fuse::partition_graph(graph_, options.fusion);
  fuse::verify_partition(graph_, partition_);

  // Memory: graph inputs in their own buffers; stored tensors in one arena, reused by lifetime
  // (plan/memory_plan); reshapes of contiguous tensors alias their input; exit-reduction
  // workspaces in a zeroed area of their own (steps keep it zeroed).
  const auto& tensors = graph_.tensors();
  pointer_of_.assign(tensors.size(), nullptr);
  for (TensorId id : graph_.inputs()) {
    input_buffers_.emplace_back(storage_bytes(graph_.tensor(id)));
    pointer_of_[id] = input_buffers_.back().data();
  }
  EngineContext ctx{cache, cuda::device_properties(device_)};
  jit::JitEngine jit;
  cublaslt::CublasLtEngine cublaslt;
  cudnn::CudnnEngine cudnn(4, /*lower_secondary=*/options.engine == "cudnn");
  std::vector<const Engine*> engines;
  if (options.engine == "auto") {
    engines = {&cublaslt, &cudnn, &jit};
  } else if (options.engine == "jit") {
    engines = {&jit};
  } else if (options.engine == "cublaslt") {
    engines = {&cublaslt, &jit};
  } else if (options.engine == "cudnn") {
    engines = {&cudnn, &jit};
  } else {
    throw Error(ErrorCode::invalid_argument,
                "unknown engine '" + options.engine + "'; engines: auto, jit, cublaslt, cudnn");
  }
  if (options.for_plan) {
    if (!engines.front()->steps_can_be_saved() && options.engine != "auto") {
      throw Error(ErrorCode::unsupported, "engine '" + options.engine +
                                              "' cannot be saved in a plan here (plans store jit, cublaslt and cudnn steps; "
                                              "SINTER_PLAN_CUDNN=0 leaves cudnn out)");
    }
    std::erase_if(engines, [](const Engine* e) { return !e->steps_can_be_saved(); });
  }
  tune::DeviceKey device_key;
  device_key.name = ctx.device.name;
  device_key.sm_count = ctx.device.sm_count;
  device_key.arch = ctx.device.arch;
  device_key.driver_version = ctx.device.driver_version;
  device_key.cublaslt_version = cublaslt::cublaslt_version();
  device_key.cudnn_version = cudnn::cudnn_version();
  // Times measured with other kernel sources do not carry over (the digest of kernels/).
  device_key.sinter_version = "0.1.0+kernels." + cuda::to_hex(cuda::kernel_sources_digest()).substr(0, 16);
  tune_report_ = tune::tune(graph_, partition_, engines, ctx, options.timing_cache, device_key,
                            options.tuning);

  std::vector<TensorId> alias_of(tensors.size(), -1);
  size_t workspace = 0;
  for (const tune::Choice& choice : tune_report_.choices) {
    const fuse::Region& r = partition_.regions[choice.region];
    Step step{r.id, nullptr, 0};
    StepInfo info{r.id, std::string(to_string(r.kind)), "", "", choice.median_ms, choice.from_cache};
    if (!choice.engine) {
      alias_of[graph_.node(r.anchor).outputs[0]] = graph_.node(r.anchor).inputs[0];
      info.engine = "alias";
      info.description = "shares the memory of '" + graph_.tensor(graph_.node(r.anchor).inputs[0]).name + "'";
    } else {
      step.prepared = choice.engine->prepare(graph_, r, choice.candidate, ctx);
      info.engine = std::string(choice.engine->name());
      info.description = step.prepared->describe();
      if (options.engine != "auto" && choice.engine->name() != options.engine) {
        const Support s = engines.front()->supports(graph_, r);
        const bool timed = std::any_of(choice.tried.begin(), choice.tried.end(), [&](const tune::CandidateTime& t) {
          return t.engine == options.engine;
        });
        info.description += " (fallback from " + options.engine + ": " +
                            (!s.ok  ? s.reason
                             : timed ? "its candidates were slower, failed or gave wrong results (see the tuner's report)"
                                     : "it offered no candidate for this region; its reason is on stderr") +
                            ")";
      }
      if (step.prepared->workspace_bytes() > 0) {
        step.workspace_offset = workspace = align256(workspace);
        workspace += step.prepared->workspace_bytes();
      }
    }
    steps_.push_back(std::move(step));
    infos_.push_back(std::move(info));
  }
  memory_ = plan::plan_memory(graph_, partition_, alias_of);
  plan::verify_memory_plan(graph_, memory_);
  const size_t workspace_base = align256(memory_.arena_bytes);
  workspace_base_ = workspace_base;
  workspace_bytes_ = workspace;
  arena_ = cuda::DeviceBuffer(std::max<size_t>(workspace_base + workspace, 256));
  arena_.memset(0);  // workspaces start zeroed; steps keep them so
  char* base = static_cast<char*>(arena_.data());
  for (Step& s : steps_) s.workspace_offset += workspace_base;
  for (const plan::BufferAssignment& b : memory_.buffers) {
    pointer_of_[b.tensor] = base + b.offset;
    computed_ranges_.push_back({b.offset, b.bytes});
  }
  // Aliases resolve to their root's memory (a chain of reshapes included).
  for (size_t t = 0; t < tensors.size(); ++t) {
    TensorId root = static_cast<TensorId>(t);
    while (alias_of[root] >= 0) root = alias_of[root];
    if (root != static_cast<TensorId>(t)) pointer_of_[t] = pointer_of_[root];
  }
  for (Step& st : steps_) {
    const fuse::Region& r = partition_.regions[st.region];
    for (TensorId t : r.inputs) st.binding.inputs.push_back(pointer_of_[t]);
    for (TensorId t : r.outputs) st.binding.outputs.push_back(pointer_of_[t]);
    st.binding.workspace = static_cast<char*>(arena_.data()) + st.workspace_offset;
  }
}

StreamExecutor::~StreamExecutor() = default;

void StreamExecutor::set_inputs(const TensorMap& inputs) {
  cuda::DeviceGuard guard(device_);
  for (size_t i = 0; i < graph_.inputs().size(); ++i) {
    const TensorInfo& info = graph_.tensor(graph_.inputs()[i]);
    auto it = inputs.find(info.name);
    if (it == inputs.end()) {
      throw Error(ErrorCode::invalid_argument, "input '" + info.name + "' was not given");
    }
    const HostTensor& h = it->second;
    if (h.dtype() != info.dtype || h.dims() != info.dims) {
      throw Error(ErrorCode::invalid_argument,
                  "input '" + info.name + "': expected " + std::string(to_string(info.dtype)) + " " +
                      dims_to_string(info.dims) + ", got " + std::string(to_string(h.dtype())) +
                      " " + dims_to_string(h.dims()));
    }
    if (h.strides() == info.strides) {
      input_buffers_[i].copy_from_host(h.data(), h.storage_bytes());
    } else {
      HostTensor relaid(info.dtype, info.dims, info.strides);
      for (int64_t e = 0; e < h.numel(); ++e) relaid.set(e, h.get(e));
      input_buffers_[i].copy_from_host(relaid.data(), relaid.storage_bytes());
    }
  }
}

void StreamExecutor::poison() {
  cuda::DeviceGuard guard(device_);
  for (const auto& [offset, bytes] : computed_ranges_) arena_.memset(0xFF, bytes, offset);
}

void StreamExecutor::launch() {
  cuda::DeviceGuard guard(device_);
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (steps_[s].prepared) steps_[s].prepared->launch(steps_[s].binding, stream_);
  }
}

TensorMap StreamExecutor::outputs() {
  cuda::DeviceGuard guard(device_);
  stream_.synchronize();
  TensorMap out;
  for (TensorId id : graph_.outputs()) {
    const TensorInfo& info = graph_.tensor(id);
    HostTensor h(info.dtype, info.dims);
    SINTER_CUDA_CHECK(cudaMemcpy(h.data(), pointer_of_[id], h.storage_bytes(), cudaMemcpyDeviceToHost));
    out.emplace(info.name, std::move(h));
  }
  return out;
}

TensorMap StreamExecutor::run(const TensorMap& inputs) {
  set_inputs(inputs);
  poison();
  launch();
  return outputs();
}

double StreamExecutor::time_ms(int iters, int warmup, bool cold_l2) {
  cuda::DeviceGuard guard(device_);
  for (int i = 0; i < warmup; ++i) launch();
  const size_t flush_bytes = cold_l2 ? 2 * std::max<size_t>(cuda::device_properties(device_).l2_cache_bytes, 1 << 20) : 0;
  cuda::DeviceBuffer flush(flush_bytes);
  int flushes = 0;
  std::function<void()> flush_l2;
  if (cold_l2) {
    flush_l2 = [&] { SINTER_CUDA_CHECK(cudaMemsetAsync(flush.data(), flushes++ & 0xff, flush_bytes, stream_)); };
  }
  std::vector<float> times = cuda::time_calls(stream_, std::max(iters, 1), [&] { launch(); }, flush_l2);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace sinter
