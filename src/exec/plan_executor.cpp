#include "exec/plan_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>

#include "cuda/check.hpp"
#include "cuda/device.hpp"
#include "cuda/timing.hpp"
#include "engines/cublaslt/cublaslt_engine.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/jit/jit_engine.hpp"
#include "plan/kernel_record.hpp"
#include "plan/memory_plan.hpp"
#include "sinter/error.hpp"

namespace sinter {

PlanExecutor::PlanExecutor(plan::Plan plan, int device) : plan_(std::move(plan)), device_(device) {
  const auto start = std::chrono::steady_clock::now();
  cuda::DeviceGuard guard(device_);
  const cuda::DeviceProperties dev = cuda::device_properties(device_);
  if (std::string note = plan::check_plan_target(plan_, dev); !note.empty()) notes_.push_back(note);
  stream_ = cuda::Stream();
  partition_ = plan::plan_partition(plan_);
  // Where the load's time goes, for the notes (`sinter run PLAN` and sinter_bench_plan print them).
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  const double setup_ms = since(start);
  double jit_ms = 0, cublaslt_ms = 0;
  int jit_steps = 0, cublaslt_steps = 0;
  // A cubin several steps share (two layernorms of one shape) is loaded once.
  std::map<std::string, std::shared_ptr<const cuda::Library>> libraries;
  const Graph& g = plan_.graph;
  alias_of_.assign(g.tensors().size(), -1);
  auto who = [&](size_t i) {
    const plan::Step& s = plan_.steps[i];
    return "plan step " + std::to_string(i) + " (" + s.engine + ", " + s.description + ")";
  };
  // cuDNN steps load on one worker thread while this one loads the rest: deserializing a cuDNN
  // plan takes milliseconds of host time (0.6-3 ms each on the H200), as long as every jit and
  // cuBLASLt step together. One thread for all of them: they share cuDNN's process-wide handle,
  // which must not be used by two threads at once.
  std::vector<size_t> cudnn_steps;
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    if (plan_.steps[i].engine == plan::kCudnnEngine) cudnn_steps.push_back(i);
  }
  struct CudnnLoad {
    std::unique_ptr<PreparedStep> step;
    double ms = 0;
  };
  std::future<std::vector<CudnnLoad>> cudnn_loads;
  if (!cudnn_steps.empty()) {
    cudnn_loads = std::async(std::launch::async, [&, cudnn_steps] {
      // A plain set, not a guard: the thread is new (its current device is 0 by default), and
      // restoring 0 on exit would create a context on GPU 0 when this plan runs on another one.
      cuda::set_device(device_);
      std::vector<CudnnLoad> out;
      for (size_t i : cudnn_steps) {
        const plan::Step& s = plan_.steps[i];
        const auto t0 = std::chrono::steady_clock::now();
        try {
          out.push_back({cudnn::load_cudnn_step(g, partition_.regions.at(s.region), plan_.blobs.at(s.config).bytes,
                                                s.workspace_bytes),
                         0});
        } catch (const Error& e) {
          throw Error(e.code(), who(i) + ": " + e.message());
        }
        out.back().ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      }
      return out;
    });
  }
  std::vector<std::string> step_notes(plan_.steps.size());
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    const plan::Step& s = plan_.steps[i];
    const fuse::Region& r = partition_.regions.at(s.region);
    try {
      if (s.engine == plan::kJitEngine) {
        const auto t0 = std::chrono::steady_clock::now();
        std::vector<jit::KernelSpec> specs;
        std::vector<std::shared_ptr<const cuda::Library>> libs;
        for (const plan::KernelRecord& k : s.kernels) {
          specs.push_back(plan::to_kernel_spec(k));
          std::shared_ptr<const cuda::Library>& lib = libraries[k.cubin];
          // Loaded straight from the plan's bytes: no KernelCache, so no way to compile.
          if (!lib) lib = std::make_shared<const cuda::Library>(cuda::Library::load(plan_.blobs.at(k.cubin).bytes));
          libs.push_back(lib);
        }
        steps_.push_back(jit::load_jit_step(std::move(specs), std::move(libs), s.workspace_bytes, device_));
        jit_ms += since(t0);
        ++jit_steps;
      } else if (s.engine == plan::kCublasLtEngine) {
        const auto t0 = std::chrono::steady_clock::now();
        steps_.push_back(cublaslt::load_cublaslt_step(g, r, plan_.blobs.at(s.config).bytes, s.workspace_bytes));
        cublaslt_ms += since(t0);
        ++cublaslt_steps;
        step_notes[i] = "step " + std::to_string(i) + ": cuBLASLt algo rebuilt from the plan's config (" +
                        s.config_description + "), checked with cublasLtMatmulAlgoCheck";
      } else if (s.engine == plan::kCudnnEngine) {
        steps_.push_back(nullptr);  // filled from the worker below
      } else if (s.engine == plan::kAliasEngine) {
        steps_.push_back(nullptr);
        alias_of_[g.node(r.anchor).outputs[0]] = g.node(r.anchor).inputs[0];
      } else {
        throw Error(ErrorCode::unsupported, "unknown engine '" + s.engine + "'");
      }
    } catch (const Error& e) {
      if (cudnn_loads.valid()) cudnn_loads.wait();  // the worker reads this executor's plan
      throw Error(e.code(), who(i) + ": " + e.message());
    }
  }
  const auto wait_start = std::chrono::steady_clock::now();
  double cudnn_wait_ms = 0;
  if (cudnn_loads.valid()) {
    std::vector<CudnnLoad> loads = cudnn_loads.get();  // rethrows the worker's error
    cudnn_wait_ms = since(wait_start);
    for (size_t j = 0; j < cudnn_steps.size(); ++j) {
      const size_t i = cudnn_steps[j];
      steps_[i] = std::move(loads[j].step);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", loads[j].ms);
      // the loaded step's description says how: "[saved plan]" (deserialized, no compilation)
      // or "[saved config ...]" (finalized again from the engine config, and why)
      step_notes[i] = "step " + std::to_string(i) + ": cuDNN step loaded in " + buf + " ms (on a worker thread): " +
                      steps_[i]->describe();
    }
  }
  for (std::string& n : step_notes) {
    if (!n.empty()) notes_.push_back(std::move(n));
  }
  const auto buffers_start = std::chrono::steady_clock::now();
  for (TensorId id : g.inputs()) input_buffers_.emplace_back(plan::storage_bytes(g.tensor(id)));
  arena_ = cuda::DeviceBuffer(plan::device_bytes(plan_));
  arena_.memset(0);  // workspaces start zeroed; steps keep them so
  own_pointer_.assign(g.tensors().size(), nullptr);
  for (size_t i = 0; i < g.inputs().size(); ++i) own_pointer_[g.inputs()[i]] = input_buffers_[i].data();
  char* base = static_cast<char*>(arena_.data());
  for (const plan::BufferAssignment& b : plan_.memory.buffers) own_pointer_[b.tensor] = base + b.offset;
  bound_.assign(g.tensors().size(), nullptr);
  resolve_pointers();
  load_ms_ = since(start);
  char phases[320];
  std::snprintf(phases, sizeof phases,
                "load %.2f ms: stream + partition %.2f, %d jit steps (%zu cubins) %.2f, %d cuBLASLt steps %.2f, "
                "waiting for the cuDNN worker %.2f, %zu input buffers + arena %.2f",
                load_ms_, setup_ms, jit_steps, libraries.size(), jit_ms, cublaslt_steps, cublaslt_ms, cudnn_wait_ms,
                input_buffers_.size(), since(buffers_start));
  notes_.push_back(phases);
}

PlanExecutor::~PlanExecutor() = default;

void PlanExecutor::resolve_pointers() {
  pointer_of_.assign(own_pointer_.size(), nullptr);
  for (size_t t = 0; t < own_pointer_.size(); ++t) pointer_of_[t] = bound_[t] ? bound_[t] : own_pointer_[t];
  // Aliases resolve to their root's memory (a chain of reshapes included).
  for (size_t t = 0; t < pointer_of_.size(); ++t) {
    TensorId root = static_cast<TensorId>(t);
    while (alias_of_[root] >= 0) root = alias_of_[root];
    if (root != static_cast<TensorId>(t)) pointer_of_[t] = pointer_of_[root];
  }
  bindings_.assign(plan_.steps.size(), Binding{});
  for (size_t step = 0; step < plan_.steps.size(); ++step) {
    const fuse::Region& r = partition_.regions[plan_.steps[step].region];
    Binding& b = bindings_[step];
    for (TensorId t : r.inputs) b.inputs.push_back(pointer_of_[t]);
    for (TensorId t : r.outputs) b.outputs.push_back(pointer_of_[t]);
    b.workspace = static_cast<char*>(arena_.data()) + plan_.workspace.offset + plan_.steps[step].workspace_offset;
  }
}

void PlanExecutor::bind(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  const Graph& g = plan_.graph;
  if (inputs.size() != g.inputs().size() || outputs.size() != g.outputs().size()) {
    throw Error(ErrorCode::invalid_argument, "bind: the graph has " + std::to_string(g.inputs().size()) + " inputs and " +
                                                 std::to_string(g.outputs().size()) + " outputs, got " +
                                                 std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  }
  auto take = [&](TensorId id, void* p) {
    if (!p) {
      bound_[id] = nullptr;
      return;
    }
    const std::string& name = g.tensor(id).name;
    // A reshape output lives in its source's memory; binding it alone would leave it unwritten.
    // (Reshapes *of* a bound tensor follow it: they resolve to their root's pointer.)
    if (alias_of_[id] >= 0) {
      throw Error(ErrorCode::invalid_argument, "bind: '" + name + "' is a reshape sharing the memory of '" +
                                                   g.tensor(alias_of_[id]).name + "'; it cannot be rebound on its own");
    }
    if (reinterpret_cast<uintptr_t>(p) % plan::kArenaAlignment != 0) {
      throw Error(ErrorCode::invalid_argument, "bind: the pointer for '" + name + "' is not " +
                                                   std::to_string(plan::kArenaAlignment) + "-byte aligned, as the plan's kernels assume");
    }
    bound_[id] = p;
  };
  for (size_t i = 0; i < inputs.size(); ++i) take(g.inputs()[i], const_cast<void*>(inputs[i]));
  for (size_t i = 0; i < outputs.size(); ++i) take(g.outputs()[i], outputs[i]);
  resolve_pointers();
}

std::vector<const void*> PlanExecutor::input_pointers() const {
  std::vector<const void*> out;
  for (TensorId id : plan_.graph.inputs()) out.push_back(pointer_of_[id]);
  return out;
}

std::vector<void*> PlanExecutor::output_pointers() const {
  std::vector<void*> out;
  for (TensorId id : plan_.graph.outputs()) out.push_back(pointer_of_[id]);
  return out;
}

void PlanExecutor::set_inputs(const TensorMap& inputs) {
  cuda::DeviceGuard guard(device_);
  const Graph& g = plan_.graph;
  for (TensorId id : g.inputs()) {
    const TensorInfo& info = g.tensor(id);
    auto it = inputs.find(info.name);
    if (it == inputs.end()) throw Error(ErrorCode::invalid_argument, "input '" + info.name + "' was not given");
    const HostTensor& h = it->second;
    if (h.dtype() != info.dtype || h.dims() != info.dims) {
      throw Error(ErrorCode::invalid_argument, "input '" + info.name + "': expected " + std::string(to_string(info.dtype)) +
                                                   " " + dims_to_string(info.dims) + ", got " +
                                                   std::string(to_string(h.dtype())) + " " + dims_to_string(h.dims()));
    }
    HostTensor relaid(info.dtype, info.dims, info.strides);
    const HostTensor* src = &h;
    if (h.strides() != info.strides) {
      for (int64_t e = 0; e < h.numel(); ++e) relaid.set(e, h.get(e));
      src = &relaid;
    }
    // On the executor's stream, so the launches that follow are ordered after the copy (a plain
    // cudaMemcpy goes to the legacy stream, which a non-blocking stream does not wait for). The
    // host bytes are pageable: the call returns once they are staged, so they may go away.
    SINTER_CUDA_CHECK(cudaMemcpyAsync(pointer_of_[id], src->data(), src->storage_bytes(), cudaMemcpyHostToDevice, stream_));
  }
}

void PlanExecutor::poison() {
  cuda::DeviceGuard guard(device_);
  const Graph& g = plan_.graph;
  for (const plan::BufferAssignment& b : plan_.memory.buffers) {
    SINTER_CUDA_CHECK(cudaMemsetAsync(pointer_of_[b.tensor], 0xFF,
                                      bound_[b.tensor] ? plan::storage_bytes(g.tensor(b.tensor)) : b.bytes, stream_));
  }
}

void PlanExecutor::launch_step(size_t step, cudaStream_t stream) {
  if (steps_.at(step)) steps_[step]->launch(binding(step), stream);
}

void PlanExecutor::launch(cudaStream_t stream) {
  cuda::DeviceGuard guard(device_);
  for (size_t s = 0; s < steps_.size(); ++s) launch_step(s, stream);
}

TensorMap PlanExecutor::outputs() {
  cuda::DeviceGuard guard(device_);
  stream_.synchronize();
  TensorMap out;
  for (TensorId id : plan_.graph.outputs()) {
    const TensorInfo& info = plan_.graph.tensor(id);
    HostTensor h(info.dtype, info.dims);
    SINTER_CUDA_CHECK(cudaMemcpy(h.data(), pointer_of_[id], h.storage_bytes(), cudaMemcpyDeviceToHost));
    out.emplace(info.name, std::move(h));
  }
  return out;
}

TensorMap PlanExecutor::run(const TensorMap& inputs) {
  set_inputs(inputs);
  poison();
  launch();
  return outputs();
}

std::vector<float> PlanExecutor::time_steps(int iters) {
  std::vector<float> out;
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    launch_step(s, stream_);  // warm-up
    std::vector<float> t = cuda::time_calls(stream_, iters, [&] { launch_step(s, stream_); });
    std::sort(t.begin(), t.end());
    out.push_back(t.empty() ? 0.0f : t[t.size() / 2]);
  }
  return out;
}

}  // namespace sinter
