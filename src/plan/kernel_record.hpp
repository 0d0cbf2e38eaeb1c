// Conversions between the JIT engine's KernelSpec (what codegen produces, launched by a JitStep)
// and the plan's KernelRecord (what a bundle stores). A builder turns each prepared kernel and its
// cubin into a record; a runner turns a record back into a spec (with no source: the cubin is
// already compiled) and launches it exactly as a freshly built JitStep would.
#pragma once

#include <span>
#include <string>

#include "engines/jit/kernel_spec.hpp"
#include "plan/plan.hpp"

namespace sinter::plan {

// `spec` must be final (after the engine resized a persistent grid). Stores `cubin` in
// plan.blobs (once, however many kernels use it) and returns the record, with every pointer
// slot zeroed in the argument bytes. Throws Error(internal) when a slot does not fit the
// arguments.
KernelRecord add_kernel_record(Plan& plan, const jit::KernelSpec& spec, std::span<const char> cubin,
                               std::string cache_key = "");

// The spec a runner launches: entry, description, launch shape (stream unset), argument bytes
// and pointer slots; `source` is empty.
jit::KernelSpec to_kernel_spec(const KernelRecord& record);

}  // namespace sinter::plan
