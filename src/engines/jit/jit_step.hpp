// A prepared jit step: one region's kernels, loaded, with their argument structs; launching
// binds the pointers of a Binding into them (bind_kernel_args) and launches each kernel.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cuda/kernel_cache.hpp"
#include "cuda/library.hpp"
#include "engines/engine.hpp"
#include "engines/jit/kernel_spec.hpp"

namespace sinter::jit {

struct TraceTap;  // SINTER_TRACE_FILE (jit_engine.cpp)

// Writes the pointers of `b` (and TMA tensor maps encoded for them) into spec.args.
// Error(invalid_argument) when a pointer lacks the alignment the kernel needs.
void bind_kernel_args(KernelSpec& spec, const Binding& b);

// Why a kernel compiled from `source` cannot run as megakernel tasks (clusters, TMA tensor maps,
// mbarrier rings, co-resident CTAs...), or "" when it can (jit_mega_step.cpp).
std::string mega_refusal(const KernelSpec& k, const std::string& source);

// The task form of a kernel compiled from `source`: its grid, block, shared memory and argument size.
MegaTaskKernel mega_task_kernel(const KernelSpec& spec, std::string source);

class JitStep : public PreparedStep {
 public:
  struct Loaded {
    KernelSpec spec;
    std::shared_ptr<const cuda::Library> library;
    cuda::Kernel kernel;
    std::shared_ptr<const cuda::KernelBinary> binary;  // kept for plans; null when loaded from one
    int launches = 0;  // counted only for SINTER_TRACE_FILE
  };
  JitStep(std::vector<Loaded> kernels, size_t workspace);

  void launch(const Binding& b, cudaStream_t stream) override;
  size_t workspace_bytes() const override { return workspace_; }
  std::string describe() const override;
  const std::vector<Loaded>& kernels() const { return kernels_; }

 private:
  std::vector<Loaded> kernels_;
  size_t workspace_;
  const TraceTap* trace_;  // SINTER_TRACE_FILE, or null
};

}  // namespace sinter::jit
