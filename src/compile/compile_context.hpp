// What every compile pass shares, made once from the CompileOptions: the options checked, the
// GPU, the kernel and timing caches, the engines allowed and in which order, and the tuner's
// settings.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "cuda/kernel_cache.hpp"
#include "engines/engine.hpp"
#include "sinter/compile.hpp"
#include "tune/timing_cache.hpp"
#include "tune/tuner.hpp"

namespace sinter {

class CompileContext {
 public:
  // Error(invalid_argument) for options that make no sense (an unknown engine, top_k < 1, ...),
  // Error(cuda) when the device cannot be used.
  explicit CompileContext(const CompileOptions& options);

  const cuda::DeviceProperties& device() const { return ctx_->device; }
  // The registered engines allowed, in preference order: all, or those always allowed (alias,
  // nccl), the named ones, and the jit engine last (it supports every region).
  std::span<const Engine* const> engines() const { return engines_; }
  EngineContext& engine_context() { return *ctx_; }
  const tune::TuneOptions& tune_options() const { return tune_; }
  tune::TimingCache* timing_cache() { return timing_ ? &*timing_ : nullptr; }
  const tune::DeviceKey& device_key() const { return key_; }
  void save_timing_cache() const;
  CompileReport report(const tune::TuneReport& tuned, std::vector<std::pair<std::string, double>> passes) const;

 private:
  const CompileOptions& options_;
  std::unique_ptr<cuda::KernelCache> cache_;
  std::unique_ptr<EngineContext> ctx_;
  std::vector<const Engine*> engines_;
  tune::TuneOptions tune_;
  std::optional<tune::TimingCache> timing_;
  tune::DeviceKey key_;
};

}  // namespace sinter
